"""Every converter refuses what it cannot read with `Refused` — never another exception.

The walk takes each format's spec-built fixture (tests/interop_fixtures.py) and a card
talekeeper exported, and sets every field, at every depth, to null, a bool, a number, a
string, a list and an object in turn. Each mutant must be refused with a reason or
imported as a scenario that passes the scenario checks (so Save works); anything else
(a TypeError from a field of the wrong type) fails the test, which lists every failing
mutant at once.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from talekeeper.interop.card_export import to_card
from talekeeper.interop.containers import Refused
from talekeeper.interop.detect import convert
from talekeeper.service.scenarios import check_scenario
from talekeeper.service.shipped_scenarios import builtin_scenarios
from tests.interop_fixtures import b64, documents, make_png

MUTANTS: tuple[Any, ...] = (None, True, 0, 2.5, "x", [], {}, ["x"], {"a": 1})


EMBEDDED = ("data", "extensions", "talekeeper", "scenario")


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value (the value itself first). In a run of records (a
    lorebook's entries), the first two are walked field by field and the rest whole, as
    they are read by the same code. Inside the scenario a talekeeper card carries, only
    its own fields: the scenario checks, fuzzed elsewhere, judge what lies deeper."""
    yield at
    if at[: len(EMBEDDED)] == EMBEDDED and len(at) > len(EMBEDDED):
        return
    items = (
        list(value.items())
        if isinstance(value, dict)
        else list(enumerate(value))
        if isinstance(value, list)
        else []
    )
    records = len(items) > 2 and all(isinstance(v, dict) for _, v in items)
    for n, (key, inner) in enumerate(items):
        if records and n >= 2:
            yield (*at, key)
        else:
            yield from paths(inner, (*at, key))


def replaced(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    value = copy.copy(value)
    value[at[0]] = replaced(value[at[0]], at[1:], new)
    return value


def _shrunk(value: Any) -> Any:
    """Long texts cut to a few hundred characters: the walk is about types, and a 40,000
    character entry converted thousands of times only costs time."""
    if isinstance(value, str):
        return value[:300]
    if isinstance(value, list):
        return [_shrunk(v) for v in value]
    if isinstance(value, dict):
        return {k: _shrunk(v) for k, v in value.items()}
    return value


def _exported() -> dict[str, Any]:
    """A card talekeeper exported: a scenario with origins and cards of every kind."""
    scenario = next(s for s in builtin_scenarios() if s["id"] == "greywater-lantern")
    cards = scenario["story_cards"]
    gated = {**cards[1], "gates": [{"kind": "flag", "id": "ferry_hired"}]}
    extra = {
        **cards[0],
        "secondary_triggers": "rain, /storm(s)?/i",
        "logic": "not_any",
        "position": "at_depth",
        "depth": 2,
        "probability": 50,
        "group": "weather",
        "sticky": 2,
        "max_tokens": 40,
        "type": "place",
    }
    # Small rules (its flags only), so each of the walk's thousand checks stays cheap.
    rules = {"player": {"name": "${name}"}, "flags": scenario["rules"]["flags"]}
    origins = [
        {k: v for k, v in o.items() if k in ("id", "title", "description", "opening")}
        for o in scenario["origins"]
    ]
    return to_card(
        {**scenario, "rules": rules, "origins": origins, "story_cards": [cards[0], gated, extra]}
    )


DOCUMENTS = {
    **{name: (filename, _shrunk(value)) for name, (filename, value) in documents().items()},
    "talekeeper_export": ("greywater.card.json", _exported()),
}


def outcome(raw: bytes, filename: str) -> str | None:
    """None when `raw` is refused in words or imported validly; else what went wrong."""
    try:
        results = convert(raw, filename)
    except Refused as exc:
        return None if len(str(exc)) > 15 else f"a refusal without a reason: {exc!r}"
    except Exception as exc:  # the defect this test exists to find
        return f"{type(exc).__name__}: {exc}"
    for result in results:
        problems = check_scenario({**result.document, "id": "walk"})
        if problems:
            return f"imported but not valid: {problems[:2]}"
    return None


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_every_field_of_every_type(name: str) -> None:
    filename, document = DOCUMENTS[name]
    failures = []
    for at in paths(document):
        for mutant in MUTANTS:
            mutated = replaced(document, at, mutant)
            problem = outcome(json.dumps(mutated, ensure_ascii=False).encode(), filename)
            if problem:
                failures.append(f"{'.'.join(map(str, at)) or '(root)'} = {mutant!r}: {problem}")
    assert not failures, f"{len(failures)} mutants of {name} crashed:\n" + "\n".join(failures[:40])


def test_cards_inside_a_png_walk_the_same_converter() -> None:
    """A card's fields reach the converter the same way from a PNG's chunk: a sample of
    the card's mutants through the PNG door too."""
    _, card = DOCUMENTS["card_v3"]
    failures = []
    for i, at in enumerate(paths(card)):
        if i % 7:
            continue
        for mutant in MUTANTS:
            png = make_png([("ccv3", b64(replaced(card, at, mutant)))])
            problem = outcome(png, "card.png")
            if problem:
                failures.append(f"{'.'.join(map(str, at))} = {mutant!r}: {problem}")
    assert not failures, "\n".join(failures[:40])


@pytest.mark.parametrize(
    "raw",
    [
        b'{"scenarioVersion": null, "context": true}',  # issue 30: a TypeError, then a 500
        b'{"lorebookVersion": 4, "entries": [{"keys": "x", "text": 5, "contextConfig": []}]}',
        b'{"entries": {"0": {"key": {"a": 1}, "content": ["x"], "position": [1]}}}',
        b'{"spec": "chara_card_v2", "data": {"name": "A", "character_book": {"entries": {"a": 1}}}}',
        b'{"data": {"adventure": {"actionWindow": "text", "storyCards": 5}}}',
        b'[{"key": 1, "content": {}}]',
    ],
)
def test_known_crashes_stay_fixed(raw: bytes) -> None:
    assert outcome(raw, "x.scenario") is None
