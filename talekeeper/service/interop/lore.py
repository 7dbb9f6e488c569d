"""Lore entries from every format (SillyTavern World Info and character books, NovelAI and
Agnai lorebooks, KoboldAI and AI Dungeon world info) → talekeeper story cards.

Each reader turns its entries into `LoreEntry`; `to_story_cards` maps those onto the
story-card fields (SillyTavern's World Info semantics: secondary keys and logic, whole
words, case, /regex/ keys, constant, enabled, scan depth, position and depth, order,
probability, groups, sticky/cooldown/delay, recursion) and reports what has no
equivalent; those values are also written into the card's notes, so nothing is lost
silently. A key is kept as a /regex/ only when it is written like one: SillyTavern marks
plain words `use_regex: true` too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from talekeeper.context.cardspec import StoryCard
from talekeeper.context.keys import BadKey, parse_keys

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
    extras: dict[str, Any] = field(
        default_factory=dict
    )  # no card field: kept in the notes, reported
    fields: dict[str, Any] = field(default_factory=dict)  # story-card fields read from the source


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
        if regex:
            try:
                parse_keys(key)
                found.append(key)
                report.imported(
                    f"{where}.keys", "regular-expression keys are kept as /regex/ triggers"
                )
                continue
            except BadKey:
                report.dropped(
                    f"{where}.keys", "an invalid regular expression", f"{entry.label}: {key[:60]}"
                )
                continue
        if re.search(r"[|()]", key):
            words = _alternatives(key)
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
) -> tuple[list[dict[str, Any]], list[str]]:
    """Story cards, and texts for the plot essentials (none any more: kept for callers)."""
    resolve = resolve or (lambda text: text)
    cards: list[dict[str, Any]] = []
    for entry in entries:
        content = resolve(entry.content).strip()
        if not content:
            report.dropped(f"{where}.content", "an entry with no text", entry.label)
            continue
        if not entry.enabled:
            report.imported(
                f"{where}.enabled", "disabled entries were kept as disabled cards", entry.label
            )
        for key in entry.extras:
            report.approximated(
                f"{where}.{key}", "no story-card equivalent; kept in the card's notes", entry.label
            )
        keys = clean_keys(entry.keys, entry, report, where)
        secondary = clean_keys(entry.secondary, entry, report, f"{where}.secondary_keys")
        fields = dict(entry.fields)
        constant = entry.constant
        if not keys and not constant:
            report.approximated(
                f"{where}.keys",
                "an entry with no usable keys became a constant card (always sent)",
                entry.label,
            )
            constant = True
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
        name = (entry.name or entry.label or (keys[0] if keys else "")).strip()[:MAX_NAME]
        kind = (entry.kind or "other").strip()[:40] or "other"
        card = {
            "type": kind,
            "name": name,
            "entry": content,
            "triggers": triggers,
            "notes": _notes(source, entry),
            "constant": constant,
            "enabled": entry.enabled,
        }
        if secondary:
            card["secondary_triggers"] = ", ".join(secondary)[:MAX_TRIGGERS]
        card.update(fields)
        try:
            cards.append(
                StoryCard.model_validate(card).model_dump(exclude_defaults=True)
                | {"entry": content, "triggers": card["triggers"]}
            )
        except ValueError as exc:  # a value outside the card's ranges: keep the plain card
            report.approximated(
                f"{where}",
                f"settings outside talekeeper's ranges were left at their defaults ({str(exc).splitlines()[0][:80]})",
                entry.label,
            )
            plain = {
                k: v
                for k, v in card.items()
                if k
                in (
                    "type",
                    "name",
                    "entry",
                    "triggers",
                    "notes",
                    "constant",
                    "enabled",
                    "secondary_triggers",
                )
            }
            cards.append(plain)
    if cards:
        report.imported(where, f"{len(cards)} entries became story cards")
    return cards, []


# --- readers, one per format ---------------------------------------------------------

_LOGIC = {
    0: "and_any",
    1: "not_all",
    2: "not_any",
    3: "and_all",
    "AND_ANY": "and_any",
    "NOT_ALL": "not_all",
    "NOT_ANY": "not_any",
    "AND_ALL": "and_all",
}
# SillyTavern's numeric positions: before/after the character, around the author's note,
# at a depth, around the example messages (talekeeper has none: before the history).
_POSITION = {
    0: "before_history",
    1: "after_history",
    2: "author_note",
    3: "author_note",
    4: "at_depth",
    5: "before_history",
    6: "before_history",
    "before_char": "before_history",
    "after_char": "after_history",
    "before_char_defs": "before_history",
}


def _first(raw: dict[str, Any], *names: str) -> Any:
    for name in names:
        if raw.get(name) is not None:
            return raw[name]
    return None


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def st_fields(raw: dict[str, Any], report_extras: dict[str, Any]) -> dict[str, Any]:
    """Story-card fields from a World Info entry or a character book entry (plus its
    `extensions`): camelCase (what SillyTavern reads) before snake_case; null is unset."""
    fields: dict[str, Any] = {}
    logic = _first(raw, "selectiveLogic", "selective_logic", "key_logic")
    if logic in _LOGIC:
        fields["logic"] = _LOGIC[logic]
    position = _first(raw, "position")
    if position in _POSITION:
        fields["position"] = _POSITION[position]
        if position in (5, 6):
            report_extras["position"] = "around the example messages (talekeeper: before the story)"
    elif position is not None:
        report_extras["position"] = position
    for target, names in (
        ("depth", ("depth",)),
        ("order", ("order", "insertion_order")),
        ("scan_depth", ("scanDepth", "scan_depth")),
        ("sticky", ("sticky",)),
        ("cooldown", ("cooldown",)),
        ("delay", ("delay",)),
        ("group_weight", ("groupWeight", "group_weight")),
    ):
        value = _number(_first(raw, *names))
        if value is not None:
            fields[target] = value
    use_probability = _first(raw, "useProbability", "use_probability")
    probability = _number(_first(raw, "probability", "activation_chance"))
    if probability is not None and use_probability is not False:
        fields["probability"] = max(0, min(100, probability))
    for target, names in (
        ("case_sensitive", ("caseSensitive", "case_sensitive")),
        ("whole_words", ("matchWholeWords", "match_whole_words", "whole_words_only")),
        ("group_override", ("groupOverride", "group_override")),
        ("exclude_recursion", ("excludeRecursion", "exclude_recursion")),
        ("prevent_recursion", ("preventRecursion", "prevent_recursion")),
        ("delay_until_recursion", ("delayUntilRecursion", "delay_until_recursion")),
    ):
        value = _first(raw, *names)
        if isinstance(value, bool | int) and value is not None:
            fields[target] = bool(value)
    group = _first(raw, "group")
    if isinstance(group, str) and group.strip():
        fields["group"] = group.strip()[:200]
    if raw.get("vectorized"):
        report_extras["vectorized"] = "true (talekeeper matches keys, not embeddings)"
    return fields


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
        extras: dict[str, Any] = {}
        fields = st_fields(raw, extras)
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=_text(raw.get("content")),
                keys=keys,
                enabled=enabled,
                constant=_flag(raw.get("constant")),
                secondary=secondary,
                extras=extras,
                fields=fields,
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
        extras: dict[str, Any] = {}
        # The entry's own fields, then SillyTavern's copies in `extensions` (what it reads).
        own = {k: v for k, v in raw.items() if k != "extensions"}
        fields = st_fields({**own, **{k: v for k, v in ext.items() if v is not None}}, extras)
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
                fields=fields,
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
        extras = {"weight": raw["weight"]} if raw.get("weight") not in (None, 0) else {}
        fields = {"order": raw["priority"]} if _number(raw.get("priority")) is not None else {}
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=content,
                keys=keys,
                enabled=_flag(raw.get("enabled"), True),
                constant=_flag(raw.get("constant")),
                extras=extras,
                fields=fields,
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
