"""Recognise an uploaded file by its content (never its name) and convert it.

`convert(raw, filename)` returns one `Converted` per scenario the file holds (an AI
Dungeon dump can hold several), each a scenario document without its final id plus its
report. Anything unrecognised, malformed or hostile raises `Refused` with a reason a
person understands. Nothing here writes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from . import cards, lore, stories
from .containers import (
    MAX_FILE_BYTES,
    Refused,
    card_from_charx,
    card_from_png,
    parse_json,
    parse_simple_yaml,
)
from .draft import Draft
from .report import Report

MAX_FIELD = 1_000_000  # no real card or lorebook field comes near this


@dataclass
class Converted:
    format: str
    title: str
    document: dict[str, Any]  # without a final id
    report: list[dict[str, Any]]
    exact: bool = False  # a talekeeper scenario carried whole (CCv3 exported by talekeeper)


def _too_big(value: Any, depth: int = 0) -> str | None:
    if depth > 40:
        return "nested too deeply"
    if isinstance(value, str) and len(value) > MAX_FIELD:
        return f"a text field of {len(value):,} characters"
    if isinstance(value, list | dict):
        items = value.values() if isinstance(value, dict) else value
        if len(value) > 100_000:
            return f"a list of {len(value):,} items"
        for item in items:
            found = _too_big(item, depth + 1)
            if found:
                return found
    return None


def _finish(label: str, draft: Draft, report: Report) -> Converted:
    document = draft.document("draft")
    return Converted(label, document["title"], document, report.as_list())


def _card(card: Any, label_suffix: str = "") -> Converted:
    if not isinstance(card, dict):
        raise Refused("The card is not a JSON object.")
    report = Report()
    data, label = cards.card_data(card)
    exact = cards.talekeeper_scenario(data)
    if exact is not None:
        report.imported(
            "extensions.talekeeper", "a scenario exported by talekeeper: restored exactly"
        )
        return Converted(
            label + label_suffix, str(exact.get("title", "")), exact, report.as_list(), exact=True
        )
    if not isinstance(data.get("name"), str) and not isinstance(data.get("first_mes"), str):
        raise Refused("This looks like a character card but has neither a name nor a greeting.")
    draft, label = cards.from_card(card, report)
    return _finish(label + label_suffix, draft, report)


def _stem(filename: str) -> str:
    return PurePath(filename or "import").stem.replace("_", " ").strip() or "Imported"


def convert(raw: bytes, filename: str = "") -> list[Converted]:
    if len(raw) > MAX_FILE_BYTES:
        raise Refused(
            f"The file is too large ({len(raw):,} bytes; at most {MAX_FILE_BYTES:,}). Nothing was imported."
        )
    if not raw.strip():
        raise Refused("The file is empty.")
    if raw.startswith(b"\x89PNG"):
        card, chunk = card_from_png(raw)
        return [_card(card, f" (PNG, '{chunk}' chunk)")]
    if raw.startswith(b"PK\x03\x04") or raw.startswith(b"PK\x05\x06"):
        card, others = card_from_charx(raw)
        converted = _card(card, " (CHARX)")
        if others:
            converted.report.append(
                {
                    "field": "assets",
                    "status": "dropped",
                    "detail": f"{len(others)} files in the archive (images and the like) are not used",
                }
            )
        return [converted]
    if raw.startswith(b"\x1f\x8b"):
        raise Refused(
            "This is a compressed file — if it is a talekeeper adventure, import it under “Import an adventure” on the home page."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Refused(
            "This file is neither a PNG card, a CHARX, nor UTF-8 text (JSON or YAML); talekeeper cannot read it."
        ) from None
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        simple = parse_simple_yaml(text)
        if simple and ("name" in simple and ("greeting" in simple or "context" in simple)):
            return [_card(simple, " (YAML)")]
        raise Refused(
            "This file is not JSON, and not a character YAML file with name, greeting and context."
        )
    data = parse_json(text)
    problem = _too_big(data)
    if problem:
        raise Refused(
            f"This file has {problem}; no card, lorebook or scenario is that large. Refused."
        )
    return _json(data, filename)


def _json(data: Any, filename: str) -> list[Converted]:
    stem = _stem(filename)
    if isinstance(data, dict):
        if (
            data.get("format") == "talekeeper-scenario"
            or data.get("format") == "talekeeper-adventure"
        ):
            raise Refused(
                "This is a talekeeper file: import scenarios under Scenarios → Import, adventures on the home page."
            )
        if (
            data.get("spec") in ("chara_card_v2", "chara_card_v3")
            or "char_name" in data
            or ("name" in data and ("first_mes" in data or "char_greeting" in data))
        ):
            return [_card(data)]
        if data.get("kind") == "memory" and isinstance(data.get("entries"), list):
            report = Report()
            draft = stories.from_lore_only(
                str(data.get("name") or stem),
                lore.from_agnai(data),
                "an Agnai memory book",
                report,
                str(data.get("description") or ""),
            )
            return [_finish("Agnai memory book", draft, report)]
        if "lorebookVersion" in data:
            report = Report()
            entries = data.get("entries")
            if not isinstance(entries, list):
                raise Refused("This NovelAI lorebook has no list of entries.")
            if not [e for e in entries if isinstance(e, dict) and (e.get("text") or "").strip()]:
                report.dropped(
                    "entries",
                    "the lorebook has no entries with text, so the scenario has no story cards",
                )
            empty = sum(1 for e in entries if not isinstance(e, dict) or not e)
            if empty:
                report.dropped("entries", f"{empty} entries are empty objects")
            draft = stories.from_lore_only(
                stem, lore.from_novelai(data), "a NovelAI lorebook", report
            )
            return [
                _finish(f"NovelAI lorebook (version {data.get('lorebookVersion')})", draft, report)
            ]
        if "storyContainerVersion" in data:
            report = Report()
            return [_finish("NovelAI story", stories.from_novelai_story(data, report), report)]
        if "scenarioVersion" in data:
            report = Report()
            return [
                _finish("NovelAI scenario", stories.from_novelai_scenario(data, report), report)
            ]
        if "gamestarted" in data and "prompt" in data:
            report = Report()
            return [_finish("KoboldAI save", stories.from_kobold(data, report, stem), report)]
        if isinstance(data.get("entries"), dict):
            report = Report()
            book_fields = [
                k
                for k in (
                    "scan_depth",
                    "token_budget",
                    "recursive_scanning",
                    "scanDepth",
                    "tokenBudget",
                    "recursiveScanning",
                )
                if data.get(k) not in (None, False)
            ]
            if book_fields:
                report.dropped(
                    "(book)",
                    f"book settings without a talekeeper equivalent: {', '.join(book_fields)}",
                )
            entries = lore.from_world_info(data["entries"])
            draft = stories.from_lore_only(
                str(data.get("name") or stem),
                entries,
                "SillyTavern World Info",
                report,
                str(data.get("description") or ""),
            )
            return [_finish("SillyTavern World Info", draft, report)]
        if isinstance(data.get("entries"), list) and any(
            isinstance(e, dict) and "content" in e for e in data["entries"]
        ):
            report = Report()
            draft = stories.from_lore_only(
                str(data.get("name") or stem),
                lore.from_character_book(data),
                "a character book",
                report,
                str(data.get("description") or ""),
            )
            return [_finish("Character book (lorebook)", draft, report)]
        if isinstance(data.get("state"), dict) and "history" in data:
            raise Refused(
                "This is AI Dungeon scripting-sandbox data (state, history), not an AI Dungeon export."
            )
        if data and all(
            isinstance(v, dict) and v and all(str(k).isdigit() for k in v) for v in data.values()
        ):
            raise Refused(
                "This is a table dump (columns of numbered rows, as pandas writes), not a lorebook; nothing to import."
            )
        raise Refused(
            "talekeeper does not recognise this JSON: it is not a character card, World Info, lorebook, or AI Dungeon / KoboldAI / NovelAI / Agnai file."
        )
    if isinstance(data, list):
        items = [d for d in data if isinstance(d, dict)]
        if items and len(items) == len(data):
            if all("prompt" in d and ("publicId" in d or "worldInfo" in d) for d in items):
                found = []
                for item in items:
                    report = Report()
                    found.append(
                        _finish(
                            "AI Dungeon scenario", stories.from_aid_scenario(item, report), report
                        )
                    )
                return found
            if all("keys" in d and ("entry" in d or "value" in d) for d in items):
                report = Report()
                label = (
                    "AI Dungeon story cards"
                    if all("value" in d for d in items)
                    else "AI Dungeon world info"
                )
                entries = lore.from_aid(items)
                return [
                    _finish(label, stories.from_lore_only(stem, entries, label, report), report)
                ]
        raise Refused(
            "talekeeper does not recognise this JSON list: it is not AI Dungeon scenarios, world info or story cards (a list of objects with keys and an entry)."
        )
    raise Refused("This JSON holds a single value, not a card, lorebook or scenario.")
