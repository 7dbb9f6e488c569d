"""The JSON API for moving through the story: takes, retry, edits, lines, Save Points.

Undo and redo live beside the turns in `api.py`. Every change here answers 409 while
another change to the same adventure is in flight, and changes nothing when refused.
Changes that move the story answer with the story as it now reads, `can_undo` and
`can_redo` included.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from talekeeper.service import tree_ops
from talekeeper.service.adventures import Shown
from talekeeper.service.app import Talekeeper
from talekeeper.story import branches, savepoints
from talekeeper.story.actions import RetoldKind
from talekeeper.views import story as views
from talekeeper.web.deps import get_tk, shown_turns
from talekeeper.web.errors import ERRORS
from talekeeper.web.streaming import TURN_STREAM, turn_response

router = APIRouter(prefix="/api/adventures/{adventure_id}", tags=["story tree"], responses=ERRORS)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetryRequest(Strict):
    node_id: int | None = Field(
        None, description="The turn to retry; by default the one being read."
    )


class EditRequest(Strict):
    """Either `narration` (your text becomes a new take; no model call) or `kind` and
    `text` (a new take answering a different action, narrated afresh)."""

    narration: str | None = Field(None, max_length=tree_ops.MAX_NARRATION_CHARS)
    kind: RetoldKind | None = None
    text: str = Field("", max_length=4000)

    @model_validator(mode="after")
    def one_edit(self) -> EditRequest:
        if (self.narration is None) == (self.kind is None):
            raise ValueError("Send either `narration`, or `kind` and `text` for a new action.")
        if self.narration is not None and not self.narration.strip():
            raise ValueError(
                "The edited narration is empty. Write something, or keep the original."
            )
        return self


class StepRequest(Strict):
    by: int = Field(1, ge=-100, le=100, description="1: the next take; -1: the previous one.")


class LineUpdate(Strict):
    name: str | None = Field(
        None, max_length=branches.MAX_NAME, description="Blank or null clears it."
    )


def _named(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("A Save Point needs a name.")
    return value.strip() if value is not None else None


class SavePointCreate(Strict):
    name: str = Field(max_length=savepoints.MAX_NAME)
    note: str = Field("", max_length=savepoints.MAX_NOTE)

    _check_name = field_validator("name")(_named)


class SavePointUpdate(Strict):
    name: str | None = Field(None, max_length=savepoints.MAX_NAME)
    note: str | None = Field(None, max_length=savepoints.MAX_NOTE)

    _check_name = field_validator("name")(_named)


# --- takes, retry, edits -----------------------------------------------------------------


@router.get("/takes", response_model=views.Takes)
def head_takes(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.Takes:
    """The takes of the turn being read (`‹ 2/3 ›`), and which one is on the line."""
    return tree_ops.list_takes(tk, adventure_id)


@router.get("/turns/{node_id}/takes", response_model=views.Takes)
def turn_takes(adventure_id: int, node_id: int, tk: Talekeeper = Depends(get_tk)) -> views.Takes:
    return tree_ops.list_takes(tk, adventure_id, node_id)


@router.post("/turns/{node_id}/choose", response_model=views.Story | views.StoryDelta)
def choose_take(
    adventure_id: int,
    node_id: int,
    shown: Shown | None = Depends(shown_turns),
    tk: Talekeeper = Depends(get_tk),
) -> views.Story | views.StoryDelta:
    """Read this take: the story (and its state) is now this take's. Answered with the
    story, or (given the turns you show) what changed for them."""
    return tree_ops.for_api(tree_ops.choose_take(tk, adventure_id, node_id, shown))


@router.post("/turns/{node_id}/step", response_model=views.Story | views.StoryDelta)
def step_take(
    adventure_id: int,
    node_id: int,
    body: StepRequest,
    shown: Shown | None = Depends(shown_turns),
    tk: Talekeeper = Depends(get_tk),
) -> views.Story | views.StoryDelta:
    """Read the next (or previous) take of this turn, answered as choose is."""
    return tree_ops.for_api(tree_ops.step_take(tk, adventure_id, node_id, body.by, shown))


@router.post("/retry", response_model=views.TurnResult, responses=TURN_STREAM)
async def retry(
    adventure_id: int,
    request: Request,
    body: RetryRequest | None = None,
    tk: Talekeeper = Depends(get_tk),
):
    """A new take of the turn being read: the same action, narrated again. The old take
    stays (step back to it with the takes). Streams like `POST /turns`."""
    events = tree_ops.retry(tk, adventure_id, body.node_id if body else None)
    return await turn_response(events, request)


@router.post(
    "/turns/{node_id}/edit", response_model=views.Story | views.TurnResult, responses=TURN_STREAM
)
async def edit_turn(
    adventure_id: int,
    node_id: int,
    body: EditRequest,
    request: Request,
    tk: Talekeeper = Depends(get_tk),
):
    """Edit a turn. The original and everything after it are kept; the edit is a new take."""
    if body.narration is not None:
        return tree_ops.edit_narration(tk, adventure_id, node_id, body.narration)
    assert body.kind is not None
    events = tree_ops.edit_action(tk, adventure_id, node_id, body.kind, body.text)
    return await turn_response(events, request)


# --- lines ---------------------------------------------------------------------------------


@router.get("/lines", response_model=views.Lines)
def list_lines(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.Lines:
    """Every line of the story (named by its last turn's id), oldest first."""
    return tree_ops.list_lines(tk, adventure_id)


@router.patch("/lines/{leaf_id}", response_model=views.LineRenamed)
def rename_line(
    adventure_id: int, leaf_id: int, body: LineUpdate, tk: Talekeeper = Depends(get_tk)
) -> views.LineRenamed:
    return tree_ops.rename_line(tk, adventure_id, leaf_id, body.name)


@router.post("/lines/{leaf_id}/switch", response_model=views.Story)
def switch_line(adventure_id: int, leaf_id: int, tk: Talekeeper = Depends(get_tk)) -> views.Story:
    """Read this line from its last turn."""
    return tree_ops.switch_line(tk, adventure_id, leaf_id)


@router.delete("/turns/{node_id}", response_model=views.Story)
def delete_turn(adventure_id: int, node_id: int, tk: Talekeeper = Depends(get_tk)) -> views.Story:
    """Delete one turn that nothing follows: a take, or the last turn of a line. Read there,
    the story moves to another take of it, else back one turn. Refused (409) for the
    opening, a turn the story goes on after, and a turn a Save Point keeps."""
    return tree_ops.delete_turn(tk, adventure_id, node_id)


@router.delete("/lines/{leaf_id}", response_model=views.LineDeleted)
def delete_line(
    adventure_id: int, leaf_id: int, tk: Talekeeper = Depends(get_tk)
) -> views.LineDeleted:
    """Delete the turns only this line has. Refused (409) while it holds the moment being
    read or a Save Point."""
    return tree_ops.delete_line(tk, adventure_id, leaf_id)


# The first release called a line a "branch"; these aliases keep its clients working
# (marked deprecated in /docs). `GET /branches` answers with the list under both keys.


@router.get("/branches", deprecated=True, response_model=views.LinesWithBranches)
def list_branches(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.LinesWithBranches:
    """Deprecated: `GET /lines`."""
    listing = tree_ops.list_lines(tk, adventure_id)
    return views.LinesWithBranches(**dict(listing), branches=listing.lines)


for path, endpoint, method, answer in (
    ("/branches/{leaf_id}", rename_line, "PATCH", views.LineRenamed),
    ("/branches/{leaf_id}/switch", switch_line, "POST", views.Story),
    ("/branches/{leaf_id}", delete_line, "DELETE", views.LineDeleted),
):
    router.add_api_route(
        path,
        endpoint,
        methods=[method],
        deprecated=True,
        name=endpoint.__name__.replace("_line", "_branch"),
        response_model=answer,
    )


# --- Save Points -----------------------------------------------------------------------------


@router.get("/save-points", response_model=views.SavePoints)
def list_save_points(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.SavePoints:
    """Newest first; `on_line` says whether each is on the line being read."""
    return tree_ops.list_save_points(tk, adventure_id)


@router.post("/save-points", status_code=201, response_model=views.SavePoint)
def create_save_point(
    adventure_id: int, body: SavePointCreate, tk: Talekeeper = Depends(get_tk)
) -> views.SavePoint:
    """Save the moment being read (after Undo, that earlier moment)."""
    return tree_ops.create_save_point(tk, adventure_id, body.name, body.note)


@router.patch("/save-points/{save_point_id}", response_model=views.SavePoint)
def update_save_point(
    adventure_id: int, save_point_id: int, body: SavePointUpdate, tk: Talekeeper = Depends(get_tk)
) -> views.SavePoint:
    """Rename it or change its note; the moment it saves never moves."""
    return tree_ops.rename_save_point(tk, adventure_id, save_point_id, body.name, body.note)


@router.delete("/save-points/{save_point_id}", status_code=204)
def delete_save_point(
    adventure_id: int, save_point_id: int, tk: Talekeeper = Depends(get_tk)
) -> None:
    """Forget the Save Point; none of the story is deleted."""
    tree_ops.delete_save_point(tk, adventure_id, save_point_id)


@router.post("/save-points/{save_point_id}/restore", response_model=views.Story)
def restore_save_point(
    adventure_id: int, save_point_id: int, tk: Talekeeper = Depends(get_tk)
) -> views.Story:
    """Go back to the saved moment. Nothing is deleted; what came after stays reachable."""
    return tree_ops.restore_save_point(tk, adventure_id, save_point_id)
