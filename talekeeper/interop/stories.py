"""Story-game formats → talekeeper scenarios: AI Dungeon scenarios, adventures, world info
and story cards, KoboldAI saves, NovelAI `.story` / `.scenario`, and lorebook-only files.

AI Dungeon prompts ask questions with `${…}` ("${Enter your name}"); each becomes one of
the scenario's placeholders, asked when an adventure starts; NovelAI's `${key[default]:…}`
placeholders likewise. A scenario whose options are sub-scenarios becomes one scenario
with those options as origins. An adventure (AI Dungeon, KoboldAI, a NovelAI story)
becomes a scenario whose opening is the story so far.

Every reader names in the report each field of the file it did not use.
"""

from __future__ import annotations

import re
from typing import Any

from . import lore
from .draft import Draft
from .lore import records, text, unread
from .report import Report

_AID_QUESTION = re.compile(r"\$\{([^}]*)\}")
_NAI_PLACEHOLDER = re.compile(r"\$\{([^}\[\]:]*)(?:\[([^\]]*)\])?(?::([^}]*))?\}")
MAX_PLACEHOLDERS = 20
MAX_STORY = 20_000
_BOOKKEEPING = {
    "id",
    "publicId",
    "shortId",
    "shortCode",
    "userId",
    "user",
    "createdAt",
    "updatedAt",
    "editedAt",
    "publishedAt",
    "deletedAt",
    "blockedAt",
    "__typename",
    "isOwner",
    "published",
    "unlisted",
    "allowComments",
    "showComments",
    "commentCount",
    "voteCount",
    "saveCount",
    "userVote",
    "isSaved",
    "userJoined",
    "adventuresPlayed",
    "storyCardCount",
    "actionCount",
    "image",
    "contentType",
    "contentRatingLockedAt",
    "contentRatingLockedMessage",
    "parentScenario",
    "parentScenarioId",
    "isOption",
    "allPlayers",
    "scenarioId",
    "mode",
    "type",
    "worldInfoId",
}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def aid_questions(value: str, draft: Draft, where: str) -> str:
    """`${Question?}` → `${q1}` with a declared placeholder asking that question."""
    asked = {p["question"]: p["key"] for p in draft.placeholders}

    def replace(match: re.Match[str]) -> str:
        question = match.group(1).strip()
        if question == "name":
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

    result = _AID_QUESTION.sub(replace, value)
    if result != value:
        draft.report.imported(
            where, "questions in ${…} are asked when an adventure starts (placeholders)"
        )
    return result


# --- AI Dungeon -------------------------------------------------------------------------

_AID_SCENARIO_READ = {
    "title",
    "description",
    "prompt",
    "memory",
    "authorsNote",
    "tags",
    "worldInfo",
    "storyCards",
    "options",
    "details",
    "instructions",
    "quests",
    "gameCode",
    "scripts",
    "nsfw",
    "contentRating",
    "thirdPerson",
}


def _aid_instructions(item: dict[str, Any], draft: Draft, report: Report, where: str) -> str:
    """AI Dungeon's AI instructions (`details.instructions` or `instructions`:
    `{type, custom, scenario}`) and its story-card generator's prompts."""
    details = _dict(item.get("details"))
    found = details.get("instructions", item.get("instructions"))
    parts = []
    if isinstance(found, str):
        parts.append(found)
    for key in ("custom", "scenario"):
        value = _dict(found).get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value)
    if parts:
        report.imported(
            f"{where}instructions", "AI Dungeon's AI instructions became AI instructions"
        )
    for key in ("storyCardInstructions", "storyCardStoryInformation"):
        if text(details.get(key)).strip():
            report.dropped(
                f"{where}details.{key}",
                "instructions for AI Dungeon's story-card generator (talekeeper has none)",
            )
    return "\n\n".join(p.strip() for p in parts if p.strip())


def _aid_common(item: dict[str, Any], draft: Draft, report: Report, where: str = "") -> None:
    draft.description = text(item.get("description"))
    draft.tags = [t for t in _list(item.get("tags")) if isinstance(t, str)]
    draft.plot_essentials = aid_questions(text(item.get("memory")), draft, f"{where}memory")
    draft.author_note = text(item.get("authorsNote")).strip()
    draft.ai_instructions = _aid_instructions(item, draft, report, where)
    if item.get("thirdPerson") is True:
        report.approximated(
            f"{where}thirdPerson",
            "AI Dungeon narrated this in the third person; talekeeper's narrator writes in the second (edit the narrator instructions to change it)",
        )
    rating = item.get("contentRating") or item.get("nsfw")
    if rating:
        report.dropped(f"{where}contentRating", f"AI Dungeon's content rating ({str(rating)[:40]})")
    for key in ("quests", "gameCode", "scripts"):
        if item.get(key):
            report.dropped(f"{where}{key}", "AI Dungeon quests and scripts are not supported")
    cards, _ = lore.to_story_cards(
        lore.from_aid(item.get("storyCards"), report)
        + lore.from_aid(item.get("worldInfo"), report),
        "AI Dungeon story cards",
        report,
        f"{where}storyCards",
        draft.resolve,
    )
    draft.story_cards += cards


def from_aid_scenario(item: dict[str, Any], report: Report, where: str = "") -> Draft:
    """An AI Dungeon scenario: a 2021 dump's item (`worldInfo`, options with their own
    prompts and memory), or the current shape (`storyCards`, `details.instructions`,
    options holding only a title and a prompt)."""
    draft = Draft(title=text(item.get("title")) or "AI Dungeon scenario", report=report)
    draft.opening = aid_questions(text(item.get("prompt")), draft, f"{where}prompt")
    _aid_common(item, draft, report, where)
    report.imported(
        f"{where}prompt, memory, authorsNote",
        "became the opening, plot essentials and author's note",
    )
    options = records(item.get("options"))
    for i, option in enumerate(options):
        at = f"{where}options[{i}]"
        more, _ = lore.to_story_cards(
            lore.from_aid(option.get("storyCards"), report)
            + lore.from_aid(option.get("worldInfo"), report),
            f"AI Dungeon story cards ({text(option.get('title'))[:40]})",
            report,
            f"{at}.storyCards",
            draft.resolve,
        )
        draft.story_cards += more
        origin = {
            "id": f"option-{i + 1}",
            "title": (text(option.get("title")) or f"Option {i + 1}")[:200],
            "description": text(option.get("description"))[:2000],
        }
        opening = aid_questions(text(option.get("prompt")), draft, f"{at}.prompt")
        if opening.strip():
            origin["opening"] = draft.fit("opening", opening, f"{at}.prompt")
        if text(option.get("memory")).strip():
            origin["plot_essentials"] = draft.fit(
                "plot_essentials",
                aid_questions(option["memory"], draft, f"{at}.memory"),
                f"{at}.memory",
            )
        if text(option.get("authorsNote")).strip():
            origin["author_note"] = draft.fit(
                "author_note", option["authorsNote"], f"{at}.authorsNote"
            )
        draft.origins.append(origin)
        if option.get("options"):
            report.dropped(
                f"{at}.options",
                "a third level of sub-scenarios (talekeeper offers one level of starting points)",
            )
        unread(
            report,
            f"{where}options",
            option,
            _AID_SCENARIO_READ | _BOOKKEEPING,
            text(option.get("title")) or f"option {i + 1}",
        )
    if options:
        report.imported(
            f"{where}options", f"{len(options)} sub-scenarios became starting points (origins)"
        )
    unread(report, where.rstrip(".") or "(scenario)", item, _AID_SCENARIO_READ | _BOOKKEEPING, "")
    report.dropped(
        f"{where}id, publicId, user, createdAt",
        "AI Dungeon's own records are not part of a scenario",
    )
    return draft


_AID_ACTION_TYPES = {"start", "continue", "do", "say", "story", "see", "repeat"}


def story_so_far(texts: list[str], draft: Draft, report: Report, where: str) -> None:
    """The opening from a played story: its text, the last MAX_STORY characters of it."""
    story = "".join(texts)
    if len(story) > MAX_STORY:
        cut = story[-MAX_STORY:]
        space = cut.find(" ")
        cut = cut[space + 1 :] if 0 <= space < 200 else cut
        report.approximated(
            where,
            f"the story so far is {len(story):,} characters; the opening keeps its last {len(cut):,}",
        )
        story = cut
    draft.opening = story


def from_aid_adventure(item: dict[str, Any], state: dict[str, Any], report: Report) -> Draft:
    """An AI Dungeon adventure (a played story): its actions, in order, become the
    opening; memory, author's note, instructions and story cards come along; the story
    summary joins the plot essentials."""
    draft = Draft(title=text(item.get("title")) or "AI Dungeon adventure", report=report)
    actions = records(item.get("actionWindow")) or records(item.get("actions"))
    kept = [
        a
        for a in actions
        if isinstance(a.get("text"), str) and not a.get("undoneAt") and not a.get("deletedAt")
    ]
    skipped = len(actions) - len(kept)
    if skipped:
        report.dropped("actions", f"{skipped} undone, deleted or empty actions")
    odd = sorted({str(a.get("type"))[:20] for a in kept} - _AID_ACTION_TYPES)
    if odd:
        report.approximated(
            "actions.type", f"action types read as story text: {', '.join(odd)[:80]}"
        )
    story_so_far([a["text"] for a in kept], draft, report, "actions")
    if kept:
        report.imported("actions", f"the story so far ({len(kept)} actions) became the opening")
    _aid_common(item, draft, report)
    details = _dict(state.get("details")) or _dict(item.get("details"))
    summary = text(details.get("storySummary")).strip()
    if summary:
        draft.plot_essentials = "\n\n".join(
            p for p in (draft.plot_essentials.strip(), f"Story so far: {summary}") if p
        )
        report.approximated(
            "adventureState.details.storySummary",
            "AI Dungeon's story summary joined the plot essentials",
        )
    unread(
        report,
        "(adventure)",
        item,
        _AID_SCENARIO_READ | _BOOKKEEPING | {"actionWindow", "actions", "gameState", "imageStyle"},
        "",
    )
    return draft


def from_lore_only(
    title: str, entries: list[lore.LoreEntry], source: str, report: Report, description: str = ""
) -> Draft:
    draft = Draft(title=title or source, report=report)
    draft.description = description
    cards, _ = lore.to_story_cards(entries, source, report, "entries", draft.resolve)
    draft.story_cards = cards
    return draft


# --- KoboldAI -----------------------------------------------------------------------------

_KOBOLD_READ = {
    "gamestarted",
    "prompt",
    "memory",
    "authorsnote",
    "anotetemplate",
    "actions",
    "actions_metadata",
    "worldinfo",
    "wifolders_d",
    "wifolders_l",
    "savedsettings",
}


def from_kobold(save: dict[str, Any], report: Report, title: str) -> Draft:
    draft = Draft(title=title or "KoboldAI story", report=report)
    prompt = aid_questions(text(save.get("prompt")), draft, "prompt")
    raw_actions = save.get("actions")
    if isinstance(raw_actions, dict):  # KoboldAI United keys its actions by number
        raw_actions = [raw_actions[k] for k in sorted(raw_actions, key=_numeric)]
    actions = [a for a in _list(raw_actions) if isinstance(a, str)]
    story_so_far([prompt, *actions], draft, report, "actions")
    if actions:
        report.approximated(
            "actions",
            f"the story so far ({len(actions)} actions) was joined onto the prompt as the opening",
        )
    draft.plot_essentials = text(save.get("memory"))
    draft.author_note = text(save.get("authorsnote"))
    report.imported(
        "prompt, memory, authorsnote", "became the opening, plot essentials and author's note"
    )
    cards, _ = lore.to_story_cards(
        lore.from_kobold(save.get("worldinfo"), report),
        "KoboldAI world info",
        report,
        "worldinfo",
        draft.resolve,
    )
    draft.story_cards = cards
    if save.get("savedsettings") or save.get("anotetemplate"):
        report.dropped(
            "savedsettings, anotetemplate",
            "KoboldAI's generation settings belong to your model settings",
        )
    unread(report, "(save)", save, _KOBOLD_READ, "")
    return draft


def _numeric(key: Any) -> int:
    try:
        return int(key)
    except (TypeError, ValueError):
        return 0


# --- NovelAI ------------------------------------------------------------------------------


def novelai_placeholders(value: str, declared: dict[str, Any], draft: Draft, where: str) -> str:
    """NovelAI's `${key[default]:description}` → talekeeper's `${key}`, declared once with
    its description as the question and its default."""
    asked = {p["key"] for p in draft.placeholders}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        key = re.sub(r"\W+", "_", name).strip("_").lower()[:40] or "answer"
        if not re.match(r"[A-Za-z_]", key):
            key = f"p_{key}"
        if key == "name" or name.lower() in ("name", "your name"):
            return "${name}"
        if key not in asked:
            if len(asked) >= MAX_PLACEHOLDERS:
                return match.group(2) or "…"
            spec = _dict(declared.get(name))
            question = (
                text(spec.get("description"))
                or (match.group(3) or "").strip()
                or text(spec.get("longDescription"))
                or name
            )
            default = text(spec.get("defaultValue")) or (match.group(2) or "")
            draft.placeholders.append(
                {"key": key, "question": question[:200], "default": default[:200]}
            )
            asked.add(key)
        return "${" + key + "}"

    result = _NAI_PLACEHOLDER.sub(replace, value)
    if result != value:
        draft.report.imported(where, "NovelAI placeholders ${…} are asked when an adventure starts")
    return result


_CONTEXT_READ = {"text", "contextConfig"}


def _novelai_context(context: Any, draft: Draft, report: Report, fill: Any) -> None:
    items = [c for c in records(context) if text(c.get("text")).strip()]
    if items:
        draft.plot_essentials = fill(items[0]["text"], "context[0]")
        report.imported("context[0]", "the memory became the plot essentials")
    if len(items) > 1:
        draft.author_note = fill(items[1]["text"], "context[1]")
        report.imported("context[1]", "the author's note became the author's note")
    if len(items) > 2:
        report.dropped(
            "context", "more than two context entries; only memory and author's note are used"
        )
    if any(_dict(c.get("contextConfig")) for c in items):
        report.dropped(
            "context.contextConfig",
            "NovelAI's context placement settings (prefix, budget, insertion position)",
        )


_BOOK_READ = {"lorebookVersion", "entries", "categories"}


def novelai_book(book: dict[str, Any], draft: Draft, report: Report, where: str) -> None:
    """A NovelAI lorebook's entries become story cards; its other settings are reported."""
    cards, _ = lore.to_story_cards(
        lore.from_novelai(book, report), "a NovelAI lorebook", report, where, draft.resolve
    )
    draft.story_cards += cards
    for i, category in enumerate(records(book.get("categories"))):
        label = text(category.get("name")) or f"category {i + 1}"
        unread(report, f"{where}.categories", category, {"name", "id", "enabled"}, label)
    if book.get("settings"):
        report.dropped(f"{where}.settings", "NovelAI's lorebook display settings")
    unread(report, where, book, _BOOK_READ | {"settings"}, "")


def from_novelai_story(story: dict[str, Any], report: Report) -> Draft:
    meta = _dict(story.get("metadata"))
    content = _dict(story.get("content"))
    draft = Draft(title=text(meta.get("title")) or "NovelAI story", report=report)
    draft.description = text(meta.get("description"))
    body = _dict(content.get("story"))
    fragments = [
        f.get("data") for f in records(body.get("fragments")) if isinstance(f.get("data"), str)
    ]
    story_so_far(fragments or [text(body.get("text"))], draft, report, "story")
    report.imported("story", "the story text became the opening")
    _novelai_context(content.get("context"), draft, report, lambda value, where: value)
    novelai_book(_dict(content.get("lorebook")), draft, report, "lorebook")
    report.dropped(
        "settings", "generation settings belong to your model settings, not the scenario"
    )
    return draft


_SCENARIO_READ = {
    "scenarioVersion",
    "title",
    "description",
    "prompt",
    "tags",
    "context",
    "lorebook",
    "placeholders",
    "settings",
    "author",
    "storyContextConfig",
    "contextDefaults",
    "ephemeralContext",
    "createdAt",
    "id",
}


def from_novelai_scenario(scenario: dict[str, Any], report: Report) -> Draft:
    draft = Draft(title=text(scenario.get("title")) or "NovelAI scenario", report=report)
    draft.description = text(scenario.get("description"))
    draft.tags = [t for t in _list(scenario.get("tags")) if isinstance(t, str)]
    declared = {
        text(p.get("key")): p for p in records(scenario.get("placeholders")) if text(p.get("key"))
    }

    def fill(value: str, where: str) -> str:
        return novelai_placeholders(value, declared, draft, where)

    prompt = fill(text(scenario.get("prompt")), "prompt")
    story_so_far([prompt], draft, report, "prompt")
    report.imported("prompt", "became the opening")
    _novelai_context(scenario.get("context"), draft, report, fill)
    novelai_book(_dict(scenario.get("lorebook")), draft, report, "lorebook")
    if scenario.get("ephemeralContext"):
        report.dropped("ephemeralContext", "timed context entries have no talekeeper equivalent")
    if text(scenario.get("author")).strip():
        report.dropped("author", "the author's name is not part of a scenario")
    if scenario.get("storyContextConfig") or scenario.get("contextDefaults"):
        report.dropped(
            "storyContextConfig, contextDefaults", "NovelAI's context placement settings"
        )
    report.dropped(
        "settings", "generation settings belong to your model settings, not the scenario"
    )
    unread(report, "(scenario)", scenario, _SCENARIO_READ, "")
    return draft
