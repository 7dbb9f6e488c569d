"""Assembling what the model sees each turn, within a token budget, with the reasons.

The order (docs/architecture.md "Context and memory"): the model receives the story, not the
protocol, and what changes goes last.

     1. narrator instructions          ┐ (with the reply-length hint, narrator only)
     2. persona (the protagonist)      │ stable: byte-identical turn to turn, so
     3. campaign canon                 │ llama.cpp, Ollama and vLLM reuse the
     4. stat guide                     │ cached prompt prefix
     5. AI instructions                │
     6. plot essentials                ┘
     7. story summary                  (changes every 15 turns, or when the player edits it)
     8. history, the author's note a few lines from its end; dropped from the front in
        chunks, so between drops it only grows and the cached prefix covers it
     9. retrieved memories             ┐ volatile: after the history, so a memory or
    10. triggered story cards          │ card coming or going costs the cache only
    11. current state                  │ these few lines
    12. last turn's refusals           │
    13. the player's action            ┘
    14. (inline mode only) the event vocabulary and the emit reminder, last

Budgeting: the always-on sections (everything except memories, cards and history) are
reserved first; memories and then cards get capped shares; history fills the rest. Each
section keeps its source, token cost and why it was included, so Insights can show
exactly what was sent. The state engine's sections (3, 4, 11, 12, 14) arrive already
rendered; this module only places and counts them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from talekeeper.context import worldinfo
from talekeeper.context.cardset import card_set
from talekeeper.context.tokens import CountFn
from talekeeper.context.triggers import (
    DEFAULT_WINDOW_TURNS,
    Triggered,
    TriggerWindow,
    characters_in,
    match_characters,
    recent_window,
)
from talekeeper.llm.base import GenerationRequest, Message
from talekeeper.story.actions import format_action

CONTINUE_CUE = "(The story continues.)"
BEGIN_CUE = "(Begin the story.)"
SEPARATOR = "\n\n"

STABLE = (
    "narrator",
    "length",
    "persona",
    "canon",
    "stat_guide",
    "ai_instructions",
    "plot_essentials",
)
"""The sections that stay byte-identical between turns (unless the player edits them)."""

ORDER = (
    *STABLE,
    "story_summary",
    "story_cards",  # only cards an author placed "before the history"
    "history",
    "author_note",
    "memories",
    "story_cards_after",
    "current_state",
    "refusals",
    "action",
    "event_vocabulary",
    "emit_reminder",
)
HEAD = frozenset(ORDER[: ORDER.index("history")])
TAIL = ORDER[ORDER.index("memories") :]
PROTOCOL = frozenset({"event_vocabulary", "emit_reminder"})
"""What the model is told only so it can write the state block (inline mode)."""


@dataclass
class ContextOptions:
    budget: int = 3072
    reserve_for_reply: int = 0
    author_note_depth: int = 0  # after the history: deeper, it moves every turn (cache)
    card_share: float = 0.2  # at most this share of the budget goes to story cards
    card_budget: int = 0  # ... and at most this many tokens in all (0: the share alone)
    memory_share: float = 0.15  # ... and this to retrieved memories
    window_turns: int = DEFAULT_WINDOW_TURNS
    history_step: int = 4  # a drop removes at least this many turns
    history_chunk: float = 0.3  # ... and enough that this share of the room is free again
    recursion_depth: int = 2  # how many times fired cards' text may trigger more cards
    card_linger_turns: int = (
        4  # a card with no timer of its own stays this many turns after it last fired
    )


@dataclass
class HistoryTurn:
    action_kind: str
    action_text: str
    narration: str
    node_id: int | None = None
    depth: int = 0

    @cached_property
    def action_line(self) -> str:
        return format_action(self.action_kind, self.action_text)

    @cached_property
    def lines(self) -> list[str]:  # computed once: a turn reads them many times
        found = [self.action_line] if self.action_line else []
        return found + [line for line in self.narration.split("\n") if line.strip()]


@dataclass
class RetrievedMemory:
    id: int
    text: str
    score: float
    pinned: bool = False
    depth: int = 0  # the depth of the node it summarises (story order)
    why: str = ""
    first_depth: int = 0  # the first turn of the block it summarises


@dataclass
class ContextInput:
    """Everything one turn's prompt is built from, read at the head."""

    plot: dict[str, Any]
    history: Sequence[HistoryTurn]
    action_kind: str
    action_text: str
    story_summary: str = ""
    summary_source: str = "plot components"
    memories: Sequence[RetrievedMemory] = ()
    memory_note: str = ""  # how retrieval ran (embedding model / lexical), for Insights
    state: dict[str, Any] | None = None  # the state document at the head (plain JSON)
    # Sections the state engine renders; None or "" leaves the section out.
    event_vocabulary: str | None = None
    stat_guide: str | None = None
    current_state: str | None = None
    refusals: str | None = None
    emit_reminder: str | None = None
    canon: str | None = None
    length_hint: str | None = None  # the narrator's word on reply length (settings)
    options: ContextOptions = field(default_factory=ContextOptions)
    # Story-card timing: the turn being written, its seed (the head it is written below,
    # so a retry rolls the same) and, per card index, the turn it last fired on this path.
    turn: int = 0
    seed: str = ""
    rules: dict[str, Any] | None = None  # the adventure's state rules (stat bands for gates)
    card_last_fired: dict[int, int] = field(default_factory=dict)
    # Where the history of the prompt that wrote the head started (node id; from its
    # Insights): kept while it fits, so the cached prefix stays valid.
    previous_history_start: int | None = None


@dataclass
class Item:
    """One entry inside a section: a card, a memory, a character in scene."""

    key: str
    text: str = ""
    tokens: int = 0
    why: str = ""
    included: bool = True
    ref: int | str | None = None  # card index, memory id, character id
    score: float | None = None


@dataclass
class Section:
    name: str
    text: str
    why: str
    tokens: int = 0
    source: str = ""
    items: list[Item] = field(default_factory=list)


@dataclass
class Scan:
    """What the recent window triggered: story cards and characters now in scene."""

    window: TriggerWindow
    cards: worldinfo.Selection
    in_scene: list[Triggered]

    @property
    def in_scene_ids(self) -> list[str]:
        return [t.key for t in self.in_scene]


@dataclass
class Assembly:
    sections: list[Section]
    history: list[HistoryTurn]
    action_line: str
    budget: int
    reserve_for_reply: int = 0
    history_available: int = 0
    author_note_at: int | None = None  # line index within the history where the note goes
    in_scene: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Story cards placed inside the history ("at depth"): (line index, text), like the note.
    inserts: list[tuple[int, str]] = field(default_factory=list)
    cards_fired: list[int] = field(
        default_factory=list
    )  # fired by their own rules and sent (timers)
    # The share of the prompt (as sent) byte-identical to the prompt that wrote the turn
    # before: what a model server's prompt cache can reuse. None: no earlier prompt.
    prefix_share: float | None = None

    @property
    def history_included(self) -> int:
        return len(self.history)

    @property
    def history_dropped(self) -> int:
        return self.history_available - len(self.history)

    @property
    def total_tokens(self) -> int:
        return sum(s.tokens for s in self.sections)

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            # (by hand: `asdict` copies every value deeply; these are strings and numbers)
            "sections": [
                {**vars(s), "items": [dict(vars(item)) for item in s.items]} for s in self.sections
            ],
            "budget": self.budget,
            "reserve_for_reply": self.reserve_for_reply,
            "total_tokens": self.total_tokens,
            "history_included": self.history_included,
            "history_dropped": self.history_dropped,
            "history_first_depth": self.history[0].depth if self.history else None,
            "author_note_at": self.author_note_at,
            "in_scene": self.in_scene,
            "notes": self.notes,
            "inserts": self.inserts,
            "cards_fired": self.cards_fired,
            "prefix_share": self.prefix_share,
        }


# ---------------------------------------------------------------------------- scanning


def scan_parts(inputs: ContextInput, turns: int) -> list[worldinfo.Part]:
    """The text story cards are matched against, newest first: the action (age 0), then
    each past turn's narration and action (age 1 for the last turn, …)."""
    action_line = format_action(inputs.action_kind, inputs.action_text)
    parts = [worldinfo.Part.of("your action", action_line, 0)] if action_line else []
    recent = list(inputs.history)[-turns:] if turns > 0 else []
    for age, turn in enumerate(reversed(recent), start=1):
        if turn.narration:
            parts.append(worldinfo.Part.of(f"turn {turn.depth} (narration)", turn.narration, age))
        if turn.action_line:
            parts.append(worldinfo.Part.of(f"turn {turn.depth} (action)", turn.action_line, age))
    return parts


def select_cards(inputs: ContextInput) -> worldinfo.Selection:
    """Story cards with their World Info rules and gates (see `worldinfo`)."""
    # Hysteresis: a card with no timers of its own stays `card_linger_turns` after it last
    # fired, so it does not flicker in and out of the prompt as a word comes and goes.
    cards = card_set(inputs.plot.get("story_cards"), inputs.options.card_linger_turns)
    deepest = max(inputs.options.window_turns, cards.deepest)
    options = inputs.options
    budget = int((options.budget - options.reserve_for_reply) * options.card_share)
    if options.card_budget:
        budget = min(budget, options.card_budget)
    return worldinfo.select(
        cards,
        scan_parts(inputs, deepest),
        turn=inputs.turn,
        seed=inputs.seed,
        state=inputs.state,
        rules=inputs.rules,
        last_fired=inputs.card_last_fired,
        window_turns=inputs.options.window_turns,
        recursion_depth=inputs.options.recursion_depth,
        budget_tokens=max(1, budget),
    )


def scan(inputs: ContextInput) -> Scan:
    """Match story cards and characters against the recent window (player action included)."""
    action_line = format_action(inputs.action_kind, inputs.action_text)
    window = recent_window(
        [(t.depth, t.action_line, t.narration) for t in inputs.history],
        action_line,
        inputs.options.window_turns,
    )
    cards = select_cards(inputs)
    protagonist = "player"
    in_scene = match_characters(characters_in(inputs.state, protagonist), window)
    # Whoever the scene says is present is in scene, whatever the recent text calls them.
    named = {t.key for t in in_scene}
    present = ((inputs.state or {}).get("scene") or {}).get("present") or []
    in_scene += [
        Triggered(-1, str(p), "present", "the scene")
        for p in present
        if p not in named and p != protagonist
    ]
    return Scan(window, cards, in_scene)


# ---------------------------------------------------------------------------- rendering


LABELS = (
    "Player character",
    "Author's note",
    "Memories of earlier events",
    "World lore",
    "Essentials",
    "Story so far",
)
"""The labels this module's sections open with ("World lore: …", "[Author's note: …"): a
reply line that opens with one copies the prompt's form, whatever follows (context/echo)."""


def persona_text(persona: dict[str, Any] | None) -> str:
    persona = persona or {}
    name = str(persona.get("name") or "").strip()
    if not name:
        return ""
    who = f"Player character:\nYou are {name}"
    if str(persona.get("pronouns") or "").strip():
        who += f" ({str(persona['pronouns']).strip()})"
    who += "."
    if str(persona.get("description") or "").strip():
        who += " " + str(persona["description"]).strip()
    return who


def author_note_line(note: str) -> str:
    return f"[Author's note: {note.strip()}]"


def memories_text(memories: Sequence[RetrievedMemory]) -> str:
    if not memories:
        return ""
    ordered = sorted(memories, key=lambda m: (m.depth, m.id))
    return "Memories of earlier events:\n" + "\n".join(f"- {m.text.strip()}" for m in ordered)


def card_line(entry: str) -> str:
    return f"World lore: {entry.strip()}"


async def assemble(
    inputs: ContextInput, count_tokens: CountFn, found: Scan | None = None
) -> Assembly:
    """Fit the sections into the budget and say why each one is there."""
    options = inputs.options
    plot = inputs.plot
    found = found or scan(inputs)
    action_line = format_action(inputs.action_kind, inputs.action_text) or CONTINUE_CUE

    async def make(name: str, text: str | None, why: str, source: str) -> Section | None:
        text = (text or "").strip()
        if not text:
            return None
        return Section(name, text, why, await count_tokens(text), source)

    fixed: dict[str, Section | None] = {
        "narrator": await make(
            "narrator",
            plot.get("narrator_instructions"),
            "always sent",
            "plot: narrator instructions",
        ),
        "length": await make(
            "length",
            inputs.length_hint,
            "the narrator's reply length (your setting; its token limit follows it)",
            "settings: reply length",
        ),
        "persona": await make(
            "persona", persona_text(plot.get("persona")), "always sent", "plot: persona"
        ),
        "canon": await make(
            "canon", inputs.canon, "always sent: the campaign's canon", "state engine"
        ),
        "event_vocabulary": await make(
            "event_vocabulary",
            inputs.event_vocabulary,
            "inline mode: the events the model may propose, for this scenario",
            "state engine",
        ),
        "stat_guide": await make(
            "stat_guide",
            inputs.stat_guide,
            "always sent: the stats, their ranges and bands",
            "state engine",
        ),
        "ai_instructions": await make(
            "ai_instructions", plot.get("ai_instructions"), "always sent", "plot: AI instructions"
        ),
        "plot_essentials": await make(
            "plot_essentials",
            _labelled("Essentials", plot.get("plot_essentials")),
            "always sent",
            "plot: plot essentials",
        ),
        "story_summary": await make(
            "story_summary",
            _labelled("Story so far", inputs.story_summary),
            "always sent",
            inputs.summary_source,
        ),
        "current_state": await make(
            "current_state", inputs.current_state, _scene_why(found), "state engine"
        ),
        "refusals": await make(
            "refusals",
            inputs.refusals,
            "what the engine refused last turn, so the model does not repeat it",
            "state engine",
        ),
        "action": await make("action", action_line, "the player's action", "player"),
        "emit_reminder": await make(
            "emit_reminder",
            inputs.emit_reminder,
            "always last: how to report what changed",
            "state engine",
        ),
    }
    note = str(plot.get("author_note") or "").strip()
    depth = max(0, int(options.author_note_depth))
    where = f"{depth} lines before the end of history" if depth else "right after the history"
    if note:
        fixed["author_note"] = await make(
            "author_note", author_note_line(note), f"always sent, {where}", "plot: author's note"
        )

    usable = options.budget - options.reserve_for_reply
    spent = sum(s.tokens for s in fixed.values() if s)
    notes: list[str] = []
    if spent > usable:
        notes.append(
            f"The always-sent sections alone need {spent} tokens, over the {usable} available; "
            "shorten the instructions or raise the context budget."
        )
    history = list(inputs.history)
    newest_cost = await _turn_cost(history[-1], count_tokens) if history else 0

    # Memories, then cards, each within its share; both leave room for the newest turn.
    memory_section, spent = await _fit_memories(
        inputs, options, count_tokens, usable, spent, newest_cost
    )
    placed, spent = await _fit_cards(
        plot, found.cards, options, count_tokens, usable, spent, newest_cost
    )
    card_section = placed.section
    note_text = author_note_line(note) if note else ""
    if placed.with_note:  # cards placed "beside the author's note" share its line
        note_text = "\n".join([note_text, *placed.with_note] if note_text else placed.with_note)
        author = fixed.get("author_note")
        if author is None:
            why = f"story cards placed beside the author's note, {where}"
            fixed["author_note"] = author = Section("author_note", note_text, why, 0, "story cards")
        author.text = note_text
        author.tokens = await count_tokens(note_text)  # the cards' share was counted by _fit_cards

    kept, history_notes = await _fit_history(
        history,
        count_tokens,
        usable - spent,
        options.history_step,
        options.history_chunk,
        inputs.previous_history_start,
    )
    notes.extend(history_notes)
    if memory_section is not None and kept:
        memory_section, spent = await _drop_covered(
            memory_section, inputs, kept[0].depth, count_tokens, spent
        )
    history_section = None
    note_at = None
    if kept:
        total_lines = sum(len(t.lines) for t in kept)
        note_at = max(0, total_lines - depth) if note_text else None
        inserts = [(max(0, total_lines - d), line) for d, line in placed.at_depth]
        text = render_history(kept, note_text or None, note_at, chat=False, inserts=inserts)
        cost = sum([await _turn_cost(t, count_tokens) for t in kept])
        why = f"the last {len(kept)} of {len(history)} turns fit the budget"
        if len(kept) < len(history):
            why += f"; {len(history) - len(kept)} older turns were cut (from turn {kept[0].depth - 1} back)"
        history_section = Section("history", text, why, cost, "story")
    elif note_text:
        note_at = 0
    if not kept:
        inserts = [(0, line) for _, line in placed.at_depth]

    by_name = {
        **fixed,
        "memories": memory_section,
        "story_cards": card_section,
        "story_cards_after": placed.after,
        "history": history_section,
    }
    sections = [s for name in ORDER if (s := by_name.get(name)) is not None]
    if note and history_section is not None and by_name.get("author_note"):
        author = by_name["author_note"]
        assert author is not None
        author.why = f"always sent, placed {where} (line {note_at})"
    return Assembly(
        sections=sections,
        history=kept,
        action_line=action_line,
        budget=options.budget,
        reserve_for_reply=options.reserve_for_reply,
        history_available=len(history),
        author_note_at=note_at,
        in_scene=found.in_scene_ids,
        notes=notes + found.cards.notes + _cut_note(placed.cut),
        inserts=inserts,
        cards_fired=placed.fired,
    )


def _labelled(label: str, text: Any) -> str:
    text = str(text or "").strip()
    return f"{label}: {text}" if text else ""


def _scene_why(found: Scan) -> str:
    if not found.in_scene:
        return "always sent: the state at the moment being read (no other character in scene)"
    named = ", ".join(f"{t.key} ('{t.trigger}' in {t.where})" for t in found.in_scene)
    return f"always sent: the state at the moment being read; in scene: {named}"


async def _turn_cost(turn: HistoryTurn, count_tokens: CountFn) -> int:
    return await count_tokens("\n".join(turn.lines))


async def _fit_memories(
    inputs: ContextInput,
    options: ContextOptions,
    count_tokens: CountFn,
    usable: int,
    spent: int,
    newest: int,
) -> tuple[Section | None, int]:
    if not inputs.memories:
        return None, spent
    cap = min(int(usable * options.memory_share), usable - spent - newest)
    items, chosen, used = [], [], 0
    header = await count_tokens("Memories of earlier events:")
    for memory in inputs.memories:  # best first; pinned ones come first from the bank
        cost = await count_tokens(f"- {memory.text.strip()}")
        fits = header + used + cost <= cap
        why = memory.why or (
            ("pinned" if memory.pinned else "relevant") + f", score {memory.score:.3f}"
        )
        if not fits:
            why += "; dropped: over the memory share of the budget"
        items.append(
            Item(
                f"memory {memory.id}",
                memory.text,
                cost,
                why,
                fits,
                memory.id,
                round(memory.score, 4),
            )
        )
        if fits:
            used += cost
            chosen.append(memory)
    if not chosen:
        section = Section(
            "memories", "", "no retrieved memory fit the budget", 0, "memory bank", items
        )
        return section, spent
    text = memories_text(chosen)
    tokens = await count_tokens(text)
    why = f"{len(chosen)} of {len(inputs.memories)} retrieved memories"
    if inputs.memory_note:
        why += f" ({inputs.memory_note})"
    return Section("memories", text, why, tokens, "memory bank", items), spent + tokens


async def _drop_covered(
    section: Section, inputs: ContextInput, first_kept: int, count_tokens: CountFn, spent: int
) -> tuple[Section | None, int]:
    """Memories whose whole block is still in the history sent add nothing: leave them out."""
    by_id = {m.id: m for m in inputs.memories}
    changed = False
    for item in section.items:
        memory = by_id.get(item.ref)  # type: ignore[arg-type]
        if item.included and memory and not memory.pinned and memory.first_depth >= first_kept:
            item.included = False
            item.why += "; left out: its turns are still in the history"
            changed = True
    if not changed:
        return section, spent
    chosen = [by_id[i.ref] for i in section.items if i.included]  # type: ignore[index]
    spent -= section.tokens
    if not chosen:
        return Section(
            "memories",
            "",
            "every retrieved memory's turns are still in the history",
            0,
            section.source,
            section.items,
        ), spent
    section.text = memories_text(chosen)
    section.tokens = await count_tokens(section.text)
    section.why = f"{len(chosen)} of {len(inputs.memories)} retrieved memories" + (
        f" ({inputs.memory_note})" if inputs.memory_note else ""
    )
    return section, spent + section.tokens


@dataclass
class PlacedCards:
    """The cards that fit, by where they go."""

    section: Section | None = None  # before the history (with every card's item for Insights)
    after: Section | None = None  # after the history
    with_note: list[str] = field(default_factory=list)  # beside the author's note
    at_depth: list[tuple[int, str]] = field(default_factory=list)  # (lines from the end, text)
    fired: list[int] = field(default_factory=list)  # fired by their own rules and sent
    cut: list[str] = field(default_factory=list)  # fired, but over the overall card budget


async def _fit_cards(
    plot: dict[str, Any],
    selection: worldinfo.Selection,
    options: ContextOptions,
    count_tokens: CountFn,
    usable: int,
    spent: int,
    newest: int,
) -> tuple[PlacedCards, int]:
    """Fired cards in priority order (constant, then higher order) while the overall
    story-card budget lasts (`card_share` of the context, capped at `card_budget` tokens);
    each card first cut to its own `max_tokens`. Within a place, cards are written in
    ascending order, so the highest order comes last.

    A card the overall budget drops is not sent, so it does not count as fired for its
    timers: its sticky does not start (it would hold on a card the model never saw) and
    its cooldown does not start (it would keep out lore that never went in); it simply
    tries again next turn. A sticky card already running keeps its own count."""
    placed = PlacedCards()
    decisions = selection.decisions
    if not decisions:
        return placed, spent
    share = int(usable * options.card_share)
    cap = min(share, usable - spent - newest)
    limit = f"{int(options.card_share * 100)}% of the context budget, {share} tokens"
    if options.card_budget and options.card_budget < cap:
        cap, limit = options.card_budget, f"the story-card budget of {options.card_budget} tokens"
    elif cap < share:
        limit = f"the {cap} tokens left once the always-sent sections and the newest turn fit"
    items: list[Item] = []
    chosen: list[tuple[int, int, str, Any]] = []  # (order, index, line, card)
    used = 0
    for hit in selection.fired:
        card = selection.cards[hit.index]
        line = card_line(card.entry)
        cost = await count_tokens(line)
        why = hit.why + "".join(f"; {step}" for step in hit.steps)
        if card.max_tokens and cost > card.max_tokens:
            line = await _cut(line, card.max_tokens, count_tokens)
            why += f"; cut to its own budget of {card.max_tokens} tokens (was {cost})"
            cost = await count_tokens(line)
        fits = used + cost <= cap
        if not fits:
            why += f"; dropped by the overall budget: {used} of {cap} tokens used, it needs {cost} ({limit})"
            placed.cut.append(hit.name)
        elif card.position != "before_history":
            why += f"; placed {_placement(card)}"
        items.append(Item(hit.name, line, cost, why, fits, hit.index))
        if fits:
            used += cost
            chosen.append((card.order, hit.index, line, card))
            if hit.fresh:
                placed.fired.append(hit.index)
    for d in sorted(decisions.values(), key=lambda d: d.index):
        if not d.fired and d.stopped:
            items.append(Item(d.name, "", 0, f"not sent: {d.why}", False, d.index))
    chosen.sort(key=lambda c: (c[0], c[1]))
    before = [line for _, _, line, card in chosen if card.position == "before_history"]
    after = [line for _, _, line, card in chosen if card.position == "after_history"]
    placed.with_note = [line for _, _, line, card in chosen if card.position == "author_note"]
    placed.at_depth = [
        (card.depth, line) for _, _, line, card in chosen if card.position == "at_depth"
    ]
    placed.fired.sort()
    total = len(selection.fired)
    why = f"{len(chosen)} of {total} fired cards" + (
        f" ({selection.unmatched} others had no key in the window)" if selection.unmatched else ""
    )
    if before:
        text = "\n".join(before)
        tokens = await count_tokens(text)
        placed.section = Section("story_cards", text, why, tokens, "story cards", items)
    else:
        placed.section = Section(
            "story_cards",
            "",
            why if chosen else "no card fired or fit the budget",
            0,
            "story cards",
            items,
        )
    if after:
        text = "\n".join(after)
        placed.after = Section(
            "story_cards_after",
            text,
            "story cards placed after the history",
            await count_tokens(text),
            "story cards",
        )
    return placed, spent + used


def _cut_note(cut: list[str]) -> list[str]:
    if not cut:
        return []
    names = ", ".join(f"'{name}'" for name in cut)
    return [
        f"Story cards fired but cut by the overall card budget (not sent; their timers do not start): {names}."
    ]


def _placement(card: Any) -> str:
    if card.position == "at_depth":
        return f"{card.depth} lines before the end of history"
    return {
        "before_history": "before the history",
        "after_history": "after the history",
        "author_note": "beside the author's note",
    }[card.position]


async def _cut(line: str, limit: int, count_tokens: CountFn) -> str:
    """The longest prefix of whole words within `limit` tokens (binary search on words)."""
    words = line.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if await count_tokens(" ".join(words[:mid]) + "…") <= limit:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + "…"


async def _fit_history(
    history: list[HistoryTurn],
    count_tokens: CountFn,
    room: int,
    step: int,
    chunk: float = 0.3,
    previous_start: int | None = None,
) -> tuple[list[HistoryTurn], list[str]]:
    """The turns to send: dropped from the front in chunks, never a turn at a time.

    While everything from the last prompt's first turn (`previous_start`, a node id) still
    fits, the history starts there again and only grows, so the model server's cached
    prefix covers all of it. When it no longer fits, at least `step` turns are dropped,
    and enough that `chunk` of the room is free again: the next drop is several turns
    away. The newest turn always goes."""
    # Costs from the newest back, only as far as could ever fit: O(what is sent).
    suffix: dict[int, int] = {len(history): 0}
    fit_from = len(history)
    for i in range(len(history) - 1, -1, -1):
        total = suffix[i + 1] + await _turn_cost(history[i], count_tokens)
        if total > room and fit_from < len(history):
            break
        suffix[i] = total
        fit_from = i
    last = max(0, len(history) - 1)
    if fit_from == 0:
        start = 0
    else:
        ids = [t.node_id for t in history]
        before = (
            ids.index(previous_start)
            if previous_start is not None and previous_start in ids
            else None
        )
        if before is not None and before >= fit_from:
            start = before
        else:
            target = room * (1.0 - max(0.0, min(0.9, chunk)))
            start = next((i for i in range(fit_from, len(history)) if suffix[i] <= target), last)
            if before is not None:
                start = max(start, min(before + max(1, step), last))
    notes = [f"{start} older turns did not fit and were left out."] if start > 0 else []
    return history[start:], notes


def render_history(
    turns: Sequence[HistoryTurn],
    note: str | None,
    note_at: int | None,
    chat: bool,
    inserts: Sequence[tuple[int, str]] = (),
) -> str:
    """The history as text, the author's note inserted before line `note_at` and each
    insert (story cards at a depth) before its line."""
    placed = _all_inserts(note, note_at, inserts)
    blocks, line_no = [], 0
    for turn in turns:
        lines = []
        for line in turn.lines:
            lines.extend(placed.pop(line_no, []))
            lines.append(line)
            line_no += 1
        if lines:  # (a step of the player's own — a correction, an update — has none)
            blocks.append("\n".join(lines))
    text = SEPARATOR.join(blocks)
    rest = [t for at in sorted(placed) for t in placed[at]]
    if rest:
        text = "\n".join([text, *rest]) if text else "\n".join(rest)
    return text


def _all_inserts(
    note: str | None, note_at: int | None, inserts: Sequence[tuple[int, str]]
) -> dict[int, list[str]]:
    """Line index → texts to put before it: cards at a depth first, then the note."""
    placed: dict[int, list[str]] = {}
    for at, text in inserts:
        placed.setdefault(at, []).append(text)
    if note and note_at is not None:
        placed.setdefault(note_at, []).append(note)
    return placed


def flat_prompt(request: GenerationRequest) -> str:
    """The request as one text, in the order a server reads it (for prefix comparisons)."""
    if request.mode == "chat":
        return "".join(f"<{m.role}>\n{m.content}\n" for m in request.messages)
    return request.prompt


def shared_prefix_share(previous: str, current: str) -> float:
    """How much of `current`, from its start, is byte-identical to `previous`."""
    a, b = previous.encode(), current.encode()
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on the longest common prefix (C-speed comparisons)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo / len(b) if b else 0.0


def prompt_digest(request: GenerationRequest) -> str:
    """A short digest of exactly what was sent, to check a reconstruction in Insights."""
    if request.mode == "chat":
        body = "\x1e".join(f"{m.role}\x1f{m.content}" for m in request.messages)
    else:
        body = request.prompt
    return hashlib.blake2b(body.encode(), digest_size=12).hexdigest()


# ---------------------------------------------------------------------------- requests


def _head_text(assembly: Assembly) -> str:
    return SEPARATOR.join(s.text for s in assembly.sections if s.name in HEAD and s.text)


def _tail_text(assembly: Assembly) -> str:
    return SEPARATOR.join(s.text for s in assembly.sections if s.name in TAIL and s.text)


def _note(assembly: Assembly) -> str | None:
    section = assembly.section("author_note")
    return section.text if section else None


def chat_request(assembly: Assembly, **options: Any) -> GenerationRequest:
    """Chat form: the head as the system message, turns as user/assistant pairs.

    The author's note goes at its line; where that line falls inside a narration it is
    carried to the start of the next player message, so the model is never shown words
    put in its own mouth.
    """
    messages = [Message(role="system", content=_head_text(assembly))]
    placed = _all_inserts(_note(assembly), assembly.author_note_at, assembly.inserts)
    pending = [(at, text) for at in sorted(placed) for text in placed[at]]
    line_no = 0
    for turn in assembly.history:
        if not turn.lines:
            continue  # a step of the player's own (a correction, an update): nothing was said
        cue = BEGIN_CUE if turn.action_kind == "opening" else CONTINUE_CUE
        user = turn.action_line or cue
        due = [text for at, text in pending if at <= line_no]
        if due:
            user = "\n".join(due) + f"\n\n{user}"
            pending = [(at, text) for at, text in pending if at > line_no]
        line_no += len(turn.lines)
        messages.append(Message(role="user", content=user))
        messages.append(Message(role="assistant", content=turn.narration))
    last = _tail_text(assembly) or assembly.action_line
    if pending:
        last = "\n".join(text for _, text in pending) + f"\n\n{last}"
    messages.append(Message(role="user", content=last))
    return GenerationRequest(mode="chat", messages=_merge_same_roles(messages), **options)


def completion_request(assembly: Assembly, **options: Any) -> GenerationRequest:
    """Completion form: a plain transcript the model continues (base models, Gemma)."""
    head = _head_text(assembly)
    story = render_history(
        assembly.history,
        _note(assembly),
        assembly.author_note_at,
        chat=False,
        inserts=assembly.inserts,
    )
    tail = _tail_text(assembly) or assembly.action_line
    prompt = SEPARATOR.join(part for part in (head, "---", story, tail) if part) + "\n"
    stop = ["\n>", "\n\n\n", "---"]
    return GenerationRequest(mode="completion", prompt=prompt, stop=stop, **options)


def build_request(assembly: Assembly, mode: str, **options: Any) -> GenerationRequest:
    return (
        chat_request(assembly, **options)
        if mode == "chat"
        else completion_request(assembly, **options)
    )


def _merge_same_roles(messages: list[Message]) -> list[Message]:
    """Some chat templates reject two user messages in a row (a Story turn after Continue)."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role == message.role and message.role != "system":
            merged[-1] = Message(
                role=message.role, content=merged[-1].content + SEPARATOR + message.content
            )
        else:
            merged.append(message)
    return merged
