"""Read a stored document back, repairing what is broken without guessing.

Stored documents outlive the code that wrote them, and an import file can hold anything.
`normalise` checks each section on its own: a section that does not fit its shape is
reset to its default (empty, or what the scenario declares when rules are given), and the
repair is reported; the good sections are kept exactly. Then cross-references and the
scenario's declarations are checked entry by entry: an entry pointing at an entity that
no longer exists is dropped, a declared stat/flag/milestone that is missing is added at
its initial value, a stat outside its declared range is held to it. Every repair is
reported in words. A valid document comes back identical, with no repairs.
"""

from __future__ import annotations

from collections.abc import Set
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .document import (
    PLAYER_ID,
    RECENT_EVENTS_WINDOW,
    SECTIONS,
    VERSION,
    Document,
    StatValue,
    empty_document,
)
from .initial import initial_document
from .rules import Rules, StatRule


@cache
def _adapter(section: str) -> TypeAdapter[Any]:
    return TypeAdapter(Document.model_fields[section].annotation)


def _first_error(error: ValidationError) -> str:
    detail = error.errors()[0]
    where = ".".join(str(p) for p in detail["loc"])
    return f"{where}: {detail['msg']}" if where else detail["msg"]


class _Defaults:
    """The document a section is reset to, built only when a repair needs it (a valid
    document needs none, and building the scenario's initial document costs more than
    checking one)."""

    def __init__(self, rules: Rules | None) -> None:
        self.rules = rules
        self._document: Document | None = None

    @property
    def document(self) -> Document:
        if self._document is None:
            rules = self.rules
            self._document = initial_document(rules) if rules is not None else empty_document()
        return self._document

    def __getattr__(self, name: str) -> Any:
        return getattr(self.document, name)


Memo = dict[str, tuple[Any, Any]]
"""Per section, the last raw value checked and what it became: `normalise` over a run of
documents that share most sections (the snapshots of consecutive turns) checks a section
again only when it differs from the one before. Under `_CLEAN`, the rules and sections of
the last document that needed no repair: a check across sections (keys, references, the
rules' declarations) runs again only when one of the sections it reads, or the rules, differ
from that document's, since the same check of the same sections found nothing then."""

_CLEAN = "(clean)"


def normalise(
    raw: Any, rules: Rules | None = None, memo: Memo | None = None
) -> tuple[Document, list[str]]:
    """A usable document from stored JSON, and the list of repairs made (empty when none).

    With `memo` (a dict kept across calls, for checking many documents: see `Memo`), a
    section equal to the last one checked is not checked again; the document returned
    then shares that section's value with the one before, so mutate neither."""
    defaults: Any = _Defaults(rules)
    repairs: list[str] = []
    if not isinstance(raw, dict):
        repairs.append("the document is not a JSON object; started again from the initial state")
        return defaults.document, repairs
    version = raw.get("version")
    if version != VERSION:
        if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
            repairs.append(
                f"version {version} is newer than this engine reads ({VERSION}); read section by section"
            )
        else:
            repairs.append(f"version {version!r} is not {VERSION}; read section by section")
    for key in raw:
        if key != "version" and key not in SECTIONS:
            repairs.append(f"dropped unknown section '{str(key)[:40]}'")
    sections: dict[str, Any] = {}
    for name in SECTIONS:
        if name not in raw:
            repairs.append(f"{name}: missing; set to its default")
            sections[name] = getattr(defaults, name)
            continue
        seen = memo.get(name) if memo is not None else None
        if seen is not None and seen[0] == raw[name]:
            sections[name] = seen[1]
            continue
        try:
            sections[name] = _adapter(name).validate_python(raw[name], strict=True)
        except ValidationError as error:
            repairs.append(f"{name}: reset to its default ({_first_error(error)})")
            sections[name] = getattr(defaults, name)
            continue
        if memo is not None:
            memo[name] = (raw[name], sections[name])
    doc = Document(**sections)
    clean = memo.get(_CLEAN) if memo is not None else None
    if clean is None or clean[0] is not rules:
        differ = set(SECTIONS)
    else:
        differ = {name for name in SECTIONS if sections[name] is not clean[1][name]}
    if not differ.isdisjoint(("entities", "threads", "facts", "relationships", "moments")):
        _check_keys(doc, defaults, repairs)
    if not differ.isdisjoint(("entities", "possessions", "scene")):
        _check_references(doc, defaults, repairs)
    if len(doc.recent_events) > RECENT_EVENTS_WINDOW:
        dropped = len(doc.recent_events) - RECENT_EVENTS_WINDOW
        doc.recent_events = doc.recent_events[-RECENT_EVENTS_WINDOW:]
        repairs.append(f"recent_events: kept the newest {RECENT_EVENTS_WINDOW}, dropped {dropped}")
    if rules is not None:
        _check_declarations(doc, rules, repairs, differ)
    if memo is not None and not repairs:
        memo[_CLEAN] = (rules, sections)
    return doc, repairs


def _check_keys(doc: Document, defaults: Document, repairs: list[str]) -> None:
    """Keys must equal the ids they hold, and ids must be unique; otherwise which one is
    right would be a guess, so the section is reset."""
    if any(key != entity.id for key, entity in doc.entities.items()):
        repairs.append("entities: reset to its default (an entry's key differs from its id)")
        doc.entities = defaults.entities
    if any(key != thread.id for key, thread in doc.threads.items()):
        repairs.append("threads: reset to its default (an entry's key differs from its id)")
        doc.threads = defaults.threads
    for name in ("facts", "relationships", "moments"):
        ids = [item.id for item in getattr(doc, name)]
        if len(ids) != len(set(ids)):
            repairs.append(f"{name}: reset to its default (an id is used twice)")
            setattr(doc, name, getattr(defaults, name))
    if PLAYER_ID not in doc.entities:
        doc.entities = {PLAYER_ID: defaults.entities[PLAYER_ID], **doc.entities}
        repairs.append("entities.player: missing; restored")


def _check_references(doc: Document, defaults: Document, repairs: list[str]) -> None:
    known = doc.entities
    for entity in known.values():
        if entity.location is not None and entity.location not in known:
            repairs.append(
                f"entities.{entity.id}.location: '{entity.location}' does not exist; cleared"
            )
            entity.location = None
    for item, holder in list(doc.possessions.items()):
        if item not in known or holder not in known or item == holder or item == PLAYER_ID:
            repairs.append(f"possessions.{item}: refers to a missing entity or itself; dropped")
            del doc.possessions[item]
    scene = doc.scene
    if scene.location is not None and scene.location not in known:
        repairs.append(f"scene.location: '{scene.location}' does not exist; cleared")
        scene.location = None
    missing = [p for p in scene.present if p not in known]
    if missing:
        repairs.append(f"scene.present: dropped {', '.join(missing)} (no such entity)")
        scene.present = [p for p in scene.present if p in known]


def _check_declarations(doc: Document, rules: Rules, repairs: list[str], differ: Set[str]) -> None:
    """Each section the rules declare entries in, among those that `differ` from the last
    clean document's (see `Memo`)."""
    if "flags" in differ:
        for name, flag in rules.flags.items():
            if name not in doc.flags:
                doc.flags[name] = flag.initial
                repairs.append(f"flags.{name}: missing; set to its initial {flag.initial}")
    if "milestones" in differ:
        for mid in rules.milestones:
            if mid not in doc.milestones:
                doc.milestones[mid] = None
                repairs.append(f"milestones.{mid}: missing; set as not reached")
    if "stats" not in differ:
        return
    blocks = [
        ("world", rules.stats.world, doc.stats.world),
        ("player", rules.stats.player, doc.stats.player),
    ]
    for npc, block in rules.stats.npcs.items():
        blocks.append((f"npc.{npc}", block, doc.stats.npcs.setdefault(npc, {})))
    for owner, declared, live in blocks:
        for name, rule in declared.items():
            _check_stat(f"stats.{owner}.{name}", rule, live, name, repairs)


def _check_stat(
    path: str, rule: StatRule, live: dict[str, StatValue], name: str, repairs: list[str]
) -> None:
    current = live.get(name)
    if current is None:
        live[name] = StatValue(value=rule.initial)
        repairs.append(f"{path}: missing; set to its initial value")
        return
    value = current.value
    fits_kind = isinstance(value, str) == (rule.kind == "text")
    if not fits_kind or (rule.integer and rule.numeric and not float(value).is_integer()):
        live[name] = StatValue(value=rule.initial, changed=current.changed)
        repairs.append(
            f"{path}: {value!r} does not fit a {rule.kind} stat; reset to its initial value"
        )
        return
    if isinstance(value, str):
        if len(value) > rule.max_length:
            live[name] = StatValue(value=rule.initial, changed=current.changed)
            repairs.append(
                f"{path}: longer than {rule.max_length} characters; reset to its initial value"
            )
        return
    held = value
    if rule.max is not None and held > rule.max:
        held = rule.max
    if rule.min is not None and held < rule.min:
        held = rule.min
    if held != value:
        held = int(held) if rule.integer else held
        live[name] = StatValue(value=held, changed=current.changed)
        repairs.append(f"{path}: {value} is outside its declared range; held to {held}")
