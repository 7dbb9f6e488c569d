"""Building a talekeeper scenario from imported parts, within the scenario's limits.

Every importer fills a `Draft`; `Draft.document()` fits each text to its limit (reporting
what was cut), declares the `${placeholders}` used, and returns a document that
`check_scenario` accepts. Macros from character cards are resolved here: `{{char}}` and
`<BOT>` become the character's name, `{{user}}` and `<USER>` the player's name (asked at
the start as `${name}`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from talekeeper.service.scenarios import TEXT_LIMITS

from .report import Report

DEFAULT_NARRATOR = (
    "You are the narrator of an interactive story. Write in second person, present tense, "
    'addressing the player as "you". Describe what happens in response to the player\'s action '
    "in two to four vivid sentences, then stop and let the player act. Never act or speak for the player."
)
_MACRO = re.compile(r"\{\{\s*([A-Za-z_]+)(?::[^}]*)?\s*\}\}")
_ID = re.compile(r"[^a-z0-9]+")
_HTML = re.compile(r"<\s*/?\s*[A-Za-z][A-Za-z0-9]*(\s[^>]*)?>")


def slug(text: str, limit: int = 48) -> str:
    value = _ID.sub("-", text.lower()).strip("-")[:limit].strip("-")
    return value or "imported"


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

    def resolve(self, text: str) -> str:
        """Card macros resolved; anything else in `{{…}}` is left as text (and reported)."""
        if not text:
            return ""

        def macro(match: re.Match[str]) -> str:
            name = match.group(1).lower()
            if name == "char":
                return self.char or "the character"
            if name == "user":
                self.uses_name = True
                return "${name}"
            if name == "original":
                return ""
            self.unknown_macros.add(match.group(0)[:40])
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
            doc["story_cards"] = self.story_cards[:5000]
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
        if self.unknown_macros:
            self.report.approximated(
                "macros",
                f"left as text (talekeeper does not run them): {', '.join(sorted(self.unknown_macros))}",
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
