"""Origins: thin starting overlays on a scenario's world (DESIGN.md "Worlds, origins").

A scenario's world is static content; an origin chooses where the player starts and how:
its own opening, extra starting facts, items, dispositions (stat starting values), flags,
scene. An origin's `rules` are merged into the scenario's rules before the adventure's
rules are checked — objects merge key by key, lists are extended — so every id it uses
must resolve, and a bad origin fails loudly before play starts.
"""

from __future__ import annotations

import copy
from typing import Any

from talekeeper.errors import Invalid


class OriginError(Invalid):
    """A bad origin choice or overlay; nothing is started."""

ORIGIN_TEXT_FIELDS = ("opening", "narrator_instructions", "ai_instructions", "plot_essentials", "author_note")


def origins_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    origins = data.get("origins")
    return [o for o in origins if isinstance(o, dict) and o.get("id")] if isinstance(origins, list) else []


def origin_summaries(data: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"id": str(o["id"]), "title": str(o.get("title") or o["id"]), "description": str(o.get("description") or "")}
        for o in origins_of(data)
    ]


def with_origin(data: dict[str, Any], origin_id: str | None) -> dict[str, Any]:
    """The scenario as this origin starts it. No origin chosen: the first one, if any."""
    origins = origins_of(data)
    if not origins:
        if origin_id:
            raise OriginError(f"This scenario has no origins, so {origin_id!r} cannot be chosen.")
        return data
    chosen = origins[0] if not origin_id else next((o for o in origins if o["id"] == origin_id), None)
    if chosen is None:
        known = ", ".join(str(o["id"]) for o in origins)
        raise OriginError(f"No origin {origin_id!r} in this scenario; choose one of: {known}.")
    result = copy.deepcopy(data)
    for field in ORIGIN_TEXT_FIELDS:
        if isinstance(chosen.get(field), str):
            result[field] = chosen[field]
    overlay = chosen.get("rules")
    if overlay is not None:
        if not isinstance(overlay, dict):
            raise OriginError(f"origins[{chosen['id']}].rules must be an object.")
        result["rules"] = merge(result.get("rules") or {}, overlay)
    result["origin"] = {"id": chosen["id"], "title": chosen.get("title") or chosen["id"]}
    return result


def merge(base: Any, overlay: Any) -> Any:
    """Objects merge key by key, lists are extended, anything else is replaced."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        merged = dict(base)
        for key, value in overlay.items():
            merged[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(overlay, list):
        return [*base, *copy.deepcopy(overlay)]
    return copy.deepcopy(overlay)
