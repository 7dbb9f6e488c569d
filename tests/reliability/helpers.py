"""Shared helpers for the reliability tests."""

from __future__ import annotations

import asyncio
import threading


class ThreadGate:
    """A gate for `ScriptedProvider(gate=...)` that another thread can open.

    The live server runs its event loop in its own thread, so the test cannot set an
    `asyncio.Event` there; this waits on a `threading.Event` off the loop instead.
    """

    def __init__(self) -> None:
        self.event = threading.Event()

    async def wait(self) -> None:
        await asyncio.to_thread(self.event.wait, 30)

    def set(self) -> None:
        self.event.set()
