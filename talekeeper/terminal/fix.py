"""`/fix` in `talekeeper play`: the web State panel's corrections, typed.

The words name things as `/state` shows them (a stat's name, a character's or place's name)
or by id; they become events from the model's own vocabulary and go through the same
service as the web's form (`service.corrections.correct`), so the validator, the clamps and
Undo treat them alike. Anything ambiguous is refused with the candidates named; nothing is
written unless something would change.
"""

from __future__ import annotations

import json
from typing import Any

from talekeeper.errors import Invalid
from talekeeper.service import json_depth

USAGE = (
    "/fix set <stat> <value> · /fix add <stat> <±amount> · /fix flag <flag> on|off · "
    "/fix milestone <id> · /fix give <item> to <holder> · /fix move <who or what> to <place> · "
    "/fix status <who> <status> · /fix <events as JSON>"
)


class FixInvalid(Invalid):
    """The words could not be read as a correction; nothing was sent."""


def _number(text: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise FixInvalid(f"{text!r} is not a number.") from None
    return int(value) if value.is_integer() else value


def _one(word: str, candidates: dict[str, str], what: str) -> str:
    """The id that `word` names: an id itself, or a name (case-insensitive) or a unique
    end of a path (`health` for `player.health`)."""
    if word in candidates:
        return word
    folded = word.casefold().replace(" ", "_")
    found = sorted(
        {key for key, name in candidates.items() if name.casefold().replace(" ", "_") == folded}
    )
    if not found:
        found = sorted(key for key in candidates if key.casefold().endswith("." + folded))
    if len(found) == 1:
        return found[0]
    if found:
        raise FixInvalid(f"{word!r} could be any of: {', '.join(found)}. Use one of those.")
    known = ", ".join(sorted(candidates)[:12]) or "none"
    raise FixInvalid(f"There is no {what} {word!r} (known: {known}).")


def _split_to(words: list[str], verb: str) -> tuple[str, str]:
    if "to" not in words[1:-1]:
        raise FixInvalid(f"Write it as `/fix {verb} <…> to <…>`.")
    cut = len(words) - 1 - words[::-1].index("to")
    return " ".join(words[:cut]), " ".join(words[cut + 1 :])


def events_from_words(line: str, state: dict[str, Any]) -> list[Any]:
    """The events a `/fix …` line asks for, given the state at the head
    (`corrections.state_at_head`)."""
    rest = line.removeprefix("/fix").strip()
    if not rest:
        raise FixInvalid("What should be corrected? " + USAGE)
    if rest[0] in "[{":
        json_depth.check(rest)  # TooDeep (Invalid) before the parser could recurse
        try:
            data = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise FixInvalid(f"That is not valid JSON (column {exc.colno}: {exc.msg}).") from None
        data = data.get("events", data) if isinstance(data, dict) else data
        return data if isinstance(data, list) else [data]
    verb, *words = rest.split()
    verb = verb.lower()
    view = state["view"]
    stats = {s["path"]: s["name"] for s in view["stats"]}
    flags = {f["name"]: f["name"] for f in view["flags"]}
    entities = dict(state["names"])
    places = {e["id"]: e["name"] for e in view["entities"].get("place", [])}
    if verb in ("set", "add") and len(words) >= 2:
        stat = _one(" ".join(words[:-1]), stats, "stat")
        if verb == "set":
            return [{"type": "set_stat", "stat": stat, "value": _number(words[-1])}]
        return [{"type": "change_stat", "stat": stat, "by": _number(words[-1])}]
    if (
        verb == "flag"
        and len(words) >= 2
        and words[-1].lower() in ("on", "off", "true", "false", "yes", "no")
    ):
        flag = _one(" ".join(words[:-1]), flags, "flag")
        return [
            {"type": "set_flag", "flag": flag, "value": words[-1].lower() in ("on", "true", "yes")}
        ]
    if verb == "milestone" and words:
        return [{"type": "reach_milestone", "milestone": " ".join(words)}]
    if verb == "give" and words:
        item, holder = _split_to(words, "give")
        return [
            {
                "type": "set_possession",
                "item": _one(item, entities, "item"),
                "holder": _one(holder, entities, "holder"),
            }
        ]
    if verb == "move" and words:
        who, place = _split_to(words, "move")
        return [
            {
                "type": "set_location",
                "entity": _one(who, entities, "character or thing"),
                "location": _one(place, places, "place"),
            }
        ]
    if verb == "status" and len(words) >= 2:
        return [
            {
                "type": "set_status",
                "entity": _one(" ".join(words[:-1]), entities, "character"),
                "status": words[-1],
            }
        ]
    raise FixInvalid("I could not read that correction. " + USAGE)
