"""Moving through the story tree: undo, redo, retry, takes, edits, lines, Save Points.

The one seam the JSON API, the play page and `talekeeper play` all call. Every change
holds the adventure's writer lock (a second writer gets AdventureBusy → 409; one sent while
the last turn's state is updated waits for that: service/settling) and runs in
one transaction, so a refused or failed change leaves the story exactly as it was. Each
change that moves the head answers with the story as it now reads (`story_view`, which
carries `can_undo` / `can_redo`).

Retry and an edited action call the model, so they return the turn pipeline's event
stream (`play_turn(..., take_of=...)`); everything else is immediate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy import Integer, bindparam, func, select
from sqlalchemy.orm import Session, defer

from talekeeper.service import state_engine
from talekeeper.service.adventures import PageAnswer, Shown, get_turn, page_answer, story_view
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import TurnEvent, clean_narration, play_turn
from talekeeper.service.unit_of_work import AdventureNotFound, get_adventure, reading, writing
from talekeeper.store.models import Adventure, Node
from talekeeper.story import branches, savepoints, takes, tree
from talekeeper.story.actions import format_action
from talekeeper.views.story import (
    Line,
    LineDeleted,
    LineRenamed,
    Lines,
    SavePoint,
    SavePoints,
    Story,
    StoryDelta,
    Take,
    Takes,
)

EDITED_BY_PLAYER = "edited by the player"
MAX_NARRATION_CHARS = 20_000


class SavePointNotFound(AdventureNotFound):
    pass


def _move(
    tk: Talekeeper,
    adventure_id: int,
    move: Callable[[Session, Adventure], Any],
    shown: Shown | None = None,
) -> Story | PageAnswer:
    with writing(tk, adventure_id) as (session, adventure):
        move(session, adventure)
        return _answer(session, adventure, shown)


def _answer(session: Session, adventure: Adventure, shown: Shown | None) -> Story | PageAnswer:
    """The story as it now reads; for the play page (which says what it `shown`), what
    changed on it (`adventures.page_answer`)."""
    return (
        story_view(session, adventure) if shown is None else page_answer(session, adventure, shown)
    )


def for_api(answer: Story | PageAnswer) -> Story | StoryDelta:
    """A change's answer as the JSON API gives it: the story, or (for a client that said
    which turns it shows) what changed for them."""
    if isinstance(answer, Story):
        return answer
    if answer.change is not None:
        story, keep, removed = answer.change.story, answer.change.keep, answer.change.removed
        added, has_more = answer.change.added, False
    else:  # what it shows is gone: the story's last turns, drawn afresh
        assert answer.story is not None
        story, keep, removed = answer.story, None, []
        added, has_more = answer.story.turns_shown, answer.story.has_more
    assert story.head_id is not None
    return StoryDelta(
        head_id=story.head_id,
        turns=story.turns,
        can_undo=bool(story.can_undo),
        can_redo=bool(story.can_redo),
        can_retry=bool(story.can_retry),
        opening_editable=bool(story.opening_editable),
        line_name=story.line_name,
        keep=keep,
        removed=removed,
        added=added,
        has_more=has_more,
    )


# --- undo / redo / state ---------------------------------------------------------------


def undo(tk: Talekeeper, adventure_id: int, shown: Shown | None = None) -> Story | PageAnswer:
    return _move(tk, adventure_id, tree.undo, shown)


def redo(tk: Talekeeper, adventure_id: int, shown: Shown | None = None) -> Story | PageAnswer:
    return _move(tk, adventure_id, tree.redo, shown)


def current_state(tk: Talekeeper, adventure_id: int) -> dict[str, Any] | None:
    """The authoritative state: the head node's snapshot, by construction."""
    with reading(tk, adventure_id) as (session, adventure):
        return tree.head(session, adventure).state


# --- takes -----------------------------------------------------------------------------


def retry(
    tk: Talekeeper, adventure_id: int, node_id: int | None = None
) -> AsyncIterator[TurnEvent]:
    """A new take of the head's turn (or of turn `node_id`): same action, new narration.

    Refusals (no such turn, the opening) raise here; busy is refused by the pipeline.
    Only the turn's action and place are read, in one statement (its snapshot and its
    parent's are step 2 (load)'s to read).
    """
    with tk.db.session() as session:
        found = session.execute(_RETOLD, {"adventure": adventure_id, "node": node_id}).first()
        adventure = get_adventure(session, adventure_id)  # (held when found: no read)
        if found is None:  # no such turn (or the head is gone): refused in the usual words
            found = (
                tree.head(session, adventure)
                if node_id is None
                else get_turn(session, adventure, node_id)
            )
        tree.take_parent_id(found.parent_id)
    return play_turn(tk, adventure_id, found.action_kind, found.action_text, take_of=found.id)


# The turn a retry tells again (the head's, or the one named) with its adventure, whose
# plot and rules are not read: built once, as every statement a turn runs.
_RETOLD = (
    select(Adventure, Node.id, Node.parent_id, Node.action_kind, Node.action_text)
    .join(Node, Node.id == func.coalesce(bindparam("node", type_=Integer), Adventure.head_node_id))
    .where(Adventure.id == bindparam("adventure"), Node.adventure_id == bindparam("adventure"))
    .options(defer(Adventure.plot), defer(Adventure.rules))
)


def edit_action(
    tk: Talekeeper, adventure_id: int, node_id: int, kind: str, text: str
) -> AsyncIterator[TurnEvent]:
    """A new take of turn `node_id` answering a different action, narrated afresh."""
    return play_turn(tk, adventure_id, kind, text, take_of=node_id)


def edit_narration(
    tk: Talekeeper, adventure_id: int, node_id: int, narration: str, shown: Shown | None = None
) -> Story | PageAnswer:
    """A new take of turn `node_id` carrying the player's text; the original is kept.

    No model is called. The state is re-derived from the parent's snapshot plus what the
    edited text implies (`state_engine.rederive_for_edit`): the changes it tells outright,
    read again by the narration reader, and either its own state block or, without one,
    the edited take's changes that no words can tell (stats, switches, goals, moments),
    checked again.
    The opening is the exception: it has no parent to hold takes, so until the first turn
    is played its text is replaced (`tree.rewrite_opening`); after that it is refused.
    """
    narration = clean_narration(narration or "")
    if not narration:
        raise tree.TreeError(
            "The edited narration is empty. Write something, or keep the original."
        )
    if len(narration) > MAX_NARRATION_CHARS:
        raise tree.TreeError(
            f"The narration is too long (at most {MAX_NARRATION_CHARS} characters)."
        )
    guard = tk.generation().contradictions
    with writing(tk, adventure_id) as (session, adventure):
        original = get_turn(session, adventure, node_id)
        if original.parent_id is None:  # the opening: rewritten in place, before any turn
            tree.rewrite_opening(session, adventure, original, narration)
            return _answer(session, adventure, shown)
        parent = tree.parent_for_take(session, original)
        prose, state, proposal = state_engine.rederive_for_edit(
            parent, original, narration, state_engine.rules_of(adventure), guard
        )
        tree.append_child(
            session,
            adventure,
            parent,
            tree.NewTurn(
                action_kind=original.action_kind,
                action_text=original.action_text,
                narration=prose,
                state=state,
                proposal=proposal,
                model=EDITED_BY_PLAYER,
                take_of=original.id,
            ),
        )
        return _answer(session, adventure, shown)


def take_view(take: takes.Take, reading_id: int | None) -> Take:
    return Take(
        id=take.id,
        index=take.index,
        kind=take.action_kind,
        action=take.action_text,
        action_line=format_action(take.action_kind, take.action_text),
        narration=take.narration,
        model=take.model,
        created_at=take.created_at.isoformat() if take.created_at else None,
        has_future=take.has_future,
        on_line=take.id == reading_id,
    )


def list_takes(tk: Talekeeper, adventure_id: int, node_id: int | None = None) -> Takes:
    """The takes of the head's turn (or of turn `node_id`), and which one is being read."""
    with reading(tk, adventure_id) as (session, adventure):
        head = tree.head(session, adventure)
        node = head if node_id is None else get_turn(session, adventure, node_id)
        read = tree.ancestor_at(session, head, node.depth)
        rows = takes.takes_of(session, node)
        reading_id = read.id if read is not None and read.parent_id == node.parent_id else None
        return Takes(
            turn_id=node.id,
            depth=node.depth,
            count=len(rows),
            takes=[take_view(t, reading_id) for t in rows],
            head_id=head.id,
            can_undo=tree.can_undo(head),
            can_redo=tree.can_redo(head),
        )


def choose_take(
    tk: Talekeeper, adventure_id: int, node_id: int, shown: Shown | None = None
) -> Story | PageAnswer:
    """Read take `node_id`: the head moves onto it."""
    with writing(tk, adventure_id) as (session, adventure):
        takes.choose(session, adventure, get_turn(session, adventure, node_id))
        return _answer(session, adventure, shown)


def step_take(
    tk: Talekeeper, adventure_id: int, node_id: int, by: int, shown: Shown | None = None
) -> Story | PageAnswer:
    """Read the take `by` places after (negative: before) take `node_id`."""
    with writing(tk, adventure_id) as (session, adventure):
        takes.step(session, adventure, get_turn(session, adventure, node_id), by)
        return _answer(session, adventure, shown)


# --- lines -----------------------------------------------------------------------------


def line_view(line: branches.Line) -> Line:
    return Line(
        id=line.id,
        name=line.name,
        length=line.length,
        fork_id=line.fork_id,
        fork_depth=line.fork_depth,
        parent_line=line.parent_line,
        own_turns=line.own_turns,
        has_head=line.has_head,
        ends_at_head=line.ends_at_head,
        save_points=list(line.save_points),
        can_delete=line.own_turns > 0 and not line.has_head and not line.save_points,
        last_action_line=format_action(line.last_action_kind, line.last_action_text),
        last_narration=line.last_narration,
        created_at=line.created_at.isoformat() if line.created_at else None,
    )


def list_lines(tk: Talekeeper, adventure_id: int) -> Lines:
    with reading(tk, adventure_id) as (session, adventure):
        head = tree.head(session, adventure)
        return Lines(
            lines=[line_view(line) for line in branches.list_lines(session, adventure)],
            head_id=head.id,
            head_depth=head.depth,
            can_undo=tree.can_undo(head),
            can_redo=tree.can_redo(head),
        )


def rename_line(tk: Talekeeper, adventure_id: int, leaf_id: int, name: str | None) -> LineRenamed:
    with writing(tk, adventure_id) as (session, adventure):
        leaf = branches.rename(session, adventure, get_turn(session, adventure, leaf_id), name)
        return LineRenamed(id=leaf.id, name=leaf.branch_name)


def switch_line(
    tk: Talekeeper, adventure_id: int, leaf_id: int, answer: bool = True
) -> Story | None:
    """Read line `leaf_id`; answers with the story as it now reads (unless `answer` is
    False: the play page's panel draws the story again by itself)."""
    with writing(tk, adventure_id) as (session, adventure):
        branches.switch(session, adventure, get_turn(session, adventure, leaf_id))
        return story_view(session, adventure) if answer else None


def delete_turn(
    tk: Talekeeper, adventure_id: int, node_id: int, shown: Shown | None = None
) -> Story | PageAnswer:
    """Delete one turn with nothing after it (a take, or a line's last turn); the story after."""
    with writing(tk, adventure_id) as (session, adventure):
        branches.delete_turn(session, adventure, get_turn(session, adventure, node_id))
        return _answer(session, adventure, shown)


def delete_line(tk: Talekeeper, adventure_id: int, leaf_id: int) -> LineDeleted:
    with writing(tk, adventure_id) as (session, adventure):
        removed = branches.delete_line(session, adventure, get_turn(session, adventure, leaf_id))
        return LineDeleted(deleted_turns=removed)


# --- Save Points -----------------------------------------------------------------------


def save_point_view(sp: savepoints.SavePointInfo) -> SavePoint:
    return SavePoint(
        id=sp.id,
        name=sp.name,
        note=sp.note,
        node_id=sp.node_id,
        turn=sp.turn,
        on_line=sp.on_line,
        at_head=sp.at_head,
        action_line=format_action(sp.action_kind, sp.action_text),
        narration=sp.narration,
        created_at=sp.created_at.isoformat() if sp.created_at else None,
    )


def _save_point(session: Session, adventure: Adventure, save_point_id: int):
    sp = savepoints.find(session, adventure, save_point_id)
    if sp is None:
        raise SavePointNotFound(f"No Save Point {save_point_id} in this adventure.")
    return sp


def _one_save_point(session: Session, adventure: Adventure, save_point_id: int) -> SavePoint:
    for info in savepoints.list_save_points(session, adventure):
        if info.id == save_point_id:
            return save_point_view(info)
    raise SavePointNotFound(f"No Save Point {save_point_id} in this adventure.")


def list_save_points(tk: Talekeeper, adventure_id: int) -> SavePoints:
    with reading(tk, adventure_id) as (session, adventure):
        head = tree.head(session, adventure)
        return SavePoints(
            save_points=[
                save_point_view(sp) for sp in savepoints.list_save_points(session, adventure)
            ],
            head_id=head.id,
            can_undo=tree.can_undo(head),
            can_redo=tree.can_redo(head),
        )


def create_save_point(tk: Talekeeper, adventure_id: int, name: str, note: str = "") -> SavePoint:
    """Save the moment being read (after Undo, that earlier moment)."""
    with writing(tk, adventure_id) as (session, adventure):
        sp = savepoints.create(session, adventure, name, note)
        return _one_save_point(session, adventure, sp.id)


def rename_save_point(
    tk: Talekeeper,
    adventure_id: int,
    save_point_id: int,
    name: str | None = None,
    note: str | None = None,
) -> SavePoint:
    with writing(tk, adventure_id) as (session, adventure):
        savepoints.rename(_save_point(session, adventure, save_point_id), name, note)
        session.flush()
        return _one_save_point(session, adventure, save_point_id)


def delete_save_point(tk: Talekeeper, adventure_id: int, save_point_id: int) -> None:
    with writing(tk, adventure_id) as (session, adventure):
        savepoints.delete(session, _save_point(session, adventure, save_point_id))


def restore_save_point(
    tk: Talekeeper, adventure_id: int, save_point_id: int, answer: bool = True
) -> Story | None:
    """Go back to a Save Point; answers as `switch_line` does."""
    with writing(tk, adventure_id) as (session, adventure):
        savepoints.restore(session, adventure, _save_point(session, adventure, save_point_id))
        return story_view(session, adventure) if answer else None
