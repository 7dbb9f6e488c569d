"""The starter adventure: written for talekeeper, shipped in the package, opened from the
home page, the API and the terminal as a fresh copy a newcomer can read and continue — with
a retold turn, a second line, a Save Point, chips in words and Insights for every turn."""

from __future__ import annotations

import html
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from talekeeper.interop.starter import STARTER
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.service.chips import turn_chips
from tests.jargon import jargon_in
from tests.test_terminal_ux import run_play
from tests.test_web_pages import visible

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import build_starter  # noqa: E402


def story_of(path: Path) -> list[tuple]:
    """What the story is, whatever the prompt or the state engine make of it: each turn's
    place, action and narration, the Save Points and the lines' names."""
    keep = {"node": ("id", "parent", "take_of", "kind", "action", "narration", "branch_name")}
    keep["save_point"] = ("node", "name", "note")
    return [
        (r["t"], *(r.get(k) for k in keep[r["t"]]))
        for r in build_starter.records(path)
        if r["t"] in keep
    ]


def test_the_shipped_starter_is_the_story_as_written(tmp_path: Path) -> None:
    """Built afresh from scripts/build_starter.py (every turn stored exactly as written, no
    guard cutting a line), it tells the story the file in the package tells; and the shipped
    file is a valid adventure (opening it checks every record)."""
    assert STARTER.exists() and STARTER.stat().st_size < 100_000
    built = build_starter.build(tmp_path / "data", tmp_path / "starter.jsonl.gz")
    assert story_of(built) == story_of(STARTER)
    assert len([r for r in story_of(STARTER) if r[0] == "node"]) == 10


def test_the_starter_opens_as_a_fresh_copy_to_read_and_continue(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    opened = client.post("/api/adventures/starter")
    assert opened.status_code == 201, opened.text
    aid = opened.json()["id"]
    assert opened.json()["turns"] == 7 and opened.json()["nodes"] == 10
    assert client.post("/api/adventures/starter").json()["id"] != aid  # each open is its own
    story = client.get(f"/api/adventures/{aid}").json()
    turns = story["turns_shown"]
    assert [t["depth"] for t in turns] == list(range(8))
    written = [
        reply.split("\n```state", 1)[0]
        for kind, _, reply in build_starter.STORY
        if kind in ("do", "say")
    ]
    assert turns[3]["takes"] == {**turns[3]["takes"], "index": 2, "count": 2}  # a retold turn
    assert turns[-1]["narration"] == written[-1]
    lines = client.get(f"/api/adventures/{aid}/lines").json()["lines"]
    assert [(line["name"], line["length"]) for line in lines] == [
        ("The broken pick", 5),
        ("Tobin's key", 7),
    ]
    saves = client.get(f"/api/adventures/{aid}/save-points").json()["save_points"]
    assert [(s["name"], s["turn"]) for s in saves] == [("At the locked trapdoor", 4)]
    shown = [turn_chips(t["changes"]) for t in turns]
    assert "Maren's trust −2 → −1" in [c.text for c in shown[1].chips]
    assert shown[4].refused_line == "1 of the model's changes was not applied"
    for turn in turns[1:]:  # every turn's Insights
        insights = client.get(f"/api/adventures/{aid}/turns/{turn['id']}/insights")
        assert insights.status_code == 200, (turn["depth"], insights.text)
    page = html.unescape(visible(client.get(f"/adventures/{aid}").text))
    assert jargon_in(page) == [], jargon_in(page)
    # and it goes on with whatever model is set up
    scripted.queue("The wick catches, and the great lens throws the light out over the water.")
    done = client.post(
        f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "light the lantern"}
    )
    assert done.status_code == 200 and done.json()["turn"]["depth"] == 8


def test_the_home_page_and_the_terminal_open_it(
    tk: Talekeeper, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = client.get("/").text
    assert 'action="/adventures/starter"' in home and "Open the starter story" in home
    opened = client.post("/adventures/starter", follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"].startswith("/adventures/")
    play_page = client.get(opened.headers["location"]).text
    assert "You trim it short, the way Tobin said" in play_page
    assert "Open the starter story" in client.get("/").text  # still offered with adventures
    import talekeeper.terminal.loop as loop

    row = len(loop.adventures.summaries(tk)) + len(loop.scenarios.summaries(tk)) + 1
    monkeypatch.setattr(loop.IntPrompt, "ask", lambda *a, **k: row)
    out = run_play(tk, [], monkeypatch)
    assert "Open the starter story" in out and "masthead light rises and falls" in out
