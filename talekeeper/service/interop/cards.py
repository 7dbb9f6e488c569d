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

from typing import Any

from . import lore
from .draft import Draft, entity
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
    draft.opening = greeting
    if greeting.strip():
        report.imported("first_mes", "became the opening")
    greetings = [
        g for g in _list(data.get("alternate_greetings")) if isinstance(g, str) and g.strip()
    ]
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
        entries = lore.from_character_book(book)
        if book.get("lexicon"):
            report.imported(
                "character_book.lexicon",
                f"Chub's lexicon ({len(book['lexicon'])} lore items) was read as entries too",
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
