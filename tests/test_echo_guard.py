"""The echo guard: a reply's lines that repeat the prompt's own notes — verbatim, in part
or reworded — are never shown or stored; prose that merely shares words with the state
stays; the stream only grows; Insights says what was removed; memories are guarded too."""

from __future__ import annotations

import copy
import re

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.context.echo import LABELS, EchoGuard, summary
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory import prompts
from talekeeper.state import initial_document, load_rules, state_notes
from talekeeper.state.document import RecentEvent
from talekeeper.state.notes import stat_guide_words
from talekeeper.state.prompt import canon_prompt, stat_guide, state_for_prompt
from tests.state.test_notes import GREYWATER
from tests.test_api_turns import streamed_turn

RULES = load_rules(copy.deepcopy(GREYWATER))
NOTES = state_notes(initial_document(RULES), RULES, ["maren"])
INSTRUCTIONS = (
    "You are the narrator of an interactive story. Write in second person, present tense, "
    'addressing the player as "you". Never act or speak for the player.'
)
GUARD = EchoGuard.for_sections(
    [
        ("current_state", NOTES),
        ("narrator", INSTRUCTIONS),
        ("history", "Maren said the tide was turning."),
    ],
    ["maren", "tobin", "docks"],
)

ECHOES = {
    "verbatim": "You are at Greywater docks, first evening of the storm.",
    "partial": "Left to do: reach the lighthouse headland and obtain the brass key.",
    "paraphrase": "Tobin is still alive at the keeper's cottage, and he holds the brass key.",
    "protocol": "Your stats: player.health 10/5, world.night 4/28",
    "tag": "Maren (maren, person) — alive",
    "instructions": "Write in second person, present tense, addressing the player as you.",
    # the state notes' readout, with numbers of the model's own (a 20-situation run)
    "readout": "The world lore: Night: 5 of 8; storm: a gale (7 of 8); You are standing on the headland.",
    # one stat read out, garbled, alone on its line (played turns)
    "stat line": "Maren: 1 of 3",
    "stat line, fraction": "Health: 2/5",
    "stat line, markup and band": "- **Lamp oil:** 2 out of 3 (low)",
    # the prompt's own labels with content of the model's own (SmolLM2, the starter, 6 turns)
    "label, card": "World lore: Maren is alive on Greywater, and you've taken her brass key to Keeper's Cottage.",
    "label, markup": "**World lore:** The lighthouse keeper sold his soul to the tide.",
    "label, notes": "- With you: a man in a grey suit, and the ghost of the old keeper.",
    "label, long": "Memories of earlier events: you once swam the whole bay at night with a lantern in your teeth.",
    "label, author's note": "[Author’s note: make the sea angrier]",
    "label, system": "Canon: the drowned walk on the first night of every storm.",
    "label, state pass": "Goals (mark with reach_milestone): find the fog horn",
    # …whose label has four words or more before its colon: not shown from its first words
    "label, spaced": "Memories of earlier events : you once swam the bay at night with a lamp.",
    "label, bracket": "Goals (mark them with the tool): find the fog horn before the tide turns.",
    "form, you're now": "You're now: a man in a large grey suit with an old wooden chair behind his desk.",
    "form, you are now": "You are now: Maren in Keeper's cottage, looking down at the two you've seen so far.",
    "form, your location": "Your location: the bottom of the harbour",
    # this story's stat labels, from its notes, with speech of the model's own (SmolLM2,
    # the starter: once kept, the next turns copied the form)
    "stat label, speech": "Maren's trust: “I'm sorry; I was going to help,” she said.",
    "stat label, player": "Your health: you are fine, just tired from the walk.",
}
PROSE = [
    "Elsewhere.",  # a single word that is also a note's heading ("Elsewhere: …") is story
    "Maren watches the storm build over Greywater docks, her lantern swinging.",
    "The wind tears at your coat as Maren unties the ferry, muttering that Tobin keeps the brass key close.",
    "Rain lashes the docks. Maren eyes you warily.",
    "Maren said the tide was turning.",  # history is the story: retelling it is not an echo
    "You hold up your lamp-mender's tools and ask Maren about the keeper's lighthouse.",
    "You count 3 of 4 coins into Maren's palm; the storm howls on.",  # one number is prose
    "Two of the three boats are back, and the night is only half over.",
    # a label and a figure, yet a sentence: prose
    "Tobin: 2 of 3 boats came back, and the rest are lost.",
    'Tobin: "3 of 4 lamps are out."',
    "She holds up two fingers: 2 of 3.",
    "1 of 3",
    # near misses of the labels: a word that starts a label, with no colon after it, or a
    # label that is not the prompt's (a speaker's name, a phrase of the story's own)
    "Canon fire shakes the docks.",
    "Quest for the key begins at dawn, Maren says",
    "You are now in the lighthouse, and the lamp is cold.",
    "You're now soaked to the bone.",
    "You are sure of one thing: the key is gone.",
    "Known to all: the sea takes its due, and the keeper knew it.",
    "Maren: I will row you across at first light.",
    "Maren, your brother: he was here before the storm.",
    "Memories of the drowned crowd the harbour at dusk.",
    "Your brother is waiting at the cottage.",
    # near misses of this story's stat labels: the same words, no label
    "Maren's trust in you grows as she speaks of the storm.",
    "Your health is fine: you feel strong.",
    "Tobin's grief: he carries it like a stone.",  # not a stat line of these notes (not in scene)
]


def test_removes_verbatim_partial_and_paraphrased_echoes() -> None:
    for kind, line in ECHOES.items():
        verdict = GUARD.judge(line)
        assert verdict is not None, (kind, line)
    assert GUARD.judge(ECHOES["verbatim"]).kind == "verbatim"
    assert GUARD.judge(ECHOES["partial"]).kind == "partial"
    assert GUARD.judge(ECHOES["paraphrase"]).kind == "paraphrase"
    assert GUARD.judge(ECHOES["protocol"]).kind == "protocol"
    for kind, line in ECHOES.items():
        if kind.startswith(("label", "form")):
            assert GUARD.judge(line).kind == "protocol", line
    assert GUARD.judge(ECHOES["paraphrase"]).section == "current_state"


def test_keeps_prose_that_merely_shares_words_with_the_state() -> None:
    for line in PROSE:
        assert GUARD.judge(line) is None, line


def test_clean_removes_whole_lines_and_says_why() -> None:
    reply = "\n\n".join([PROSE[0], ECHOES["verbatim"], PROSE[1], ECHOES["protocol"]])
    text, removed = GUARD.clean(reply)
    assert text == f"{PROSE[0]}\n\n{PROSE[1]}"
    assert [r.kind for r in removed] == ["verbatim", "protocol"]
    note = summary(removed)
    assert note.startswith("The echo guard removed 2 lines") and "current state" in note


lines = st.sampled_from(
    [*ECHOES.values(), *PROSE, "", "A long line " + "of plain story words " * 6]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(lines, min_size=1, max_size=6), st.lists(st.integers(1, 40), min_size=1, max_size=30)
)
def test_the_shown_text_only_grows_and_is_a_prefix_of_the_stored(parts, cuts) -> None:
    reply = "\n".join(parts)
    final, _ = GUARD.clean(reply)
    shown, pos = "", 0
    for step in [*cuts, len(reply)]:
        pos = min(len(reply), pos + step)
        now = GUARD.shown(reply[:pos])
        assert now.startswith(shown), (shown, now)
        assert final.startswith(now), (now, final)
        shown = now
    for echo_line in ECHOES.values():
        assert echo_line not in final


STATE_WORDS = [
    "Maren",
    "Tobin",
    "Greywater",
    "docks",
    "brass",
    "key",
    "lighthouse",
    "storm",
    "evening",
    "keeper's",
    "cottage",
    "lantern",
    "headland",
    "alive",
    "holds",
    "the",
    "at",
    "of",
    "and",
    "wary",
]
CLAUSES = [c.strip() for c in re.split(r"[.;:—]", NOTES) if len(c.split()) >= 4]
# Lines of the story that say what the state notes say (a narrator's earlier turn, a
# memory): the hardest history to quote, since the same words are also an echo source.
story_lines = st.one_of(
    st.tuples(
        st.sampled_from(["", "Maren says ", "You remember: ", "Again, "]), st.sampled_from(CLAUSES)
    ).map(lambda t: t[0] + t[1] + "."),
    st.lists(st.sampled_from(STATE_WORDS), min_size=4, max_size=18).map(
        lambda w: " ".join(w) + "."
    ),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(story_lines, min_size=1, max_size=5), st.data())
def test_prose_that_quotes_the_history_is_kept(history, data) -> None:
    """However much a line of the story shares with the state notes, retelling it — whole,
    or a run of four words or more of it — is story, shown and stored."""
    guard = EchoGuard.for_sections(
        [("current_state", NOTES), ("narrator", INSTRUCTIONS), ("history", "\n".join(history))],
        ["maren", "tobin", "docks"],
    )
    quotes = []
    for line in data.draw(st.lists(st.sampled_from(history), min_size=1, max_size=4)):
        words = line.split()
        start = data.draw(st.integers(0, len(words) - 4))
        end = data.draw(st.integers(start + 4, len(words)))
        quotes.append(" ".join(words[start:end]))
    reply = "\n".join(quotes)
    final, removed = guard.clean(reply)
    assert final == reply.strip("\n") and not removed
    assert guard.shown(reply + "\n") == final


def test_lines_inside_the_history_that_are_not_story_are_still_echoes() -> None:
    """The author's note and cards placed at a depth sit inside the history text."""
    card = "World lore: The drowned causeway floods at high tide and swallows the unwary."
    guard = EchoGuard.for_sections(
        [("history", f"> You wait.\nMaren nods.\n{card}"), ("story_cards_after", card)]
    )
    assert (
        guard.judge("The drowned causeway floods at high tide and swallows the unwary.") is not None
    )
    assert guard.judge("Maren nods.") is None


def test_a_turn_never_shows_or_stores_an_echo(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    scripted.queue(
        "Rain drums on the planks as Maren looks up.\n"
        "You are at Greywater docks, first evening of the storm.\n"
        "Your health: hale (10 of 10); lamp oil: 2 of 3.\n"
        '"Lamp-mender," she says. "You picked a poor night."'
    )
    shown, turn = streamed_turn(client, adventure_id, "greet Maren")
    stored = turn["narration"]
    assert (
        stored
        == 'Rain drums on the planks as Maren looks up.\n"Lamp-mender," she says. "You picked a poor night."'
    )
    assert stored.startswith(shown.rstrip()) and "Greywater docks" not in shown
    insights = client.get(f"/api/adventures/{adventure_id}/turns/{turn['id']}/insights").json()
    note = next(n for n in insights["notes"] if n.startswith("The echo guard removed 2 lines"))
    assert "verbatim, current state" in note


def test_a_turn_never_shows_or_stores_a_garbled_stat_line(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    scripted.queue(
        "Maren coils the rope.\nMaren: 1 of 3\nHealth: 2/5\n"
        "Maren: 1 of 3 boats came back tonight, she says."
    )
    shown, turn = streamed_turn(client, adventure_id, "ask Maren about the boats")
    assert turn["narration"] == (
        "Maren coils the rope.\nMaren: 1 of 3 boats came back tonight, she says."
    )
    assert turn["narration"].startswith(shown.rstrip()) and "2/5" not in shown


def test_a_turn_never_shows_or_stores_a_line_in_the_prompts_form(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    """SmolLM2 in play: the prompt's labels with content of its own, copied more each turn
    once stored. Neither shown nor stored; Insights names them."""
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    scripted.queue(
        "The door of the cottage groans open.\n"
        "World lore: Maren is alive on Greywater, and you've taken her brass key to Keeper's Cottage.\n"
        "You're now: a man in a large grey suit with an old wooden chair behind his desk.\n"
        "Maren: Keep your voice down.\n"
        "You are now in the cottage, and it smells of tar."
    )
    shown, turn = streamed_turn(client, adventure_id, "open the door")
    assert turn["narration"] == (
        "The door of the cottage groans open.\nMaren: Keep your voice down.\n"
        "You are now in the cottage, and it smells of tar."
    )
    assert turn["narration"].startswith(shown.rstrip())
    assert "World lore" not in shown and "grey suit" not in shown
    insights = client.get(f"/api/adventures/{adventure_id}/turns/{turn['id']}/insights").json()
    note = next(n for n in insights["notes"] if n.startswith("The echo guard removed 2 lines"))
    assert "World lore: Maren is alive" in note and "(protocol)" in note


def test_every_label_the_notes_write_is_one_the_guard_knows() -> None:
    """The labels come from the modules that write them: a label added there without
    adding it to their list fails here."""
    document = initial_document(RULES)
    document.recent_events.append(RecentEvent(turn=1, text="You arrived."))
    written = "\n".join(
        [
            NOTES,
            state_for_prompt(document, RULES, ["maren"]),
            stat_guide_words(RULES),
            stat_guide(RULES),
            canon_prompt(RULES),
        ]
    )
    names = {e.name for e in document.entities.values()}
    labels = {
        m.group(1)
        for m in re.finditer(r"^([A-Z][A-Za-z' ]*?)(?: \([^)]*\))?:", written, re.MULTILINE)
        if m.group(1) != "You"  # a speaker's label too: not the notes' own
        and not m.group(1).startswith(("Your ", *names))  # a stat ("Your health: …")
    }
    assert labels and labels <= set(LABELS), labels - set(LABELS)


def test_the_memory_writer_stores_no_echo() -> None:
    plot = {
        "persona": {"name": "Ada"},
        "story_cards": [
            {
                "type": "character",
                "name": "Maren",
                "entry": "The ferrywoman of Greywater, wary of strangers but fair.",
                "triggers": "Maren",
            }
        ],
    }
    excerpt = "> You greet Maren.\nMaren looks up from her ropes."
    request = prompts.memory_request(plot, excerpt, 40)
    reply = (
        "You compress interactive-fiction story excerpts into memories. "
        "Ada greeted Maren at the docks as the storm rose. "
        "Maren is the ferrywoman of Greywater, wary of strangers but fair."
    )
    assert (
        prompts.unechoed(reply, request, [excerpt])
        == "Ada greeted Maren at the docks as the storm rose."
    )
    # the story it was given may be retold
    assert (
        prompts.unechoed("Maren looks up from her ropes.", request, [excerpt])
        == "Maren looks up from her ropes."
    )
    # a loop is stored once (SmolLM2's summary in play: "You walk to the lighthouse." x4)
    loop = "Ada walks to the lighthouse. " * 4 + "Grimbold, Grimbold, Grimbold, Grimbold, Grimbold."
    assert prompts.unechoed(loop, request, [excerpt]) == "Ada walks to the lighthouse."
    words = "Ada waits for Tobin, Tobin, Tobin, Tobin, Tobin by the door."
    assert prompts.unechoed(words, request, [excerpt]) == "Ada waits for Tobin"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from([*ECHOES.values(), *PROSE, "", " ", "x", "Maren"]), min_size=1, max_size=7
    ),
    st.lists(st.sampled_from(["\n", "\n\n", " ", "", "\n \n"]), min_size=7, max_size=7),
    st.lists(st.integers(1, 15), min_size=1, max_size=60),
)
def test_the_stream_shows_what_the_guard_shows_piece_by_piece(lines, gaps, cuts) -> None:
    """EchoStream reads each piece once and shows what `shown` over the whole text shows."""
    from talekeeper.context.echo import EchoStream

    reply = "".join(line + gap for line, gap in zip(lines, gaps, strict=False))
    stream, shown, reference, pos = EchoStream(GUARD), "", "", 0
    for step in [*cuts, len(reply)]:
        if pos >= len(reply):
            break
        piece, pos = reply[pos : pos + step], min(len(reply), pos + step)
        shown += stream.feed(piece)
        now = GUARD.shown(reply[:pos])
        assert now.startswith(reference) or reference.startswith(now)
        reference = now if now.startswith(reference) else reference
        assert shown == reference, reply[:pos]
