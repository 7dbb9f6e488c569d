"""Read a bundle back: check each record and write it, in one pass and one transaction.

Each line is checked as it is read — the gzip stream, the line against the schema, the
order of records, every reference (parents, active children, memories, summaries,
Insights, Save Points), the tree's shape, every state snapshot against the adventure's
rules — and written in batches; at the end the counts and the end record's SHA-256 are
checked. A problem anywhere refuses the whole file with the path of the first one
(`line 12 (node 11).parent: …`) and rolls the transaction back, so nothing was written.

Rows are written in batches with their ids known in advance (the next free ids on
SQLite, where the transaction is then the only writer; ids taken from the sequence on
PostgreSQL), so a node's active child is written with it and nothing is updated after.
Memory holds one line and a batch at a time plus a few bytes per turn (the tree's shape
and the ids), never the story's text. Hostile input is bounded: the compressed size, each
line's size, the decompressed total, and nesting depth.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

import orjson
from pydantic import ValidationError
from sqlalchemy import LargeBinary, bindparam, func, insert, select, text
from sqlalchemy.orm import Session

from talekeeper.context.insights import text_digest
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.errors import Invalid
from talekeeper.service.plot import Persona, StoryCard
from talekeeper.state import RulesError, empty_rules, load_rules, normalise
from talekeeper.state.normalise import Memo
from talekeeper.store import owner
from talekeeper.store.models import (
    Adventure,
    CompressedJSON,
    ContextText,
    InsightJSON,
    Memory,
    Node,
    SavePoint,
    Scenario,
    StorySummary,
    TurnInsight,
)
from talekeeper.story import canon_versions, line_ends

from .bundle_export import remap_insight, remap_proposal
from .bundle_format import LINE, ORDER

MAX_BUNDLE_BYTES = 1024**3
MAX_LINE_BYTES = 32 * 1024 * 1024
_STEP = 256 * 1024
# A real bundle compresses its repeated state snapshots well, but not a thousandfold.
MAX_RATIO = 400
PLOT_TEXTS = (
    "narrator_instructions",
    "ai_instructions",
    "plot_essentials",
    "story_summary",
    "author_note",
)
Progress = Callable[[int, int], None]


class BundleInvalid(Invalid):
    """The file is not a bundle this version can import; `path` names the first problem."""

    def __init__(self, path: str, problem: str):
        self.path, self.problem = path, problem
        self.errors = [f"{path}: {problem}"]
        super().__init__(f"{path}: {problem}. Nothing was imported.")


# --- reading lines -------------------------------------------------------------------


def read_lines(stream: IO[bytes], size: int) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of a gzip file, refusing anything truncated or oversized."""
    if size > MAX_BUNDLE_BYTES:
        raise BundleInvalid("(file)", f"too large ({size:,} bytes; at most {MAX_BUNDLE_BYTES:,})")
    first = stream.read(2)
    if first != b"\x1f\x8b":
        raise BundleInvalid(
            "(file)", "not a talekeeper adventure bundle (it is not gzip-compressed)"
        )
    decompressor = zlib.decompressobj(31)
    budget = max(64 * 1024 * 1024, MAX_RATIO * size)
    total = 0
    pending = bytearray()
    number = 0
    chunk = first + stream.read(65536 - 2)
    while chunk or decompressor.unconsumed_tail:
        data = decompressor.unconsumed_tail or chunk
        try:
            # A little at a time: a compressed megabyte can hold a thousand times more.
            out = decompressor.decompress(data, _STEP)
        except zlib.error as exc:
            raise BundleInvalid("(file)", f"the compressed data is damaged ({exc})") from None
        if decompressor.eof and decompressor.unused_data.strip(b"\x00"):
            raise BundleInvalid("(file)", "there is data after the end of the compressed stream")
        total += len(out)
        if total > budget:
            raise BundleInvalid(
                "(file)", "it decompresses to far more than a bundle could (a decompression bomb?)"
            )
        pending += out
        start = 0
        while True:
            cut = pending.find(b"\n", start)
            if cut < 0:
                break
            number += 1
            yield number, bytes(pending[start:cut])
            start = cut + 1
        del pending[:start]
        if len(pending) > MAX_LINE_BYTES:
            raise BundleInvalid(
                f"line {number + 1}", f"longer than {MAX_LINE_BYTES // 1024 // 1024} MB"
            )
        if not decompressor.unconsumed_tail:
            if decompressor.eof:
                break
            chunk = stream.read(65536)
    if not decompressor.eof:
        raise BundleInvalid("(file)", "the file is truncated (the compressed stream does not end)")
    if pending.strip():
        raise BundleInvalid(f"line {number + 1}", "the last line is not complete")


def _parse(number: int, raw: bytes) -> Any:
    where = f"line {number}"
    try:  # pydantic's JSON parser refuses deep nesting itself (a bracket bomb is an error, not a crash)
        return LINE.validate_json(raw)
    except ValidationError as exc:
        detail = exc.errors()[0]
        loc = [
            p
            for p in detail["loc"]
            if p
            not in ("header", "text", "node", "memory", "summary", "insight", "save_point", "end")
        ]
        path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        raise BundleInvalid(path, detail["msg"]) from None
    except (RecursionError, ValueError) as exc:
        raise BundleInvalid(where, f"not valid JSON ({exc})") from None


def _naive(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


# --- checking -------------------------------------------------------------------------


@dataclass
class Checked:
    """What the first pass learned, for the second."""

    header: Any
    scenario_action: (
        str  # "link" (same id and content), "add" (imported as the player's own), "none"
    )
    scenario_id: str | None
    notes: list[str] = field(default_factory=list)


def check_plot(plot: dict[str, Any]) -> str | None:
    for key, value in plot.items():
        if key in PLOT_TEXTS:
            if not isinstance(value, str) or len(value) > 20000:
                return f"plot.{key}: must be text of at most 20,000 characters"
        elif key == "persona":
            try:
                Persona.model_validate(value)
            except ValidationError as exc:
                return f"plot.persona: {exc.errors()[0]['msg']}"
        elif key == "story_cards":
            if not isinstance(value, list) or len(value) > MAX_CARDS:
                return f"plot.story_cards: must be a list of at most {MAX_CARDS} cards"
            for i, card in enumerate(value):
                try:
                    StoryCard.model_validate(card)
                except ValidationError as exc:
                    loc = ".".join(str(p) for p in exc.errors()[0]["loc"])
                    return f"plot.story_cards[{i}].{loc}: {exc.errors()[0]['msg']}"
        # Any other component (a newer release's) is carried as it is.
    return None


class _Checker:
    def __init__(self, session: Session):
        self.session = session
        self.stage = 0
        self.header: Any = None
        self.rules = empty_rules()
        self.digest = hashlib.sha256()
        self.records = 0
        self.counts = dict.fromkeys(
            ("texts", "nodes", "memories", "summaries", "insights", "save_points"), 0
        )
        self.texts: set[str] = set()
        self.depth = array("i")  # index: local id - 1
        # The rules each node was written under: an adventure updated from its scenario
        # (story/canon_versions) played by older rules above each update step.
        self.rule_sets: list[Any] = []
        self.rules_at = array("i")
        self.active = array("i")
        self.parent = array("i")
        self.children = bytearray()
        self.memories = 0
        self.insight_nodes: set[int] = set()
        self.sections: Memo = {}  # consecutive snapshots share most sections: see normalise
        self.ended = False

    def line(self, number: int, raw: bytes) -> Any:
        if self.ended:
            raise BundleInvalid(f"line {number}", "there is more after the end record")
        record = _parse(number, raw)
        stage = ORDER.index(record.t)
        if number == 1 and record.t != "header":
            raise BundleInvalid("line 1", "a bundle starts with its header")
        if stage < self.stage or (record.t == "header" and number != 1):
            raise BundleInvalid(
                f"line {number}",
                f"a {record.t} record is out of order (the order is {', '.join(ORDER)})",
            )
        self.stage = stage
        where = f"line {number} ({record.t})"
        check = getattr(self, f"_{record.t}")
        check(record, where)
        if record.t != "end":
            self.digest.update(raw)
            self.digest.update(b"\n")
            self.records += 1
        return record

    def _header(self, record: Any, where: str) -> None:
        self.header = record
        adventure = record.adventure
        if adventure.rules is not None:
            try:
                self.rules = load_rules(adventure.rules)
            except RulesError as exc:
                raise BundleInvalid(f"{where}.adventure.rules", "; ".join(exc.errors[:3])) from None
        base = ((adventure.canon or {}).get("versions") or {}).get(canon_versions.BASE)
        self.rule_sets = [
            self._rules_of(base.get("rules"), f"{where}.adventure.canon")
            if isinstance(base, dict)
            else self.rules
        ]
        problem = check_plot(adventure.plot)
        if problem:
            raise BundleInvalid(f"{where}.adventure", problem)
        if adventure.root != 1:
            raise BundleInvalid(f"{where}.adventure.root", "the root is always node 1")
        if adventure.head > record.counts.nodes:
            raise BundleInvalid(
                f"{where}.adventure.head", f"node {adventure.head} is not in the bundle"
            )

    @staticmethod
    def _rules_of(raw: Any, where: str) -> Any:
        if raw is None:
            return empty_rules()
        try:
            return load_rules(raw)
        except (RulesError, TypeError, AttributeError) as exc:
            errors = getattr(exc, "errors", None) or [str(exc)]
            raise BundleInvalid(f"{where}.rules", "; ".join(errors[:3])) from None

    def _text(self, record: Any, where: str) -> None:
        if record.digest in self.texts:
            raise BundleInvalid(f"{where}.digest", "the same text twice")
        if text_digest(record.text) != record.digest:
            raise BundleInvalid(f"{where}.digest", "does not match the text")
        self.texts.add(record.digest)
        self.counts["texts"] += 1

    def _node_exists(self, node: int, where: str) -> int:
        if node > len(self.depth):
            raise BundleInvalid(
                where, f"refers to node {node}, which is not in the bundle before it"
            )
        return self.depth[node - 1]

    def _node(self, record: Any, where: str) -> None:
        expected = len(self.depth) + 1
        if record.id != expected:
            raise BundleInvalid(
                f"{where}.id", f"must be {expected} (nodes are numbered 1, 2, 3 … in order)"
            )
        if record.parent is None:
            if record.id != 1:
                raise BundleInvalid(f"{where}.parent", "only node 1 (the opening) has no parent")
            if record.depth != 0:
                raise BundleInvalid(f"{where}.depth", "the opening is at depth 0")
        else:
            if record.parent >= record.id:
                raise BundleInvalid(f"{where}.parent", "a parent must come before its children")
            parent_depth = self.depth[record.parent - 1]
            if record.depth != parent_depth + 1:
                raise BundleInvalid(
                    f"{where}.depth", f"must be {parent_depth + 1} (one more than its parent's)"
                )
            self.children[record.parent - 1] = 1
            if self.active[record.parent - 1] == 0:
                raise BundleInvalid(
                    f"{where}.parent", f"node {record.parent} has children but no active child"
                )
        if record.take_of is not None and (
            record.take_of >= record.id or self.parent[record.take_of - 1] != (record.parent or 0)
        ):
            raise BundleInvalid(
                f"{where}.take_of", "must name an earlier turn below the same parent"
            )
        if record.active_child is not None and record.active_child <= record.id:
            raise BundleInvalid(
                f"{where}.active_child", "must be a child of this node (which comes after it)"
            )
        if record.state is None:
            raise BundleInvalid(f"{where}.state", "every turn keeps the state after it")
        rules_at = self.rules_at[record.parent - 1] if record.parent is not None else 0
        if record.kind == canon_versions.UPDATE:  # the rules it took hold from here down
            after = ((record.proposal or {}).get("update") or {}).get("after") or {}
            self.rule_sets.append(self._rules_of(after.get("rules"), f"{where}.proposal"))
            rules_at = len(self.rule_sets) - 1
        _doc, repairs = normalise(record.state, self.rule_sets[rules_at], self.sections)
        if repairs:
            raise BundleInvalid(
                f"{where}.state", f"does not fit the adventure's rules ({repairs[0]})"
            )
        if record.proposal and "edited_from" in record.proposal:
            ref = record.proposal["edited_from"]
            if ref is not None and (
                not isinstance(ref, int) or isinstance(ref, bool) or not 1 <= ref < record.id
            ):
                raise BundleInvalid(f"{where}.proposal.edited_from", "must name an earlier node")
        self.depth.append(record.depth)
        self.rules_at.append(rules_at)
        self.active.append(record.active_child or 0)
        self.parent.append(record.parent or 0)
        self.children.append(0)
        self.counts["nodes"] += 1

    def _finish_nodes(self, where: str) -> None:
        if self.counts["nodes"] == 0:
            raise BundleInvalid(where, "the bundle has no nodes")
        for index, active in enumerate(self.active):
            if active and active > len(self.depth):
                raise BundleInvalid(
                    f"node {index + 1}.active_child", f"node {active} is not in the bundle"
                )
            if bool(active) != bool(self.children[index]):
                raise BundleInvalid(
                    f"node {index + 1}.active_child",
                    "must be set exactly when the node has children",
                )
            if active and self.parent[active - 1] != index + 1:
                raise BundleInvalid(
                    f"node {index + 1}.active_child", f"node {active} is not its child"
                )

    def _memory(self, record: Any, where: str) -> None:
        if record.id != self.memories + 1:
            raise BundleInvalid(
                f"{where}.id", f"must be {self.memories + 1} (memories are numbered in order)"
            )
        depth = self._node_exists(record.node, f"{where}.node")
        if record.depth != depth or record.first_depth > record.depth:
            raise BundleInvalid(f"{where}.depth", "does not match its node")
        if record.embedding is not None:
            try:
                raw = base64.b64decode(record.embedding, validate=True)
            except ValueError:
                raise BundleInvalid(f"{where}.embedding", "is not base64") from None
            if len(raw) != 4 * (record.embedding_dim or 0):
                raise BundleInvalid(f"{where}.embedding", "its length does not match embedding_dim")
        self.memories += 1
        self.counts["memories"] += 1

    def _summary(self, record: Any, where: str) -> None:
        if self._node_exists(record.node, f"{where}.node") != record.depth:
            raise BundleInvalid(f"{where}.depth", "does not match its node")
        self.counts["summaries"] += 1

    def _insight(self, record: Any, where: str) -> None:
        self._node_exists(record.node, f"{where}.node")
        if record.node in self.insight_nodes:
            raise BundleInvalid(f"{where}.node", "a node has at most one Insights record")
        self.insight_nodes.add(record.node)
        data = record.data
        hist = data.get("hist")
        if not isinstance(hist, list) or len(hist) != 3:
            raise BundleInvalid(f"{where}.data.hist", "must be [first node, count, available]")
        if hist[0] is not None:
            if not isinstance(hist[0], int) or isinstance(hist[0], bool) or hist[0] < 1:
                raise BundleInvalid(f"{where}.data.hist[0]", "must be a node")
            self._node_exists(hist[0], f"{where}.data.hist[0]")
        sections = data.get("sections")
        if not isinstance(sections, list):
            raise BundleInvalid(f"{where}.data.sections", "must be a list")
        for i, section in enumerate(sections):
            if not isinstance(section, dict):
                raise BundleInvalid(f"{where}.data.sections[{i}]", "must be an object")
            refs = [section.get("h")] + [
                item.get("h") for item in section.get("items") or [] if isinstance(item, dict)
            ]
            for ref in refs:
                if ref is not None and ref not in self.texts:
                    raise BundleInvalid(
                        f"{where}.data.sections[{i}]",
                        f"refers to text {str(ref)[:40]!r}, which is not in the bundle",
                    )
            if section.get("n") == "memories":
                for j, item in enumerate(section.get("items") or []):
                    ref = item.get("ref") if isinstance(item, dict) else None
                    if ref is not None and (
                        not isinstance(ref, int) or not 1 <= ref <= self.memories
                    ):
                        raise BundleInvalid(
                            f"{where}.data.sections[{i}].items[{j}].ref",
                            "refers to a memory not in the bundle",
                        )
        self.counts["insights"] += 1

    def _save_point(self, record: Any, where: str) -> None:
        self._node_exists(record.node, f"{where}.node")
        if not record.name.strip():
            raise BundleInvalid(f"{where}.name", "a Save Point needs a name")
        self.counts["save_points"] += 1

    def _end(self, record: Any, where: str) -> None:
        self.ended = True
        if record.records != self.records:
            raise BundleInvalid(
                f"{where}.records",
                f"says {record.records} records, the file has {self.records} (truncated or edited?)",
            )
        if record.sha256 != self.digest.hexdigest():
            raise BundleInvalid(
                f"{where}.sha256",
                "the records do not match their checksum (the file was changed or damaged)",
            )

    def finish(self) -> None:
        if not self.ended:
            raise BundleInvalid("(file)", "the end record is missing (the file is truncated)")
        self._finish_nodes("(nodes)")
        declared = self.header.counts.model_dump()
        for name, count in self.counts.items():
            if declared[name] != count:
                raise BundleInvalid(
                    f"line 1 (header).counts.{name}", f"says {declared[name]}, the file has {count}"
                )
        head_depth = self.depth[self.header.adventure.head - 1]
        if self.header.adventure.turn_count != head_depth:
            raise BundleInvalid(
                "line 1 (header).adventure.turn_count", f"must be the head's depth ({head_depth})"
            )


def _scenario(session: Session, header: Any) -> Checked:
    """What becomes of the bundle's scenario: linked to the same one here, added as the
    player's own, or none."""
    snapshot = header.adventure.scenario
    if snapshot is None:
        return Checked(header, "none", None)
    existing = session.get(Scenario, snapshot.id)
    if existing is not None and existing.data == snapshot.data and owner.visible(existing):
        return Checked(header, "link", existing.id)
    from talekeeper.service.scenarios import check_scenario, fits, free_id, name_of, row_id

    errors = check_scenario({**snapshot.data, "id": "x"})
    if errors:
        return Checked(
            header, "none", None, [f"Its scenario '{snapshot.id}' was not added: {errors[0]}"]
        )
    # The name depends only on what the importer can see (another player's scenario with
    # that id changes nothing: with accounts on, the stored id carries the owner's mark).
    name = name_of(snapshot.id)
    fresh = name if fits(session, name) else free_id(session, name)
    note = f"Its scenario was added to your scenarios as '{fresh}'."
    return Checked(header, "add", row_id(fresh), [note])


def _total(header: Any) -> int:
    return sum(header.counts.model_dump().values()) + 2


# --- writing --------------------------------------------------------------------------


class _Ids:
    """The database ids `count` new rows of `table` will have, known before they are
    written: local id n (1, 2, 3 …) → its id, increasing with n as the bundle's order needs
    (a parent's id below its children's)."""

    def __init__(self, session: Session, table: Any, count: int) -> None:
        self.base, self.ids = 0, array("q", [0])
        if not count:
            return
        if session.get_bind().dialect.name == "postgresql":
            taken = session.execute(
                text(
                    "SELECT nextval(pg_get_serial_sequence(:table, 'id')) "
                    "FROM generate_series(1, :count)"
                ),
                {"table": table.name, "count": count},
            )
            self.ids.extend(sorted(row[0] for row in taken))
        else:  # this transaction is SQLite's only writer from its first write on
            self.base = session.scalar(select(func.max(table.c.id))) or 0
            self.ids = None  # type: ignore[assignment]

    def __getitem__(self, local: int) -> int:
        return self.base + local if self.ids is None else self.ids[local]


class _Batches:
    """Rows waiting to be written, a statement's worth at a time (executemany)."""

    SIZE = 500

    def __init__(self, session: Session) -> None:
        self.conn = session.connection()
        self.pending: dict[Any, list[dict[str, Any]]] = {}

    def add(self, statement: Any, row: dict[str, Any]) -> None:
        rows = self.pending.setdefault(statement, [])
        rows.append(row)
        if len(rows) >= self.SIZE:
            self.flush()

    def flush(self) -> None:
        for statement, rows in self.pending.items():
            if rows:
                self.conn.execute(statement, rows)
        self.pending = {}


class _Writer:
    """Writes checked records as a new adventure (see the module's docstring)."""

    def __init__(self, session: Session, checked: Checked) -> None:
        self.session, self.checked = session, checked
        header = checked.header
        meta = header.adventure
        if checked.scenario_action == "add":
            from talekeeper.service.scenarios import name_of

            data = {**meta.scenario.data, "id": name_of(checked.scenario_id)}
            title = distinct_title(session, Scenario, str(data.get("title", "")))
            session.add(
                Scenario(
                    id=checked.scenario_id,
                    title=title,
                    description=str(data.get("description", "")),
                    data={**data, "title": title} if title != data.get("title") else data,
                    builtin=False,
                    owner_id=owner.current(),
                )
            )
            session.flush()
        self.adventure = Adventure(
            scenario_id=checked.scenario_id,
            title=distinct_title(session, Adventure, meta.title),
            plot=meta.plot,
            rules=meta.rules,
            turn_count=meta.turn_count,
            created_at=_naive(meta.created_at),
            last_played_at=_naive(meta.last_played_at),
            owner_id=owner.current(),
        )
        session.add(self.adventure)
        session.flush()  # the first write: from here on, SQLite's only writer is this one
        self.aid = self.adventure.id
        self.nodes = _Ids(session, Node.__table__, header.counts.nodes)
        # Each node's redo chain (story/chains.labels), as its record goes by: a record's
        # parent came before it, so its label is known; by local id, from 1.
        self.chain, self.active, self.chains = array("i", [0]), array("i", [0]), 0
        self.memories = _Ids(session, Memory.__table__, header.counts.memories)
        self.batches = _Batches(session)
        self.stage = "header"

    def add(self, record: Any, raw: bytes) -> None:
        """Write `record` (its line: `raw`)."""
        if record.t != self.stage:  # what follows refers to what came before: written first
            self.batches.flush()
            self.stage = record.t
        if record.t == "node":
            self._node(record, raw)
        elif record.t != "end":
            getattr(self, f"_{record.t}")(record)

    def _text(self, record: Any) -> None:
        row = {"digest": record.digest, "text": zlib.compress(record.text.encode(), 6)}
        self.batches.add(_ADD_TEXT, {**row, "adventure_id": self.aid})

    def _chain(self, record: Any) -> int:
        self.active.append(record.active_child or 0)
        if record.parent and self.active[record.parent] == record.id:
            self.chain.append(self.chain[record.parent])
        else:
            self.chains += 1
            self.chain.append(self.chains)
        return self.chain[record.id]

    def _node(self, record: Any, raw: bytes) -> None:
        nodes = self.nodes
        plain = b"NaN" not in raw and b"Infinity" not in raw
        row = {
            "id": nodes[record.id],
            "adventure_id": self.aid,
            "parent_id": nodes[record.parent] if record.parent else None,
            "active_child_id": nodes[record.active_child] if record.active_child else None,
            "depth": record.depth,
            "action_kind": record.kind,
            "action_text": record.action,
            "narration": record.narration,
            "reasoning": record.reasoning,
            # Compressed now, as the column stores them: a batch holds bytes, not documents.
            "state_z": _snapshot(record.state, plain),
            "proposal_z": _snapshot(
                remap_proposal(record.proposal, lambda n: nodes[n] if isinstance(n, int) else n),
                plain,
            ),
            "branch_name": record.branch_name,
            "take_of": nodes[record.take_of] if record.take_of else None,
            "chain": self._chain(record),
            "model": record.model,
            "created_at": _naive(record.created_at),
        }
        self.batches.add(_ADD_NODE, row)

    def _memory(self, record: Any) -> None:
        row = record.model_dump(exclude={"t", "id", "node", "embedding"})
        row.update(
            id=self.memories[record.id],
            adventure_id=self.aid,
            node_id=self.nodes[record.node],
            embedding=base64.b64decode(record.embedding) if record.embedding is not None else None,
            created_at=_naive(record.created_at),
            updated_at=_naive(record.updated_at),
        )
        self.batches.add(_ADD_MEMORY, row)

    def _summary(self, record: Any) -> None:
        row = {
            "adventure_id": self.aid,
            "node_id": self.nodes[record.node],
            "depth": record.depth,
            "text": record.text,
            "source": record.source,
            "created_at": _naive(record.created_at),
        }
        self.batches.add(_ADD_SUMMARY, row)

    def _insight(self, record: Any) -> None:
        data = remap_insight(
            record.data,
            lambda n: self.nodes[n] if isinstance(n, int) else n,
            lambda m: self.memories[m] if isinstance(m, int) else m,
        )
        row = {"node_id": self.nodes[record.node], "adventure_id": self.aid}
        self.batches.add(_ADD_INSIGHT, {**row, "data_z": _INSIGHT.process_bind_param(data, None)})

    def _save_point(self, record: Any) -> None:
        row = {
            "adventure_id": self.aid,
            "node_id": self.nodes[record.node],
            "name": record.name,
            "note": record.note,
            "created_at": _naive(record.created_at),
        }
        self.batches.add(_ADD_SAVE_POINT, row)

    def finish(self) -> Adventure:
        self.batches.flush()
        meta = self.checked.header.adventure
        self.adventure.root_node_id = self.nodes[meta.root]
        self.adventure.head_node_id = self.nodes[meta.head]
        count = self.checked.header.counts.nodes  # (local ids are 1 … count)
        self.adventure.canon = canon_versions.remap(
            meta.canon, lambda n: self.nodes[n] if isinstance(n, int) and 1 <= n <= count else None
        )
        if meta.samplers is not None:
            restore_samplers(self.session, self.aid, meta.samplers)
        self.session.flush()
        line_ends.recount(self.session, self.adventure)  # (children and line ends, at once)
        return self.adventure


_ADD_TEXT = insert(ContextText.__table__)
_SNAPSHOT = CompressedJSON()


def _snapshot(value: Any, plain: bool) -> bytes | None:
    """A snapshot as `CompressedJSON` stores it (any JSON text reads back the same), written
    by orjson: most of an import's time was the standard library writing snapshots. orjson
    writes NaN and Infinity as null and refuses integers past 64 bits, so a snapshot from a
    line holding either (only an edited file can; `plain` when its line holds neither word)
    goes the standard library's way."""
    if value is None:
        return None
    if plain:
        try:
            return zlib.compress(orjson.dumps(value, option=orjson.OPT_SORT_KEYS), 6)
        except orjson.JSONEncodeError:
            pass
    return _SNAPSHOT.process_bind_param(value, None)


_ADD_NODE = insert(Node.__table__).values(
    state=bindparam("state_z", type_=LargeBinary),
    proposal=bindparam("proposal_z", type_=LargeBinary),
)
_ADD_MEMORY = insert(Memory.__table__)
_ADD_SUMMARY = insert(StorySummary.__table__)
_INSIGHT = InsightJSON()
_ADD_INSIGHT = insert(TurnInsight.__table__).values(data=bindparam("data_z", type_=LargeBinary))
_ADD_SAVE_POINT = insert(SavePoint.__table__)
IMPORTED = " (imported)"


def distinct_title(session: Session, model: Any, title: str) -> str:
    """`title`, or — when one the player can see already has it — "title (imported)"
    (then "(imported 2)" …), so an imported twin can be told apart in every list."""
    title = title[:MAX_TITLE]
    taken = {
        t
        for t in session.scalars(
            owner.where_visible(select(model.title), model).where(
                model.title.startswith(title[: MAX_TITLE - len(IMPORTED) - 4], autoescape=True)
            )
        )
    }
    if title not in taken:
        return title
    base = title[: MAX_TITLE - len(IMPORTED) - 4].rstrip()
    for n in range(1, 10_000):
        candidate = f"{base}{IMPORTED}" if n == 1 else f"{base} (imported {n})"
        if candidate not in taken:
            return candidate
    return base


MAX_TITLE = 200


def restore_samplers(session: Session, adventure_id: int, exported: Any) -> None:
    """The adventure's samplers as they were: its preset when this installation has the
    same one, else the preset's values kept as the adventure's own (its own values win)."""
    from talekeeper.service import samplers

    values = dict(exported.values)
    if exported.preset:
        here = samplers.every_preset(session).get(exported.preset)
        if exported.preset_values is None or here == exported.preset_values:
            try:
                samplers.set_adventure_choice(session, adventure_id, exported.preset, values)
                return
            except samplers.SamplersInvalid:
                pass  # not here: its values below
        values = {**(exported.preset_values or {}), **values}
    try:
        samplers.set_adventure_choice(session, adventure_id, None, values)
    except samplers.SamplersInvalid as exc:
        raise BundleInvalid("line 1 (header).adventure.samplers", str(exc)) from None


def load(
    session: Session,
    open_stream: Callable[[], IO[bytes]],
    size: int,
    progress: Progress | None = None,
) -> tuple[Adventure, Checked]:
    """Check and write the bundle as a new adventure, in one pass. Raises BundleInvalid
    (the caller's transaction then rolls back: nothing was written)."""
    checker = _Checker(session)
    writer: _Writer | None = None
    with open_stream() as stream:
        for number, raw in read_lines(stream, size):
            record = checker.line(number, raw)
            if writer is None:
                writer = _Writer(session, _scenario(session, record))
            else:
                writer.add(record, raw)
            if progress is not None and number % 200 == 0:
                progress(number, _total(checker.header))
    checker.finish()
    assert writer is not None  # finish() refuses a file without a header
    adventure = writer.finish()
    if progress is not None:
        total = _total(checker.header)
        progress(total, total)
    return adventure, writer.checked
