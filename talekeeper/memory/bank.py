"""The memory bank: short memories of old turns, a running summary, and retrieval.

Memories are written after a turn, in the background (see `worker.py`):

- **memories**: turns are grouped in blocks of `memory_every` (6). Once the story is a
  whole block past one (and at least `memory_start` (12) turns long), that block is
  summarised in at most 50 words. A memory belongs to the block's last node, so only the
  memories on the path to the head can be retrieved: undo and branches never leak a future.
- **summary**: every `summary_every` (15) turns the running summary is rewritten from the
  summary in force there (a player's edit included — it is the base, never overwritten)
  plus the memories and turns since. A summary version is anchored at its node too.
- **retrieval**: each turn, the memories on the path are ranked against the recent story
  (embeddings when an embedding model is configured, BM25 otherwise); pinned ones always
  go and count toward top-K.
- **capacity**: beyond `memory_capacity` active memories the least useful (never pinned,
  fewest uses, longest unused, oldest) are marked forgotten — kept, not deleted.

Nothing here decides *whether* the player may do something; it reads and writes rows.
Which blocks are due is derived from the rows that exist (`due.py`), so a failed run is
simply retried on the next turn.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.orm import Session

from talekeeper.context.prompt import RetrievedMemory
from talekeeper.context.settings import ContextSettings
from talekeeper.memory import lexical, recall
from talekeeper.memory.vectors import VectorIndex, pack
from talekeeper.store.db import serialize
from talekeeper.store.models import Memory, Node, StorySummary, utcnow
from talekeeper.story.paths import full_path

MEMORY_WRITES = 0x746B_6D  # `serialize` scope: the memory bank's writes per adventure
log = logging.getLogger(__name__)

QUERY_TURNS = 4  # the recent story retrieval compares against: the last 4 turns and the action
EXCERPT_CHARS = 8000  # the longest block excerpt handed to the summariser
SUMMARY_MATERIAL_CHARS = 6000


HAND = "hand"
"""A memory the player wrote (`panel.add`): it belongs to the moment it was written at, like
any other, and never stands in for the summary of a block of turns."""


def bank_on(plot: dict[str, Any] | None) -> bool:
    """Whether this adventure's memory bank is on (`panel.switch`; on unless turned off)."""
    return (plot or {}).get("memory_bank") is not False


def path_ids(session: Session, node_id: int) -> Sequence[int]:
    """Node ids from the root to `node_id`: index i is the node at depth i (kept between
    turns, see `story.paths`)."""
    return full_path(session, node_id)


# ------------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class SummaryInForce:
    text: str
    depth: int  # the depth it summarises up to (-1: the plot component, before any turn)
    source: str  # "plot components" | "auto summary" | "your edit"
    id: int | None = None

    @property
    def label(self) -> str:
        if self.id is None:
            return "plot components: story summary"
        return f"{self.source} at turn {self.depth}"


_SUMMARIES = (  # built once: every turn reads it
    select(
        StorySummary.id,
        StorySummary.node_id,
        StorySummary.depth,
        StorySummary.text,
        StorySummary.source,
    )
    .where(
        StorySummary.adventure_id == bindparam("adventure"), StorySummary.depth < bindparam("below")
    )
    .order_by(StorySummary.depth.desc(), StorySummary.id.desc())
    .limit(bindparam("page"))
    .offset(bindparam("skip"))
)


def summary_at(
    session: Session, adventure_id: int, path: Sequence[int], fallback: str
) -> SummaryInForce:
    """The newest summary version anchored on `path` (root → node), else the plot's."""
    if path:
        # Newest first, a page at a time: on the played branch the first row is the one,
        # so a long story's hundreds of older versions are never read.
        offset, page = 0, 16
        while True:
            rows = session.execute(
                _SUMMARIES,
                {"adventure": adventure_id, "below": len(path), "page": page, "skip": offset},
            ).all()
            for row in rows:
                if path[row.depth] == row.node_id:
                    source = "your edit" if row.source == "player" else "auto summary"
                    return SummaryInForce(row.text, row.depth, source, row.id)
            if len(rows) < page:
                break
            offset, page = offset + page, page * 4
    return SummaryInForce(fallback or "", -1, "plot components")


def set_summary(session: Session, adventure_id: int, head: Node, text_: str) -> StorySummary:
    """The player's edit: a summary version at the head, the base of the next update."""
    row = StorySummary(
        adventure_id=adventure_id,
        node_id=head.id,
        depth=head.depth,
        text=text_.strip(),
        source="player",
    )
    session.add(row)
    session.flush()
    return row


# ----------------------------------------------------------------------------- retrieval


@dataclass
class Candidate:
    id: int
    depth: int
    first_depth: int
    text: str
    pinned: bool
    embedding: bytes | None = None
    embedding_model: str | None = None


@dataclass
class Retrieval:
    memories: list[RetrievedMemory] = field(default_factory=list)
    method: str = "none"
    considered: int = 0

    @property
    def note(self) -> str:
        return f"{self.method}, {self.considered} memories on this path considered"


def candidates(
    session: Session, adventure_id: int, path: Sequence[int], with_vectors: bool
) -> list[Candidate]:
    """Active memories whose node is on `path`."""
    if not path:
        return []
    columns = [
        Memory.id,
        Memory.node_id,
        Memory.depth,
        Memory.first_depth,
        Memory.text,
        Memory.pinned,
    ]
    if with_vectors:
        columns += [Memory.embedding, Memory.embedding_model]
    rows = session.execute(
        select(*columns).where(
            Memory.adventure_id == adventure_id, Memory.status == "active", Memory.depth < len(path)
        )
    )
    found = []
    for row in rows:
        if path[row.depth] != row.node_id:
            continue  # on another branch
        found.append(
            Candidate(
                row.id,
                row.depth,
                row.first_depth,
                row.text,
                row.pinned,
                row.embedding if with_vectors else None,
                row.embedding_model if with_vectors else None,
            )
        )
    return found


def lexical_on_path(
    session: Session, adventure_id: int, path: Sequence[int], query: str
) -> tuple[list[tuple[Candidate, float]], int]:
    """BM25 over the active memories on `path`, from the adventure's kept index (see
    `recall`): pinned ones and those sharing a word with the query, best first; and how
    many were considered."""
    found, considered = recall.ranked_on_path(session, adventure_id, path, query)
    return [
        (Candidate(r.id, r.depth, r.first_depth, r.text, r.pinned), s) for r, s in found
    ], considered


def rank_lexical(query: str, pool: Sequence[Candidate]) -> list[tuple[Candidate, float]]:
    scores = lexical.rank(query, [c.text for c in pool])
    return sorted(zip(pool, scores, strict=True), key=lambda p: (-p[1], -p[0].depth))


def rank_vectors(
    query_vector: Sequence[float], pool: Sequence[Candidate], model: str
) -> list[tuple[Candidate, float]]:
    usable = [c for c in pool if c.embedding and c.embedding_model == model]
    index = VectorIndex([c.id for c in usable], [c.embedding for c in usable])
    scores = index.scores(query_vector)
    ranked = [(c, scores.get(c.id, 0.0)) for c in pool]  # no vector / other model: 0
    return sorted(ranked, key=lambda p: (-p[1], -p[0].depth))


STICKY = 1.25
"""A memory sent last turn keeps its place unless another outscores it by 25%: churn in
the memories section costs the model server its cached prompt from there on."""


def choose(
    ranked: Sequence[tuple[Candidate, float]],
    top_k: int,
    method: str,
    previous: frozenset[int] = frozenset(),
) -> list[RetrievedMemory]:
    """Pinned memories always; the best others with a positive score up to top_k in all."""
    pinned = [(c, s) for c, s in ranked if c.pinned]
    rest = [(c, s) for c, s in ranked if not c.pinned and s > 0]
    if previous:
        rest.sort(key=lambda p: -(p[1] * STICKY if p[0].id in previous else p[1]))
    chosen = pinned + rest[: max(0, top_k - len(pinned))]
    result = []
    for candidate, score in chosen:
        why = "pinned" if candidate.pinned else f"relevant ({method} score {score:.3f})"
        if candidate.id in previous and not candidate.pinned:
            why += ", also sent last turn"
        result.append(
            RetrievedMemory(
                candidate.id,
                candidate.text,
                float(score),
                candidate.pinned,
                candidate.depth,
                why,
                candidate.first_depth,
            )
        )
    return result


# Built once: a turn runs it every time, and making the statement cost more than running it.
# On the table, not the class: no ORM object is touched (nor needs to be), so the ORM's
# bulk-update bookkeeping is skipped; the column's onupdate (updated_at) still applies.
_COUNT_USE = (
    update(Memory.__table__)
    .where(Memory.__table__.c.id.in_(bindparam("ids", expanding=True)))
    .values(uses=Memory.__table__.c.uses + 1, last_used_depth=bindparam("used_at"))
)


def record_use(session: Session, memory_ids: Sequence[int], depth: int) -> None:
    """Count a retrieval that went into a prompt (commits with the turn)."""
    if memory_ids:
        session.execute(_COUNT_USE, {"ids": list(memory_ids), "used_at": depth})


# ------------------------------------------------------------------------------ writing


@dataclass(frozen=True)
class Block:
    first_depth: int
    depth: int
    node_id: int


def excerpt(
    session: Session,
    path: Sequence[int],
    first_depth: int,
    last_depth: int,
    limit: int = EXCERPT_CHARS,
) -> str:
    from talekeeper.story.actions import format_action

    ids = list(path[first_depth : last_depth + 1])
    rows = {n.id: n for n in session.scalars(select(Node).where(Node.id.in_(ids)))}
    parts = []
    for node_id in ids:
        node = rows[node_id]
        line = format_action(node.action_kind, node.action_text)
        parts.append("\n".join(p for p in (line, node.narration.strip()) if p))
    joined = "\n\n".join(parts)
    return joined[-limit:]


def add_memory(
    session: Session, adventure_id: int, block: Block, text_: str, source: str = "auto"
) -> Memory | None:
    """Insert a memory unless the block got one meanwhile (another run raced us, perhaps
    in another app process on the same PostgreSQL database)."""
    serialize(session, MEMORY_WRITES, adventure_id)
    exists = session.scalar(
        select(func.count())
        .select_from(Memory)
        .where(
            Memory.adventure_id == adventure_id,
            Memory.node_id == block.node_id,
            Memory.source != HAND,
        )
    )
    if exists:
        return None
    row = Memory(
        adventure_id=adventure_id,
        node_id=block.node_id,
        first_depth=block.first_depth,
        depth=block.depth,
        text=text_,
        source=source,
        pinned=False,
        status="active",
        uses=0,
    )
    session.add(row)
    session.flush()
    return row


def set_vector(session: Session, memory_id: int, vector: Sequence[float], model: str) -> None:
    session.execute(
        update(Memory)
        .where(Memory.id == memory_id)
        .values(embedding=pack(vector), embedding_dim=len(vector), embedding_model=model)
        .execution_options(synchronize_session=False)
    )


def needing_vectors(
    session: Session, adventure_id: int, model: str, limit: int = 64
) -> list[tuple[int, str]]:
    """Active memories with no vector, or one from another model (re-embedded)."""
    rows = session.execute(
        select(Memory.id, Memory.text)
        .where(
            Memory.adventure_id == adventure_id,
            Memory.status == "active",
            (Memory.embedding.is_(None))
            | (Memory.embedding_model != model)
            | (Memory.embedding_model.is_(None)),
        )
        .order_by(Memory.id)
        .limit(limit)
    )
    return [(r.id, r.text) for r in rows]


def evict_over_capacity(session: Session, adventure_id: int, capacity: int) -> list[int]:
    """Mark the least useful active memories forgotten until `capacity` remain."""
    active = (
        session.scalar(
            select(func.count())
            .select_from(Memory)
            .where(Memory.adventure_id == adventure_id, Memory.status == "active")
        )
        or 0
    )
    excess = active - capacity
    if excess <= 0:
        return []
    ids = list(
        session.scalars(
            select(Memory.id)
            .where(
                Memory.adventure_id == adventure_id,
                Memory.status == "active",
                Memory.pinned.is_(False),
            )
            .order_by(
                Memory.uses, func.coalesce(Memory.last_used_depth, -1), Memory.depth, Memory.id
            )
            .limit(excess)
        )
    )
    if ids:
        session.execute(
            update(Memory)
            .where(Memory.id.in_(ids))
            .values(status="forgotten")
            .execution_options(synchronize_session=False)
        )
    return ids


def summary_due(
    path: Sequence[int], current: SummaryInForce, settings: ContextSettings
) -> int | None:
    """The depth a new summary should be anchored at, or None when none is due."""
    every = settings.summary_every
    target = ((len(path) - 1) // every) * every
    if target < every or current.depth >= target:
        return None
    return target


def summary_material(
    session: Session, adventure_id: int, path: Sequence[int], after: int, upto: int
) -> list[str]:
    """What happened in turns after..upto: the memories of whole blocks, then raw turns."""
    rows = session.execute(
        select(Memory.node_id, Memory.first_depth, Memory.depth, Memory.text)
        .where(
            Memory.adventure_id == adventure_id,
            Memory.status != "deleted",
            Memory.first_depth > after,
            Memory.depth <= upto,
        )
        .order_by(Memory.depth)
    )
    material, covered = [], after
    for row in rows:
        if path[row.depth] == row.node_id and row.first_depth == covered + 1:
            material.append(f"- {row.text}")
            covered = row.depth
    if covered < upto:
        raw = excerpt(session, path, covered + 1, upto, SUMMARY_MATERIAL_CHARS)
        material.append(raw)
    return material


def add_summary(
    session: Session,
    adventure_id: int,
    path: Sequence[int],
    depth: int,
    text_: str,
    expected: SummaryInForce,
) -> bool:
    """Write an auto summary at `depth` unless the summary in force there changed since
    it was read (the player edited it meanwhile): their edit is never overwritten."""
    serialize(session, MEMORY_WRITES, adventure_id)
    now = summary_at(
        session, adventure_id, path[: depth + 1], expected.text if expected.id is None else ""
    )
    if (now.id, now.text) != (expected.id, expected.text):
        return False
    session.add(
        StorySummary(
            adventure_id=adventure_id, node_id=path[depth], depth=depth, text=text_, source="auto"
        )
    )
    return True


def memory_row_view(memory: Memory, used_ids: set[int], on_path: bool) -> dict[str, Any]:
    state = memory.status
    if state == "active":
        state = "used" if memory.id in used_ids else "idle"
    return {
        "id": memory.id,
        "text": memory.text,
        "turns": [memory.first_depth, memory.depth],
        "node_id": memory.node_id,
        "state": state,
        "status": memory.status,
        "pinned": memory.pinned,
        "uses": memory.uses,
        "last_used_turn": memory.last_used_depth,
        "source": memory.source,
        "embedded": memory.embedding is not None,
        "embedding_model": memory.embedding_model,
        "on_path": on_path,
        "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
    }


def touch_status(session: Session, adventure_id: int, error: str | None) -> None:
    from talekeeper.store.models import MemoryStatus

    row = session.get(MemoryStatus, adventure_id)
    if row is None:
        row = MemoryStatus(adventure_id=adventure_id, last_error="", failures=0)
        session.add(row)
    row.last_run_at = utcnow()
    if error:
        row.last_error = error[:2000]
        row.last_error_at = utcnow()
        row.failures = (row.failures or 0) + 1
    else:
        row.failures = 0
        row.last_error = ""
