"""Stored story cards → a validated, compiled card set, kept by content.

Each turn reads the adventure's cards as plain JSON from the store. Validating 1,000 of
them with Pydantic and parsing their keys costs ~50-150 ms; the cards change only when
someone edits them, so the compiled set is kept with a copy of the cards it was built from
(and the linger applied), and a turn whose cards are equal to a kept copy reuses its set.

Equality is Python's `==` on the decoded JSON, which compares every card in full (0.3 ms
for 1,000 cards; a hash of their serialised form costs five times that, and a hash
collision could never be told apart). Values that compare equal validate the same:
Pydantic's lax mode reads True, 1 and 1.0 alike. A miss — the first turn after an edit —
validates and compiles anew.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import Any

from talekeeper.context.cardspec import load_card
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.context.worldinfo import CardSet, compile_cards

KEPT = 16
"""Card sets kept (one per adventure in play, plus a few edits back)."""

_SETS: list[
    tuple[int, list[Any], CardSet]
] = []  # (linger, the cards as given, the set), newest last
_LOCK = threading.Lock()  # Insights dry runs build prompts on worker threads


def card_set(raw: Sequence[Any] | None, linger: int = 0) -> CardSet:
    """The cards a turn uses: each stored object validated (`load_card` keeps what it can
    of a bad one), the first MAX_CARDS objects only; a card with no timers of its own gets
    `linger` turns of stickiness (see `prompt.select_cards`)."""
    raw = [c for c in (raw or [])[:MAX_CARDS] if isinstance(c, dict)]
    with _LOCK:
        kept = [
            entry for entry in reversed(_SETS) if entry[0] == linger and len(entry[1]) == len(raw)
        ]
    for entry in kept:
        if entry[1] == raw:  # the kept copies are never changed, so this may run unlocked
            with _LOCK:
                if entry in _SETS:
                    _SETS.remove(entry)
                    _SETS.append(entry)
            return entry[2]
    cards = [load_card(c) for c in raw]
    if linger > 0:
        cards = [
            c if c.sticky or c.cooldown else c.model_copy(update={"sticky": linger}) for c in cards
        ]
    found = compile_cards(cards)
    with _LOCK:
        _SETS.append((linger, copy.deepcopy(raw), found))  # a copy: the caller may edit its own
        del _SETS[:-KEPT]
    return found


def forget() -> None:
    """Drop every kept set (tests and benchmarks measure a first turn with this)."""
    with _LOCK:
        _SETS.clear()
