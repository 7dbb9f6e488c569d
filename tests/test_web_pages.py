"""The web pages without a browser: change chips, the state panel and corrections, the story
map's tree of lines, settings, player words — and the scenario editor's service and API
(checked by path, built-ins read-only, import refused whole, export round trip)."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import scenarios, shipped_scenarios, story_map
from talekeeper.service.app import Talekeeper
from tests.conftest import DEMO

HX = {"HX-Request": "true"}


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


def play(
    client: TestClient,
    adventure_id: int,
    scripted: ScriptedProvider,
    reply: str,
    text: str = "look",
) -> dict:
    scripted.queue(reply)
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": text}
    )
    assert response.status_code == 200, response.text
    return response.json()


def visible(html: str) -> str:
    html = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


# --- chips (their words: tests/test_chip_words.py) ---------------------------------------------


def test_stored_turns_carry_their_chips(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(
        client,
        adventure_id,
        scripted,
        "Wind." + block({"type": "change_stat", "stat": "world.night", "by": -1}),
    )
    story = client.get(f"/api/adventures/{adventure_id}").json()
    assert story["turns_shown"][-1]["changes"][0]["status"] == "rejected"
    page = client.get(f"/adventures/{adventure_id}").text
    # the model's refusal is a muted count under the turn; Insights says what and why
    assert 'class="chip chip-rejected"' not in page and "world.night" not in page
    assert "1 of the model&#39;s changes was not applied" in page


# --- the state panel -----------------------------------------------------------------------------


def test_state_panel_groups_the_state(client: TestClient, adventure_id: int) -> None:
    panel = client.get(f"/adventures/{adventure_id}/state/panel").text
    text = visible(panel)
    assert 'data-stat="world.storm"' in panel and "a gale" in text
    assert re.search(r'<meter min="0" max="10" value="4"', panel)
    for words in (
        "Maren",
        "Greywater docks",
        "Obtain the brass key",
        "Relight the Greywater lantern",
        "hidden",
    ):
        assert words in text, words
    assert "☐ Obtain the brass key" in text


def test_a_correction_from_the_panel_is_a_step_of_the_story(
    client: TestClient, adventure_id: int
) -> None:
    answer = client.post(
        f"/adventures/{adventure_id}/state/correct",
        data={"kind": "change_stat", "stat": "world.storm", "by": "2"},
        headers=HX,
    )
    assert answer.headers["HX-Trigger"] == "story-changed"
    assert "Corrected" in answer.text and "Storm 4 → 6" in answer.text
    story = client.get(f"/api/adventures/{adventure_id}").json()
    assert story["turns_shown"][-1]["kind"] == "correction" and story["can_undo"]

    refused = client.post(
        f"/adventures/{adventure_id}/state/correct",
        data={"kind": "set_flag", "flag": "dragon", "value": "on"},
    )
    assert "HX-Trigger" not in refused.headers
    assert "Nothing was changed." in refused.text and "there is no flag" in visible(refused.text)
    # the deep one is within the length limit: the parser must never recurse into it
    for bad in ("[{", '"just text"', "x" * 20_001, "[" * 10_000 + "]" * 10_000):
        answer = client.post(
            f"/adventures/{adventure_id}/state/correct", data={"kind": "json", "events": bad}
        )
        assert "Nothing was changed." in answer.text and "HX-Trigger" not in answer.headers
    assert client.get(f"/api/adventures/{adventure_id}").json()["head_id"] == story["head_id"]
    audit = client.get(f"/adventures/{adventure_id}/insights/audit").text
    assert "your correction" in audit


# --- the story map ---------------------------------------------------------------------------------


def test_the_story_map_nests_each_line_under_the_one_it_left(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "One.", "one")
    play(client, adventure_id, scripted, "Two.", "two")
    client.post(f"/api/adventures/{adventure_id}/undo")
    play(client, adventure_id, scripted, "Other two.", "other two")
    for _ in range(2):
        client.post(f"/api/adventures/{adventure_id}/undo")
    play(client, adventure_id, scripted, "Other one.", "other one")
    lines = story_map.line_tree(tk, adventure_id).lines
    assert [(line.last_narration, line.level) for line in lines] == [
        ("Two.", 0),
        ("Other one.", 1),
        ("Other two.", 1),
    ]
    panel = client.get(f"/adventures/{adventure_id}/tree/lines").text
    assert panel.count("depth-1") == 2 and "Story map" in panel


# --- player words, settings -----------------------------------------------------------------------


def test_pages_use_player_words(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    turn = play(
        client,
        adventure_id,
        scripted,
        "The lamp." + block({"type": "change_stat", "stat": "world.storm", "by": 1}),
    )
    pages = [
        f"/adventures/{adventure_id}",
        f"/adventures/{adventure_id}/state/panel",
        f"/adventures/{adventure_id}/insights/audit",
        f"/adventures/{adventure_id}/tree/lines",
        f"/adventures/{adventure_id}/tree/save-points",
        f"/adventures/{adventure_id}/insights",
        f"/adventures/{adventure_id}/insights?turn={turn['turn']['id']}",
        "/",
        "/scenarios",
        f"/scenarios/{DEMO}",
        f"/scenarios/{DEMO}?part=rules",
        "/settings",
    ]
    for path in pages:
        page = client.get(path)
        assert page.status_code == 200, path
        for word in ("node", "fork", "head"):
            assert not re.search(rf"\b{word}s?\b", visible(page.text), re.I), (path, word)


def test_settings_explain_the_network_policy_and_check_ranges(client: TestClient) -> None:
    refused = client.post("/settings", data={"provider": "openai", "endpoint": "http://8.8.8.8/v1"})
    assert refused.status_code == 422
    assert (
        "private network" in refused.text and "TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1" in refused.text
    )
    out_of_range = client.post("/settings", data={"temperature": "9", "memory_top_k": "7"})
    assert out_of_range.status_code == 422 and 'class="field-error"' in out_of_range.text
    assert client.get("/api/context/settings").json()["memory_top_k"] == 3  # nothing saved
    saved = client.post(
        "/settings", data={"temperature": "0.6", "state_updates": "off", "memory_top_k": "4"}
    )
    assert saved.status_code == 200 and "Saved." in saved.text
    assert client.get("/api/settings").json()["generation"]["state_updates"] == "off"
    assert client.get("/api/context/settings").json()["memory_top_k"] == 4
    assert client.get("/api/context/settings").json()["memory_enabled"] is False  # an unticked box


def test_start_with_a_persona_and_an_origin(client: TestClient) -> None:
    started = client.post(
        "/adventures",
        data={
            "scenario_id": DEMO,
            "answer_name": "Ada",
            "origin_id": "cousin",
            "persona_pronouns": "she/her",
        },
        follow_redirects=False,
    )
    assert started.status_code == 303
    adventure_id = int(started.headers["location"].rsplit("/", 1)[1])
    assert client.get(f"/api/adventures/{adventure_id}/plot").json()["persona"] == {
        "name": "Ada",
        "pronouns": "she/her",
        "description": client.get(f"/api/adventures/{adventure_id}/plot").json()["persona"][
            "description"
        ],
    }
    assert "Home, Ada" in client.get(f"/adventures/{adventure_id}").text
    assert "Maren&#39;s cousin" in client.get("/").text
    api = client.post(
        "/api/adventures",
        json={
            "scenario_id": DEMO,
            "answers": {"name": "Cy"},
            "persona": {"pronouns": "he/him", "description": "${name} fixes clocks."},
        },
    )
    persona = client.get(f"/api/adventures/{api.json()['id']}/plot").json()["persona"]
    assert persona == {"name": "Cy", "pronouns": "he/him", "description": "Cy fixes clocks."}
    bad = client.post(
        "/adventures", data={"scenario_id": DEMO, "answer_name": "Ada", "origin_id": "nobody"}
    )
    assert bad.status_code == 422 and "No origin" in bad.text


# --- scenarios: service and API ---------------------------------------------------------------------


def test_scenario_mistakes_are_reported_by_path() -> None:
    demo = next(s for s in shipped_scenarios.builtin_scenarios() if s["id"] == DEMO)
    assert scenarios.check_scenario(demo) == []
    broken = json.loads(json.dumps(demo))
    broken["rules"]["stats"]["world"]["storm"]["max"] = -5
    broken["story_cards"][1]["entry"] = ""
    broken["opening"] += " ${who}"
    broken["origins"][1]["rules"]["flags"]["ferry_hired"]["initial"] = "yes"
    broken["colour"] = "blue"
    errors = scenarios.check_scenario(broken)
    for start in (
        "rules.stats.world.storm.max:",
        "story_cards[1].entry:",
        "placeholders: '${who}'",
        "origins[1].rules",
        "colour: unknown field",
    ):
        assert any(e.startswith(start) for e in errors), (start, errors)


def test_scenarios_through_the_api(client: TestClient) -> None:
    builtin = client.get(f"/api/scenarios/{DEMO}").json()["data"]
    assert client.put(f"/api/scenarios/{DEMO}", json=builtin).status_code == 422  # read-only
    assert client.delete(f"/api/scenarios/{DEMO}").status_code == 422
    copy_ = client.post(f"/api/scenarios/{DEMO}/duplicate")
    assert copy_.status_code == 201
    copy_id = copy_.json()["id"]
    data = copy_.json()["data"]

    bad = dict(data, rules={**data["rules"], "flags": {"x": {"initial": 3}}})
    refused = client.put(f"/api/scenarios/{copy_id}", json=bad)
    assert refused.status_code == 422 and refused.json()["errors"] == [
        "rules.flags.x.initial: must be true or false"
    ]
    assert client.get(f"/api/scenarios/{copy_id}").json()["data"] == data  # unchanged
    assert client.post("/api/scenarios/check", json=bad).json() == {
        "valid": False,
        "errors": refused.json()["errors"],
    }
    assert (
        client.put(f"/api/scenarios/{copy_id}", json=dict(data, title="Mine")).json()["title"]
        == "Mine"
    )

    exported = client.get(f"/api/scenarios/{copy_id}/export")
    assert "attachment" in exported.headers["content-disposition"]
    imported = client.post("/api/scenarios/import", content=exported.content)
    assert (
        imported.status_code == 201
        and imported.json()["id"] != copy_id
        and imported.json()["notes"]
    )
    assert {k: v for k, v in imported.json()["data"].items() if k != "id"} == {
        k: v for k, v in exported.json()["scenario"].items() if k != "id"
    }

    before = [s["id"] for s in client.get("/api/scenarios").json()]
    for raw, words in (
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not text"),
        (json.dumps({"format": "talekeeper-adventure", "scenario": {}}).encode(), "not a scenario"),
        (
            json.dumps(
                {"id": "x", "title": "X", "opening": "Hi.", "rules": {"version": 2}}
            ).encode(),
            "rules.version",
        ),
        (b" " * (scenarios.MAX_SCENARIO_BYTES + 1), "too large"),
    ):
        answer = client.post("/api/scenarios/import", content=raw)
        assert answer.status_code == 422 and words in answer.text, (words, answer.text)
    assert [s["id"] for s in client.get("/api/scenarios").json()] == before

    assert client.delete(f"/api/scenarios/{copy_id}").status_code == 204
    created = client.post("/api/scenarios", json=scenarios.new_scenario("Quiet", "quiet"))
    assert created.status_code == 201
    assert (
        client.post("/api/scenarios", json=scenarios.new_scenario("Quiet", "quiet")).status_code
        == 422
    )  # id taken


def test_an_adventure_outlives_its_scenario(client: TestClient) -> None:
    client.post("/api/scenarios", json=scenarios.new_scenario("Short", "short"))
    adventure = client.post(
        "/api/adventures", json={"scenario_id": "short", "answers": {"name": "Ada"}}
    ).json()
    assert client.delete("/api/scenarios/short").status_code == 204
    assert client.get(f"/adventures/{adventure['id']}").status_code == 200
    assert "Custom scenario" in client.get("/").text


def test_the_editor_saves_a_part_or_shows_its_mistakes_in_place(client: TestClient) -> None:
    copy_id = (
        client.post(f"/scenarios/{DEMO}/duplicate", follow_redirects=False)
        .headers["location"]
        .split("?")[0]
        .rsplit("/", 1)[1]
    )
    form = {
        "stat_owner": ["world", ""],
        "stat_name": ["storm", ""],
        "stat_kind": ["number", "number"],
        "stat_min": ["0", ""],
        "stat_max": ["-5", ""],
        "stat_initial": ["4", ""],
        "stat_hidden": ["", ""],
        "stat_bands": ["0 3 squalls", ""],
        "ms_id": ["got_key"],
        "ms_desc": ["Get the key"],
        "canon_rules": "No magic.",
    }
    refused = client.post(f"/scenarios/{copy_id}/save/rules", data=form)
    assert refused.status_code == 422
    row = re.search(
        r'<li class="row has-errors" data-stat="rules.stats.world.storm">.*?</li>',
        refused.text,
        re.S,
    ).group(0)
    assert "rules.stats.world.storm.max</code>: must be ≥ min (0)" in row and 'value="-5"' in row
    form["stat_max"] = ["10", ""]
    saved = client.post(f"/scenarios/{copy_id}/save/rules", data=form, follow_redirects=False)
    assert saved.status_code == 303, visible(saved.text)[:500]
    rules = client.get(f"/api/scenarios/{copy_id}").json()["data"]["rules"]
    assert rules["stats"] == {
        "world": {"storm": {"min": 0, "max": 10, "initial": 4, "bands": [[0, 3, "squalls"]]}}
    }
    assert rules["milestones"] == {"got_key": {"desc": "Get the key"}} and rules["canon"][
        "rules"
    ] == ["No magic."]
    assert client.post(f"/scenarios/{DEMO}/save/story", data={"title": "Mine"}).status_code == 422
