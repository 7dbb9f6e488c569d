"""The repeat guard: a reply that begins to say one of its sentences again ends there, the
model is stopped, the stream only grows, and prose that merely sounds alike is kept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.context.echo import summary
from talekeeper.context.repeats import RepeatGuard
from talekeeper.llm.base import GenerationRequest, StreamEvent
from talekeeper.llm.scripted import ScriptedProvider
from tests.test_api_turns import streamed_turn

GUARD = RepeatGuard()
LOOP = "The sea is a great and unforgiving enemy."


def test_a_sentence_said_again_ends_the_reply() -> None:
    reply = f"{LOOP} Maren frowns at the water. {LOOP} {LOOP} The sea is"
    kept, removed = GUARD.clean(reply)
    assert kept == f"{LOOP} Maren frowns at the water."
    assert [r.kind for r in removed] == ["loop"] and removed[0].line == LOOP
    assert "a second time" in summary(removed)


def test_a_loop_cut_short_by_the_token_limit_is_dropped_too() -> None:
    kept, removed = GUARD.clean(f"{LOOP} Gulls wheel overhead. The sea is a great and")
    assert kept == f"{LOOP} Gulls wheel overhead." and removed


def test_the_same_opening_words_are_a_repeat() -> None:
    """A loop often varies only its tail: eight words alike are the same sentence begun again."""
    kept, removed = GUARD.clean(
        "The old keeper climbs the stairs of the tower slowly. "
        "The old keeper climbs the stairs of the tower once more, muttering."
    )
    assert kept == "The old keeper climbs the stairs of the tower slowly." and removed


def test_prose_that_sounds_alike_is_kept() -> None:
    for reply in (
        "No. No. No! You will not cross tonight.",  # short sentences may recur
        "She turns to the door. She turns to the window and smiles.",
        "The wind rises. The wind rises again, louder, and the shutters bang.",
        "Rain falls.\nRain falls.\nThe lamp gutters in the wind.",
        '"Mind the rope," she says. "Mind the step." The ferry rocks beneath you.',
        "Maren nods at the lantern hanging by the door. Tobin nods at the lantern too.",
    ):
        kept, removed = GUARD.clean(reply)
        assert kept == reply and not removed, reply


def test_earlier_turns_are_not_judged() -> None:
    """A deterministic model may say the same thing every turn: that is for the player to
    judge (retry, edit), not a loop."""
    assert GUARD.clean(LOOP) == (LOOP, [])


def test_loops_is_known_while_streaming_before_the_sentence_ends() -> None:
    long = "The sea is a great and unforgiving enemy of every sailor on this coast."
    reply = f"{long} Maren frowns. {long}"
    first = next(i for i in range(len(reply) + 1) if GUARD.loops(reply[:i]))
    assert first < len(reply) - 20  # eight words of the second one are enough
    assert not any(GUARD.loops(reply[:i]) for i in range(len(f"{long} Maren frowns. ")))


SENTENCES = [
    LOOP,
    "Maren frowns at the water.",
    "No.",
    "The old keeper climbs the stairs of the tower slowly.",
    "The old keeper climbs the stairs of the tower once more.",
    "The old keeper waits.",
    '"Mind the rope," she says.',
    "Rain falls on the roof",
    "The sea is a great and",
    "3.5 miles out, a bell tolls!",
    "Wait...",
    "“The sea is a great and unforgiving enemy,” she says.",
    "The old keeper climbs\nthe stairs of the tower slowly",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=8),
    st.lists(st.sampled_from([" ", "\n", "  ", "\n\n", ""]), min_size=8, max_size=8),
    st.lists(st.integers(1, 30), min_size=1, max_size=40),
)
def test_the_shown_text_only_grows_and_is_a_prefix_of_the_stored(parts, gaps, cuts) -> None:
    reply = "".join(part + gap for part, gap in zip(parts, gaps, strict=False))
    final, _ = GUARD.clean(reply)
    shown, pos = "", 0
    for step in [*cuts, len(reply)]:
        pos = min(len(reply), pos + step)
        now = GUARD.shown(reply[:pos])
        assert now.startswith(shown), (shown, now)
        assert final.startswith(now.rstrip()), (now, final)
        shown = now
        if GUARD.loops(reply[:pos]):  # the turn stops here: what it stores is still whole
            assert GUARD.clean(reply[:pos])[0] == final
            break


class LoopingProvider(ScriptedProvider):
    """A model stuck in a loop: it would say its sentence forever if nobody stopped it."""

    def __init__(self) -> None:
        super().__init__(["unused"])
        self.chunks_sent = 0

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        yield StreamEvent("text", text="Rain drums on the planks. ")
        while self.chunks_sent < 10_000:
            for word in LOOP.split():
                self.chunks_sent += 1
                yield StreamEvent("text", text=word + " ")


@pytest.fixture
def scripted() -> ScriptedProvider:  # the app's model in this module's turn test
    return LoopingProvider()


def test_a_looping_model_is_stopped_and_the_loop_never_shown_or_stored(
    client: TestClient, adventure_id: int, scripted: LoopingProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    shown, turn = streamed_turn(client, adventure_id, "look at the sea")
    stored = turn["narration"]
    assert stored == f"Rain drums on the planks. {LOOP}"
    assert shown.rstrip() == stored
    assert scripted.chunks_sent < 3 * len(LOOP.split())  # stopped at once, not at a limit
    insights = client.get(f"/api/adventures/{adventure_id}/turns/{turn['id']}/insights").json()
    assert any("a second time" in note for note in insights["notes"])


def _streamed_reference(guard: RepeatGuard, text: str, before: str) -> str:
    """What `streamed` keeps, as a stream shows it: never less than it showed."""
    kept, _ = guard.streamed(text)
    assert kept.startswith(before) or before.startswith(kept), (before, kept)
    return kept if kept.startswith(before) else before


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from([*SENTENCES, ".", "!?", "'", " ", "\n", "x", "He nods."]), max_size=10
    ),
    st.lists(st.sampled_from([" ", "\n", "  ", "\n\n", ""]), min_size=10, max_size=10),
    st.lists(st.integers(1, 12), min_size=1, max_size=60),
)
def test_the_stream_keeps_what_the_guard_keeps_piece_by_piece(parts, gaps, cuts) -> None:
    """RepeatStream reads each piece once and keeps what `streamed` over the whole text
    keeps (where that ever shrank, what was already shown stays)."""
    from talekeeper.context.repeats import RepeatStream

    reply = "".join(part + gap for part, gap in zip(parts, gaps, strict=False))
    stream, kept, reference, pos = RepeatStream(), "", "", 0
    for step in [*cuts, len(reply)]:
        if pos >= len(reply):
            break
        piece, pos = reply[pos : pos + step], min(len(reply), pos + step)
        new, loops = stream.feed(piece)
        kept += new
        reference = _streamed_reference(GUARD, reply[:pos], reference)
        assert kept == reference and loops == GUARD.loops(reply[:pos]), reply[:pos]
        if loops:
            break


# --- runs: a loop inside one sentence ---------------------------------------------------

RUN = "You see Grimbold, Grimbold, Grimbold, Grimbold, Grimbold, Grimbold"


def test_a_word_said_over_and_over_inside_a_sentence_ends_the_reply() -> None:
    kept, removed = GUARD.clean(f"Rain drums on the planks. {RUN}, Grimbold and the sea.")
    assert kept == "Rain drums on the planks. You see Grimbold"
    assert [(r.kind, r.line) for r in removed] == [("run", "Grimbold")]
    assert "over and over" in summary(removed)
    kept, removed = GUARD.clean("The sea, the sea, the sea, the sea calls you home.")
    assert kept == "The sea" and removed[0].kind == "run"


@pytest.mark.parametrize(
    "prose",
    [
        "No, no, no! You will not cross tonight.",
        "Again and again and again the waves strike the rocks.",
        "Far, far away, a bell tolls.",
        "Knock, knock, knock, knock. The door stays shut.",  # four: prose may say it so
        "He counts the coins: 1, 2, 3, 4, 5, 6, 7.",
        "Tick tock, tick tock, tick tock goes the clock.",
        "No. No. No. No. No. No.",  # short sentences, each its own
        "Maren rows and rows and rows until the shore is close.",
    ],
)
def test_prose_that_repeats_a_little_is_not_a_run(prose: str) -> None:
    assert GUARD.clean(prose) == (prose, [])


RUN_PARTS = [
    "Grimbold, ",
    "Grimbold ",
    "the sea, ",
    "the sea ",
    "no ",
    "Maren nods ",
    "and ",
    "Gri",
    "mbold",
    ". ",
    "\n",
    "You see ",
]


def _runs_in(text: str) -> list[str]:
    from talekeeper.context.repeats import _runs_of, _sentences

    return [s.text for s in _sentences(text, True) if _runs_of(s.text, True).cut is not None]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(RUN_PARTS), min_size=1, max_size=24),
    st.lists(st.integers(1, 9), min_size=1, max_size=60),
)
def test_runs_are_never_shown_or_stored_and_the_stream_only_grows(parts, cuts) -> None:
    """Streamed in pieces, a reply's shown text only grows, is always a prefix of what is
    stored, equals what the whole-text guard shows, and neither ever holds a run."""
    from talekeeper.context.repeats import RepeatStream

    reply = "".join(parts)
    final, _ = GUARD.clean(reply)
    assert not _runs_in(final), final
    stream, shown, pos = RepeatStream(), "", 0
    for step in [*cuts, len(reply)]:
        if pos >= len(reply):
            break
        piece, pos = reply[pos : pos + step], min(len(reply), pos + step)
        new, loops = stream.feed(piece)
        shown += new
        reference, looped = GUARD.streamed(reply[:pos])
        assert shown == reference and loops == looped, reply[:pos]
        assert final.startswith(shown.rstrip()) or looped, (shown, final)
        if loops:  # the turn stops here: it stores what the guard keeps of what came
            assert GUARD.clean(reply[:pos])[0] == shown.rstrip()
            break


class RunningProvider(ScriptedProvider):
    """SmolLM2's word loop: one name, forever, inside one sentence."""

    def __init__(self) -> None:
        super().__init__(["unused"])
        self.chunks_sent = 0

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        yield StreamEvent("text", text="Rain drums on the planks. You see Grim")
        while self.chunks_sent < 10_000:
            self.chunks_sent += 1
            yield StreamEvent("text", text="bold, Grim")


def test_a_model_in_a_word_loop_is_stopped_and_the_run_never_shown_or_stored(
    tk, client: TestClient, adventure_id: int
) -> None:
    running = RunningProvider()
    tk.provider_override = running
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    shown, turn = streamed_turn(client, adventure_id, "look at the sea")
    assert turn["narration"] == "Rain drums on the planks. You see Grimbold"
    assert shown.rstrip() == turn["narration"]
    assert running.chunks_sent < 10  # stopped at once, not at a limit
    insights = client.get(f"/api/adventures/{adventure_id}/turns/{turn['id']}/insights").json()
    assert any("over and over" in note for note in insights["notes"])
