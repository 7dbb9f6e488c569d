"""Apply a proposal: validate each event in order, carry out what passed, report all.

Events are taken one at a time against the document *as it stands after the ones before*,
so a proposal can create an entity and then give it an item. A rejected event changes
nothing and the rest still apply. The input document is never touched: the work happens
on a deep copy, which is what the caller stores as the next node's snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from .document import (
    RECENT_EVENTS_WINDOW,
    Document,
    Fact,
    Moment,
    Objective,
    RecentEvent,
    Relationship,
    StatValue,
    Thread,
)
from .report import Outcome, Report
from .rules import Rules
from .validate import open_envelope, validate_event
from .verdict import Context, Heard, Verdict


def apply_proposal(
    document: Document,
    proposal: Any,
    rules: Rules,
    turn: int,
    authority: Literal["story", "player"] = "story",
    heard: Callable[[], Heard] | None = None,
) -> tuple[Document, Report]:
    """Validate and apply `proposal` (parsed JSON, any shape) at `turn`.

    None means the reply carried no state block: the document comes back unchanged with
    an empty report.
    `authority` is "story" for the model's proposals and "player" for manual
    corrections: a player's events pass the same validator, are recorded as the
    player's, outrank the story's facts, and are not paced by per-turn caps or
    cooldowns (see `stats.py`). Apply a turn's story proposal in one call: the per-turn
    cap adds up the moves within a call. `heard`: reads what the turn's narration has
    people do (`telling.heard`), so a status the narration contradicts is refused.
    """
    if authority not in ("story", "player"):
        raise ValueError(f"authority must be 'story' or 'player', not {authority!r}")
    work = document.model_copy(deep=True)
    if proposal is None:  # no state block: nothing changed, nothing to report
        return work, Report(turn=turn, authority=authority)
    ctx = Context(rules=rules, turn=turn, authority=authority, hear=heard)
    envelope = open_envelope(proposal)
    outcomes = [_outcome(None, None, note) for note in envelope.notes]
    for index, event in enumerate(envelope.events):
        verdict = validate_event(work, event, ctx)
        if verdict.change is not None:
            execute(work, verdict.change, ctx)
        kind = (
            event.get("type")
            if isinstance(event, dict) and isinstance(event.get("type"), str)
            else None
        )
        outcomes.append(_outcome(index, kind, verdict, event))
    return work, Report(turn=turn, authority=authority, outcomes=tuple(outcomes))


def _outcome(index: int | None, kind: str | None, verdict: Verdict, event: Any = None) -> Outcome:
    return Outcome(
        index=index,
        type=kind,
        status=verdict.status,
        layer=verdict.layer,
        target=verdict.target,
        before=verdict.before,
        after=verdict.after,
        reason=verdict.reason,
        correction=verdict.correction,
        hidden=verdict.hidden,
        event=event,
    )


def execute(doc: Document, change: dict[str, Any], ctx: Context) -> None:
    """Carry out one validated change on the working copy. Never refuses."""
    op, turn = change["op"], ctx.turn
    if op == "create_entity":
        doc.entities[change["entity"].id] = change["entity"]
    elif op == "set_status":
        doc.entities[change["id"]].status = change["status"]
    elif op == "set_attribute":
        attributes = doc.entities[change["id"]].attributes
        if change["value"] is None:
            attributes.pop(change["key"], None)
        else:
            attributes[change["key"]] = change["value"]
    elif op == "set_conditions":
        doc.entities[change["id"]].conditions = list(change["conditions"])
    elif op == "set_location":
        doc.entities[change["id"]].location = change["location"]
    elif op == "set_possession":
        doc.possessions[change["item"]] = change["holder"]
    elif op == "clear_possession":
        doc.possessions.pop(change["item"], None)
    elif op == "add_fact":
        doc.facts.append(
            Fact(
                id=change["id"],
                subject=change["subject"],
                predicate=change["predicate"],
                object=change["object"],
                value=change["value"],
                authority=ctx.authority,
                turn=turn,
            )
        )
    elif op == "withdraw_fact":
        fact = next(f for f in doc.facts if f.id == change["id"])
        fact.status, fact.withdrawn_turn, fact.withdrawn_by = "withdrawn", turn, ctx.authority
        fact.withdrawn_reason = change["reason"]
    elif op == "add_relationship":
        doc.relationships.append(
            Relationship(
                id=change["id"],
                source=change["source"],
                kind=change["kind"],
                target=change["target"],
                note=change["note"],
                authority=ctx.authority,
                turn=turn,
            )
        )
    elif op == "end_relationship":
        rel = next(r for r in doc.relationships if r.id == change["id"])
        rel.status, rel.ended_turn = "ended", turn
    elif op == "open_thread":
        objectives = [
            Objective(id=f"o{i}", text=text) for i, text in enumerate(change["objectives"], 1)
        ]
        doc.threads[change["id"]] = Thread(
            id=change["id"],
            title=change["title"],
            kind=change["kind"],
            objectives=objectives,
            opened=turn,
        )
    elif op == "complete_objective":
        objective = next(
            o for o in doc.threads[change["thread"]].objectives if o.id == change["objective"]
        )
        objective.done, objective.turn = True, turn
    elif op == "resolve_thread":
        thread = doc.threads[change["id"]]
        thread.status, thread.closed, thread.note = change["outcome"], turn, change["note"]
    elif op == "set_scene":
        doc.scene = type(doc.scene)(**change["scene"])
    elif op == "stat":
        _set_stat(doc, change, ctx)
    elif op == "set_flag":
        doc.flags[change["name"]] = change["value"]
    elif op == "reach_milestone":
        doc.milestones[change["id"]] = turn
    elif op == "note_event":
        doc.recent_events = [*doc.recent_events, RecentEvent(turn=turn, text=change["text"])][
            -RECENT_EVENTS_WINDOW:
        ]
    elif op == "record_moment":
        doc.moments.append(
            Moment(id=change["id"], text=change["text"], weight=change["weight"], turn=turn)
        )
    else:  # pragma: no cover - validate.CHECKS and this function are kept in step by tests
        raise AssertionError(f"no executor for {op}")


def _set_stat(doc: Document, change: dict[str, Any], ctx: Context) -> None:
    owner, name = change["owner"], change["name"]
    block = (
        doc.stats.npcs.setdefault(change["npc"], {})
        if owner == "npc"
        else getattr(doc.stats, owner)
    )
    previous = block.get(name)
    changed = previous.changed if previous else None
    if ctx.paced:
        changed = ctx.turn
        path = f"npc.{change['npc']}.{name}" if owner == "npc" else f"{owner}.{name}"
        if isinstance(change["moved"], int | float):
            ctx.moved[path] = ctx.moved.get(path, 0) + change["moved"]
    block[name] = StatValue(value=change["value"], changed=changed)
