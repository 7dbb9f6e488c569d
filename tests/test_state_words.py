"""The state as a player reads and corrects it, in the terminal and the State panel alike:
`/fix` takes every name `/state` prints (possessives, "the", aliases, descriptions) and
answers in names; a manual move takes the scene along (or the panel says why not); a hidden
stat is never a number anywhere a player reads."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, corrections
from talekeeper.service.app import Talekeeper
from talekeeper.terminal.fix import FixInvalid, events_from_words
from tests.test_terminal_ux import run_play
from tests.test_web_pages import block, visible

README = (Path(__file__).parents[1] / "README.md").read_text()


def start(tk: Talekeeper, scenario: str = "greywater-lantern", **answers: str) -> int:
    with tk.db.session() as session:
        return adventures.start_adventure(session, scenario, answers or {"name": "Ansel"}).id


@pytest.mark.parametrize(
    ("line", "event"),
    [
        ("/fix add maren's trust 2", {"type": "change_stat", "stat": "npc.maren.trust", "by": 2}),
        ("/fix add Maren’s trust 2", {"type": "change_stat", "stat": "npc.maren.trust", "by": 2}),
        (
            "/fix add the ferrywoman's trust 1",
            {"type": "change_stat", "stat": "npc.maren.trust", "by": 1},
        ),
        ("/fix set storm 7", {"type": "set_stat", "stat": "world.storm", "value": 7}),
        ("/fix set lamp oil 1", {"type": "set_stat", "stat": "player.lamp_oil", "value": 1}),
        ("/fix set your health 5", {"type": "set_stat", "stat": "player.health", "value": 5}),
        ("/fix set npc.tobin.trust 0", {"type": "set_stat", "stat": "npc.tobin.trust", "value": 0}),
        (
            "/fix move Ansel to the cottage",
            {"type": "set_location", "entity": "player", "location": "cottage"},
        ),
        (
            "/fix move me to Keeper's cottage",
            {"type": "set_location", "entity": "player", "location": "cottage"},
        ),
        (
            "/fix move Maren to the lighthouse",
            {"type": "set_location", "entity": "maren", "location": "lighthouse"},
        ),
        ("/fix flag ferry hired on", {"type": "set_flag", "flag": "ferry_hired", "value": True}),
        ("/fix flag ferry_hired on", {"type": "set_flag", "flag": "ferry_hired", "value": True}),
        (
            "/fix milestone obtain the brass key",
            {"type": "reach_milestone", "milestone": "got_key"},
        ),
        (
            "/fix give the brass key to the ferrywoman",
            {"type": "set_possession", "item": "brass_key", "holder": "maren"},
        ),
        (
            "/fix status the keeper asleep",
            {"type": "set_status", "entity": "tobin", "status": "asleep"},
        ),
    ],
)
def test_fix_takes_the_names_state_prints(tk: Talekeeper, line: str, event: dict) -> None:
    assert events_from_words(line, corrections.state_at_head(tk, start(tk))) == [event]


def test_every_name_state_prints_is_one_fix_accepts(
    tk: Talekeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = start(tk)
    out = run_play(tk, ["/state"], monkeypatch, adventure_id=aid)
    state = corrections.state_at_head(tk, aid)
    for stat in state.at.view.stats:
        if stat.label in ("Trust",):  # two characters have one: answered below
            continue
        assert stat.label in out, stat.label
        said = "set" if stat.kind == "text" else "add"
        value = "quiet sorrow" if said == "set" else "1"
        (event,) = events_from_words(f"/fix {said} {stat.label} {value}", state)
        assert event["stat"] == stat.path
    for flag in state.at.view.flags:
        assert flag.desc in out
        assert events_from_words(f"/fix flag {flag.desc} on", state)[0]["flag"] == flag.name


def test_a_name_two_things_share_is_asked_about_in_names(tk: Talekeeper) -> None:
    with pytest.raises(FixInvalid) as asked:
        events_from_words("/fix add trust -1", corrections.state_at_head(tk, start(tk)))
    assert str(asked.value) == "'trust' could be Maren's trust or Tobin's trust: say which."
    with pytest.raises(FixInvalid) as unknown:
        events_from_words("/fix move Maren to the moon", corrections.state_at_head(tk, start(tk)))
    assert "(known: Greywater docks, Keeper's cottage, The lighthouse)" in str(unknown.value)


def test_the_readmes_own_fix_examples_work(tk: Talekeeper, monkeypatch: pytest.MonkeyPatch) -> None:
    section = README[README.index("### In the terminal") : README.index("## Models")]
    examples = re.findall(r"`(/fix [^`]+)`", section)
    assert len(examples) >= 6, examples
    aid = start(tk)
    out = run_play(tk, examples, monkeypatch, adventure_id=aid)
    assert out.count("Corrected") == len(examples), out
    assert "Nothing was changed" not in out and "could be" not in out


def test_fix_answers_in_names(tk: Talekeeper, monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_play(
        tk,
        ["/fix add maren's trust 2", "/fix move Ansel to the cottage", "/fix flag ferry hired on"],
        monkeypatch,
        adventure_id=start(tk),
    )
    for said in (
        "● Maren's trust −2 → 0",
        "● Ansel is now at Keeper's cottage",
        "● The scene is now Keeper's cottage; here: Tobin",
        "● Ferry hired: on",
    ):
        assert said in out, said
    assert not re.search(r"npc\.|player\.|world\.|ferry_hired|\bmaren\b", out), out


# --- the scene follows a manual move -------------------------------------------------------------


def test_moving_the_player_by_hand_takes_the_scene_along(
    tk: Talekeeper, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = start(tk, name="Ilse")
    answer = client.post(
        f"/adventures/{aid}/state/correct",
        data={"kind": "set_location", "entity": "player", "location": "cottage"},
    )
    panel = html.unescape(visible(answer.text))
    scene = panel[panel.index("Scene") : panel.index("Stats")]
    assert "Keeper's cottage" in scene and "Here: Tobin" in scene and "Maren" not in scene
    assert "but the scene is still" not in panel
    view = client.get(f"/api/adventures/{aid}/state").json()["view"]
    assert view["scene"]["location"] == "cottage" and view["scene"]["present"] == ["tobin"]
    # someone else moving in joins the scene; moving out leaves it; the place stays
    corrections.correct(
        tk, aid, [{"type": "set_location", "entity": "maren", "location": "cottage"}]
    )
    corrections.correct(tk, aid, [{"type": "set_location", "entity": "tobin", "location": "docks"}])
    view = client.get(f"/api/adventures/{aid}/state").json()["view"]
    assert view["scene"] == {**view["scene"], "location": "cottage", "present": ["maren"]}
    out = run_play(tk, ["/state"], monkeypatch, adventure_id=aid)
    assert "Scene: Keeper's cottage · here: Maren" in out
    # Undo takes the scene back with the move
    for _ in range(3):
        client.post(f"/api/adventures/{aid}/undo")
    assert client.get(f"/api/adventures/{aid}/state").json()["view"]["scene"]["location"] == "docks"


def test_when_the_story_moves_the_player_and_not_the_scene_the_panel_says_why(
    tk: Talekeeper, client: TestClient, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = start(tk, name="Ilse")
    scripted.queue(
        "You walk up to the cottage."
        + block({"type": "set_location", "entity": "player", "location": "cottage"})
    )
    client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "walk"})
    panel = html.unescape(visible(client.get(f"/adventures/{aid}/state/panel").text))
    assert "You are at Keeper's cottage, but the scene is still Greywater docks" in panel
    out = run_play(tk, ["/state"], monkeypatch, adventure_id=aid)
    assert "You are at Keeper's cottage, but the scene is still Greywater docks" in out


# --- hidden stats ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "answers", "luck"),
    [
        ("greywater-lantern", {"name": "Ilse"}, "player.luck"),
        ("fenmouth-ledger", {}, "player.luck"),
    ],
)
def test_a_hidden_stat_is_never_a_number(
    tk: Talekeeper,
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
    answers: dict,
    luck: str,
) -> None:
    body = {"scenario_id": scenario, "answers": answers}
    aid = client.post("/api/adventures", json=body).json()["id"]
    row = next(
        s
        for s in client.get(f"/api/adventures/{aid}/state").json()["view"]["stats"]
        if s["path"] == luck
    )
    assert row["value"] is None and row["min"] is None and row["max"] is None and row["band"]
    panel = client.get(f"/adventures/{aid}/state/panel").text
    start_at = panel.index(f'data-stat="{luck}"')
    luck_row = html.unescape(visible(panel[start_at : panel.index("</div>", start_at)]))
    assert row["band"] in luck_row and not re.search(r"\d", luck_row), luck_row
    option = re.search(rf'<option value="{re.escape(luck)}">([^<]*)</option>', panel)
    assert option and not re.search(r"\d", option.group(1)), option
    out = run_play(tk, ["/state"], monkeypatch, adventure_id=aid)
    line = next(line for line in out.splitlines() if line.strip().startswith("Luck"))
    assert "hidden" in line and not re.search(r"\d", line), line
    corrections.correct(tk, aid, [{"type": "change_stat", "stat": luck, "by": 1}])
    page = html.unescape(visible(client.get(f"/adventures/{aid}").text))
    assert "Luck rose" in page or "Luck fell" in page or "Luck" not in page
