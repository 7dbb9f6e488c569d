"""Extraction: the protocol never reaches the reader; a story's own code block does."""

from __future__ import annotations

import json

import pytest

from talekeeper.state import emit_instructions, extract_reply, visible_prefix

HP = '{"type": "change_stat", "stat": "player.hp", "by": -15}'
BLOCK = '{"events": [' + HP + "]}"
EVENT = {"type": "change_stat", "stat": "player.hp", "by": -15}

CASES = [
    # (reply, prose, proposal, error substring or None)
    (
        "The blade bites.\n\n```state\n" + BLOCK + "\n```",
        "The blade bites.",
        {"events": [EVENT]},
        None,
    ),
    (
        "The blade bites.\n```STATE\n" + BLOCK + "\n```\n",
        "The blade bites.",
        {"events": [EVENT]},
        None,
    ),
    (
        "The blade bites.\n  ```state\n" + BLOCK + "\n```",
        "The blade bites.",
        {"events": [EVENT]},
        None,
    ),
    (
        "The blade bites. ```state " + BLOCK + "``` You stagger.",
        "The blade bites. You stagger.",
        {"events": [EVENT]},
        None,
    ),
    ("Quiet night.", "Quiet night.", None, None),
    ("Hi.\n```state json\n" + BLOCK + "\n```", "Hi.", {"events": [EVENT]}, None),
    ("Hi.\n```state:\n" + BLOCK + "\n```", "Hi.", {"events": [EVENT]}, None),
    # small-model mistakes, repaired
    (
        'Hit.\n```state\n{"events": [{"type": "change_stat", "stat": "player.hp", "by": +5},]}\n```',
        "Hit.",
        {"events": [{"type": "change_stat", "stat": "player.hp", "by": 5}]},
        None,
    ),
    (
        "Hit.\n```state\n{'events': [{'type': 'set_flag', 'flag': 'has_key', 'value': true}]}\n```",
        "Hit.",
        {"events": [{"type": "set_flag", "flag": "has_key", "value": True}]},
        None,
    ),
    # a list of events, or one event, is read as a proposal
    ("Hit.\n```state\n[" + HP + "]\n```", "Hit.", {"events": [EVENT]}, None),
    ("Hit.\n```state\n" + HP + "\n```", "Hit.", {"events": [EVENT]}, None),
    # nothing changed
    ("Calm.\n```state\n{}\n```", "Calm.", {"events": []}, None),
    ("Calm.\n```state\n```", "Calm.", {"events": []}, None),
    # ours whatever it holds: a non-proposal goes to the envelope layer to be refused out loud
    ('Hit.\n```state\n{"player.hp": -15}\n```', "Hit.", {"player.hp": -15}, None),
    ("Hit.\n```state\nhp went down a lot\n```", "Hit.", None, "could not be read"),
    # a json or bare fence only when it is a proposal
    ("Hit.\n```json\n" + BLOCK + "\n```", "Hit.", {"events": [EVENT]}, None),
    ("Hit.\n```\n" + BLOCK + "\n```", "Hit.", {"events": [EVENT]}, None),
    (
        'The scroll reads:\n```json\n{"spell": "fire"}\n```\nIt burns.',
        'The scroll reads:\n```json\n{"spell": "fire"}\n```\nIt burns.',
        None,
        None,
    ),
    (
        "The terminal shows:\n```python\nprint('hi')\n```\nIt hums.",
        "The terminal shows:\n```python\nprint('hi')\n```\nIt hums.",
        None,
        None,
    ),
    # a trailing bare object only when it is a proposal
    ("Hit.\n" + BLOCK, "Hit.", {"events": [EVENT]}, None),
    ("Hit.\n" + BLOCK + "\n", "Hit.", {"events": [EVENT]}, None),
    ('Hit.\n{"mood": "dark"}', 'Hit.\n{"mood": "dark"}', None, None),
    (
        "A note: {it's a trap}.\n{braces in prose}\nEnd.",
        "A note: {it's a trap}.\n{braces in prose}\nEnd.",
        None,
        None,
    ),
    # truncated: never reaches the reader; complete events are salvaged
    (
        'Hit.\n```state\n{"events": ['
        + HP
        + ', {"type": "change_stat", "stat": "npc.gwen.trust", "by": -1',
        "Hit.",
        {"events": [EVENT]},
        "cut off; read its 1 complete event",
    ),
    (
        'Hit.\n```state\n{"events": [{"type": "change_st',
        "Hit.",
        None,
        "cut off before any complete event",
    ),
    ("Hit.\n```state\n", "Hit.", {"events": []}, None),
    ("Hit.\n```sta", "Hit.\n```sta", None, None),
    ('Hit.\n{"events": [{"type": "note_event", "te', "Hit.", None, "cut off"),
    ('Hit.\n```json\n{"events": [{"type": "note_', "Hit.", None, "cut off"),
    (
        "Hit.\n```state\n" + BLOCK,
        "Hit.",
        {"events": [EVENT]},
        None,
    ),  # an unclosed fence around complete JSON
    # a label line before the block goes with it
    ("Hit.\n\nState:\n```state\n" + BLOCK + "\n```", "Hit.", {"events": [EVENT]}, None),
    ("Hit.\n**State update:**\n```state\n" + BLOCK + "\n```", "Hit.", {"events": [EVENT]}, None),
    # an echoed reminder never reaches the reader, nor is its example taken as a proposal
    ("Hit.\n" + emit_instructions(), "Hit.", None, "repeated the reminder's example"),
    # two blocks: their events, in order
    (
        "A.\n```state\n"
        + BLOCK
        + '\n```\nB.\n```state\n{"events": [{"type": "note_event", "text": "x"}]}\n```',
        "A.\n\nB.",
        {"events": [EVENT, {"type": "note_event", "text": "x"}]},
        None,
    ),
]


@pytest.mark.parametrize(
    ("reply", "prose", "proposal", "error"), CASES, ids=[f"case{i}" for i in range(len(CASES))]
)
def test_extraction(reply, prose, proposal, error):
    result = extract_reply(reply)
    assert result.prose == prose
    assert result.proposal == proposal
    if error is None:
        assert result.error is None
    else:
        assert error in result.error
    if result.prose != reply.rstrip():
        assert result.raw_block, "a removed block is kept raw for the audit"
    else:
        assert result.raw_block is None


def test_the_result_unpacks_as_a_tuple():
    prose, raw, proposal, error = extract_reply("Hit.\n```state\n" + BLOCK + "\n```")
    assert (prose, raw, proposal, error) == (
        "Hit.",
        "```state\n" + BLOCK + "\n```",
        {"events": [EVENT]},
        None,
    )


def test_the_reminder_names_the_fence_and_the_absolute_delta_split():
    text = emit_instructions()
    assert "```state" in text and '{"events":' in text
    assert "set_stat takes an absolute value; change_stat takes a signed amount" in text
    assert "If nothing changed, write no block at all." in text


STREAM = "The blade bites deep.\n\nYou stagger back.\n\n```state\n" + BLOCK + "\n```"


PLAYS_THE_PLAYER = (
    'The clerk shrugs.\n> You ask the clerk what he means. He says:\n"Gold."\n```state\n'
    + BLOCK
    + "\n```"
)


def test_the_prose_ends_where_the_model_starts_writing_the_players_action():
    """A line opening with the transcript's `>` is the model playing the player's part: the
    prose stops before it (the stop sequence does this in completion mode); a state block
    after it is still read, and a `>` inside a line is prose."""
    assert extract_reply(PLAYS_THE_PLAYER) == (
        "The clerk shrugs.",
        "```state\n" + BLOCK + "\n```",
        {"events": [EVENT]},
        None,
    )
    assert extract_reply("Fog.\n  > You wait.\nMore fog.").prose == "Fog."
    assert extract_reply("He writes 3 > 2 on the slate.").prose == "He writes 3 > 2 on the slate."
    assert visible_prefix("The clerk shrugs.\n> You ask") == "The clerk shrugs.\n"


@pytest.mark.parametrize(
    "reply",
    [
        STREAM,
        PLAYS_THE_PLAYER,
        "Hit.\n" + BLOCK,
        "Hit.\nState:\n```state\n" + BLOCK + "\n```",
        "Hit.\n```json\n" + BLOCK + "\n```",
        "Hit.\n" + emit_instructions(),
    ],
)
def test_streaming_never_shows_protocol_and_only_grows(reply):
    final = extract_reply(reply).prose
    shown_before = ""
    for i in range(len(reply) + 1):
        shown = visible_prefix(reply[:i])
        assert shown.startswith(shown_before), (i, shown_before, shown)
        assert final.startswith(shown.rstrip()), (i, shown)
        assert "```" not in shown and '"events"' not in shown and "{" not in shown
        shown_before = shown
    assert shown_before.rstrip() == final


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Hit.\n`", "Hit.\n"),
        ("Hit.\n``", "Hit.\n"),
        ("Hit. ```st", "Hit. "),
        ("Hit. ```state", "Hit. "),
        ("Hit.\n{", "Hit.\n"),
        ('Hit.\n{"ev', "Hit.\n"),
        ("Hit.\nSta", "Hit.\n"),
        ("Hit.\nStars fell.", "Hit.\nStars fell."),
        ("Hit.\n{it was", "Hit.\n{it was"),
        ("Use `the lever`", "Use `the lever"),  # a backtick may start a fence: held one step
        ("Use `the lever` now", "Use `the lever` now"),
        ("The code:\n```python\nx = 1", "The code:\n"),
        ("The code:\n```python\nx = 1\n```\nDone.", "The code:\n```python\nx = 1\n```\nDone."),
    ],
)
def test_streaming_holds_back_what_may_become_protocol(text, shown):
    assert visible_prefix(text) == shown


LEFT_BEHIND = '{"events": [{"type": "note_event", "text": "The tide turned."}]}'


@pytest.mark.parametrize(
    ("reply", "prose"),
    [
        # a stray or doubled fence left after a state block
        ("Prose.\n```state\n" + LEFT_BEHIND + "\n```\n```", "Prose."),
        ("Prose.\n```\n```state\n" + LEFT_BEHIND + "\n```", "Prose."),
        ("Prose.\n```\n```state\n" + LEFT_BEHIND + "\n```\n```", "Prose."),
        ("Prose.\n```\n" + LEFT_BEHIND + "\n```\n```", "Prose."),
        ("Prose.\n```\nmore prose\n```\n" + LEFT_BEHIND + "\n```", "Prose.\n```\nmore prose\n```"),
        # a state block after a story fence that is never closed
        ("Prose.\n```python\ncode\n" + LEFT_BEHIND, "Prose.\n```python\ncode"),
        ("Prose.\n```\ncode\n" + LEFT_BEHIND, "Prose.\n```\ncode"),
        ("Prose.\n```text\nmore prose\n" + LEFT_BEHIND + "\n", "Prose.\n```text\nmore prose"),
        (
            "Prose.\n```text\nmore prose\n\n```json\n" + LEFT_BEHIND + "\n```",
            "Prose.\n```text\nmore prose",
        ),
        # a story's own closed block before a state block keeps its closing fence
        (
            "See:\n```python\nx = 1\n```\n```state\n" + LEFT_BEHIND + "\n```\nIt hums.",
            "See:\n```python\nx = 1\n```\n\nIt hums.",
        ),
    ],
)
def test_no_fence_or_block_is_left_behind(reply: str, prose: str) -> None:
    extraction = extract_reply(reply)
    assert extraction.prose == prose
    assert extraction.proposal == json.loads(LEFT_BEHIND)
    shown = visible_prefix(reply)
    assert prose.startswith(shown.rstrip()), shown
