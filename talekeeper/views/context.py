"""Views of what the model is sent: Insights, plot components, story cards, memories.

Built by `service/insights.py` (from `context.insights.view` and `Assembly.as_dict`),
`service/plot.py`, `service/hand.py` and `memory/panel.py`.
"""

from __future__ import annotations

from pydantic import Field

from talekeeper.context.cardspec import Gate, StoryCard
from talekeeper.views.base import TIMESTAMP, Sparse, View


class SectionItem(View):
    """One entry inside a section: a story card, a memory, a character in scene."""

    key: str
    text: str
    tokens: int
    why: str = Field(description="Why it was (or was not) included.")
    included: bool
    ref: int | str | None = Field(
        description="The card's index, the memory's id or the character's id."
    )
    score: float | None = Field(description="A memory's retrieval score.")


class Section(View):
    """One section of the prompt."""

    name: str
    text: str
    why: str = Field(description="Why it was sent (which trigger fired, how much history fit, …).")
    tokens: int
    source: str
    items: list[SectionItem]


class Assembly(View):
    """The prompt as assembled: its sections and what the budget allowed."""

    sections: list[Section]
    budget: int = Field(description="Tokens of context the model is given, the reply included.")
    reserve_for_reply: int
    total_tokens: int
    history_included: int = Field(description="Past turns sent.")
    history_dropped: int = Field(description="Past turns that did not fit.")
    history_first_depth: int | None
    author_note_at: int | None = Field(
        description="The line of the history where the author's note goes."
    )
    in_scene: list[str] = Field(description="Characters in scene.")
    notes: list[str]
    inserts: list[tuple[int, str]] = Field(
        description="Story cards placed inside the history: (line, text)."
    )
    cards_fired: list[int] = Field(
        description="Story cards fired by their own rules (timers) and sent."
    )
    prefix_share: float | None = Field(
        description="Share of the prompt byte-identical to the turn before's (what a prompt cache can reuse)."
    )


class Message(View):
    """One chat message as sent."""

    role: str
    content: str


class PromptAsSent(View):
    """The exact request sent to the model, and its digest."""

    mode: str = Field(description="chat or completion.")
    messages: list[Message] | None = Field(description="Chat mode: the messages sent.")
    text: str | None = Field(description="Completion mode: the prompt sent.")
    digest: str = Field(description="A digest of the exact request.")


class RoleCall(View):
    """Another role's call for the same turn (a companion's remark): its prompt and what
    the model answered."""

    role: str
    prompt: str
    answer: str | None = Field(
        None, description="What the model answered, as it came (null: not recorded)."
    )
    note: str | None = Field(
        None, description="What the guards took out of the answer before it was shown, and why."
    )


class Insights(Assembly):
    """What was sent to the model for a turn and why (or, dry run, what would be sent now)."""

    node_id: int | None = Field(description="The turn; null for the dry run.")
    turn: int = Field(description="Turns after the opening.")
    dry_run: bool | None = Field(None, description="True for the dry run; null for a turn.")
    usable: int = Field(description="The budget less the reply's reserve.")
    triggered_cards: list[SectionItem]
    retrieved_memories: list[SectionItem]
    prompt: PromptAsSent
    stored: bool | None = Field(
        None, description="A past turn's Insights were stored when it was sent."
    )
    verified: bool | None = Field(
        None, description="The rebuilt prompt matches the digest stored when it was sent."
    )
    role: str | None = Field(
        None, description="Which role's call this was (the narrator's, usually)."
    )
    calls: list[RoleCall] | None = Field(
        None, description="Every other role's call for this turn (banter)."
    )


class PlotPersona(View):
    """The player's character."""

    name: str
    pronouns: str
    description: str


class Plot(View):
    """The adventure's plot components (its own copy of the scenario's)."""

    adventure_id: int
    narrator_instructions: str
    ai_instructions: str
    plot_essentials: str
    author_note: str
    story_summary: str = Field(description="The summary in force at the head.")
    story_summary_source: str = Field(description="Where the summary in force comes from.")
    persona: PlotPersona
    story_cards: int = Field(description="How many story cards the adventure has.")


class GateView(Sparse, Gate):
    """A gate as stored: `kind`, `id` and whatever differs from the defaults."""


class StoryCardView(View, StoryCard):
    """A story card, every field with its default, as the panel shows it."""

    gates: list[GateView] = Field(description="Conditions on the story's state.")
    index: int = Field(description="Its place in the adventure's list (the path's `{index}`).")
    trigger_list: list[str] = Field(description="The primary keys, split.")
    rules_in_words: list[str] = Field(description="The card's rules as sentences.")


class HandCall(View):
    """A recent "Write my turn" or "Suggest" call, as Insights shows it."""

    role: str = Field(description="“Write my turn” or “Suggest”.")
    at: str | None = Field(description="When it was made (ISO 8601).")
    prompt: str = Field(description="What the model was sent.")
    answer: str = Field(description="What it answered.")
    note: str | None = Field(description="What became of the answer, where something did.")


class Draft(View):
    """A draft of the player's next action: for the box, never sent by itself."""

    kind: str
    text: str
    note: str = Field(description="What the guards took out of the model's answer ('' if none).")


class Suggestions(View):
    """Short things the player could do next (up to three)."""

    suggestions: list[str]
    note: str = Field(description="What the guards took out of the model's answer ('' if none).")


class Memory(View):
    """One memory: a summary of a stretch of turns, retrieved when it matters."""

    id: int
    text: str
    turns: list[int] = Field(description="The first and last turn it covers.")
    node_id: int | None
    state: str = Field(description="used (in the last prompt), idle, or forgotten.")
    status: str = Field(description="active or forgotten, as stored.")
    pinned: bool
    uses: int
    last_used_turn: int | None
    source: str = Field(
        description="Who wrote it: `auto` (the summariser), `player` (edited) or `hand` (written by the player)."
    )
    embedded: bool
    embedding_model: str | None
    on_path: bool
    updated_at: str | None = Field(description=TIMESTAMP)


class MemoryCounts(View):
    """How many memories are in each state."""

    used: int
    idle: int
    forgotten: int


class SummaryInForce(View):
    """The story summary in force at the head, and where it comes from."""

    text: str
    source: str
    turn: int | None


class MemoryPanel(View):
    """The memories on the path to the head, the summary in force, the background run."""

    adventure_id: int
    memories: list[Memory]
    counts: MemoryCounts
    summary: SummaryInForce
    enabled: bool = Field(
        description="Memories are written and sent (settings and this adventure)."
    )
    bank_on: bool = Field(description="This adventure's own switch (off: nothing written or sent).")
    retrieval: str = Field(description="embeddings (which model) or lexical (BM25).")
    top_k: int
    capacity: int
    next_memory_at_turn: int
    next_summary_at_turn: int
    last_run_at: str | None = Field(description=TIMESTAMP)
    last_error: str | None
    failures: int
