"""Views of the story: adventures, turns, takes, lines, Save Points, search, a turn's result.

Built by `service/adventures.py`, `service/tree_ops.py`, `service/search.py` and the turn
pipeline (`service/turns.py`, its `done` event).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from talekeeper.views.base import TIMESTAMP, View
from talekeeper.views.context import Assembly


class ChipWords(View):
    """A change as the player reads it (`service.chips`): names and words, no ids or paths."""

    kind: str = Field(
        description="applied, limited, unchanged, rejected, milestone or note (a CSS word)."
    )
    text: str = Field(description="What the chip says, e.g. `Maren's trust −2 → 1 (limited)`.")
    detail: str = Field(description="More, in words (a tooltip); may be empty.")


class Change(View):
    """One change chip: a proposed change to the state and what became of it."""

    status: str = Field(
        description="applied, limited, unchanged (at its limit) or rejected; `note` for what is "
        "no change (an edited take saying it kept the earlier take's changes)."
    )
    type: str | None = Field(
        description="The event's type, e.g. `adjust_stat`, `move`; `note_event` is a note."
    )
    target: str | None = Field(description="What it changed, e.g. `player.hp` or `gwen.status`.")
    before: Any = Field(description="The value before (null for a hidden stat).")
    after: Any = Field(description="The value after (null for a hidden stat).")
    reason: str = Field(description="What happened, in words.")
    correction: str | None = Field(
        description="For unchanged and rejected: what the model is told to do instead."
    )
    hidden: bool = Field(
        description="A hidden stat: the player sees its band word, not its number."
    )
    by: str = Field(
        description="Who proposed it: `story` (the model), `player` (a correction or an edit) "
        "or `narration` (read from the narration itself: it told the change outright)."
    )
    chip: ChipWords = Field(description="The change in the player's words.")


class Contradiction(View):
    """What a turn's narration (or an NPC's reply, or a companion's remark) said that the
    state at that moment does not — the contradiction guard's warning under the turn."""

    kind: str = Field(
        description="`presence` (someone absent, elsewhere or dead acting here), `place` (you "
        "placed where you are not, with no move), `item` (something used, handed over or put "
        "down by someone who does not hold it) or `status` (someone acting against a status "
        "that forbids it: asleep, bound, dead)."
    )
    subject: str = Field(description="Who or what it is about, by name.")
    says: str = Field(description="The sentence that says it.")
    state: str = Field(description="What the state says instead, in words.")
    line: str = Field(
        description="The warning as the page shows it, e.g. `Tobin is at Keeper's cottage, not here`."
    )


class TakePosition(View):
    """Where a turn sits among its takes (`‹ 2/3 ›`)."""

    index: int = Field(description="1-based.")
    count: int
    previous_id: int | None = Field(description="The take before this one, if any.")
    next_id: int | None = Field(description="The take after this one, if any.")


class UpdateStep(View):
    """A step that took the scenario's newer texts and rules into the story."""

    scenario: str = Field(description="The scenario's title.")
    took: list[str] = Field(description="What it took, in words.")
    findings: list[str] = Field(
        description="What of the story's state did not fit the new rules, and what became of it."
    )


class Remark(View):
    """A companion's aside on a turn, said in their own call."""

    by: str = Field(description="The companion's name.")
    text: str


class Turn(View):
    """One turn of the story: the action and its narration (depth 0 is the opening)."""

    id: int
    parent_id: int | None = Field(description="The turn before; null for the opening.")
    depth: int = Field(description="Turns after the opening.")
    kind: str = Field(
        description="The action's kind: do, say, story, continue, talk, correction, or empty for the opening."
    )
    action: str = Field(description="The action's text as typed.")
    action_line: str = Field(
        description="The action as the story shows it (`> You open the door.`)."
    )
    narration: str
    remark: Remark | None = Field(
        None,
        description="A companion's remark the narration ends with (its last paragraph), "
        "shown labelled as theirs; null when none spoke up.",
    )
    update: UpdateStep | None = Field(
        None, description="For an update from the scenario: what it took and found."
    )
    reasoning: str | None = Field(
        description="The model's reasoning, when it sent some apart from the story."
    )
    model: str | None = Field(
        description="Which model wrote it (or `player` / `edited by the player`)."
    )
    created_at: str | None = Field(description=TIMESTAMP)
    changes: list[Change] = Field(
        description="The state engine's verdicts on this turn's proposal."
    )
    contradictions: list[Contradiction] = Field(
        default_factory=list,
        description="What the narration said that the state does not (answered by a retry, "
        "or by `POST …/turns/{id}/contradictions/{n}/accept`).",
    )
    answers: bool = Field(
        False,
        description="A correction that accepted the warning of the turn before it (`accept`).",
    )
    pending: bool = Field(
        False,
        description="Its background step (the state pass, a companion's remark) is still "
        "running: its state is the one known when the narration was written, and its "
        "changes are yet to come.",
    )


class StoryTurn(Turn):
    """A turn as the story page shows it, with where it sits among its takes."""

    takes: TakePosition


class AdventureSummary(View):
    """An adventure as the list shows it."""

    id: int
    title: str
    scenario_id: str | None = Field(
        description="The scenario it was started from (null if that was deleted)."
    )
    scenario_title: str | None
    turns: int = Field(description="Turns played on the line being read.")
    last_played_at: str = Field(description=TIMESTAMP)
    created_at: str = Field(description=TIMESTAMP)


class Story(AdventureSummary):
    """The story as it reads at the head (or one page of it, paging back with `before`).

    A page before the first turn has no turns to show: its head and controls are null."""

    head_id: int | None = Field(None, description="The turn being read (the head).")
    can_undo: bool | None = Field(None, description="Undo has somewhere to go.")
    can_redo: bool | None = Field(None, description="Redo has somewhere to go.")
    can_retry: bool | None = Field(
        None, description="The head is a turn that can be narrated again."
    )
    opening_editable: bool | None = Field(
        None, description="No turn follows the opening yet, so its text may still be edited."
    )
    line_name: str | None = Field(
        None, description="The name of the line being read, if it has one."
    )
    has_more: bool = Field(description="Earlier turns exist before this page.")
    turns_shown: list[StoryTurn] = Field(description="This page of the story, oldest first.")
    persona: dict[str, Any] | None = Field(
        None, description="The player's character (name, pronouns, description)."
    )


class StoryDelta(View):
    """What an undo, a redo or a take step changed for a client that said which turns it
    shows (`shown_first` down to `shown_head`, as the play page does): the few turns that
    changed and where the story now stands, not the whole story. The client drops its turns
    after `keep` (their ids are `removed`) and shows `added` below it."""

    head_id: int = Field(description="The turn being read now (the head).")
    turns: int = Field(description="Turns played on the line being read.")
    can_undo: bool = Field(description="Undo has somewhere to go.")
    can_redo: bool = Field(description="Redo has somewhere to go.")
    can_retry: bool = Field(description="The head is a turn that can be narrated again.")
    opening_editable: bool = Field(
        description="No turn follows the opening yet, so its text may still be edited."
    )
    line_name: str | None = Field(description="The name of the line being read, if it has one.")
    keep: int | None = Field(
        description="The last shown turn that stays, everything above it too. Null: what "
        "the client shows is gone or far from the head now; it shows `added` alone."
    )
    removed: list[int] = Field(description="The shown turns below `keep` that are gone.")
    added: list[StoryTurn] = Field(
        description="The turns that now follow `keep` down to the head, oldest first (with "
        "`keep` null: the story's last turns)."
    )
    has_more: bool = Field(
        description="With `keep` null: earlier turns exist before the first of `added`."
    )


class LatestAdventure(AdventureSummary):
    """The adventure played last, with its last turn (the home page's "Continue")."""

    last: StoryTurn | None = Field(description="Its last turn; null before the first.")


class Voice(View):
    """Someone of the cast the player can Talk to."""

    id: str
    name: str


class Take(View):
    """One take of a turn: the same moment, narrated (or acted) another way."""

    id: int
    index: int = Field(description="1-based, oldest first.")
    kind: str
    action: str
    action_line: str
    narration: str
    model: str | None
    created_at: str | None = Field(description=TIMESTAMP)
    has_future: bool = Field(description="Something was written below this take.")
    on_line: bool = Field(description="This take is on the line being read.")


class Takes(View):
    """The takes of one turn, and which one is being read."""

    turn_id: int
    depth: int
    count: int
    takes: list[Take]
    head_id: int
    can_undo: bool
    can_redo: bool


class Line(View):
    """A line of the story, named by its last turn's id."""

    id: int = Field(description="Its last turn (it changes when the line grows).")
    name: str | None
    length: int = Field(description="Turns after the opening.")
    fork_id: int | None = Field(
        description="The turn it left its parent line after (null: the first line)."
    )
    fork_depth: int | None
    parent_line: int | None = Field(description="The line it left (null: the first line).")
    own_turns: int = Field(description="Turns only this line has: what deleting it removes.")
    has_head: bool = Field(description="The moment being read is on this line.")
    ends_at_head: bool
    save_points: list[str] = Field(description="Names of the Save Points on its own turns.")
    can_delete: bool
    last_action_line: str
    last_narration: str
    created_at: str | None = Field(description=TIMESTAMP)


class Lines(View):
    """Every line of the story, and where the head is."""

    lines: list[Line] = Field(description="Every line, oldest first.")
    head_id: int
    head_depth: int
    can_undo: bool
    can_redo: bool


class LinesWithBranches(Lines):
    """Deprecated `GET /branches`: the list under both keys."""

    branches: list[Line] = Field(description="Deprecated: the same as `lines`.")


class MapLine(Line):
    """A line as the story map lists it: in tree order, nested under the line it left."""

    level: int = Field(description="How deep it nests: 0 for the first line.")
    parent_name: str | None = Field(description="The name of the line it left, if named.")


class MapSave(View):
    """A Save Point marker on a line of the drawing."""

    name: str
    x: float


class MapRow(View):
    """One line of the story map's drawing: from where it parted (`x1`) to its end (`x2`)."""

    id: int
    label: str
    y: int
    x1: float
    x2: float
    joint_y: int | None = Field(description="The row of the line it left (null: none).")
    current: bool = Field(description="The line being read.")
    here_x: float | None = Field(description="Where the player is on it, if on it.")
    saves: list[MapSave]


class MapDrawing(View):
    """The story map's picture: coordinates only (the template draws them)."""

    rows: list[MapRow]
    width: int
    height: int


class StoryMap(Lines):
    """Every line in tree order, with the picture of them (the Lines panel)."""

    lines: list[MapLine] = Field(description="Every line, parent first, depth first.")
    longest: int = Field(description="The longest line's length (for drawing lengths).")
    drawing: MapDrawing


class LineRenamed(View):
    """A line's new name (null: the name was cleared)."""

    id: int
    name: str | None


class LineDeleted(View):
    """What deleting a line removed."""

    deleted_turns: int = Field(description="How many turns were deleted with the line.")


class SavePoint(View):
    """A named moment of the story; restoring it moves the head there."""

    id: int
    name: str
    note: str
    node_id: int = Field(description="The turn it saves.")
    turn: int = Field(description="Turns after the opening.")
    on_line: bool = Field(
        description="On the line being read (at or before the head, or ahead of it by Redo)."
    )
    at_head: bool
    action_line: str
    narration: str
    created_at: str | None = Field(description=TIMESTAMP)


class SavePoints(View):
    """Every Save Point, and where the head is."""

    save_points: list[SavePoint] = Field(description="Newest first.")
    head_id: int
    can_undo: bool
    can_redo: bool


class Excerpt(View):
    """The text around the first hit, split so a page can mark it."""

    before: str
    match: str
    after: str


class SearchMatch(View):
    """A turn on the line being read that holds the words."""

    id: int = Field(description="The turn.")
    turn: int = Field(description="Turns after the opening.")
    action_line: str
    excerpt: Excerpt | None


class SearchResult(View):
    """The turns on the line being read whose action or narration holds the words."""

    query: str = Field(description="The words searched for, spaces tidied.")
    matches: list[SearchMatch] = Field(description="Oldest first, at most 100.")
    more: bool = Field(description="There were more matches than shown.")
    title: str = Field(description="The adventure's title.")


class TurnResult(View):
    """A turn as written (the `done` event's data) or as settled after its background step
    (the `settled` event's data, and the body when no stream was asked for)."""

    turn: Turn = Field(description="The turn just written.")
    can_undo: bool
    can_redo: bool
    head_id: int
    turns: int = Field(description="Turns played on the line being read.")
    changes: list[Change] = Field(description="What the state engine made of the model's proposal.")
    prompt: Assembly = Field(
        description="What was sent, in brief (the turn's Insights have all of it)."
    )


class AdventureImported(View):
    """An adventure made from a bundle."""

    id: int
    title: str
    turns: int = Field(description="Turns on the line being read.")
    nodes: int = Field(description="Turns in the whole tree, every take and line.")
    notes: list[str] = Field(description="What was adjusted on the way in.")
