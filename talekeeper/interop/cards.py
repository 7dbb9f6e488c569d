"""Character cards (V1, V2, V3, Pygmalion, text-generation-webui) → a talekeeper scenario.

The card's character becomes an NPC the narrator voices: the greeting is the opening,
alternate greetings are origins (starting points), the description, personality and
scenario are the always-sent plot essentials, the system prompt joins the narrator
instructions, post-history instructions and example dialogue the AI instructions, the
"character's note" (`depth_prompt`) the author's note, and the character book story
cards. The player is asked their name (`{{user}}`). The version label is not trusted:
fields are read defensively from `data`, falling back to the root.

A card exported by talekeeper carries its whole scenario in `extensions.talekeeper`;
that comes back exactly.
"""

from __future__ import annotations

import copy
from typing import Any

from . import card_export, cbs, lore
from .draft import Draft, entity, escape_foreign
from .report import Report

TALEKEEPER_EXTENSION = "talekeeper"
V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
_USED = {
    "name",
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
    "creator_notes",
    "system_prompt",
    "post_history_instructions",
    "alternate_greetings",
    "tags",
    "character_book",
    "extensions",
}
_METADATA = {
    "creator",
    "character_version",
    "creation_date",
    "modification_date",
    "avatar",
    "source",
    "spec",
    "spec_version",
}


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def card_data(card: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The card's fields and a label for its shape."""
    spec = card.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3") and isinstance(card.get("data"), dict):
        label = "Character Card V3" if spec == "chara_card_v3" else "Character Card V2"
        data = dict(card["data"])
        for key in V1_FIELDS:  # a V2/V3 card without a field in data: the root mirror
            if key not in data and isinstance(card.get(key), str):
                data[key] = card[key]
        return data, label
    if "char_name" in card:
        return {
            "name": _s(card.get("char_name")),
            "description": _s(card.get("char_persona")),
            "scenario": _s(card.get("world_scenario")),
            "first_mes": _s(card.get("char_greeting")),
            "mes_example": _s(card.get("example_dialogue")),
        }, "Pygmalion character"
    if "context" in card and "greeting" in card and "first_mes" not in card:
        return {
            "name": _s(card.get("name")),
            "description": _s(card.get("context")),
            "first_mes": _s(card.get("greeting")),
        }, "text-generation-webui character"
    return dict(card), "Character Card V1"


def talekeeper_scenario(data: dict[str, Any]) -> dict[str, Any] | None:
    ext = data.get("extensions")
    found = ext.get(TALEKEEPER_EXTENSION) if isinstance(ext, dict) else None
    if isinstance(found, dict) and isinstance(found.get("scenario"), dict):
        return found["scenario"]
    return None


# The visible fields talekeeper writes, and the scenario field each one came from.
_TEXTS = (
    ("name", "title"),
    ("first_mes", "opening"),
    ("description", "plot_essentials"),
    ("system_prompt", "narrator_instructions"),
    ("post_history_instructions", "ai_instructions"),
    ("creator_notes", "description"),
    ("scenario", "description"),
)


def restore(data: dict[str, Any], report: Report) -> dict[str, Any] | None:
    """The scenario a talekeeper-exported card carries, with the edits another tool made
    to its visible fields: where a visible field differs from what talekeeper wrote, the
    visible one wins and the report names it. None when the card carries no (usable)
    scenario."""
    from talekeeper.service.scenarios import check_scenario

    scenario = talekeeper_scenario(data)
    if scenario is None:
        return None
    problems = check_scenario({**scenario, "id": "check"})
    if problems:
        report.dropped(
            "extensions.talekeeper",
            f"the scenario talekeeper embedded is damaged ({problems[0][:100]}); the card's own fields were read instead",
        )
        return None
    expected = card_export.to_card(scenario)["data"]
    result = copy.deepcopy(scenario)
    title = _s(data.get("name")).strip() or _s(scenario.get("title"))
    declared = {p["key"] for p in result.get("placeholders") or [] if isinstance(p, dict)}
    draft = Draft(title=title, report=Report(), char=title)

    def back(value: str) -> str:
        return escape_foreign(draft.resolve(value), declared, set())

    changed: list[str] = []
    for card_key, key in _TEXTS:
        value = data.get(card_key)
        if isinstance(value, str) and value != expected.get(card_key):
            result[key] = back(value).strip() if key != "title" else value.strip()[:200]
            changed.append(card_key)
    tags = [t for t in _list(data.get("tags")) if isinstance(t, str)]
    if tags != expected["tags"]:
        result["tags"] = tags[:20]
        changed.append("tags")
    ext = data.get("extensions") if isinstance(data.get("extensions"), dict) else {}
    depth = ext.get("depth_prompt") if isinstance(ext.get("depth_prompt"), dict) else {}
    note = depth.get("prompt")
    if isinstance(note, str) and note != expected["extensions"]["depth_prompt"]["prompt"]:
        result["author_note"] = back(note).strip()
        changed.append("extensions.depth_prompt")
    greetings = [g for g in _list(data.get("alternate_greetings")) if isinstance(g, str)]
    if greetings != expected["alternate_greetings"]:
        result["origins"] = _greetings_back([back(g) for g in greetings], result)
        changed.append("alternate_greetings")
    book = data.get("character_book") if isinstance(data.get("character_book"), dict) else {}
    entries = lore.records(book.get("entries"))
    if _entry_cards(entries, report) != _entry_cards(
        (expected.get("character_book") or {}).get("entries") or [], Report()
    ):
        result["story_cards"] = _cards_back(entries, scenario, back, report)
        changed.append("character_book")
    if not changed:
        report.imported(
            "extensions.talekeeper", "a scenario exported by talekeeper: restored exactly"
        )
        return scenario
    report.approximated(
        "extensions.talekeeper",
        f"a scenario exported by talekeeper, edited in another tool since: the edited fields win over the embedded copy ({', '.join(changed)})",
    )
    problems = check_scenario({**result, "id": "check"})
    if problems:
        report.dropped(
            ", ".join(changed)[:120],
            f"the other tool's edits do not make a valid scenario ({problems[0][:100]}); the embedded copy was kept",
        )
        return scenario
    return result


def _greetings_back(greetings: list[str], scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """Origins with the edited alternate greetings as their openings (in order); origins
    without an opening of their own stay, a removed greeting's origin goes, a new one
    is added."""
    origins = [o for o in scenario.get("origins") or [] if isinstance(o, dict)]
    found, queue = [], list(greetings)
    for origin in origins:
        if not _s(origin.get("opening")).strip():
            found.append(origin)
        elif queue:
            found.append({**origin, "opening": queue.pop(0).strip()})
    taken = {o.get("id") for o in found}
    for number, greeting in enumerate(queue, start=len(found) + 1):
        origin_id = f"greeting-{number}"
        while origin_id in taken:
            number += 100
            origin_id = f"greeting-{number}"
        taken.add(origin_id)
        found.append(
            {
                "id": origin_id,
                "title": f"Greeting {number}",
                "description": greeting.strip()[:200],
                "opening": greeting.strip(),
            }
        )
    return found[:50]


def _entry_cards(entries: list[dict[str, Any]], report: Report) -> list[dict[str, Any]]:
    """Book entries as the story cards they would import as (what they mean, not how a
    tool happened to write them)."""
    found = lore.to_story_cards(
        lore.from_character_book({"entries": entries}, report),
        "a character book",
        report,
        "character_book.entries",
    )[0]
    return [{k: v for k, v in card.items() if k != "notes"} for card in found]


def _cards_back(
    entries: list[dict[str, Any]], scenario: dict[str, Any], back: Any, report: Report
) -> list[dict[str, Any]]:
    """The story cards from the edited book: an entry unchanged since talekeeper wrote it
    (found by its `id`) keeps its card whole; an edited or new one is read as a character
    book entry, keeping what only talekeeper holds (gates, own budget, notes)."""
    originals = [c for c in scenario.get("story_cards") or [] if isinstance(c, dict)]
    written = {
        e.get("id"): e
        for e in card_export.to_card({"story_cards": originals})["data"]
        .get("character_book", {})
        .get("entries", [])
    }
    found = []
    for entry in entries:
        number = entry.get("id")
        original = (
            originals[number - 1]
            if isinstance(number, int)
            and not isinstance(number, bool)
            and 0 < number <= len(originals)
            else None
        )
        if original is not None and _entry_cards([entry], Report()) == _entry_cards(
            [written[number]], Report()
        ):
            found.append(original)
            continue
        cards, _ = lore.to_story_cards(
            lore.from_character_book({"entries": [entry]}, report),
            "a character book",
            report,
            "character_book.entries",
            back,
        )
        for card in cards:
            if original is not None:
                kept = {
                    k: original[k]
                    for k in ("type", "notes", "gates", "max_tokens")
                    if k in original
                }
                card = {**card, **kept}
            found.append(card)
    return found


def from_card(card: dict[str, Any], report: Report) -> tuple[Draft, str]:
    data, label = card_data(card)
    name = _s(data.get("name")).strip() or "Unnamed character"
    draft = Draft(title=name, report=report, char=name)
    report.imported(
        "name",
        f"the character “{name[:80]}” became the scenario's title and an NPC the narrator voices",
    )
    description = draft.resolve(_s(data.get("description")))
    personality = draft.resolve(_s(data.get("personality")))
    scenario = draft.resolve(_s(data.get("scenario")))
    parts = [f"{name}: {description.strip()}" if description.strip() else ""]
    if personality.strip():
        parts.append(f"{name}'s personality: {personality.strip()}")
    if scenario.strip():
        parts.append(f"Scenario: {scenario.strip()}")
    draft.plot_essentials = "\n\n".join(p for p in parts if p)
    report.imported(
        "description, personality, scenario",
        "became the plot essentials (always sent to the model)",
    )
    draft.entities = [entity(name, description or personality, report, "description")]
    greeting = draft.resolve(_s(data.get("first_mes")))
    greetings = [
        g for g in _list(data.get("alternate_greetings")) if isinstance(g, str) and g.strip()
    ]
    branches = cbs.alternatives(greeting)
    if branches:
        # A RisuAI greeting of conditional blocks: RisuAI shows one branch; each becomes a
        # starting point to choose from, the first one the opening.
        greeting = branches[0][1]
        greetings = [text for _, text in branches[1:]] + greetings
        report.approximated(
            "first_mes",
            f"a greeting written as {len(branches)} RisuAI conditional blocks ({{{{#if}}}}) became {len(branches)} starting points, one per branch",
        )
    draft.opening = greeting
    if greeting.strip():
        report.imported("first_mes", "became the opening")
    if greetings:
        draft.origins = [
            {
                "id": "greeting-1",
                "title": "The first greeting",
                "description": greeting.strip()[:200],
            }
        ]
        for i, text in enumerate(greetings, start=2):
            resolved = draft.fit("opening", draft.resolve(text), f"alternate_greetings[{i - 2}]")
            draft.origins.append(
                {
                    "id": f"greeting-{i}",
                    "title": f"Greeting {i}",
                    "description": resolved[:200],
                    "opening": resolved,
                }
            )
        report.imported(
            "alternate_greetings",
            f"{len(greetings)} alternate greetings became starting points (origins) to choose from",
        )
    system = draft.resolve(_s(data.get("system_prompt"))).strip()
    draft.narrator_instructions = (
        f"You are the narrator of an interactive story. The player meets {name}; voice {name} faithfully — their words, "
        f"manner and actions — and narrate the world around them. Write in second person, present tense, addressing the player "
        f'as "you". Answer the player\'s action in a few vivid sentences, then stop and let the player act. Never act or speak for the player.'
    )
    if system:
        draft.narrator_instructions += f"\n\nThe card's own instructions:\n{system}"
        report.approximated(
            "system_prompt",
            "added to the narrator instructions (talekeeper's narrator frame comes first)",
        )
    ai = []
    post = draft.resolve(_s(data.get("post_history_instructions"))).strip()
    if post:
        ai.append(post)
        report.approximated(
            "post_history_instructions",
            "became AI instructions (sent every turn, not after the history)",
        )
    example = draft.resolve(_s(data.get("mes_example"))).strip()
    if example:
        ai.append(
            f"Examples of how {name} talks (style only; not events of this story):\n{example.replace('<START>', '---')}"
        )
        report.approximated(
            "mes_example", "example dialogue became part of the AI instructions, as a style guide"
        )
    draft.ai_instructions = "\n\n".join(ai)
    notes = _s(data.get("creator_notes")).strip()
    draft.description = notes or (description.strip()[:300] if description else "")
    if notes:
        report.imported("creator_notes", "became the scenario's description")
    draft.tags = [t for t in _list(data.get("tags")) if isinstance(t, str)]
    ext = data.get("extensions") if isinstance(data.get("extensions"), dict) else {}
    depth = ext.get("depth_prompt") if isinstance(ext.get("depth_prompt"), dict) else {}
    if _s(depth.get("prompt")).strip():
        draft.author_note = draft.resolve(_s(depth.get("prompt")))
        report.approximated(
            "extensions.depth_prompt",
            f"the character's note (depth {depth.get('depth', '?')}) became the author's note, placed a few lines before the end",
        )
    if _s(ext.get("world")).strip():
        report.dropped(
            "extensions.world",
            f"the card names a separate World Info file “{ext['world'][:80]}”, which is not inside the card: import that file too",
        )
    other_ext = sorted(k for k in ext if k not in ("depth_prompt", "world", TALEKEEPER_EXTENSION))
    if other_ext:
        report.dropped(
            "extensions",
            f"tool-specific settings talekeeper does not use: {', '.join(other_ext)[:300]}",
        )
    book = data.get("character_book")
    if isinstance(book, dict):
        entries = lore.from_character_book(book, report)
        lexicon = lore.records(book.get("lexicon"))
        if lexicon:
            report.imported(
                "character_book.lexicon",
                f"Chub's lexicon ({len(lexicon)} lore items) was read as entries too",
            )
        cards, always = lore.to_story_cards(
            entries, f"{name}'s character book", report, "character_book.entries", draft.resolve
        )
        draft.story_cards = cards
        draft.add_always(always, "character_book")
        book_fields = sorted(
            k
            for k in ("scan_depth", "token_budget", "recursive_scanning")
            if book.get(k) not in (None, False)
        )
        if book_fields:
            report.dropped(
                "character_book",
                f"book settings without a talekeeper equivalent: {', '.join(book_fields)} (story cards scan the last few turns; the context budget decides)",
            )
    greetings_group = [g for g in _list(data.get("group_only_greetings")) if g]
    if greetings_group:
        report.dropped(
            "group_only_greetings", "group-chat greetings (talekeeper has no group chats)"
        )
    if _s(data.get("nickname")).strip():
        report.dropped("nickname", "talekeeper uses the name")
    if data.get("assets"):
        report.dropped("assets", "images and other assets are not used by talekeeper")
    if data.get("creator_notes_multilingual"):
        report.dropped("creator_notes_multilingual", "only the main creator's notes are kept")
    meta = sorted(k for k in data if k in _METADATA and data.get(k) not in (None, "", []))
    if meta:
        report.dropped(
            ", ".join(meta), "card metadata (creator, versions, dates) is not part of a scenario"
        )
    unknown = sorted(
        k
        for k in data
        if k not in _USED
        and k not in _METADATA
        and k not in ("group_only_greetings", "nickname", "assets", "creator_notes_multilingual")
    )
    if unknown:
        report.dropped(
            ", ".join(unknown)[:200], "fields this card format does not define; not used"
        )
    return draft, label
