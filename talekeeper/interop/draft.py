"""Building a talekeeper scenario from imported parts, within the scenario's limits.

Every importer fills a `Draft`; `Draft.document()` fits each text to its limit (reporting
what was cut), declares the `${placeholders}` used, and returns a document that
`check_scenario` accepts. Macros from character cards are resolved here: `{{char}}` and
`<BOT>` become the character's name, `{{user}}` and `<USER>` the player's name (asked at
the start as `${name}`).

Foreign markup stays the author's text. Only the placeholders the draft declares are
talekeeper's: any other `${x}` (a card's JavaScript template, `${score}`) is written
`$${x}`, which a scenario shows as the text `${x}`; other macros and RisuAI's CBS
(`{{#if}}`, `{{? …}}`) stay as written. Each kind is named in the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from anyascii import anyascii

from talekeeper.context.cardspec import Gate, gate_errors
from talekeeper.service.scenarios import TEXT_LIMITS

from . import cbs
from .report import Report

DEFAULT_NARRATOR = (
    "You are the narrator of an interactive story. Write in second person, present tense, "
    'addressing the player as "you". Describe what happens in response to the player\'s action '
    "in two to four vivid sentences, then stop and let the player act. Never act or speak for the player."
)
_MACRO = re.compile(r"\{\{\s*([A-Za-z_]+)(?::[^}]*)?\s*\}\}")
_ID = re.compile(r"[^a-z0-9]+")
_HTML = re.compile(r"<\s*/?\s*[A-Za-z][A-Za-z0-9]*(\s[^>]*)?>")
_DOLLAR = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def slug(text: str, limit: int = 48) -> str:
    """An id from a name in any script (`洛琪希` → `luoqixi`)."""
    value = _ID.sub("-", anyascii(text).lower()).strip("-")[:limit].strip("-")
    return value or "imported"


def escape_foreign(value: Any, declared: set[str], seen: set[str]) -> Any:
    """Every `${x}` whose key is not declared written `$${x}` (the text `${x}`), in any
    string of `value`; the keys found are added to `seen`."""
    if isinstance(value, str):
        if "${" not in value:
            return value

        def escape(match: re.Match[str]) -> str:
            if match.group(1) in declared:
                return match.group(0)
            seen.add(match.group(0))
            return "$" + match.group(0)

        return _DOLLAR.sub(escape, value)
    if isinstance(value, list):
        return [escape_foreign(v, declared, seen) for v in value]
    if isinstance(value, dict):
        return {k: escape_foreign(v, declared, seen) for k, v in value.items()}
    return value


@dataclass
class Draft:
    title: str
    report: Report
    char: str = ""
    description: str = ""
    opening: str = ""
    narrator_instructions: str = DEFAULT_NARRATOR
    ai_instructions: str = ""
    plot_essentials: str = ""
    author_note: str = ""
    tags: list[str] = field(default_factory=list)
    story_cards: list[dict[str, str]] = field(default_factory=list)
    origins: list[dict[str, str]] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    placeholders: list[dict[str, str]] = field(default_factory=list)
    uses_name: bool = False  # {{user}} seen (the name is asked either way)
    unknown_macros: set[str] = field(default_factory=set)
    cbs: list[str] = field(default_factory=list)  # RisuAI CBS constructs seen

    def resolve(self, text: str) -> str:
        """Card macros resolved; anything else in `{{…}}` is left as text (and reported)."""
        if not text:
            return ""
        if "{{" in text:
            self.cbs += [c for c in cbs.constructs(text) if c not in self.cbs]

        def macro(match: re.Match[str]) -> str:
            name = match.group(1).lower()
            if name == "char":
                return self.char or "the character"
            if name == "user":
                self.uses_name = True
                return "${name}"
            if name == "original":
                return ""
            self.unknown_macros.add("{{" + match.group(1)[:30] + "}}")
            return match.group(0)

        text = _MACRO.sub(macro, text)
        if "<BOT>" in text or "<USER>" in text:
            text = text.replace("<BOT>", self.char or "the character")
            if "<USER>" in text:
                self.uses_name = True
                text = text.replace("<USER>", "${name}")
        return text

    def fit(self, key: str, text: str, where: str) -> str:
        limit = TEXT_LIMITS[key]
        text = text.strip()
        if len(text) > limit:
            self.report.approximated(
                where,
                f"{len(text):,} characters; a scenario's {key.replace('_', ' ')} holds {limit:,}, so the rest was cut",
            )
            return text[:limit].rstrip()
        return text

    def add_always(self, texts: list[str], where: str) -> None:
        if texts:
            block = "\n\n".join(texts)
            self.plot_essentials = (
                f"{self.plot_essentials}\n\n{block}".strip() if self.plot_essentials else block
            )

    def _gated(self, cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Cards whose gates (a talekeeper card's, carried through another tool) name
        what this scenario's rules do not declare lose those gates, reported."""
        rules: dict[str, Any] = {"player": {"name": "${name}"}, "entities": self.entities}
        found = []
        for card in cards:
            gates = card.get("gates")
            if gates:
                kept = [g for g in gates if not gate_errors(Gate.model_validate(g), rules)]
                if len(kept) < len(gates):
                    self.report.dropped(
                        "story_cards.gates",
                        "gates on the state need the rules they name, which this file does not carry",
                        str(card.get("name") or "")[:40],
                    )
                    card = {k: v for k, v in card.items() if k != "gates"} | (
                        {"gates": kept} if kept else {}
                    )
            found.append(card)
        return found

    def document(self, scenario_id: str) -> dict[str, Any]:
        opening = self.fit("opening", self.opening, "opening")
        if not opening:
            opening = "Your story begins."
            self.report.approximated(
                "opening",
                "the file has no opening text; a one-line opening was written for you to replace",
            )
        doc: dict[str, Any] = {
            "id": scenario_id,
            "title": self.title.strip()[:200] or "Imported",
            "description": self.fit("description", self.description, "description"),
            "opening": opening,
            "narrator_instructions": self.fit(
                "narrator_instructions", self.narrator_instructions, "narrator_instructions"
            ),
            "ai_instructions": self.fit("ai_instructions", self.ai_instructions, "ai_instructions"),
            "plot_essentials": self.fit("plot_essentials", self.plot_essentials, "plot_essentials"),
            "author_note": self.fit("author_note", self.author_note, "author_note"),
        }
        tags = []
        for tag in self.tags:
            tag = str(tag).strip()[:40]
            if tag and tag not in tags and len(tags) < 20:
                tags.append(tag)
        if len(tags) < len({str(t).strip() for t in self.tags if str(t).strip()}):
            self.report.approximated("tags", "a scenario keeps at most 20 tags")
        doc["tags"] = tags
        # The player's name is always asked: the persona and the player's entity use it.
        placeholders = [
            {"key": "name", "question": "What is your name?", "default": "Traveller"},
            *self.placeholders,
        ]
        doc["placeholders"] = placeholders
        doc["persona"] = {"name": "${name}", "pronouns": "", "description": ""}
        if self.story_cards:
            doc["story_cards"] = self._gated(self.story_cards[:5000])
        if self.origins:
            doc["origins"] = self.origins[:50]
            if len(self.origins) > 50:
                self.report.dropped(
                    "origins",
                    f"a scenario offers at most 50 starting points; {len(self.origins) - 50} were left out",
                )
        rules: dict[str, Any] = {"player": {"name": "${name}"}}
        if self.entities:
            rules["entities"] = self.entities
        doc["rules"] = rules
        declared = {p["key"] for p in placeholders}
        seen: set[str] = set()
        doc = {
            k: v if k == "placeholders" else escape_foreign(v, declared, seen)
            for k, v in doc.items()
        }
        if seen:
            shown = ", ".join(sorted(seen)[:8]) + (" …" if len(seen) > 8 else "")
            self.report.approximated(
                "${…}",
                f"the file's own template code ({shown}) is kept as text; talekeeper asks nothing for it",
            )
        if self.unknown_macros:
            self.report.approximated(
                "macros",
                f"left as text (talekeeper does not run them): {', '.join(sorted(self.unknown_macros))}",
            )
        if self.cbs:
            self.report.approximated(
                "RisuAI CBS",
                f"conditions, variables and calculations ({', '.join(self.cbs[:8])}) are kept as the author's text; talekeeper does not run them",
            )
        if any(
            _HTML.search(v)
            for v in (
                doc["opening"],
                doc["plot_essentials"],
                doc["description"],
                doc["ai_instructions"],
            )
        ):
            self.report.approximated(
                "markup", "the file contains HTML; it is kept as text and shown as text, never run"
            )
        return doc


def entity(char: str, description: str, report: Report, where: str) -> dict[str, Any]:
    text = description.strip()
    if len(text) > 500:
        report.approximated(
            where,
            "the character's entity holds a 500-character summary; the full text is in the plot essentials",
        )
        text = text[:497].rstrip() + "…"
    found = {"id": slug(char), "name": char.strip()[:80] or "Character", "type": "person"}
    if text:
        found["description"] = text
    return found
