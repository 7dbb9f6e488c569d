"""The chips under a turn, described once for every front: the web's turn, State panel and
Insights, and the terminal after a turn and after `/fix`.

A chip says in names and words what one proposed change did ("Maren's trust −2 → 1
(limited)", "Ada is now at Keeper's cottage", "✓ Milestone reached: Obtain the brass key").
What the model proposed and the state engine refused is the model's mistake, not the
player's: under a turn it is one muted count ("2 of the model's changes were not applied —
see Insights"), and Insights shows each refusal with its reason, ids and paths. A refusal of
the player's own correction is theirs to read, in words. Notes (the model's note of what
happened, an edit's word on its changes) are no change: muted, under the chips.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from talekeeper.service.names import Names, words_of

Kind = Literal["applied", "limited", "unchanged", "rejected", "milestone", "note"]
NOTE_TYPES = {"note_event", "kept_changes", "not_updated", "cut_off"}  # said, no change
STAT_TYPES = {"set_stat", "change_stat"}


@dataclass(frozen=True)
class Chip:
    """One change in words: `kind` (a CSS word), `text` (what the chip says), `detail`
    (more, for a tooltip; words only, never an id or a path)."""

    kind: Kind
    text: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text, "detail": self.detail}


def value_words(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float) and value < 0:
        return f"−{abs(value)}"  # a real minus sign reads better than a hyphen
    return str(value)


def describe(change: Mapping[str, Any], names: Names) -> Chip:
    """One outcome (`state.report.Outcome` as a dict, before a hidden stat's values are
    dropped) as a chip. Insights shows a refusal's own reason beside it (`reason`)."""
    status = change.get("status", "applied")
    kind = change.get("type")
    reason = str(change.get("reason") or "")
    if kind in NOTE_TYPES and status in ("applied", "note"):
        return Chip("note", str(change.get("after") if kind == "note_event" else reason))
    if status == "rejected":
        return Chip("rejected", f"✗ refused: {names.words(reason) or 'not allowed'}")
    label = names.stat(change.get("target")) if kind in STAT_TYPES else _what(change, names)
    if status == "unchanged":
        return Chip("unchanged", f"no change — {label} at its limit", names.words(reason))
    before, after = change.get("before"), change.get("after")
    if status == "applied" and before == after and kind not in STAT_TYPES and before is not None:
        if kind == "reach_milestone":
            return Chip("unchanged", "Milestone already reached")
        said = names.words(reason)  # asked for what was already so: "Maren is already there"
        return Chip("unchanged", said[:1].upper() + said[1:])
    text = _applied(change, names, label)
    if kind == "reach_milestone":
        return Chip("milestone", text, "")
    if status == "limited":
        return Chip("limited", f"{text} (limited)", names.words(reason))
    if kind in STAT_TYPES and before == after and not change.get("hidden"):
        return Chip("unchanged", f"{label} already {value_words(after)}")  # set to what it was
    return Chip("applied", text)


def _what(change: Mapping[str, Any], names: Names) -> str:
    target = str(change.get("target") or "")
    head, _, rest = target.partition(" ")
    if head in ("possession", "flag", "milestone", "thread", "fact", "relationship", "moment"):
        return words_of(rest) if head == "flag" else names.entity(rest)
    return names.entity(target.split(".")[0]) if target else "the story"


def _applied(change: Mapping[str, Any], names: Names, label: str) -> str:
    """What an applied (or limited) change did, in words."""
    kind, target = change.get("type"), str(change.get("target") or "")
    before, after, event = change.get("before"), change.get("after"), change.get("event")
    event = event if isinstance(event, Mapping) else {}
    _, _, ref = target.partition(" ")
    if kind in STAT_TYPES:
        if change.get("hidden"):
            rose = _compare(after, before)
            return f"{label} {'rose' if rose else 'fell' if rose is False else 'changed'}"
        if before is None and after is None:
            return f"{label} changed"
        return f"{label} {value_words(before)} → {value_words(after)}"
    if kind == "set_flag":
        return f"{words_of(ref).capitalize()}: {value_words(after)}"
    if kind == "reach_milestone":
        reason = str(change.get("reason") or "")
        what = reason.split(":", 1)[1].strip() if ":" in reason else words_of(ref)
        return f"✓ Milestone reached: {what}"
    if kind == "set_location":
        return f"{label} is now at {names.mid(after)}" if after else f"{label} is gone"
    if kind == "set_status":
        return f"{label} is now {after}" if after else f"{label}: no longer {before}"
    if kind == "set_attribute":
        attribute = words_of(target.split(".attributes.", 1)[-1])
        return f"{label}'s {attribute}: {value_words(after) if after is not None else 'gone'}"
    if kind == "set_conditions":
        return f"{label}: {', '.join(map(str, after or [])) or 'no conditions'}"
    if kind == "set_possession":
        return f"{names.entity(after)} now holds {names.mid(ref)}"
    if kind == "clear_possession":
        return f"No one holds {names.mid(ref)} now"
    if kind == "create_entity":
        return f"New: {after}"
    if kind == "add_fact":
        return f"Now known: {after}"
    if kind == "withdraw_fact":
        return f"No longer true: {names.fact(ref)}"
    if kind == "add_relationship":
        return str(after)
    if kind == "end_relationship":
        return f"Ended: {names.relationship(ref)}"
    if kind == "open_thread":
        title, what = names.thread(ref)
        return f"New {what}: {title}"
    if kind == "complete_objective":
        tid, _, oid = ref.partition(".")
        return f"Done: {names.objective(tid, oid)}"
    if kind == "resolve_thread":
        title, what = names.thread(ref)
        return f"{what.capitalize()} {after}: {title}"
    if kind == "set_scene":
        return _scene(before, after, names)
    if kind == "record_moment":
        return f"Remembered: {after}"
    return names.words(str(change.get("reason") or "")) or "The story changed"


def _scene(before: Any, after: Any, names: Names) -> str:
    before = before if isinstance(before, Mapping) else {}
    after = after if isinstance(after, Mapping) else {}
    parts = []
    if after.get("location") != before.get("location"):
        parts.append(f"The scene is now {names.mid(after.get('location'))}")
    if after.get("present") != before.get("present"):
        here = [names.entity(p) for p in after.get("present") or []]
        parts.append(f"here: {', '.join(here)}" if here else "no one else here")
    if after.get("time") != before.get("time") and after.get("time"):
        parts.append(f"time: {after['time']}")
    if after.get("summary") != before.get("summary") and after.get("summary"):
        parts.append(str(after["summary"]))
    text = "; ".join(parts) or "The scene changed"
    return text[0].upper() + text[1:]


def _compare(after: Any, before: Any) -> bool | None:
    try:
        return None if after == before else bool(after > before)
    except TypeError:
        return None


@dataclass(frozen=True)
class TurnChips:
    """What a front shows of one turn's changes: the chips, the notes under them, and the
    muted line that counts what the model proposed and the state engine refused."""

    chips: list[Chip] = field(default_factory=list)
    notes: list[Chip] = field(default_factory=list)
    refused: int = 0

    @property
    def refused_line(self) -> str:
        """ "2 of the model's changes were not applied" (Insights says which and why)."""
        if not self.refused:
            return ""
        verb = "was" if self.refused == 1 else "were"
        return f"{self.refused} of the model's changes {verb} not applied"


def turn_chips(changes: list[Any] | None) -> TurnChips:
    """The chips of one turn's changes (each with its `chip` words and `by`): the model's
    refusals counted, not shown; the player's own shown, in words."""
    chips, notes, refused = [], [], 0
    for change in changes or []:
        data = change if isinstance(change, Mapping) else change.model_dump()
        chip = Chip(**data["chip"])
        if chip.kind == "note":
            notes.append(chip)
        elif chip.kind == "rejected" and data.get("by") != "player":
            refused += 1
        else:
            chips.append(chip)
    return TurnChips(chips, notes, refused)


def said_of(state: Mapping[str, Any] | None) -> Callable[[Any], str]:
    """How a change reads in the story's recent events (the canon log, the State panel's
    Recently): the chip's words, without the marks made for the page."""
    names = Names(state)

    def said(outcome: Any) -> str:
        text = describe(outcome.model_dump(), names).text
        return text.removeprefix("✓ ").removesuffix(" (limited)")

    return said


def correction_text(changes: list[dict[str, Any]]) -> str:
    """A correction as the story reads it: "You corrected the story: Ada is now at
    Keeper's cottage; Maren's trust 1 → 3"."""
    done = [c["chip"]["text"] for c in changes if c["status"] in ("applied", "limited")]
    return "You corrected the story: " + "; ".join(done)
