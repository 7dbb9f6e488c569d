"""A scenario exported as a Character Card V3 and read back: every World Info setting
travels in SillyTavern's names and values, the cards come back the same (with or without
the scenario talekeeper embeds), and edits another tool made to the visible fields win
over the embedded copy, each one named in the report."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.context.cardspec import load_card
from talekeeper.context.keys import split_keys
from talekeeper.interop.card_export import to_card, to_png
from talekeeper.interop.detect import convert
from talekeeper.service.scenarios import check_scenario
from talekeeper.service.shipped_scenarios import builtin_scenarios

WORDS = st.sampled_from(
    "harbour lantern Maren ferry storm gull tower keeper lighthouse 月光城 마법사 ป้อมปราการ".split()
)
# Texts as a card holds them (trimmed: an import trims an entry), without the markup an
# import reads as another tool's (`{{macros}}`, `<USER>`, `@@decorators`, `${…}`).
TEXT = (
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
    .map(str.strip)
    .filter(lambda s: s and not any(m in s for m in ("${", "{{", "@@", "<USER>", "<BOT>")))
)
REGEX = st.sampled_from(["/\\bbells?\\b/i", "/storm(s|y)?/", "/Katariah|emp(ress|eror)/i"])
KEYS = st.lists(WORDS | REGEX, min_size=1, max_size=4, unique=True).map(", ".join)
RULES = {"player": {"name": "${name}"}, "flags": {"ferry_hired": {}}}


@st.composite
def cards(draw: Any) -> dict[str, Any]:
    constant = draw(st.booleans())
    card = {
        "type": draw(st.sampled_from(["other", "place", "person"])),
        "name": draw(st.sampled_from(["", "Harbour", "月光城"])) or "",
        "entry": draw(TEXT),
        "triggers": "" if constant and draw(st.booleans()) else draw(KEYS),
        "notes": draw(st.sampled_from(["", "for me"])),
        "constant": constant,
        "enabled": draw(st.booleans()),
        "secondary_triggers": draw(st.sampled_from(["", "rain", "rain, /fog(gy)?/i"])),
        "logic": draw(st.sampled_from(["and_any", "and_all", "not_any", "not_all"])),
        "whole_words": draw(st.booleans()),
        "case_sensitive": draw(st.booleans()),
        "scan_depth": draw(st.none() | st.integers(0, 200)),
        "position": draw(
            st.sampled_from(["before_history", "after_history", "at_depth", "author_note"])
        ),
        "depth": draw(st.integers(0, 1000)),
        "order": draw(st.integers(-1000, 1000)),
        "probability": draw(st.integers(0, 100)),
        "group": draw(st.sampled_from(["", "weather", "bells, weather"])),
        "group_weight": draw(st.integers(1, 1000)),
        "group_override": draw(st.booleans()),
        "sticky": draw(st.integers(0, 50)),
        "cooldown": draw(st.integers(0, 50)),
        "delay": draw(st.integers(0, 500)),
        "exclude_recursion": draw(st.booleans()),
        "prevent_recursion": draw(st.booleans()),
        "delay_until_recursion": draw(st.booleans()),
        "max_tokens": draw(st.none() | st.integers(1, 4000)),
        "gates": draw(st.sampled_from([[], [{"kind": "flag", "id": "ferry_hired"}]])),
    }
    return load_card(card).dump()


def _scenario(story_cards: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "roundtrip",
        "title": "Round trip",
        "opening": "You arrive, ${name}.",
        "placeholders": [{"key": "name", "question": "Name?", "default": "Ada"}],
        "rules": RULES,
        "story_cards": story_cards,
    }


def _comparable(card: dict[str, Any], gates: bool = True) -> dict[str, Any]:
    found = load_card(card).view()
    found["triggers"] = split_keys(found["triggers"])
    found["secondary_triggers"] = split_keys(found["secondary_triggers"])
    if not gates:
        found.pop("gates")
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(cards(), min_size=1, max_size=5))
def test_exported_cards_come_back_the_same(story_cards: list[dict[str, Any]]) -> None:
    scenario = _scenario(story_cards)
    if check_scenario(scenario):
        return
    card = to_card(scenario)
    # With the embedded scenario: exactly the same document, from JSON or PNG.
    for raw in (json.dumps(card).encode(), to_png(card)):
        result = convert(raw, "roundtrip")[0]
        assert result.exact and result.document == scenario
    # Another tool that keeps only the standard fields: the same cards, read from
    # SillyTavern's names (gates need the rules, which only the embedded copy carries).
    bare = copy.deepcopy(card)
    del bare["data"]["extensions"]["talekeeper"]
    back = convert(json.dumps(bare).encode(), "roundtrip.json")[0].document["story_cards"]
    assert [_comparable(c, gates=False) for c in back] == [
        _comparable(c, gates=False) for c in story_cards
    ]


def test_every_world_info_setting_travels_in_sillytavern_names() -> None:
    card = {
        "type": "place",
        "name": "Bell",
        "entry": "The bell, ${name}.",
        "triggers": "bell, /\\bbells?\\b/i",
        "secondary_triggers": "storm",
        "logic": "not_all",
        "constant": False,
        "enabled": False,
        "whole_words": True,
        "case_sensitive": True,
        "scan_depth": 7,
        "position": "at_depth",
        "depth": 2,
        "order": 250,
        "probability": 40,
        "group": "bells",
        "group_weight": 30,
        "group_override": True,
        "sticky": 3,
        "cooldown": 2,
        "delay": 5,
        "exclude_recursion": True,
        "prevent_recursion": True,
        "delay_until_recursion": True,
    }
    entry = to_card(_scenario([card]))["data"]["character_book"]["entries"][0]
    assert entry["keys"] == ["bell", "/\\bbells?\\b/i"] and entry["secondary_keys"] == ["storm"]
    assert entry["content"] == "The bell, {{user}}." and entry["comment"] == "Bell"
    assert entry["enabled"] is False and entry["constant"] is False and entry["selective"] is True
    assert entry["insertion_order"] == 250 and entry["case_sensitive"] is True
    assert entry["position"] == "after_char"
    ext = entry["extensions"]
    assert ext["position"] == 4 and ext["depth"] == 2 and ext["selectiveLogic"] == 1
    assert ext["probability"] == 40 and ext["useProbability"] is True
    assert (ext["group"], ext["group_weight"], ext["group_override"]) == ("bells", 30, True)
    assert (ext["sticky"], ext["cooldown"], ext["delay"]) == (3, 2, 5)
    assert ext["exclude_recursion"] and ext["prevent_recursion"] and ext["delay_until_recursion"]
    assert ext["scan_depth"] == 7 and ext["match_whole_words"] is True
    constant = to_card(_scenario([{"name": "Rule", "entry": "Always.", "constant": True}]))
    keyless = constant["data"]["character_book"]["entries"][0]
    assert keyless["constant"] is True and keyless["keys"] == [] and keyless["enabled"] is True


def test_edits_made_in_another_tool_win_over_the_embedded_copy() -> None:
    scenario = next(s for s in builtin_scenarios() if s["id"] == "greywater-lantern")
    scenario = copy.deepcopy(scenario)
    scenario["story_cards"][0]["gates"] = [{"kind": "flag", "id": "ferry_hired"}]
    assert check_scenario(scenario) == []
    card = to_card(scenario)
    data = card["data"]
    data["name"] = "Greywater (edited)"
    data["first_mes"] = "Edited elsewhere: {{user}} steps off the ferry."
    data["alternate_greetings"] = [*data["alternate_greetings"], "A new start, {{user}}."]
    entries = data["character_book"]["entries"]
    entries[1]["content"] = "Edited lore."
    entries[1]["keys"] = [*entries[1]["keys"], "beacon"]
    del entries[2]
    result = convert(json.dumps(card).encode(), "edited.json")[0]
    doc = result.document
    assert doc["title"] == "Greywater (edited)"
    assert doc["opening"] == "Edited elsewhere: ${name} steps off the ferry."
    assert doc["origins"][-1]["opening"] == "A new start, ${name}."
    assert len(doc["story_cards"]) == len(scenario["story_cards"]) - 1
    assert doc["story_cards"][0] == scenario["story_cards"][0]  # unchanged: whole, gates too
    assert doc["story_cards"][1]["entry"] == "Edited lore."
    assert doc["story_cards"][1]["triggers"].endswith("beacon")
    assert (
        doc["rules"] == scenario["rules"] and doc["plot_essentials"] == scenario["plot_essentials"]
    )
    said = " ".join(e["detail"] for e in result.report)
    for field in ("name", "first_mes", "alternate_greetings", "character_book"):
        assert field in said
    assert "restored exactly" not in said
    assert check_scenario({**doc, "id": "check"}) == []
    untouched = convert(json.dumps(to_card(scenario)).encode(), "same.json")[0]
    assert untouched.document == scenario
    assert "restored exactly" in " ".join(e["detail"] for e in untouched.report)
