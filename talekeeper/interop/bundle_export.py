"""Write an adventure as a bundle (see `bundle_format`), a record at a time.

Everything is read in one read transaction, so a story being played meanwhile is
exported as it was at one moment. Rows are streamed from SQLite, never loaded together:
memory holds one record, plus a map from database ids to the bundle's ids.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import LargeBinary, func, select, type_coerce
from sqlalchemy.orm import Session

from talekeeper import __version__
from talekeeper.store import owner
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
from talekeeper.story import canon_versions

from .bundle_format import FORMAT, VERSION

Progress = Callable[[int, int], None]
_BATCH = 256


def timestamp(value: datetime | None) -> str:
    """UTC, without an offset: the database keeps naive UTC, so this reads back the same."""
    value = value or datetime.now(UTC)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def encode(record: dict[str, Any], raw: dict[str, str] | None = None) -> bytes:
    """One line: the record as compact JSON, keys sorted. `raw` holds values already
    written as JSON (a stored snapshot's own text), put in as they are: a state snapshot
    is most of a node's line, and decoding it only to encode it again was most of an
    export's time."""
    if not raw:
        return (_dumps(record) + "\n").encode()
    # The keys in order, cut at each raw one: each run of the others written in one call.
    parts, run = [], {}
    for key in sorted({*record, *raw}):
        if key in raw:
            if run:
                parts.append(_dumps(run)[1:-1])
                run = {}
            parts.append(f"{_dumps(key)}:{raw[key]}")
        else:
            run[key] = record[key]
    if run:
        parts.append(_dumps(run)[1:-1])
    return ("{" + ",".join(parts) + "}\n").encode()


def _count(session: Session, model: Any, adventure_id: int) -> int:
    return (
        session.scalar(
            select(func.count()).select_from(model).where(model.adventure_id == adventure_id)
        )
        or 0
    )


def _rows(session: Session, query: Any) -> Iterator[Any]:
    yield from session.execute(query.execution_options(yield_per=_BATCH))


class LocalIds:
    """Database id → the bundle's id (1, 2, 3 … in id order), in 8 bytes an id: the ids
    arrive sorted, so a binary search over an array replaces a dict ten times its size."""

    def __init__(self) -> None:
        self.ids = array("q")

    def add(self, db_id: int) -> int:
        self.ids.append(db_id)
        return len(self.ids)

    def get(self, db_id: Any, default: Any = None) -> Any:
        if not isinstance(db_id, int) or isinstance(db_id, bool):
            return default
        at = bisect_left(self.ids, db_id)
        return at + 1 if at < len(self.ids) and self.ids[at] == db_id else default

    def __getitem__(self, db_id: int) -> int:
        found = self.get(db_id)
        if found is None:
            raise KeyError(db_id)
        return found


def remap_insight(
    data: dict[str, Any], nodes: Callable[[Any], Any], memories: Callable[[Any], Any]
) -> dict[str, Any]:
    """An Insights record with its node and memory references translated (both ways)."""
    data = dict(data)
    hist = data.get("hist")
    if isinstance(hist, list) and hist:
        data["hist"] = [nodes(hist[0]), *hist[1:]]
    sections = []
    for section in data.get("sections") or []:
        if (
            isinstance(section, dict)
            and section.get("n") == "memories"
            and isinstance(section.get("items"), list)
        ):
            items = [
                {**item, "ref": memories(item.get("ref"))}
                if isinstance(item, dict) and "ref" in item
                else item
                for item in section["items"]
            ]
            section = {**section, "items": items}
        sections.append(section)
    if "sections" in data:
        data["sections"] = sections
    return data


def remap_proposal(
    proposal: dict[str, Any] | None, nodes: Callable[[Any], Any]
) -> dict[str, Any] | None:
    if proposal is None or "edited_from" not in proposal:
        return proposal
    return {**proposal, "edited_from": nodes(proposal["edited_from"])}


def samplers_of(session: Session, adventure_id: int) -> dict[str, Any] | None:
    """The adventure's own samplers, with its preset's values (the importing side may not
    have that preset, or not the same): None when it has none."""
    from talekeeper.service import samplers

    choice = samplers.adventure_choice(session, adventure_id)
    if not choice["preset"] and not choice["values"]:
        return None
    preset = choice["preset"]
    return {
        "preset": preset,
        "preset_values": samplers.every_preset(session).get(preset) if preset else None,
        "values": choice["values"],
    }


def records(
    session: Session, adventure: Adventure, progress: Progress | None = None
) -> Iterator[dict[str, Any]]:
    """The bundle's records in order, header first, without the end record."""
    aid = adventure.id
    counts = {
        "texts": _count(session, ContextText, aid),
        "nodes": _count(session, Node, aid),
        "memories": _count(session, Memory, aid),
        "summaries": _count(session, StorySummary, aid),
        "insights": _count(session, TurnInsight, aid),
        "save_points": _count(session, SavePoint, aid),
    }
    total = sum(counts.values()) + 1
    node_ids = LocalIds()
    memory_ids = LocalIds()
    # Nodes are written parent first: a node's id is always larger than its parent's.
    for (node_id,) in _rows(
        session, select(Node.id).where(Node.adventure_id == aid).order_by(Node.id)
    ):
        node_ids.add(node_id)
    scenario = session.get(Scenario, adventure.scenario_id) if adventure.scenario_id else None
    scenario = scenario if scenario is not None and owner.visible(scenario) else None
    yield {
        "t": "header",
        "format": FORMAT,
        "version": VERSION,
        "app_version": __version__,
        "exported_at": timestamp(None),
        "counts": counts,
        "adventure": {
            "title": adventure.title,
            "scenario": {"id": scenario.id, "data": scenario.data} if scenario else None,
            "plot": adventure.plot or {},
            "rules": adventure.rules,
            "canon": canon_versions.remap(adventure.canon, node_ids.get),
            "samplers": samplers_of(session, aid),
            "turn_count": adventure.turn_count,
            "root": node_ids.get(adventure.root_node_id or 0, 1),
            "head": node_ids.get(adventure.head_node_id or 0, 1),
            "created_at": timestamp(adventure.created_at),
            "last_played_at": timestamp(adventure.last_played_at),
        },
    }
    done = 1

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % 100 == 0 or done == total):
            progress(done, total)

    table = ContextText.__table__
    for row in _rows(
        session,
        select(table.c.digest, table.c.text)
        .where(table.c.adventure_id == aid)
        .order_by(table.c.digest),
    ):
        yield {"t": "text", "digest": row.digest, "text": zlib.decompress(row.text).decode()}
        tick()
    table = Node.__table__
    # The snapshots as stored (compressed JSON text), not decoded: see `encode`.
    columns = [c for c in table.c if c.name not in ("state", "proposal")]
    stored = (type_coerce(table.c.state, LargeBinary), type_coerce(table.c.proposal, LargeBinary))
    for row in _rows(
        session,
        select(*columns, *stored).where(table.c.adventure_id == aid).order_by(table.c.id),
    ):
        state, proposal = (_stored_json(value) for value in row[-2:])
        if proposal is not None and '"edited_from"' in proposal:  # a node id to translate
            proposal = _dumps(remap_proposal(json.loads(proposal), node_ids.get))
        yield Raw(
            {
                "t": "node",
                "id": node_ids[row.id],
                "parent": node_ids[row.parent_id] if row.parent_id is not None else None,
                "active_child": node_ids.get(row.active_child_id)
                if row.active_child_id is not None
                else None,
                "depth": row.depth,
                "kind": row.action_kind,
                "action": row.action_text,
                "narration": row.narration,
                "reasoning": row.reasoning,
                "branch_name": row.branch_name,
                "take_of": node_ids.get(row.take_of) if row.take_of is not None else None,
                "model": row.model,
                "created_at": timestamp(row.created_at),
            },
            {"state": state or "null", "proposal": proposal or "null"},
        )
        tick()
    table = Memory.__table__
    for row in _rows(
        session, select(table).where(table.c.adventure_id == aid).order_by(table.c.id)
    ):
        memory_ids.add(row.id)
        yield {
            "t": "memory",
            "id": memory_ids[row.id],
            "node": node_ids[row.node_id],
            "first_depth": row.first_depth,
            "depth": row.depth,
            "text": row.text,
            "source": row.source,
            "pinned": bool(row.pinned),
            "status": row.status,
            "uses": row.uses,
            "last_used_depth": row.last_used_depth,
            "embedding": base64.b64encode(row.embedding).decode()
            if row.embedding is not None
            else None,
            "embedding_dim": row.embedding_dim,
            "embedding_model": row.embedding_model,
            "created_at": timestamp(row.created_at),
            "updated_at": timestamp(row.updated_at),
        }
        tick()
    table = StorySummary.__table__
    for row in _rows(
        session, select(table).where(table.c.adventure_id == aid).order_by(table.c.id)
    ):
        yield {
            "t": "summary",
            "node": node_ids[row.node_id],
            "depth": row.depth,
            "text": row.text,
            "source": row.source,
            "created_at": timestamp(row.created_at),
        }
        tick()
    table = TurnInsight.__table__
    for row in _rows(
        session, select(table).where(table.c.adventure_id == aid).order_by(table.c.node_id)
    ):
        yield {
            "t": "insight",
            "node": node_ids[row.node_id],
            "data": remap_insight(row.data, node_ids.get, memory_ids.get),
        }
        tick()
    table = SavePoint.__table__
    for row in _rows(
        session, select(table).where(table.c.adventure_id == aid).order_by(table.c.id)
    ):
        yield {
            "t": "save_point",
            "node": node_ids[row.node_id],
            "name": row.name,
            "note": row.note,
            "created_at": timestamp(row.created_at),
        }
        tick()


class Raw(dict):
    """A record with some values already written as JSON text (`encode`'s `raw`)."""

    def __init__(self, record: dict[str, Any], raw: dict[str, str]) -> None:
        super().__init__(record)
        self.raw = raw


def _stored_json(value: bytes | None) -> str | None:
    """A `CompressedJSON` column's JSON text, as stored."""
    return zlib.decompress(value).decode() if value is not None else None


def lines(
    session: Session, adventure: Adventure, progress: Progress | None = None
) -> Iterator[bytes]:
    """The bundle's lines, uncompressed, ending with the end record (count and digest)."""
    digest = hashlib.sha256()
    count = 0
    for record in records(session, adventure, progress):
        line = encode(record, getattr(record, "raw", None))
        digest.update(line)
        count += 1
        yield line
    yield encode({"t": "end", "records": count, "sha256": digest.hexdigest()})


def gzip_chunks(source: Iterator[bytes], level: int = 6) -> Iterator[bytes]:
    """gzip-compress a stream of byte strings, yielding compressed chunks of about 64 kB."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    pending: list[bytes] = []
    size = 0
    for piece in source:
        out = compressor.compress(piece)
        if out:
            pending.append(out)
            size += len(out)
        if size >= 65536:
            yield b"".join(pending)
            pending, size = [], 0
    pending.append(compressor.flush())
    yield b"".join(pending)
