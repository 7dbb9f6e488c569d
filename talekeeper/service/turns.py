"""A turn, top to bottom — each step a named call below, numbered and named as here
(`# N. name` where `play_turn` runs it, "step N (name)" wherever code refers to it; a test
holds every reference to this list).

    1. lock: take the adventure's writer lock; while the turn before's background step
       (step 7 (later)) still holds it, wait for it — any other writer gets
       AdventureBusy → 409
    2. load: check the action and read, in one transaction, everything the turn is built
       on — where it goes (the head, or for a new take of an earlier turn its parent), the
       rules and state there, who answers (the narrator, or the character addressed — see
       service/roles), the story, plot, settings and memories — into one frozen
       `TurnStart` passed down; nothing below reads the database again until step 6 (commit)
    3. build: the answering role's prompt within the context budget (service/context,
       the one builder every call of the turn uses); no database
    4. stream: the narration, showing only what is safe to show: the protocol is held
       back, and so is every line that repeats the prompt (context/echo); a reply that
       says a sentence twice is stopped there (context/repeats)
    5. settle: what is known when the narration ends — the prose as stored, and the
       state after it: the reply's own block (inline mode) validated and applied to the
       start's state (service/state_engine), then the narration read against the state —
       the changes it tells outright applied after the model's, its clashes kept for the
       warning under the turn (state_engine.read_into); in structured mode the prose and
       what it tells alone, the model's proposal to come in step 7 (later). With the
       setting `contradictions: retry`, a narration that clashes is told again once, from
       step 4 (stream)
    6. commit: the node, the head, Insights and the memories used — one transaction; a
       turn with more to come is marked pending (`adventures.pending_turn_id`)
    7. later: when the turn has more to come — the structured state pass, a companion's
       remark — the writer lock passes to a background step (service/settling) that runs
       on while the player reads and acts: the state pass (a second short request that
       extends the narrator's) validated and applied to the start's state and the
       narration read again after it, the remark (its own call, built from the same
       start, guarded too), then the same node settled in a second short transaction, the
       lock released, and `settled` with the turn's chips
    8. after: schedule the memory bank's work for after the turn — for a pending one once
       step 7 (later) has settled it — (and, when it rewrote the summary, read the next
       prompt into the embedded model's cache)
    9. done: `done` — the turn is written and the player may act again

A generation that fails or is cancelled writes nothing: the story is exactly as it was
before the player acted, and the player can simply send the action again. Once `done` is
sent the turn is kept: a background step that fails, or never ends (the process stopped),
leaves the state as step 5 (settle) wrote it, with a note under the turn saying so. The
events the reader sees are `service/turn_events.TurnEvent`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, defer

from talekeeper.context import echo, insights
from talekeeper.context.prose_guard import ProseGuard
from talekeeper.errors import TalekeeperError, Unavailable, Upstream
from talekeeper.llm.base import Provider
from talekeeper.llm.errors import LLMError
from talekeeper.llm.settings import ModelSettings
from talekeeper.memory import bank
from talekeeper.memory.worker import worker_for
from talekeeper.service import guards, roles, settling, state_engine, state_updates
from talekeeper.service.adventures import get_turn, node_view
from talekeeper.service.app import Talekeeper
from talekeeper.service.context import (
    Call,
    ContextStart,
    PreparedContext,
    build,
    load,
    prompt_text,
    turn_setting_keys,
)
from talekeeper.service.locks import AdventureBusy
from talekeeper.service.turn_events import (
    Accepted,
    Done,
    Error,
    Reasoning,
    Remark,
    Retold,
    Settled,
    Status,
    Text,
    TurnEvent,
)
from talekeeper.service.unit_of_work import check_owner, get_adventure
from talekeeper.state import Document, Extraction, Rules, VisibleStream, extract_reply
from talekeeper.store import owner, setting_rows
from talekeeper.store.models import Adventure, Node
from talekeeper.story import tree
from talekeeper.story.actions import normalise_action
from talekeeper.views.story import TurnResult

__all__ = [
    "TurnEvent",
    "TurnFailed",
    "build_context",
    "collect_turn",
    "finished_turn",
    "play_turn",
    "warm_next_turn",
]

HISTORY_WINDOW = 200  # turns read from the store; the budget decides how many are sent
INTERNAL_ERROR = (
    "talekeeper hit an internal error while writing this turn (it is in the server log). "
    "Nothing was saved; the story is as it was. Try again."
)
NO_NARRATION = "The model returned no narration. Nothing was saved; try again."
WAITING = "Updating the story's state… your action is played as soon as that is done."
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnStart:
    """The value of step 2 (load): what the turn is built on, read once, never read
    again. Every prompt of the turn is built from its `context` (service/context.build)."""

    model: ModelSettings
    context: ContextStart
    take_of: int | None = None  # the turn this one tells again (a retry, an edited action)

    @property
    def adventure_id(self) -> int:
        return self.context.adventure_id

    @property
    def below_id(self) -> int:  # the node the turn is written below
        return self.context.head.node_id

    @property
    def turn_number(self) -> int:
        return self.context.head.depth + 1

    @property
    def kind(self) -> str:
        return self.context.kind

    @property
    def text(self) -> str:  # the action as the answering role reads it (a Talk names its addressee)
        return self.context.text

    @property
    def role(self) -> roles.Role:
        return self.context.role

    @property
    def rules(self) -> Rules:
        return self.context.rules

    @property
    def before(self) -> Document:  # the state at `below_id`
        return self.context.before


@dataclass(frozen=True)
class Reply:
    """The model's answer as a value passed forward: what step 4 (stream) made of it, then
    step 5 (settle) (its prose kept), then step 7 (later) (the state pass's block) — each
    step answers a new value (`dataclasses.replace`), none edits one it was given."""

    raw: str = ""  # as streamed; from step 5 (settle) in structured mode, the kept prose
    reasoning: str = ""
    shown: str = ""
    state_error: str | None = None
    failed: str | None = None  # the stream's error: nothing is written
    echoed: tuple[echo.Removed, ...] = ()
    finish: str | None = None  # why the model stopped, as its server said ("length": cut off)
    unfinished: str = ""  # the cut-off last sentence, not kept (context/endings)
    notes: tuple[str, ...] = ()  # what the provider did (banned phrases)


async def play_turn(
    tk: Talekeeper, adventure_id: int, kind: str, text: str = "", *, take_of: int | None = None
) -> AsyncIterator[TurnEvent]:
    """Play an action below the head; with `take_of`, write a new take of that turn instead
    (a sibling below the same parent; the old take and its future stay)."""
    kind, text = normalise_action(kind, text)
    # The database steps, 2 (load) and 6 (commit), run in worker threads (asyncio.to_thread):
    # while one turn waits on a round trip, the event loop goes on serving every other player.
    if owner.current() is not None:  # accounts on: not another player's story
        await asyncio.to_thread(check_owner, tk, adventure_id)
    waiting = tk.locks.is_settling(adventure_id)  # the turn before's state is being updated
    if waiting:  # say so: this action is played as soon as that is done
        yield Status(WAITING)
    try:
        await tk.locks.acquire_when_settled(adventure_id)  # 1. lock
    except AdventureBusy as exc:
        if not waiting:
            raise  # a refusal answers the request itself
        yield Error(str(exc))  # the stream has begun: its last word
        return
    accepted = False
    later: asyncio.Task[TurnResult] | None = None  # step 7 (later): it releases the lock
    try:
        start = await asyncio.to_thread(
            load_turn, tk, adventure_id, kind, text, take_of, writing=True
        )  # 2. load
        provider = tk.provider(start.model)
        mode = state_updates.state_mode(start.context.generation.state_updates, provider)
        prepared = await build_prompt(provider, start, mode)  # 3. build
        assembly = prepared.assembly
        yield Accepted(assembly.action_line, start.kind, start.text)
        accepted = True

        retold: dict[str, Any] | None = None  # the first telling, when it is told again
        while True:
            reply = Reply()
            guard = prose_guard(prepared, start)
            async for event in stream_reply(provider, prepared, guard):  # 4. stream
                if isinstance(event, Reply):
                    reply = event  # its last: the reply as streamed
                else:
                    yield event
            if reply.failed is not None:
                yield Error(reply.failed)
                return
            reply, read = kept_reply(guard, reply, mode)
            settled = validate_and_apply(start, reply, read)  # 5. settle
            if mode == "inline" and reply.finish == "length":  # its block may be lost: say so
                settled = state_engine.note_cut_off(settled)
            narration = clean_narration(settled.prose)
            if narration.startswith(reply.shown) and len(narration) > len(reply.shown):
                # the last line was held until it was whole (the echo guard decides on lines)
                yield Text(narration[len(reply.shown) :])
            if not narration:
                yield Error(NO_NARRATION)
                return
            settled = read_narration(start, settled, narration)
            clashes = settled.proposal.get("contradictions")
            if retold is not None or not clashes or guard_mode(start) != "retry":
                break
            # the setting `retry`: told again once, before the turn is written
            retold = {"narration": narration, "contradictions": clashes}
            yield Retold(tell_again_words(clashes), [str(c.get("line")) for c in clashes])
        if retold is not None:
            settled = settled.noted(retold=retold)
        assembly.notes.extend(reply.notes)
        if reply.echoed:
            assembly.notes.append(echo.summary(reply.echoed))
        if settled.proposal.get("cut_off"):
            assembly.notes.append(settled.proposal["cut_off"])
        if reply.unfinished:
            assembly.notes.append(
                "The reply reached its length limit mid-sentence; its unfinished end was not "
                f"kept: “{echo.shorten(reply.unfinished)}”."
            )
        pending = more_to_come(start, mode)
        done = await asyncio.to_thread(
            commit, tk, start, prepared, narration, reply, settled, pending
        )  # 6. commit
        if pending:
            tk.locks.lend_to_settle(adventure_id)
            later = tk.settles.start(
                adventure_id,
                settle_later(tk, provider, start, prepared, reply, settled, done, mode),
            )  # 7. later
        else:
            worker_for(tk).schedule(adventure_id, rewarm(tk, adventure_id))  # 8. after
        yield Done(done)  # 9. done
        if later is not None:
            result = await tk.settles.result(later)
            remark = result.turn.remark
            if remark:  # a companion spoke up: theirs, under their name
                yield Remark(remark.by, remark.text)
            yield Settled(result)
    except Exception as exc:
        if not accepted and not waiting:
            raise  # refusals before the action was taken answer the request itself
        if not accepted and isinstance(exc, TalekeeperError):
            yield Error(str(exc))  # a refusal, after the `status` that began the stream
            return
        if later is not None:
            raise  # past `done` the turn is written; step 7 (later) ends it with its own word
        # Once the stream has begun, a bug must still end it with a clear word, not silence;
        # the unit of work rolled back, so nothing was written. A database that stayed busy
        # is no bug: its own words say to try again.
        log.exception("turn on adventure %s failed after it was accepted", adventure_id)
        yield Error(str(exc) if isinstance(exc, Unavailable) else INTERNAL_ERROR)
    finally:
        if later is None:  # else step 7 (later) releases it, once the turn is settled
            tk.locks.release(adventure_id)


def load_turn(
    tk: Talekeeper,
    adventure_id: int,
    kind: str,
    text: str,
    take_of: int | None,
    *,
    writing: bool = False,
) -> TurnStart:
    """Step 2 (load): one transaction; everything after works on the value it returns.
    `writing`: under the writer lock, so a turn a stopped process left pending is marked."""
    with tk.db.session() as session:
        # the adventure and the node the turn goes below in one statement (held: the
        # checks below find them): the head, or the parent of the turn told again (the
        # take itself is only a place in the tree: its row is not read)
        held = (
            _with_node(session, _WITH_HEAD, adventure=adventure_id)
            if take_of is None
            else _with_node(session, _WITH_PARENT_OF, adventure=adventure_id, take=take_of)
        )
        adventure = get_adventure(session, adventure_id)
        if writing:
            settling.recover(session, adventure)
        if take_of is None:
            below = tree.head(session, adventure)
        elif held is not None:
            below = held[1]
        else:  # no such turn here, or the opening: refused in the usual words
            below = tree.parent_for_take(session, get_turn(session, adventure, take_of))
        # every settings row the turn reads, the connection's among them, in one statement
        setting_rows.prefetch(session, turn_setting_keys(adventure_id))
        model = tk.model_settings(adventure_id, session)  # this adventure's connection
        context = load(session, adventure, below, kind, text, model.mode == "chat")
        return TurnStart(model, context, take_of)


async def build_prompt(provider: Provider, start: TurnStart, mode: str) -> PreparedContext:
    """Step 3 (build): the answering role's prompt, from the start alone."""
    return await build(provider, start.context, Call(start.role, mode))


def prose_guard(prepared: PreparedContext, start: TurnStart) -> ProseGuard:
    """Lines that only repeat the prompt's own notes, and a reply's loop, are never shown
    or stored: the guards every role's text passes (service/guards)."""
    return guards.for_call(prepared, start.before)


async def stream_reply(
    provider: Provider, prepared: PreparedContext, guard: ProseGuard
) -> AsyncIterator[TurnEvent | Reply]:
    """Step 4 (stream): the model's reply as it streams; the shown text only ever grows.
    Each piece is read once (the state block hidden, then the prose guards), so a long or
    hostile reply costs in step with its length. Its last item is the `Reply` it made."""
    visible, prose = VisibleStream(), guard.stream()
    shown: list[str] = []
    reasoning: list[str] = []
    notes: list[str] = []
    finish: str | None = None
    failed: str | None = None
    try:
        async with aclosing(provider.stream(prepared.request)) as events:
            async for event in events:
                if event.kind == "text":
                    new, loops = prose.feed(visible.feed(event.text))
                    new = new if shown else new.lstrip()  # as stored: no leading blank
                    if new:
                        shown.append(new)
                        yield Text(new)
                    if loops:
                        break  # the model is saying it all again: stop it (nothing is lost)
                elif event.kind == "reasoning":
                    reasoning.append(event.text)
                    yield Reasoning(event.text)
                elif event.kind == "done":
                    finish = event.finish_reason
                elif event.kind == "note":  # for Insights (llm/banned.py)
                    notes.append(event.text)
    except LLMError as exc:
        failed = str(exc)
    # Surrogate halves (a pair split across a server's JSON escapes) cannot be stored.
    yield Reply(
        raw=unicode_safe(visible.text),
        reasoning=unicode_safe("".join(reasoning)),
        shown="".join(shown),
        failed=failed,
        finish=finish,
        notes=tuple(notes),
    )


async def structured_pass(
    provider: Provider,
    prepared: PreparedContext,
    start: TurnStart,
    reply: Reply,
) -> tuple[Reply, Extraction]:
    """The state pass of step 7 (later), in structured mode: a second short request under
    the proposal's schema (see state_updates), about the prose step 5 (settle) kept
    (`reply.raw`); its answer becomes the reply's state block, read with that prose as it
    was kept (not kept again)."""
    prose = reply.raw
    state_pass = await build(
        provider, start.context, Call(roles.STATE_PASS, narrator=prepared, narration=prose)
    )
    try:
        answer = await provider.complete(state_pass.request)
    except LLMError as exc:
        error = f"The state update could not be made ({exc}); the state is unchanged."
        return replace(reply, state_error=error), extract_reply(prose)._replace(prose=prose)
    reply = replace(reply, raw=prose + state_updates.as_block(answer))
    return reply, extract_reply(reply.raw)._replace(prose=prose)


def kept_prose(guard: ProseGuard, reply: Reply, prose: str) -> guards.Guarded:
    """The reply's prose as it is stored: without its echoes and loops, and without the
    unfinished last sentence of a reply its length limit cut off (in its prose: not in a
    state block after it). Run once per turn, in step 5 (settle): `kept_reply`."""
    cut_in_prose = reply.finish == "length" and reply.raw.rstrip().endswith(prose.rstrip())
    return guards.finish(guard, prose, cut_in_prose)


def kept_reply(guard: ProseGuard, reply: Reply, mode: str) -> tuple[Reply, Extraction]:
    """Step 5 (settle), first: the reply read apart and its prose kept (`kept_prose`), once
    per turn — the reply with what the guards took out, and its reading. In structured mode
    the prose alone is the reply (`raw`): the state pass reads it in step 7 (later)."""
    read = extract_reply(reply.raw)
    guarded = kept_prose(guard, reply, read.prose)
    reply = replace(
        reply,
        echoed=(*reply.echoed, *guarded.removed),
        unfinished=guarded.unfinished or reply.unfinished,
    )
    if mode == "structured":
        return replace(reply, raw=guarded.text), extract_reply(guarded.text)
    return reply, read._replace(prose=guarded.text)


def validate_and_apply(start: TurnStart, reply: Reply, read: Extraction) -> state_engine.Settled:
    """Step 5 (settle), and again in step 7 (later) with the state pass's block: the reply
    `read` (its prose kept), its proposal checked against the rules and applied to the
    start's state."""
    settled = state_engine.settle(read, start.before, start.rules, start.turn_number)
    return settled.noted(parse_error=reply.state_error) if reply.state_error else settled


def guard_mode(start: TurnStart) -> str:
    """The setting `generation.contradictions`: off, flag or retry."""
    return start.context.generation.contradictions


def tell_again_words(clashes: list[dict[str, Any]]) -> str:
    """What the page says while a narration that clashed with the state is told again."""
    lines = "; ".join(str(c.get("line", "")) for c in clashes[:2])
    return f"That telling did not fit the story ({lines}). Telling it again…"


def read_narration(
    start: TurnStart, settled: state_engine.Settled, narration: str, remark: str = ""
) -> state_engine.Settled:
    """In step 5 (settle), and again in step 7 (later) after the state pass: `settled` with
    the narration read against the state — what it tells outright applied after the
    model's events (and the player's own changes its Do action states, where the
    narration leaves them unsaid), its clashes kept with the turn's record. With a companion's remark
    after it (made in step 7 (later) too), the remark is guarded instead."""
    if remark:
        return state_engine.guard_remark(
            settled, remark, start.rules, start.turn_number, guard_mode(start)
        )
    return state_engine.read_into(
        settled,
        narration,
        start.before,
        start.rules,
        start.turn_number,
        guard_mode(start),
        state_engine.action_words(start.kind, start.text),
    )


@dataclass(frozen=True)
class CompanionRemark:
    """What the remark of step 7 (later) made: the companion's call, what it answered, and the remark
    as kept by the guards every role's text passes (empty when nothing of it was story)."""

    role: roles.Role
    by: str  # the companion's name
    prompt: PreparedContext
    answer: str  # what the model answered, as it came
    text: str
    note: str = ""  # what the guards took out, and why (Insights)


async def banter_remark(
    provider: Provider,
    start: TurnStart,
    prepared: PreparedContext,
    narration: str,
    settled: state_engine.Settled,
) -> CompanionRemark | None:
    """In step 7 (later): a companion's remark on the narrator's turn, in its own call,
    built from the turn's start (no transaction) with the state after the turn; or None.
    A failing call costs the turn nothing: the remark is optional."""
    if start.role is not roles.NARRATOR or not roles.banter_due(start.rules, start.turn_number):
        return None
    after = state_engine.document_of(settled.state, start.rules)
    role = roles.banter_role(after, start.rules, start.turn_number, prepared.scan.in_scene_ids)
    if role is None:
        return None
    beat = "\n".join(p for p in (prepared.assembly.action_line.lstrip("> "), narration) if p)
    # the state after the turn, without the vocabulary, refusals or reminder
    call = Call(role, "off", kind="story", text=beat, document=after)
    remark_prompt = await build(provider, start.context, call)
    try:
        answer = unicode_safe(await provider.complete(remark_prompt.request))
    except LLMError:
        return None
    guarded = guards.finish(
        guards.for_call(remark_prompt, after), state_engine.extract_prose(answer).strip()
    )
    text = clean_narration(guarded.text)
    note = echo.summary(guarded.removed) if guarded.removed else ""
    if not text and not note:
        return None  # it said nothing
    name = after.entities[role.who].name if role.who in after.entities else str(role.who)
    return CompanionRemark(role, name, remark_prompt, answer, text, note)


def more_to_come(start: TurnStart, mode: str) -> bool:
    """Whether the turn has a step 7 (later): the structured state pass, or a companion's
    remark due.

    The remark comes after the turn is written, like the state pass, for the same reasons:
    it is the companion's reaction to the settled turn (it reads the state after it — who
    is in the scene, which moment to raise), and a whole call of its own (another prompt,
    not the narrator's cached one) that the player need not wait for to act. It appears
    under the turn, labelled as theirs, with the chips; an action sent before then waits.
    """
    return mode == "structured" or (
        start.role is roles.NARRATOR and roles.banter_due(start.rules, start.turn_number)
    )


def commit(
    tk: Talekeeper,
    start: TurnStart,
    prepared: PreparedContext,
    narration: str,
    reply: Reply,
    settled: state_engine.Settled,
    pending: bool,
) -> TurnResult:
    """Step 6 (commit), one transaction: the node, the head, Insights and the memories
    used; with `pending`, the node marked as awaiting step 7 (later)."""
    with tk.db.session() as session:
        # the adventure, and the parent's place in the tree (its snapshot was read in
        # step 2 (load), not again), in one statement
        held = _with_node(session, _WITH_NODE, adventure=start.adventure_id, node=start.below_id)
        adventure = get_adventure(session, start.adventure_id)
        parent = held[1] if held is not None else None
        assert parent is not None
        node = tree.append_child(
            session,
            adventure,
            parent,
            tree.NewTurn(
                action_kind=start.kind,
                action_text=start.text,
                narration=narration,
                reasoning=reply.reasoning,
                state=settled.state,
                proposal=settled.proposal,
                model=tk.model_description(start.model),
                take_of=start.take_of,
            ),
        )
        if pending:
            tree.mark_pending(adventure, node)
        calls = roles.calls_record(session, start.adventure_id, start.role, [])
        texts = insights.texts_key(session, adventure)
        digests = insights.store(
            session,
            start.adventure_id,
            node.id,
            prepared.assembly,
            prepared.request,
            calls,
            known=insights.known_texts(texts),
        )
        bank.record_use(session, prepared.memory_ids, node.depth)
        done = turn_result(adventure, node, settled.outcomes, prepared)
    insights.remember_texts(texts, digests)  # committed
    return done


def turn_result(
    adventure: Adventure, node: Node, changes: list[dict[str, Any]], prepared: PreparedContext
) -> TurnResult:
    """The `done` / `settled` payload. The node is the head and ends its line: what
    story_view would say of it, without reading the story again."""
    return TurnResult(
        turn=node_view(node, pending=adventure.pending_turn_id == node.id),
        can_undo=tree.can_undo(node),
        can_redo=tree.can_redo(node),
        head_id=node.id,
        turns=adventure.turn_count,
        changes=changes,
        prompt=prepared.assembly.as_dict(),
    )


async def settle_later(
    tk: Talekeeper,
    provider: Provider,
    start: TurnStart,
    prepared: PreparedContext,
    reply: Reply,
    known: state_engine.Settled,
    done: TurnResult,
    mode: str,
) -> TurnResult:
    """Step 7 (later), after `done`, holding the writer lock until the turn is settled.

    `known` is what step 5 (settle) committed; `reply.raw` the prose the state pass reads.
    Whatever fails here, the turn stays as it was written and the lock is released."""
    node_id = done.turn.id
    try:
        settled = known
        narration = done.turn.narration
        if mode == "structured":
            reply, read = await structured_pass(provider, prepared, start, reply)
            settled = validate_and_apply(start, reply, read)
            settled = read_narration(start, settled, narration)  # what it tells, after the model's
            if known.proposal.get("retold"):  # the first telling stays on the record
                settled = settled.noted(retold=known.proposal["retold"])
        remark = await banter_remark(provider, start, prepared, narration, settled)
        if remark is not None and remark.text:
            settled = read_narration(start, settled, narration, remark=remark.text)
        return await asyncio.to_thread(
            commit_settled, tk, start, prepared, node_id, settled, remark
        )
    except Exception:  # noqa: BLE001 - the turn is written; the step must end with a word
        log.exception("the background step of turn %s failed", node_id)
        try:
            return await asyncio.to_thread(give_up, tk, start, prepared, node_id)
        except Exception:  # noqa: BLE001 - the next writer marks it (settling.recover)
            log.exception("turn %s could not be marked as not updated", node_id)
            return done
    finally:
        tk.locks.release(start.adventure_id)
        after_settled(tk, start.adventure_id)


def after_settled(tk: Talekeeper, adventure_id: int) -> None:
    """Step 8 (after), for a turn step 7 (later) has settled: never an error of the turn's."""
    try:
        worker_for(tk).schedule(adventure_id, rewarm(tk, adventure_id))
    except Exception:  # noqa: BLE001 - the memory bank retries on the next turn
        log.exception("the memory bank's run after turn on adventure %s", adventure_id)


def commit_settled(
    tk: Talekeeper,
    start: TurnStart,
    prepared: PreparedContext,
    node_id: int,
    settled: state_engine.Settled,
    remark: CompanionRemark | None,
) -> TurnResult:
    """The transaction of step 7 (later): the pending node's state and proposal, and a
    companion's remark — at the end of its narration, in its record, its call in Insights."""
    with tk.db.session() as session:
        # the adventure and the pending node in one statement (its snapshot and record are
        # replaced, not read)
        held = _with_node(session, _WITH_NODE, adventure=start.adventure_id, node=node_id)
        adventure = get_adventure(session, start.adventure_id)
        assert held is not None
        node = held[1]
        narration = node.narration
        if remark is not None:
            if remark.text:
                narration += "\n\n" + remark.text
                settled = settled.noted(remark={"by": remark.by, "text": remark.text})
            call = roles.ExtraCall(
                remark.role, prompt_text(remark.prompt), remark.answer, remark.note
            )
            roles.record_calls(session, start.adventure_id, node.id, [call])
        tree.settle(
            adventure, node, state=settled.state, proposal=settled.proposal, narration=narration
        )
        return turn_result(adventure, node, settled.outcomes, prepared)


def give_up(
    tk: Talekeeper, start: TurnStart, prepared: PreparedContext, node_id: int
) -> TurnResult:
    """Step 7 (later) failed: the turn keeps the state step 5 (settle) wrote, marked."""
    with tk.db.session() as session:
        adventure = get_adventure(session, start.adventure_id)
        settling.recover(session, adventure)
        node = get_turn(session, adventure, node_id)
        return turn_result(adventure, node, state_engine.changes_of(node), prepared)


# The adventure and one node in one statement: its head, or the parent of the turn a take
# tells again (step 2 (load)); or the parent the new turn goes below (step 6 (commit)) or
# the pending turn (step 7 (later)), whose snapshot, plot and rules were read already.
# Built once: a turn runs each, and making them cost more than running them.
_SAME_ADVENTURE = (
    Adventure.id == bindparam("adventure"),
    Node.adventure_id == bindparam("adventure"),
)
_WITH_HEAD = (
    select(Adventure, Node).join(Node, Node.id == Adventure.head_node_id).where(*_SAME_ADVENTURE)
)
_TAKEN = Node.__table__.alias("taken")
_WITH_PARENT_OF = (
    select(Adventure, Node)
    .select_from(Adventure)
    .join(_TAKEN, _TAKEN.c.id == bindparam("take"))
    .join(Node, Node.id == _TAKEN.c.parent_id)
    .where(*_SAME_ADVENTURE, _TAKEN.c.adventure_id == bindparam("adventure"))
)
_WITH_NODE = (
    select(Adventure, Node)
    .join(Node, Node.id == bindparam("node"))
    .where(*_SAME_ADVENTURE)
    .options(defer(Node.state), defer(Node.proposal), defer(Adventure.plot), defer(Adventure.rules))
)


def _with_node(session: Session, query: Any, **params: int) -> tuple[Adventure, Node] | None:
    """The pair `query` reads, or None when either is missing. The session keeps only what
    is referred to, so the caller holds the pair while it reads them again by key."""
    found = session.execute(query, params).first()
    return None if found is None else (found[0], found[1])


async def build_context(
    tk: Talekeeper, adventure_id: int, kind: str, text: str = ""
) -> PreparedContext:
    """Step 2 (load) and step 3 (build) on their own, for the Insights dry run and the
    warm-up: the prompt for this action at the head, by the turn's own load and build."""
    start = await asyncio.to_thread(load_turn, tk, adventure_id, kind, text, None)
    provider = tk.provider(start.model)
    mode = state_updates.state_mode(start.context.generation.state_updates, provider)
    return await build_prompt(provider, start, mode)


async def warm_next_turn(
    tk: Talekeeper, adventure_id: int, settings: ModelSettings | None = None
) -> None:
    """Read the next turn's prompt into the embedded model's cache ahead of time.

    The prompt for any action shares everything but its last lines with a Continue, so
    evaluating that (one token, discarded) means the player's turn starts warm — the first
    turn after a restart would otherwise wait for the whole prompt to be read (~25 s on two
    cores). Only for the embedded model: a server of the player's own is left alone, with
    nothing read for it when the caller passes the `settings` in force it already read.
    """
    shown = settings or tk.shown_settings(adventure_id)  # (the embedded model has no key)
    provider = tk.provider(shown)
    if not provider.runs_here or tk.locks.is_busy(adventure_id):
        return
    task = asyncio.current_task()
    if task is not None:
        _warming[task] = asyncio.get_running_loop()
    try:
        prepared = await build_context(tk, adventure_id, "continue")
        await provider.complete(prepared.request.model_copy(update={"max_tokens": 1}))
    except asyncio.CancelledError:  # the server is stopping (`stop_warming`): nothing to keep
        log.info("warming the next turn of adventure %s stopped", adventure_id)
    except Exception:  # noqa: BLE001 - a warm-up is a courtesy; the turn itself reports errors
        log.info("warming the next turn of adventure %s failed", adventure_id, exc_info=True)
    finally:
        if task is not None:
            _warming.pop(task, None)


_warming: dict[asyncio.Task[Any], asyncio.AbstractEventLoop] = {}


def stop_warming() -> None:
    """Cancel every warm-up still reading a prompt (safe from a signal handler): a server
    told to stop must not wait for the embedded model to finish reading one."""
    for task, loop in list(_warming.items()):
        loop.call_soon_threadsafe(task.cancel)


def rewarm(tk: Talekeeper, adventure_id: int) -> Callable[[dict[str, Any]], Awaitable[None]]:
    """After the memory bank's run: a new summary changed the prompt near its start (the
    summary goes before the history), so the whole prompt is read into the embedded model's
    cache again now, while the player reads — not in the player's next turn (every
    `summary_every` turns, that turn would otherwise start cold)."""

    async def after(done: dict[str, Any]) -> None:
        if done.get("summary"):
            await warm_next_turn(tk, adventure_id)

    return after


def current_state_mode(tk: Talekeeper) -> state_updates.StateMode:
    return state_updates.state_mode(tk.generation().state_updates, tk.provider())


def clean_narration(raw: str) -> str:
    return raw.strip()


def unicode_safe(text: str) -> str:
    """Join surrogate pairs that arrived as separate halves; a lone half becomes U+FFFD.
    NUL characters are dropped: never prose, and PostgreSQL text cannot hold them."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").replace("\x00", "")


async def collect_turn(tk: Talekeeper, adventure_id: int, kind: str, text: str = "") -> TurnResult:
    """Play a turn without streaming; returns the finished turn (settled, when it had a
    step 7 (later)) or raises TurnFailed."""
    return await finished_turn(play_turn(tk, adventure_id, kind, text))


async def finished_turn(events: AsyncIterator[TurnEvent]) -> TurnResult:
    """The last word of a turn's events: `settled` after a pending `done`, else `done`;
    an `error` raises TurnFailed."""
    async for event in events:
        if isinstance(event, Settled) or (
            isinstance(event, Done) and not event.result.turn.pending
        ):
            return event.result
        if isinstance(event, Error):
            raise TurnFailed(event.message)
    raise TurnFailed("The turn ended without a result.")


class TurnFailed(Upstream):
    pass
