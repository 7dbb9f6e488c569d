"""Spec-built fixtures for the importers: one file per shape each format allows, written
here from the formats' specifications and documentation (never copied from a real file).

`documents()` is every JSON shape as a Python value (the type-mutation walk mutates
these); `files()` is every fixture as the bytes a player would upload (JSON, PNG cards
with `chara`/`ccv3` chunks, a CHARX zip, YAML). The same files are kept in
`tests/fixtures/interop/` so `scripts/import_corpus.py` can run over them:

    .venv/bin/python -m tests.interop_fixtures tests/fixtures/interop   # rewrite the folder

and `tests/test_interop_fixtures.py` fails when the folder and this module disagree.
Texts include Chinese, Korean and Thai, as real cards do.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent / "fixtures" / "interop"

LONG_HISTORY = "\n\n".join(
    f"Chapter {i}. The Salt Compact was sworn at Fenmouth in the year of the long tide; "
    f"its {i}th clause binds every harbour-master to ring the storm bell when the gulls fly "
    "inland, and to shelter any ship that asks, whatever flag it flies. " * 3
    for i in range(1, 60)
)  # about 26,000 characters: longer than a story card holds whole
THAI_LORE = (
    "ป้อมปราการแห่งแสงจันทร์ตั้งอยู่บนหน้าผาทางทิศเหนือ ผู้พิทักษ์ของที่นี่สาบานว่าจะปกป้องหมู่บ้านจากพายุ " * 40
)  # about 4,200 characters of Thai


def _st_entry(uid: int, **fields: Any) -> dict[str, Any]:
    """A SillyTavern World Info entry as SillyTavern 1.12 writes it (the 2024 shape)."""
    entry = {
        "uid": uid,
        "key": [],
        "keysecondary": [],
        "comment": "",
        "content": "",
        "constant": False,
        "vectorized": False,
        "selective": True,
        "selectiveLogic": 0,
        "addMemo": True,
        "order": 100,
        "position": 0,
        "disable": False,
        "excludeRecursion": False,
        "preventRecursion": False,
        "delayUntilRecursion": False,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "group": "",
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": None,
        "caseSensitive": None,
        "matchWholeWords": None,
        "useGroupScoring": None,
        "automationId": "",
        "role": None,
        "sticky": 0,
        "cooldown": 0,
        "delay": 0,
        "displayIndex": uid,
    }
    entry.update(fields)
    return entry


def world_info_2024() -> dict[str, Any]:
    entries = [
        _st_entry(
            0,
            key=["Fenmouth", "the harbour town"],
            comment="Fenmouth",
            content="{{user}} knows Fenmouth: a harbour town of tarred nets and salt-stiff flags.",
            order=200,
        ),
        _st_entry(
            1,
            key=["storm bell"],
            keysecondary=["ring", "toll"],
            selectiveLogic=3,
            comment="The storm bell",
            content="The storm bell is rung only when the gulls fly inland.",
            probability=60,
            group="bells",
            groupWeight=30,
            sticky=2,
            cooldown=1,
        ),
        _st_entry(
            2,
            key=[],
            constant=True,
            comment="Style",
            content="Write the sea as a living thing.",
            position=4,
            depth=2,
            role=0,
        ),
        _st_entry(
            3,
            key=[],
            vectorized=True,
            comment="Vector-only memory",
            content="A memory SillyTavern finds only by its meaning.",
        ),
        _st_entry(
            4,
            key=["ghost ship"],
            disable=True,
            comment="Disabled ghost",
            content="There is no ghost ship. Yet.",
        ),
        _st_entry(
            5,
            key=["Katariah|(|the )emp(ress|eror)", "/\\bthrone(s)?\\b/i", "HP", "the"],
            comment="The Empress",
            content="Empress Katariah rules from the Ruby Throne.",
            matchWholeWords=False,
            caseSensitive=False,
            excludeRecursion=True,
            preventRecursion=True,
        ),
        _st_entry(
            6,
            key=["Salt Compact"],
            comment="The Salt Compact (long)",
            content=LONG_HISTORY,
            position=1,
            scanDepth=6,
        ),
        _st_entry(
            7,
            key=["月光", "月光城"],
            comment="月光城",
            content="月光城建在北方的悬崖上，守护者发誓保护村庄免受风暴侵袭。",
            position=2,
            delayUntilRecursion=True,
            delay=3,
        ),
        _st_entry(
            8,
            key=["ป้อมปราการ"],
            comment="ป้อมแสงจันทร์",
            content=THAI_LORE,
            position=5,
            characterFilter={"isExclude": False, "names": ["Mira"], "tags": []},
        ),
    ]
    return {"entries": {str(e["uid"]): e for e in entries}}


def world_info_2023() -> dict[str, Any]:
    return {
        "entries": {
            "0": {
                "uid": 0,
                "key": ["lighthouse", "the lamp"],
                "keysecondary": [],
                "comment": "Lighthouse",
                "content": "The lighthouse lamp has not been lit in ten years.",
                "constant": False,
                "selective": False,
                "order": 100,
                "position": 0,
                "disable": False,
            },
            "1": {
                "uid": 1,
                "key": [],
                "keysecondary": [],
                "comment": "Tone",
                "content": "Quiet, wet, cold.",
                "constant": True,
                "selective": False,
                "order": 1,
                "position": 1,
                "disable": False,
            },
        }
    }


def world_info_chub_hybrid() -> dict[str, Any]:
    """A Chub export: both vocabularies on every entry, keys off by one, book settings in
    snake_case, a description."""

    def entry(uid: int, keys: list[str], content: str, **more: Any) -> dict[str, Any]:
        return {
            "uid": uid,
            "key": keys,
            "keys": keys,
            "keysecondary": [],
            "secondary_keys": [],
            "comment": keys[0] if keys else "",
            "content": content,
            "constant": False,
            "selective": True,
            "order": 100,
            "insertion_order": 100,
            "position": 0,
            "disable": False,
            "enabled": True,
            "priority": 10,
            "id": uid,
            "name": keys[0] if keys else "",
            "case_sensitive": None,
            "characterFilter": None,
            "extensions": {},
            **more,
        }

    return {
        "name": "마법사의 탑",
        "description": "한국어 세계관 설정집. " * 20,
        "is_creation": False,
        "scan_depth": 8,
        "token_budget": 1024,
        "recursive_scanning": True,
        "extensions": {},
        "entries": {
            "1": entry(0, ["마법사", "탑"], "마법사의 탑은 구름 위에 떠 있다."),
            "2": entry(1, ["Stupefy Duo", "duel"], "Two wizards, one spell, no winner."),
            "3": entry(2, [""], "Always remember the tower is silent at night.", constant=True),
        },
    }


def character_book_entries() -> list[dict[str, Any]]:
    return [
        {
            "keys": ["Old Harbor", "harbour"],
            "content": "The old harbor silted up ten years ago; {{char}} still walks it.",
            "extensions": {
                "position": 1,
                "exclude_recursion": False,
                "display_index": 0,
                "probability": 100,
                "useProbability": True,
                "depth": 4,
                "selectiveLogic": 0,
                "group": "",
                "group_override": False,
                "group_weight": 100,
                "prevent_recursion": False,
                "delay_until_recursion": False,
                "scan_depth": None,
                "match_whole_words": None,
                "use_group_scoring": False,
                "case_sensitive": None,
                "automation_id": "",
                "role": 0,
                "vectorized": False,
                "sticky": 0,
                "cooldown": 0,
                "delay": 0,
            },
            "enabled": True,
            "insertion_order": 10,
            "name": "Harbor",
            "priority": 10,
            "id": 0,
            "comment": "Harbor",
            "selective": True,
            "secondary_keys": ["boat"],
            "constant": False,
            "position": "after_char",
            "use_regex": True,
        },
        {
            "keys": [""],
            "content": "Always: it is raining.",
            "extensions": {},
            "enabled": True,
            "insertion_order": 1,
            "constant": True,
            "position": "before_char",
        },
        {
            "keys": ["/gulls?|terns?/i"],
            "content": "{{char}} names every gull.",
            "extensions": {"position": 4, "depth": 2},
            "enabled": True,
            "insertion_order": 3,
            "use_regex": True,
        },
        {
            "keys": ["lantern"],
            "content": "@@depth 3\n@@activate_only_after 2\n@@role system\nThe lantern burns whale oil.",
            "extensions": {},
            "enabled": True,
            "insertion_order": 5,
            "use_regex": False,
        },
        {
            "keys": [],
            "content": "Recalled only by embeddings.",
            "extensions": {"vectorized": True},
            "enabled": True,
            "insertion_order": 100,
        },
    ]


def card_v2() -> dict[str, Any]:
    """A V2 card as SillyTavern exports it: the V1 fields mirrored at the root."""
    data = {
        "name": "Mira",
        "description": "{{char}} keeps the lighthouse at Fenmouth.\r\nShe distrusts {{user}} at first.",
        "personality": "wry, patient",
        "scenario": "A storm strands {{user}} at {{char}}'s lighthouse.",
        "first_mes": "*{{char}} lowers her lantern.* Who sent you out in this, {{user}}?",
        "mes_example": "<START>\n{{user}}: Hello.\n{{char}}: Hm.",
        "creator_notes": "A quiet card.",
        "system_prompt": "Write as {{char}}. {{original}}",
        "post_history_instructions": "Keep replies short.",
        "alternate_greetings": ["The lamp gutters. {{char}} turns to you."],
        "tags": ["coastal", "slow burn"],
        "creator": "fixture",
        "character_version": "1.0",
        "extensions": {
            "talkativeness": "0.5",
            "fav": False,
            "world": "Fenmouth",
            "depth_prompt": {"prompt": "Mira smells of salt.", "depth": 4, "role": "system"},
        },
        "character_book": {
            "name": "Mira's book",
            "scan_depth": 5,
            "token_budget": 500,
            "recursive_scanning": False,
            "extensions": {},
            "entries": character_book_entries(),
        },
    }
    root = {k: data[k] for k in ("name", "description", "personality", "scenario", "first_mes")}
    return {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": data,
        **root,
        "mes_example": data["mes_example"],
        "talkativeness": "0.5",
        "create_date": "2024-5-12 @21h 32m 29s 228ms",
    }


def card_v3() -> dict[str, Any]:
    card = card_v2()
    data = {
        **card["data"],
        "name": "Mira of Fenmouth",
        "nickname": "Mira",
        "creator_notes_multilingual": {"en": "A quiet card.", "ja": "静かなカード。"},
        "source": ["https://example.invalid/mira"],
        "group_only_greetings": ["Mira nods to the group."],
        "creation_date": 1715000000,
        "modification_date": 1715000100,
        "assets": [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}],
    }
    return {"spec": "chara_card_v3", "spec_version": "3.0", "data": data}


def card_js_templates() -> dict[str, Any]:
    """A Chinese card whose greeting is HTML with JavaScript template literals and a
    variable-update template — code the card's author wrote for their own front end."""
    first = (
        '<div class="status">\n<script>\nconst hp = 100;\n'
        "document.write(`生命值：${hp}，好感度：${favor}`);\n</script>\n</div>\n"
        "「你来了。」洛琪希合上书，看着{{user}}。"
    )
    return {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "洛琪希·米格路迪亚",
            "description": "洛琪希是一位魔法师。\n<UpdateVariable>_.set('好感度', ${old}, ${new});</UpdateVariable>",
            "personality": "冷静，认真",
            "scenario": "",
            "first_mes": first,
            "mes_example": "",
            "creator_notes": "变量模板：${favor} 与 ${hp}",
            "system_prompt": "",
            "post_history_instructions": "",
            "alternate_greetings": [],
            "tags": ["中文"],
            "creator": "",
            "character_version": "",
            "extensions": {},
        },
    }


def card_risu() -> dict[str, Any]:
    """A RisuAI V3 card: a greeting of CBS conditional blocks (one start per branch),
    CBS and macros elsewhere, and a lorebook with decorators and long Thai lore."""
    greeting = (
        "{{// choose your start in the settings}}\n"
        "{{#if {{equal::{{getglobalvar::toggle_start}}::0}}}}You wake in the salt marsh, "
        "{{user}}. The tide is coming in.{{/if}}\n"
        "{{#if {{equal::{{getglobalvar::toggle_start}}::1}}}}You wake in a cell under the "
        "lighthouse. Someone is humming.{{/if}}\n"
        "{{#if {{? {{getglobalvar::toggle_start}}>=2}}}}You wake aboard the Gull, far out "
        "at sea.{{:else}}{{/if}}"
    )
    entries = [
        {
            "keys": ["ป้อมปราการ", "fortress"],
            "content": THAI_LORE,
            "extensions": {"risu_case_sensitive": False},
            "enabled": True,
            "insertion_order": 100,
            "use_regex": False,
            "constant": False,
            "name": "ป้อมแสงจันทร์",
            "comment": "ป้อมแสงจันทร์",
            "selective": False,
            "secondary_keys": [],
            "position": "before_char",
        },
        {
            "keys": ["tide"],
            "content": "@@depth 0\n@@@instruct_depth 0\n@@dont_activate_after_match\nThe tide turns at dusk. {{getvar::tide_count}} tides so far.",
            "extensions": {},
            "enabled": True,
            "insertion_order": 50,
            "use_regex": False,
            "constant": False,
        },
        {
            "keys": ["/\\bsalt\\s+marsh(es)?\\b/i"],
            "content": "The salt marsh swallows the careless. {{random::Frogs sing.::Mist rises.}}",
            "extensions": {},
            "enabled": True,
            "insertion_order": 60,
            "use_regex": True,
            "constant": False,
        },
    ]
    return {
        "spec": "chara_card_v3",
        "spec_version": "3.0",
        "data": {
            "name": "The Marsh Warden",
            "description": "{{char}} guards the marsh. {{#if {{getvar::trust}}}}She trusts you.{{/if}}",
            "personality": "",
            "scenario": "",
            "first_mes": greeting,
            "mes_example": "",
            "creator_notes": "Made in RisuAI. 한국어도 지원합니다.",
            "system_prompt": "",
            "post_history_instructions": "{{setvar::tide_count::{{? {{getvar::tide_count}}+1}}}}",
            "alternate_greetings": ["The warden finds you at dawn."],
            "group_only_greetings": [],
            "tags": ["risu"],
            "creator": "",
            "character_version": "",
            "extensions": {"risuai": {"customScripts": [], "utilityBot": False}},
            "character_book": {
                "name": "Marsh lore",
                "extensions": {},
                "scan_depth": 4,
                "entries": entries,
            },
            "assets": [
                {
                    "type": "icon",
                    "uri": "embeded://assets/icon/images/main.png",
                    "name": "main",
                    "ext": "png",
                }
            ],
        },
    }


def card_v1() -> dict[str, Any]:
    return {
        "name": "Old Tom",
        "description": "A ferryman who takes coins and secrets.",
        "personality": "",
        "scenario": "",
        "first_mes": "Fare's a coin, <USER>.",
        "mes_example": "",
        "chat": "1674407315376",
        "create_date": "1674407315376",
        "avatar": "none",
    }


def card_v1_cjk_flat() -> dict[str, Any]:
    """A hand-written Chinese card: V1 fields, no `spec`, one V2 field at the root."""
    return {
        "name": "林晓",
        "description": "林晓是茶馆的老板娘，说话带着江南口音。",
        "personality": "温和，机敏",
        "scenario": "雨夜，{{user}}走进茶馆。",
        "first_mes": "（林晓放下茶壶）「客官，要喝点什么？」",
        "mes_example": "",
        "system_prompt": "用中文回答。",
    }


def pygmalion() -> dict[str, Any]:
    return {
        "char_name": "Ann",
        "char_persona": "A baker who hears every rumour first.",
        "char_greeting": "Fresh bread! And fresher news.",
        "world_scenario": "",
        "example_dialogue": "You: hi\nAnn: hi, dear",
    }


OOBA_YAML = (
    "name: Chiharu\n"
    "greeting: |-\n"
    "  Oh! You're the new tenant?\n"
    "  Come in, come in.\n"
    "context: |-\n"
    "  Chiharu's Persona: a landlady who knows the building's ghosts.\n"
)


def agnai_memory() -> dict[str, Any]:
    return {
        "kind": "memory",
        "name": "Owl Post",
        "description": "Memories of the owlery.",
        "is_creation": False,
        "scan_depth": 50,
        "token_budget": 500,
        "recursive_scanning": False,
        "extensions": {},
        "entries": [
            {
                "name": "0",
                "entry": "Owls carry the post at dawn.",
                "keywords": ["owl", "owlery"],
                "priority": 5,
                "weight": 2,
                "enabled": True,
                "keys": ["owl", "owlery"],
                "content": "Owls carry the post at dawn.",
                "insertion_order": 5,
                "case_sensitive": False,
                "id": 0,
                "comment": "",
                "selective": False,
                "secondary_keys": [],
                "constant": False,
                "position": 1,
            }
        ],
    }


def _novelai_entry(display: str, keys: list[str], text: str, **more: Any) -> dict[str, Any]:
    entry = {
        "text": text,
        "contextConfig": {
            "prefix": "",
            "suffix": "\n",
            "tokenBudget": 1,
            "reservedTokens": 0,
            "budgetPriority": 400,
            "trimDirection": "trimBottom",
            "insertionType": "newline",
            "maximumTrimType": "sentence",
            "insertionPosition": -1,
        },
        "lastUpdatedAt": 1690000000000,
        "displayName": display,
        "id": f"00000000-0000-4000-8000-{len(display):012d}",
        "keys": keys,
        "searchRange": 1000,
        "enabled": True,
        "forceActivation": False,
        "keyRelative": False,
        "nonStoryActivatable": False,
        "category": "",
        "loreBiasGroups": [
            {
                "phrases": [],
                "ensureSequenceFinish": False,
                "generateOnce": True,
                "bias": 0,
                "enabled": True,
                "whenInactive": False,
            }
        ],
    }
    entry.update(more)
    return entry


def novelai_v6() -> dict[str, Any]:
    """A NovelAI lorebook (version 6): categories with their own defaults, context
    settings per entry, advanced activation conditions, regex and plain keys."""
    category = "11111111-2222-4333-8444-555555555555"
    return {
        "lorebookVersion": 6,
        "entries": [
            _novelai_entry(
                "Elves",
                ["elf", "elves", "/\\bsilvan\\b/i"],
                "Elves are tall and remember everything.",
                category=category,
                contextConfig={
                    "prefix": "[",
                    "suffix": "]\n",
                    "tokenBudget": 1,
                    "reservedTokens": 0,
                    "budgetPriority": 500,
                    "trimDirection": "trimBottom",
                    "insertionType": "newline",
                    "maximumTrimType": "sentence",
                    "insertionPosition": -3,
                },
                advancedConditions=[{"type": "storyLength", "operator": ">", "value": 2000}],
            ),
            _novelai_entry(
                "World",
                [],
                "The world is a drowned archipelago.",
                forceActivation=True,
            ),
            _novelai_entry(
                "Katariah",
                ["Katariah|(|the )emp(ress|eror)"],
                "Katariah is the empress.",
                keyRelative=True,
                searchRange=4000,
                loreBiasGroups=[
                    {
                        "phrases": [{"sequence": "Katariah", "type": 0}],
                        "ensureSequenceFinish": True,
                        "generateOnce": False,
                        "bias": 0.5,
                        "enabled": True,
                        "whenInactive": False,
                    }
                ],
            ),
            _novelai_entry("Empty", [], ""),
        ],
        "settings": {"orderByKeyLocations": False},
        "categories": [
            {
                "name": "Peoples",
                "id": category,
                "enabled": True,
                "createSubcontext": True,
                "subcontextSettings": _novelai_entry("Peoples", [], "", displayName="Peoples"),
                "useCategoryDefaults": True,
                "categoryDefaults": _novelai_entry("", [], ""),
                "categoryBiasGroups": [],
            }
        ],
    }


def novelai_story() -> dict[str, Any]:
    return {
        "storyContainerVersion": 1,
        "metadata": {
            "storyMetadataVersion": 1,
            "id": "00000000-0000-4000-8000-000000000001",
            "title": "The Drowned Bell",
            "description": "A short story kept for its lorebook.",
            "createdAt": 1690000000000,
        },
        "content": {
            "storyContentVersion": 1,
            "settings": {"parameters": {"temperature": 0.8}},
            "story": {
                "version": 1,
                "text": "",
                "fragments": [
                    {"data": "The bell rang under the water. "},
                    {"data": "You listened."},
                ],
            },
            "context": [
                {"text": "The bell is cursed.", "contextConfig": {"prefix": ""}},
                {"text": "[ Style: gothic ]", "contextConfig": {"insertionPosition": -4}},
            ],
            "lorebook": {
                "lorebookVersion": 1,
                "entries": [
                    {
                        "text": "The bell was cast from a sunken ship's hull.",
                        "contextConfig": {"prefix": "", "suffix": "\n"},
                        "lastUpdatedAt": 1690000000000,
                        "displayName": "The bell",
                        "keys": ["bell"],
                        "searchRange": 1000,
                        "enabled": True,
                        "forceActivation": False,
                    }
                ],
            },
            "storyContextConfig": {"prefix": "", "suffix": ""},
        },
    }


def novelai_scenario() -> dict[str, Any]:
    return {
        "scenarioVersion": 1,
        "title": "The Ninth Clause",
        "description": "A scenario with placeholders.",
        "prompt": "You are ${Name[Wren]:Your name}, a ${Job[clerk]:Your trade} of the Salt Compact.",
        "tags": ["mystery"],
        "context": [{"text": "The Compact is older than the town."}, {"text": "[ Tone: dry ]"}],
        "ephemeralContext": [{"text": "A bell rings.", "startingStep": 5}],
        "placeholders": [
            {
                "key": "Name",
                "description": "Your name",
                "defaultValue": "Wren",
                "longDescription": "",
            },
            {
                "key": "Job",
                "description": "Your trade",
                "defaultValue": "clerk",
                "longDescription": "",
            },
        ],
        "settings": {"parameters": {}},
        "lorebook": novelai_v6(),
        "author": "fixture",
        "storyContextConfig": {},
        "contextDefaults": {},
    }


def kobold_save() -> dict[str, Any]:
    return {
        "gamestarted": True,
        "prompt": "You are ${}, a courier in City 17.",
        "memory": "",
        "authorsnote": "[Writing style: terse] [Genre: dystopia]",
        "anotetemplate": "[Author's note: <|>]",
        "actions": [" You check the parcel.", " It ticks."],
        "actions_metadata": {},
        "worldinfo": [
            {
                "key": "city, City-17",
                "keysecondary": "",
                "content": "A grey city.",
                "comment": "",
                "folder": None,
                "num": 0,
                "init": True,
                "selective": False,
                "constant": False,
                "uid": 1,
            },
            {
                "key": "(combine|overwatch)s?",
                "content": "The occupiers.",
                "comment": "Combine",
                "selective": False,
                "constant": False,
            },
            {
                "key": "courier",
                "keysecondary": "parcel, package",
                "selective": True,
                "content": "Couriers are watched.",
                "constant": False,
            },
        ],
        "wifolders_d": {},
        "wifolders_l": [],
    }


def kobold_world_info_list() -> list[dict[str, Any]]:
    """A bare KoboldAI world-info list, as KoboldAI Lite exports it."""
    return [
        {"key": "tavern, inn", "content": "The Gull's Rest serves eel pie."},
        {
            "key": "harbourmaster",
            "keysecondary": "bell",
            "keyanti": "",
            "content": "The harbourmaster rings the bell.",
            "comment": "Harbourmaster",
            "folder": None,
            "selective": True,
            "constant": False,
            "probability": 80,
            "useprobability": True,
        },
        {"key": "", "content": "Fog every morning.", "constant": True},
    ]


def _aid_card(title: str, keys: str, value: str, kind: str = "character") -> dict[str, Any]:
    return {
        "id": str(sum(map(ord, title))),
        "type": kind,
        "keys": keys,
        "value": value,
        "title": title,
        "useForCharacterCreation": kind == "class",
        "description": f"Notes on {title}.",
        "updatedAt": "2024-05-01T10:00:00.000Z",
        "deletedAt": None,
        "__typename": "StoryCard",
    }


def _aid_scenario() -> dict[str, Any]:
    return {
        "id": "100200300",
        "contentType": "scenario",
        "createdAt": "2024-05-01T10:00:00.000Z",
        "editedAt": "2024-05-02T10:00:00.000Z",
        "publicId": "0b5c7c9e-0000-4000-8000-000000000001",
        "shortId": "AbCdEf",
        "title": "The Salt Compact",
        "description": "Choose where your story starts.",
        "prompt": "You are ${Enter your name}, ${Enter your age} years old, standing on the quay.",
        "memory": "The Compact binds every harbour.",
        "authorsNote": "[Genre: maritime mystery]",
        "isOwner": True,
        "published": False,
        "unlisted": False,
        "tags": ["sea", "mystery"],
        "thirdPerson": False,
        "nsfw": None,
        "contentRating": "Everyone",
        "type": "multipleChoice",
        "details": {
            "instructions": {
                "type": "custom",
                "custom": "Keep the sea menacing.",
                "scenario": None,
            },
            "storyCardInstructions": "Write cards for ships.",
            "storyCardStoryInformation": "",
        },
        "options": [
            {
                "id": "1",
                "userId": "9",
                "shortId": "Opt1",
                "title": "A sailor",
                "prompt": "You haul rope on the Gull.",
                "parentScenarioId": None,
                "deletedAt": None,
                "__typename": "Scenario",
            },
            {
                "id": "2",
                "userId": "9",
                "shortId": "Opt2",
                "title": "A clerk",
                "prompt": "You copy the ninth clause by lamplight.",
                "parentScenarioId": None,
                "deletedAt": None,
                "__typename": "Scenario",
            },
        ],
        "storyCards": [
            _aid_card("Harbourmaster Vell", "Vell, harbourmaster", "Vell rings the storm bell."),
            _aid_card("Sailor", "sailor", "A sailor's life.", "class"),
            _aid_card("The Gull", "Gull, ship", "A leaky brig.", "location"),
        ],
        "__typename": "Scenario",
    }


def aid_scenario_data() -> dict[str, Any]:
    """AI Dungeon's answer for one scenario (`data.scenario`), as exporters save it."""
    return {"data": {"scenario": _aid_scenario()}}


def aid_scenario_single() -> dict[str, Any]:
    """The same scenario object alone."""
    return _aid_scenario()


def aid_adventure_data() -> dict[str, Any]:
    """An AI Dungeon adventure (a played story) with its state."""
    return {
        "data": {
            "adventure": {
                "id": "555",
                "publicId": "0b5c7c9e-0000-4000-8000-000000000002",
                "shortId": "XyZ",
                "scenarioId": "100200300",
                "title": "The Compact, played",
                "description": "",
                "tags": [],
                "contentType": "adventure",
                "memory": "You are Wren, a clerk.",
                "authorsNote": "Writing style: spare.",
                "thirdPerson": False,
                "actionWindow": [
                    {
                        "id": "1",
                        "text": "You stand on the quay.",
                        "type": "start",
                        "undoneAt": None,
                        "deletedAt": None,
                    },
                    {
                        "id": "2",
                        "text": "\n> You ask about the bell.\n",
                        "type": "do",
                        "undoneAt": None,
                        "deletedAt": None,
                    },
                    {
                        "id": "3",
                        "text": " The harbourmaster frowns.",
                        "type": "continue",
                        "undoneAt": None,
                        "deletedAt": None,
                    },
                    {
                        "id": "4",
                        "text": " (undone)",
                        "type": "continue",
                        "undoneAt": "2024-05-01T10:00:00.000Z",
                        "deletedAt": None,
                    },
                    {
                        "id": "5",
                        "text": "\n> 你问：钟是谁敲的？\n",
                        "type": "say",
                        "undoneAt": None,
                        "deletedAt": None,
                    },
                ],
                "storyCards": [_aid_card("Vell", "Vell", "Vell is tired.")],
                "__typename": "Adventure",
            },
            "adventureState": {
                "id": "555",
                "details": {
                    "instructions": {"type": "default"},
                    "storyCardInstructions": "",
                    "storyCardStoryInformation": "",
                    "storySummary": "Wren arrived and asked about the bell.",
                },
                "__typename": "Adventure",
            },
        }
    }


def aid_scenarios_2021() -> list[dict[str, Any]]:
    """An owner's 2021 scenario dump: a menu whose options are sub-scenarios."""
    return [
        {
            "id": "1",
            "publicId": "u-1",
            "title": "Realm",
            "description": "Pick a class.",
            "tags": [],
            "memory": "",
            "authorsNote": "[Genre: fantasy]",
            "prompt": "Choose: ${Choose a class: knight, mage}",
            "worldInfo": None,
            "published": False,
            "mode": "creative",
            "quests": [],
            "isOwner": True,
            "isOption": False,
            "options": [
                {
                    "id": "2",
                    "publicId": "u-2",
                    "title": "Knight",
                    "description": None,
                    "tags": [],
                    "memory": "You are ${Enter your name}.",
                    "authorsNote": "",
                    "prompt": "You are ${Enter your name}, a knight aged ${Enter your age}.",
                    "worldInfo": [
                        {
                            "id": "0.745118808720757",
                            "keys": "sword, blade",
                            "entry": "Your sword is old.",
                            "hidden": False,
                        }
                    ],
                }
            ],
        }
    ]


def aid_scenarios_story_cards() -> list[dict[str, Any]]:
    """A later dump whose scenarios carry `storyCards` instead of `worldInfo`."""
    return [
        {
            "id": "7",
            "publicId": "u-7",
            "title": "Katariah's Court",
            "description": "",
            "tags": [],
            "memory": "The court is restless.",
            "authorsNote": "",
            "prompt": "The empress summons you.",
            "storyCards": [
                {
                    "keys": "Katariah|(|the )emp(ress|eror)",
                    "value": "Katariah rules.",
                    "type": "character",
                    "title": "Katariah",
                    "description": "",
                    "useForCharacterCreation": False,
                }
            ],
        }
    ]


def aid_story_cards() -> list[dict[str, Any]]:
    """AI Dungeon's own story-card export."""
    return [
        {
            "keys": "Vell,harbourmaster",
            "value": "Vell rings the bell.",
            "type": "character",
            "title": "Vell",
            "description": "",
            "useForCharacterCreation": False,
        },
        {
            "keys": "Gull",
            "value": "A leaky brig.",
            "type": "location",
            "title": "The Gull",
            "description": "Notes",
            "useForCharacterCreation": False,
        },
    ]


def aid_world_info_ewi() -> list[dict[str, Any]]:
    """Legacy world info written for the EWI script: regex-like keys with directives."""
    return [
        {
            "id": "0.1",
            "keys": "(isekaid|(innkeeper of the |)bloated goat( innkeeper|))#[t=5l=5f=2S=2]",
            "entry": "The innkeeper of the Bloated Goat is kind.",
            "hidden": False,
        },
        {
            "id": "0.2",
            "keys": "(innkeeper|bloated goat)",
            "entry": "The inn smells of ale.",
            "hidden": False,
        },
        {"id": "0.3", "keys": "#[t=1]", "entry": "", "hidden": False},
    ]


def lorebook_v3() -> dict[str, Any]:
    """A standalone V3 lorebook (`spec: lorebook_v3`)."""
    return {
        "spec": "lorebook_v3",
        "data": {
            "name": "Tides",
            "description": "Tide lore.",
            "extensions": {},
            "entries": [
                {
                    "keys": ["spring tide"],
                    "content": "Spring tides flood the road.",
                    "extensions": {},
                    "enabled": True,
                    "insertion_order": 1,
                    "use_regex": False,
                    "constant": False,
                }
            ],
        },
    }


def documents() -> dict[str, tuple[str, Any]]:
    """Every JSON fixture: name → (file name, value)."""
    return {
        "card_v2": ("card_v2_st_export.json", card_v2()),
        "card_v3": ("card_v3.json", card_v3()),
        "card_js_templates": ("洛琪希_card_js_templates.json", card_js_templates()),
        "card_risu": ("card_risu_cbs.json", card_risu()),
        "card_v1": ("card_v1.json", card_v1()),
        "card_v1_cjk_flat": ("林晓_v1_flat.json", card_v1_cjk_flat()),
        "pygmalion": ("pygmalion.json", pygmalion()),
        "world_info_2024": ("world_info_2024.json", world_info_2024()),
        "world_info_2023": ("world_info_2023.json", world_info_2023()),
        "world_info_chub": ("world_info_chub_hybrid.json", world_info_chub_hybrid()),
        "lorebook_v3": ("lorebook_v3.json", lorebook_v3()),
        "agnai": ("agnai_memory.json", agnai_memory()),
        "novelai_v6": ("novelai_v6.lorebook", novelai_v6()),
        "novelai_story": ("novelai.story", novelai_story()),
        "novelai_scenario": ("novelai.scenario", novelai_scenario()),
        "kobold_save": ("koboldai_save.json", kobold_save()),
        "kobold_world_info": ("koboldai_world_info.json", kobold_world_info_list()),
        "aid_scenario_data": ("aid_scenario_data.json", aid_scenario_data()),
        "aid_scenario_single": ("aid_scenario_single.json", aid_scenario_single()),
        "aid_adventure_data": ("aid_adventure_data.json", aid_adventure_data()),
        "aid_scenarios_2021": ("aid_scenarios_2021.json", aid_scenarios_2021()),
        "aid_scenarios_story_cards": (
            "aid_scenarios_story_cards.json",
            aid_scenarios_story_cards(),
        ),
        "aid_story_cards": ("aid_story_cards.json", aid_story_cards()),
        "aid_world_info_ewi": ("aid_world_info_ewi.json", aid_world_info_ewi()),
    }


# --- containers ---------------------------------------------------------------------------


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def make_png(texts: list[tuple[str, str]], before_idat: bool = False, noise: bytes = b"") -> bytes:
    """A 2×2 grey PNG with tEXt chunks before or after the image data (both occur), and an
    optional private chunk of raw bytes (real images carry bytes of every value)."""
    header = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 0, 0, 0, 0))
    idat = png_chunk(b"IDAT", zlib.compress(b"\x00\x80\x80" * 2))
    text = b"".join(png_chunk(b"tEXt", k.encode() + b"\x00" + v.encode()) for k, v in texts)
    extra = png_chunk(b"prVt", noise) if noise else b""
    middle = text + extra + idat if before_idat else extra + idat + text
    return b"\x89PNG\r\n\x1a\n" + header + middle + png_chunk(b"IEND", b"")


def b64(card: Any) -> str:
    return base64.b64encode(json.dumps(card, ensure_ascii=False).encode()).decode()


BRACKETS = b"[{" * 300 + bytes(range(256))  # what a real image's compressed bytes can hold


def make_charx(card: dict[str, Any], extra: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in {
            "card.json": json.dumps(card, ensure_ascii=False).encode(),
            **extra,
        }.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 5, 1, 0, 0, 0))
            info.compress_type = (
                zipfile.ZIP_STORED if name.endswith(".png") else zipfile.ZIP_DEFLATED
            )
            archive.writestr(info, data)
    return buffer.getvalue()


def files() -> dict[str, bytes]:
    """Every fixture as uploaded: file name → bytes."""
    found = {
        filename: json.dumps(value, ensure_ascii=False, indent=1).encode()
        for filename, value in documents().values()
    }
    v2, v3 = card_v2(), card_v3()
    found["card_v3_both_chunks.png"] = make_png(
        [("Title", "Mira"), ("chara", b64(v2)), ("ccv3", b64(v3))], before_idat=True, noise=BRACKETS
    )
    found["card_v3_in_chara_chunk.png"] = make_png([("chara", b64(v3))], noise=BRACKETS)
    found["card_v2_chara.png"] = make_png([("chara", b64(v2))])
    found["card_v1.png"] = make_png([("chara", b64(card_v1()))])
    icon = make_png([], noise=BRACKETS)
    found["card_risu.charx"] = make_charx(
        card_risu(),
        {
            "assets/icon/images/main.png": icon,
            "module.risum": b"\x00RISUM" + BRACKETS,
            "x_meta/main.json": b"{}",
        },
    )
    found["ooba_character.yaml"] = OOBA_YAML.encode()
    return dict(sorted(found.items()))


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    wanted = files()
    for old in folder.iterdir():
        if old.is_file() and old.name not in wanted and old.name != "README.md":
            old.unlink()
    for name, data in wanted.items():
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER)
