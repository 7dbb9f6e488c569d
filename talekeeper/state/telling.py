"""A narration read against the state: its claims, the changes it told, its clashes.

One call for a turn (and for an edited narration): the reader's claims
(`reader.py`), the changes they state outright validated and applied after the model's
own (`told.py`, through `apply_proposal` like any proposal) — and the player's own from
their action where the narration leaves them unsaid (`acted.py`) — and the contradictions
with the state at each point (`contradictions.py`). Pure: documents in, documents and
reports out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .acted import acted_changes
from .apply import apply_proposal
from .contradictions import Contradiction, capacity, find_contradictions, short
from .document import Document
from .reader import Claim, read_claims
from .report import Report
from .rules import Rules
from .told import ToldChange, told_changes, touched_targets
from .verdict import Heard


@dataclass(frozen=True)
class Telling:
    claims: tuple[Claim, ...] = ()
    told: tuple[ToldChange, ...] = ()
    report: Report | None = None
    """The validator's verdicts on the told changes' events (None: none were told)."""
    after: Document | None = None
    """The state after the model's events and the told changes."""
    contradictions: tuple[Contradiction, ...] = field(default_factory=tuple)

    def record(self) -> dict[str, Any] | None:
        """The audit record of what was read from the narration (None when nothing was)."""
        if not self.told:
            return None
        return {
            "changes": [t.to_json() for t in self.told],
            "events": [e for t in self.told for e in t.events],
            "report": self.report.to_json() if self.report else None,
        }


PLAIN_DEEDS = ("speak", "use", "move")
"""The deeds `heard` counts: speaking, handling things, going somewhere — not a bare
"acts" ("Maren collapses", "looks dead", "goes limp"), which the dying may do."""


def heard(text: str, document: Document, rules: Rules) -> Heard:
    """What a narration has people do, and the states it tells outright (asserted claims
    only), for the validator to hold a model's status against (`verdict.Heard`)."""
    does: dict[str, dict[str, str]] = {}
    tells: dict[str, set[str]] = {}
    for claim in read_claims(text, document, rules):
        if not claim.asserted:
            continue
        if claim.kind == "status":
            label = rules.normal_status() if claim.object == "awake" else claim.object or ""
            tells.setdefault(claim.subject, set()).add(label.casefold())
            continue
        can = capacity(claim)
        if can in PLAIN_DEEDS and (claim.kind != "acts" or can != "move"):
            does.setdefault(claim.subject, {}).setdefault(can, short(claim.sentence))
    return Heard(does, {who: frozenset(labels) for who, labels in tells.items()})


def read_telling(
    text: str,
    start: Document,
    settled: Document,
    rules: Rules,
    turn: int,
    model_report: Report | None = None,
    *,
    changes: bool = True,
    guard: bool = True,
    action: str = "",
) -> Telling:
    """Read `text` (a narration, an NPC's reply, a companion's remark). `start` is the
    state at the turn's start; `settled` the state after the model's accepted events
    (`model_report` their verdicts, so a told change never overrides one of them).
    `action`: the player's Do action as the page stores it, read for the player's own
    changes the narration leaves unsaid (`acted.py`), after the narration's."""
    claims = read_claims(text, settled, rules)
    told: list[ToldChange] = []
    if changes:
        model = touched_targets(model_report)
        told = told_changes(claims, settled, rules, model)
        told += acted_changes(action, text, claims, settled, rules, model, told)
    after, report = settled, None
    accepted = told
    if told:
        after, report = apply_proposal(
            settled, {"events": [e for t in told for e in t.events]}, rules, turn
        )
        statuses = [o.status for o in report.outcomes if o.index is not None]
        accepted, at = [], 0
        for change in told:
            mine = statuses[at : at + len(change.events)]
            at += len(change.events)
            if all(s == "applied" for s in mine):
                accepted.append(change)
    clashes = find_contradictions(claims, start, after, rules, accepted) if guard else []
    return Telling(tuple(claims), tuple(told), report, after, tuple(clashes))
