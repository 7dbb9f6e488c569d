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


def _too_big(value: Any) -> str | None:
    """A field or list far past any real file's (nesting was bounded by `parse_json`)."""
    if isinstance(value, str) and len(value) > MAX_FIELD:
        return f"a text field of {len(value):,} characters"
    if isinstance(value, list | dict):
        items = value.values() if isinstance(value, dict) else value
        if len(value) > 100_000:
            return f"a list of {len(value):,} items"
        for item in items:
            found = _too_big(item)
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
    restored = cards.restore(data, report)
    if restored is not None:
        return Converted(
            label + label_suffix,
            str(restored.get("title", "")),
            restored,
            report.as_list(),
            exact=True,
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
    except UnicodeDecodeError as exc:
        raise Refused(
            f"This file is neither a PNG card, a CHARX, nor UTF-8 text (JSON or YAML: byte {exc.start:,} is not UTF-8); talekeeper cannot read it."
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
        return _object(data, stem)
    if isinstance(data, list):
        return _array(data, stem)
    raise Refused("This JSON holds a single value, not a card, lorebook or scenario.")


_BOOK_SETTINGS = (
    "scan_depth",
    "token_budget",
    "recursive_scanning",
    "scanDepth",
    "tokenBudget",
    "recursiveScanning",
)
_AID_MARKERS = ("publicId", "shortId", "storyCards", "worldInfo", "authorsNote", "options")


def _aid_scenario(data: dict[str, Any]) -> bool:
    return isinstance(data.get("prompt"), str) and (
        data.get("__typename") == "Scenario"
        or data.get("contentType") == "scenario"
        or any(key in data for key in _AID_MARKERS)
    )


def _aid_adventure(data: dict[str, Any]) -> bool:
    return (
        data.get("__typename") == "Adventure"
        or data.get("contentType") == "adventure"
        or (
            isinstance(data.get("actionWindow") or data.get("actions"), list)
            and any(key in data for key in ("storyCards", "memory", "authorsNote", "publicId"))
            and "gamestarted" not in data
        )
    )


def _lore_file(
    data: dict[str, Any], entries: list[lore.LoreEntry], label: str, source: str, stem: str
) -> list[Converted]:
    report = Report()
    settings = [k for k in _BOOK_SETTINGS if data.get(k) not in (None, False)]
    if settings:
        report.dropped(
            "(book)",
            f"book settings without a talekeeper equivalent: {', '.join(settings)} (story cards scan the last few turns; the context budget decides)",
        )
    draft = stories.from_lore_only(
        lore.text(data.get("name")) or stem,
        entries,
        source,
        report,
        lore.text(data.get("description")),
    )
    return [_finish(label, draft, report)]


def _object(data: dict[str, Any], stem: str) -> list[Converted]:
    if data.get("format") in ("talekeeper-scenario", "talekeeper-adventure"):
        raise Refused(
            "This is a talekeeper file: import scenarios under Scenarios → Import, adventures on the home page."
        )
    inner = data.get("data")
    if isinstance(inner, dict) and not data.get("spec"):  # an AI Dungeon API answer
        found = [v for k, v in inner.items() if k in ("scenario", "adventure") and v]
        if found or isinstance(inner.get("scenarios") or inner.get("adventures"), list):
            return _aid_data(inner, stem)
    if data.get("spec") == "lorebook_v3" and isinstance(inner, dict):
        entries = lore.from_character_book(inner, report := Report())
        result = _lore_file(inner, entries, "Lorebook V3", "a V3 lorebook", stem)
        result[0].report = report.as_list() + result[0].report
        return result
    if (
        data.get("spec") in ("chara_card_v2", "chara_card_v3")
        or "char_name" in data
        or ("name" in data and ("first_mes" in data or "char_greeting" in data))
    ):
        return [_card(data)]
    if data.get("kind") == "memory" and isinstance(data.get("entries"), list):
        report = Report()
        entries = lore.from_agnai(data, report)
        result = _lore_file(data, entries, "Agnai memory book", "an Agnai memory book", stem)
        result[0].report = report.as_list() + result[0].report
        return result
    if "lorebookVersion" in data:
        report = Report()
        entries = data.get("entries")
        if not isinstance(entries, list):
            raise Refused("This NovelAI lorebook has no list of entries.")
        if not [e for e in entries if isinstance(e, dict) and lore.text(e.get("text")).strip()]:
            report.dropped(
                "entries",
                "the lorebook has no entries with text, so the scenario has no story cards",
            )
        empty = sum(1 for e in entries if not isinstance(e, dict) or not e)
        if empty:
            report.dropped("entries", f"{empty} entries are empty objects")
        draft = Draft(title=stem, report=report)
        stories.novelai_book(data, draft, report, "entries")
        version = data.get("lorebookVersion")
        label = (
            f"NovelAI lorebook (version {version})"
            if isinstance(version, int)
            else "NovelAI lorebook"
        )
        return [_finish(label, draft, report)]
    if "storyContainerVersion" in data:
        report = Report()
        return [_finish("NovelAI story", stories.from_novelai_story(data, report), report)]
    if "scenarioVersion" in data:
        report = Report()
        return [_finish("NovelAI scenario", stories.from_novelai_scenario(data, report), report)]
    if "gamestarted" in data and "prompt" in data:
        report = Report()
        return [_finish("KoboldAI save", stories.from_kobold(data, report, stem), report)]
    if isinstance(data.get("entries"), dict):
        report = Report()
        entries = lore.from_world_info(data["entries"], report)
        result = _lore_file(data, entries, "SillyTavern World Info", "SillyTavern World Info", stem)
        result[0].report = report.as_list() + result[0].report
        return result
    if isinstance(data.get("entries"), list) and any(
        isinstance(e, dict) and "content" in e for e in data["entries"]
    ):
        report = Report()
        entries = lore.from_character_book(data, report)
        result = _lore_file(data, entries, "Character book (lorebook)", "a character book", stem)
        result[0].report = report.as_list() + result[0].report
        return result
    for key in ("scenario", "adventure"):  # one AI Dungeon record under its name
        if isinstance(data.get(key), dict) and len(data) <= 3:
            return _aid_data(data, stem)
    if _aid_adventure(data):
        return _aid_data({"adventure": data}, stem)
    if _aid_scenario(data):
        return _aid_data({"scenario": data}, stem)
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
        "talekeeper does not recognise this JSON: it is not a character card (V1, V2, V3, Pygmalion), "
        "SillyTavern World Info or character book, a NovelAI lorebook, story or scenario, a KoboldAI save "
        "or world info, an AI Dungeon scenario, adventure, world info or story cards, or an Agnai memory book."
    )


def _aid_data(inner: dict[str, Any], stem: str) -> list[Converted]:
    """AI Dungeon's records as its API answers them (`data.scenario`, `data.adventure`
    with its `adventureState`, or lists of either)."""
    found: list[Converted] = []
    scenarios = [inner["scenario"]] if isinstance(inner.get("scenario"), dict) else []
    scenarios += lore.records(inner.get("scenarios"))
    adventures = [inner["adventure"]] if isinstance(inner.get("adventure"), dict) else []
    adventures += lore.records(inner.get("adventures"))
    state = inner.get("adventureState") if isinstance(inner.get("adventureState"), dict) else {}
    for scenario in scenarios:
        report = Report()
        found.append(
            _finish("AI Dungeon scenario", stories.from_aid_scenario(scenario, report), report)
        )
    for adventure in adventures:
        report = Report()
        own = (
            adventure.get("adventureState")
            if isinstance(adventure.get("adventureState"), dict)
            else state
        )
        draft = stories.from_aid_adventure(adventure, own, report)
        found.append(_finish("AI Dungeon adventure", draft, report))
    if not found:
        raise Refused(
            "This AI Dungeon file holds no scenario or adventure (its `data` has neither a scenario nor an adventure object)."
        )
    return found


def _array(data: list[Any], stem: str) -> list[Converted]:
    items = [d for d in data if isinstance(d, dict)]
    if items and len(items) == len(data):
        if all(_aid_adventure(d) for d in items):
            return _aid_data({"adventures": items}, stem)
        if all(
            isinstance(d.get("prompt"), str)
            and ("publicId" in d or "worldInfo" in d or "storyCards" in d or "title" in d)
            for d in items
        ):
            return _aid_data({"scenarios": items}, stem)
        if all("keys" in d and ("entry" in d or "value" in d) for d in items):
            report = Report()
            label = (
                "AI Dungeon story cards"
                if all("value" in d for d in items)
                else "AI Dungeon world info"
            )
            entries = lore.from_aid(items, report)
            return [_finish(label, stories.from_lore_only(stem, entries, label, report), report)]
        if all("content" in d and ("key" in d or "keys" in d) for d in items):
            report = Report()
            if any(isinstance(d.get("key"), list) or "uid" in d for d in items):
                label, entries = "SillyTavern World Info", lore.from_world_info(items, report)
            elif all("key" in d for d in items):
                label, entries = "KoboldAI world info", lore.from_kobold(items, report)
            else:
                label, entries = (
                    "Character book (lorebook)",
                    lore.from_character_book({"entries": items}, report),
                )
            return [_finish(label, stories.from_lore_only(stem, entries, label, report), report)]
    raise Refused(
        "talekeeper does not recognise this JSON list: it is not AI Dungeon scenarios, adventures, "
        "world info or story cards (objects with keys and an entry or value), KoboldAI world info "
        "(objects with key and content), or lorebook entries."
    )
