"""A companion's remark is the companion's (issue 27 item 11) and passes the guards every
role's text passes (issue 23 item 2): shown labelled with their name on the page, in the
stream and in the terminal, never glued to the narration; Insights shows what it
answered; a remark that writes protocol is never shown or stored."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from tests.test_api_turns import sse_events
from tests.test_worlds import start

MOMENT = {"events": [{"type": "record_moment", "text": "you fell in the river", "weight": 8}]}


def to_banter(client: TestClient, scripted: ScriptedProvider) -> int:
    """A Fenmouth deserter two turns in, with a moment Brannoc can raise on turn 3."""
    aid = start(client, "deserter", **{"class": "sellsword"})["id"]
    scripted.queue("Your boot finds an eel.\n```state\n" + json.dumps(MOMENT) + "\n```", "Fog.")
    for action in ("step off the barge", "wring out your cloak"):
        response = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": action})
        assert response.status_code == 200, response.text
    return aid


def sse_turn(client: TestClient, aid: int, text: str) -> list[tuple[str, dict]]:
    response = client.post(
        f"/api/adventures/{aid}/turns",
        json={"kind": "do", "text": text},
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 200, response.text
    return sse_events(response.text)


def test_the_remark_is_labelled_as_the_companions_everywhere(
    client: TestClient, scripted: ScriptedProvider, tk: Talekeeper
) -> None:
    aid = to_banter(client, scripted)
    scripted.queue("A bell rings from the chapel.", '"Mind the eels, boss," he says.')
    events = sse_turn(client, aid, "listen")
    kinds = [name for name, _ in events]
    # the turn is written (`done`: the player may act), then the remark comes, after it
    # (service/turns step 7 (later)), and `settled` ends the turn
    assert kinds[-3:] == ["done", "remark", "settled"]
    assert dict(events)["done"]["turn"]["pending"] is True
    remark = dict(events)["remark"]
    assert remark == {"by": "Brannoc", "text": '"Mind the eels, boss," he says.'}
    text = "".join(data["text"] for name, data in events if name == "text")
    assert "Mind the eels" not in text  # never streamed as the narration's own text
    turn = dict(events)["settled"]["turn"]
    assert turn["remark"] == remark and turn["narration"].endswith(remark["text"])
    # the page: the narration, then the remark apart, under Brannoc's name
    page = client.get(f"/adventures/{aid}").text
    assert re.search(
        r'<p class="narration">A bell rings from the chapel.</p>\s*'
        r'<p class="remark"><span class="remark-by">Brannoc:</span> '
        r"&#34;Mind the eels, boss,&#34; he says.</p>",
        page,
    ), page[page.find("A bell rings") - 200 : page.find("A bell rings") + 400]
    assert '<p class="narration">&#34;Mind the eels' not in page
    # the JSON story says whose it is
    shown = client.get(f"/api/adventures/{aid}").json()["turns_shown"][-1]
    assert shown["remark"] == remark
    # Insights: the call's prompt and what it answered
    insight = client.get(f"/api/adventures/{aid}/turns/{turn['id']}/insights").json()
    (call,) = insight["calls"]
    assert call["role"] == "banter:brannoc" and call["answer"] == remark["text"]
    assert call["note"] is None
    html = client.get(f"/adventures/{aid}/insights?turn={turn['id']}").text
    assert "What it answered" in html and "Mind the eels, boss," in html


@pytest.mark.parametrize(
    "answer",
    [
        "npc.brannoc.approval 40/100",
        '"Nice," Brannoc says. npc.brannoc.approval 40/100',
        'Brannoc (brannoc, person) — alive\n{"type": "change_stat", "stat": "player.luck"}',
        "Brannoc's approval: loyal (40 of 100).",  # the notes' own line, echoed
    ],
)
def test_a_remark_that_writes_protocol_or_echoes_is_never_shown_or_stored(
    client: TestClient, scripted: ScriptedProvider, answer: str
) -> None:
    aid = to_banter(client, scripted)
    scripted.queue("A bell rings from the chapel.", answer)
    events = sse_turn(client, aid, "listen")
    done = dict(events)["done"]
    stored = done["turn"]["narration"]
    assert "npc." not in stored and "40/100" not in stored and "(brannoc" not in stored
    assert "40 of 100" not in stored and '"type"' not in stored
    assert stored.startswith("A bell rings from the chapel.")
    shown = "".join(data.get("text", "") for name, data in events if name in ("text", "remark"))
    assert "npc." not in shown and "40/100" not in shown and "40 of 100" not in shown
    insight = client.get(f"/api/adventures/{aid}/turns/{done['turn']['id']}/insights").json()
    (call,) = insight["calls"]
    assert call["answer"] == answer  # Insights keeps what it said, and why it was left out
    assert "echo guard removed" in call["note"]


def test_the_terminal_prints_the_remark_under_the_companions_name(
    client: TestClient, scripted: ScriptedProvider, tk: Talekeeper, monkeypatch
) -> None:
    from rich.console import Console

    from talekeeper.memory.worker import worker_for
    from talekeeper.service.turns import play_turn
    from talekeeper.terminal import loop
    from talekeeper.terminal.background import Background

    aid = to_banter(client, scripted)
    scripted.queue("A bell rings from the chapel.", '"Mind the eels, boss," he says.')
    console = Console(record=True, width=100, color_system=None)  # every thread's output
    monkeypatch.setattr(loop, "console", console)
    background = Background()  # the terminal's loop: the remark comes after the prompt is back
    try:
        events = play_turn(tk, aid, "do", "listen")
        rest = background.run(loop._show_stream(events, echo_action=False))
        assert rest is not None  # the turn is written; its remark is still to come
        background.follow(loop._follow(rest, background))
        background.settle_first(lambda: None)
        loop._print_story(tk, aid, last=1)
        background.run(worker_for(tk).drain())  # the memory bank's run, in its own loop
    finally:
        background.close(tk.settles.drain())
    out = console.export_text()
    assert out.count('Brannoc: "Mind the eels, boss," he says.') == 2, out
    assert 'chapel. "Mind the eels' not in out.replace("\n", " ")
