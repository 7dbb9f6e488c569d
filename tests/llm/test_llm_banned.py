"""Stop-and-regenerate keeps banned phrases out however the stream is chunked, and never
cuts what it has shown: a property over random texts, phrases and chunkings."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.llm.banned import continuation, guarded
from talekeeper.llm.base import GenerationRequest, Message, StreamEvent

ALPHABET = "abAB .,"


def _run(text: str, sizes: list[int], phrases: list[str], going_on: str = "") -> tuple[str, list]:
    calls: list[GenerationRequest] = []

    async def start(request: GenerationRequest):
        calls.append(request)
        source = text if len(calls) == 1 else going_on
        at, index = 0, 0
        while at < len(source):
            size = sizes[index % len(sizes)]
            yield StreamEvent("text", text=source[at : at + size])
            at, index = at + size, index + 1
        yield StreamEvent("done", finish_reason="stop")

    async def collect() -> list[StreamEvent]:
        request = GenerationRequest(messages=[Message(role="user", content="go")])
        return [e async for e in guarded(start, request, phrases)]

    events = asyncio.run(collect())
    return "".join(e.text for e in events if e.kind == "text"), events


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=ALPHABET, max_size=60),
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=5),
    phrases=st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=5), min_size=1, max_size=3),
)
def test_no_banned_phrase_is_ever_shown_and_nothing_before_it_is_lost(
    text: str, sizes: list[int], phrases: list[str]
) -> None:
    phrases = [p for p in phrases if p.strip()]
    shown, events = _run(text, sizes, phrases)
    lowered = text.lower()
    hits = [lowered.find(p.lower()) for p in phrases if lowered.find(p.lower()) >= 0]
    assert text.startswith(shown)  # nothing shown is taken back or changed
    assert not any(p.lower() in shown.lower() for p in phrases)
    if hits:  # stopped exactly where a banned phrase begins
        rest = text[len(shown) :].lower()
        assert any(rest.startswith(p.lower()) for p in phrases)
    else:
        assert shown == text
    notes = [e for e in events if e.kind == "note"]
    assert bool(notes) == bool(hits)  # stopped in plain sight, or not at all
    assert events[-1].kind == "done"


def test_the_model_goes_on_from_the_kept_text() -> None:
    shown, events = _run(
        "She felt shivers down her spine.", [4], ["shivers down"], going_on="a chill."
    )
    assert shown == "She felt a chill."
    request = GenerationRequest(messages=[Message(role="user", content="go")], max_tokens=100)
    chat = continuation(request, "She felt ", nudge=True)
    assert [m.role for m in chat.messages] == ["user", "assistant", "user"]
    assert chat.messages[1].content == "She felt "
    kept = "x" * 40
    plain = continuation(
        request.model_copy(update={"mode": "completion", "prompt": "P"}), kept, False
    )
    assert plain.prompt == "P" + kept and plain.max_tokens == 90  # what is kept is spent
