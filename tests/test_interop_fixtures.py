"""What the importers make of each shape the formats allow (the spec-built fixtures in
tests/interop_fixtures.py, also kept as files in tests/fixtures/interop/): keys keep their
meaning, vector-only entries are not always sent, long lore is kept whole, foreign markup
stays the author's text, every dropped field has a report line, and current AI Dungeon,
KoboldAI and NovelAI shapes import."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from talekeeper.context.cardspec import MAX_ENTRY, card_errors
from talekeeper.interop.containers import Refused
from talekeeper.interop.detect import convert
from talekeeper.service.scenarios import check_scenario
from tests.interop_fixtures import FOLDER, LONG_HISTORY, THAI_LORE, documents, files

FILES = files()


def one(name: str, index: int = 0):
    results = convert(FILES[name], name)
    result = results[index]
    assert check_scenario({**result.document, "id": "check"}) == [], name
    return result


def report(result, status: str | None = None) -> str:
    return " | ".join(
        f"{e['field']}: {e['detail']}"
        for e in result.report
        if status is None or e["status"] == status
    )


def cards_named(result) -> dict[str, dict]:
    return {c["name"]: c for c in result.document.get("story_cards", [])}


def test_the_fixture_folder_is_what_the_module_writes() -> None:
    """`python -m tests.interop_fixtures` rewrites the folder; it must not drift."""
    on_disk = {p.name: p.read_bytes() for p in FOLDER.iterdir() if p.name != "README.md"}
    assert on_disk == FILES


@pytest.mark.parametrize("name", sorted(FILES), ids=lambda n: n.encode("ascii", "replace").decode())
def test_every_fixture_imports_validly_with_a_report(name: str) -> None:
    for result in convert(FILES[name], name):
        assert check_scenario({**result.document, "id": "check"}) == []
        assert result.report
        assert not [
            c
            for c in result.document.get("story_cards", [])
            if card_errors(c, result.document["rules"])
        ]


# --- keys keep their meaning ---------------------------------------------------------------


def test_pattern_keys_become_regex_triggers_never_fragments() -> None:
    empress = cards_named(one("world_info_2024.json"))["The Empress"]
    triggers = empress["triggers"]
    assert "/Katariah|(|the )emp(ress|eror)/i" in triggers
    assert "/\\bthrone(s)?\\b/i" in triggers and "/\\bHP\\b/i" in triggers
    fragments = {"the", "emp", "ress", "eror", "HP", "s"}
    assert not fragments & {t.strip() for t in triggers.split(",")}
    wanted = one("world_info_2024.json")
    assert "commonest words" in report(wanted, "dropped") and "the" in report(wanted, "dropped")
    # AI Dungeon, NovelAI and KoboldAI pattern keys likewise.
    for name, card in (
        ("aid_scenarios_story_cards.json", "Katariah"),
        ("novelai_v6.lorebook", "Katariah"),
    ):
        assert cards_named(one(name))[card]["triggers"] == "/Katariah|(|the )emp(ress|eror)/i"
    combine = cards_named(one("koboldai_save.json"))["Combine"]
    assert combine["triggers"] == "/(combine|overwatch)s?/i"
    # A plain list of alternatives is its words; a name with brackets is text.
    ewi = one("aid_world_info_ewi.json")
    assert [c["triggers"] for c in ewi.document["story_cards"]] == [
        "/(isekaid|(innkeeper of the |)bloated goat( innkeeper|))/i",
        "innkeeper, bloated goat",
    ]


def test_imported_regex_keys_match_what_they_meant() -> None:
    from talekeeper.context.keys import parse_keys

    triggers = cards_named(one("world_info_2024.json"))["The Empress"]["triggers"]
    keys = parse_keys(triggers)

    def fires(text: str) -> bool:
        return any(k.find(text, text.lower()) for k in keys)

    for text in ("Katariah smiled", "the empress rose", "the Emperor fell", "two thrones"):
        assert fires(text), text
    for text in ("the tempest", "a whip", "the throneroom's cat"):
        assert not fires(text), text


def test_stop_words_and_short_triggers_are_refused_by_the_card_checks() -> None:
    plain = {"name": "x", "entry": "Lore.", "triggers": "the, Ruby Throne"}
    assert any("commonest words" in e for e in card_errors(plain, {}))
    assert any("two letters" in e for e in card_errors({**plain, "triggers": "HP"}, {}))
    assert any("one letter" in e for e in card_errors({**plain, "triggers": "x"}, {}))
    assert card_errors({**plain, "triggers": "HP", "whole_words": True}, {}) == []
    assert card_errors({**plain, "triggers": "/\\bHP\\b/i"}, {}) == []
    assert card_errors({**plain, "triggers": "龙, 月光"}, {}) == []  # a word in Chinese
    assert any("commonest" in e for e in card_errors({**plain, "secondary_triggers": "and"}, {}))


# --- vector-only, long lore, disabled ------------------------------------------------------


def test_vector_only_and_keyless_entries_are_imported_disabled_never_constant() -> None:
    result = one("world_info_2024.json")
    cards = cards_named(result)
    vector = cards["Vector-only memory"]
    assert vector.get("enabled") is False and not vector.get("constant")
    assert "embeddings" in report(result, "approximated")
    assert cards["Style"]["constant"] is True  # a keyless constant entry stays constant
    assert cards["Disabled ghost"].get("enabled") is False
    keyless = [
        c for c in one("card_v2_st_export.json").document["story_cards"] if not c["triggers"]
    ]
    assert {c.get("constant", False) for c in keyless if c.get("enabled", True)} == {True}


def test_long_lore_is_kept_whole() -> None:
    result = one("world_info_2024.json")
    parts = [c for c in result.document["story_cards"] if c["name"].startswith("The Salt Compact")]
    assert len(parts) == 3 and all(len(p["entry"]) <= MAX_ENTRY for p in parts)
    assert " ".join(p["entry"] for p in parts).split() == LONG_HISTORY.split()
    assert {p["triggers"] for p in parts} == {"Salt Compact"}
    assert "split into cards" in report(result, "approximated")
    thai = cards_named(result)["ป้อมแสงจันทร์"]
    assert thai["entry"] == THAI_LORE.strip() and len(thai["entry"]) > 4000


# --- foreign markup stays the author's text -------------------------------------------------


def test_javascript_templates_stay_text_and_the_card_saves_and_plays(client: TestClient) -> None:
    name = "洛琪希_card_js_templates.json"
    preview = client.post("/api/interop/import", params={"filename": name}, content=FILES[name])
    item = preview.json()["items"][0]
    assert item["errors"] == []
    assert [p["key"] for p in item["scenario"]["placeholders"]] == ["name"]
    assert "kept as text" in " ".join(r["detail"] for r in item["report"])
    saved = client.post("/api/interop/save", json={"scenario": item["scenario"]})
    assert saved.status_code == 201, saved.text
    assert saved.json()["id"].startswith("luoqixi")  # a meaningful id from a Chinese title
    story = client.post(
        "/api/adventures", json={"scenario_id": saved.json()["id"], "answers": {"name": "Ada"}}
    ).json()
    opening = story["turns_shown"][0]["narration"]
    assert "`生命值：${hp}，好感度：${favor}`" in opening and "看着Ada" in opening


def test_risu_cbs_greeting_blocks_become_starting_points() -> None:
    result = one("card_risu.charx")
    doc = result.document
    assert doc["opening"] == "You wake in the salt marsh, ${name}. The tide is coming in."
    openings = [o.get("opening", "") for o in doc["origins"]]
    assert "You wake in a cell under the lighthouse. Someone is humming." in openings
    assert "You wake aboard the Gull, far out at sea." in openings
    assert "The warden finds you at dawn." in openings
    assert not any("{{#if" in o or "{{//" in o for o in [doc["opening"], *openings])
    said = report(result)
    assert "3 RisuAI conditional blocks" in said and "{{?}}" in said and "{{getvar}}" in said
    assert "{{#if {{getvar::trust}}}}" in doc["plot_essentials"]  # elsewhere: kept, reported


def test_decorators_become_card_settings() -> None:
    cards = one("card_v2_st_export.json").document["story_cards"]
    lantern = next(c for c in cards if c["triggers"] == "lantern")
    assert lantern["entry"] == "The lantern burns whale oil."
    assert lantern["position"] == "at_depth" and lantern["depth"] == 3 and lantern["delay"] == 2
    assert "@@role" in report(one("card_v2_st_export.json"), "dropped")


# --- every dropped field has a report line ---------------------------------------------------


def test_novelai_v6_fields_are_each_reported() -> None:
    result = one("novelai_v6.lorebook")
    said = report(result)
    for field in (
        "advancedConditions",
        "loreBiasGroups",
        "keyRelative",
        "categoryDefaults",
        "subcontextSettings",
        "insertionPosition",
        "search range",
    ):
        assert field in said, field
    elves = cards_named(result)["Elves"]
    assert elves["entry"] == "[Elves are tall and remember everything.]"  # prefix and suffix
    assert elves["type"] == "Peoples" and elves["order"] == 500
    assert cards_named(result)["World"]["constant"] is True
    scenario = one("novelai.scenario").document
    assert [p["key"] for p in scenario["placeholders"]] == ["name", "job"]
    assert scenario["opening"].startswith("You are ${name}, a ${job} of the Salt Compact.")


def test_world_info_and_card_fields_without_an_equivalent_are_reported() -> None:
    assert "characterFilter" in report(one("world_info_2024.json"), "dropped")
    assert "book settings" in report(one("world_info_chub_hybrid.json"), "dropped")
    v3 = report(one("card_v3.json"), "dropped")
    for field in (
        "nickname",
        "assets",
        "group_only_greetings",
        "creator_notes_multilingual",
        "source",
    ):
        assert field in v3, field


# --- AI Dungeon, KoboldAI shapes ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["aid_scenario_data.json", "aid_scenario_single.json"])
def test_ai_dungeon_current_scenarios(name: str) -> None:
    result = one(name)
    doc = result.document
    assert result.format == "AI Dungeon scenario" and doc["title"] == "The Salt Compact"
    assert [p["key"] for p in doc["placeholders"]] == ["name", "q1"]
    assert doc["opening"].startswith("You are ${name}, ${q1} years old")
    assert [o["title"] for o in doc["origins"]] == ["A sailor", "A clerk"]
    assert {c["name"] for c in doc["story_cards"]} == {"Harbourmaster Vell", "Sailor", "The Gull"}
    assert doc["ai_instructions"] == "Keep the sea menacing."
    said = report(result)
    assert "storyCardInstructions" in said and "useForCharacterCreation" in said


def test_ai_dungeon_adventure_dump() -> None:
    result = one("aid_adventure_data.json")
    doc = result.document
    assert result.format == "AI Dungeon adventure"
    assert doc["opening"].startswith("You stand on the quay.\n> You ask about the bell.")
    assert "(undone)" not in doc["opening"]
    assert "Story so far: Wren arrived" in doc["plot_essentials"]
    assert "undone" in report(result, "dropped")


def test_ai_dungeon_legacy_scenarios_keep_their_story_cards() -> None:
    result = one("aid_scenarios_story_cards.json")
    assert cards_named(result)["Katariah"]["entry"] == "Katariah rules."


def test_bare_koboldai_world_info_list() -> None:
    result = one("koboldai_world_info.json")
    assert result.format == "KoboldAI world info"
    cards = result.document["story_cards"]
    assert cards[0]["triggers"] == "tavern, inn"
    assert cards[1]["secondary_triggers"] == "bell" and cards[1]["probability"] == 80
    assert cards[2]["constant"] is True


def test_unrecognised_lists_name_every_list_format() -> None:
    with pytest.raises(Refused) as refused:
        convert(json.dumps([{"title": "x", "text": "y"}]).encode(), "x.json")
    said = str(refused.value)
    for name in ("AI Dungeon", "KoboldAI", "lorebook"):
        assert name in said


def test_a_chinese_title_gives_a_meaningful_id(client: TestClient) -> None:
    name = "林晓_v1_flat.json"
    preview = client.post("/api/interop/import", params={"filename": name}, content=FILES[name])
    scenario_id = preview.json()["items"][0]["scenario"]["id"]
    assert re.fullmatch(r"lin-?xiao(-\d+)?", scenario_id), scenario_id


def test_documents_are_json_of_the_files() -> None:
    for filename, value in documents().values():
        assert json.loads(FILES[filename]) == value
