"""Banned phrases by stop-and-regenerate: the phrase is never shown, the text is never cut.

Where a server cannot ban a phrase itself (KoboldCpp can; llama.cpp can by logit bias when
the phrase is one token), the reply is watched as it streams. Text that could still be the
start of a banned phrase is held back; when a phrase completes, the stream is stopped
right before it and the model is asked to go on from there (completion mode: the prompt
and the reply so far; chat mode: the reply so far as the assistant's own words, to be
continued). The kept text is never shortened: what was shown stays, and the reply goes on.
After `MAX_RETRIES` returns of a phrase the reply ends before it and a note says so
(Insights shows it) — stopped in plain sight, never silently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing

from talekeeper.llm.base import GenerationRequest, Message, StreamEvent

MAX_RETRIES = 3
# Chat servers that are not known to continue an assistant message they are handed get
# this after it (what SillyTavern's "continue" sends to OpenAI-compatible services).
NUDGE = "[Continue your last message exactly where it stops, without repeating any of it.]"

Start = Callable[[GenerationRequest], AsyncIterator[StreamEvent]]


def _first(text: str, phrases: list[str]) -> tuple[int, str] | None:
    """The earliest banned phrase in `text` (case-blind): (where, which)."""
    lowered = text.lower()
    found = [(lowered.find(p.lower()), p) for p in phrases]
    found = [(at, p) for at, p in found if at >= 0]
    return min(found) if found else None


def _held(text: str, phrases: list[str]) -> int:
    """How many characters at the end of `text` could begin a banned phrase."""
    lowered = text.lower()
    longest = 0
    for phrase in phrases:
        p = phrase.lower()
        for size in range(min(len(p) - 1, len(lowered)), longest, -1):
            if lowered.endswith(p[:size]):
                longest = size
                break
    return longest


def continuation(request: GenerationRequest, kept: str, nudge: bool) -> GenerationRequest:
    """The same request, asking the model to go on after `kept`."""
    budget = max(16, request.max_tokens - len(kept) // 4)
    if request.mode == "completion":
        return request.model_copy(update={"prompt": request.prompt + kept, "max_tokens": budget})
    messages = [*request.messages, Message(role="assistant", content=kept)]
    if nudge:
        messages.append(Message(role="user", content=NUDGE))
    return request.model_copy(update={"messages": messages, "max_tokens": budget})


async def guarded(
    start: Start, request: GenerationRequest, phrases: list[str], nudge: bool = True
) -> AsyncIterator[StreamEvent]:
    """`start(request)`'s events with every phrase in `phrases` kept out of the text."""
    phrases = [p for p in phrases if p.strip()]
    kept = ""
    attempt = request
    returns = 0
    while True:
        pending = ""
        hit: tuple[int, str] | None = None
        tail: list[StreamEvent] = []  # usage and done, given once the reply is settled
        async with aclosing(start(attempt)) as events:
            async for event in events:
                if event.kind != "text":
                    if event.kind in ("usage", "done"):
                        tail.append(event)
                    else:
                        yield event
                    continue
                pending += event.text
                hit = _first(pending, phrases)
                if hit is not None:
                    break  # closing the stream stops the generation
                safe = len(pending) - _held(pending, phrases)
                if safe > 0:
                    yield StreamEvent("text", text=pending[:safe])
                    kept += pending[:safe]
                    pending = pending[safe:]
        if hit is None:
            if pending:
                yield StreamEvent("text", text=pending)
            for event in tail:
                yield event
            return
        at, phrase = hit
        if pending[:at]:
            yield StreamEvent("text", text=pending[:at])
            kept += pending[:at]
        returns += 1
        if returns > MAX_RETRIES:
            yield StreamEvent(
                "note",
                text=f"The banned phrase “{phrase}” came back {returns} times; the reply "
                "ends before it.",
            )
            yield StreamEvent("done", finish_reason="banned")
            return
        yield StreamEvent(
            "note",
            text=f"The banned phrase “{phrase}” was stopped before it was shown; the model "
            "went on from there.",
        )
        attempt = continuation(request, kept, nudge)
