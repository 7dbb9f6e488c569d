"""Stored story cards → a validated, compiled card set, kept by content hash.

Each turn reads the adventure's cards as plain JSON from the store. Validating 1,000 of
them with Pydantic and parsing their keys costs ~15 ms; the cards change only when someone
edits them, so the compiled set is kept under a hash of their content (and the linger that
was applied) and a turn with the same cards pays only for the hash (~1 ms for 1,000).

The hash is SHA-256 of the cards' pickle: equal pickles mean equal content, so a hit is
always right; two equal card lists that pickle differently (shared objects are memoized)
only cost a miss.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from talekeeper.context.cardspec import load_card
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.context.worldinfo import CardSet, compile_cards

KEPT = 16
"""Card sets kept (one per adventure in play, plus a few edits back)."""

_SETS: OrderedDict[bytes, CardSet] = OrderedDict()
_LOCK = threading.Lock()  # Insights dry runs build prompts on worker threads


def card_set(raw: Sequence[Any] | None, linger: int = 0) -> CardSet:
    """The cards a turn uses: each stored object validated (`load_card` keeps what it can
    of a bad one), the first MAX_CARDS objects only; a card with no timers of its own gets
    `linger` turns of stickiness (see `prompt.select_cards`)."""
    raw = [c for c in (raw or [])[:MAX_CARDS] if isinstance(c, dict)]
    try:
        digest = hashlib.sha256(pickle.dumps((linger, raw), protocol=5)).digest()
    except (pickle.PicklingError, TypeError, ValueError, RecursionError):
        digest = None  # not plain JSON: build it, keep nothing
    if digest is not None:
        with _LOCK:
            found = _SETS.get(digest)
            if found is not None:
                _SETS.move_to_end(digest)
                return found
    cards = [load_card(c) for c in raw]
    if linger > 0:
        cards = [
            c if c.sticky or c.cooldown else c.model_copy(update={"sticky": linger}) for c in cards
        ]
    found = compile_cards(cards)
    if digest is not None:
        with _LOCK:
            _SETS[digest] = found
            while len(_SETS) > KEPT:
                _SETS.popitem(last=False)
    return found
