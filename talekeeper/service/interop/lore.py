"""Lore entries from every format (SillyTavern World Info and character books, NovelAI and
Agnai lorebooks, KoboldAI and AI Dungeon world info) → talekeeper story cards.

Each reader turns its entries into `LoreEntry`; `to_story_cards` maps those onto the
story-card fields that exist (type, name, entry, triggers, notes) and reports the rest.
What a story card honours: case-insensitive, partial-word triggers from recent text.
Constant entries (always sent) become part of the plot essentials, which are always
sent. Disabled entries, secondary keys and their logic, probabilities, groups,
timed effects, positions and depths have no story-card field yet: they are reported,
and written into the card's notes so nothing is silently lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .report import Report

MAX_ENTRY = 4000
MAX_TRIGGERS = 1000
MAX_NAME = 200
MAX_NOTES = 4000
_REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.S)
_EWI_DIRECTIVE = re.compile(r"#\[[^\]]*\]")
_PLAIN_ALTERNATIVE = re.compile(r"^[\w\s'’.-]+$")


@dataclass
class LoreEntry:
    label: str
    content: str
    keys: list[str]
    name: str = ""
    kind: str = "other"
    enabled: bool = True
    constant: bool = False
    secondary: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)  # kept in the notes, reported


def as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [k for k in (p.strip() for p in value.split(",")) if k]
    if isinstance(value, list):
        return [
            str(k) for k in value if isinstance(k, str | int | float) and not isinstance(k, bool)
        ]
    return []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _flag(value: Any, default: bool = False) -> bool:
    return value if isinstance(value, bool) else default


def _alternatives(pattern: str) -> list[str] | None:
    """Plain words out of a simple alternation like `(isekaid|(innkeeper of the |)bloated goat)`."""
    # `gulls?` → `gull`: story-card triggers match part of a word, so the plural comes free.
    pieces = [re.sub(r"s\?$", "", p.strip()) for p in re.split(r"[|()]", pattern)]
    words = [p for p in pieces if p]
    if words and all(_PLAIN_ALTERNATIVE.match(w) for w in words):
        return words
    return None


def clean_keys(raw: list[str], entry: LoreEntry, report: Report, where: str) -> list[str]:
    found: list[str] = []
    for key in raw:
        key = key.strip()
        if not key:
            continue
        if "#[" in key:
            key = _EWI_DIRECTIVE.sub("", key).strip()
            report.approximated(
                f"{where}.keys",
                "script directives like #[t=5] were removed (talekeeper runs no scripts)",
                entry.label,
            )
            if not key:
                continue
        regex = _REGEX_KEY.match(key)
        if regex or re.search(r"[|()]", key):
            words = _alternatives(regex.group(1) if regex else key)
            if words is None:
                report.dropped(
                    f"{where}.keys",
                    "a regular-expression key story cards cannot match",
                    f"{entry.label}: {key[:60]}",
                )
                continue
            report.approximated(
                f"{where}.keys",
                "a regular-expression key became its plain alternatives",
                entry.label,
            )
            found += words
            continue
        if "," in key:
            report.approximated(
                f"{where}.keys",
                "a key with a comma became two triggers (commas separate triggers)",
                entry.label,
            )
            found += [k.strip() for k in key.split(",") if k.strip()]
            continue
        found.append(key)
    unique: list[str] = []
    for key in found:
        if key.casefold() not in (u.casefold() for u in unique):
            unique.append(key)
    return unique


def _notes(source: str, entry: LoreEntry) -> str:
    parts = [f"Imported from {source}."]
    if entry.secondary:
        parts.append(
            f"Secondary keys (not used by talekeeper): {', '.join(entry.secondary)[:500]}."
        )
    for key, value in entry.extras.items():
        parts.append(f"{key}: {str(value)[:200]}.")
    return " ".join(parts)[:MAX_NOTES]


def to_story_cards(
    entries: list[LoreEntry], source: str, report: Report, where: str, resolve: Any = None
) -> tuple[list[dict[str, str]], list[str]]:
    """Story cards, and the texts of constant entries (for the always-sent plot essentials)."""
    resolve = resolve or (lambda text: text)
    cards: list[dict[str, str]] = []
    always: list[str] = []
    for entry in entries:
        content = resolve(entry.content).strip()
        if not content:
            report.dropped(f"{where}.content", "an entry with no text", entry.label)
            continue
        if not entry.enabled:
            report.dropped(
                f"{where}.enabled",
                "a disabled entry (story cards cannot be switched off; add it by hand when you want it)",
                entry.label,
            )
            continue
        if entry.secondary:
            report.approximated(
                f"{where}.secondary_keys",
                "secondary keys and their logic are not used: the entry triggers on its primary keys (kept in the card's notes)",
                entry.label,
            )
        for key in entry.extras:
            report.approximated(
                f"{where}.{key}", "no story-card equivalent; kept in the card's notes", entry.label
            )
        keys = clean_keys(entry.keys, entry, report, where)
        if entry.constant or not keys:
            why = (
                "a constant entry (always sent)"
                if entry.constant
                else "an entry with no usable keys"
            )
            report.approximated(
                f"{where}.constant",
                f"{why} became part of the plot essentials, which are always sent",
                entry.label,
            )
            always.append(content)
            continue
        triggers = ""
        for key in keys:
            candidate = f"{triggers}, {key}" if triggers else key
            if len(candidate) > MAX_TRIGGERS:
                report.approximated(
                    f"{where}.keys",
                    f"more keys than fit in {MAX_TRIGGERS} characters of triggers; the first ones were kept",
                    entry.label,
                )
                break
            triggers = candidate
        if len(content) > MAX_ENTRY:
            report.approximated(
                f"{where}.content",
                f"longer than a story card's {MAX_ENTRY:,} characters; cut there",
                entry.label,
            )
            content = content[:MAX_ENTRY]
        name = (entry.name or entry.label or keys[0]).strip()[:MAX_NAME]
        kind = (entry.kind or "other").strip()[:40] or "other"
        cards.append(
            {
                "type": kind,
                "name": name,
                "entry": content,
                "triggers": triggers,
                "notes": _notes(source, entry),
            }
        )
    if cards:
        report.imported(where, f"{len(cards)} entries became story cards")
    return cards, always


# --- readers, one per format ---------------------------------------------------------

_ST_EXTRAS = {
    "selectiveLogic": "selective logic",
    "probability": "probability",
    "group": "inclusion group",
    "sticky": "sticky",
    "cooldown": "cooldown",
    "delay": "delay",
    "depth": "depth",
    "scanDepth": "scan depth",
    "caseSensitive": "case sensitive",
    "matchWholeWords": "match whole words",
    "position": "position",
    "order": "order",
}


def _st_extras(raw: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    extras = {}
    for key, label in names.items():
        value = raw.get(key)
        if value in (None, "", 0, False, 100) and key in (
            "probability",
            "sticky",
            "cooldown",
            "delay",
            "group",
            "caseSensitive",
            "matchWholeWords",
            "scanDepth",
        ):
            continue
        if value is None or value == "":
            continue
        if (
            key == "selectiveLogic"
            and not raw.get("keysecondary")
            and not raw.get("secondary_keys")
        ):
            continue
        extras[label] = value
    return extras


def from_world_info(entries: Any) -> list[LoreEntry]:
    """SillyTavern World Info (`entries` keyed by uid; 2023, 2024 and Chub hybrid shapes)."""
    items = list(entries.values()) if isinstance(entries, dict) else list(entries or [])
    found = []
    for i, raw in enumerate(items):
        if not isinstance(raw, dict) or not raw:
            continue
        uid = raw.get("uid", raw.get("id", i))
        keys = as_list(raw["key"] if "key" in raw else raw.get("keys"))
        secondary = as_list(
            raw["keysecondary"] if "keysecondary" in raw else raw.get("secondary_keys")
        )
        enabled = (
            not _flag(raw.get("disable")) if "disable" in raw else _flag(raw.get("enabled"), True)
        )
        first = next((k for k in keys if k.strip()), "")
        label = _text(raw.get("comment")) or _text(raw.get("name")) or first or f"entry {uid}"
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=_text(raw.get("content")),
                keys=keys,
                enabled=enabled,
                constant=_flag(raw.get("constant")),
                secondary=secondary if raw.get("selective", True) else secondary,
                extras=_st_extras(raw, _ST_EXTRAS),
            )
        )
    return found


def from_character_book(book: dict[str, Any]) -> list[LoreEntry]:
    """A CCv2/v3 `character_book` (and Chub's `lexicon`, which holds most of some cards' lore)."""
    found = []
    for i, raw in enumerate(book.get("entries") or []):
        if not isinstance(raw, dict) or not raw:
            continue
        first = next((k for k in as_list(raw.get("keys")) if k.strip()), "")
        label = (
            _text(raw.get("comment"))
            or _text(raw.get("name"))
            or first
            or f"entry {raw.get('id', i)}"
        )
        ext = raw.get("extensions") if isinstance(raw.get("extensions"), dict) else {}
        extras = _st_extras(
            {**ext, "order": raw.get("insertion_order"), "position": raw.get("position")},
            _ST_EXTRAS,
        )
        if raw.get("use_regex") is True:
            extras["use_regex"] = "true (keys are read as plain words unless written /like this/)"
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=_text(raw.get("content")),
                keys=as_list(raw.get("keys")),
                enabled=_flag(raw.get("enabled"), True),
                constant=_flag(raw.get("constant")),
                secondary=as_list(raw.get("secondary_keys"))
                if raw.get("selective") is not False
                else [],
                extras=extras,
            )
        )
    for i, raw in enumerate(book.get("lexicon") or []):
        if not isinstance(raw, dict):
            continue
        label = _text(raw.get("name")) or _text(raw.get("comment")) or f"lexicon {i}"
        content = (
            _text(raw.get("content")) or _text(raw.get("description")) or _text(raw.get("entry"))
        )
        keys = as_list(raw.get("keys")) or as_list(raw.get("aliases")) or [label]
        found.append(
            LoreEntry(
                label=f"lexicon: {label}"[:80],
                name=label,
                content=content,
                keys=keys,
                kind=_text(raw.get("type")) or "other",
                enabled=_flag(raw.get("enabled"), True),
            )
        )
    return found


def from_novelai(book: dict[str, Any]) -> list[LoreEntry]:
    found = []
    for i, raw in enumerate(book.get("entries") or []):
        if not isinstance(raw, dict) or not raw:
            continue
        label = _text(raw.get("displayName")) or f"entry {i + 1}"
        extras = {}
        if raw.get("searchRange") not in (None, 1000):
            extras["search range"] = raw.get("searchRange")
        if raw.get("keyRelative"):
            extras["key relative"] = True
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=_text(raw.get("text")),
                keys=as_list(raw.get("keys")),
                enabled=_flag(raw.get("enabled"), True),
                constant=_flag(raw.get("forceActivation")),
                extras=extras,
            )
        )
    return found


def from_agnai(book: dict[str, Any]) -> list[LoreEntry]:
    found = []
    for i, raw in enumerate(book.get("entries") or []):
        if not isinstance(raw, dict) or not raw:
            continue
        label = _text(raw.get("name")) or _text(raw.get("comment")) or f"entry {i + 1}"
        if label.isdigit():
            label = f"entry {label}"
        keys = as_list(raw.get("keywords")) or as_list(raw.get("keys"))
        content = _text(raw.get("entry")) or _text(raw.get("content"))
        extras = {k: raw[k] for k in ("priority", "weight") if raw.get(k) not in (None, 0)}
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=content,
                keys=keys,
                enabled=_flag(raw.get("enabled"), True),
                constant=_flag(raw.get("constant")),
                extras=extras,
            )
        )
    return found


def from_kobold(items: list[Any]) -> list[LoreEntry]:
    found = []
    for i, raw in enumerate(items or []):
        if not isinstance(raw, dict) or not raw:
            continue
        keys = as_list(raw.get("key"))
        label = _text(raw.get("comment")) or (keys[0] if keys else f"entry {i + 1}")
        secondary = as_list(raw.get("keysecondary")) if raw.get("selective") else []
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=_text(raw.get("content")),
                keys=keys,
                constant=_flag(raw.get("constant")),
                secondary=secondary,
            )
        )
    return found


def from_aid(items: list[Any]) -> list[LoreEntry]:
    """AI Dungeon world info: `{keys: "a,b", entry}` (legacy) or story cards `{keys, value, title, type}`."""
    found = []
    for i, raw in enumerate(items or []):
        if not isinstance(raw, dict) or not raw:
            continue
        keys = as_list(raw.get("keys"))
        content = _text(raw.get("entry")) or _text(raw.get("value"))
        label = _text(raw.get("title")) or (keys[0] if keys else f"entry {i + 1}")
        label = _EWI_DIRECTIVE.sub("", label).strip() or f"entry {i + 1}"
        extras = {}
        if raw.get("description"):
            extras["notes"] = raw["description"]
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=content,
                keys=keys,
                kind=_text(raw.get("type")) or "other",
                extras=extras,
            )
        )
    return found
