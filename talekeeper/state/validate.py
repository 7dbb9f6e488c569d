"""Layered validation: decide what one proposed event would do, without doing it.

The layers run in a fixed order and the first that refuses wins:

    1. envelope   — a JSON object with an `events` list, within size limits
    2. allowlist  — the event's `type` is a known one; nothing else is read before this
    3. shape      — its fields, their types and sizes (`events.check_shape`)
    4. reference  — names resolve to existing ids; only create_entity introduces one
    5. rules      — ranges, the per-turn cap, cooldowns, counters, sticky milestones,
                    text length, authority (a story event cannot undo a player's fact)
    6. canon      — the scenario's forbidden status changes

Layers 1–3 live here; 4–6 are the per-event functions in `checks.py`. The result is a
`Verdict` (`verdict.py`): an outcome status with its words and, when something is to
change, a `change` that `apply.execute` carries out. Validation never mutates; applying
never refuses — the split evennia draws between `at_pre_*` and `at_post_*` hooks.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from .checks import CHECKS
from .document import Document
from .events import EVENT_TYPES, EVENTS, MAX_EVENTS, MAX_PROPOSAL_CHARS, ShapeError, check_shape
from .verdict import Context, Verdict, reject

__all__ = ["Context", "Envelope", "Verdict", "check_allowlist", "open_envelope", "validate_event"]


@dataclass(frozen=True)
class Envelope:
    events: list[Any]
    notes: list[Verdict]


def open_envelope(proposal: Any) -> Envelope:
    """Layer 1. Returns the events to read and any refusals about the envelope itself."""
    fix = 'Send one JSON object: {"events": [ {"type": ..., ...}, ... ]}.'
    if not isinstance(proposal, dict):
        return Envelope([], [reject("envelope", "the state block is not a JSON object", fix)])
    try:
        size = len(json.dumps(proposal, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return Envelope([], [reject("envelope", "the state block is not plain JSON", fix)])
    if size > MAX_PROPOSAL_CHARS:
        return Envelope(
            [],
            [
                reject(
                    "envelope",
                    f"the state block is too large ({size} characters; at most "
                    f"{MAX_PROPOSAL_CHARS})",
                    "Send only what changed this turn.",
                )
            ],
        )
    events = proposal.get("events")
    if not isinstance(events, list):
        return Envelope([], [reject("envelope", 'the state block has no "events" list', fix)])
    notes = []
    extra = [k for k in proposal if k != "events"]
    if extra:
        names = ", ".join(repr(k)[:40] for k in extra[:5])
        notes.append(
            reject(
                "envelope",
                f'ignored unknown key(s) {names} beside "events"',
                'Put every change inside "events"; the block holds nothing else.',
            )
        )
    if len(events) > MAX_EVENTS:
        notes.append(
            reject(
                "envelope",
                f"only the first {MAX_EVENTS} of {len(events)} events were read",
                f"Send at most {MAX_EVENTS} events, only for what changed this turn.",
            )
        )
        events = events[:MAX_EVENTS]
    return Envelope(events, notes)


def check_allowlist(event: Any) -> str | Verdict:
    """Layer 2: the event's type, read before any other field."""
    listing = f"Event types: {', '.join(EVENT_TYPES)}."
    if not isinstance(event, dict):
        return reject(
            "allowlist",
            "an event is not a JSON object",
            'Each event is an object: {"type": ..., ...}. ' + listing,
        )
    kind = event.get("type")
    if not isinstance(kind, str):
        return reject("allowlist", 'an event has no "type"', listing)
    if kind not in EVENTS:
        close = difflib.get_close_matches(kind, EVENT_TYPES, n=1)
        hint = f"Did you mean {close[0]}? " if close else ""
        return reject("allowlist", f"'{kind[:40]}' is not an event type", hint + listing)
    return kind


# --- the per-event layers ---------------------------------------------------------------


def validate_event(document: Document, event: Any, ctx: Context) -> Verdict:
    """All layers after the envelope, for one event against the document as it stands."""
    kind = check_allowlist(event)
    if isinstance(kind, Verdict):
        return kind
    clean = check_shape(event)
    if isinstance(clean, ShapeError):
        return reject("shape", clean.reason, clean.correction)
    return CHECKS[kind](document, clean, ctx)
