"""The event vocabulary: the closed allowlist of changes the model may propose.

Each event's type states its operation and every value is explicit: `set_stat` carries an
absolute value, `change_stat` a signed amount, never one number whose meaning depends on
the prompt (seed 001: a count sent as an absolute where a delta was expected turned
every faint into a silent no-op). The table below is the single source of truth: the
shape check, the prompt's description of the vocabulary (`prompt.vocabulary_prompt`) and
the published proposal schema (`schema.proposal_schema`) are all generated from it, so
they cannot drift apart.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_EVENTS = 24
"""Events read from one proposal; more is a runaway block, not a turn's worth of change."""
MAX_PROPOSAL_CHARS = 32_000
"""A proposal's size as JSON; bigger is refused whole before any event is read."""
MAX_NUMBER = 1_000_000_000
ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,47}$"


@dataclass(frozen=True)
class Shape:
    """What one field accepts. `json_schema` publishes it; `check` enforces it."""

    name: str
    help: str
    json_schema: dict[str, Any]


def _string(lo: int, hi: int, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "minLength": lo, "maxLength": hi, **extra}


SHAPES: dict[str, Shape] = {
    shape.name: shape
    for shape in (
        Shape("ref", "an entity's name or id", _string(1, 80)),
        Shape(
            "ref?",
            "an entity's name or id, or null for none",
            {"type": ["string", "null"], "maxLength": 80},
        ),
        Shape(
            "refs",
            "a list of entity names or ids",
            {"type": "array", "maxItems": 16, "items": _string(1, 80)},
        ),
        Shape("name", "a name", _string(1, 80)),
        Shape(
            "names", "a list of names", {"type": "array", "maxItems": 8, "items": _string(1, 80)}
        ),
        Shape("label", "a short label", _string(1, 40)),
        Shape(
            "labels",
            "a list of short labels",
            {"type": "array", "maxItems": 16, "items": _string(1, 40)},
        ),
        Shape("text", "a sentence", _string(1, 300)),
        Shape(
            "texts",
            "a list of sentences",
            {"type": "array", "maxItems": 8, "items": _string(1, 300)},
        ),
        Shape(
            "id", "a new id: lowercase letters, digits, _ or -", _string(1, 48, pattern=ID_PATTERN)
        ),
        Shape("key", "an id", _string(1, 80)),
        Shape(
            "stat", "a stat path: world.<stat>, player.<stat> or npc.<id>.<stat>", _string(1, 160)
        ),
        Shape("number", "a signed number", {"type": "number"}),
        Shape(
            "stat_value",
            "a number (or text, for a text stat)",
            {"type": ["number", "string"], "maxLength": 200},
        ),
        Shape(
            "scalar",
            "text, a number or true/false",
            {"type": ["string", "number", "boolean"], "maxLength": 200},
        ),
        Shape(
            "scalar?",
            "text, a number, true/false, or null to remove",
            {"type": ["string", "number", "boolean", "null"], "maxLength": 200},
        ),
        Shape("bool", "true or false", {"type": "boolean"}),
        Shape("weight", "a whole number 1–10", {"type": "integer", "minimum": 1, "maximum": 10}),
        Shape("outcome", '"resolved" or "failed"', {"enum": ["resolved", "failed"]}),
        Shape("thread_kind", '"thread" or "quest"', {"enum": ["thread", "quest"]}),
    )
}


@dataclass(frozen=True)
class Field:
    name: str
    shape: str
    required: bool = True


@dataclass(frozen=True)
class EventSpec:
    type: str
    summary: str
    fields: tuple[Field, ...]
    example: dict[str, Any]
    need_one_of: tuple[str, ...] = ()
    """For partial updates (`set_scene`, `set_conditions`): at least one of these must be
    sent (and, for lists named in `need_nonempty`, not be empty)."""
    need_nonempty: bool = False

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


def _f(name: str, shape: str, required: bool = True) -> Field:
    return Field(name, shape, required)


EVENTS: dict[str, EventSpec] = {
    spec.type: spec
    for spec in (
        EventSpec(
            "create_entity",
            "introduce a new person, place, thing or group — kind is a free label (the only way to add one)",
            (
                _f("name", "name"),
                _f("kind", "label"),
                _f("id", "id", False),
                _f("aliases", "names", False),
                _f("description", "text", False),
                _f("status", "label", False),
                _f("location", "ref", False),
            ),
            {"name": "Oda Fenn", "kind": "person", "description": "The harbourmaster."},
        ),
        EventSpec(
            "set_status",
            "set an entity's status label",
            (_f("entity", "ref"), _f("status", "label")),
            {"entity": "Oda Fenn", "status": "injured"},
        ),
        EventSpec(
            "set_attribute",
            "set one attribute of an entity (value null removes it)",
            (_f("entity", "ref"), _f("attribute", "label"), _f("value", "scalar?")),
            {"entity": "Oda Fenn", "attribute": "mood", "value": "suspicious"},
        ),
        EventSpec(
            "set_conditions",
            "add and/or remove condition labels on an entity",
            (_f("entity", "ref"), _f("add", "labels", False), _f("remove", "labels", False)),
            {"entity": "player", "add": ["poisoned"]},
            need_one_of=("add", "remove"),
            need_nonempty=True,
        ),
        EventSpec(
            "set_location",
            "move an entity into a place (null: nowhere known)",
            (_f("entity", "ref"), _f("location", "ref?")),
            {"entity": "player", "location": "Greywater Docks"},
        ),
        EventSpec(
            "set_possession",
            "give an item to a holder (it leaves any previous holder)",
            (_f("item", "ref"), _f("holder", "ref")),
            {"item": "rusty key", "holder": "player"},
        ),
        EventSpec(
            "clear_possession",
            "an item is no longer held by anyone",
            (_f("item", "ref"),),
            {"item": "rusty key"},
        ),
        EventSpec(
            "add_fact",
            "establish a fact: subject, predicate, object — or, with no subject, "
            "a fact about the world as one sentence in object",
            (
                _f("subject", "ref", False),
                _f("predicate", "label", False),
                _f("object", "text", False),
                _f("value", "scalar", False),
            ),
            {"subject": "Oda Fenn", "predicate": "owes", "object": "the player a favour"},
            need_one_of=("predicate", "object"),
        ),
        EventSpec(
            "withdraw_fact",
            "a fact (by its id) is no longer true",
            (_f("fact", "key"), _f("reason", "text", False)),
            {"fact": "f3", "reason": "the debt was paid"},
        ),
        EventSpec(
            "add_relationship",
            "one entity now stands in a relation to another",
            (
                _f("source", "ref"),
                _f("kind", "label"),
                _f("target", "ref"),
                _f("note", "text", False),
            ),
            {"source": "Gwen", "kind": "ally of", "target": "player"},
        ),
        EventSpec(
            "end_relationship",
            "a relationship (by its id) has ended",
            (_f("relationship", "key"),),
            {"relationship": "r1"},
        ),
        EventSpec(
            "open_thread",
            "open a story thread or quest",
            (
                _f("title", "name"),
                _f("id", "id", False),
                _f("kind", "thread_kind", False),
                _f("objectives", "texts", False),
            ),
            {
                "title": "Find the missing ledger",
                "kind": "quest",
                "objectives": ["Ask Oda who took it"],
            },
        ),
        EventSpec(
            "complete_objective",
            "mark one objective of a thread done",
            (_f("thread", "key"), _f("objective", "key")),
            {"thread": "find_the_ledger", "objective": "o1"},
        ),
        EventSpec(
            "resolve_thread",
            "close a thread as resolved or failed",
            (_f("thread", "key"), _f("outcome", "outcome"), _f("note", "text", False)),
            {"thread": "find_the_ledger", "outcome": "resolved"},
        ),
        EventSpec(
            "set_scene",
            "change the scene: location, who is present, time, summary",
            (
                _f("location", "ref?", False),
                _f("present", "refs", False),
                _f("time", "label", False),
                _f("summary", "text", False),
            ),
            {"location": "Greywater Docks", "present": ["Oda Fenn"], "time": "dawn"},
            need_one_of=("location", "present", "time", "summary"),
        ),
        EventSpec(
            "set_stat",
            "set a stat to an absolute value",
            (_f("stat", "stat"), _f("value", "stat_value")),
            {"stat": "world.day", "value": 4},
        ),
        EventSpec(
            "change_stat",
            "move a numeric stat by a signed amount",
            (_f("stat", "stat"), _f("by", "number")),
            {"stat": "player.hp", "by": -15},
        ),
        EventSpec(
            "set_flag",
            "turn a declared flag on or off",
            (_f("flag", "key"), _f("value", "bool")),
            {"flag": "alarm_raised", "value": True},
        ),
        EventSpec(
            "reach_milestone",
            "mark a declared milestone reached (it stays reached)",
            (_f("milestone", "key"),),
            {"milestone": "rescue_gwen"},
        ),
        EventSpec(
            "note_event",
            "add a terse line to the recent events",
            (_f("text", "text"),),
            {"text": "The bridge collapsed behind the player."},
        ),
        EventSpec(
            "record_moment",
            "remember a memorable moment, weighted 1–10",
            (_f("text", "text"), _f("weight", "weight")),
            {"text": "The player fell into the harbour in front of the whole dock.", "weight": 6},
        ),
    )
}

EVENT_TYPES: tuple[str, ...] = tuple(EVENTS)


@dataclass(frozen=True)
class ShapeError:
    """Why an event's fields are wrong, and what the model should send instead."""

    reason: str
    correction: str


def _single_line(value: str) -> bool:
    return "\n" not in value and "\r" not in value


def _check_value(shape: str, value: Any) -> str | None:
    """None when `value` fits `shape`, else a short description of what is wrong."""
    schema = SHAPES[shape].json_schema
    if shape == "bool":
        return None if isinstance(value, bool) else "must be true or false"
    if shape == "weight":
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not float(value).is_integer()
        ):
            return "must be a whole number from 1 to 10"
        return None if 1 <= value <= 10 else "must be from 1 to 10"
    if shape in ("outcome", "thread_kind"):
        return None if value in schema["enum"] else f"must be {SHAPES[shape].help}"
    if shape == "number":
        return _number_problem(value)
    if shape in ("stat_value", "scalar", "scalar?"):
        if value is None:
            return None if shape == "scalar?" else "must not be null"
        if isinstance(value, str):
            return None if len(value) <= 200 else "is too long (at most 200 characters)"
        if isinstance(value, bool):
            return None if shape != "stat_value" else "must be a number (or text, for a text stat)"
        problem = _number_problem(value)
        return problem
    if shape == "ref?" and value is None:
        return None
    if schema.get("type") == "array" or shape in ("refs", "labels", "names", "texts"):
        if not isinstance(value, list):
            return f"must be a list ({SHAPES[shape].help})"
        if len(value) > schema["maxItems"]:
            return f"has too many entries (at most {schema['maxItems']})"
        item = schema["items"]
        for entry in value:
            problem = _string_problem(
                entry, item["minLength"], item["maxLength"], single_line=shape != "texts"
            )
            if problem:
                return f"entries {problem}"
        return None
    return _string_problem(
        value,
        schema.get("minLength", 1),
        schema.get("maxLength", 300),
        single_line=shape not in ("text",),
        pattern=schema.get("pattern"),
    )


def _number_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if abs(value) > MAX_NUMBER:
        return "is too large"
    return None


def _string_problem(
    value: Any, lo: int, hi: int, single_line: bool = True, pattern: str | None = None
) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    stripped = value.strip()
    if len(stripped) < lo:
        return "must not be empty"
    if len(stripped) > hi:
        return f"is too long (at most {hi} characters)"
    if single_line and not _single_line(stripped):
        return "must be a single line"
    if pattern and not re.match(pattern, stripped):
        return "must use lowercase letters, digits, _ or - only"
    return None


def _clean(value: Any) -> Any:
    """Trim strings (and strings in lists); numbers that are whole become ints."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_NUMBER:
        return int(value)
    return value


def check_shape(event: dict[str, Any]) -> dict[str, Any] | ShapeError:
    """The field-shape layer: the event's type is already on the allowlist.

    Returns the event with its values trimmed, or why it is refused. Unknown fields are
    refused rather than ignored: the protocol is closed, and a value the engine would
    silently drop is a value the model believes was recorded.
    """
    spec = EVENTS[event["type"]]
    allowed = [f.name for f in spec.fields]
    fields_text = ", ".join(f"{f.name}{'' if f.required else '?'}" for f in spec.fields)
    for key in event:
        if key != "type" and key not in allowed:
            return ShapeError(
                f"{spec.type} has no field {_quote(key)}",
                f"{spec.type} takes only: {fields_text}. Example: {example_json(spec)}",
            )
    clean: dict[str, Any] = {"type": spec.type}
    for field in spec.fields:
        if field.name not in event:
            if field.required:
                return ShapeError(
                    f"{spec.type} is missing '{field.name}'",
                    f"Send '{field.name}' ({SHAPES[field.shape].help}). Example: {example_json(spec)}",
                )
            continue
        problem = _check_value(field.shape, event[field.name])
        if problem:
            return ShapeError(
                f"{spec.type}.{field.name} {problem}",
                f"'{field.name}' takes {SHAPES[field.shape].help}. Example: {example_json(spec)}",
            )
        clean[field.name] = _clean(event[field.name])
    if spec.need_one_of and not any(
        name in clean and not (spec.need_nonempty and clean[name] == [])
        for name in spec.need_one_of
    ):
        return ShapeError(
            f"{spec.type} changes nothing",
            f"Send at least one of: {', '.join(spec.need_one_of)}. Example: {example_json(spec)}",
        )
    return clean


def example_json(spec: EventSpec) -> str:
    return json.dumps({"type": spec.type, **spec.example}, ensure_ascii=False)


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return "'" + (text[:40] + "…" if len(text) > 40 else text) + "'"


def describe_event(event: Any, limit: int = 160) -> str:
    """An event as compact JSON, cut to `limit` characters, for reports and prompts."""
    try:
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        text = repr(event)
    return text if len(text) <= limit else text[: limit - 1] + "…"
