"""A talekeeper scenario as a Character Card V3 (JSON, or PNG with `ccv3` and `chara`
chunks), so a world can travel to SillyTavern and other tools.

Other tools read the standard fields: the opening is `first_mes`, origins with their
own opening are `alternate_greetings`, the narrator and AI instructions are the system
prompt and post-history instructions, the plot essentials the description, and the
story cards the `character_book`. The whole scenario also rides in
`data.extensions.talekeeper`, which the spec asks tools to keep, so importing the card
back into talekeeper gives the same scenario exactly.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .png import plain_image, with_text


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _user_macros(text: str) -> str:
    """`${name}` (the player's answer) is `{{user}}` to other tools."""
    return text.replace("${name}", "{{user}}")


def to_card(scenario: dict[str, Any]) -> dict[str, Any]:
    cards = [c for c in scenario.get("story_cards") or [] if isinstance(c, dict)]
    entries = [
        {
            "keys": [t.strip() for t in _s(card.get("triggers")).split(",") if t.strip()],
            "content": _user_macros(_s(card.get("entry"))),
            "extensions": {},
            "enabled": True,
            "insertion_order": 100,
            "case_sensitive": False,
            "use_regex": False,
            "constant": False,
            "name": _s(card.get("name")),
            "comment": _s(card.get("name")),
            "id": i + 1,
            "position": "before_char",
        }
        for i, card in enumerate(cards)
    ]
    greetings = [
        _user_macros(_s(o.get("opening")))
        for o in scenario.get("origins") or []
        if isinstance(o, dict) and _s(o.get("opening")).strip()
    ]
    persona = scenario.get("persona") if isinstance(scenario.get("persona"), dict) else {}
    data: dict[str, Any] = {
        "name": _s(scenario.get("title")) or "talekeeper scenario",
        "description": _user_macros(_s(scenario.get("plot_essentials"))),
        "personality": "",
        "scenario": _user_macros(_s(scenario.get("description"))),
        "first_mes": _user_macros(_s(scenario.get("opening"))),
        "mes_example": "",
        "creator_notes": _s(scenario.get("description")),
        "system_prompt": _user_macros(_s(scenario.get("narrator_instructions"))),
        "post_history_instructions": _user_macros(_s(scenario.get("ai_instructions"))),
        "alternate_greetings": greetings,
        "group_only_greetings": [],
        "tags": [t for t in scenario.get("tags") or [] if isinstance(t, str)],
        "creator": "",
        "character_version": "",
        "extensions": {
            "talekeeper": {"version": 1, "scenario": scenario},
            "depth_prompt": {
                "prompt": _user_macros(_s(scenario.get("author_note"))),
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
