"""Insights: what was sent to the model each turn, and why — stored small, rebuilt exactly.

A turn's record keeps every section's source, token cost and reason. Texts are stored
once per adventure under a digest (`context_texts`): instructions, persona and cards repeat
every turn and cost nothing after the first. History is not copied at all: the record keeps
the range of nodes it came from, and since nodes are immutable the history — and so the
whole prompt — is rebuilt exactly when Insights is opened; a digest of the prompt as sent
proves that the rebuild matches.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from talekeeper.context.prompt import (
    Assembly,
    HistoryTurn,
    Item,
    Section,
    build_request,
    flat_prompt,
    prompt_digest,
    shared_prefix_share,
)
from talekeeper.errors import NotFound
from talekeeper.llm.base import GenerationRequest
from talekeeper.store.models import ContextText, Node, TurnInsight
from talekeeper.story import tree

FORMAT = 1
NOT_STORED = frozenset({"history", "action"})  # rebuilt from the nodes


class InsightsMissing(NotFound):
    """The turn has no stored Insights (the opening, or a turn written before they existed)."""


def text_digest(text: str) -> str:
    """12 characters (72 bits) naming a text within one adventure."""
    return base64.urlsafe_b64encode(hashlib.blake2b(text.encode(), digest_size=9).digest()).decode()


def compact(
    assembly: Assembly, request: GenerationRequest
) -> tuple[dict[str, Any], dict[str, str]]:
    """The stored record and the texts it references (digest → text)."""
    texts: dict[str, str] = {}

    def ref(text: str) -> str | None:
        if not text:
            return None
        digest = text_digest(text)
        texts[digest] = text
        return digest

    sections = []
    for section in assembly.sections:
        entry: dict[str, Any] = {
            "n": section.name,
            "src": section.source,
            "why": section.why,
            "t": section.tokens,
        }
        if section.name not in NOT_STORED:
            entry["h"] = ref(section.text)
        if section.items:
            entry["items"] = [
                {
                    k: v
                    for k, v in {
                        "k": item.key,
                        "why": item.why,
                        "t": item.tokens,
                        "in": item.included,
                        "ref": item.ref,
                        "s": item.score,
                        "h": ref(item.text),
                    }.items()
                    if v is not None
                }
                for item in section.items
            ]
        sections.append(entry)
    first = assembly.history[0].node_id if assembly.history else None
    record = {
        "v": FORMAT,
        "mode": request.mode,
        "budget": assembly.budget,
        "reserve": assembly.reserve_for_reply,
        "sections": sections,
        "hist": [first, len(assembly.history), assembly.history_available],
        "note_at": assembly.author_note_at,
        "scene": assembly.in_scene,
        "notes": assembly.notes,
        "action": assembly.action_line,
        "pd": prompt_digest(request),
        "pfx": assembly.prefix_share,
        "opts": {
            k: v
            for k, v in request.model_dump().items()
            if k in ("max_tokens", "temperature", "top_p")
        },
    }
    if assembly.inserts:
        record["ins"] = [[at, ref(text)] for at, text in assembly.inserts]
    if assembly.cards_fired:
        record["wi"] = assembly.cards_fired  # story-card timers (sticky, cooldown) read these
    return record, texts


def store(
    session: Session,
    adventure_id: int,
    node_id: int,
    assembly: Assembly,
    request: GenerationRequest,
    extra: dict[str, Any] | None = None,
    known: frozenset[str] | set[str] = frozenset(),
) -> set[str]:
    """Write a turn's Insights in the caller's transaction; returns the digests of the texts
    it refers to (all stored once the transaction commits). `extra`: keys added to the
    record (which roles made the turn's calls); `known`: digests already stored for this
    adventure (`known_texts`), not looked up again."""
    record, texts = compact(assembly, request)
    if extra:
        record.update(extra)
    store_texts(session, adventure_id, texts, known)
    session.add(TurnInsight(node_id=node_id, adventure_id=adventure_id, data=record))
    _remember_sent(session, node_id, request)
    return set(texts)


# Digests known stored, per adventure: a turn's texts are mostly the last turn's, and
# asking the database which exist was a statement every turn. Texts are deleted only with
# their adventure, and the key holds the adventure's creation time as well as its id (SQLite
# may give a deleted adventure's id to a new one), so another process's writes cannot make
# an entry wrong; entries are added only after the transaction that stored them committed.
_known: OrderedDict[tuple[str, int, str], set[str]] = OrderedDict()
_known_lock = threading.Lock()
KNOWN_ADVENTURES = 16
KNOWN_TEXTS = 4096  # per adventure; past it the set starts again (a lookup costs one read)


def texts_key(session: Session, adventure: Any) -> tuple[str, int, str]:
    return (str(session.get_bind().url), adventure.id, str(adventure.created_at))


def known_texts(key: tuple[str, int, str]) -> frozenset[str]:
    with _known_lock:
        return frozenset(_known.get(key, ()))


def remember_texts(key: tuple[str, int, str], digests: set[str]) -> None:
    """Call once the transaction that stored `digests` has committed."""
    with _known_lock:
        kept = _known.setdefault(key, set())
        if len(kept) + len(digests) > KNOWN_TEXTS:
            kept.clear()
        kept.update(digests)
        _known.move_to_end(key)
        while len(_known) > KNOWN_ADVENTURES:
            _known.popitem(last=False)


def store_texts(
    session: Session,
    adventure_id: int,
    texts: dict[str, str],
    known: frozenset[str] | set[str] = frozenset(),
) -> None:
    """Keep texts under their digests (once per adventure), in the caller's transaction:
    one statement asks which are stored already, unless `known` says so of them all."""
    unknown = [digest for digest in texts if digest not in known]
    if not unknown:
        return
    have = set(
        session.scalars(
            select(ContextText.digest).where(
                ContextText.adventure_id == adventure_id, ContextText.digest.in_(unknown)
            )
        )
    )
    for digest in unknown:
        if digest not in have:
            blob = zlib.compress(texts[digest].encode(), 6)
            session.add(ContextText(adventure_id=adventure_id, digest=digest, text=blob))


def texts_for(session: Session, adventure_id: int, digests: set[str]) -> dict[str, str]:
    return _texts(session, adventure_id, digests)


@dataclass(frozen=True)
class PreviousPrompt:
    """What the prompt that wrote a node held, read back so the next one can keep it
    stable (the model server's cache): where history started, which cards and memories."""

    history_start: int | None = None  # node id
    cards: frozenset[int] = frozenset()  # card indexes
    memories: frozenset[int] = frozenset()  # memory ids


def previous_prompt(session: Session, node_id: int) -> PreviousPrompt:
    row = session.get(TurnInsight, node_id)
    return previous_from(row.data if row is not None else None)


def previous_from(record: dict[str, Any] | None) -> PreviousPrompt:
    """`previous_prompt` from a record already read (None: the turn has no Insights)."""
    if record is None:
        return PreviousPrompt()
    included: dict[str, frozenset[int]] = {}
    for section in record.get("sections", []):
        if section.get("n") in ("story_cards", "memories"):
            refs = (i.get("ref") for i in section.get("items", []) if i.get("in"))
            included[section["n"]] = frozenset(int(r) for r in refs if r is not None)
    start = (record.get("hist") or [None])[0]
    return PreviousPrompt(
        start, included.get("story_cards", frozenset()), included.get("memories", frozenset())
    )


_sent: OrderedDict[tuple[str, int], str | None] = OrderedDict()  # (database, node id) → prompt
SENT_KEPT = 32


def _remember_sent(session: Session, node_id: int, request: GenerationRequest) -> None:
    """Keep the last prompts sent, so the next turn's share needs no rebuild."""
    _keep_sent((str(session.get_bind().url), node_id), flat_prompt(request))


def _keep_sent(key: tuple[str, int], prompt: str | None) -> None:
    _sent[key] = prompt
    while len(_sent) > SENT_KEPT:
        _sent.popitem(last=False)


def sent_prompt(session: Session, node: Node) -> str | None:
    """The prompt that wrote `node`, flat (None: that turn has no Insights, e.g. the
    opening): kept from when it was sent, or rebuilt from the stored Insights (after a
    restart) and kept then — every retry of the turn after `node` asks for it again."""
    key = (str(session.get_bind().url), node.id)
    if key in _sent:
        return _sent.get(key)
    try:
        assembly, record = load(session, node)
    except InsightsMissing:
        previous = None
    else:
        previous = flat_prompt(rebuild_request(assembly, record))
    _keep_sent(key, previous)
    return previous


def share_of(previous: str, request: GenerationRequest) -> float:
    """The share of `request` byte-identical to the `previous` prompt (`sent_prompt`)."""
    return round(shared_prefix_share(previous, flat_prompt(request)), 4)


def prefix_share(session: Session, node: Node, request: GenerationRequest) -> float | None:
    """The share of `request` byte-identical to the prompt that wrote `node` (None: that
    turn has no Insights, e.g. the opening)."""
    previous = sent_prompt(session, node)
    return None if previous is None else share_of(previous, request)


def _texts(session: Session, adventure_id: int, digests: set[str]) -> dict[str, str]:
    if not digests:
        return {}
    rows = session.execute(
        select(ContextText.digest, ContextText.text).where(
            ContextText.adventure_id == adventure_id, ContextText.digest.in_(list(digests))
        )
    )
    return {digest: zlib.decompress(blob).decode() for digest, blob in rows}


def load(session: Session, node: Node) -> tuple[Assembly, dict[str, Any]]:
    """Rebuild the Assembly a turn was written from, and its stored record."""
    row = session.get(TurnInsight, node.id)
    if row is None:
        raise InsightsMissing(f"Turn {node.id} has no Insights (the opening has none).")
    record = row.data
    digests = {s["h"] for s in record["sections"] if s.get("h")}
    digests |= {i["h"] for s in record["sections"] for i in s.get("items", []) if i.get("h")}
    digests |= {h for _, h in record.get("ins", []) if h}
    texts = _texts(session, node.adventure_id, digests)
    first, count, available = record["hist"]
    history: list[HistoryTurn] = []
    if count and node.parent_id is not None:
        parent = session.get(Node, node.parent_id)
        assert parent is not None
        nodes = tree.path_to(session, parent, limit=count)
        history = [
            HistoryTurn(n.action_kind, n.action_text, n.narration, n.id, n.depth) for n in nodes
        ]
        if history and history[0].node_id != first:
            record = {
                **record,
                "notes": [*record["notes"], "The history could not be rebuilt exactly."],
            }
    from talekeeper.context.prompt import render_history

    sections = []
    for entry in record["sections"]:
        items = [
            Item(
                i["k"],
                texts.get(i.get("h", ""), ""),
                i.get("t", 0),
                i.get("why", ""),
                i.get("in", True),
                i.get("ref"),
                i.get("s"),
            )
            for i in entry.get("items", [])
        ]
        text = texts.get(entry.get("h") or "", "")
        sections.append(
            Section(entry["n"], text, entry["why"], entry["t"], entry.get("src", ""), items)
        )
    assembly = Assembly(
        sections=sections,
        history=history,
        action_line=record["action"],
        budget=record["budget"],
        reserve_for_reply=record["reserve"],
        history_available=available,
        author_note_at=record["note_at"],
        in_scene=record["scene"],
        notes=record["notes"],
        inserts=[(at, texts.get(h, "")) for at, h in record.get("ins", [])],
        cards_fired=list(record.get("wi", [])),
        prefix_share=record.get("pfx"),
    )
    for section in assembly.sections:
        if section.name == "history":
            note = assembly.section("author_note")
            section.text = render_history(
                history,
                note.text if note else None,
                assembly.author_note_at,
                chat=False,
                inserts=assembly.inserts,
            )
        elif section.name == "action":
            section.text = record["action"]
    return assembly, record


def records_on(session: Session, ids: Sequence[int]) -> dict[int, tuple[int, dict[str, Any]]]:
    """Node id → (depth, stored record) for the turns among `ids` that have Insights: one
    read serves the card timers and the previous prompt."""
    if not ids:
        return {}
    rows = session.execute(_RECORDS_ON, {"ids": list(ids)})
    return {node_id: (depth, data) for node_id, depth, data in rows}


_RECORDS_ON = (  # built once: every turn reads it
    select(TurnInsight.node_id, Node.depth, TurnInsight.data)
    .join(Node, Node.id == TurnInsight.node_id)
    .where(TurnInsight.node_id.in_(bindparam("ids", expanding=True)))
)


def card_timers(
    session: Session,
    path: Sequence[int],
    lookback: int,
    records: dict[int, tuple[int, dict[str, Any]]] | None = None,
) -> dict[int, int]:
    """Story card index → the turn it last fired by its own rules, over the last `lookback`
    turns on the path (from each turn's stored record), for sticky and cooldown. Read from
    the path, so undo, redo and other lines each see their own timers. `records`: the
    `records_on` those turns, when already read."""
    if lookback <= 0 or not path:
        return {}
    ids = path[-lookback:]
    if records is None:
        records = records_on(session, ids)
    rows = [records[i] for i in ids if i in records]
    last: dict[int, int] = {}
    for depth, data in sorted(rows, key=lambda r: r[0]):
        for index in (data or {}).get("wi", []):
            last[int(index)] = depth
    return last


def view(
    assembly: Assembly, request: GenerationRequest, record: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The Insights payload: sections with costs and reasons, what triggered, what was cut,
    and the exact prompt as sent."""
    cards = next((s for s in assembly.sections if s.name == "story_cards"), None)
    memories = next((s for s in assembly.sections if s.name == "memories"), None)
    digest = prompt_digest(request)
    data = {
        **assembly.as_dict(),
        "usable": assembly.budget - assembly.reserve_for_reply,
        "triggered_cards": [asdict(i) for i in cards.items] if cards else [],
        "retrieved_memories": [asdict(i) for i in memories.items] if memories else [],
        "prompt": {
            "mode": request.mode,
            "messages": [m.model_dump() for m in request.messages]
            if request.mode == "chat"
            else None,
            "text": request.prompt if request.mode == "completion" else None,
            "digest": digest,
        },
    }
    if record is not None:
        data["stored"] = True
        data["verified"] = record.get("pd") == digest
    return data


def rebuild_request(assembly: Assembly, record: dict[str, Any]) -> GenerationRequest:
    return build_request(assembly, record["mode"], **record.get("opts", {}))
