"""The terminal's event loop, kept for the whole session on a thread of its own.

A turn returns the prompt as soon as its narration is written (`done`); its background
step — the state pass, a companion's remark (service/settling) — goes on in this loop
while the player reads and types. What it ends with (the chips, the remark) is printed
under the turn: above the prompt line, which is drawn again with what was typed so far.
The next command waits for it first, saying so, so the story is always read settled.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

try:  # the line being typed, to draw it again under what was printed above it
    import readline
except ImportError:  # pragma: no cover - not on every platform
    readline = None  # type: ignore[assignment]

T = TypeVar("T")
PROMPT = "> "


class Background:
    """One event loop on a daemon thread: every turn runs in it, and so does what a turn
    leaves running after `done`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._prompt = threading.Lock()
        self.at_prompt = False  # the main thread is waiting for a line
        self.following: Future[Any] | None = None  # a turn's rest, still to be printed

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` in the loop and wait for it. Ctrl+C cancels it — and waits until
        it has let go (its lock released, nothing written) before the prompt comes back."""
        finished = threading.Event()

        async def guarded() -> T:
            try:
                return await coroutine
            finally:
                finished.set()

        future = asyncio.run_coroutine_threadsafe(guarded(), self.loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            finished.wait(10)
            raise

    def follow(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        """Run the rest of a turn in the loop without waiting for it."""
        self.following = asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def settle_first(self, say: Callable[[], None]) -> None:
        """Before the next command: wait for the turn before to settle, saying so (`say`)
        when it has not yet. Ctrl+C stops waiting (the step goes on; nothing is sent)."""
        following = self.following
        if following is None:
            return
        if not following.done():
            say()
        try:
            following.result()
        finally:
            if following.done():
                self.following = None

    def above_prompt(self, draw: Callable[[], None]) -> None:
        """Print with `draw` from the loop's thread: above the prompt line when the player
        is at it, which is then drawn again with what they had typed."""
        with self._prompt:
            if not (self.at_prompt and sys.stdout.isatty()):
                draw()
                return
            sys.stdout.write("\r\x1b[2K")
            sys.stdout.flush()
            draw()
            typed = readline.get_line_buffer() if readline is not None else ""
            sys.stdout.write(PROMPT + typed)
            sys.stdout.flush()

    def prompt(self, ask: Callable[[], str]) -> str:
        """`ask` for a line, marked as at the prompt meanwhile (see `above_prompt`)."""
        with self._prompt:
            self.at_prompt = True
        try:
            return ask()
        finally:
            with self._prompt:
                self.at_prompt = False

    def close(self, last: Coroutine[Any, Any, Any] | None = None) -> None:
        """Finish: wait for a turn's rest and `last` (the app's settles drained), then stop
        the loop."""
        try:
            if self.following is not None:
                self.following.result()
            if last is not None:
                asyncio.run_coroutine_threadsafe(last, self.loop).result()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            if not self.loop.is_running():
                self.loop.close()
