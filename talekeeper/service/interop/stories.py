"""Story-game formats → talekeeper scenarios: AI Dungeon scenarios and world info,
KoboldAI saves, NovelAI `.story` / `.scenario`, and lorebook-only files.

AI Dungeon prompts ask questions with `${…}` ("${Enter your name}"); each becomes one of
the scenario's placeholders, asked when an adventure starts. A scenario whose options
are sub-scenarios becomes one scenario with those options as origins.
"""

from __future__ import annotations

import re
from typing import Any

from . import lore
from .draft import Draft
from .report import Report

_AID_QUESTION = re.compile(r"\$\{([^}]*)\}")
MAX_PLACEHOLDERS = 20


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def aid_questions(text: str, draft: Draft, where: str) -> str:
    """`${Question?}` → `${q1}` with a declared placeholder asking that question."""
    asked = {p["question"]: p["key"] for p in draft.placeholders}

    def replace(match: re.Match[str]) -> str:
        question = match.group(1).strip()
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", question) and question == "name":
            draft.uses_name = True
            return "${name}"
        question = question or "Fill in the blank"
        if question.lower().startswith(("enter your name", "what is your name", "your name")):
            draft.uses_name = True
            return "${name}"
        if question not in asked:
            if len(asked) >= MAX_PLACEHOLDERS:
                draft.report.dropped(
                    where, f"more than {MAX_PLACEHOLDERS} questions; the rest were left as blanks"
                )
                return "…"
            key = f"q{len(asked) + 1}"
            asked[question] = key
            draft.placeholders.append({"key": key, "question": question[:200], "default": ""})
        return "${" + asked[question] + "}"

    result = _AID_QUESTION.sub(replace, text)
    if result != text:
        draft.report.imported(
            where, "questions in ${…} are asked when an adventure starts (placeholders)"
        )
    return result


def _aid_authors_note(note: str) -> str:
    return note.strip()


def from_aid_scenario(item: dict[str, Any], report: Report) -> Draft:
    draft = Draft(title=_s(item.get("title")) or "AI Dungeon scenario", report=report)
    draft.description = _s(item.get("description"))
    draft.opening = aid_questions(_s(item.get("prompt")), draft, "prompt")
    draft.plot_essentials = aid_questions(_s(item.get("memory")), draft, "memory")
    draft.author_note = _aid_authors_note(_s(item.get("authorsNote")))
    draft.tags = [t for t in _list(item.get("tags")) if isinstance(t, str)]
    report.imported(
        "prompt, memory, authorsNote", "became the opening, plot essentials and author's note"
    )
    cards, always = lore.to_story_cards(
        lore.from_aid(item.get("worldInfo") or []),
        "AI Dungeon world info",
        report,
        "worldInfo",
        draft.resolve,
    )
    options = [o for o in _list(item.get("options")) if isinstance(o, dict)]
    for i, option in enumerate(options):
        more, extra = lore.to_story_cards(
            lore.from_aid(option.get("worldInfo") or []),
            f"AI Dungeon world info ({_s(option.get('title'))[:40]})",
            report,
            f"options[{i}].worldInfo",
            draft.resolve,
        )
        cards += more
        always += extra
        origin = {
            "id": f"option-{i + 1}",
            "title": (_s(option.get("title")) or f"Option {i + 1}")[:200],
            "description": _s(option.get("description"))[:2000],
        }
        opening = aid_questions(_s(option.get("prompt")), draft, f"options[{i}].prompt")
        if opening.strip():
            origin["opening"] = draft.fit("opening", opening, f"options[{i}].prompt")
        if _s(option.get("memory")).strip():
            origin["plot_essentials"] = draft.fit(
                "plot_essentials",
                aid_questions(option["memory"], draft, f"options[{i}].memory"),
                f"options[{i}].memory",
            )
        if _s(option.get("authorsNote")).strip():
            origin["author_note"] = draft.fit(
                "author_note", option["authorsNote"], f"options[{i}].authorsNote"
            )
        draft.origins.append(origin)
        if option.get("options"):
            report.dropped(
                f"options[{i}].options",
                "a third level of sub-scenarios (talekeeper offers one level of starting points)",
            )
    if options:
        report.imported("options", f"{len(options)} sub-scenarios became starting points (origins)")
    draft.story_cards = cards
    draft.add_always(always, "worldInfo")
    for key in ("quests", "gameCode"):
        if item.get(key):
            report.dropped(key, "AI Dungeon quests and scripts are not supported")
    report.dropped(
        "id, publicId, user, createdAt", "AI Dungeon's own records are not part of a scenario"
    )
    return draft


def from_lore_only(
    title: str, entries: list[lore.LoreEntry], source: str, report: Report, description: str = ""
) -> Draft:
    draft = Draft(title=title or source, report=report)
    draft.description = description
    cards, always = lore.to_story_cards(entries, source, report, "entries", draft.resolve)
    draft.story_cards = cards
    draft.add_always(always, "entries")
    return draft


def from_kobold(save: dict[str, Any], report: Report, title: str) -> Draft:
    draft = Draft(title=title or "KoboldAI story", report=report)
    prompt = aid_questions(_s(save.get("prompt")), draft, "prompt")
    actions = [a for a in _list(save.get("actions")) if isinstance(a, str)]
    draft.opening = prompt + "".join(actions)
    if actions:
        report.approximated(
            "actions",
            f"the story so far ({len(actions)} actions) was joined onto the prompt as the opening",
        )
    draft.plot_essentials = _s(save.get("memory"))
    draft.author_note = _s(save.get("authorsnote"))
    report.imported(
        "prompt, memory, authorsnote", "became the opening, plot essentials and author's note"
    )
    cards, always = lore.to_story_cards(
        lore.from_kobold(save.get("worldinfo") or []),
        "KoboldAI world info",
        report,
        "worldinfo",
        draft.resolve,
    )
    draft.story_cards = cards
    draft.add_always(always, "worldinfo")
    return draft


def _novelai_context(context: Any, draft: Draft, report: Report) -> None:
    items = [c for c in context or [] if isinstance(c, dict) and _s(c.get("text")).strip()]
    if items:
        draft.plot_essentials = items[0]["text"]
        report.imported("context[0]", "the memory became the plot essentials")
    if len(items) > 1:
        draft.author_note = items[1]["text"]
        report.imported("context[1]", "the author's note became the author's note")
    if len(items) > 2:
        report.dropped(
            "context", "more than two context entries; only memory and author's note are used"
        )


def from_novelai_story(story: dict[str, Any], report: Report) -> Draft:
    meta = story.get("metadata") if isinstance(story.get("metadata"), dict) else {}
    content = story.get("content") if isinstance(story.get("content"), dict) else {}
    draft = Draft(title=_s(meta.get("title")) or "NovelAI story", report=report)
    draft.description = _s(meta.get("description"))
    body = content.get("story") if isinstance(content.get("story"), dict) else {}
    fragments = [
        f.get("data")
        for f in body.get("fragments") or []
        if isinstance(f, dict) and isinstance(f.get("data"), str)
    ]
    text = "".join(fragments) or _s(body.get("text"))
    draft.opening = text[-20000:] if len(text) > 20000 else text
    if len(text) > 20000:
        report.approximated(
            "story", f"the story is {len(text):,} characters; the opening keeps its last 20,000"
        )
    else:
        report.imported("story", "the story text became the opening")
    _novelai_context(content.get("context"), draft, report)
    book = content.get("lorebook") if isinstance(content.get("lorebook"), dict) else {}
    cards, always = lore.to_story_cards(
        lore.from_novelai(book), "a NovelAI lorebook", report, "lorebook.entries", draft.resolve
    )
    draft.story_cards = cards
    draft.add_always(always, "lorebook")
    report.dropped(
        "settings", "generation settings belong to your model settings, not the scenario"
    )
    return draft


def from_novelai_scenario(scenario: dict[str, Any], report: Report) -> Draft:
    draft = Draft(title=_s(scenario.get("title")) or "NovelAI scenario", report=report)
    draft.description = _s(scenario.get("description"))
    draft.tags = [t for t in _list(scenario.get("tags")) if isinstance(t, str)]
    draft.opening = _s(scenario.get("prompt"))
    report.imported("prompt", "became the opening")
    _novelai_context(scenario.get("context"), draft, report)
    book = scenario.get("lorebook") if isinstance(scenario.get("lorebook"), dict) else {}
    cards, always = lore.to_story_cards(
        lore.from_novelai(book), "a NovelAI lorebook", report, "lorebook.entries", draft.resolve
    )
    draft.story_cards = cards
    draft.add_always(always, "lorebook")
    if scenario.get("placeholders"):
        report.dropped("placeholders", "NovelAI placeholders were left in the text as written")
    if scenario.get("ephemeralContext"):
        report.dropped("ephemeralContext", "timed context entries have no talekeeper equivalent")
    report.dropped(
        "settings", "generation settings belong to your model settings, not the scenario"
    )
    return draft
