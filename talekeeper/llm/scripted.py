"""A provider that says exactly what it is told: for tests and deterministic runs.

It streams queued replies in small chunks (so consumers see real streaming), records
every request, and can be made to misbehave on cue: cut a stream after N chunks, or
hold it mid-way on an `asyncio.Event` so a test can look at a turn while it is still
in flight. `<think>` spans in a reply come out as reasoning events, as from a server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from talekeeper.llm.base import ConnectionReport, GenerationRequest, Provider, StreamEvent, Usage
from talekeeper.llm.errors import LLMError, StreamInterrupted
from talekeeper.llm.thinking import ThinkSplitter
from talekeeper.llm.tokens import estimate_tokens

Reply = str | Callable[[GenerationRequest], str]


class ScriptedProvider(Provider):
    id = "scripted"
    supports_schema = True
    # records whatever it is asked, as a server taking the common samplers would
    samplers = frozenset(
        {"min_p", "top_k", "repetition_penalty", "frequency_penalty", "presence_penalty",
         "stop", "seed"}
    )  # fmt: skip

    def __init__(
        self,
        replies: list[str] | Callable[[GenerationRequest], str],
        *,
        chunk_size: int = 8,
        fail_after_chunks: int | None = None,
        gate: asyncio.Event | None = None,
        gate_after_chunks: int = 1,
        finish_reason: str = "stop",
    ) -> None:
        """
        replies: consumed in order, one per request; or a function of the request.
        fail_after_chunks: every stream raises `StreamInterrupted` after this many chunks.
        gate: streams pause after `gate_after_chunks` chunks until the event is set.
        """
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self._replies: list[str] | None = None if callable(replies) else list(replies)
        self._reply_fn = replies if callable(replies) else None
        self.chunk_size = chunk_size
        self.fail_after_chunks = fail_after_chunks
        self.gate = gate
        self.gate_after_chunks = gate_after_chunks
        self.finish_reason = finish_reason
        self.requests: list[GenerationRequest] = []
        self._fail_next: int | None = None

    def queue(self, *replies: str) -> None:
        """Add replies to the end of the queue."""
        if self._replies is None:
            raise TypeError("this ScriptedProvider answers through a function, not a queue")
        self._replies.extend(replies)

    def fail_next(self, after_chunks: int) -> None:
        """Make only the next stream raise `StreamInterrupted` after `after_chunks` chunks."""
        self._fail_next = after_chunks

    @property
    def remaining(self) -> int:
        return len(self._replies) if self._replies is not None else 0

    def _next_reply(self, request: GenerationRequest) -> str:
        if self._reply_fn is not None:
            return self._reply_fn(request)
        assert self._replies is not None
        if not self._replies:
            raise LLMError(
                f"ScriptedProvider has no reply left for request #{len(self.requests)}; "
                "queue more replies."
            )
        return self._replies.pop(0)

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        reply = self._next_reply(request)
        fail_after = self._fail_next if self._fail_next is not None else self.fail_after_chunks
        self._fail_next = None
        splitter = ThinkSplitter()
        chunks = [reply[i : i + self.chunk_size] for i in range(0, len(reply), self.chunk_size)]
        for index, chunk in enumerate(chunks):
            if fail_after is not None and index == fail_after:
                raise StreamInterrupted(f"scripted interruption after {index} chunk(s)")
            if self.gate is not None and index == self.gate_after_chunks:
                await self.gate.wait()
            await asyncio.sleep(0)  # let other tasks run, as a real stream would
            for kind, piece in splitter.feed(chunk):
                yield StreamEvent(kind, text=piece)
        if fail_after is not None and fail_after >= len(chunks):
            raise StreamInterrupted(f"scripted interruption after {len(chunks)} chunk(s)")
        if self.gate is not None and self.gate_after_chunks >= len(chunks):
            await self.gate.wait()
        for kind, piece in splitter.flush():
            yield StreamEvent(kind, text=piece)
        prompt_text = request.prompt or "\n".join(m.content for m in request.messages)
        yield StreamEvent(
            "usage",
            usage=Usage(
                prompt_tokens=estimate_tokens(prompt_text), completion_tokens=estimate_tokens(reply)
            ),
        )
        yield StreamEvent("done", finish_reason=self.finish_reason)

    async def check(self) -> ConnectionReport:
        return ConnectionReport(
            ok=True,
            provider=self.id,
            endpoint="(scripted)",
            model="scripted",
            checks=[("scripted provider", True, "answers from a script; no server involved")],
        )

    @property
    def description(self) -> str:
        return "scripted replies (tests)"

    def __repr__(self) -> str:
        extra: dict[str, Any] = {"remaining": self.remaining, "seen": len(self.requests)}
        return f"ScriptedProvider({extra})"
