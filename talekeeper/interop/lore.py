"""Lore entries from every format (SillyTavern World Info and character books, NovelAI and
Agnai lorebooks, KoboldAI and AI Dungeon world info) → talekeeper story cards.

Each reader turns its entries into `LoreEntry`; `to_story_cards` maps those onto the
story-card fields (SillyTavern's World Info semantics: secondary keys and logic, whole
words, case, /regex/ keys, constant, enabled, scan depth, position and depth, order,
probability, groups, sticky/cooldown/delay, recursion) and reports what has no
equivalent; those values are also written into the card's notes, so nothing is lost
silently. Every field a reader does not use is named in the report.

Keys keep their meaning. A key written `/like this/` is a regex; a key written as a
pattern without slashes (`Katariah|(|the )emp(ress|eror)`, `gulls?`), as AI Dungeon's
and NovelAI's authors write them, becomes the regex it is — never a split into fragments —
unless it is a plain list of alternatives (`(innkeeper|bloated goat)`), which becomes
those words. A common word (`the`) is dropped and a one- or two-letter key (`HP`) becomes
a whole-word regex, both reported: as they are, they would fire on nearly every turn.

An entry with no usable key that is not constant never fires in the app it came from
(SillyTavern sends a keyless `vectorized` entry only on an embedding match), so it is
imported disabled, with a report line — never as an always-sent card. Long lore is kept
whole up to a card's 20,000 characters; a longer entry is split into parts (reported).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from talekeeper.context.cardspec import MAX_ENTRY, StoryCard, load_card
from talekeeper.context.keys import STOP_WORDS, BadKey, make_key, parse_keys, weak_key

from .report import Report

MAX_TRIGGERS = 1000
MAX_NAME = 200
MAX_NOTES = 4000
_REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.S)
_EWI_DIRECTIVE = re.compile(r"#\[[^\]]*\]")
# A key written as a pattern: an alternation, a regex escape (`\b`), a character class,
# a quantified group or class, `.*`, or one word with an optional last letter (`gulls?`).
# Parentheses alone are text (`Kiana (K-423)`), as is a question (`What is Honkai?`).
_PATTERN = re.compile(r"\||\\[bBwWsSdD]|\[[^\]]+\]|[)\]][?*+]|\.[*+]|^\w+[?*+]$|\(\?[:=!i]")
_META = re.compile(r"[|()\[\]\\?*+.^${}]")
_DECORATOR = re.compile(r"^@@@?([A-Za-z_][A-Za-z0-9_]*)[ \t]*(.*)$")
# Fields with no meaning for the story (an editor's bookkeeping), read without a report.
BOOKKEEPING = {
    "uid",
    "id",
    "entry_id",
    "displayIndex",
    "display_index",
    "addMemo",
    "lastUpdatedAt",
    "createdAt",
    "updatedAt",
    "__typename",
    "folder",
    "num",
    "init",
}


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
    vectorized: bool = False  # SillyTavern matches it by embeddings too
    had_keys: bool = False  # the source gave keys (perhaps none usable)
    literal: bool = False  # the source says its keys are plain text (`use_regex: false`)


def as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [k for k in (p.strip() for p in value.split(",")) if k]
    if isinstance(value, list):
        return [
            str(k) for k in value if isinstance(k, str | int | float) and not isinstance(k, bool)
        ]
    return []


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def flag(value: Any, default: bool = False) -> bool:
    return value if isinstance(value, bool) else default


def number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return int(max(-(10**9), min(10**9, value)))


def records(value: Any) -> list[dict[str, Any]]:
    """The objects in a list (or a dict's values, as World Info keys them by uid)."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [item for item in items if isinstance(item, dict)]


def empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or value in ("", [], {})


def unread(report: Report, where: str, raw: dict[str, Any], read: set[str], label: str) -> None:
    """Report each field of `raw` that holds something and that no reader used."""
    for key in raw:
        if key not in read and key not in BOOKKEEPING and not empty(raw[key]):
            report.dropped(
                f"{where}.{key}"[:120], "no talekeeper equivalent; not imported", label[:60]
            )


# --- keys ------------------------------------------------------------------------------


def _alternatives(pattern: str) -> list[str] | None:
    """The words of a key that is only a list of alternatives (`a|b` or `(a|b)`), or None."""
    body = pattern
    if body.startswith("(") and body.endswith(")") and body.count("(") == 1:
        body = body[1:-1]
    words = [w.strip() for w in body.split("|")]
    if len(words) > 1 and all(w and not _META.search(w) for w in words):
        return words
    return None


def regex_key(pattern: str, case_sensitive: bool) -> str | None:
    """`pattern` as a `/…/i` key, or None when it is not a valid regular expression or
    matches the empty text (`Aira || Sweet` is a name, not a pattern: as one it would
    fire on every turn)."""
    key = f"/{pattern.replace('/', chr(92) + '/')}/" + ("" if case_sensitive else "i")
    try:
        compiled = make_key(key, case_sensitive, False)
        if compiled.pattern.search("", timeout=0.05) is not None:  # type: ignore[attr-defined]
            return None
    except (BadKey, TimeoutError):
        return None
    return key


def clean_keys(
    raw: list[str],
    entry: LoreEntry,
    report: Report,
    where: str,
    *,
    case_sensitive: bool = False,
    whole_words: bool = False,
    literal: bool = False,
) -> list[str]:
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
        if _REGEX_KEY.match(key):
            try:
                parse_keys(key)
            except BadKey:
                report.dropped(
                    f"{where}.keys", "an invalid regular expression", f"{entry.label}: {key[:60]}"
                )
                continue
            found.append(key)
            report.imported(f"{where}.keys", "regular-expression keys are kept as /regex/ triggers")
            continue
        if not literal and _PATTERN.search(key):
            words = _alternatives(key)
            if words is not None:
                report.approximated(
                    f"{where}.keys",
                    "a key listing alternatives (a|b) became one trigger per alternative",
                    entry.label,
                )
                found += words
                continue
            converted = regex_key(key, case_sensitive)
            if converted is None:  # not a pattern after all: the text as written
                found.append(key)
                continue
            report.approximated(
                f"{where}.keys",
                "a key written as a pattern became a regular-expression trigger (it keeps its meaning)",
                f"{entry.label}: {converted[:60]}",
            )
            found.append(converted)
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
    kept: list[str] = []
    for key in found:
        if (key if case_sensitive else key.casefold()) in (
            k if case_sensitive else k.casefold() for k in kept
        ):
            continue
        if not key.startswith("/") and weak_key(
            make_key(key, case_sensitive, whole_words), whole_words
        ):
            if key.strip().casefold() in STOP_WORDS:
                report.dropped(
                    f"{where}.keys",
                    "a key that would fire on nearly every turn (one of the commonest words)",
                    f"{entry.label}: {key[:40]}",
                )
                continue
            key = regex_key(rf"\b{re.escape(key.strip())}\b", case_sensitive) or key
            report.approximated(
                f"{where}.keys",
                "a one- or two-letter key became a whole-word regex (as a fragment it would match inside many words)",
                f"{entry.label}: {key}",
            )
        kept.append(key)
    return kept


# --- decorators (Character Card V3 `@@name value` lines at the start of an entry) --------


def decorators(entry: LoreEntry, report: Report, where: str) -> None:
    """Read the `@@decorator` lines that begin `entry.content` into its fields and strip
    them; each one talekeeper has no equivalent for is reported."""
    lines = entry.content.split("\n")
    seen: dict[str, str] = {}
    used = 0
    for line in lines:
        match = _DECORATOR.match(line.strip())
        if not match:
            break
        used += 1
        name, value = match.group(1), match.group(2).strip()
        if line.strip().startswith("@@@") or name in seen:
            continue  # a fallback (read only if its decorator is not) or a repeat
        seen[name] = value
    if not used:
        return
    entry.content = "\n".join(lines[used:]).strip("\n")
    fields = entry.fields
    for name, value in seen.items():
        count = number(_int(value))
        if name == "depth" and count is not None:
            fields["position"], fields["depth"] = "at_depth", max(0, min(1000, count))
        elif name == "activate_only_after" and count is not None:
            fields["delay"] = max(0, min(100000, count))
        elif name == "scan_depth" and count is not None:
            fields["scan_depth"] = max(0, min(200, count))
        elif name == "activate":
            entry.constant = True
        elif name == "dont_activate" and "activate" not in seen:
            entry.enabled = False
        elif name == "additional_keys":
            entry.secondary += as_list(value)
            fields["logic"] = "and_any"
        elif name == "exclude_keys" and "additional_keys" not in seen:
            entry.secondary += as_list(value)
            fields["logic"] = "not_any"
        elif name == "keep_activate_after_match":
            fields["sticky"] = 1000
            report.approximated(
                f"{where}.content",
                "@@keep_activate_after_match became a sticky of 1,000 turns",
                entry.label,
            )
        elif name == "position":
            fields["position"] = "before_history"
            report.approximated(
                f"{where}.content",
                "@@position (beside the character's description) became before the story",
                entry.label,
            )
        else:
            report.dropped(
                f"{where}.content",
                f"the decorator @@{name} has no talekeeper equivalent",
                entry.label,
            )
            continue
        report.imported(f"{where}.content", "decorators (@@depth, …) became the card's settings")


def _int(value: str) -> int | None:
    try:
        return int(value.strip().split(",")[0])
    except ValueError:
        return None


# --- to story cards ---------------------------------------------------------------------


def _notes(source: str, entry: LoreEntry) -> str:
    parts = [f"Imported from {source}."]
    for key, value in entry.extras.items():
        parts.append(f"{key}: {str(value)[:200]}.")
    return " ".join(parts)[:MAX_NOTES]


def _triggers(keys: list[str], report: Report, where: str, label: str) -> str:
    triggers = ""
    for key in keys:
        candidate = f"{triggers}, {key}" if triggers else key
        if len(candidate) > MAX_TRIGGERS:
            report.approximated(
                f"{where}.keys",
                f"more keys than fit in {MAX_TRIGGERS} characters of triggers; the first ones were kept",
                label,
            )
            break
        triggers = candidate
    return triggers


def _parts(content: str) -> list[str]:
    """`content` in pieces of at most MAX_ENTRY characters, cut at a paragraph, a line or
    a space where one is near the end of a piece."""
    pieces = []
    while len(content) > MAX_ENTRY:
        window = content[:MAX_ENTRY]
        cut = max(window.rfind("\n\n"), window.rfind("\n"), window.rfind(" "))
        cut = cut if cut > MAX_ENTRY // 2 else MAX_ENTRY
        pieces.append(content[:cut].rstrip())
        content = content[cut:].lstrip()
    return [*pieces, content] if content else pieces


def to_story_cards(
    entries: list[LoreEntry], source: str, report: Report, where: str, resolve: Any = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Story cards, and texts for the plot essentials (none any more: kept for callers)."""
    resolve = resolve or (lambda t: t)
    cards: list[dict[str, Any]] = []
    for entry in entries:
        decorators(entry, report, where)
        content = resolve(entry.content).strip()
        if not content:
            report.dropped(f"{where}.content", "an entry with no text", entry.label)
            continue
        for key in entry.extras:
            report.approximated(
                f"{where}.{key}", "no story-card equivalent; kept in the card's notes", entry.label
            )
        fields = dict(entry.fields)
        case = bool(fields.get("case_sensitive"))
        whole = bool(fields.get("whole_words"))
        how = {"case_sensitive": case, "whole_words": whole, "literal": entry.literal}
        keys = clean_keys(entry.keys, entry, report, where, **how)
        secondary = clean_keys(entry.secondary, entry, report, f"{where}.secondary_keys", **how)
        enabled, constant = entry.enabled, entry.constant
        if not keys and not constant and enabled:
            enabled = False
            if entry.vectorized:
                why = (
                    "matched only by embeddings in SillyTavern (vectorized, no keys): imported "
                    "disabled — talekeeper matches keys; add triggers to use it"
                )
            elif entry.had_keys or entry.keys:
                why = "none of its keys could be used (see above): imported disabled; give it triggers to use it"
            else:
                why = "no keys and not constant, so it never fires where it came from: imported disabled"
            report.approximated(f"{where}.keys", why, entry.label)
        elif keys and entry.vectorized:
            report.approximated(
                f"{where}.vectorized",
                "also matched by embeddings in SillyTavern; here by its keys only",
                entry.label,
            )
        if not entry.enabled:
            report.imported(
                f"{where}.enabled", "disabled entries were kept as disabled cards", entry.label
            )
        triggers = _triggers(keys, report, where, entry.label)
        name = (entry.name or entry.label or (keys[0] if keys else "")).strip()[:MAX_NAME]
        kind = (entry.kind or "other").strip()[:40] or "other"
        card = {
            "type": kind,
            "name": name,
            "entry": content,
            "triggers": triggers,
            "notes": _notes(source, entry),
            "constant": constant,
            "enabled": enabled,
        }
        if secondary:
            card["secondary_triggers"] = _triggers(secondary, report, f"{where}.secondary", name)
        card.update(fields)
        parts = _parts(content)
        if len(parts) > 1:
            report.approximated(
                f"{where}.content",
                f"longer than a story card's {MAX_ENTRY:,} characters: split into cards with the same keys and settings, each part whole",
                f"{entry.label} ({len(content):,} characters, {len(parts)} parts)",
            )
        for number_, part in enumerate(parts, start=1):
            piece = {**card, "entry": part}
            if len(parts) > 1:
                piece["name"] = f"{name[: MAX_NAME - 16]} (part {number_} of {len(parts)})"
            cards.append(_validated(piece, report, where, entry.label))
    if cards:
        report.imported(where, f"{len(cards)} entries became story cards")
    return cards, []


def _validated(card: dict[str, Any], report: Report, where: str, label: str) -> dict[str, Any]:
    try:
        return StoryCard.model_validate(card).model_dump(exclude_defaults=True) | {
            "entry": card["entry"],
            "triggers": card["triggers"],
        }
    except ValueError as exc:  # a value outside the card's ranges: keep the plain card
        report.approximated(
            where,
            f"settings outside talekeeper's ranges were left at their defaults ({str(exc).splitlines()[0][:80]})",
            label,
        )
        return load_card(card).model_dump(exclude_defaults=True) | {
            "entry": card["entry"],
            "triggers": card["triggers"],
        }


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
# What a reader of SillyTavern entries understands (their values become card fields).
ST_READ = {
    "key",
    "keys",
    "keysecondary",
    "secondary_keys",
    "content",
    "comment",
    "name",
    "constant",
    "selective",
    "disable",
    "enabled",
    "selectiveLogic",
    "selective_logic",
    "key_logic",
    "position",
    "depth",
    "order",
    "insertion_order",
    "priority",
    "scanDepth",
    "scan_depth",
    "sticky",
    "cooldown",
    "delay",
    "groupWeight",
    "group_weight",
    "useProbability",
    "use_probability",
    "probability",
    "activation_chance",
    "caseSensitive",
    "case_sensitive",
    "matchWholeWords",
    "match_whole_words",
    "whole_words_only",
    "groupOverride",
    "group_override",
    "excludeRecursion",
    "exclude_recursion",
    "preventRecursion",
    "prevent_recursion",
    "delayUntilRecursion",
    "delay_until_recursion",
    "group",
    "vectorized",
    "use_regex",
    "extensions",
    "role",  # reported by st_fields when it means something
}


def _first(raw: dict[str, Any], *names: str) -> Any:
    for name in names:
        if raw.get(name) is not None:
            return raw[name]
    return None


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def st_fields(raw: dict[str, Any], report_extras: dict[str, Any]) -> dict[str, Any]:
    """Story-card fields from a World Info entry or a character book entry (plus its
    `extensions`): camelCase (what SillyTavern reads) before snake_case; null is unset."""
    fields: dict[str, Any] = {}
    logic = _first(raw, "selectiveLogic", "selective_logic", "key_logic")
    if _hashable(logic) and logic in _LOGIC:
        fields["logic"] = _LOGIC[logic]
    position = _first(raw, "position")
    if _hashable(position) and position in _POSITION:
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
        value = number(_first(raw, *names))
        if value is not None:
            fields[target] = value
    use_probability = _first(raw, "useProbability", "use_probability")
    probability = number(_first(raw, "probability", "activation_chance"))
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
        if isinstance(value, bool | int) and not isinstance(value, float):
            fields[target] = bool(value)
    group = _first(raw, "group")
    if isinstance(group, str) and group.strip():
        fields["group"] = group.strip()[:200]
    role = _first(raw, "role")
    if isinstance(role, int) and not isinstance(role, bool) and role in (1, 2):
        report_extras["role"] = "user" if role == 1 else "assistant"
    return fields


def _st_label(raw: dict[str, Any], keys: list[str], fallback: str) -> str:
    first = next((k for k in keys if k.strip()), "")
    return text(raw.get("comment")) or text(raw.get("name")) or first or fallback


def from_world_info(entries: Any, report: Report | None = None) -> list[LoreEntry]:
    """SillyTavern World Info (`entries` keyed by uid; 2023, 2024 and Chub hybrid shapes)."""
    report = report or Report()
    found = []
    for i, raw in enumerate(records(entries)):
        if not raw:
            continue
        uid = raw.get("uid", raw.get("id", i))
        keys = as_list(raw["key"] if "key" in raw else raw.get("keys"))
        secondary = as_list(
            raw["keysecondary"] if "keysecondary" in raw else raw.get("secondary_keys")
        )
        enabled = (
            not flag(raw.get("disable")) if "disable" in raw else flag(raw.get("enabled"), True)
        )
        label = _st_label(raw, keys, f"entry {uid}")
        extras: dict[str, Any] = {}
        ext = raw.get("extensions") if isinstance(raw.get("extensions"), dict) else {}
        fields = st_fields({**ext, **raw}, extras)
        unread(report, "entries", raw, ST_READ, label)
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=text(raw.get("content")),
                keys=keys,
                enabled=enabled,
                constant=flag(raw.get("constant")),
                secondary=secondary if raw.get("selective") is not False else [],
                extras=extras,
                fields=fields,
                vectorized=flag(_first(raw, "vectorized")) or flag(ext.get("vectorized")),
                had_keys=bool(keys),
            )
        )
    return found


def from_character_book(book: dict[str, Any], report: Report | None = None) -> list[LoreEntry]:
    """A CCv2/v3 `character_book` (and Chub's `lexicon`, which holds most of some cards' lore)."""
    report = report or Report()
    found = []
    for i, raw in enumerate(records(book.get("entries"))):
        if not raw:
            continue
        keys = as_list(raw.get("keys"))
        label = _st_label(raw, keys, f"entry {raw.get('id', i)}")
        ext = raw.get("extensions") if isinstance(raw.get("extensions"), dict) else {}
        extras: dict[str, Any] = {}
        # The entry's own fields, then SillyTavern's copies in `extensions` (what it reads).
        own = {k: v for k, v in raw.items() if k != "extensions"}
        fields = st_fields({**own, **{k: v for k, v in ext.items() if v is not None}}, extras)
        unread(report, "character_book.entries", raw, ST_READ, label)
        kind = ext.get("talekeeper") if isinstance(ext.get("talekeeper"), dict) else {}
        entry = LoreEntry(
            label=label[:80],
            name=label,
            content=text(raw.get("content")),
            keys=keys,
            kind=text(kind.get("type")) or "other",
            enabled=flag(raw.get("enabled"), True),
            constant=flag(raw.get("constant")),
            secondary=as_list(raw.get("secondary_keys"))
            if raw.get("selective") is not False
            else [],
            extras=extras,
            fields=fields,
            vectorized=flag(ext.get("vectorized")),
            had_keys=bool(keys),
            literal=raw.get("use_regex") is False,
        )
        talekeeper_fields(entry, kind)
        found.append(entry)
    for i, raw in enumerate(records(book.get("lexicon"))):
        label = text(raw.get("name")) or text(raw.get("comment")) or f"lexicon {i}"
        content = text(raw.get("content")) or text(raw.get("description")) or text(raw.get("entry"))
        keys = as_list(raw.get("keys")) or as_list(raw.get("aliases")) or [label]
        found.append(
            LoreEntry(
                label=f"lexicon: {label}"[:80],
                name=label,
                content=content,
                keys=keys,
                kind=text(raw.get("type")) or "other",
                enabled=flag(raw.get("enabled"), True),
                had_keys=True,
            )
        )
    return found


def talekeeper_fields(entry: LoreEntry, saved: dict[str, Any]) -> None:
    """A card talekeeper exported keeps its own fields (gates, its own budget, notes) in
    the entry's `extensions.talekeeper`; other tools carry them along untouched."""
    for key, kind in (("gates", list), ("max_tokens", int), ("notes", str), ("name", str)):
        if isinstance(saved.get(key), kind) and not isinstance(saved[key], bool):
            entry.fields[key] = saved[key]


# NovelAI's defaults for an entry's context settings (anything else is reported).
_NOVELAI_CONFIG: dict[str, tuple[Any, ...]] = {
    "insertionPosition": (-1,),
    "insertionType": ("newline",),
    "trimDirection": ("trimBottom",),
    "maximumTrimType": ("sentence",),
    "tokenBudget": (1, 2048),
    "reservedTokens": (0,),
}
NOVELAI_READ = {
    "text",
    "displayName",
    "keys",
    "enabled",
    "forceActivation",
    "contextConfig",
    "category",
    "searchRange",
}


def from_novelai(book: dict[str, Any], report: Report | None = None) -> list[LoreEntry]:
    """NovelAI lorebook entries (v1 to v6). The entry's category becomes the card's type
    (a disabled category disables its entries); `contextConfig.budgetPriority` its order;
    keys keep NovelAI's meaning (`/regex/` or plain, case-insensitive)."""
    report = report or Report()
    categories = {
        text(c.get("id")): c for c in records(book.get("categories")) if text(c.get("id"))
    }
    found = []
    for i, raw in enumerate(records(book.get("entries"))):
        if not raw:
            continue
        label = text(raw.get("displayName")) or f"entry {i + 1}"
        extras: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        search = number(raw.get("searchRange"))
        if search is not None and search != 1000:
            extras["search range"] = f"{search} characters"
        config = raw.get("contextConfig") if isinstance(raw.get("contextConfig"), dict) else {}
        priority = number(config.get("budgetPriority"))
        if priority is not None:
            fields["order"] = priority
        for key, usual in _NOVELAI_CONFIG.items():
            value = config.get(key)
            if value is not None and _hashable(value) and value not in usual:
                extras[f"contextConfig.{key}"] = value
        content = text(config.get("prefix")) + text(raw.get("text")) + text(config.get("suffix"))
        if text(raw.get("text")).strip() and (config.get("prefix") or config.get("suffix")):
            report.approximated(
                "entries.contextConfig",
                "the entry's prefix and suffix (like “[” and “]”) were written around its text, as NovelAI sends it",
            )
        category = categories.get(text(raw.get("category")))
        kind = "other"
        enabled = flag(raw.get("enabled"), True)
        if category is not None:
            kind = text(category.get("name")) or "other"
            if category.get("enabled") is False:
                enabled = False
                report.approximated(
                    "entries.category",
                    "entries of a disabled category were imported disabled",
                    label,
                )
        unread(report, "entries", raw, NOVELAI_READ, label)
        keys = as_list(raw.get("keys"))
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=content if text(raw.get("text")).strip() else "",
                keys=keys,
                kind=kind,
                enabled=enabled,
                constant=flag(raw.get("forceActivation")),
                extras=extras,
                fields=fields,
                had_keys=bool(keys),
            )
        )
    return found


AGNAI_READ = {
    "name",
    "comment",
    "keywords",
    "keys",
    "entry",
    "content",
    "priority",
    "insertion_order",
    "weight",
    "enabled",
    "constant",
    "secondary_keys",
    "selective",
    "case_sensitive",
    "position",
}


def from_agnai(book: dict[str, Any], report: Report | None = None) -> list[LoreEntry]:
    report = report or Report()
    found = []
    for i, raw in enumerate(records(book.get("entries"))):
        if not raw:
            continue
        label = text(raw.get("name")) or text(raw.get("comment")) or f"entry {i + 1}"
        if label.isdigit():
            label = f"entry {label}"
        keys = as_list(raw.get("keywords")) or as_list(raw.get("keys"))
        content = text(raw.get("entry")) or text(raw.get("content"))
        extras = {"weight": raw["weight"]} if not empty(raw.get("weight")) else {}
        fields: dict[str, Any] = {}
        order = number(_first(raw, "priority", "insertion_order"))
        if order is not None:
            fields["order"] = order
        if isinstance(raw.get("case_sensitive"), bool):
            fields["case_sensitive"] = raw["case_sensitive"]
        unread(report, "entries", raw, AGNAI_READ, label)
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=content,
                keys=keys,
                enabled=flag(raw.get("enabled"), True),
                constant=flag(raw.get("constant")),
                secondary=as_list(raw.get("secondary_keys")) if raw.get("selective") else [],
                extras=extras,
                fields=fields,
                had_keys=bool(keys),
            )
        )
    return found


KOBOLD_READ = {
    "key",
    "keysecondary",
    "keyanti",
    "content",
    "comment",
    "selective",
    "constant",
    "probability",
    "useprobability",
}


def from_kobold(items: Any, report: Report | None = None) -> list[LoreEntry]:
    """KoboldAI world info (a save's `worldinfo`, or a bare list as KoboldAI Lite exports
    it): `key` and `keysecondary` comma-separated, `selective` for the secondary keys,
    `keyanti` (Lite) for keys that must not appear."""
    report = report or Report()
    found = []
    for i, raw in enumerate(records(items)):
        if not raw:
            continue
        keys = as_list(raw.get("key"))
        label = text(raw.get("comment")) or (keys[0] if keys else f"entry {i + 1}")
        fields: dict[str, Any] = {}
        secondary = as_list(raw.get("keysecondary")) if raw.get("selective") else []
        anti = as_list(raw.get("keyanti"))
        if anti and not secondary:
            secondary, fields["logic"] = anti, "not_any"
        elif anti:
            report.dropped(
                "worldinfo.keyanti",
                "keys that must not appear, beside secondary keys (a card has one logic)",
                label,
            )
        probability = number(raw.get("probability"))
        if probability is not None and raw.get("useprobability") is not False:
            fields["probability"] = max(0, min(100, probability))
        unread(report, "worldinfo", raw, KOBOLD_READ, label)
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=text(raw.get("content")),
                keys=keys,
                constant=flag(raw.get("constant")),
                secondary=secondary,
                fields=fields,
                had_keys=bool(keys),
            )
        )
    return found


AID_READ = {"keys", "entry", "value", "title", "type", "description", "hidden"}


def from_aid(items: Any, report: Report | None = None) -> list[LoreEntry]:
    """AI Dungeon world info: `{keys: "a,b", entry}` (legacy) or story cards
    `{keys, value, title, type, description, useForCharacterCreation}`."""
    report = report or Report()
    found = []
    for i, raw in enumerate(records(items)):
        if not raw or raw.get("deletedAt"):
            continue
        keys = as_list(raw.get("keys"))
        content = text(raw.get("entry")) or text(raw.get("value"))
        label = text(raw.get("title")) or (keys[0] if keys else f"entry {i + 1}")
        label = _EWI_DIRECTIVE.sub("", label).strip() or f"entry {i + 1}"
        fields = {}
        if text(raw.get("description")).strip():
            fields["notes"] = raw["description"][:MAX_NOTES]
            report.imported(
                "storyCards.description", "a card's description became its notes", label
            )
        if raw.get("useForCharacterCreation"):
            report.dropped(
                "storyCards.useForCharacterCreation",
                "AI Dungeon's character creator offers these cards as choices; here they are plain story cards",
                label,
            )
        unread(
            report,
            "storyCards",
            raw,
            AID_READ | {"useForCharacterCreation", "deletedAt", "worldInfoId"},
            label,
        )
        found.append(
            LoreEntry(
                label=label[:80],
                name=label,
                content=content,
                keys=keys,
                kind=text(raw.get("type")) or "other",
                fields=fields,
                had_keys=bool(keys),
            )
        )
    return found
