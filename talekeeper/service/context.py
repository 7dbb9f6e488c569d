"""Step 3 of a turn: read everything the prompt is built from at the head, and build it.

The turn pipeline and the Insights dry run ("what would be sent now") both call
`prepare_context`, so the dry run shows exactly what the next turn would send. The state
engine's sections come in through `render_state`, called with the head and the ids of the
characters the recent window puts in scene.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.context import insights
from talekeeper.context.budget import context_budget
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
from talekeeper.service import kept_history
from talekeeper.service import samplers as sampler_choice
from talekeeper.service.settings import (
    GenerationSettings,
    effective_model_settings,
    generation_settings,
)
from talekeeper.state import Document, Rules
from talekeeper.store import owner, setting_rows
from talekeeper.store.models import Adventure, Node
from talekeeper.story.actions import format_action
from talekeeper.story.paths import keyed_path

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

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
    """The proposal of the nearest turn at or above `node` that is not a state correction."""
    while node is not None and node.action_kind == "correction":
        node = session.get(Node, node.parent_id) if node.parent_id is not None else None
    return node.proposal if node is not None else None


@dataclass(frozen=True)
class StateInput:
    """What the state engine's sections are rendered from — plain values, so building the
    prompt calls no code of its caller's. `document` None: the head's own state."""

    rules: Rules
    mode: str = "inline"
    document: Document | None = None
    use_head_proposal: bool = True  # the last story turn's refusals (a new beat has none)
    proposals: bool = True  # False: only the stat guide and the state (banter proposes nothing)


@dataclass(frozen=True)
class ContextStart:
    """Everything a prompt is built from, read in one transaction at the start (`load`):
    the frozen start-of-turn value the rest of the turn is built on."""

    adventure_id: int
    head: HeadView
    kind: str
    text: str
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
    rules: dict[str, Any] | None  # the adventure's rules as stored (card gates read them)
    previous: insights.PreviousPrompt
    sent_prompt: str | None  # the prompt that wrote the head, for the byte-identical share


def turn_setting_keys(adventure_id: int) -> set[str]:
    """The settings keys a turn reads (its own and, with accounts on, the player's)."""
    keys = {CONTEXT_KEY, "generation", "model", sampler_choice.adventure_key(adventure_id)}
    keys |= {owner.setting_key(CONTEXT_KEY), owner.setting_key("generation")}
    return keys | {owner.setting_key(sampler_choice.PRESETS_KEY)}


def load(
    session: Session,
    adventure: Adventure,
    head: Node,
    kind: str,
    text: str,
    adjust_plot: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> ContextStart:
    """Read what the prompt for an action below `head` needs, in the caller's session."""
    setting_rows.prefetch(session, turn_setting_keys(adventure.id))  # one read, not one a key
    settings = context_settings(session)
    plot = dict(adventure.plot or {})
    if adjust_plot is not None:
        plot = adjust_plot(plot)
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
    generation = generation_settings(session)
    return ContextStart(
        adventure_id=adventure.id,
        head=head_view,
        kind=kind,
        text=text,
        plot=plot,
        settings=settings,
        generation=generation,
        samplers=sampler_choice.for_adventure(session, adventure.id, generation),
        history=tuple(history),
        summary=summary,
        query=query,
        pool=tuple(pool),
        lexical=lexical,
        card_last_fired=insights.card_timers(session, path, lookback, recent),
        rules=adventure.rules,
        previous=insights.previous_from(recent[head.id][1] if head.id in recent else None),
        sent_prompt=insights.sent_prompt(session, head),
    )


def state_sections(state: StateInput, head: HeadView, in_scene_ids: list[str]) -> StateSections:
    from talekeeper.service import state_engine

    document = (
        state.document
        if state.document is not None
        else state_engine.document_of(head.state, state.rules)
    )
    proposal = head.story_proposal if state.use_head_proposal else None
    sections = StateSections(
        **state_engine.prompt_sections(state.rules, document, proposal, in_scene_ids, state.mode)
    )
    if not state.proposals:
        return StateSections(stat_guide=sections.stat_guide, current_state=sections.current_state)
    return sections


async def build(
    provider: Provider, start: ContextStart, state: StateInput | None, chat: bool
) -> PreparedContext:
    """The prompt for `start`'s action: no database, nothing read twice. `chat`: the
    model is set to chat mode (the provider decides whether it can)."""
    budget = await context_budget(provider, start.generation.context_budget)
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
        plot=start.plot,
        history=list(start.history),
        action_kind=start.kind,
        action_text=start.text,
        story_summary=start.summary.text,
        summary_source=start.summary.label,
        memories=retrieval.memories,
        memory_note=retrieval.note,
        state=head.state,
        options=options_from(start.settings, budget.tokens, start.generation.max_tokens),
        turn=head.depth + 1,
        seed=f"{start.adventure_id}:{head.node_id}",  # a retry is written below the same head: same rolls
        rules=start.rules,
        card_last_fired=start.card_last_fired,
        previous_history_start=start.previous.history_start,
    )
    found = scan(inputs)
    if state is not None:
        sections = state_sections(state, head, found.in_scene_ids)
        inputs.canon = sections.canon
        inputs.event_vocabulary = sections.event_vocabulary
        inputs.stat_guide = sections.stat_guide
        inputs.current_state = sections.current_state
        inputs.refusals = sections.refusals
        inputs.emit_reminder = sections.emit_reminder
    assembly = await assemble(inputs, counter_for(provider), found)
    assembly.notes.insert(0, budget.why)
    generation = start.generation
    request = build_request(
        assembly,
        "chat" if chat and provider.supports_chat else "completion",
        max_tokens=generation.max_tokens,
        temperature=generation.temperature,
        top_p=generation.top_p,
        **start.samplers,
    )
    if start.sent_prompt is not None:
        assembly.prefix_share = insights.share_of(start.sent_prompt, request)
    return PreparedContext(start.adventure_id, head, inputs, found, assembly, request, retrieval)


async def prepare_context(
    tk: Talekeeper,
    adventure_id: int,
    kind: str,
    text: str,
    state: StateInput | None = None,
    at: int | None = None,
    adjust_plot: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> PreparedContext:
    """Build the prompt for an action below the head (or below node `at`: a new take), in
    one read. `adjust_plot` lets another role (an NPC, banter) open the prompt with its own
    instructions; everything else — the canon log — is the same for every role."""
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        if adventure is None or not owner.visible(adventure):
            from talekeeper.service.adventures import AdventureNotFound

            raise AdventureNotFound(f"No adventure with id {adventure_id}.")
        head = session.get(Node, adventure.head_node_id if at is None else at)
        if head is None or head.adventure_id != adventure_id:
            from talekeeper.story.tree import TreeError

            raise TreeError("This adventure's current position is missing; restore a Save Point.")
        start = load(session, adventure, head, kind, text, adjust_plot)
        model = effective_model_settings(session, tk.model_overrides)
    provider = tk.provider(model)
    return await build(provider, start, state, model.mode == "chat")
