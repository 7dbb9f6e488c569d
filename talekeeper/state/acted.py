"""The player's own changes, read from their action when the narration leaves them unsaid.

With a small model the narration rarely states the player's move outright ("The keeper's
cottage, the only way to reach the headland…"), while the player's action does ("You walk
to the keeper's cottage."). Left unread, the state keeps the player where they were and
every later warning is measured against a place they left. So a Do action, as the page
stores it, is read by the same reader (`reader.py`) as a source of the PLAYER's changes
only — a move to a named place, an item taken that is free to take (nobody holds it and it
lies here) or that someone here holds, an item the player holds dropped or handed to
someone here — proposed like the narration's told changes (`told.py`), through the same
validator, and marked as read from the action.

Precision first: a wrong change is worse than none, and the model and the narration win.
Nothing is read from an action that is a question, an intention ("try to", "want to",
"look for"), a plan or a condition (the reader's moods, and the action's own words); nor
when the narration refuses it — it places the player elsewhere, has someone else take or
hold the item, or says the way is blocked, locked or flooded, that the player can't,
fails or stops, that someone refuses — nor when the model's events or the narration's own
told changes already touched the same target. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from .document import PLAYER_ID, Document
from .reader import Claim, named, read_claims
from .rules import Rules
from .situation import Situation
from .told import ToldChange, event_targets

ACTION = "action"
"""`ToldChange.source` of a change read from the player's action."""
OWN_KINDS = frozenset({"moves", "takes", "gives", "drops"})

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
INTENT_WORDS = frozenset(
    "try tries trying attempt attempts want wants wish hope plan intend mean decide consider "
    "wonder think imagine pretend maybe perhaps if unless whether would could should might".split()
)
"""Words in the action that make it no deed done: an attempt, a wish, a plan, a doubt."""
INTENT_PHRASES = ("look for", "search for", "ask for", "going to", "about to", "how to")

REFUSAL_WORDS = frozenset(
    """can't cannot couldn't won't wouldn't unable fail fails failed failing stop stops
    stopped stopping refuse refuses refused refusing block blocks blocked blocking locked
    lock bolted barred bars flooded floods impassable prevent prevents prevented deny
    denies denied instead stay stays remain remains wait waits halt halts vain
    shut closed""".split()
)
"""Words by which a narration refuses or blocks what the player set out to do."""
REFUSAL_PHRASES = (
    "can not",
    "not let",
    "no way",
    "turn back",
    "turns back",
    "turn around",
    "turns around",
    "shake his head",
    "shakes his head",
    "shakes her head",
    "shakes their head",
    "holds you back",
    "hold you back",
    "pulls it away",
    "out of reach",
    "too heavy",
    "keeps it",
    "keep it",
    "your mind",
)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold().replace("’", "'"))


def _has(words: list[str], singles: frozenset[str], phrases: tuple[str, ...]) -> bool:
    if any(w in singles for w in words):
        return True
    joined = f" {' '.join(words)} "
    return any(f" {p} " in joined for p in phrases)


def intended_only(action: str) -> bool:
    """Whether the action only asks, tries, wishes, plans or supposes (never a deed)."""
    return "?" in action or _has(_words(action), INTENT_WORDS, INTENT_PHRASES)


def refused(narration: str) -> bool:
    """Whether the narration blocks or refuses (by its words) what the player set out to do."""
    return _has(_words(narration), REFUSAL_WORDS, REFUSAL_PHRASES)


def _contradicted(claim: Claim, narration: list[Claim]) -> bool:
    """Whether the narration's own asserted claims say otherwise: the player somewhere
    else, or someone else taking, holding or handling the item."""
    for said in narration:
        if claim.kind == "moves" and said.asserted and said.subject == PLAYER_ID:
            if said.kind == "acts" and said.where not in (None, "here", claim.object):
                return True
        if not said.asserted:
            continue
        if claim.kind == "moves":
            if said.subject == PLAYER_ID and said.kind in ("at", "moves", "leaves"):
                if said.object != claim.object:
                    return True
        elif said.object == claim.object and said.subject != PLAYER_ID:
            if said.kind in ("takes", "uses", "gives", "drops"):
                return True
    return False


def _free_here(claim: Claim, view: Situation) -> bool:
    """An item the player may take by their own word: nobody holds it and it lies here
    (or nowhere named), or someone here holds it; one they give or drop, they hold."""
    item = claim.object or ""
    holder = view.holder.get(item)
    if claim.kind == "takes":
        if holder is None:
            place = view.location.get(item)
            return place is None or (view.here is not None and view.within(place, view.here))
        return holder != PLAYER_ID and holder in view.present
    if holder != PLAYER_ID:
        return False
    return claim.kind == "drops" or (claim.other is not None and view.is_here(claim.other))


def acted_changes(
    action: str,
    narration: str,
    narration_claims: list[Claim],
    settled: Document,
    rules: Rules,
    touched: Set[str] = frozenset(),
    told: Sequence[ToldChange] = (),
) -> list[ToldChange]:
    """The player's own changes `action` states, over the state after the model's events
    (`settled`) and the narration's `told` changes; `touched`: the model's targets."""
    if not action.strip() or intended_only(action) or refused(action) or refused(narration):
        return []
    view = Situation.of(settled, rules)
    taken = set(touched)
    for change in told:
        view.apply(list(change.events))
        taken |= {t for e in change.events for t in event_targets(e)}
    own = [
        c
        for c in read_claims(action, settled, rules)
        if c.asserted and c.subject == PLAYER_ID and c.kind in OWN_KINDS
    ]
    if any(c.kind == "moves" for c in own):
        # one place named besides where the player stands, in the action and the
        # narration alike: "to the chapel and then the office", "you go to the cottage
        # instead" leave the move unread
        other = view.player_places()
        places = named(action, settled, rules, "place") - other
        seen = named(narration, settled, rules, "place") - other
        if len(places) != 1 or not seen <= places:
            own = [c for c in own if c.kind != "moves"]
    out: list[ToldChange] = []
    for claim in own:
        if _contradicted(claim, narration_claims):
            continue
        if claim.kind != "moves" and not _free_here(claim, view):
            continue
        events = view.change_events(claim, rules)
        if not events or any(event_targets(e) & taken for e in events):
            continue
        view.apply(events)
        taken |= {t for e in events for t in event_targets(e)}
        out.append(ToldChange(claim, tuple(events), ACTION))
    return out
