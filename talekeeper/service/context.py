"""The one prompt builder: every model call's prompt — the narrator's, an NPC's in
dialogue, a companion's remark, the structured state pass — is made by `build`, from one
`ContextStart` read in one transaction (`load`) and a `Call` saying which role speaks.

A turn (`service/turns`) loads once in its step 2 (load) and builds once per model call
after it; the Insights dry run and the warm-up run the turn's own load and build, so they
show and warm exactly what a turn would send. Building reads no database: a companion's
remark, built after the narration from the same start, costs the turn no transaction.
The state engine's sections come from `state_engine.prompt_sections`, rendered for the
role and the state mode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.context import insights
from talekeeper.context.budget import context_budget, length_hint, reply_tokens
from talekeeper.context.generation import GenerationSettings
from talekeeper.context.prompt import (
    Assembly,
    ContextInput,
    ContextOptions,
    HistoryTurn,
    Scan,
    assemble,
    build_request,
    scan,
)
from talekeeper.context.settings import KEY as CONTEXT_KEY
from talekeeper.context.settings import ContextSettings, context_settings
from talekeeper.context.tokens import counter_for
from talekeeper.llm.base import GenerationRequest, Provider
from talekeeper.memory import bank
from talekeeper.memory.worker import embed_with
from talekeeper.service import connection_in_force, kept_history
from talekeeper.service import samplers as sampler_choice
from talekeeper.service.connection_in_force import generation_settings
from talekeeper.service.roles import NARRATOR, STATE_PASS, Role, role_for_turn
from talekeeper.state import Document, Rules
from talekeeper.store import owner
from talekeeper.store.models import Adventure, Node
from talekeeper.story.actions import format_action
from talekeeper.story.paths import keyed_path
from talekeeper.story.takes import STEPS

HISTORY_WINDOW = 200  # turns read from the store; the budget decides how many are sent


@dataclass(frozen=True)
class HeadView:
    """The head as the state engine needs it to render its sections."""

    node_id: int
    depth: int
    state: dict[str, Any] | None
    proposal: dict[str, Any] | None
    story_proposal: dict[str, Any] | None = None
    """The proposal of the last turn the model wrote: the head's own, or — when the head is
    the player's state correction — the nearest story turn's above it, so the model's
    refusals survive a correction and the player's refused edits are never shown as its own."""


@dataclass
class StateSections:
    canon: str | None = None
    event_vocabulary: str | None = None
    stat_guide: str | None = None
    current_state: str | None = None
    refusals: str | None = None
    emit_reminder: str | None = None


@dataclass
class PreparedContext:
    adventure_id: int
    head: HeadView
    inputs: ContextInput
    scan: Scan
    assembly: Assembly
    request: GenerationRequest
    retrieval: bank.Retrieval

    @property
    def memory_ids(self) -> list[int]:
        section = self.assembly.section("memories")
        return [int(i.ref) for i in section.items if i.included] if section else []  # type: ignore[arg-type]


def options_from(settings: ContextSettings, budget: int, reserve: int) -> ContextOptions:
    return ContextOptions(
        budget=budget,
        reserve_for_reply=reserve,
        author_note_depth=settings.author_note_depth,
        card_share=settings.card_share,
        card_budget=settings.card_budget,
        recursion_depth=settings.card_recursion_depth,
        memory_share=settings.memory_share,
        window_turns=settings.trigger_window_turns,
        history_step=settings.history_step,
        card_linger_turns=settings.trigger_window_turns,
    )


def _timer_lookback(plot: dict[str, Any]) -> int:
    """How far back story-card timers can reach: the longest sticky + cooldown."""
    longest = 0
    for card in plot.get("story_cards") or []:
        if isinstance(card, dict):
            try:
                longest = max(
                    longest, int(card.get("sticky") or 0) + int(card.get("cooldown") or 0)
                )
            except (TypeError, ValueError):
                continue
    return min(longest + 1, 2000) if longest else 0


def history_turns(session, path: list[int], limit: int = HISTORY_WINDOW) -> list[HistoryTurn]:
    """The last `limit` turns on the path, reading only the columns a prompt needs."""
    ids = path[-limit:]
    rows = session.execute(
        select(Node.id, Node.depth, Node.action_kind, Node.action_text, Node.narration).where(
            Node.id.in_(ids)
        )
    )
    by_id = {r.id: r for r in rows}
    return [
        HistoryTurn(
            by_id[i].action_kind, by_id[i].action_text, by_id[i].narration, i, by_id[i].depth
        )
        for i in ids
    ]


def recent_text(history: list[HistoryTurn], action_line: str, turns: int = bank.QUERY_TURNS) -> str:
    parts = ["\n".join(t.lines) for t in history[-turns:]]
    if action_line:
        parts.append(action_line)
    return "\n\n".join(parts)


async def retrieve(
    provider: Provider,
    pool: list[bank.Candidate],
    query: str,
    settings: ContextSettings,
    previous: frozenset[int] = frozenset(),
    lexical: tuple[list[tuple[bank.Candidate, float]], int] | None = None,
) -> bank.Retrieval:
    """Embeddings when a model is set (and answers), else BM25 — `lexical`, when given, is
    the BM25 ranking already made from the adventure's kept index."""
    if settings.memory_top_k <= 0 or (not pool and not (lexical and lexical[1])):
        return bank.Retrieval([], "none", len(pool) if lexical is None else lexical[1])
    model = settings.embedding_model
    if model:
        try:
            vectors = await embed_with(provider, [query], model)
        except Exception:  # noqa: BLE001 - a failing embedding server must not stop the turn
            vectors = None
        if vectors:
            ranked = bank.rank_vectors(vectors[0], pool, model)
            return bank.Retrieval(
                bank.choose(ranked, settings.memory_top_k, "cosine", previous),
                f"embeddings ({model})",
                len(pool),
            )
    ranked, considered = (
        lexical if lexical is not None else (bank.rank_lexical(query, pool), len(pool))
    )
    method = "lexical (BM25)" + ("; the embedding model did not answer" if model else "")
    return bank.Retrieval(
        bank.choose(ranked, settings.memory_top_k, "BM25", previous), method, considered
    )


def last_story_proposal(session, node: Node | None) -> dict[str, Any] | None:
    """The proposal of the nearest turn at or above `node` that is the story's, not a step of
    the player's own (a state correction, an update from the scenario)."""
    while node is not None and node.action_kind in STEPS:
        node = session.get(Node, node.parent_id) if node.parent_id is not None else None
    return node.proposal if node is not None else None


@dataclass(frozen=True)
class Call:
    """One model call, on top of the start: the role that answers, the state mode it
    writes in, the action it answers (None: the start's) and the state it reads (None:
    the start's). The state pass names the narrator's prompt it extends and the narration
    it reads."""

    role: Role = NARRATOR
    mode: str = "inline"
    kind: str | None = None
    text: str | None = None
    document: Document | None = None
    narrator: PreparedContext | None = None
    narration: str = ""

    @property
    def proposes(self) -> bool:
        """The role's reply can change the state: it gets last turn's refusals (a
        companion's remark and the state pass answer nothing of the player's)."""
        return self.role.name in ("narrator", "npc")


@dataclass(frozen=True)
class ContextStart:
    """Everything a prompt is built from, read in one transaction at the start (`load`):
    the frozen start-of-turn value every call of the turn is built on."""

    adventure_id: int
    head: HeadView
    kind: str
    text: str  # the action as the answering role reads it (a Talk names its addressee)
    role: Role  # who answers the action (the narrator, or the character addressed)
    rules: Rules
    before: Document  # the state at the head
    plot: dict[str, Any]
    settings: ContextSettings
    generation: GenerationSettings
    samplers: dict[str, Any]
    history: tuple[HistoryTurn, ...]
    summary: bank.SummaryInForce
    query: str
    pool: tuple[bank.Candidate, ...]
    lexical: tuple[list[tuple[bank.Candidate, float]], int] | None
    card_last_fired: dict[int, int]
    gate_rules: dict[str, Any] | None  # the adventure's rules as stored (card gates read them)
    previous: insights.PreviousPrompt
    sent_prompt: str | None  # the prompt that wrote the head, for the byte-identical share
    chat: bool = False  # the model is set to chat mode (the provider decides whether it can)


def turn_setting_keys(adventure_id: int) -> set[str]:
    """The settings keys a turn reads (its own and, with accounts on, the player's)."""
    keys = {
        CONTEXT_KEY,
        "generation",
        owner.setting_key(CONTEXT_KEY),
        owner.setting_key("generation"),
    }
    keys |= connection_in_force.in_force_keys(adventure_id)
    return keys | sampler_choice.choice_keys(adventure_id)


def load(
    session: Session, adventure: Adventure, head: Node, kind: str, text: str, chat: bool = False
) -> ContextStart:
    """Read what the prompts for an action below `head` need, in the caller's session:
    the rules and state there, who answers, the story, settings and memories. The caller
    reads the settings rows first, the connection's among them, in one statement
    (`setting_rows.prefetch` of `turn_setting_keys`): else each is a statement."""
    from talekeeper.service import state_engine

    settings = context_settings(session)
    if not bank.bank_on(adventure.plot):  # this adventure's memory bank is off: none is sent
        settings = settings.model_copy(update={"memory_top_k": 0, "embedding_model": None})
    rules = state_engine.rules_of(adventure)
    before = state_engine.document_of(head.state, rules)
    role, text = role_for_turn(kind, text, before, rules, [])
    plot = dict(adventure.plot or {})
    path, key, parent_key = keyed_path(session, head.id)  # kept between turns, as is
    history = kept_history.history_at(session, head, path, key, parent_key)  # the history
    summary = bank.summary_at(session, adventure.id, path, str(plot.get("story_summary") or ""))
    query = recent_text(history, format_action(kind, text))
    pool: list[bank.Candidate] = []
    lexical = None
    if settings.embedding_model:
        pool = bank.candidates(session, adventure.id, path, with_vectors=True)
    elif settings.memory_top_k > 0:
        lexical = bank.lexical_on_path(session, adventure.id, path, query)
    head_view = HeadView(
        head.id, head.depth, head.state, head.proposal, last_story_proposal(session, head)
    )
    # (cards with no timers of their own linger `trigger_window_turns`: see prompt.select_cards)
    lookback = max(_timer_lookback(plot), settings.trigger_window_turns + 1)
    recent = insights.records_on(session, path[-lookback:])  # the head's among them (lookback ≥ 1)
    extras = connection_in_force.extras(
        session, adventure.id
    )  # the connection's samplers and budget
    generation = extras.applied_to(generation_settings(session))
    return ContextStart(
        adventure_id=adventure.id,
        head=head_view,
        kind=kind,
        text=text,
        role=role,
        rules=rules,
        before=before,
        plot=plot,
        settings=settings,
        generation=generation,
        samplers=sampler_choice.for_adventure(session, adventure.id, generation, extras.samplers),
        history=tuple(history),
        summary=summary,
        query=query,
        pool=tuple(pool),
        lexical=lexical,
        card_last_fired=insights.card_timers(session, path, lookback, recent),
        gate_rules=adventure.rules,
        previous=insights.previous_from(recent[head.id][1] if head.id in recent else None),
        sent_prompt=insights.sent_prompt(session, head),
        chat=chat,
    )


def state_sections(
    start: ContextStart, call: Call, document: Document, in_scene_ids: list[str]
) -> StateSections:
    """The state engine's sections for this call's role and state mode."""
    from talekeeper.service import state_engine

    proposal = start.head.story_proposal if call.proposes else None
    sections = StateSections(
        **state_engine.prompt_sections(
            start.rules, document, proposal, in_scene_ids, call.mode, start.head.depth + 1
        )
    )
    if not call.proposes:  # only the stat guide and the state (a remark proposes nothing)
        return StateSections(stat_guide=sections.stat_guide, current_state=sections.current_state)
    return sections


async def build(provider: Provider, start: ContextStart, call: Call = Call()) -> PreparedContext:
    """The prompt for one model call: no database, nothing read twice. The model's chat
    mode is the start's (the provider decides whether it can)."""
    if call.role is STATE_PASS:
        return _state_pass(start, call)
    budget = await context_budget(provider, start.generation.context_budget)
    generation = start.generation
    reply = reply_tokens(
        generation.max_tokens, generation.reply_length, budget.tokens, call.mode == "inline"
    )
    retrieval = await retrieve(
        provider,
        list(start.pool),
        start.query,
        start.settings,
        start.previous.memories,
        start.lexical,
    )
    head = start.head
    inputs = ContextInput(
        plot=call.role.adjust_plot(start.plot),
        history=list(start.history),
        action_kind=call.kind if call.kind is not None else start.kind,
        action_text=call.text if call.text is not None else start.text,
        story_summary=start.summary.text,
        summary_source=start.summary.label,
        memories=retrieval.memories,
        memory_note=retrieval.note,
        state=head.state,
        options=options_from(start.settings, budget.tokens, reply),
        turn=head.depth + 1,
        seed=f"{start.adventure_id}:{head.node_id}",  # a retry is written below the same head: same rolls
        rules=start.gate_rules,
        card_last_fired=start.card_last_fired,
        previous_history_start=start.previous.history_start,
    )
    found = scan(inputs)
    document = call.document if call.document is not None else start.before
    sections = state_sections(start, call, document, found.in_scene_ids)
    inputs.canon = sections.canon
    inputs.event_vocabulary = sections.event_vocabulary
    inputs.stat_guide = sections.stat_guide
    inputs.current_state = sections.current_state
    inputs.refusals = sections.refusals
    inputs.emit_reminder = sections.emit_reminder
    if call.role is NARRATOR:  # (an NPC and a companion have their own word on length)
        inputs.length_hint = length_hint(generation.reply_length)
    assembly = await assemble(inputs, counter_for(provider), found)
    assembly.notes.insert(0, budget.why)
    request = build_request(
        assembly,
        "chat" if start.chat and provider.supports_chat else "completion",
        max_tokens=reply,
        temperature=generation.temperature,
        top_p=generation.top_p,
        **start.samplers,
    )
    if start.sent_prompt is not None:
        assembly.prefix_share = insights.share_of(start.sent_prompt, request)
    return PreparedContext(start.adventure_id, head, inputs, found, assembly, request, retrieval)


def _state_pass(start: ContextStart, call: Call) -> PreparedContext:
    """The structured state pass: the narrator's own request, extended by its narration
    and the question (`state_updates.structured_request`) — the one prompt that names
    ids and stat paths, because its answer must write them."""
    from talekeeper.service import state_updates

    narrator = call.narrator
    if narrator is None:
        raise ValueError("the state pass extends the narrator's prompt: name it")
    document = call.document if call.document is not None else start.before
    request = state_updates.structured_request(
        narrator.request, call.narration, document, start.rules, narrator.scan.in_scene_ids
    )
    return replace(narrator, request=request)


def prompt_text(prepared: PreparedContext) -> str:
    """A call's prompt as one text, as Insights keeps the prompts of the extra calls."""
    request = prepared.request
    if request.mode == "chat":
        return "\n\n".join(f"[{m.role}]\n{m.content}" for m in request.messages)
    return request.prompt or ""
