"""A talekeeper scenario as a Character Card V3 (JSON, or PNG with `ccv3` and `chara`
chunks), so a world can travel to SillyTavern and other tools.

Other tools read the standard fields: the opening is `first_mes`, origins with their
own opening are `alternate_greetings`, the narrator and AI instructions are the system
prompt and post-history instructions, the plot essentials the description, and the
story cards the `character_book`. Each card carries every World Info setting it holds,
in the names and values SillyTavern reads (the entry's `extensions`: numeric position
and depth, selective logic, probability, groups, timers, recursion flags, scan depth,
whole words, case); what only talekeeper has (the card's type, notes, gates, own token
budget) rides in the entry's `extensions.talekeeper`. The whole scenario also rides in
`data.extensions.talekeeper`, which the spec asks tools to keep: importing the card back
gives the same scenario, with any visible field another tool edited taking precedence.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from talekeeper.context.cardspec import load_card
from talekeeper.context.keys import split_keys

from .png import plain_image, with_text

# SillyTavern's world_info_position: 0 before the character, 1 after it, 2/3 the top and
# bottom of the author's note, 4 at a depth in the chat.
POSITION = {"before_history": 0, "after_history": 1, "author_note": 3, "at_depth": 4}
LOGIC = {"and_any": 0, "not_all": 1, "not_any": 2, "and_all": 3}
_ESCAPED = re.compile(r"\$(\$\{[A-Za-z_][A-Za-z0-9_]*\})")


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def export_text(text: str) -> str:
    """`${name}` (the player's answer) is `{{user}}` to other tools; an escaped `$${x}` is
    the text `${x}` it stands for."""
    return _ESCAPED.sub(r"\1", text.replace("${name}", "{{user}}"))


def book_entry(raw: dict[str, Any], index: int) -> dict[str, Any]:
    """One story card as a Character Card V3 book entry, as SillyTavern writes one."""
    card = load_card(raw)
    keys = split_keys(card.triggers)
    secondary = split_keys(card.secondary_triggers)
    own: dict[str, Any] = {"notes": card.notes}
    if card.type != "other":
        own["type"] = card.type
    if not card.name:
        own["name"] = ""  # other tools show a title; an unnamed card stays unnamed
    if card.max_tokens:
        own["max_tokens"] = card.max_tokens
    if card.gates:
        own["gates"] = [g.dump() for g in card.gates]
    position = POSITION[card.position]
    return {
        "id": index + 1,
        "keys": keys,
        "secondary_keys": secondary,
        "comment": card.name,
        "name": card.name,
        "content": export_text(card.entry),
        "constant": card.constant,
        "selective": bool(secondary),
        "insertion_order": card.order,
        "enabled": card.enabled,
        "position": "before_char" if position == 0 else "after_char",
        "use_regex": any(k.startswith("/") for k in keys + secondary),
        "case_sensitive": card.case_sensitive,
        "extensions": {
            "position": position,
            "depth": card.depth,
            "selectiveLogic": LOGIC[card.logic],
            "probability": card.probability,
            "useProbability": True,
            "group": card.group,
            "group_override": card.group_override,
            "group_weight": card.group_weight,
            "sticky": card.sticky,
            "cooldown": card.cooldown,
            "delay": card.delay,
            "exclude_recursion": card.exclude_recursion,
            "prevent_recursion": card.prevent_recursion,
            "delay_until_recursion": card.delay_until_recursion,
            "scan_depth": card.scan_depth,
            "match_whole_words": card.whole_words,
            "case_sensitive": card.case_sensitive,
            "role": 0,
            "vectorized": False,
            "display_index": index,
            "talekeeper": own,
        },
    }


def to_card(scenario: dict[str, Any]) -> dict[str, Any]:
    cards = [c for c in scenario.get("story_cards") or [] if isinstance(c, dict)]
    entries = [book_entry(card, i) for i, card in enumerate(cards)]
    greetings = [
        export_text(_s(o.get("opening")))
        for o in scenario.get("origins") or []
        if isinstance(o, dict) and _s(o.get("opening")).strip()
    ]
    persona = scenario.get("persona") if isinstance(scenario.get("persona"), dict) else {}
    data: dict[str, Any] = {
        "name": _s(scenario.get("title")) or "talekeeper scenario",
        "description": export_text(_s(scenario.get("plot_essentials"))),
        "personality": "",
        "scenario": export_text(_s(scenario.get("description"))),
        "first_mes": export_text(_s(scenario.get("opening"))),
        "mes_example": "",
        "creator_notes": _s(scenario.get("description")),
        "system_prompt": export_text(_s(scenario.get("narrator_instructions"))),
        "post_history_instructions": export_text(_s(scenario.get("ai_instructions"))),
        "alternate_greetings": greetings,
        "group_only_greetings": [],
        "tags": [t for t in scenario.get("tags") or [] if isinstance(t, str)],
        "creator": "",
        "character_version": "",
        "extensions": {
            "talekeeper": {"version": 1, "scenario": scenario},
            "depth_prompt": {
                "prompt": export_text(_s(scenario.get("author_note"))),
                "depth": 3,
                "role": "system",
            },
        },
    }
    if entries:
        data["character_book"] = {
            "name": f"{data['name']} story cards",
            "entries": entries,
            "extensions": {},
        }
    if _s(persona.get("description")):
        data["extensions"]["talekeeper"]["persona_note"] = (
            "The player's character is described in the scenario's persona."
        )
    return {"spec": "chara_card_v3", "spec_version": "3.0", "data": data}


def _b64(card: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(card, ensure_ascii=False).encode()).decode()


def to_png(card: dict[str, Any]) -> bytes:
    """A plain image carrying the card: `ccv3` (V3) and `chara` (a V2 copy, for older tools)."""
    v2 = {"spec": "chara_card_v2", "spec_version": "2.0", "data": card["data"]}
    return with_text(plain_image(), {"chara": _b64(v2), "ccv3": _b64(card)})
