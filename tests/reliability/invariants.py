"""What a consistent talekeeper database looks like, checked straight from the store.

Plain `sqlite3` (or plain psycopg, on PostgreSQL), not the app's models: the crash tests
read a database that a killed server left behind, and the check must not depend on the
code under test.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class NodeRow:
    id: int
    adventure_id: int
    parent_id: int | None
    active_child_id: int | None
    depth: int
    kind: str
    action: str
    narration: str


@dataclass
class Snapshot:
    """The story as the file holds it: per adventure, its head and its nodes."""

    heads: dict[int, int] = field(default_factory=dict)
    nodes: dict[int, NodeRow] = field(default_factory=dict)
    save_points: dict[int, tuple[int, int, str]] = field(
        default_factory=dict
    )  # id -> (adv, node, name)
    memories: int = 0  # memories and summary versions written by the memory bank
    pending: dict[int, int] = field(default_factory=dict)  # adventure -> turn still settling
    states: dict[int, Any] = field(default_factory=dict)  # head -> its state snapshot

    def path(self, node_id: int) -> list[NodeRow]:
        out = []
        current: int | None = node_id
        while current is not None:
            out.append(self.nodes[current])
            current = self.nodes[current].parent_id
        return out[::-1]


def _unpack(blob: bytes | None, what: str) -> Any:
    if blob is None:
        return None
    try:
        return json.loads(zlib.decompress(blob))
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        raise AssertionError(f"{what} does not decode: {exc}") from exc


class _Postgres:
    """Just enough of sqlite3's connection for the checks below, over psycopg."""

    def __init__(self, url: str) -> None:
        import psycopg

        conninfo = url.replace("postgresql+psycopg://", "postgresql://", 1)
        self.connection = psycopg.connect(conninfo, autocommit=False)
        self.connection.read_only = True

    def execute(self, sql: str):
        return self.connection.execute(sql)

    def close(self) -> None:
        self.connection.rollback()
        self.connection.close()


def check_database(target: Any) -> Snapshot:
    """Assert every structural invariant of the story tree; return what the store holds.

    `target`: the SQLite file, a PostgreSQL URL, or the app's `Database`. On PostgreSQL there is no integrity or
    foreign-key check to run: the server enforces foreign keys on every write, and the
    whole read runs in one (read-only) transaction, so it sees one consistent moment.
    """
    if hasattr(target, "engine"):  # the app's Database handle: only where it points is used
        target = (
            target.path
            if target.path is not None
            else target.url.render_as_string(hide_password=False)
        )
    on_sqlite = isinstance(target, Path)
    db = sqlite3.connect(f"file:{target}?mode=ro", uri=True) if on_sqlite else _Postgres(target)
    try:
        if on_sqlite:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)], "integrity_check"
            assert db.execute("PRAGMA foreign_key_check").fetchall() == [], "foreign_key_check"
        snap = Snapshot()
        states = {}
        for row in db.execute(
            "SELECT id, adventure_id, parent_id, active_child_id, depth, action_kind, "
            "action_text, narration, state, proposal FROM nodes"
        ):
            node = NodeRow(*row[:8])
            snap.nodes[node.id] = node
            states[node.id] = _unpack(row[8], f"node {node.id} state")
            _unpack(row[9], f"node {node.id} proposal")
        for node in snap.nodes.values():
            if node.parent_id is None:
                assert node.depth == 0 and node.kind == "opening", f"node {node.id}: a second root"
            else:
                parent = snap.nodes.get(node.parent_id)
                assert parent is not None, f"node {node.id}: parent missing"
                assert parent.adventure_id == node.adventure_id, (
                    f"node {node.id}: parent in another adventure"
                )
                assert node.depth == parent.depth + 1, f"node {node.id}: depth"
                # A state correction is a step of its own with no narration (its text is the
                # correction summary); any other turn without narration was half-written.
                written = node.narration.strip() or (
                    node.kind == "correction" and node.action.strip()
                )
                assert written, f"node {node.id}: a turn with no narration (half-written)"
            if node.active_child_id is not None:
                child = snap.nodes.get(node.active_child_id)
                assert child is not None and child.parent_id == node.id, (
                    f"node {node.id}: active child"
                )
        columns = {
            row[0]
            for row in db.execute(
                "SELECT name FROM pragma_table_info('adventures')"
                if on_sqlite
                else "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'adventures' AND table_schema = current_schema()"
            )
        }
        pending = "pending_turn_id" if "pending_turn_id" in columns else "NULL"  # (0008)
        adventures = db.execute(
            f"SELECT id, root_node_id, head_node_id, turn_count, {pending} FROM adventures"
        ).fetchall()
        for adventure_id, root_id, head_id, turn_count, pending_id in adventures:
            root, head = snap.nodes.get(root_id), snap.nodes.get(head_id)
            assert root is not None and root.adventure_id == adventure_id, (
                f"adventure {adventure_id}: root"
            )
            assert root.parent_id is None, f"adventure {adventure_id}: root has a parent"
            assert head is not None and head.adventure_id == adventure_id, (
                f"adventure {adventure_id}: head"
            )
            assert snap.path(head_id)[0].id == root_id, (
                f"adventure {adventure_id}: head not below root"
            )
            assert turn_count == head.depth, (
                f"adventure {adventure_id}: turn_count {turn_count} != {head.depth}"
            )
            roots = [
                n
                for n in snap.nodes.values()
                if n.adventure_id == adventure_id and n.parent_id is None
            ]
            assert [n.id for n in roots] == [root_id], f"adventure {adventure_id}: roots {roots}"
            snap.heads[adventure_id] = head_id
            snap.states[head_id] = states[head_id]
            if pending_id is not None:  # a turn still settling is always the head
                assert pending_id == head_id, (
                    f"adventure {adventure_id}: pending turn {pending_id} is not the head"
                )
                snap.pending[adventure_id] = pending_id
        orphans = {n.adventure_id for n in snap.nodes.values()} - set(snap.heads)
        assert not orphans, f"nodes of missing adventures {orphans}"
        for sp_id, adventure_id, node_id, name in db.execute(
            "SELECT id, adventure_id, node_id, name FROM save_points"
        ):
            node = snap.nodes.get(node_id)
            assert node is not None and node.adventure_id == adventure_id, f"save point {sp_id}"
            snap.save_points[sp_id] = (adventure_id, node_id, name)
        tables = {
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'"
                if on_sqlite
                else "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        }
        for table in ("memories", "story_summaries"):  # the memory bank's writes (0002)
            if table not in tables:
                continue
            for row_id, adventure_id, node_id, text in db.execute(
                f"SELECT id, adventure_id, node_id, text FROM {table}"
            ):
                node = snap.nodes.get(node_id)
                assert node is not None and node.adventure_id == adventure_id, (
                    f"{table} {row_id}: node"
                )
                assert text.strip(), f"{table} {row_id}: empty (half-written)"
                snap.memories += 1
        return snap
    finally:
        db.close()
