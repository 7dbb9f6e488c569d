"""The memory panel's data and edits: list (used / idle / forgotten), edit, pin, delete.

The panel lists the memories on the path to the head — the ones this line of the story
can use. "used" means the memory went into the last turn's prompt; "idle" that it is
active but was not chosen; "forgotten" that capacity pushed it out (pinning or restoring
brings it back). Deleting leaves a tombstone with no text, so the summariser does not
write the same block again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.context.settings import context_settings
from talekeeper.errors import NotFound
from talekeeper.memory import bank
from talekeeper.store.models import Adventure, Memory, MemoryStatus, Node, TurnInsight


class MemoryNotFound(NotFound):
    pass


class MemoryNew(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=2000, description="What to remember.")
    pinned: bool = Field(False, description="Always sent, never forgotten.")


class MemoryEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(
        None, min_length=1, max_length=2000, description="New wording (it is re-embedded)."
    )
    pinned: bool | None = Field(
        None, description="Pinned memories are always sent and never forgotten."
    )
    forgotten: bool | None = Field(
        None, description="Mark forgotten (not sent), or false to restore."
    )


def used_in_last_prompt(session: Session, head_id: int) -> set[int]:
    row = session.get(TurnInsight, head_id)
    if row is None:
        return set()
    for section in row.data.get("sections", []):
        if section.get("n") == "memories":
            return {
                int(i["ref"])
                for i in section.get("items", [])
                if i.get("in") and i.get("ref") is not None
            }
    return set()


def panel(session: Session, adventure: Adventure) -> dict[str, Any]:
    settings = context_settings(session)
    path = bank.path_ids(session, adventure.head_node_id) if adventure.head_node_id else []
    on_path = set(path)
    used = used_in_last_prompt(session, adventure.head_node_id) if adventure.head_node_id else set()
    rows = session.scalars(
        select(Memory)
        .where(Memory.adventure_id == adventure.id, Memory.status != "deleted")
        .order_by(Memory.depth, Memory.id)
    )
    memories = [
        bank.memory_row_view(m, used, m.node_id in on_path) for m in rows if m.node_id in on_path
    ]
    summary = bank.summary_at(
        session, adventure.id, path, str((adventure.plot or {}).get("story_summary") or "")
    )
    status = session.get(MemoryStatus, adventure.id)
    counts = {
        state: sum(1 for m in memories if m["state"] == state)
        for state in ("used", "idle", "forgotten")
    }
    every, start = settings.memory_every, settings.memory_start
    head_depth = len(path) - 1
    next_at = max(start, (head_depth // every + 1) * every)
    return {
        "adventure_id": adventure.id,
        "memories": memories,
        "counts": counts,
        "summary": {"text": summary.text, "source": summary.label, "turn": summary.depth},
        "enabled": settings.memory_enabled and bank.bank_on(adventure.plot),
        "bank_on": bank.bank_on(adventure.plot),
        "retrieval": f"embeddings ({settings.embedding_model})"
        if settings.embedding_model
        else "lexical (BM25)",
        "top_k": settings.memory_top_k,
        "capacity": settings.memory_capacity,
        "next_memory_at_turn": next_at,
        "next_summary_at_turn": (head_depth // settings.summary_every + 1) * settings.summary_every,
        "last_run_at": status.last_run_at.isoformat() if status and status.last_run_at else None,
        "last_error": status.last_error if status and status.last_error else None,
        "failures": status.failures if status else 0,
    }


def _get(session: Session, adventure: Adventure, memory_id: int) -> Memory:
    row = session.get(Memory, memory_id)
    if row is None or row.adventure_id != adventure.id or row.status == "deleted":
        raise MemoryNotFound(f"No memory {memory_id} in this adventure.")
    return row


def edit(
    session: Session, adventure: Adventure, memory_id: int, change: MemoryEdit
) -> dict[str, Any]:
    row = _get(session, adventure, memory_id)
    if change.text is not None and change.text.strip() != row.text:
        row.text = " ".join(change.text.split())
        row.source = "player"
        row.embedding = None  # re-embedded on the next run
        row.embedding_dim = None
        row.embedding_model = None
    if change.pinned is not None:
        row.pinned = change.pinned
        if change.pinned and row.status == "forgotten":
            row.status = "active"
    if change.forgotten is not None:
        if change.forgotten and row.pinned:
            row.pinned = False
        row.status = "forgotten" if change.forgotten else "active"
    session.flush()
    on_path = row.node_id in set(bank.path_ids(session, adventure.head_node_id))
    return bank.memory_row_view(row, used_in_last_prompt(session, adventure.head_node_id), on_path)


def add(session: Session, adventure: Adventure, new: MemoryNew) -> dict[str, Any]:
    """A memory the player writes, belonging to the moment being read: it can be recalled
    on this line from here on, and never after Undo past it or on another line."""
    text = " ".join(new.text.split())
    if not text:
        raise ValueError("Write what to remember.")
    head = session.get(Node, adventure.head_node_id)
    assert head is not None
    row = Memory(
        adventure_id=adventure.id,
        node_id=head.id,
        first_depth=head.depth,
        depth=head.depth,
        text=text,
        source=bank.HAND,
        pinned=new.pinned,
        status="active",
        uses=0,
    )
    session.add(row)
    session.flush()
    return bank.memory_row_view(row, set(), True)


def switch(session: Session, adventure: Adventure, on: bool) -> None:
    """Turn this adventure's memory bank on or off: off, no memory or summary is written and
    none is sent; what it holds is kept for when it is on again."""
    adventure.plot = {**(adventure.plot or {}), "memory_bank": on}


def delete(session: Session, adventure: Adventure, memory_id: int) -> None:
    row = _get(session, adventure, memory_id)
    row.status = "deleted"
    row.text = ""
    row.pinned = False
    row.embedding = None
    row.embedding_dim = None
    row.embedding_model = None
