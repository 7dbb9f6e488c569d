"""The canon log (seed 003): the compact record every model role reads, kept by code.

The state document is the truth; the canon log is its projection for the roles — the
player (name, class, hidden stats only as their band word), where they are, the party,
the last five events, established facts, active quests and memorable moments. Three
rules from the seed are code here:

- the recent-event line for a turn is written by code from what the turn changed
  (`event_line`), never left to the model to remember to send;
- moments count by weight and fade with the turns since (`moment_score`): above
  `NARRATOR_MOMENT_WEIGHT` they reach the narrator, and banter draws on the best one;
- nothing private is in it: no hidden number, no character's knowledge (those live in
  the rules' cast, read only by that character's own call).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .document import PLAYER_ID, Document
from .report import Outcome, Report
from .resolve import document_name
from .rules import Rules
from .sentences import plain_line, same_line
from .stats import band_label

SCHEMA_VERSION = 1
NARRATOR_MOMENT_WEIGHT = 7
"""Moments at least this heavy are part of the narrator's state notes (the rest feed banter)."""
MOMENT_HALF_LIFE = 12
"""Turns after which a moment counts half as much (it never vanishes: moments stack)."""
BANTER_MIN_SCORE = 2.0
"""A moment below this score is too faint (or too old and light) for a companion to raise."""
EVENT_LINE_CHARS = 120
"""A recent event is one short line."""


def moment_score(weight: int, recorded: int, turn: int) -> float:
    """A moment's pull now: its weight, halved every `MOMENT_HALF_LIFE` turns since."""
    return weight * 0.5 ** (max(0, turn - recorded) / MOMENT_HALF_LIFE)


def narrator_moments(document: Document, turn: int) -> list[str]:
    """The heavy moments, strongest first — what the narrator should not forget."""
    heavy = [m for m in document.moments if m.weight >= NARRATOR_MOMENT_WEIGHT]
    heavy.sort(key=lambda m: -moment_score(m.weight, m.turn, turn))
    return [m.text for m in heavy[:3]]


def banter_moment(document: Document, turn: int) -> Any | None:
    """The moment a companion would bring up now, or None when none is strong enough."""
    scored = [(moment_score(m.weight, m.turn, turn), m) for m in document.moments if m.turn < turn]
    scored = [(s, m) for s, m in scored if s >= BANTER_MIN_SCORE]
    return max(scored, key=lambda sm: (sm[0], sm[1].turn))[1] if scored else None


def event_line(
    report: Report | None,
    prose: str,
    action_line: str = "",
    said: Callable[[Outcome], str] | None = None,
) -> str:
    """The terse recent-event line code writes for a turn: what was accepted, else the
    turn's first sentence (of the guarded prose: never an echo), as one short plain line
    (`sentences.plain_line`). The model's own `note_event` line, when it sent one, wins.
    `said` words a change as the player reads it (the service's chips, names and all); by
    default its reason, less ids and paths (`in_words`)."""
    if report is not None:
        noted = [
            o.after
            for o in report.outcomes
            if o.status == "applied" and o.type == "note_event" and isinstance(o.after, str)
        ]
        if noted:
            return ""  # the model wrote the line itself; don't write a second
        changes = [
            said(o) if said is not None else in_words(o.reason)
            for o in report.outcomes
            if o.status in ("applied", "limited")
            and not o.hidden
            and o.reason
            and o.type not in ("record_moment", "note_event")
        ]
        if changes:
            return plain_line("; ".join(changes), EVENT_LINE_CHARS)
    sentence = _first_sentence(plain_line(prose, 10 * EVENT_LINE_CHARS))
    return plain_line(sentence or action_line.lstrip("> ").strip(), EVENT_LINE_CHARS)


_ID_TAG = re.compile(r"\s*\((?!none\))[a-z][a-z0-9_-]*(?:,\s*[a-z_]+)?\)")
_REF = re.compile(r"\b[frtm]\d+\b:?\s*")


_PATH = re.compile(r"\b(?:world|player|npc)\.([\w.-]*\w)")
_SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


def _path_words(match: re.Match[str]) -> str:
    parts = match.group(1).split(".")
    return f"{parts[0]}'s {' '.join(parts[1:])}" if len(parts) > 1 else parts[0]


def in_words(reason: str) -> str:
    """A verdict's reason as a recent event reads it: no `(id)` tags, no fact, thread or
    relationship ids, no stat paths or snake_case ids ("created Maren (maren)" → "created
    Maren", "opened t1: Relight the lantern" → "opened Relight the lantern", "ferry_hired
    on" → "ferry hired on"), so the narrator never reads one to copy."""
    text = _PATH.sub(_path_words, _REF.sub("", _ID_TAG.sub("", reason)))
    return " ".join(_SNAKE.sub(lambda m: m.group(0).replace("_", " "), text).split())


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    for i, ch in enumerate(text):
        if ch in ".!?" and (i + 1 == len(text) or text[i + 1] == " "):
            return text[: i + 1]
    return text


def canon_log(document: Document, rules: Rules, turn: int | None = None) -> dict[str, Any]:
    """The canon log at a story position (`canon-log.schema.json`)."""
    doc = document
    me = doc.entities.get(PLAYER_ID)
    luck = None
    for entry in (rules.raw.get("character") or {}).get("hidden", []):
        rule = rules.stats.player.get(entry["stat"])
        live = doc.stats.player.get(entry["stat"])
        if rule is not None:
            luck = band_label(rule, live.value if live is not None else rule.initial) or None
            break
    klass = me.attributes.get("class") if me else None
    classes = (rules.raw.get("character") or {}).get("classes", [])
    klass = next(
        (c["id"] for c in classes if c["name"] == klass), klass
    )  # the id, not the shown name
    location = doc.scene.location or (me.location if me else None)
    party = []
    for member in rules.cast.values():
        if not member.companion or member.id not in doc.entities:
            continue
        disposition: Any = None
        for name, rule in rules.stats.npcs.get(member.id, {}).items():
            live = doc.stats.npcs.get(member.id, {}).get(name)
            value = live.value if live is not None else rule.initial
            disposition = band_label(rule, value) if rule.hidden else value
            break
        party.append(
            {"id": member.id, "name": doc.entities[member.id].name, "disposition": disposition}
        )
    now = turn if turn is not None else max([0, *(e.turn for e in doc.recent_events)])
    return {
        "schema_version": SCHEMA_VERSION,
        "player": {
            "name": me.name if me else "You",
            "class_id": str(klass) if klass is not None else None,
            "luck_descriptor": luck,
        },
        "location": {"id": location, "name": document_name(doc, location)} if location else None,
        "party": party,
        "recent_events": [e.text for e in doc.recent_events][-5:],
        "established_facts": [fact_sentence(doc, f) for f in doc.facts if f.status == "active"],
        "active_quests": [
            {
                "id": t.id,
                "name": t.title,
                "status": {"open": "active", "resolved": "complete", "failed": "failed"}[t.status],
                "objective": next((o.text for o in t.objectives if not o.done), None),
            }
            for t in doc.threads.values()
        ],
        "moments": sorted(
            ({"id": m.id, "text": m.text, "weight": m.weight, "turn": m.turn} for m in doc.moments),
            key=lambda m: -moment_score(m["weight"], m["turn"], now),
        ),
    }


def fact_sentence(doc: Document, fact: Any) -> str:
    subject = document_name(doc, fact.subject) if fact.subject else ""
    text = " ".join(x for x in (subject, fact.predicate, fact.object) if x)
    return text + (f": {fact.value}" if fact.value is not None else "")


def record_event(document: Document, line: str, turn: int) -> Document:
    """The document with `line` as its newest recent event (the window keeps five),
    unless the window already says it."""
    from .document import RECENT_EVENTS_WINDOW, RecentEvent

    if not line or any(same_line(line, e.text) for e in document.recent_events):
        return document  # nothing new: a line already in the window is not said again
    # A shallow copy: only the event list is new. Documents are values (apply.py works on
    # a deep copy of its own), and copying every entity again cost ~1 ms a turn.
    events = [*document.recent_events, RecentEvent(turn=turn, text=line)]
    return document.model_copy(update={"recent_events": events[-RECENT_EVENTS_WINDOW:]})
