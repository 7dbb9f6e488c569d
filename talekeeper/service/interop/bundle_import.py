"""Read a bundle back: check all of it, then write it, a record at a time.

Import is two passes over the file. The first checks everything — the gzip stream, each
line against the schema, the order of records, every reference (parents, active
children, memories, summaries, Insights, Save Points), the tree's shape, every state
snapshot against the adventure's rules, the counts and the end record's SHA-256 — and
writes nothing. A problem refuses the whole file with the path of the first one
(`line 12 (node 11).parent: …`). Only a file that passed is read a second time and
written, in one transaction, so a failure even then leaves the database as it was.

Memory holds one line at a time plus a few bytes per turn (the tree's shape), never the
story's text. Hostile input is bounded: the compressed size, each line's size, the
decompressed total, and nesting depth.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from pydantic import ValidationError
from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from talekeeper.context.insights import text_digest
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.errors import Invalid
from talekeeper.service.plot import Persona, StoryCard
from talekeeper.state import RulesError, empty_rules, load_rules, normalise
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
        self.active = array("i")
        self.parent = array("i")
        self.children = bytearray()
        self.memories = 0
        self.insight_nodes: set[int] = set()
        self.valid_states: dict[bytes, None] = {}
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
            self.digest.update(raw + b"\n")
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
        problem = check_plot(adventure.plot)
        if problem:
            raise BundleInvalid(f"{where}.adventure", problem)
        if adventure.root != 1:
            raise BundleInvalid(f"{where}.adventure.root", "the root is always node 1")
        if adventure.head > record.counts.nodes:
            raise BundleInvalid(
                f"{where}.adventure.head", f"node {adventure.head} is not in the bundle"
            )

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
        key = hashlib.blake2b(
            json.dumps(record.state, sort_keys=True, separators=(",", ":")).encode(), digest_size=16
        ).digest()
        if key not in self.valid_states:
            _doc, repairs = normalise(record.state, self.rules)
            if repairs:
                raise BundleInvalid(
                    f"{where}.state", f"does not fit the adventure's rules ({repairs[0]})"
                )
            if len(self.valid_states) > 1024:
                self.valid_states.clear()
            self.valid_states[key] = None
        if record.proposal and "edited_from" in record.proposal:
            ref = record.proposal["edited_from"]
            if ref is not None and (
                not isinstance(ref, int) or isinstance(ref, bool) or not 1 <= ref < record.id
            ):
                raise BundleInvalid(f"{where}.proposal.edited_from", "must name an earlier node")
        self.depth.append(record.depth)
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


def check(
    session: Session,
    open_stream: Callable[[], IO[bytes]],
    size: int,
    progress: Progress | None = None,
) -> Checked:
    """The first pass: everything checked, nothing written. Raises BundleInvalid."""
    checker = _Checker(session)
    with open_stream() as stream:
        for number, raw in read_lines(stream, size):
            checker.line(number, raw)
            if progress is not None and number % 200 == 0 and checker.header is not None:
                progress(number, _total(checker.header))
    checker.finish()
    header = checker.header
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


def write(
    session: Session,
    checked: Checked,
    open_stream: Callable[[], IO[bytes]],
    size: int,
    progress: Progress | None = None,
) -> Adventure:
    """The second pass: write the checked bundle as a new adventure (one transaction)."""
    header = checked.header
    meta = header.adventure
    if checked.scenario_action == "add":
        from talekeeper.service.scenarios import name_of

        data = {**meta.scenario.data, "id": name_of(checked.scenario_id)}
        session.add(
            Scenario(
                id=checked.scenario_id,
                title=str(data.get("title", ""))[:200],
                description=str(data.get("description", "")),
                data=data,
                builtin=False,
                owner_id=owner.current(),
            )
        )
        session.flush()
    adventure = Adventure(
        scenario_id=checked.scenario_id,
        title=meta.title,
        plot=meta.plot,
        rules=meta.rules,
        turn_count=meta.turn_count,
        created_at=_naive(meta.created_at),
        last_played_at=_naive(meta.last_played_at),
        owner_id=owner.current(),
    )
    session.add(adventure)
    session.flush()
    aid = adventure.id
    nodes = array("q", [0])  # local id → database id (index 0 unused)
    active = array("i", [0])
    memories = array("q", [0])
    node_table, memory_table = Node.__table__, Memory.__table__
    # Statements built once and run with parameters: building one per row cost more than the row.
    conn = session.connection()
    add_text = insert(ContextText.__table__)
    add_node = insert(node_table)
    set_active = (
        update(node_table)
        .where(node_table.c.id == bindparam("parent"))
        .values(active_child_id=bindparam("child"))
    )
    add_memory = insert(memory_table)
    add_summary = insert(StorySummary.__table__)
    add_insight = insert(TurnInsight.__table__)
    add_save_point = insert(SavePoint.__table__)
    total = _total(header)
    with open_stream() as stream:
        for number, raw in read_lines(stream, size):
            record = LINE.validate_json(raw)
            if progress is not None and number % 200 == 0:
                progress(number, total)
            if record.t == "text":
                conn.execute(
                    add_text,
                    {
                        "adventure_id": aid,
                        "digest": record.digest,
                        "text": zlib.compress(record.text.encode(), 6),
                    },
                )
            elif record.t == "node":
                values = dict(
                    adventure_id=aid,
                    parent_id=nodes[record.parent] if record.parent else None,
                    depth=record.depth,
                    action_kind=record.kind,
                    action_text=record.action,
                    narration=record.narration,
                    reasoning=record.reasoning,
                    state=record.state,
                    proposal=remap_proposal(
                        record.proposal, lambda n: nodes[n] if isinstance(n, int) else n
                    ),
                    branch_name=record.branch_name,
                    take_of=nodes[record.take_of] if record.take_of else None,
                    model=record.model,
                    created_at=_naive(record.created_at),
                )
                new_id = conn.execute(add_node, values).inserted_primary_key[0]
                nodes.append(new_id)
                active.append(record.active_child or 0)
                if record.parent and active[record.parent] == record.id:
                    conn.execute(set_active, {"parent": nodes[record.parent], "child": new_id})
            elif record.t == "memory":
                values = record.model_dump(exclude={"t", "id", "node", "embedding"})
                values.update(
                    adventure_id=aid,
                    node_id=nodes[record.node],
                    embedding=base64.b64decode(record.embedding)
                    if record.embedding is not None
                    else None,
                    created_at=_naive(record.created_at),
                    updated_at=_naive(record.updated_at),
                )
                memories.append(conn.execute(add_memory, values).inserted_primary_key[0])
            elif record.t == "summary":
                summary = {
                    "node_id": nodes[record.node],
                    "depth": record.depth,
                    "text": record.text,
                    "source": record.source,
                }
                conn.execute(
                    add_summary,
                    {**summary, "adventure_id": aid, "created_at": _naive(record.created_at)},
                )
            elif record.t == "insight":
                data = remap_insight(
                    record.data,
                    lambda n: nodes[n] if isinstance(n, int) else n,
                    lambda m: memories[m] if isinstance(m, int) else m,
                )
                conn.execute(
                    add_insight, {"node_id": nodes[record.node], "adventure_id": aid, "data": data}
                )
            elif record.t == "save_point":
                point = {"node_id": nodes[record.node], "name": record.name, "note": record.note}
                conn.execute(
                    add_save_point,
                    {**point, "adventure_id": aid, "created_at": _naive(record.created_at)},
                )
    adventure.root_node_id = nodes[meta.root]
    adventure.head_node_id = nodes[meta.head]
    session.flush()
    if progress is not None:
        progress(total, total)
    return adventure
