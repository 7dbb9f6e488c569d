"""The state at the moment being read, the player's corrections, and the audit trail.

One place for what the JSON API, the play page's state panel and `talekeeper play` all
offer. A correction passes the same validator as the model's proposals, is recorded as
the player's (it outranks the story) and becomes a step of the story of its own, so Undo
takes it back; if nothing would change, nothing is written and `CorrectionRefused` (422)
carries each event's verdict.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from talekeeper.errors import Conflict, Invalid, NotFound
from talekeeper.service import json_depth, state_engine
from talekeeper.service.adventures import get_turn, story_view
from talekeeper.service.names import Names
from talekeeper.service.state_engine import ProposalRecord
from talekeeper.service.unit_of_work import reading, writing
from talekeeper.state import Document
from talekeeper.state.canon import canon_log as build_canon_log
from talekeeper.state.document import PLAYER_ID
from talekeeper.story import tree
from talekeeper.views.state import (
    AuditEntry,
    CanonLog,
    Corrected,
    HeadState,
    StateAtHead,
)

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from talekeeper.service.app import Talekeeper
    from talekeeper.store.models import Adventure

MAX_EVENTS = 50


class NotTheLatest(Conflict):
    """A warning can be answered only while its turn is the one being read, at the end."""


class CorrectionRefused(Invalid):
    """Nothing would change; `errors` holds each event's verdict (the change chips)."""

    def __init__(self, outcomes: list[dict[str, Any]]):
        super().__init__("Nothing was changed.")
        self.errors = outcomes


MAX_JSON_CHARS = 20_000
"""The longest correction typed as JSON (a page's field or a terminal line)."""


class UnreadableCorrection(Invalid):
    """A correction typed as JSON could not be read as events; nothing was sent."""


def events_from_json(text: str) -> list[Any]:
    """A correction typed as JSON — a list of events, `{"events": [...]}` as the API takes
    it, or one event — as its list of events. The State panel's JSON field and the
    terminal's `/fix [...]` both read it here; the validator then judges each event."""
    if len(text) > MAX_JSON_CHARS:
        raise UnreadableCorrection(
            f"That is too long for a correction (at most {MAX_JSON_CHARS:,} characters)."
        )
    json_depth.check(text)  # TooDeep (Invalid) before the parser could recurse
    try:
        data = json_depth.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableCorrection(
            f"That is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})."
        ) from None
    if isinstance(data, dict) and "events" in data:
        data = data["events"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise UnreadableCorrection(
            'Write a list of events, e.g. [{"type": "set_flag", "flag": "…", "value": true}].'
        )
    return data


def state_at_head(tk: Talekeeper, adventure_id: int) -> HeadState:
    """The state at the moment being read, grouped for display, plus its raw document."""
    with reading(tk, adventure_id) as (session, adventure):
        head = tree.head(session, adventure)
        rules = state_engine.rules_of(adventure)
        document = state_engine.document_of(head.state, rules)
        at = StateAtHead.model_validate(
            {
                "head_id": head.id,
                "view": state_engine.state_view(document, rules),
                "document": document.to_json(),
                "changes": state_engine.changes_of(head),
            }
        )
        return HeadState(
            at=at,
            has_rules=bool(adventure.rules),
            names={e.id: e.name for e in document.entities.values()},
            scene_note=scene_note(document),
        )


def scene_note(document: Document) -> str | None:
    """Why the scene shown is not where the player is, when they disagree (the story moved
    the player and left the scene; a manual move takes the scene along, `scene_follows`)."""
    me = document.entities.get(PLAYER_ID)
    scene = document.scene.location
    if me is None or not me.location or not scene or me.location == scene:
        return None
    names = Names(document.to_json())
    return (
        f"You are at {names.mid(me.location)}, but the scene is still {names.mid(scene)}: "
        "the story has not moved there yet. Correct the scene (or move yourself) to make them agree."
    )


def canon_log(tk: Talekeeper, adventure_id: int) -> CanonLog:
    """The canon log at the head: what every model role reads — hidden stats only as their
    band word, no character's private knowledge."""
    with reading(tk, adventure_id) as (session, adventure):
        head = tree.head(session, adventure)
        rules = state_engine.rules_of(adventure)
        document = state_engine.document_of(head.state, rules)
        return CanonLog.model_validate(build_canon_log(document, rules, head.depth))


def correct(
    tk: Talekeeper, adventure_id: int, events: list[Any], answers: dict[str, int] | None = None
) -> Corrected:
    """Apply the player's correction below the head; the verdicts and the story after it.
    `answers`: the turn and warning it accepts (service/reading) — that turn must still be
    the head, or nothing is written."""
    with writing(tk, adventure_id) as (session, adventure):
        return _correct(session, adventure, events, answers)


def _correct(
    session: Session, adventure: Adventure, events: list[Any], answers: dict[str, int] | None
) -> Corrected:
    """`correct`'s work, inside the writer's transaction (a warning's acceptance reads the
    warning in the same one, under the same lock)."""
    if len(events) > MAX_EVENTS:
        raise Invalid(f"A correction holds at most {MAX_EVENTS} events.")
    head = tree.head(session, adventure)
    if answers is not None and head.id != answers["turn"]:
        raise NotTheLatest(
            "That warning is on a turn you have moved on from: go back to it first, or "
            "correct the state in the State panel."
        )
    rules = state_engine.rules_of(adventure)
    before = state_engine.document_of(head.state, rules)
    state, record, report = state_engine.correct(before, events, rules, head.depth + 1)
    follow = scene_follows(before, state_engine.document_of(state, rules), events)
    if follow is not None:  # the scene moves with the player (and who is here with it)
        events = [*events, follow]
        state, record, report = state_engine.correct(before, events, rules, head.depth + 1)
    if answers is not None:
        record["answers"] = answers
    outcomes = state_engine.outcome_views(report, state)
    if not any(_changes_something(o) for o in outcomes):
        raise CorrectionRefused(outcomes)
    tree.append_child(
        session,
        adventure,
        head,
        tree.NewTurn(
            action_kind="correction",
            action_text=state_engine.correction_summary(report, state),
            narration="",
            state=state,
            proposal=record,
            model="player",
        ),
    )
    return Corrected.model_validate(
        {"changes": outcomes, "story": story_view(session, adventure, limit=5)}
    )


def scene_follows(before: Document, after: Document, events: list[Any]) -> dict[str, Any] | None:
    """The scene a manual move implies: moving the player takes the scene to their new place,
    with the people there; moving someone into or out of the scene adds or removes them.
    None when the scene already agrees, or the correction sets the scene itself."""
    if any(isinstance(e, dict) and e.get("type") == "set_scene" for e in events):
        return None
    me_before, me_after = before.entities.get(PLAYER_ID), after.entities.get(PLAYER_ID)
    where = after.scene.location
    if (
        me_after is not None
        and me_after.location
        and me_after.location != (me_before.location if me_before else None)
    ):
        where = me_after.location
    if where is None:
        return None
    here = [
        eid
        for eid, entity in after.entities.items()
        if eid != PLAYER_ID and entity.location == where and entity.type not in ("place", "item")
    ]
    if where == after.scene.location:  # no one moved the scene: only who arrived or left
        moved = {
            e
            for e in after.entities
            if after.entities[e].location != getattr(before.entities.get(e), "location", None)
        }
        if not moved:
            return None
        kept = [p for p in after.scene.present if p not in moved or p in here]
        here = kept + [p for p in here if p in moved and p not in kept]
        if here == after.scene.present:
            return None
        return {"type": "set_scene", "present": here}
    return {"type": "set_scene", "location": where, "present": here}


class NoSuchWarning(NotFound):
    """The turn has no such warning."""


def accept(tk: Talekeeper, adventure_id: int, node_id: int, index: int) -> Corrected:
    """It's right — update the state: the events a turn's warning implies (what its
    narration said, made true: Tobin brought into the scene, the key given to you), as your
    own correction below the turn — the same validator, a step Undo takes back. The turn
    must be the one being read (NotTheLatest otherwise)."""
    with writing(tk, adventure_id) as (session, adventure):  # the lock first, like every writer
        found = state_engine.stored_contradictions(get_turn(session, adventure, node_id))
        if not 0 <= index < len(found) or not isinstance(found[index].get("events"), list):
            raise NoSuchWarning(f"This turn has no warning {index + 1} to accept.")
        answers = {"turn": node_id, "index": index}
        return _correct(session, adventure, found[index]["events"], answers)


def _changes_something(outcome: dict[str, Any]) -> bool:
    """Applied and not a no-op: setting a stat to the value it has is no correction."""
    if outcome["status"] not in ("applied", "limited"):
        return False
    return outcome.get("before") is None or outcome.get("before") != outcome.get("after")


def _audit_entry(node) -> AuditEntry:
    record = ProposalRecord.of(node.proposal)
    return AuditEntry.model_validate(
        {
            "turn_id": node.id,
            "depth": node.depth,
            "source": record.source,
            "raw": record.raw,
            "parse_error": record.parse_error,
            "events": record.events,
            "changes": state_engine.changes_of(node),
            "read": (record.read or {}).get("changes") or [],
            "contradictions": state_engine.stored_contradictions(node),
            "retold": record.retold,
        }
    )


def audit(tk: Talekeeper, adventure_id: int, limit: int = 50) -> list[AuditEntry]:
    """Every proposal on the line being read, newest first: raw text, parse errors, verdicts."""
    with reading(tk, adventure_id) as (session, adventure):
        nodes = tree.path_to(session, tree.head(session, adventure), limit=limit)
        return [_audit_entry(n) for n in reversed(nodes) if ProposalRecord.of(n.proposal).proposed]


def turn_proposal(tk: Talekeeper, adventure_id: int, node_id: int) -> AuditEntry:
    """What was proposed with one turn (raw text, parse error, events) and what became of it:
    its entry in the audit trail."""
    with reading(tk, adventure_id) as (session, adventure):
        return _audit_entry(get_turn(session, adventure, node_id))
