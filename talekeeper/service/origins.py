"""Origins: thin starting overlays on a scenario's world (see docs/architecture.md
"Worlds, origins and scenarios").

A scenario's world is static content; an origin chooses where the player starts and how:
its own opening, extra starting facts, items, dispositions (stat starting values), flags,
scene. An origin's `rules` are merged into the scenario's rules before the adventure's
rules are checked — objects merge key by key, lists are extended — so every id it uses
must resolve, and a bad origin fails loudly before play starts.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from talekeeper.errors import Invalid, NotFound


class OriginNotFound(NotFound):
    """The origin named is not one of the scenario's (404, like any other missing thing)."""


class OriginError(Invalid):
    """A bad origin choice or overlay; nothing is started."""


ORIGIN_TEXT_FIELDS = (
    "opening",
    "narrator_instructions",
    "ai_instructions",
    "plot_essentials",
    "author_note",
)
ORIGIN_SEEDS = ("quests", "items", "facts")
"""References an origin makes into the scenario's libraries, resolved into its rules here."""


def origins_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    origins = data.get("origins")
    return (
        [o for o in origins if isinstance(o, dict) and o.get("id")]
        if isinstance(origins, list)
        else []
    )


def origin_summaries(data: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "id": str(o["id"]),
            "title": str(o.get("title") or o["id"]),
            "description": before_answers(str(o.get("description") or ""), data),
        }
        for o in origins_of(data)
    ]


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def before_answers(text: str, data: dict[str, Any]) -> str:
    """A scenario's text shown before its questions are answered: a `${name}` reads as the
    question's default answer, else as "‹your name›" — never as the placeholder itself."""
    defaults = {
        str(p.get("key")): str(p.get("default") or "")
        for p in data.get("placeholders") or []
        if isinstance(p, dict)
    }
    return _PLACEHOLDER.sub(
        lambda m: defaults.get(m.group(1)) or f"‹your {m.group(1).replace('_', ' ')}›", text
    )


def with_origin(data: dict[str, Any], origin_id: str | None) -> dict[str, Any]:
    """The scenario as this origin starts it. No origin chosen: the first one, if any."""
    origins = origins_of(data)
    if not origins:
        if origin_id:
            raise OriginNotFound(
                f"This scenario has no origins, so {origin_id!r} cannot be chosen."
            )
        return data
    chosen = (
        origins[0] if not origin_id else next((o for o in origins if o["id"] == origin_id), None)
    )
    if chosen is None:
        known = ", ".join(str(o["id"]) for o in origins)
        raise OriginNotFound(f"No origin {origin_id!r} in this scenario; choose one of: {known}.")
    result = copy.deepcopy(data)
    for field in ORIGIN_TEXT_FIELDS:
        if isinstance(chosen.get(field), str):
            result[field] = chosen[field]
    overlay = chosen.get("rules")
    if overlay is not None:
        if not isinstance(overlay, dict):
            raise OriginError(f"origins[{chosen['id']}].rules must be an object.")
        result["rules"] = merge(result.get("rules") or {}, overlay)
    if any(chosen.get(key) for key in ORIGIN_SEEDS):
        where = f"origins[{next(i for i, o in enumerate(data['origins']) if o is chosen)}]"
        result["rules"] = resolve_seeds(result.get("rules") or {}, chosen, where)
    result["origin"] = {"id": chosen["id"], "title": chosen.get("title") or chosen["id"]}
    if isinstance(chosen.get("build"), dict):
        result["origin"]["build"] = copy.deepcopy(chosen["build"])
    return result


def resolve_seeds(
    rules: dict[str, Any], origin: dict[str, Any], where: str = "origin"
) -> dict[str, Any]:
    """An origin's quests, items and facts, looked up in the scenario's libraries and
    written into its rules: quests open as threads, items become entities held (with
    their quantity) by the player, facts become world-level canon. An id that does not
    resolve stops the start, naming it — a broken origin fails here, not three scenes in.
    """
    rules = copy.deepcopy(rules)
    quests, items = rules.get("quests") or {}, rules.get("items") or {}
    threads = rules.setdefault("threads", [])
    for i, quest_id in enumerate(origin.get("quests") or []):
        quest = quests.get(quest_id) if isinstance(quest_id, str) else None
        if quest is None:
            raise OriginError(
                f"{where}.quests[{i}]: unknown quest {quest_id!r} in origin {origin.get('id')!r} "
                f"(the scenario's quests: {_known(quests)})."
            )
        if not any(t.get("id") == quest_id for t in threads):
            threads.append(
                {
                    "id": quest_id,
                    "title": quest["title"],
                    "kind": "quest",
                    "objectives": copy.deepcopy(quest.get("objectives", [])),
                }
            )
    entities = rules.setdefault("entities", [])
    possessions = rules.setdefault("possessions", {})
    for i, grant in enumerate(origin.get("items") or []):
        item_id = grant.get("item") if isinstance(grant, dict) else None
        declared = next((e for e in entities if e.get("id") == item_id), None)
        if declared is None and item_id not in items:
            raise OriginError(
                f"{where}.items[{i}].item: unknown item {item_id!r} in origin {origin.get('id')!r} "
                f"(the scenario's items: {_known(items)})."
            )
        if declared is None:
            spec = items[item_id]
            declared = {
                "id": item_id,
                "name": spec["name"],
                "type": "item",
                **{k: copy.deepcopy(spec[k]) for k in ("aliases", "description") if k in spec},
            }
            entities.append(declared)
        if "qty" in grant:
            declared.setdefault("attributes", {})["quantity"] = grant["qty"]
        possessions[item_id] = grant.get("holder", "player")
    facts = rules.setdefault("facts", [])
    for sentence in origin.get("facts") or []:
        facts.append({"object": sentence})
    return rules


def _known(library: dict[str, Any]) -> str:
    return ", ".join(sorted(library)) or "none declared"


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
