"""Helpers for the interop tests: build stories directly through the story modules (fast
enough for hypothesis), and read bundles back as records."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from talekeeper.context.insights import text_digest
from talekeeper.interop import bundles
from talekeeper.memory import bank
from talekeeper.service import adventures
from talekeeper.service import state_engine as world
from talekeeper.service.app import Talekeeper
from talekeeper.state import load_rules, normalise
from talekeeper.store.models import (
    Adventure,
    ContextText,
    Memory,
    Node,
    SavePoint,
    Scenario,
    StorySummary,
    TurnInsight,
)
from talekeeper.story import savepoints, tree

DEMO = "greywater-lantern"
REPO = Path(__file__).resolve().parent.parent
CORPUS = next(
    (
        folder / "shared" / "interop-corpus"
        for folder in REPO.parents
        if (folder / "shared" / "interop-corpus").is_dir()
    ),
    REPO.parent / "shared" / "interop-corpus",
)
"""The third-party corpus, read where it lies (beside the checkout, or above a worktree)."""


def build_story(tk: Talekeeper, ops: list[tuple[str, Any]]) -> int:
    """An adventure shaped by `ops`: turns (with real proposals and state changes), takes,
    undo/redo, named lines, Save Points, memories, summaries and Insights records."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, DEMO, {"name": "Ada"})
        rules = load_rules(adventure.rules)
        for op, arg in ops:
            head = tree.head(session, adventure)
            if op in ("turn", "take"):
                parent = head
                if op == "take":
                    if head.parent_id is None:
                        continue
                    parent = session.get(Node, head.parent_id)
                before, _ = normalise(parent.state, rules)
                block = json.dumps(
                    {
                        "events": [
                            {"type": "change_stat", "stat": "world.night", "amount": arg % 2},
                            {"type": "set_flag", "flag": "ferry_hired", "value": bool(arg % 3)},
                        ]
                    }
                )
                settled = world.settle_reply(
                    f"Turn text {arg}: the rain goes on.\n```state\n{block}\n```",
                    before,
                    rules,
                    parent.depth + 1,
                )
                turn = tree.NewTurn(
                    "do",
                    f"act {arg}",
                    settled.prose,
                    reasoning="thinking" if arg % 4 == 0 else "",
                    state=settled.state,
                    proposal=settled.proposal,
                    model="scripted",
                )
                tree.append_child(session, adventure, parent, turn)
            elif op == "undo" and tree.can_undo(head):
                tree.undo(session, adventure)
            elif op == "redo" and tree.can_redo(head):
                tree.redo(session, adventure)
            elif op == "name" and head.active_child_id is None:
                head.branch_name = f"line {arg}"
            elif op == "save":
                savepoints.create(session, adventure, f"save {arg}", "a note" if arg % 2 else "")
            elif op == "memory" and head.depth > 0:
                exists = session.scalar(
                    select(func.count()).select_from(Memory).where(Memory.node_id == head.id)
                )
                if not exists:
                    memory = bank.add_memory(
                        session,
                        adventure.id,
                        bank.Block(max(0, head.depth - 2), head.depth, head.id),
                        f"Ada remembers {arg}.",
                    )
                    if memory is not None and arg % 2:
                        bank.set_vector(session, memory.id, [0.5, -1.0, float(arg)], "embed-test")
            elif op == "summary":
                bank.set_summary(session, adventure.id, head, f"So far, {arg} things happened.")
            elif op == "insight" and head.depth > 0 and session.get(TurnInsight, head.id) is None:
                memory_id = session.scalar(
                    select(Memory.id).where(Memory.adventure_id == adventure.id).limit(1)
                )
                digest = text_digest(f"text {arg}")
                if session.get(ContextText, (adventure.id, digest)) is None:
                    import zlib

                    session.add(
                        ContextText(
                            adventure_id=adventure.id,
                            digest=digest,
                            text=zlib.compress(f"text {arg}".encode()),
                        )
                    )
                record = {
                    "v": 1,
                    "mode": "chat",
                    "budget": 4096,
                    "reserve": 300,
                    "note_at": None,
                    "scene": [],
                    "notes": [],
                    "action": "> You act.",
                    "pd": "x",
                    "opts": {"max_tokens": 300},
                    "hist": [tree.path_ids(session, head, 2)[0], 2, head.depth],
                    "sections": [
                        {"n": "narrator", "src": "plot", "why": "always", "t": 3, "h": digest}
                    ],
                }
                if memory_id is not None:
                    record["sections"].append(
                        {
                            "n": "memories",
                            "src": "bank",
                            "why": "w",
                            "t": 1,
                            "items": [{"k": "memory", "ref": memory_id, "t": 1}],
                        }
                    )
                session.add(TurnInsight(node_id=head.id, adventure_id=adventure.id, data=record))
            session.flush()
        return adventure.id


def export_bytes(tk: Talekeeper, adventure_id: int) -> bytes:
    return b"".join(bundles.export_stream(tk, adventure_id))


def import_bytes(tk: Talekeeper, data: bytes) -> bundles.ImportResult:
    return bundles.import_file(tk, lambda: io.BytesIO(data), len(data))


def records(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(data).decode().splitlines()]


def comparable(data: bytes) -> list[dict[str, Any]]:
    """The records with what legitimately differs between two exports removed."""
    found = records(data)
    found[0].pop("exported_at")
    found[-1].pop("sha256")
    return found


def assert_same_story(again: bytes, first: bytes) -> None:
    """Two exports hold the same story: the same records, but for the title of a twin of
    an adventure the installation already had, which is told apart: "… (imported)"."""
    after, before = comparable(again), comparable(first)
    title, original = after[0]["adventure"].pop("title"), before[0]["adventure"].pop("title")
    assert title == original or title.startswith(f"{original} (imported")
    assert after == before


def pack(items: list[dict[str, Any]]) -> bytes:
    """Records back into a bundle with a correct end record (a deliberate edit, re-signed)."""
    body = [
        (json.dumps(r, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n").encode()
        for r in items
        if r.get("t") != "end"
    ]
    digest = hashlib.sha256(b"".join(body)).hexdigest()
    end = (json.dumps({"t": "end", "records": len(body), "sha256": digest}) + "\n").encode()
    return gzip.compress(b"".join(body) + end, mtime=0)


def row_counts(tk: Talekeeper) -> dict[str, int]:
    with tk.db.session() as session:
        return {
            model.__tablename__: session.scalar(select(func.count()).select_from(model)) or 0
            for model in (
                Adventure,
                Node,
                Memory,
                StorySummary,
                TurnInsight,
                ContextText,
                SavePoint,
                Scenario,
            )
        }
