"""Words and shapes for the pages: change chips, stat labels, dates.

Pure functions registered as Jinja filters (`install`), so every template says a change,
a stat or a time the same way. Nothing here returns markup: templates escape it all.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment
from pydantic import BaseModel

CHIP_KINDS = ("applied", "limited", "unchanged", "rejected", "milestone", "note")
NOTE_TYPES = {"note_event", "kept_changes"}  # said about the turn, not changed by it
STAT_TYPES = {"set_stat", "change_stat"}


def stat_label(path: str | None) -> str:
    """`world.storm` → "Storm", `player.lamp_oil` → "Lamp oil", `npc.maren.trust` → "Maren's trust"."""
    if not path:
        return "state"
    parts = path.split(".")
    if parts[0] == "npc" and len(parts) >= 3:
        return f"{_words(parts[1]).title()}'s {_words('.'.join(parts[2:]))}"
    if parts[0] in ("world", "player") and len(parts) >= 2:
        return _words(".".join(parts[1:])).capitalize()
    return path


def _words(name: str) -> str:
    return name.replace("_", " ").replace("-", " ")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float) and value < 0:
        return f"−{abs(value)}"  # a real minus sign reads better than a hyphen
    return str(value)


def chip(change: Mapping[str, Any] | BaseModel) -> dict[str, str]:
    """One change chip: `kind` (a CSS word), `text` (what the chip says), `detail` (why).

    applied: "Storm 4 → 6"; limited: "Maren's trust −2 → 1 (limited)"; unchanged:
    "no change — Health at its limit"; rejected: "refused: <reason>"; a milestone reached:
    "✓ Milestone reached: <what>".
    """
    if isinstance(change, BaseModel):  # a view (`views.story.Change`), as the pages now pass
        change = change.model_dump()
    status = change.get("status", "applied")
    kind_of_event = change.get("type")
    target = change.get("target")
    reason = str(change.get("reason") or "")
    before, after = change.get("before"), change.get("after")
    is_stat = kind_of_event in STAT_TYPES
    label = stat_label(target) if is_stat else (target or kind_of_event or "change")
    if kind_of_event in NOTE_TYPES and status in ("applied", "note"):
        return {
            "kind": "note",
            "text": str(after if kind_of_event == "note_event" else reason),
            "detail": "",
        }
    if status == "rejected":
        return {
            "kind": "rejected",
            "text": f"✗ refused: {reason or 'not allowed'}",
            "detail": str(change.get("correction") or ""),
        }
    if status == "unchanged":
        return {"kind": "unchanged", "text": f"no change — {label} at its limit", "detail": reason}
    if (
        is_stat and status == "applied" and before is not None and before == after
    ):  # set to what it was
        return {"kind": "unchanged", "text": f"{label} already {_value(after)}", "detail": reason}
    if kind_of_event == "reach_milestone":
        what = (
            reason.split(":", 1)[1].strip() if ":" in reason else label.removeprefix("milestone ")
        )
        return {"kind": "milestone", "text": f"✓ Milestone reached: {what}", "detail": reason}
    if kind_of_event == "set_flag" and isinstance(after, bool):
        text = f"{_words(str(target or '').removeprefix('flag ')).capitalize()}: {_value(after)}"
    elif is_stat and not change.get("hidden") and (before is not None or after is not None):
        text = f"{label} {_value(before)} → {_value(after)}"
    else:
        text = reason or label
    if status == "limited":
        return {"kind": "limited", "text": f"{text} (limited)", "detail": reason}
    return {"kind": "applied", "text": text, "detail": reason if reason != text else ""}


def notes(changes: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The chips that are notes (muted, collapsed under the changes)."""
    return [c for c in changes or [] if chip(c)["kind"] == "note"]


def real_changes(changes: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The chips that are changes (or refusals of one)."""
    return [c for c in changes or [] if chip(c)["kind"] != "note"]


def num(value: Any) -> str:
    """5.0 → "5", 2.5 → "2.5", anything else as it is."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def when(value: str | datetime | None) -> str:
    """A stored timestamp as a short local-looking date: "12 Mar 2025, 14:05"."""
    if not value:
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%-d %b %Y, %H:%M")


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def share(part: float, whole: float) -> int:
    """`part` as a whole percentage of `whole` (0–100), for meters."""
    if not whole:
        return 0
    return max(0, min(100, round(100 * part / whole)))


def install(env: Environment) -> None:
    env.filters.update(
        chip=chip,
        notes=notes,
        real_changes=real_changes,
        num=num,
        stat_label=stat_label,
        when=when,
        plural=plural,
        share=share,
    )
    env.globals.update(plural=plural)
