"""The database schema: scenarios, adventures, the story tree, Save Points, settings.

The story is a tree of immutable nodes (docs/architecture.md "The story tree"). Each node
keeps its parent, the child last chosen (`active_child_id`, what Redo follows), and the
compressed state snapshot after it, so restoring any position is one row read.
"""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class CompressedJSON(TypeDecorator):
    """JSON stored zlib-compressed: snapshots repeat on every node, so keep them small."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> bytes | None:
        if value is None:
            return None
        raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
        return zlib.compress(raw, 6)

    def process_result_value(self, value: bytes | None, dialect: Any) -> Any:
        if value is None:
            return None
        return json.loads(zlib.decompress(value))


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Scenario(Base):
    __tablename__ = "scenarios"

    id: Mapped[str] = mapped_column(String(80), primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    # The whole scenario document (texts, story cards, world and rules), as authored.
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    builtin: Mapped[bool] = mapped_column(default=False)
    # The player whose scenario this is, with accounts on (None: built-in, or local mode).
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class Adventure(Base):
    __tablename__ = "adventures"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scenario_id: Mapped[str | None] = mapped_column(
        ForeignKey("scenarios.id", ondelete="SET NULL"), nullable=True
    )
    title: Mapped[str] = mapped_column(String(200))
    root_node_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    head_node_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Per-adventure copy of the scenario's texts (plot components), editable mid-story.
    plot: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The state engine's rules, copied from the scenario at creation (None: narrative only).
    rules: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    turn_count: Mapped[int] = mapped_column(Integer, default=0)
    # The head turn while its background step (the state pass, a companion's remark) runs
    # after the narration was written; None once it has settled (migration 0008,
    # service/settling.py).
    pending_turn_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Each canon (plot texts and rules) the adventure has had on either side of an update
    # from its scenario, and which is in force at the head; None when never updated
    # (migration 0009, story/canon_versions.py).
    canon: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The player whose adventure this is, with accounts on (None: local mode, no accounts).
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_played_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Node(Base):
    """One turn: the player's action and the narration that answered it.

    Immutable once written; only `active_child_id`, `chain` and `branch_name` change — and, once,
    a turn written while its adventure's `pending_turn_id` names it: its background step
    settles its state, proposal and narration (`tree.settle`) before anything follows it.
    """

    __tablename__ = "nodes"
    __table_args__ = (
        Index("ix_nodes_adventure_parent", "adventure_id", "parent_id"),
        Index("ix_nodes_chain", "adventure_id", "chain", "depth", "child_count"),
        Index("ix_nodes_line_end", "adventure_id", "line_end"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    # Indexed on its own so deleting a turn finds its children by index (migration 0014).
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), nullable=True, index=True
    )
    active_child_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    action_kind: Mapped[str] = mapped_column(String(16))  # opening|do|say|story|continue
    action_text: Mapped[str] = mapped_column(Text, default="")
    narration: Mapped[str] = mapped_column(Text, default="")
    reasoning: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[dict[str, Any] | None] = mapped_column(CompressedJSON, nullable=True)
    # What the model proposed (raw text and parsed events) and what became of it.
    proposal: Mapped[dict[str, Any] | None] = mapped_column(CompressedJSON, nullable=True)
    branch_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # The sibling this turn tells again (a retry or an edit: a take of it; migration 0007);
    # null for a turn written as a new action, which begins a line (story/takes.families).
    take_of: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The redo chain it is on: the run of turns Redo walks through it (story/chains.py,
    # migration 0010). Kept by every change of an active child; never null once written.
    chain: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # How many children it has, and whether it ends a line (a leaf the lines list shows):
    # kept as the tree changes (story/line_ends.py, migration 0012).
    child_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    line_end: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # (SQLite) Entered in the text index search reads (store/text_index.py, migration 0011).
    in_index: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    model: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SavePoint(Base):
    __tablename__ = "save_points"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Setting(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)  # as migration 0001 made it


class ConnectionProfile(Base):
    """A named way to reach a model (migration 0006): which service, where, which model,
    its key (encrypted, see store/secrets.py), mode, samplers and context budget. Chosen
    as the player's default or for one adventure (settings rows, service/profiles.py)."""

    __tablename__ = "connection_profiles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The player whose profile it is, with accounts on (None: local mode, no accounts).
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True, index=True
    )
    name: Mapped[str] = mapped_column(String(80))
    service: Mapped[str] = mapped_column(String(40), default="custom")  # llm/services.py
    provider: Mapped[str] = mapped_column(String(20), default="openai")  # openai | ollama
    endpoint: Mapped[str] = mapped_column(String(500))
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    mode: Mapped[str] = mapped_column(String(16), default="chat")
    key_sealed: Mapped[str | None] = mapped_column(Text, nullable=True)  # a Fernet token
    samplers: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    context_budget: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


# --- Accounts (migration 0004): off by default; see accounts.py ----------------


class User(Base):
    """A player (or host) of an installation served with `--accounts`."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)  # the login name, lower-cased
    password_hash: Mapped[str] = mapped_column(String(200))  # Argon2id, with its parameters
    role: Mapped[str] = mapped_column(String(16), default="player")  # player | host
    disabled: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UserSession(Base):
    """A login. The cookie carries a random token; only its SHA-256 is stored, so a copy of
    the database opens no one's session. Rows live in the database, not in the cookie, so
    logging out (or a host disabling a player) ends the session in every app process."""

    __tablename__ = "user_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Invitation(Base):
    """A one-time sign-up link a host made (only the token's SHA-256 is stored)."""

    __tablename__ = "invitations"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    role: Mapped[str] = mapped_column(String(16), default="player")
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )


class PasswordReset(Base):
    """A one-time link a host made for a player who forgot their password (migration 0005;
    only the token's SHA-256 is stored)."""

    __tablename__ = "password_resets"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


# --- Context and memory (migration 0002) -------------------------------------------


_INSIGHT_ZDICT = (
    b'{"action": "> You ", "budget": , "hist": [, "mode": "chat", "note_at": , "notes": [" older turns '
    b'did not fit and were left out."], "opts": {"max_tokens": , "temperature": , "top_p": }, "pd": "'
    b'", "reserve": , "scene": [], "sections": [{"h": "", "n": "narrator", "src": "plot: narrator '
    b'instructions", "t": , "why": "always sent"}, {"h": "", "n": "persona", "src": "plot: persona", '
    b'"t": , "why": "always sent"}, {"h": "", "n": "event_vocabulary", "src": "state engine", "t": , '
    b'"why": "always sent: the events the model may propose and the campaign\'s canon"}, {"h": "", '
    b'"n": "stat_guide", "src": "state engine", "t": , "why": "always sent: the stats, their ranges '
    b'and bands"}, {"h": "", "n": "ai_instructions", "src": "plot: AI instructions", "t": , "why": '
    b'"always sent"}, {"h": "", "n": "plot_essentials", "src": "plot: plot essentials", "t": , "why": '
    b'"always sent"}, {"h": "", "n": "story_summary", "src": "auto summary at turn ", "t": , "why": '
    b'"always sent"}, {"h": "", "items": [{"h": "", "in": true, "k": "memory ", "ref": , "s": , "t": '
    b', "why": "relevant (BM25 score "}], "n": "memories", "src": "memory bank", "t": , "why": " of '
    b' retrieved memories (lexical (BM25),  memories on this path considered)"}, {"h": "", "items": '
    b'[{"h": "", "in": true, "k": "", "ref": , "t": , "why": "trigger \'\' in turn  (narration)"}], '
    b'"n": "story_cards", "src": "story cards", "t": , "why": " of  triggered cards"}, {"n": '
    b'"history", "src": "story", "t": , "why": "the last  of  turns fit the budget;  older turns were '
    b'cut (from turn  back)"}, {"h": "", "n": "author_note", "src": "plot: author\'s note", "t": , '
    b'"why": "always sent, placed 3 lines before the end of history (line )"}, {"h": "", "n": '
    b'"current_state", "src": "state engine", "t": , "why": "always sent: the state at the head; in '
    b'scene: "}, {"h": "", "n": "refusals", "src": "state engine", "t": , "why": "what the engine '
    b'refused last turn, so the model does not repeat it"}, {"n": "action", "src": "player", "t": , '
    b'"why": "the player\'s action"}, {"h": "", "n": "emit_reminder", "src": "state engine", "t": , '
    b'"why": "always last: how to report what changed"}], "v": 1}'
)


def _canonical(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


# Version 2's dictionary: version 1's, then whole records of both built-in scenarios in
# both state modes (store/insights_zdict.json). A record repeats its neighbours' sections,
# sources and reasons, so whole records teach zlib far more than a list of phrases: 1.03 KB
# a Greywater turn became 0.18 KB, and a scenario the dictionary has never seen compresses
# to about a third too. Frozen: every stored version-2 record needs exactly these bytes.
_INSIGHT_ZDICT_2 = _INSIGHT_ZDICT + b"".join(
    _canonical(record)
    for record in json.loads((Path(__file__).parent / "insights_zdict.json").read_text())
)
_INSIGHT_ZDICTS = {1: _INSIGHT_ZDICT, 2: _INSIGHT_ZDICT_2}


class InsightJSON(TypeDecorator):
    """Compact JSON for per-turn Insights: zlib with a preset dictionary of what records
    hold (a record is ~2.5 KB of JSON that repeats across turns but not within one, so
    plain zlib saves little). Marked with a leading version byte: the dictionary it used."""

    impl = LargeBinary
    cache_ok = True
    VERSION = 2

    def process_bind_param(self, value: Any, dialect: Any) -> bytes | None:
        if value is None:
            return None
        compressor = zlib.compressobj(
            9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, _INSIGHT_ZDICTS[self.VERSION]
        )
        raw = _canonical(value)
        return bytes([self.VERSION]) + compressor.compress(raw) + compressor.flush()

    def process_result_value(self, value: bytes | None, dialect: Any) -> Any:
        if value is None:
            return None
        zdict = _INSIGHT_ZDICTS.get(value[0])
        if zdict is not None:
            decompressor = zlib.decompressobj(-15, zdict)
            return json.loads(decompressor.decompress(value[1:]) + decompressor.flush())
        return json.loads(zlib.decompress(value))


class TurnInsight(Base):
    """What was sent to the model for one turn (Insights), stored compactly.

    `data` holds the assembly's recipe: each section's source, token cost and reason, with
    its text replaced by a digest into `context_texts` (instructions repeat every turn and
    are stored once) and the history replaced by the range of nodes it came from (nodes are
    immutable, so the exact prompt can be rebuilt).
    """

    __tablename__ = "turn_insights"

    node_id: Mapped[int] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    adventure_id: Mapped[int] = mapped_column(
        ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    data: Mapped[dict[str, Any]] = mapped_column(InsightJSON)


class ContextText(Base):
    """A section text referenced by digest from `turn_insights` (deduplicated per adventure)."""

    __tablename__ = "context_texts"

    adventure_id: Mapped[int] = mapped_column(
        ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    digest: Mapped[str] = mapped_column(String(32), primary_key=True)
    text: Mapped[bytes] = mapped_column(LargeBinary)  # zlib-compressed UTF-8


class Memory(Base):
    """A short memory of a block of turns. It belongs to the node it summarises (the
    block's last turn): only memories on the path to the head can be retrieved."""

    __tablename__ = "memories"
    __table_args__ = (Index("ix_memories_adventure_node", "adventure_id", "node_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(ForeignKey("adventures.id", ondelete="CASCADE"))
    # (indexed on its own for deleting turns: migration 0014)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"), index=True)
    first_depth: Mapped[int] = mapped_column(Integer)
    depth: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(String(16), default="auto")  # auto | player
    pinned: Mapped[bool] = mapped_column(default=False)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active|forgotten|deleted
    uses: Mapped[int] = mapped_column(Integer, default=0)
    last_used_depth: Mapped[int | None] = mapped_column(Integer, nullable=True)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # float32 LE
    embedding_dim: Mapped[int | None] = mapped_column(Integer, nullable=True)
    embedding_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class StorySummary(Base):
    """A version of the running story summary, anchored at the node it summarises up to.

    The summary in the prompt is the newest one on the path to the head, so undo and
    branches never show a summary of a future the player stepped back from. A player's
    edit is one of these too (source "player") and is the base of the next update.
    """

    __tablename__ = "story_summaries"
    __table_args__ = (Index("ix_story_summaries_adventure_node", "adventure_id", "node_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(ForeignKey("adventures.id", ondelete="CASCADE"))
    # (indexed on its own for deleting turns: migration 0014)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"), index=True)
    depth: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(String(16), default="auto")  # auto | player
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MemoryMark(Base):
    """What the memory bank's run found about the blocks up to a block end (`memory/bank.py`
    `due_blocks`): on the path to `node_id`, under the schedule (`every`, `start`), the block
    ends up to it that may lack a memory (`gaps`, ranges of ends); every other end has one.

    A memory's row lives as long as its node and every node below it, so what a mark says
    stays true for as long as its node exists, whichever process wrote the memories since:
    the run reads the nearest mark on its path and asks only about its gaps and the ends
    past it."""

    __tablename__ = "memory_marks"

    node_id: Mapped[int] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    every: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column(Integer)
    gaps: Mapped[str] = mapped_column(Text, default="")  # "lo-hi,lo-hi": ends, inclusive


class MemoryStatus(Base):
    """The memory bank's last background run per adventure: failures are kept visible."""

    __tablename__ = "memory_status"

    adventure_id: Mapped[int] = mapped_column(
        ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    last_run_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_error: Mapped[str] = mapped_column(Text, default="")
    last_error_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
