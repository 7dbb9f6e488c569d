"""What a turn tells its reader while it runs: a small union, one class per event kind.

The SSE stream (`event: <kind>`, `data: <payload() as JSON>`) and the terminal render the
same events, in this order: a `status` first when the action waits for the turn
before's state to be updated; `accepted` once, then `text` and `reasoning` pieces (and
`status`, a word on what the turn is doing; after a `retold`, the narration told again —
what was shown of it is cleared), then exactly one of `done` or `error`. A
`done` whose turn is `pending` (its state pass or a companion's remark still to come, in
the background: service/settling) is followed by a companion's `remark` when one speaks
up, and one `settled`, last. The README lists the same kinds (a test checks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_type_hints

from talekeeper.views.story import TurnResult


class _Event:
    def payload(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def data(self) -> dict[str, Any]:
        """The event's JSON body (the SSE `data:` line)."""
        return self.payload()


@dataclass(frozen=True)
class Accepted(_Event):
    """The action is taken (refusals come before it, as the request's own answer)."""

    action_line: str
    action: str
    action_text: str
    kind: Literal["accepted"] = "accepted"

    def payload(self) -> dict[str, Any]:
        return {"action_line": self.action_line, "kind": self.action, "text": self.action_text}


@dataclass(frozen=True)
class Text(_Event):
    """A piece of narration safe to show: the shown text only ever grows."""

    text: str
    kind: Literal["text"] = "text"

    def payload(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class Reasoning(_Event):
    """A piece of the model's thinking (shown apart, never stored as narration)."""

    text: str
    kind: Literal["reasoning"] = "reasoning"

    def payload(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class Retold(_Event):
    """The narration so far said what the state does not, and is told again once (the
    setting `contradictions: retry`): what was shown of it is to be cleared."""

    message: str
    lines: list[str] = field(default_factory=list)
    kind: Literal["retold"] = "retold"

    def payload(self) -> dict[str, Any]:
        return {"message": self.message, "contradictions": self.lines}


@dataclass(frozen=True)
class Status(_Event):
    """What the turn is doing while there is no text to show: first, when it waits for the
    turn before's state to be updated ("Updating the story's state… your action is played
    as soon as that is done")."""

    message: str
    kind: Literal["status"] = "status"

    def payload(self) -> dict[str, Any]:
        return {"message": self.message}


@dataclass(frozen=True)
class Remark(_Event):
    """A companion's remark on the turn, after the narration: shown as theirs, labelled
    with their name (it passed the same guards as the narration)."""

    by: str
    text: str
    kind: Literal["remark"] = "remark"

    def payload(self) -> dict[str, Any]:
        return {"by": self.by, "text": self.text}


@dataclass(frozen=True)
class Done(_Event):
    """The turn is written (the player may act again): the turn, its changes and the
    story's undo/redo state; `turn.pending`: a `settled` follows."""

    result: TurnResult
    kind: Literal["done"] = "done"

    def payload(self) -> dict[str, Any]:
        return self.result.model_dump(mode="json")


@dataclass(frozen=True)
class Settled(_Event):
    """The turn's background step is done: the turn as settled — its chips, and a
    companion's remark in its narration — in `done`'s shape."""

    result: TurnResult
    kind: Literal["settled"] = "settled"

    def payload(self) -> dict[str, Any]:
        return self.result.model_dump(mode="json")


@dataclass(frozen=True)
class Error(_Event):
    """The turn failed; nothing was written."""

    message: str
    kind: Literal["error"] = "error"

    def payload(self) -> dict[str, Any]:
        return {"message": self.message}


TurnEvent = Accepted | Text | Reasoning | Retold | Status | Remark | Done | Settled | Error
KINDS: tuple[str, ...] = tuple(
    get_args(get_type_hints(cls)["kind"])[0] for cls in get_args(TurnEvent)
)
"""Every event kind, in the order of the union (the README lists the same)."""
