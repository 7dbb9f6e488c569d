"""`/fix` in `talekeeper play`: the web State panel's corrections, typed.

The words name things as `/state` shows them ("Maren's trust", "Storm", "Keeper's cottage"),
by a name or an alias, with or without "the" ("the cottage"), or by id; they become events
from the model's own vocabulary and go through the same service as the web's form
(`service.corrections.correct`), so the validator, the clamps and Undo treat them alike, and
the answer is the same chips, in names. Anything ambiguous is refused with the candidates
named; nothing is written unless something would change.
"""

from __future__ import annotations

from typing import Any

from talekeeper.errors import Invalid
from talekeeper.service import corrections
from talekeeper.service.names import either, find
from talekeeper.state.stats import typed_number
from talekeeper.views.state import HeadState

USAGE = (
    "/fix set <stat> <value> · /fix add <stat> <±amount> · /fix flag <flag> on|off · "
    "/fix milestone <what it says> · /fix give <item> to <holder> · /fix move <who or what> to <place> · "
    "/fix status <who> <status> · /fix <events as JSON>"
)


class FixInvalid(Invalid):
    """The words could not be read as a correction; nothing was sent."""


def _number(text: str) -> float | int:
    value = typed_number(text)
    if value is None:
        raise FixInvalid(f"{text!r} is not a number.")
    return value


def _one(said: str, candidates: dict[str, list[str]], what: str) -> str:
    """The id that `said` names, by any name it goes by (`service.names.find`): the words
    `/state` prints, a name or an alias, with or without "the", a possessive or its id."""
    found = find(said, candidates)
    if len(found) == 1:
        return found[0]
    if found:
        options = either(sorted(candidates[f][0] for f in found))
        raise FixInvalid(f"{said!r} could be {options}: say which.")
    known = ", ".join(sorted(names[0] for names in candidates.values())[:12]) or "none"
    raise FixInvalid(f"There is no {what} {said!r} (known: {known}).")


def _candidates(state: HeadState) -> dict[str, dict[str, list[str]]]:
    """What each kind of thing goes by, its shown name first: stats by their label
    ("Maren's trust", "Storm"), their own name and an alias's possessive; flags and
    milestones by their description and name; entities by name, alias and id."""
    view = state.at.view
    entities = {e.id: e for kind in view.entities.values() for e in kind}  # with aliases

    def known_as(eid: str) -> list[str]:
        entity = entities.get(eid)
        me = ["me", "myself", "you"] if eid == "player" else []
        if entity is None:
            return [eid, eid, *me]
        return [entity.name or eid, *entity.aliases, eid, *me]

    stats: dict[str, list[str]] = {}
    for stat in view.stats:
        path, name = stat.path, stat.name
        said = [stat.label, name, path]
        if stat.owner == "player":
            said += [f"your {name}", f"my {name}"]
        elif stat.owner != "world":
            said += [f"{who}'s {name}" for who in known_as(stat.owner)]
        stats[path] = said
    return {
        "stat": stats,
        "flag": {f.name: [f.desc or f.name, f.name] for f in view.flags},
        "milestone": {m.id: [m.desc or m.id, m.id] for m in view.milestones},
        "entity": {eid: known_as(eid) for eid in entities},
        "place": {e.id: known_as(e.id) for e in view.entities.get("place", [])},
    }


def _stat_and_value(
    words: list[str], stats: dict[str, list[str]], state: HeadState
) -> tuple[str, Any]:
    """The stat the first words name and the value the rest give: a number, or for a text
    stat its words ("/fix set Tobin's grief quiet sorrow")."""
    text_stats = {s.path for s in state.at.view.stats if s.kind == "text"}
    for cut in range(len(words) - 1, 0, -1):
        found = find(" ".join(words[:cut]), stats)
        if len(found) == 1 and (found[0] in text_stats or cut == len(words) - 1):
            rest = " ".join(words[cut:])
            return found[0], rest if found[0] in text_stats else _number(rest)
    return _one(" ".join(words[:-1]), stats, "stat"), _number(words[-1])


def _split_to(words: list[str], verb: str) -> tuple[str, str]:
    if "to" not in words[1:-1]:
        raise FixInvalid(f"Write it as `/fix {verb} <…> to <…>`.")
    cut = len(words) - 1 - words[::-1].index("to")
    return " ".join(words[:cut]), " ".join(words[cut + 1 :])


def events_from_words(line: str, state: HeadState) -> list[Any]:
    """The events a `/fix …` line asks for, given the state at the head
    (`corrections.state_at_head`)."""
    rest = line.removeprefix("/fix").strip()
    if not rest:
        raise FixInvalid("What should be corrected? " + USAGE)
    if rest[0] in "[{":
        return corrections.events_from_json(rest)
    verb, *words = rest.split()
    verb = verb.lower()
    known = _candidates(state)
    if verb in ("set", "add") and len(words) >= 2:
        stat, value = _stat_and_value(words, known["stat"], state)
        if verb == "set":
            return [{"type": "set_stat", "stat": stat, "value": value}]
        return [{"type": "change_stat", "stat": stat, "by": value}]
    if (
        verb == "flag"
        and len(words) >= 2
        and words[-1].lower() in ("on", "off", "true", "false", "yes", "no")
    ):
        flag = _one(" ".join(words[:-1]), known["flag"], "flag")
        return [
            {"type": "set_flag", "flag": flag, "value": words[-1].lower() in ("on", "true", "yes")}
        ]
    if verb == "milestone" and words:
        milestone = _one(" ".join(words), known["milestone"], "milestone")
        return [{"type": "reach_milestone", "milestone": milestone}]
    if verb == "give" and words:
        item, holder = _split_to(words, "give")
        return [
            {
                "type": "set_possession",
                "item": _one(item, known["entity"], "item"),
                "holder": _one(holder, known["entity"], "holder"),
            }
        ]
    if verb == "move" and words:
        who, place = _split_to(words, "move")
        return [
            {
                "type": "set_location",
                "entity": _one(who, known["entity"], "character or thing"),
                "location": _one(place, known["place"], "place"),
            }
        ]
    if verb == "status" and len(words) >= 2:
        return [
            {
                "type": "set_status",
                "entity": _one(" ".join(words[:-1]), known["entity"], "character"),
                "status": words[-1],
            }
        ]
    raise FixInvalid("I could not read that correction. " + USAGE)
