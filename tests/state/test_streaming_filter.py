"""The streaming filter (state/streaming.py) reads each piece once and agrees, piece by
piece, with `visible_prefix` as it was when it read the whole reply again every time
(tests/state/oracle_visible.py); whatever the reply, its work grows in step with it."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from talekeeper.state import emit_instructions, visible_prefix
from talekeeper.state.streaming import LONG, VisibleStream
from tests.state import oracle_visible

EXAMPLES = int(os.environ.get("TALEKEEPER_EXAMPLES", "150"))
PIECES = st.sampled_from(
    [
        "The blade bites.",
        "\n",
        "\n\n",
        "```",
        "```state",
        "```STATE ",
        "```json",
        "```python\nx = 1\n```",
        "``` \n",
        "  ```",
        "State:",
        "**State**",
        "> You",
        "  >",
        "{",
        "}",
        "[",
        "]",
        '{"events": [',
        '{ "ev',
        "{'events':",
        '{"type": "note_event", "text": "x"}',
        "]}",
        "`",
        "``",
        " ",
        "\t",
        "'",
        '"',
        "\\",
        "* ",
        "- ",
        "#",
        "s",
        "sta",
        "te",
        '```state\n{"events": []}\n```',
        emit_instructions(),
        emit_instructions().splitlines()[0],
        "If nothing changed",
        "{it's}",
        "~~~",
        "states",
        "state-",
        '"text": "a\\"}',
        "\\\\",
        '\\"',
    ]
)
REPLIES = st.lists(PIECES | st.text(max_size=8), max_size=16).map("".join) | st.text(
    alphabet="`{}[]\"' \t\n>*#-_:sStaAeE\\x.", max_size=120
)


def feed(reply: str, cuts: list[int]):
    """Feed `reply` cut at `cuts`; yield (text so far, everything shown so far)."""
    stream, shown, start = VisibleStream(), "", 0
    yield "", ""
    for end in [*sorted(set(cuts)), len(reply)]:
        if end <= start:
            continue
        shown += stream.feed(reply[start:end])
        start = end
        yield reply[:end], shown


@settings(max_examples=EXAMPLES * 4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REPLIES, st.lists(st.integers(0, 200), max_size=30))
@example('Hit.\n{"events": [{"type": "note_event", "text": "x"}]}\nOn.', [6, 9, 30])
@example("The code:\n```python\nx = 1\n```\nDone.", [3, 12, 13, 20, 24])
@example("A" + "`" * 60 + "x ```sta", [5, 30, 63, 66])
@example("```state" + "s\nx\n```\nAfter.", [6, 8])
@example("Go ```state" + "s on.", [11])
@example('Hit.\n{"events": "\\"{"}\nOn.', [7, 20])
def test_each_piece_shows_what_the_whole_reply_read_again_would(reply, cuts) -> None:
    for text, shown in feed(reply, cuts):
        assert shown == oracle_visible.visible_prefix(text), (text, shown)


@settings(max_examples=EXAMPLES, deadline=None)
@given(REPLIES)
def test_fed_whole_or_one_character_at_a_time_it_is_the_same(reply) -> None:
    *_, (_, whole) = feed(reply, [])
    *_, (_, single) = feed(reply, list(range(len(reply))))
    assert whole == single == visible_prefix(reply)


def test_a_long_last_line_shown_goes_on_being_shown_and_one_held_waits_for_its_end() -> None:
    prose = "The rain " * (LONG // 4)
    stream = VisibleStream()
    assert stream.feed(prose[:100]) + stream.feed(prose[100:]) == prose
    stream = VisibleStream()
    markup = "* " * LONG  # a line of list markers: held while it may become anything
    assert stream.feed(markup) == ""
    assert stream.feed("The rain") == ""  # longer than LONG and nothing of it shown: held
    assert stream.feed(" falls.\nOn.") == markup + "The rain falls.\nOn."


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(REPLIES)
@example("```x\n```\n" + '{"events": []}')
@example("```json\n" + '{"events": [{"type": "note_event", "text": "x"}]}')
@example("```py\nprint(1)\n```state\n{}\n```")
def test_the_finished_reply_is_read_as_before(reply) -> None:
    """extract_reply's one-pass scan finds the blocks the old scan found."""
    from talekeeper.state import extract_reply

    assert extract_reply(reply) == oracle_visible.extract_reply(reply)


def test_a_label_or_bare_fence_before_an_echoed_reminder_is_never_shown_then_taken_back() -> None:
    reminder = emit_instructions().strip().splitlines()[0]
    for opening in ("State:\n", "```\n"):
        reply = opening + reminder
        shown = ""
        for i in range(len(reply) + 1):
            now = visible_prefix(reply[:i])
            assert now.startswith(shown), (reply[:i], shown, now)
            shown = now
        assert shown == ""
