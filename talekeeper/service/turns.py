"""A turn, top to bottom.

    1. take the adventure's writer lock (a second writer gets AdventureBusy → 409)
    2. check the action and load where the turn goes: the head — or, for a new take of an
       earlier turn (Retry, an edited action), that turn's parent; story, plot and state
       are read there
    3. choose the role that answers (the narrator, or the character addressed — see
       service/roles) and build its prompt within the context budget
    4. stream the narration, showing only what is safe to show
    5. extract the prose (the protocol never reaches the reader); a companion may add a
       remark (banter, its own call)
    6. commit the node and move the head, in one transaction

A generation that fails or is cancelled writes nothing: the story is exactly as it was
before the player acted, and the player can simply send the action again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from talekeeper.context import echo, insights
from talekeeper.errors import Unavailable, Upstream
from talekeeper.llm.errors import LLMError
from talekeeper.memory import bank
from talekeeper.memory.worker import worker_for
from talekeeper.service import roles, state_engine, state_updates
from talekeeper.service.adventures import (
    check_owner,
    get_adventure,
    get_turn,
    node_view,
    story_view,
)
from talekeeper.service.app import Talekeeper
from talekeeper.service.context import HeadView, PreparedContext, StateSections, prepare_context
from talekeeper.state import visible_prefix
from talekeeper.store.models import Node
from talekeeper.story import tree
from talekeeper.story.actions import normalise_action

HISTORY_WINDOW = 200  # turns read from the store; the budget decides how many are sent
INTERNAL_ERROR = (
    "talekeeper hit an internal error while writing this turn (it is in the server log). "
    "Nothing was saved; the story is as it was. Try again."
)
log = logging.getLogger(__name__)


@dataclass
class TurnEvent:
    """What the SSE stream and the terminal both render.

    kind: "accepted" (the action is taken; data has the formatted action line),
    "text" / "reasoning" (a streamed piece), "done" (data: the written turn and the
    story's new undo/redo state), "error" (data: message; nothing was written).
    """

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


async def play_turn(
    tk: Talekeeper, adventure_id: int, kind: str, text: str = "", *, take_of: int | None = None
) -> AsyncIterator[TurnEvent]:
    """Play an action below the head; with `take_of`, write a new take of that turn instead
    (a sibling below the same parent; the old take and its future stay)."""
    kind, text = normalise_action(kind, text)
    check_owner(tk, adventure_id)
    tk.locks.acquire(adventure_id)
    accepted = False
    try:
        with tk.db.session() as session:
            adventure = get_adventure(session, adventure_id)
            if take_of is None:
                below = tree.head(session, adventure)
            else:
                below = tree.parent_for_take(session, get_turn(session, adventure, take_of))
            below_id = below.id
            rules = state_engine.rules_of(adventure)
            before = state_engine.document_of(below.state, rules)
            turn_number = below.depth + 1
        role, text = roles.role_for_turn(kind, text, before, rules, [])
        prepared = await build_context(tk, adventure_id, kind, text, at=below_id, role=role)
        assembly, request = prepared.assembly, prepared.request
        provider = tk.provider()
        # Lines that only repeat the prompt's own notes are never shown or stored (echo.py).
        guard = echo.EchoGuard.for_sections(((s.name, s.text) for s in assembly.sections), before.entities)
        yield TurnEvent("accepted", data={"action_line": assembly.action_line, "kind": kind, "text": text})
        accepted = True

        raw, reasoning, shown = "", "", ""
        try:
            async for event in provider.stream(request):
                if event.kind == "text":
                    raw += event.text
                    visible = guard.shown(visible_prefix(raw)).lstrip()  # as stored: no leading blank
                    if len(visible) > len(shown):
                        yield TurnEvent("text", visible[len(shown):])
                        shown = visible
                elif event.kind == "reasoning":
                    reasoning += event.text
                    yield TurnEvent("reasoning", event.text)
        except LLMError as exc:
            yield TurnEvent("error", data={"message": str(exc)})
            return
        # Surrogate halves (a pair split across a server's JSON escapes) cannot be stored.
        raw, reasoning = unicode_safe(raw), unicode_safe(reasoning)

        state_error = None
        if current_state_mode(tk) == "structured":
            # A second short request under the proposal's schema (see state_updates).
            yield TurnEvent("status", data={"message": "Updating the story's state…"})
            prose, _ = guard.clean(state_engine.extract_prose(raw))
            try:
                answer = await provider.complete(
                    state_updates.structured_request(request, prose, before, rules, prepared.scan.in_scene_ids)
                )
                raw = prose + state_updates.as_block(answer)
            except LLMError as exc:
                state_error = f"The state update could not be made ({exc}); the state is unchanged."
        echoed: list[echo.Removed] = []

        def unechoed(prose: str) -> str:
            kept, removed = guard.clean(prose)
            echoed.extend(removed)
            return kept

        settled = state_engine.settle_reply(raw, before, rules, turn_number, unechoed)
        if state_error:
            settled.proposal["parse_error"] = state_error
        narration = clean_narration(settled.prose)
        if echoed:
            assembly.notes.append(echo.summary(echoed))
        if narration.startswith(shown) and len(narration) > len(shown):
            # the last line was held until it was whole (the echo guard decides on lines)
            yield TurnEvent("text", narration[len(shown) :])
            shown = narration
        if not narration:
            yield TurnEvent(
                "error",
                data={"message": "The model returned no narration. Nothing was saved; try again."},
            )
            return
        banter = None
        if role is roles.NARRATOR:  # 5b. a companion's remark, in its own call
            banter = await roles.banter_step(
                tk, adventure_id, below_id, assembly.action_line, narration,
                state_engine.document_of(settled.state, rules), rules, turn_number, prepared.scan.in_scene_ids,
            )
            if banter:
                narration += "\n\n" + banter[0]
                yield TurnEvent("text", "\n\n" + banter[0])
        with tk.db.session() as session:
            adventure = get_adventure(session, adventure_id)
            parent = session.get(Node, below_id)
            assert parent is not None
            node = tree.append_child(
                session,
                adventure,
                parent,
                tree.NewTurn(
                    action_kind=kind,
                    action_text=text,
                    narration=narration,
                    reasoning=reasoning,
                    state=settled.state,
                    proposal=settled.proposal,
                    model=tk.model_description(),
                ),
            )
            view = story_view(session, adventure, limit=1)
            done = {
                "turn": node_view(node),
                "can_undo": view["can_undo"],
                "can_redo": view["can_redo"],
                "head_id": view["head_id"],
                "turns": view["turns"],
                "changes": settled.outcomes,
                "prompt": assembly.as_dict(),
            }
            insights.store(session, adventure_id, node.id, assembly, request)
            extra = [(banter[1], roles.prompt_text(banter[2]))] if banter else []
            roles.record_calls(session, adventure_id, node.id, role, extra)
            bank.record_use(session, prepared.memory_ids, node.depth)
        worker_for(tk).schedule(adventure_id)  # memories and summary, after the turn
        yield TurnEvent("done", data=done)
    except Exception as exc:
        if not accepted:
            raise  # refusals before the action was taken answer the request itself
        # Once the stream has begun, a bug must still end it with a clear word, not silence;
        # the unit of work rolled back, so nothing was written. A database that stayed busy
        # is no bug: its own words say to try again.
        log.exception("turn on adventure %s failed after it was accepted", adventure_id)
        message = str(exc) if isinstance(exc, Unavailable) else INTERNAL_ERROR
        yield TurnEvent("error", data={"message": message})
    finally:
        tk.locks.release(adventure_id)


async def build_context(
    tk: Talekeeper, adventure_id: int, kind: str, text: str = "", at: int | None = None,
    role: roles.Role = roles.NARRATOR,
) -> PreparedContext:
    """Step 3, also the Insights dry run: the prompt for this action at the head (or `at`)."""
    with tk.db.session() as session:
        rules = state_engine.rules_of(get_adventure(session, adventure_id))

    mode = current_state_mode(tk)

    def render_state(head: HeadView, in_scene_ids: list[str]) -> StateSections:
        document = state_engine.document_of(head.state, rules)
        sections = state_engine.prompt_sections(rules, document, head.story_proposal, in_scene_ids, mode)
        return StateSections(**sections)

    return await prepare_context(
        tk, adventure_id, kind, text, render_state=render_state, at=at, adjust_plot=role.adjust_plot
    )


async def warm_next_turn(tk: Talekeeper, adventure_id: int) -> None:
    """Read the next turn's prompt into the embedded model's cache ahead of time.

    The prompt for any action shares everything but its last lines with a Continue, so
    evaluating that (one token, discarded) means the player's turn starts warm — the first
    turn after a restart would otherwise wait for the whole prompt to be read (~25 s on two
    cores). Only for the embedded model: a server of the player's own is left alone.
    """
    provider = tk.provider()
    if provider.id != "embedded" or tk.locks.is_busy(adventure_id):
        return
    try:
        prepared = await build_context(tk, adventure_id, "continue")
        await provider.complete(prepared.request.model_copy(update={"max_tokens": 1}))
    except Exception:  # noqa: BLE001 - a warm-up is a courtesy; the turn itself reports errors
        log.info("warming the next turn of adventure %s failed", adventure_id, exc_info=True)


def current_state_mode(tk: Talekeeper) -> state_updates.StateMode:
    return state_updates.state_mode(tk.generation().state_updates, tk.provider())


def clean_narration(raw: str) -> str:
    return raw.strip()


def unicode_safe(text: str) -> str:
    """Join surrogate pairs that arrived as separate halves; a lone half becomes U+FFFD.
    NUL characters are dropped: never prose, and PostgreSQL text cannot hold them."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").replace("\x00", "")


async def collect_turn(tk: Talekeeper, adventure_id: int, kind: str, text: str = "") -> dict[str, Any]:
    """Play a turn without streaming; returns the finished turn or raises TurnFailed."""
    async for event in play_turn(tk, adventure_id, kind, text):
        if event.kind == "done":
            return event.data
        if event.kind == "error":
            raise TurnFailed(event.data["message"])
    raise TurnFailed("The turn ended without a result.")


class TurnFailed(Upstream):
    pass
