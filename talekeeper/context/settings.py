"""Context and memory settings: one validated model with help text, stored as `context`.

Read with `context_settings(session)`; a stored value that no longer validates falls back
to the defaults rather than locking the player out.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.orm import Session

from talekeeper.store import owner, setting_rows

KEY = "context"


class ContextSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    author_note_depth: int = Field(
        0,
        ge=0,
        le=50,
        description="Lines before the end of history where the author's note goes (0: right after it; deeper costs a prompt cache those lines every turn).",
        title="Author's note: lines from the end",
    )
    card_share: float = Field(
        0.2,
        ge=0.0,
        le=0.9,
        description="Largest share of the context budget story cards may take.",
        title="Story cards: largest share of the budget",
    )
    card_budget: int = Field(
        0,
        ge=0,
        le=100000,
        description="Story cards: at most this many tokens in all, whatever the share allows (0: the share alone). Cards cut by it are named in Insights.",
        title="Story cards: most tokens in all (0: the share alone)",
    )
    card_recursion_depth: int = Field(
        2,
        ge=0,
        le=10,
        description="How many times a fired card's text may bring in other cards (0: never).",
        title="Story cards: recursion depth",
    )
    memory_share: float = Field(
        0.15,
        ge=0.0,
        le=0.9,
        description="Largest share of the context budget retrieved memories may take.",
        title="Memories: largest share of the budget",
    )
    trigger_window_turns: int = Field(
        4,
        ge=0,
        le=50,
        description="How many recent turns story-card triggers are matched against.",
        title="Story cards: turns scanned for triggers",
    )
    history_step: int = Field(
        4,
        ge=1,
        le=32,
        description="Once old turns are cut, history starts on a multiple of this many turns, so model servers can reuse their prompt cache.",
        title="History step (prompt-cache friendly)",
    )
    memory_enabled: bool = Field(
        True,
        description="Write memories and update the story summary automatically.",
        title="Write memories and summaries automatically",
    )
    memory_every: int = Field(
        6, ge=2, le=100, description="Turns per memory.", title="Turns per memory"
    )
    memory_start: int = Field(
        12,
        ge=2,
        le=1000,
        description="The first turn at which a memory is written (of the block that is scrolling out).",
        title="First memory at turn",
    )
    summary_every: int = Field(
        15,
        ge=2,
        le=1000,
        description="Turns between story summary updates.",
        title="Turns between summary updates",
    )
    memory_top_k: int = Field(
        3,
        ge=0,
        le=50,
        description="Memories retrieved each turn, pinned ones included (they go after the history, so each is read anew every turn).",
        title="Memories retrieved per turn",
    )
    memory_capacity: int = Field(
        80,
        ge=1,
        le=100000,
        description="Active memories kept; beyond it the least useful are marked forgotten.",
        title="Memories kept before forgetting",
    )
    memory_max_words: int = Field(
        50, ge=10, le=200, description="Longest memory, in words.", title="Longest memory (words)"
    )
    embedding_model: str | None = Field(
        None,
        max_length=200,
        description="Embedding model on the configured server (its /v1/embeddings). Empty: lexical retrieval (BM25), which needs no model.",
        title="Embedding model",
    )


def context_settings(session: Session) -> ContextSettings:
    # A player's own (accounts on), else the installation's.
    own = owner.setting_key(KEY)
    row = setting_rows.row(session, own) or (setting_rows.row(session, KEY) if own != KEY else None)
    try:
        return ContextSettings(**(row.value if row and isinstance(row.value, dict) else {}))
    except ValidationError:
        return ContextSettings()


def update_context_settings(session: Session, values: dict) -> ContextSettings:
    """Merge and validate; raises pydantic's ValidationError and stores nothing if invalid."""
    current = context_settings(session).model_dump()
    merged = ContextSettings(**{**current, **values})
    setting_rows.write(session, owner.setting_key(KEY), merged.model_dump())
    return merged
