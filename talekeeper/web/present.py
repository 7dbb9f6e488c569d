"""Words and shapes for the pages: numbers, dates, plurals; change chips from `service.chips`.

Pure functions registered as Jinja filters (`install`), so every template says a change,
a stat or a time the same way. Nothing here returns markup: templates escape it all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment

from talekeeper.service.chips import turn_chips


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
        turn_chips=turn_chips,
        num=num,
        when=when,
        plural=plural,
        share=share,
    )
    env.globals.update(plural=plural)
