"""State gates: whether a card's conditions hold on the state document at the head.

Pure and cheap (dictionary look-ups on the plain-JSON document), so a thousand gated cards
cost nothing next to key matching. Each answer carries the words Insights shows: what the
gate asked and what the state says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from talekeeper.context.cardspec import Gate, gate_words


def check(
    gate: Gate, doc: Mapping[str, Any] | None, rules: Mapping[str, Any] | None
) -> tuple[bool, str]:
    """(held, why): `why` says what the state holds, e.g. "the flag ferry_hired is set: no"."""
    if doc is None:
        return False, f"{gate_words(gate)}: no state to read"
    held, actual = _held(gate, doc, rules)
    if gate.not_:
        held = not held
    return held, f"{gate_words(gate)} ({actual})"


def _held(gate: Gate, doc: Mapping[str, Any], rules: Mapping[str, Any] | None) -> tuple[bool, str]:
    kind = gate.kind
    if kind == "flag":
        value = bool((doc.get("flags") or {}).get(gate.id))
        return value, "set" if value else "not set"
    if kind == "milestone":
        turn = (doc.get("milestones") or {}).get(gate.id)
        return turn is not None, f"reached at turn {turn}" if turn is not None else "not reached"
    entities = doc.get("entities") or {}
    if kind == "location":
        who = gate.who or "player"
        place = _where(entities, who)
        return _inside(entities, place, gate.id), f"{who} is at {place or 'no known place'}"
    if kind == "status":
        status = str((entities.get(gate.id) or {}).get("status") or "")
        return status.casefold() == gate.is_.strip().casefold(), f"status '{status or 'none'}'"
    if kind == "item":
        who = gate.who or "player"
        holder = (doc.get("possessions") or {}).get(gate.id)
        return holder == who, f"held by {holder}" if holder else "held by no one"
    if kind == "thread":
        thread = (doc.get("threads") or {}).get(gate.id)
        status = str(thread.get("status")) if isinstance(thread, Mapping) else "absent"
        return status == (gate.is_ or "open"), status
    value = stat_value(doc, gate.id)
    if value is None or isinstance(value, str) and (gate.min is not None or gate.max is not None):
        return False, "no such value" if value is None else f"'{value}' is not a number"
    if gate.band:
        label = band_of(rules, gate.id, value)
        return label == gate.band, f"{_num(value)}, band '{label or 'none'}'"
    assert not isinstance(value, str)
    ok = (gate.min is None or value >= gate.min) and (gate.max is None or value <= gate.max)
    return ok, _num(value)


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _where(entities: Mapping[str, Any], who: str) -> str | None:
    entity = entities.get(who)
    return entity.get("location") if isinstance(entity, Mapping) else None


def _inside(entities: Mapping[str, Any], place: str | None, target: str) -> bool:
    """Whether `place` is `target` or lies within it (a room in the lighthouse is at it)."""
    seen: set[str] = set()
    while place is not None and place not in seen:
        if place == target:
            return True
        seen.add(place)
        place = _where(entities, place)
    return False


def stat_value(doc: Mapping[str, Any], path: str) -> Any:
    stats = doc.get("stats") or {}
    parts = path.split(".")
    if len(parts) == 2 and parts[0] in ("world", "player"):
        entry = (stats.get(parts[0]) or {}).get(parts[1])
    elif len(parts) == 3 and parts[0] == "npc":
        entry = ((stats.get("npcs") or {}).get(parts[1]) or {}).get(parts[2])
    else:
        return None
    return entry.get("value") if isinstance(entry, Mapping) else None


def band_of(rules: Mapping[str, Any] | None, path: str, value: Any) -> str | None:
    """The band label, as `state.stats.band_label` reads it: lo inclusive, hi exclusive,
    except that the top band's hi belongs to it."""
    stats = (rules or {}).get("stats") or {}
    parts = path.split(".")
    if len(parts) == 2:
        stat = (stats.get(parts[0]) or {}).get(parts[1])
    else:
        stat = ((stats.get("npcs") or {}).get(parts[1]) or {}).get(parts[2])
    if not isinstance(stat, Mapping) or isinstance(value, str):
        return None
    bands = [b for b in stat.get("bands") or [] if isinstance(b, list | tuple) and len(b) == 3]
    for lo, hi, label in bands:
        if lo <= value < hi:
            return str(label)
    for _lo, hi, label in reversed(bands):
        if value == hi:
            return str(label)
    return None
