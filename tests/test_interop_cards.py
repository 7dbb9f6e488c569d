"""Importing what players own: character cards (JSON, PNG, CHARX), lorebooks and other
apps' files become scenarios with a report, reviewed before saving; hostile files are
refused with a reason and nothing written; a scenario exported as a Character Card V3
comes back the same. Fixtures are written here from the specs (never copied from the corpus)."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
import zlib

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.interop.containers import Refused
from talekeeper.interop.detect import convert
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.service.scenarios import check_scenario
from tests.interop_helpers import row_counts

# --- fixtures from the specs -------------------------------------------------------------


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def make_png(texts: list[tuple[str, str]], before_idat: bool = False) -> bytes:
    """A 2×2 grey PNG with tEXt chunks before or after the image data (both occur)."""
    header = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 0, 0, 0, 0))
    idat = png_chunk(b"IDAT", zlib.compress(b"\x00\x80\x80" * 2))
    text = b"".join(png_chunk(b"tEXt", k.encode() + b"\x00" + v.encode()) for k, v in texts)
    middle = text + idat if before_idat else idat + text
    return b"\x89PNG\r\n\x1a\n" + header + middle + png_chunk(b"IEND", b"")


def b64(card: dict) -> str:
    return base64.b64encode(json.dumps(card).encode()).decode()


def v2_card(**overrides) -> dict:
    data = {
        "name": "Mira",
        "description": "{{char}} is a lighthouse keeper who talks to gulls.\r\nShe distrusts {{user}} at first.",
        "personality": "wry, patient",
        "scenario": "A storm strands {{user}} at {{char}}'s lighthouse.",
        "first_mes": "*{{char}} lowers her lantern.* Who sent you out in this, {{user}}?",
        "mes_example": "<START>\n{{user}}: Hello.\n{{char}}: Hm.",
        "creator_notes": "A quiet card. <b>bold</b>",
        "system_prompt": "Write as {{char}}. {{original}}",
        "post_history_instructions": "Keep replies short.",
        "alternate_greetings": ["The lamp gutters. {{char}} turns to you."],
        "tags": ["coastal", "slow burn"],
        "creator": "someone",
        "character_version": "v2",
        "extensions": {
            "depth_prompt": {"prompt": "Mira smells of salt.", "depth": 4},
            "fav": False,
            "world": "Coast",
        },
        "character_book": {
            "name": "Coast",
            "scan_depth": 5,
            "entries": [
                {
                    "keys": ["Old Harbor", "harbour"],
                    "content": "The old harbor silted up ten years ago.",
                    "enabled": True,
                    "insertion_order": 10,
                    "comment": "Harbor",
                    "secondary_keys": ["boat"],
                    "selective": True,
                },
                {
                    "keys": [""],
                    "content": "Always: it is raining.",
                    "enabled": True,
                    "constant": True,
                    "insertion_order": 1,
                },
                {
                    "keys": ["ghost"],
                    "content": "There is no ghost.",
                    "enabled": False,
                    "insertion_order": 2,
                },
                {
                    "keys": ["/gulls?|terns?/i"],
                    "content": "{{char}} names every gull.",
                    "enabled": True,
                    "insertion_order": 3,
                },
            ],
        },
    }
    data.update(overrides)
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def one(raw: bytes, name: str = "file"):
    results = convert(raw, name)
    assert len(results) == 1
    result = results[0]
    assert check_scenario({**result.document, "id": "check"}) == []
    return result


def report_of(result, status: str) -> str:
    return " | ".join(
        f"{e['field']}: {e['detail']}" for e in result.report if e["status"] == status
    )


# --- cards ----------------------------------------------------------------------------


def test_v2_card_maps_to_a_scenario_with_a_report() -> None:
    result = one(json.dumps(v2_card()).encode(), "mira.json")
    doc = result.document
    assert result.format == "Character Card V2"
    assert doc["title"] == "Mira"
    assert doc["opening"] == "*Mira lowers her lantern.* Who sent you out in this, ${name}?"
    assert "\r" not in json.dumps(doc)
    assert doc["placeholders"][0]["key"] == "name"
    assert [o["id"] for o in doc["origins"]] == ["greeting-1", "greeting-2"]
    assert doc["origins"][1]["opening"] == "The lamp gutters. Mira turns to you."
    assert doc["plot_essentials"].startswith("Mira: Mira is a lighthouse keeper")
    assert any(
        c.get("constant") and c["entry"] == "Always: it is raining." for c in doc["story_cards"]
    )
    assert doc["author_note"] == "Mira smells of salt."
    assert (
        "Write as Mira." in doc["narrator_instructions"]
        and "{{original}}" not in doc["narrator_instructions"]
    )
    assert doc["rules"]["entities"][0] == {
        "id": "mira",
        "name": "Mira",
        "type": "person",
        "description": doc["rules"]["entities"][0]["description"],
    }
    cards = {c["name"]: c for c in doc["story_cards"]}
    assert cards["Harbor"]["triggers"] == "Old Harbor, harbour"
    assert cards["Harbor"]["secondary_triggers"] == "boat" and cards["Harbor"]["order"] == 10
    assert cards["ghost"]["enabled"] is False  # disabled entries stay, disabled
    gull = next(c for c in doc["story_cards"] if "gull" in c["triggers"])
    assert gull["triggers"] == "/gulls?|terns?/i" and gull["entry"] == "Mira names every gull."
    dropped = report_of(result, "dropped")
    assert "World Info file “Coast”" in dropped and "character_version, creator" in dropped
    approximated = report_of(result, "approximated")
    assert "post_history_instructions" in approximated and "HTML" in approximated


def test_png_card_prefers_ccv3_and_reads_chunks_anywhere() -> None:
    v3 = {**v2_card(), "spec": "chara_card_v3", "spec_version": "3.0"}
    v3["data"] = {
        **v3["data"],
        "name": "Mira Three",
        "nickname": "M",
        "assets": [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}],
    }
    for before in (False, True):
        png = make_png(
            [("Title", "x"), ("chara", b64(v2_card())), ("ccv3", b64(v3))], before_idat=before
        )
        result = one(png, "card.png")
        assert result.document["title"] == "Mira Three" and "'ccv3' chunk" in result.format
        assert "nickname" in report_of(result, "dropped") and "assets" in report_of(
            result, "dropped"
        )
    # A `chara` chunk may hold a V3 card: the spec inside decides, not the chunk's name.
    result = one(make_png([("chara", b64(v3))]), "card.png")
    assert result.format.startswith("Character Card V3")


def test_v1_pygmalion_and_yaml_characters() -> None:
    v1 = {
        "name": "Old Tom",
        "description": "A ferryman.",
        "personality": "",
        "scenario": "",
        "first_mes": "Fare's a coin, <USER>.",
        "mes_example": "",
    }
    result = one(make_png([("chara", b64(v1))]), "tom_v2.png")
    assert (
        result.format.startswith("Character Card V1")
        and result.document["opening"] == "Fare's a coin, ${name}."
    )
    pyg = {
        "char_name": "Ann",
        "char_persona": "A baker.",
        "char_greeting": "Fresh bread!",
        "world_scenario": "",
        "example_dialogue": "You: hi\nAnn: hi",
    }
    assert one(json.dumps(pyg).encode()).document["opening"] == "Fresh bread!"
    yaml = b"name: Ann\ngreeting: |-\n  Fresh bread!\n  Still warm.\ncontext: |-\n  Ann's Persona: a baker.\n"
    result = one(yaml, "ann.yaml")
    assert (
        result.document["opening"] == "Fresh bread!\nStill warm."
        and "a baker" in result.document["plot_essentials"]
    )


def _charx(card: dict, extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("card.json", json.dumps(card))
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_charx_with_guards() -> None:
    v3 = {**v2_card(), "spec": "chara_card_v3", "spec_version": "3.0"}
    result = one(_charx(v3, {"assets/main.png": make_png([])}), "mira.charx")
    assert result.format == "Character Card V3 (CHARX)" and "1 files in the archive" in report_of(
        result, "dropped"
    )
    with pytest.raises(Refused, match="outside the archive"):
        convert(_charx(v3, {"../../etc/evil": b"x"}), "evil.charx")
    with pytest.raises(Refused, match="zip bomb"):
        convert(_charx(v3, {"assets/bomb.bin": b"\x00" * (200 * 1024 * 1024)}), "bomb.charx")
    with pytest.raises(Refused, match="no card.json"):
        convert(_charx(v3)[:0] + _zip_without_card(), "x.charx")


def _zip_without_card() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hi")
    return buffer.getvalue()


HOSTILE = {
    "bad base64": lambda: make_png([("chara", "!!!not base64!!!")]),
    "base64 of nonsense": lambda: make_png(
        [("chara", base64.b64encode(b"\xff\xfe nope").decode())]
    ),
    "truncated PNG": lambda: make_png([("chara", b64(v2_card()))])[:-30],
    "PNG with a bad CRC": lambda: (
        make_png([("chara", b64(v2_card()))])[:-5] + b"\x00\x00\x00\x00\x00"
    ),
    "image without a card": lambda: make_png([("Title", "just a picture")]),
    "broken zip": lambda: _charx(v2_card())[:60],
    "JSON bomb (nesting)": lambda: b"[" * 200_000 + b"]" * 200_000,
    "JSON bomb (width)": lambda: json.dumps(
        {"entries": {str(i): {"key": ["a"], "content": "b"} for i in range(150_000)}}
    ).encode(),
    "5 MB of noise": lambda: bytes((i * 7919) % 251 for i in range(5 * 1024 * 1024)),
    "5 MB field": lambda: json.dumps(v2_card(description="x" * (5 * 1024 * 1024))).encode(),
    "wrong types": lambda: json.dumps(
        {"spec": "chara_card_v2", "data": {"name": 5, "first_mes": ["a"]}}
    ).encode(),
    "truncated JSON": lambda: json.dumps(v2_card()).encode()[:300],
    "unknown JSON": lambda: b'{"hello": "world"}',
    "a bare number": lambda: b"42",
    "40 MB": lambda: b" " * (40 * 1024 * 1024),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_files_are_refused_with_a_reason(
    client: TestClient, tk: Talekeeper, name: str
) -> None:
    raw = HOSTILE[name]()
    before = row_counts(tk)
    response = client.post("/api/interop/import", params={"filename": "upload"}, content=raw)
    assert response.status_code in (413, 422), (name, response.status_code, response.text[:300])
    detail = response.json()["detail"]
    assert isinstance(detail, str) and len(detail) > 20
    assert row_counts(tk) == before


# --- lorebooks and other formats --------------------------------------------------------


def test_world_info_generations_and_hybrids() -> None:
    minimal = {
        "entries": {
            "0": {
                "uid": 0,
                "key": ["castle"],
                "keysecondary": [],
                "comment": "Castle",
                "content": "{{user}} sees a castle.",
                "constant": False,
                "selective": False,
                "order": 100,
                "position": 0,
                "disable": False,
            }
        }
    }
    result = one(json.dumps(minimal).encode(), "w.json")
    assert result.format == "SillyTavern World Info"
    assert result.document["story_cards"][0]["entry"] == "${name} sees a castle."
    hybrid = {
        "name": "Book",
        "scan_depth": 50,
        "token_budget": 500,
        "recursive_scanning": False,
        "entries": {
            "1": {
                "uid": 0,
                "key": ["Moon", ""],
                "keys": ["Moon", ""],
                "keysecondary": [],
                "secondary_keys": [],
                "content": "The moon is red.",
                "constant": False,
                "disable": True,
                "enabled": False,
                "order": 5,
                "insertion_order": 5,
                "position": 1,
            },
            "2": {
                "uid": 1,
                "key": ["Sun"],
                "content": "The sun is cold.",
                "constant": False,
                "disable": False,
                "sticky": None,
                "cooldown": 0,
                "probability": 50,
                "useProbability": True,
                "group": "sky",
            },
            "3": {
                "uid": 2,
                "key": [],
                "content": "Append [wx: weather] to every reply.",
                "constant": True,
                "disable": False,
            },
        },
    }
    result = one(json.dumps(hybrid).encode(), "book.json")
    moon, sun, wx = result.document["story_cards"]
    assert (
        moon["triggers"] == "Moon"
        and moon["enabled"] is False
        and moon.get("position", "after_history") == "after_history"  # the default: may be left out
    )
    assert moon["order"] == 5
    assert sun["probability"] == 50 and sun["group"] == "sky" and "sticky" not in sun  # null: unset
    assert wx["constant"] is True and wx["triggers"] == ""
    assert "scan_depth, token_budget" in report_of(result, "dropped")


def test_ai_dungeon_kobold_novelai_agnai() -> None:
    aid = [
        {
            "id": "1",
            "publicId": "u",
            "title": "Realm",
            "description": "Pick a class.",
            "tags": [],
            "memory": "",
            "authorsNote": "[Genre: fantasy]",
            "prompt": "Choose: ${Choose a class: knight, mage}",
            "worldInfo": None,
            "options": [
                {
                    "id": "2",
                    "publicId": "v",
                    "title": "Knight",
                    "description": None,
                    "tags": [],
                    "memory": "You are ${Enter your name}.",
                    "authorsNote": "",
                    "prompt": "You are ${Enter your name}, a knight aged ${Enter your age}.",
                    "worldInfo": [
                        {
                            "id": "0.5",
                            "keys": "sword, blade",
                            "entry": "Your sword is old.",
                            "hidden": False,
                        }
                    ],
                },
            ],
        }
    ]
    result = one(json.dumps(aid).encode(), "aid.json")
    doc = result.document
    assert [p["key"] for p in doc["placeholders"]] == ["name", "q1", "q2"]
    assert (
        doc["opening"] == "Choose: ${q1}"
        and doc["origins"][0]["opening"] == "You are ${name}, a knight aged ${q2}."
    )
    assert doc["story_cards"][0]["triggers"] == "sword, blade"
    wi = [
        {
            "id": "9.1",
            "keys": "(innkeeper|bloated goat)#[t=5]",
            "entry": "The innkeeper is kind.",
            "hidden": False,
        },
        {"id": "9.2", "keys": "#[t=1]", "entry": "", "hidden": False},
    ]
    result = one(json.dumps(wi).encode(), "wi.json")
    assert result.document["story_cards"][0]["triggers"] == "innkeeper, bloated goat"
    assert "directives" in report_of(result, "approximated") and "no text" in report_of(
        result, "dropped"
    )
    kobold = {
        "gamestarted": True,
        "prompt": "You are ${}.",
        "memory": "",
        "authorsnote": "[Writing style: terse]",
        "actions": [" You wait."],
        "worldinfo": [{"key": "city, City-17", "content": "A grey city."}],
    }
    result = one(json.dumps(kobold).encode(), "save.json")
    assert (
        result.document["opening"] == "You are ${q1}. You wait."
        and result.document["story_cards"][0]["triggers"] == "city, City-17"
    )
    nai = {
        "lorebookVersion": 4,
        "entries": [
            {
                "text": "Elves are tall.",
                "displayName": "Elves",
                "keys": ["elf", "elves"],
                "enabled": True,
                "forceActivation": False,
            },
            {},
        ],
        "categories": [],
    }
    result = one(json.dumps(nai).encode(), "x.lorebook")
    assert result.document["story_cards"][0]["name"] == "Elves" and "empty objects" in report_of(
        result, "dropped"
    )
    story = {
        "storyContainerVersion": 1,
        "metadata": {"title": "Tale"},
        "content": {
            "story": {"fragments": [{"data": "Once, "}, {"data": "there was rain."}]},
            "context": [{"text": "Memory text"}, {"text": "[Style: grim]"}],
            "lorebook": {"lorebookVersion": 1, "entries": []},
        },
    }
    result = one(json.dumps(story).encode(), "x.story")
    assert (
        result.document["opening"] == "Once, there was rain."
        and result.document["author_note"] == "[Style: grim]"
    )
    scenario = {
        "scenarioVersion": 1,
        "title": "Novel",
        "prompt": "p" * 30000,
        "context": [{"text": "m"}],
        "lorebook": {"entries": []},
        "placeholders": [],
    }
    result = one(json.dumps(scenario).encode(), "x.scenario")
    assert len(result.document["opening"]) == 20000 and "30,000 characters" in report_of(
        result, "approximated"
    )
    agnai = {
        "kind": "memory",
        "name": "Lore",
        "entries": [
            {
                "name": "0",
                "entry": "Owls carry post.",
                "keywords": ["owl"],
                "priority": 1,
                "weight": 0,
                "enabled": True,
            }
        ],
    }
    result = one(json.dumps(agnai).encode(), "agnai.json")
    assert (
        result.format == "Agnai memory book"
        and result.document["story_cards"][0]["triggers"] == "owl"
    )


def test_look_alikes_are_refused() -> None:
    with pytest.raises(Refused, match="scripting-sandbox"):
        convert(json.dumps({"state": {"memory": {}}, "worldEntries": [], "history": []}).encode())
    with pytest.raises(Refused, match="table dump"):
        convert(json.dumps({"title": {"0": "a"}, "summary": {"0": "b"}}).encode())
    with pytest.raises(Refused, match="does not recognise"):
        convert(json.dumps([{"Park": {"description": "a park"}}]).encode())


# --- the review step, end to end ----------------------------------------------------------


def test_png_card_imports_after_review_and_plays(
    client: TestClient, tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    png = make_png([("chara", b64(v2_card(creator_notes="<script>alert(1)</script> notes")))])
    before = row_counts(tk)
    preview = client.post("/api/interop/import", params={"filename": "mira.png"}, content=png)
    assert preview.status_code == 200, preview.text
    assert row_counts(tk) == before  # the preview saves nothing
    item = preview.json()["items"][0]
    assert item["errors"] == [] and item["report"]
    saved = client.post("/api/interop/save", json={"scenario": item["scenario"]})
    assert saved.status_code == 201, saved.text
    scenario_id = saved.json()["id"]
    started = client.post(
        "/api/adventures",
        json={"scenario_id": scenario_id, "answers": {"name": "Ada"}, "origin_id": "greeting-1"},
    )
    assert started.status_code == 201, started.text
    story = started.json()
    assert (
        story["turns_shown"][0]["narration"]
        == "*Mira lowers her lantern.* Who sent you out in this, Ada?"
    )
    scripted.queue("You walk down to the old harbor.")
    turn = client.post(
        f"/api/adventures/{story['id']}/turns",
        json={"kind": "do", "text": "ask about the old harbor"},
    )
    assert turn.status_code == 200
    insights = client.get(
        f"/api/adventures/{story['id']}/turns/{turn.json()['turn']['id']}/insights"
    ).json()
    # The constant entry is always there; "tern" (/gulls?|terns?/i) matches inside "lantern".
    assert {"Harbor", "entry 1", "/gulls?|terns?/i"} <= {
        i["key"] for i in insights["triggered_cards"]
    }
    # The review page shows markup as text.
    page = client.post("/interop/import", files={"file": ("mira.png", png, "image/png")})
    assert page.status_code == 200
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>alert(1)" not in page.text
    )
    done = client.post(
        "/interop/save", data={"document": json.dumps(item["scenario"])}, follow_redirects=False
    )
    assert done.status_code == 303
    refused = client.post(
        "/interop/import", files={"file": ("x.png", b"\x89PNG\r\n\x1a\nbroken", "image/png")}
    )
    assert refused.status_code == 422 and 'id="card-error"' in refused.text


# --- CCv3 export ------------------------------------------------------------------------------


def test_scenario_exports_as_ccv3_and_comes_back_the_same(client: TestClient) -> None:
    original = client.get("/api/scenarios/greywater-lantern").json()["data"]
    png = client.get("/api/scenarios/greywater-lantern/card.png")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    card = client.get("/api/scenarios/greywater-lantern/card.json").json()
    assert card["spec"] == "chara_card_v3" and card["data"]["first_mes"].startswith("Rain needles")
    assert len(card["data"]["character_book"]["entries"]) == len(original["story_cards"])
    assert "{{user}}" in card["data"]["first_mes"]
    for raw in (png.content, json.dumps(card).encode()):
        result = one(raw, "greywater")
        assert result.exact and result.document == original
    # Another tool reading only the standard fields still gets a playable scenario.
    del card["data"]["extensions"]["talekeeper"]
    result = one(json.dumps(card).encode(), "greywater.json")
    assert result.document["opening"] == original["opening"]
    assert [c["triggers"] for c in result.document["story_cards"]] == [
        c["triggers"] for c in original["story_cards"]
    ]


TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60).filter(
    lambda s: s.strip() and "${" not in s
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    title=TEXT,
    opening=TEXT,
    cards=st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=4),
    greetings=st.lists(TEXT, max_size=3),
)
def test_any_valid_scenario_round_trips_through_a_card(title, opening, cards, greetings) -> None:
    from talekeeper.interop.card_export import to_card, to_png

    scenario = {
        "id": "prop",
        "title": title,
        "opening": opening,
        "story_cards": [
            {
                "type": "other",
                "name": n,
                "entry": e,
                "triggers": t.replace(",", " ") + "x",
                "notes": "",
            }
            for n, e, t in cards
        ],
        "origins": [
            {"id": f"o{i}", "title": f"O{i}", "opening": g} for i, g in enumerate(greetings)
        ],
    }
    if check_scenario(scenario):
        return
    result = one(to_png(to_card(scenario)), "p.png")
    assert result.document == scenario


# --- anything at all -------------------------------------------------------------------------

JSONS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "spec",
                    "data",
                    "name",
                    "first_mes",
                    "entries",
                    "keys",
                    "key",
                    "content",
                    "character_book",
                    "kind",
                    "lorebookVersion",
                    "text",
                    "prompt",
                    "worldInfo",
                    "options",
                    "gamestarted",
                    "actions",
                    "worldinfo",
                    "storyContainerVersion",
                    "scenarioVersion",
                    "context",
                    "lorebook",
                    "alternate_greetings",
                    "extensions",
                    "depth_prompt",
                    "uid",
                    "constant",
                    "position",
                    "order",
                    "selectiveLogic",
                    "probability",
                    "char_name",
                    "publicId",
                    "entry",
                    "value",
                    "secondary_keys",
                    "enabled",
                    "disable",
                ]
            )
            | st.text(max_size=8),
            children,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(data=JSONS, spec=st.sampled_from([None, "chara_card_v2", "chara_card_v3"]))
def test_any_json_is_imported_validly_or_refused_in_words(data, spec) -> None:
    if spec and isinstance(data, dict):
        data = {**data, "spec": spec}
    for raw in (
        json.dumps(data).encode(),
        make_png([("chara", b64(data) if isinstance(data, dict) else "x")]),
    ):
        try:
            results = convert(raw, "fuzz")
        except Refused as exc:
            assert len(str(exc)) > 15
            continue
        for result in results:
            assert check_scenario({**result.document, "id": "fuzz"}) == [], result.document


@settings(max_examples=200, deadline=None)
@given(
    raw=st.binary(max_size=2000),
    prefix=st.sampled_from([b"", b"\x89PNG\r\n\x1a\n", b"PK\x03\x04", b"{", b"["]),
)
def test_any_bytes_are_refused_in_words_or_imported(raw, prefix) -> None:
    try:
        results = convert(prefix + raw, "fuzz")
    except Refused as exc:
        assert len(str(exc)) > 15
        return
    for result in results:
        assert check_scenario({**result.document, "id": "fuzz"}) == []


def test_lorebook_cards_can_be_added_to_a_scenario_of_yours(
    client: TestClient, tk: Talekeeper
) -> None:
    card = client.post(
        "/api/interop/import",
        params={"filename": "mira.json"},
        content=json.dumps(v2_card()).encode(),
    )
    mira = client.post(
        "/api/interop/save", json={"scenario": card.json()["items"][0]["scenario"]}
    ).json()
    world = {
        "entries": {
            "0": {
                "uid": 0,
                "key": ["Coast road"],
                "content": "The coast road floods at spring tide.",
                "constant": False,
                "disable": False,
            }
        }
    }
    preview = client.post(
        "/api/interop/import", params={"filename": "Coast.json"}, content=json.dumps(world).encode()
    ).json()
    lore = preview["items"][0]["scenario"]
    before = len(mira["data"]["story_cards"])
    added = client.post("/api/interop/save", json={"scenario": lore, "into": mira["id"]})
    assert added.status_code == 200 or added.status_code == 201, added.text
    assert added.json()["added"] == 1
    cards = client.get(f"/api/scenarios/{mira['id']}").json()["data"]["story_cards"]
    assert len(cards) == before + 1 and cards[-1]["triggers"] == "Coast road"
    counts = row_counts(tk)
    assert (
        client.post(
            "/api/interop/save", json={"scenario": lore, "into": "greywater-lantern"}
        ).status_code
        == 422
    )
    assert (
        client.post("/api/interop/save", json={"scenario": lore, "into": "no-such"}).status_code
        == 404
    )
    assert row_counts(tk) == counts
    page = client.post(
        "/interop/import",
        files={"file": ("Coast.json", json.dumps(world).encode(), "application/json")},
    )
    assert f'value="{mira["id"]}"' in page.text
    done = client.post(
        "/interop/save",
        data={"document": json.dumps(lore), "into": mira["id"]},
        follow_redirects=False,
    )
    assert done.status_code == 303 and done.headers["location"] == f"/scenarios/{mira['id']}"
    assert (
        len(client.get(f"/api/scenarios/{mira['id']}").json()["data"]["story_cards"]) == before + 2
    )
