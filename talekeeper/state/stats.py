"""Stat mechanics: how one proposed stat change meets its declared rule.

Seed 000's design, kept: the model proposes, the engine referees. Ranges, the per-turn
cap, cooldowns (in turns), counters that never fall and the length of text stats are all
enforced here, and each plan says in words what happened. Band labels are the model's
view of a number; for a hidden stat they are its *only* view, so nothing written here
for a hidden stat quotes a number.

Pacing rules (the per-turn cap and the cooldown) bind the story only: they exist because
a model cannot be trusted with its own frequency rules. A player's correction is bound by
everything else (range, counters, text length) — undo is the way back past those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .report import Status
from .rules import StatRule


def band_label(rule: StatRule, value: float | int | str) -> str | None:
    """The label of the band `value` falls in: lo inclusive, hi exclusive, except that a
    value equal to the top band's hi belongs to it (so `max` has a label)."""
    if isinstance(value, str) or not rule.bands:
        return None
    for band in rule.bands:
        if band.lo <= value < band.hi:
            return band.label
    for band in reversed(rule.bands):
        if value == band.hi:
            return band.label
    return None


def num(value: float | int) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def typed_number(text: str) -> float | int | None:
    """What a player typed as a number (`5`, `-2.5`, `3.0` is 3), or None when it is not
    one; each form decides what to do with the rest (`num` writes it back)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def shown(rule: StatRule, value: float | int | str) -> str:
    """A value as the model may see it: the number and its label, or for a hidden stat
    only the label."""
    if isinstance(value, str):
        return repr(value)
    label = band_label(rule, value)
    if rule.hidden:
        return f"'{label}'" if label else "(hidden)"
    return f"{num(value)} ({label})" if label else num(value)


def limits_text(rule: StatRule) -> str:
    """The declared limits in words, never with numbers for a hidden stat."""
    if rule.kind == "text":
        return f"text, at most {rule.max_length} characters"
    if rule.hidden:
        ladder = " < ".join(b.label for b in rule.bands)
        return f"hidden; its bands from low to high: {ladder}"
    parts = []
    if rule.min is not None and rule.max is not None:
        parts.append(f"range {num(rule.min)}–{num(rule.max)}")
    elif rule.min is not None:
        parts.append(f"at least {num(rule.min)}")
    elif rule.max is not None:
        parts.append(f"at most {num(rule.max)}")
    if rule.max_change_per_turn is not None:
        parts.append(f"changes at most {num(rule.max_change_per_turn)} per turn")
    if rule.kind == "counter":
        parts.append("counter: only rises")
    return ", ".join(parts) or "unbounded"


@dataclass(frozen=True)
class StatPlan:
    status: Status
    value: float | int | str
    reason: str
    correction: str | None = None
    moved: float | int = 0


def _reject(current: float | int | str, reason: str, correction: str) -> StatPlan:
    return StatPlan("rejected", current, reason, correction)


def plan_stat(
    rule: StatRule,
    path: str,
    current: float | int | str,
    *,
    set_to: float | int | str | None = None,
    change_by: float | int | None = None,
    turn: int,
    last_changed: int | None,
    moved_this_turn: float | int,
    paced: bool,
) -> StatPlan:
    """Decide what a `set_stat` (`set_to`) or `change_stat` (`change_by`) does.

    `moved_this_turn` is the net amount the story already moved this stat in this turn:
    the cap limits a turn's net movement, so two events cannot add up past it. `paced`
    is False for a player's correction (no cap, no cooldown).
    """
    if rule.kind == "text":
        return _plan_text(rule, path, current, set_to, change_by, turn, last_changed, paced)
    if isinstance(set_to, str):
        return _reject(
            current,
            f"{path} is a number, not text",
            f"Send a number for {path} ({limits_text(rule)}), e.g. change_stat with a signed amount.",
        )
    asked = set_to if change_by is None else None
    amount = change_by if change_by is not None else None
    value = asked if asked is not None else amount
    assert value is not None and not isinstance(current, str)
    if rule.integer and not float(value).is_integer():
        return _reject(current, f"{path} takes whole numbers", f"Send a whole number for {path}.")
    target = asked if asked is not None else current + amount  # type: ignore[operator]
    if rule.kind == "counter" and target < current:
        now = "" if rule.hidden else f" (it is {num(current)})"
        fix = "Send change_stat with a positive amount, or nothing if it did not rise."
        if change_by is None and not rule.hidden:
            fix = f"Send set_stat with a value of at least {num(current)}, or change_stat with a positive amount."
        return _reject(current, f"{path} is a counter and never falls{now}", fix)
    if target == current:
        return StatPlan("applied", current, f"{path} is already {shown(rule, current)}")
    cooldown = _cooldown(rule, path, current, turn, last_changed, paced)
    if cooldown:
        return cooldown
    delta = target - current
    capped = False
    if paced and rule.max_change_per_turn is not None:
        cap = rule.max_change_per_turn
        low, high = -cap - moved_this_turn, cap - moved_this_turn
        if rule.integer:
            low, high = math.ceil(low), math.floor(high)
        bounded = min(max(delta, low), high)
        capped = bounded != delta
        delta = bounded
    new = current + delta
    held = None
    if rule.max is not None and new > rule.max:
        new, held = rule.max, "maximum"
    if rule.min is not None and new < rule.min:
        new, held = rule.min, "minimum"
    if (new - current) * (target - current) < 0:  # a stored value outside its range
        new = current
    new = int(new) if rule.integer else new
    if new == current:
        return _unchanged(rule, path, current, held, target > current)
    if new != target:
        why = []
        if capped and rule.max_change_per_turn is not None:
            why.append(
                "per-turn limit"
                if rule.hidden
                else f"at most {num(rule.max_change_per_turn)} per turn"
            )
        if held:
            why.append(f"held at its {held}" if rule.hidden else f"held at its {held} {num(new)}")
        asked_text = (
            ""
            if rule.hidden
            else f" (asked {_signed(target - current)}, moved {_signed(new - current)})"
        )
        return StatPlan(
            "limited",
            new,
            f"{path} moved less than asked{asked_text}: {'; '.join(why)}",
            moved=new - current,
        )
    return StatPlan(
        "applied", new, f"{path} {shown(rule, current)} → {shown(rule, new)}", moved=new - current
    )


def _signed(value: float | int) -> str:
    return ("+" if value > 0 else "") + num(value)


def _unchanged(
    rule: StatRule, path: str, current: float | int, held: str | None, rising: bool
) -> StatPlan:
    if held is None:  # the cap is spent for this turn
        reason = f"{path} already moved as far as it may this turn"
        if not rule.hidden and rule.max_change_per_turn is not None:
            reason += f" (at most {num(rule.max_change_per_turn)} per turn)"
        return StatPlan("unchanged", current, reason, f"Don't change {path} again this turn.")
    direction = "raise" if rising else "lower"
    if rule.hidden:
        edge = "highest" if held == "maximum" else "lowest"
        return StatPlan(
            "unchanged",
            current,
            f"{path} is already at its {edge} ({shown(rule, current)})",
            f"{path} cannot go {'higher' if rising else 'lower'}; don't {direction} it.",
        )
    limit = rule.max if held == "maximum" else rule.min
    assert limit is not None
    return StatPlan(
        "unchanged",
        current,
        f"{path} is already at its {held} ({num(limit)})",
        f"{path} is {shown(rule, current)}, its {held} ({limits_text(rule)}); don't {direction} it further.",
    )


def _cooldown(
    rule: StatRule, path: str, current: float | int | str, turn: int, last: int | None, paced: bool
) -> StatPlan | None:
    if not paced or not rule.cooldown or last is None:
        return None
    # `cooldown: n` means n whole turns of rest after a move: changed on turn t, the stat
    # is still on turns t+1 … t+n and may move again on turn t+n+1.
    waited = turn - last
    if 0 < waited <= rule.cooldown:
        left = rule.cooldown - waited + 1
        return _reject(
            current,
            f"{path} changed {waited} turn{'s' if waited != 1 else ''} ago and has a {rule.cooldown}-turn cooldown",
            f"Leave {path} alone; it can move again in {left} turn{'s' if left != 1 else ''}.",
        )
    return None


def _plan_text(
    rule: StatRule,
    path: str,
    current: float | int | str,
    set_to: float | int | str | None,
    change_by: float | int | None,
    turn: int,
    last: int | None,
    paced: bool,
) -> StatPlan:
    if change_by is not None:
        return _reject(
            current,
            f"{path} is a text stat; change_stat only moves numbers",
            f"Use set_stat with text for {path} (at most {rule.max_length} characters).",
        )
    if not isinstance(set_to, str):
        return _reject(
            current,
            f"{path} is a text stat",
            f"Send text for {path} (at most {rule.max_length} characters).",
        )
    if len(set_to) > rule.max_length:
        return _reject(
            current,
            f"{path} takes at most {rule.max_length} characters ({len(set_to)} sent)",
            f"Send a shorter value for {path}: at most {rule.max_length} characters.",
        )
    if set_to == current:
        return StatPlan("applied", current, f"{path} is already {set_to!r}")
    cooldown = _cooldown(rule, path, current, turn, last, paced)
    if cooldown:
        return cooldown
    return StatPlan("applied", set_to, f"{path} {current!r} → {set_to!r}")
