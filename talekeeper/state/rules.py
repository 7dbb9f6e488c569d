"""Scenario rules: what a scenario declares about its state, checked before play starts.

A scenario author writes the cast and world it starts with, the stats it tracks (for the
world, the player and each NPC) with their limits, its flags, milestones and canon. The
declaration is checked twice: by the published JSON Schema (`schemas/rules.schema.json`)
for shape, then by `_semantic_errors` for what a schema cannot say (an initial value
outside its range, bands outside the range, references to ids that do not exist). Every
mistake is reported by path, e.g. ``stats.player.hp.max: must be ≥ min (0)``, so an
author can find it; nothing is half-loaded.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from .document import PLAYER_ID, Scalar

DEFAULT_TEXT_LENGTH = 60
"""A text stat's longest value when the scenario does not say."""


class RulesError(ValueError):
    """The rules declaration is wrong. `errors` lists every mistake by path."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("invalid scenario rules:\n" + "\n".join(f"  {e}" for e in errors))


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Band(_Frozen):
    lo: float
    hi: float
    label: str


class StatRule(_Frozen):
    """One stat's declaration. The engine enforces all of it; the model sees words."""

    kind: Literal["number", "counter", "text"] = "number"
    min: float | None = None
    max: float | None = None
    initial: int | float | str
    integer: bool = True
    bands: tuple[Band, ...] = ()
    max_change_per_turn: float | None = None
    cooldown: int = 0
    hidden: bool = False
    desc: str = ""
    max_length: int = DEFAULT_TEXT_LENGTH

    @property
    def numeric(self) -> bool:
        return self.kind != "text"


class FlagRule(_Frozen):
    initial: bool = False
    desc: str = ""


class MilestoneRule(_Frozen):
    desc: str


class StatusChange(_Frozen):
    """A forbidden transition; `*` matches any status."""

    from_: str = Field(alias="from")
    to: str

    def forbids(self, old: str, new: str) -> bool:
        def match(pattern: str, status: str) -> bool:
            return pattern == "*" or pattern.casefold() == status.casefold()

        return match(self.from_, old) and match(self.to, new)


Capacity = Literal["speak", "move", "use", "act"]
CAPACITIES: tuple[str, ...] = ("speak", "move", "use", "act")
"""What a status can forbid: speaking, going anywhere, handling things, any other deed."""


class StatusRule(_Frozen):
    """What a status label means for what its bearer can do (the contradiction guard
    reads it: a dead keeper who laughs, a bound prisoner who walks off)."""

    desc: str = ""
    forbids: tuple[Capacity, ...] = ()


DEFAULT_STATUSES: dict[str, StatusRule] = {
    "alive": StatusRule(desc="Alive and able."),
    "dead": StatusRule(desc="Dead.", forbids=("speak", "move", "use", "act")),
    "asleep": StatusRule(desc="Asleep.", forbids=("speak", "move", "use", "act")),
    "unconscious": StatusRule(desc="Unconscious.", forbids=("speak", "move", "use", "act")),
    "bound": StatusRule(desc="Tied up.", forbids=("move", "use")),
}
"""The statuses every scenario has unless it declares otherwise: a scenario's own
`statuses` add to these and replace any of the same name (a ghost story may declare
"dead" with nothing forbidden)."""


class Canon(_Frozen):
    rules: tuple[str, ...] = ()
    forbidden_status_changes: tuple[StatusChange, ...] = ()


class CastMember(_Frozen):
    """A character's own material for their dialogue call (an NPC's private knowledge
    enters only that NPC's call: docs/architecture.md "The canon"). It lives in the
    rules, never in the state document, so no other prompt can render it by accident."""

    id: str
    name: str
    description: str = ""
    persona: str = ""
    knowledge: tuple[str, ...] = ()
    moves: tuple[str, ...] = ()
    companion: bool = False


class StatRules(_Frozen):
    world: dict[str, StatRule] = Field(default_factory=dict)
    player: dict[str, StatRule] = Field(default_factory=dict)
    npcs: dict[str, dict[str, StatRule]] = Field(default_factory=dict)


class Rules(_Frozen):
    """A checked rules declaration. Build it with `load_rules`; `raw` keeps the source so
    `initial_document` can read the cast and world exactly as written."""

    stats: StatRules = Field(default_factory=StatRules)
    flags: dict[str, FlagRule] = Field(default_factory=dict)
    milestones: dict[str, MilestoneRule] = Field(default_factory=dict)
    canon: Canon = Field(default_factory=Canon)
    cast: dict[str, CastMember] = Field(default_factory=dict)
    statuses: dict[str, StatusRule] = Field(default_factory=lambda: dict(DEFAULT_STATUSES))
    """Every status label with a meaning: the defaults, then the scenario's own."""
    raw: dict[str, Any] = Field(default_factory=dict)

    def status_rule(self, label: str) -> StatusRule | None:
        """The rule for a status or condition label (case-insensitive), if it has one."""
        wanted = " ".join(label.split()).casefold()
        for name, rule in self.statuses.items():
            if name.casefold() == wanted:
                return rule
        return None

    def normal_status(self) -> str:
        """The label to restore someone to once nothing holds them: the first status
        that forbids nothing (the defaults' "alive" when the scenario declares none)."""
        return next((name for name, rule in self.statuses.items() if not rule.forbids), "alive")

    def stat_rule(self, owner: str, name: str, npc: str | None = None) -> StatRule | None:
        """The rule for `world.x`, `player.x` or (owner `npc`) `npc.<id>.x`, or None."""
        if owner == "npc":
            return self.stats.npcs.get(npc or "", {}).get(name)
        return getattr(self.stats, owner, {}).get(name)


# --- the schema -----------------------------------------------------------------------


@cache
def rules_schema() -> dict[str, Any]:
    """The published JSON Schema for a rules declaration (packaged with the engine)."""
    text = resources.files(__package__).joinpath("schemas/rules.schema.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(rules_schema())


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(rules)"


def _join(path: str, key: str) -> str:
    return key if path == "(rules)" else f"{path}.{key}"


MAX_UNKNOWN_LISTED = 20
"""Unknown fields named one by one in one object's mistakes; the rest are counted."""


def _schema_messages(error: jsonschema.ValidationError) -> list[str]:
    """Turn one jsonschema error into plain messages that start with the path."""
    path = _path(error.absolute_path)
    validator, schema = error.validator, error.schema
    if validator == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        return [f"{_join(path, key)}: required" for key in schema["required"] if key not in present]
    if validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(schema.get("properties", {}))
        unknown = [key for key in error.instance if key not in known]
        out = []
        for key in unknown[:MAX_UNKNOWN_LISTED]:  # a hint costs a fuzzy match: a few suffice
            hint = difflib.get_close_matches(str(key), known, n=1)
            suffix = f" (did you mean '{hint[0]}'?)" if hint else f" (known: {', '.join(known)})"
            out.append(f"{_join(path, str(key))}: unknown field{suffix}")
        if len(unknown) > MAX_UNKNOWN_LISTED:
            out.append(f"{path}: {len(unknown) - MAX_UNKNOWN_LISTED:,} more unknown fields")
        return out
    if "propertyNames" in error.relative_schema_path:
        return [
            f"{_join(path, str(error.instance))}: not a valid name — {schema.get('description', 'see the schema')}"
        ]
    if validator == "pattern":
        return [
            f"{path}: {error.instance!r} is not a valid id — {schema.get('description', '')}".rstrip(
                " —"
            )
        ]
    if validator == "type":
        wanted = schema["type"]
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        return [f"{path}: must be {_article(wanted)}"]
    if validator == "enum":
        return [f"{path}: must be one of {', '.join(map(repr, schema['enum']))}"]
    if validator == "const":
        return [f"{path}: must be {schema['const']!r}"]
    if validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[
            validator
        ]
        return [f"{path}: must be {sign} {schema[validator]}"]
    if validator in ("minLength", "maxLength"):
        return [
            f"{path}: must be {'at least' if validator == 'minLength' else 'at most'} {schema[validator]} characters"
        ]
    if validator in ("minItems", "maxItems", "maxProperties"):
        limit = "at least" if validator == "minItems" else "at most"
        return [f"{path}: must have {limit} {schema[validator]} entries"]
    if validator == "items" and schema.get("items") is False:
        return [f"{path}: a band is exactly [lo, hi, label]"]
    return [f"{path}: {error.message}"]


def _article(kind: str) -> str:
    words = {
        "object": "an object",
        "array": "a list",
        "integer": "a whole number",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
    }
    return words.get(kind, f"a {kind}")


# --- the checks JSON Schema cannot express -------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _reused_ids(items: list[Any], where: str, within: str = "") -> list[str]:
    """Each item whose `id` an earlier item of the same list has. An id that is not a
    string is the schema's to report (and may not even be hashable), so it is passed over."""
    errors: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        item_id = _dict(item).get("id")
        if not isinstance(item_id, str):
            continue
        if item_id in seen:
            errors.append(f"{where}[{i}].id: '{item_id}' is used twice{within}")
        seen.add(item_id)
    return errors


def _semantic_errors(raw: dict[str, Any]) -> list[str]:
    """Reference and range checks. Written to tolerate a wrongly shaped declaration (the
    schema reports the shape), so one pass reports every mistake of both kinds."""
    errors: list[str] = []
    entities = [e if isinstance(e, dict) else {} for e in _list(raw.get("entities"))]
    ids: dict[str, str] = {}
    names: dict[str, str] = {}
    player = _dict(raw.get("player"))
    player_name = player.get("name", "You")
    names[(player_name if isinstance(player_name, str) else "You").casefold()] = "player.name"
    for i, entity in enumerate(entities):
        where = f"entities[{i}]"
        eid = entity.get("id")
        if not isinstance(eid, str):
            continue
        if eid == PLAYER_ID:
            errors.append(
                f"{where}.id: 'player' is reserved for the player; describe them under `player`"
            )
        elif eid in ids:
            errors.append(f"{where}.id: '{eid}' is already used by {ids[eid]}")
        else:
            ids[eid] = where
        if not isinstance(entity.get("name"), str):
            continue
        key = entity["name"].casefold()
        if key in names:
            errors.append(
                f"{where}.name: '{entity['name']}' is also the name at {names[key]}; names must be distinct"
            )
        else:
            names[key] = f"{where}.name"
    for i, entity in enumerate(entities):
        for j, alias in enumerate(_list(entity.get("aliases"))):
            if not isinstance(alias, str):
                continue
            owner = names.get(alias.casefold())
            if owner and owner != f"entities[{i}].name":
                errors.append(
                    f"entities[{i}].aliases[{j}]: '{alias}' is the name at {owner}; an alias cannot be another entity's name"
                )
    known = set(ids) | {PLAYER_ID}

    def ref(where: str, value: Any) -> None:
        if isinstance(value, str) and value not in known:
            errors.append(f"{where}: unknown entity id '{value}' (known: {_some(sorted(known))})")

    ref("player.location", player.get("location"))
    for i, entity in enumerate(entities):
        ref(f"entities[{i}].location", entity.get("location"))
    for item, holder in _dict(raw.get("possessions")).items():
        ref(f"possessions.{item}", item)
        ref(f"possessions.{item}", holder)
        if item == holder:
            errors.append(f"possessions.{item}: an item cannot hold itself")
        if item == PLAYER_ID:
            errors.append(f"possessions.{item}: the player cannot be held")
    for i, fact in enumerate(_list(raw.get("facts"))):
        fact = _dict(fact)
        ref(f"facts[{i}].subject", fact.get("subject"))
        if "subject" in fact and not fact.get("predicate"):
            errors.append(f"facts[{i}].predicate: required with a subject")
        if "subject" not in fact and not fact.get("object"):
            errors.append(
                f"facts[{i}].object: a fact about the world (no subject) is one sentence in object"
            )
    for i, rel in enumerate(_list(raw.get("relationships"))):
        rel = _dict(rel)
        ref(f"relationships[{i}].source", rel.get("source"))
        ref(f"relationships[{i}].target", rel.get("target"))
    threads = _list(raw.get("threads"))
    errors += _reused_ids(threads, "threads")
    for i, thread in enumerate(threads):
        objectives = _list(_dict(thread).get("objectives"))
        errors += _reused_ids(objectives, f"threads[{i}].objectives", " in this thread")
    scene = _dict(raw.get("scene"))
    ref("scene.location", scene.get("location"))
    for i, present in enumerate(_list(scene.get("present"))):
        ref(f"scene.present[{i}]", present)
    for qid, quest in _dict(raw.get("quests")).items():
        objectives = _list(_dict(quest).get("objectives"))
        errors += _reused_ids(objectives, f"quests.{qid}.objectives", " in this quest")
    errors += _character_errors(raw)
    stats = _dict(raw.get("stats"))
    for owner in ("world", "player"):
        for name, stat in _dict(stats.get(owner)).items():
            errors.extend(_stat_errors(f"stats.{owner}.{name}", stat))
    for npc, block in _dict(stats.get("npcs")).items():
        if npc == PLAYER_ID:
            errors.append("stats.npcs.player: the player's stats go under stats.player")
        elif npc not in ids:
            errors.append(
                f"stats.npcs.{npc}: unknown entity id '{npc}' (known: {_some(sorted(ids))})"
            )
        for name, stat in _dict(block).items():
            errors.extend(_stat_errors(f"stats.npcs.{npc}.{name}", stat))
    return errors


def _character_errors(raw: dict[str, Any]) -> list[str]:
    """Creation may only make stats the player has, and hidden stats must really be hidden
    (with a range to roll across and bands to show instead of the number)."""
    character = _dict(raw.get("character"))
    player_stats = _dict(_dict(raw.get("stats")).get("player"))
    errors = _reused_ids(_list(character.get("classes")), "character.classes")
    for i, name in enumerate(_list(character.get("stats"))):
        stat = player_stats.get(name)
        if not isinstance(stat, dict):
            errors.append(
                f"character.stats[{i}]: '{name}' is not a player stat (declare it under stats.player)"
            )
        elif stat.get("kind", "number") == "text" or stat.get("hidden"):
            errors.append(
                f"character.stats[{i}]: '{name}' must be a visible number to be rolled or bought"
            )
        elif character.get("method") == "point_buy" and (
            stat.get("min") is None or stat.get("max") is None
        ):
            errors.append(f"character.stats[{i}]: '{name}' needs min and max for point-buy")
    if character.get("stats") and "method" not in character:
        errors.append("character.method: say how stats are made: 'roll' or 'point_buy'")
    if character.get("method") == "point_buy" and "points" not in character:
        errors.append("character.points: point-buy needs a number of points to spend")
    for i, entry in enumerate(_list(character.get("hidden"))):
        name = _dict(entry).get("stat")
        stat = player_stats.get(name)
        if not isinstance(stat, dict):
            errors.append(
                f"character.hidden[{i}].stat: '{name}' is not a player stat (declare it under stats.player)"
            )
        elif not stat.get("hidden"):
            errors.append(f"character.hidden[{i}].stat: '{name}' must be declared hidden: true")
    return errors


def _some(items: list[str], limit: int = 12) -> str:
    shown = ", ".join(items[:limit])
    return (
        shown + (f", … ({len(items) - limit} more)" if len(items) > limit else "")
        if items
        else "none"
    )


def _stat_errors(where: str, stat: Any) -> list[str]:
    if not isinstance(stat, dict):
        return []
    try:
        return _stat_rule_errors(where, stat)
    except (TypeError, ValueError, IndexError):  # a badly shaped field: the schema names it
        return []


def _stat_rule_errors(where: str, stat: dict[str, Any]) -> list[str]:
    kind = stat.get("kind", "number")
    errors: list[str] = []
    if kind == "text":
        for field in ("min", "max", "bands", "max_change_per_turn", "integer"):
            if field in stat:
                errors.append(f"{where}.{field}: a text stat has no {field}")
        if stat.get("hidden"):
            errors.append(f"{where}.hidden: a text stat has no bands to show instead of its value")
        initial = stat.get("initial", "")
        if not isinstance(initial, str):
            errors.append(f"{where}.initial: a text stat starts as text")
        elif len(initial) > stat.get("max_length", DEFAULT_TEXT_LENGTH):
            errors.append(
                f"{where}.initial: longer than max_length ({stat.get('max_length', DEFAULT_TEXT_LENGTH)})"
            )
        return errors
    if "max_length" in stat:
        errors.append(f"{where}.max_length: only text stats have a max_length")
    lo, hi = stat.get("min"), stat.get("max")
    integer = stat.get("integer", True)
    if lo is not None and hi is not None and hi < lo:
        errors.append(f"{where}.max: must be ≥ min ({_num(lo)})")
        # One wrong bound is one mistake: checking the initial value and the bands against a
        # range that cannot exist would report the same slip five times over.
        lo = hi = None
    initial = stat.get("initial")
    if initial is not None:
        if not isinstance(initial, int | float) or isinstance(initial, bool):
            errors.append(f"{where}.initial: a {kind} stat starts as a number")
        else:
            if lo is not None and initial < lo:
                errors.append(f"{where}.initial: {_num(initial)} is below min ({_num(lo)})")
            if hi is not None and initial > hi:
                errors.append(f"{where}.initial: {_num(initial)} is above max ({_num(hi)})")
            if integer and not float(initial).is_integer():
                errors.append(f"{where}.initial: must be a whole number (or set integer: false)")
    if integer:
        for field in ("min", "max"):
            value = stat.get(field)
            if value is not None and not float(value).is_integer():
                errors.append(f"{where}.{field}: must be a whole number (or set integer: false)")
    bands = stat.get("bands", [])
    previous_hi = None
    for i, (b_lo, b_hi, _label) in enumerate(bands):
        at = f"{where}.bands[{i}]"
        if b_hi <= b_lo:
            errors.append(f"{at}: hi ({_num(b_hi)}) must be greater than lo ({_num(b_lo)})")
        if lo is not None and b_lo < lo:
            errors.append(f"{at}: starts at {_num(b_lo)}, below min ({_num(lo)})")
        if hi is not None and b_hi > hi:
            errors.append(f"{at}: ends at {_num(b_hi)}, above max ({_num(hi)})")
        if previous_hi is not None and b_lo < previous_hi:
            errors.append(
                f"{at}: overlaps the band before it (which ends at {_num(previous_hi)}); list bands low to high"
            )
        previous_hi = b_hi
    if stat.get("hidden"):
        if not bands:
            errors.append(
                f"{where}.bands: a hidden stat needs bands — the model sees only their label"
            )
        elif stat.get("min") is None or stat.get("max") is None:
            errors.append(
                f"{where}: a hidden stat needs min and max so its bands can cover the range"
            )
        elif (
            lo is not None and hi is not None and not _covers(bands, lo, hi)
        ):  # None: range reported
            errors.append(
                f"{where}.bands: a hidden stat's bands must cover {_num(lo)}–{_num(hi)} without gaps"
            )
    return errors


def _covers(bands: list[list[Any]], lo: float, hi: float) -> bool:
    ordered = sorted(bands, key=lambda b: b[0])
    if ordered[0][0] > lo or ordered[-1][1] < hi:
        return False
    return all(a[1] >= b[0] for a, b in zip(ordered, ordered[1:], strict=False))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# --- public entry points ----------------------------------------------------------------


def check_rules(raw: Any) -> list[str]:
    """Every mistake in a rules declaration, each starting with its path; [] when valid."""
    if not isinstance(raw, dict):
        return ["(rules): must be an object"]
    schema_errors = sorted(
        _validator().iter_errors(raw), key=lambda e: [str(p) for p in e.absolute_path]
    )
    messages = [m for e in schema_errors for m in _schema_messages(e)]
    # Reference and range mistakes are reported in the same pass as shape mistakes, so
    # an author fixes everything at once instead of one layer per attempt.
    return list(dict.fromkeys([*messages, *_semantic_errors(raw)]))


def load_rules(raw: Any) -> Rules:
    """Check a declaration and build `Rules`; raises `RulesError` listing every mistake."""
    errors = check_rules(raw)
    if errors:
        raise RulesError(errors)
    stats = raw.get("stats", {})
    return Rules(
        stats=StatRules(
            world={k: _stat_rule(v) for k, v in stats.get("world", {}).items()},
            player={k: _stat_rule(v) for k, v in stats.get("player", {}).items()},
            npcs={
                npc: {k: _stat_rule(v) for k, v in block.items()}
                for npc, block in stats.get("npcs", {}).items()
            },
        ),
        flags={k: FlagRule(**v) for k, v in raw.get("flags", {}).items()},
        milestones={k: MilestoneRule(**v) for k, v in raw.get("milestones", {}).items()},
        canon=Canon(
            rules=tuple(raw.get("canon", {}).get("rules", [])),
            forbidden_status_changes=tuple(
                StatusChange.model_validate(c)
                for c in raw.get("canon", {}).get("forbidden_status_changes", [])
            ),
        ),
        statuses={
            **DEFAULT_STATUSES,
            **{
                name: StatusRule(desc=v.get("desc", ""), forbids=tuple(v.get("forbids", [])))
                for name, v in raw.get("statuses", {}).items()
            },
        },
        cast={
            e["id"]: CastMember(
                id=e["id"],
                name=e["name"],
                description=e.get("description", ""),
                persona=e.get("persona", ""),
                knowledge=tuple(e.get("knowledge", [])),
                moves=tuple(e.get("moves", [])),
                companion=bool(e.get("companion", False)),
            )
            for e in raw.get("entities", [])
            if any(k in e for k in ("persona", "knowledge", "moves", "companion"))
        },
        raw=json.loads(json.dumps(raw)),
    )


def _stat_rule(stat: dict[str, Any]) -> StatRule:
    kind = stat.get("kind", "number")
    fields = {k: v for k, v in stat.items() if k != "bands"}
    fields["bands"] = tuple(Band(lo=b[0], hi=b[1], label=b[2]) for b in stat.get("bands", []))
    if "initial" not in stat:
        fields["initial"] = (
            "" if kind == "text" else default_initial(stat.get("min"), stat.get("max"))
        )
    elif kind != "text" and stat.get("integer", True):
        fields["initial"] = int(stat["initial"])
    return StatRule(**fields)


def default_initial(lo: float | None, hi: float | None) -> int | float:
    """Where a stat starts when the scenario does not say: its minimum, else 0 (or its
    maximum, when 0 is above it). Documented, so it is a rule rather than a guess."""
    if lo is not None:
        value: float = lo
    elif hi is not None and hi < 0:
        value = hi
    else:
        value = 0
    return int(value) if float(value).is_integer() and not math.isinf(value) else value


def empty_rules() -> Rules:
    """Rules that declare nothing: a plain narrative adventure."""
    return load_rules({})


__all__ = [
    "Band",
    "Canon",
    "CastMember",
    "FlagRule",
    "MilestoneRule",
    "Rules",
    "RulesError",
    "Scalar",
    "StatRule",
    "StatusChange",
    "StatusRule",
    "CAPACITIES",
    "DEFAULT_STATUSES",
    "check_rules",
    "default_initial",
    "empty_rules",
    "load_rules",
    "rules_schema",
]
