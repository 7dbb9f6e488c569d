"""Shared helpers for the reliability tests."""

from __future__ import annotations

import asyncio
import threading

from tests import waiting


class ThreadGate:
    """A gate for `ScriptedProvider(gate=...)` that another thread can open.

    The live server runs its event loop in its own thread, so the test cannot set an
    `asyncio.Event` there; this polls a `threading.Event` instead (no executor thread
    per waiting stream, so any number of streams can be held at once).
    """

    def __init__(self) -> None:
        self.event = threading.Event()

    async def wait(self, timeout: float = 30.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + waiting.bound(timeout)
        while not self.event.is_set():
            if loop.time() > deadline:
                raise TimeoutError("ThreadGate was never opened")
            await asyncio.sleep(0.005)

    def set(self) -> None:
        self.event.set()

    def clear(self) -> None:
        self.event.clear()
