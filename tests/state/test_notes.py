"""The narrator's notes: every fact that matters to the scene, in words — and no id, stat
path or JSON, for any rules and any state the story can reach."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import talekeeper
from talekeeper.state import (
    apply_proposal,
    initial_document,
    load_rules,
    refusal_notes,
    state_notes,
)

from .demo_scenario import DEMO_RULES
from .test_properties import EXAMPLES, proposals

GREYWATER = json.loads(
    (Path(talekeeper.__file__).parent / "scenarios" / "greywater.json")
    .read_text()
    .replace("${name}", "Ash")
)["rules"]
SCENARIOS = {
    "demo": load_rules(copy.deepcopy(DEMO_RULES)),
    "greywater": load_rules(copy.deepcopy(GREYWATER)),
}

SETTINGS = settings(
    max_examples=max(20, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROTOCOL = re.compile(r"\b(?:world|player|npc)\.\w|[{}\[\]]|\"type\"|\w_\w")


def protocol_in(text: str, rules, generic: bool = True) -> list[str]:  # type: ignore[no-untyped-def]
    """Protocol a narrator could copy: the rules' stat paths and snake_case ids, `(id`
    tags, fact ids — and, where every word came from the rules, any path, id or JSON."""
    raw = rules.raw
    ids = [e["id"] for e in raw.get("entities", [])] + list(rules.flags) + list(rules.milestones)
    ids += [t["id"] for t in raw.get("threads", [])]
    paths = [f"world.{n}" for n in rules.stats.world] + [f"player.{n}" for n in rules.stats.player]
    paths += [f"npc.{c}.{n}" for c, block in rules.stats.npcs.items() for n in block]
    found = PROTOCOL.findall(text) if generic else []
    found += [p for p in paths if p in text]
    found += [i for i in ids if "_" in i and re.search(rf"\b{re.escape(i)}\b", text)]
    found += [i for i in ids if re.search(rf"\(\s*{re.escape(i)}\s*[,)]", text)]
    found += re.findall(r"\bf\d+\b|\br\d+\b", text)  # fact and relationship ids
    return found


def test_the_demo_opening_reads_as_notes() -> None:
    rules = SCENARIOS["greywater"]
    notes = state_notes(initial_document(rules), rules, ["maren"])
    assert protocol_in(notes, rules) == []
    # every fact that matters to the scene is still there, in words
    for said in (
        "Greywater docks",
        "first evening of the storm",
        "Maren",
        "lamp-mender's tools",
        "health: hale (10 of 10)",
        "lamp oil: 2 of 3",
        "luck: unremarkable",
        "storm: a gale (4 of 10)",
        "Maren's trust: wary",
        "Tobin, alive, at Keeper's cottage, holding brass key",
        "Obtain the brass key",
        "Relight the Greywater lantern",
        "Tobin keeps brass key",
    ):
        assert said in notes, said
    assert "5" not in notes.split("luck")[1].split(";")[0]  # a hidden stat shows only its band word


def test_someone_the_story_names_is_not_here_when_the_state_puts_them_elsewhere() -> None:
    """The recent window names Tobin (at his cottage) while you are on the docks: the notes
    say where he is, never "Here too: Tobin" (seen in play: the narrator brought him in)."""
    rules = SCENARIOS["greywater"]
    notes = state_notes(initial_document(rules), rules, ["maren", "tobin"])
    assert "Here too" not in notes
    assert "Tobin, alive, at Keeper's cottage, holding brass key" in notes


@SETTINGS
@given(st.sampled_from(sorted(SCENARIOS)), st.lists(proposals, max_size=3))
def test_no_one_is_here_too_whom_the_state_puts_elsewhere(name: str, batches: list) -> None:
    rules = SCENARIOS[name]
    doc = initial_document(rules)
    for proposal in batches:
        doc = apply_proposal(doc, proposal, rules, 1)[0]
    notes = state_notes(doc, rules, list(doc.entities))
    here_too = next((ln for ln in notes.splitlines() if ln.startswith("Here too: ")), "")
    for eid, e in doc.entities.items():
        if e.location and e.location in doc.entities and e.location != doc.scene.location:
            assert not re.search(rf"(?:: |; ){re.escape(e.name)}\b", here_too), (eid, notes)


@SETTINGS
@given(st.sampled_from(sorted(SCENARIOS)), st.lists(proposals, max_size=3), st.booleans())
def test_no_id_or_path_reaches_the_narrator(scenario, turns, use_scene) -> None:
    rules = SCENARIOS[scenario]
    doc = initial_document(rules)
    report = None
    for turn, proposal in enumerate(turns, start=1):
        doc, report = apply_proposal(doc, proposal, rules, turn)
    in_scene = list(doc.entities)[:3] if use_scene else None
    text = state_notes(doc, rules, in_scene) + "\n" + refusal_notes(report, doc, rules)
    # the proposals write arbitrary labels and notes into the story; what the rules name
    # (paths, ids) must still never show
    assert protocol_in(text, rules, generic=False) == [], text


# --- generated rules: every id distinctive, so any that leaks is found -------------------

_id = st.from_regex(r"\Aq[a-z]{2}_[a-z]{3}\Z")
_word = st.sampled_from(
    ["Oda", "lantern", "Harbour", "rope", "the Mill", "Grey Fen", "knife", "Bram"]
)


@st.composite
def generated(draw):  # type: ignore[no-untyped-def]
    ids = draw(st.lists(_id, min_size=3, max_size=7, unique=True))
    entities = [
        {
            "id": i,
            "name": draw(_word) + f" {n}",
            "type": draw(st.sampled_from(["person", "place", "thing"])),
        }
        for n, i in enumerate(ids)
    ]
    place = ids[0]
    for e in entities[1:]:
        if draw(st.booleans()):
            e["location"] = place
        if draw(st.booleans()):
            e["status"] = draw(st.sampled_from(["alive", "asleep"]))
    stat_names = draw(st.lists(_id, min_size=1, max_size=3, unique=True))
    stat = {"min": 0, "max": 10, "initial": 5, "bands": [[0, 5, "low"], [5, 10, "high"]]}
    raw = {
        "version": 1,
        "player": {"name": "Ada", "location": place},
        "entities": entities,
        "possessions": {ids[-1]: draw(st.sampled_from(["player", ids[1]]))},
        "facts": [{"subject": ids[1], "predicate": "keeps", "object": ids[-1]}],
        "threads": [
            {
                "id": draw(_id),
                "title": "Mend the net",
                "kind": "quest",
                "objectives": [{"id": draw(_id), "text": "Find rope"}],
            }
        ],
        "scene": {"location": place, "present": ids[1:3]},
        "stats": {
            "world": {stat_names[0]: dict(stat)},
            "player": {n: dict(stat, hidden=draw(st.booleans())) for n in stat_names},
            "npcs": {ids[1]: {stat_names[0]: dict(stat)}},
        },
        "flags": {draw(_id): {"initial": True}},
        "milestones": {draw(_id): {"desc": "Mend the net"}},
    }
    return load_rules(raw), ids + stat_names


@SETTINGS
@given(generated(), st.booleans())
def test_generated_rules_never_leak_an_id(made, use_scene) -> None:
    rules, ids = made
    doc = initial_document(rules)
    text = state_notes(doc, rules, ids[1:2] if use_scene else None)
    assert protocol_in(text, rules) == [], text
    leaked = [i for i in ids if i in text]
    assert leaked == [], text
