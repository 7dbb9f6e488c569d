"""Small helpers shared by the provider tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx

from talekeeper.llm.base import GenerationRequest, Message, Provider, StreamEvent

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def collect(provider: Provider, request: GenerationRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


def collect_sync(provider: Provider, request: GenerationRequest) -> list[StreamEvent]:
    async def go() -> list[StreamEvent]:
        try:
            return await collect(provider, request)
        finally:
            await provider.aclose()

    return asyncio.run(go())


def text_of(events: list[StreamEvent], kind: str = "text") -> str:
    return "".join(e.text for e in events if e.kind == kind)


def chat(text: str = "> You open the door.", **options: Any) -> GenerationRequest:
    return GenerationRequest(
        messages=[Message(role="system", content="Narrate."), Message(role="user", content=text)],
        **options,
    )


def sse(*chunks: Any, done: bool = True) -> bytes:
    """An SSE body from JSON-able chunks (strings are sent verbatim as data)."""
    import json

    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def delta(content: str | None = None, finish: str | None = None, **fields: Any) -> dict[str, Any]:
    d: dict[str, Any] = dict(fields)
    if content is not None:
        d["content"] = content
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def mock(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    return httpx.MockTransport(handler)
