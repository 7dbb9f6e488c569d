"""Properties that must hold for any input: hypothesis feeds arbitrary JSON, plausible
but wrong events, and arbitrary text, and checks the engine's promises."""

from __future__ import annotations

import copy
import json
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from talekeeper.state import (
    EVENT_TYPES,
    EVENTS,
    MAX_EVENTS,
    apply_proposal,
    emit_instructions,
    extract_reply,
    initial_document,
    load_rules,
    normalise,
    refusals_for_prompt,
    state_for_prompt,
    visible_prefix,
)

from .demo_scenario import DEMO_RULES

RULES = load_rules(copy.deepcopy(DEMO_RULES))
START = initial_document(RULES)
EXAMPLES = int(os.environ.get("TALEKEEPER_EXAMPLES", "150"))  # raise it for a thorough run
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# --- strategies ---------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)

NAMES = [
    "gwen",
    "Gwen",
    "the ranger",
    "guard",
    "Gate Guard",
    "Bob",
    "player",
    "you",
    "key",
    "rusty key",
    "camp",
    "North Road",
    "brannoc",
    "Oda",
    "oda",
    "",
]
STATS = [
    "player.hp",
    "player.mana",
    "player.luck",
    "player.mood",
    "player.fainted",
    "world.day",
    "npc.gwen.trust",
    "npc.gwen.health",
    "npc.brannoc.trust",
    "npc.Gwen.trust",
    "npc.bob.trust",
    "hp",
    "x",
]
KEYS = {
    "flag": ["has_key", "alarm_raised", "nope"],
    "milestone": ["rescue_gwen", "reach_capital", "nope"],
    "fact": ["f1", "f2", "f3", "F2", "x"],
    "relationship": ["r1", "r2", "x"],
    "thread": ["rescue", "Rescue Gwen", "oda", "x"],
    "objective": ["o1", "o2", "Find the key", "o3"],
    "outcome": ["resolved", "failed", "won"],
    "kind": ["person", "thing", "quest", "thread", "ally of"],
}
words = st.sampled_from(
    ["Oda", "Oda Fenn", "sword", "tired", "angry", "a" * 45, "line\nbreak", "  padded "]
)


def value_for(field_name: str, shape: str):
    if field_name in KEYS:
        plausible = st.sampled_from(KEYS[field_name])
    elif shape in ("ref", "ref?"):
        plausible = st.sampled_from(NAMES) | (
            st.none() if shape == "ref?" else st.sampled_from(NAMES)
        )
    elif shape == "refs":
        plausible = st.lists(st.sampled_from(NAMES), max_size=4)
    elif shape in ("labels", "names", "texts"):
        plausible = st.lists(words, max_size=3)
    elif shape == "stat":
        plausible = st.sampled_from(STATS)
    elif shape == "number":
        plausible = st.integers(-150, 150) | st.floats(-150, 150)
    elif shape in ("stat_value", "scalar", "scalar?"):
        plausible = st.integers(-150, 150) | words | st.booleans() | st.none()
    elif shape == "bool":
        plausible = st.booleans()
    elif shape == "weight":
        plausible = st.integers(0, 11)
    elif shape == "id":
        plausible = st.sampled_from(["oda", "camp", "new_thing", "Bad Id"])
    else:
        plausible = words
    return st.one_of(plausible, plausible, plausible, json_values)


@st.composite
def events(draw):
    kind = draw(st.sampled_from((*EVENT_TYPES, "bogus")))
    event = {"type": kind}
    for field in EVENTS[kind].fields if kind in EVENTS else ():
        if (field.required and draw(st.integers(0, 9))) or draw(st.booleans()):
            event[field.name] = draw(value_for(field.name, field.shape))
    if draw(st.integers(0, 19)) == 0:
        event[draw(st.text(max_size=6))] = draw(json_values)
    return event


proposals = st.builds(lambda evs: {"events": evs}, st.lists(events(), max_size=8))
any_proposal = (
    proposals | json_values | st.builds(lambda v: {"events": v}, st.lists(json_values, max_size=6))
)

# --- apply ----------------------------------------------------------------------------------


@SETTINGS
@given(any_proposal, st.integers(0, 50), st.sampled_from(["story", "player"]))
def test_apply_never_raises_and_accounts_for_every_event(proposal, turn, authority):
    before = START.to_json()
    new, report = apply_proposal(START, proposal, RULES, turn, authority)
    assert START.to_json() == before, "the input document was mutated"
    json.dumps(new.to_json())
    json.dumps(report.to_json())
    read = [o for o in report.outcomes if o.index is not None]
    if isinstance(proposal, dict) and isinstance(proposal.get("events"), list):
        assert [o.index for o in read] == list(range(min(len(proposal["events"]), MAX_EVENTS)))
    for o in report.outcomes:
        assert o.status in ("applied", "limited", "unchanged", "rejected")
        if o.status in ("unchanged", "rejected"):
            assert o.correction, o
        if o.status == "rejected":
            assert o.layer is not None
    refusals_for_prompt(report)
    state_for_prompt(new, RULES)


@SETTINGS
@given(proposals, st.integers(1, 50))
def test_a_lost_event_changes_nothing_and_the_rest_still_apply(proposal, turn):
    """Dropping every rejected or unchanged event from the proposal yields the same
    document: they changed nothing, and did not stop the others."""
    new, report = apply_proposal(START, proposal, RULES, turn)
    kept = [
        proposal["events"][o.index]
        for o in report.outcomes
        if o.index is not None and o.status not in ("rejected", "unchanged")
    ]
    again, _ = apply_proposal(START, {"events": kept}, RULES, turn)
    assert again.to_json() == new.to_json()


@SETTINGS
@given(events(), st.integers(1, 50))
def test_a_rejected_event_leaves_the_document_as_it_was(event, turn):
    new, report = apply_proposal(START, {"events": [event]}, RULES, turn)
    if report.outcomes[0].status in ("rejected", "unchanged"):
        assert new.to_json() == START.to_json()


def _numeric_stats(doc):
    for owner, declared, live in (
        ("world", RULES.stats.world, doc.stats.world),
        ("player", RULES.stats.player, doc.stats.player),
        *((f"npc.{n}", b, doc.stats.npcs.get(n, {})) for n, b in RULES.stats.npcs.items()),
    ):
        for name, stat_rule in declared.items():
            if stat_rule.numeric and name in live:
                yield f"{owner}.{name}", stat_rule, live[name].value


class Campaign(RuleBasedStateMachine):
    """A campaign played turn by turn with arbitrary proposals from the story and the
    player; the engine's invariants hold after every step."""

    @initialize()
    def start(self):
        self.doc = START
        self.turn = 0
        self.counters = {
            path: value for path, r, value in _numeric_stats(self.doc) if r.kind == "counter"
        }
        self.milestones = dict(self.doc.milestones)
        self.moments = []
        self.fact_ids = []

    @rule(
        proposal=proposals,
        authority=st.sampled_from(["story", "story", "player"]),
        advance=st.integers(0, 3),
    )
    def play(self, proposal, authority, advance):
        self.turn += advance
        before = self.doc.to_json()
        new, _ = apply_proposal(self.doc, proposal, RULES, self.turn, authority)
        assert self.doc.to_json() == before, "the input document was mutated"
        self.doc = new

    @rule(
        event=st.sampled_from(
            [
                {"type": "change_stat", "stat": "player.hp", "by": -40},
                {"type": "change_stat", "stat": "player.hp", "by": 90},
                {"type": "set_stat", "stat": "npc.gwen.trust", "value": -300},
                {"type": "change_stat", "stat": "world.day", "by": 1},
                {"type": "change_stat", "stat": "world.day", "by": -1},
                {"type": "set_stat", "stat": "player.luck", "value": 99},
                {"type": "reach_milestone", "milestone": "rescue_gwen"},
                {"type": "record_moment", "text": "x", "weight": 2},
                {"type": "add_fact", "subject": "gwen", "predicate": "is", "object": "here"},
                {"type": "withdraw_fact", "fact": "f1"},
                {"type": "note_event", "text": "tick"},
            ]
        )
    )
    def push(self, event):
        self.turn += 1
        self.doc, _ = apply_proposal(self.doc, {"events": [event]}, RULES, self.turn)

    @invariant()
    def stats_stay_in_range(self):
        for path, stat_rule, value in _numeric_stats(self.doc):
            assert stat_rule.min is None or value >= stat_rule.min, (path, value)
            assert stat_rule.max is None or value <= stat_rule.max, (path, value)
            if stat_rule.integer:
                assert float(value).is_integer()

    @invariant()
    def counters_never_fall(self):
        for path, stat_rule, value in _numeric_stats(self.doc):
            if stat_rule.kind == "counter":
                assert value >= self.counters[path], path
                self.counters[path] = value

    @invariant()
    def milestones_never_unreach(self):
        for mid, reached in self.milestones.items():
            if reached is not None:
                assert self.doc.milestones[mid] == reached
        self.milestones = dict(self.doc.milestones)

    @invariant()
    def history_is_append_only(self):
        moments = [m.model_dump() for m in self.doc.moments]
        assert moments[: len(self.moments)] == self.moments
        self.moments = moments
        ids = [f.id for f in self.doc.facts]
        assert ids[: len(self.fact_ids)] == self.fact_ids
        self.fact_ids = ids
        assert len(self.doc.recent_events) <= 5

    @invariant()
    def normalise_keeps_a_valid_document(self):
        stored = json.loads(json.dumps(self.doc.to_json()))
        back, repairs = normalise(stored, RULES)
        assert repairs == []
        assert back.to_json() == self.doc.to_json()


Campaign.TestCase.settings = settings(
    max_examples=max(EXAMPLES // 3, 20),
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCampaign = Campaign.TestCase


# --- extraction -------------------------------------------------------------------------------

STATE_FENCE = re.compile(r"`{3,}[ \t]*state(?![\w-])", re.IGNORECASE)

fragments = st.sampled_from(
    [
        "The blade bites.",
        "\n",
        "\n\n",
        "```",
        "```state",
        "```json",
        "```python\nx = 1\n```",
        "State:",
        "{",
        "}",
        '{"events": [',
        '{"type": "note_event", "text": "x"}',
        "]}",
        "`",
        "``",
        " ",
        "'",
        '"',
        "\\",
        '```state\n{"events": []}\n```',
        emit_instructions(),
        "If nothing changed",
        "{it's}",
        "~~~",
    ]
)
replies = st.lists(fragments | st.text(max_size=12), max_size=12).map("".join) | st.text(
    max_size=200
)


@SETTINGS
@given(replies)
def test_prose_never_carries_the_state_fence(reply):
    result = extract_reply(reply)
    assert not STATE_FENCE.search(result.prose), result.prose
    again = extract_reply(result.prose)
    assert again.raw_block is None and again.prose == result.prose, "protocol left in the prose"
    if result.proposal is not None:
        apply_proposal(START, result.proposal, RULES, 1)
    if result.raw_block is None:
        assert result.proposal is None and result.error is None


@SETTINGS
@given(replies)
def test_streaming_only_grows_and_never_shows_the_fence(reply):
    final = extract_reply(reply).prose
    shown_before = ""
    for i in range(len(reply) + 1):
        shown = visible_prefix(reply[:i])
        assert not STATE_FENCE.search(shown), shown
        assert shown.startswith(shown_before), (reply[:i], shown_before, shown)
        shown_before = shown
    assert final.startswith(shown_before.rstrip()), (final, shown_before)


# --- normalise ------------------------------------------------------------------------------


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _paths(inner, (*prefix, i))


PLAYED, _ = apply_proposal(
    START,
    {
        "events": [
            {"type": "change_stat", "stat": "player.hp", "by": -25},
            {"type": "create_entity", "name": "Oda Fenn", "kind": "person", "location": "road"},
            {"type": "set_possession", "item": "key", "holder": "oda fenn"},
            {"type": "add_fact", "subject": "oda fenn", "predicate": "owes", "object": "you"},
            {"type": "add_relationship", "source": "gwen", "kind": "ally of", "target": "you"},
            {"type": "open_thread", "title": "Find Oda", "objectives": ["Ask around"]},
            {"type": "set_scene", "present": ["gwen", "oda fenn"]},
            {"type": "reach_milestone", "milestone": "rescue_gwen"},
            {"type": "record_moment", "text": "Slipped", "weight": 4},
            {"type": "note_event", "text": "The key changed hands."},
        ]
    },
    RULES,
    3,
)
PLAYED_JSON = PLAYED.to_json()
PLAYED_PATHS = list(_paths(PLAYED_JSON))[1:]


@st.composite
def damaged_documents(draw):
    stored = copy.deepcopy(PLAYED_JSON)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(PLAYED_PATHS))
        node = stored
        try:
            for part in path[:-1]:
                node = node[part]
            if draw(st.booleans()) and isinstance(node, dict):
                node.pop(path[-1], None)
            else:
                node[path[-1]] = draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue
    return stored


@SETTINGS
@given(
    st.lists(
        st.tuples(damaged_documents() | st.just(PLAYED_JSON), st.booleans()), min_size=1, max_size=6
    )
)
def test_normalise_through_a_memo_finds_what_each_document_alone_would(run):
    """A bundle import checks a story's snapshots through one memo (sections, and checks
    across sections, unchanged since the last clean document are not checked again) and
    stops at the first that needs a repair: up to there each finds what it would alone."""
    memo: dict = {}
    for stored, with_rules in run:
        rules = RULES if with_rules else None
        alone, expected = normalise(copy.deepcopy(stored), rules)
        doc, repairs = normalise(copy.deepcopy(stored), rules, memo)
        assert repairs == expected
        assert doc.to_json() == alone.to_json()
        if repairs:
            break


@SETTINGS
@given(damaged_documents() | json_values, st.booleans())
def test_normalise_repairs_anything_into_a_stable_document(stored, with_rules):
    rules = RULES if with_rules else None
    doc, repairs = normalise(stored, rules)
    again, more = normalise(json.loads(json.dumps(doc.to_json())), rules)
    assert more == [], more
    assert again.to_json() == doc.to_json()
    # (compared as JSON: a damage that wrote True for a 1 leaves `==` true, but is damage)
    if json.dumps(stored, sort_keys=True) == json.dumps(PLAYED_JSON, sort_keys=True):
        assert repairs == []
    apply_proposal(
        doc, {"events": [{"type": "change_stat", "stat": "player.hp", "by": -5}]}, RULES, 4
    )
    state_for_prompt(doc, RULES)
