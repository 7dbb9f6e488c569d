"""The reply's length follows the model's window and the player's length setting (issue 23
item 6, second half), and a reply its token limit cut off keeps its state block or says so."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from talekeeper.context.budget import STATE_BLOCK_ROOM, length_hint, reply_tokens
from talekeeper.llm.scripted import ScriptedProvider
from tests.test_worlds import prompt_of, start, turn


def test_the_limit_follows_the_setting_the_window_and_the_state_block() -> None:
    assert reply_tokens(None, "medium", 6144, inline=False) == 220
    assert reply_tokens(None, "medium", 6144, inline=True) == 220 + STATE_BLOCK_ROOM
    assert (
        reply_tokens(None, "short", 6144, inline=False)
        < 220
        < reply_tokens(None, "long", 6144, inline=False)
    )
    assert reply_tokens(None, "long", 1024, inline=True) == 256  # a quarter of a small window
    assert reply_tokens(None, "long", 200, inline=True) == 64  # and never less than this
    assert reply_tokens(300, "short", 1024, inline=False) == 300  # the player's own number wins


def narrator_request(scripted: ScriptedProvider):
    return next(r for r in reversed(scripted.requests) if r.json_schema is None)


@pytest.mark.parametrize(
    ("length", "mode", "budget", "wanted"),
    [
        ("medium", "structured", None, 220),
        ("long", "inline", None, 500 + STATE_BLOCK_ROOM),
        ("short", "inline", None, 100 + STATE_BLOCK_ROOM),
        ("long", "structured", 1200, 300),
    ],
)
def test_the_narrators_request_is_sized_and_told_its_length(
    client: TestClient,
    adventure_id: int,
    scripted: ScriptedProvider,
    length: str,
    mode: str,
    budget: int | None,
    wanted: int,
) -> None:
    generation = {"reply_length": length, "state_updates": mode, "context_budget": budget}
    assert client.put("/api/settings", json={"generation": generation}).status_code == 200
    scripted.queue("Rain falls.", '{"events": []}')
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wait"}
    )
    assert response.status_code == 200, response.text
    request = narrator_request(scripted)
    assert request.max_tokens == wanted
    assert length_hint(length) in prompt_of(request)


def test_an_npc_and_a_companion_keep_their_own_word_on_length(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    aid = start(client, "deserter", **{"class": "assassin"})["id"]
    scripted.queue('"Stolen," Oda says.')
    turn(client, aid, "talk", "what happened?", to="Oda Fenn")
    npc = prompt_of(scripted.requests[-1])
    assert "Length:" not in npc and "one to three sentences of what Oda Fenn says" in npc


def test_the_settings_page_offers_the_reply_length(client: TestClient) -> None:
    page = client.get("/settings").text
    assert "Reply length" in page and "Long: two or three paragraphs" in page
    saved = client.put("/api/settings", json={"generation": {"max_tokens": ""}})
    assert saved.status_code == 200 and saved.json()["generation"]["max_tokens"] is None


BLOCK = {"events": [{"type": "set_flag", "flag": "ferry_hired", "value": True}]}


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("Maren nods.\n```state\n" + json.dumps(BLOCK) + "\n```", None),
        (
            'Maren nods.\n```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", '
            '"value": true}, {"type": "change_stat", "stat": "npc.maren.tr',
            "while writing its state update",
        ),
        ("Maren nods. She reaches for the oars and", "before any state update"),
    ],
)
def test_a_reply_cut_off_by_its_limit_keeps_its_state_block_or_says_so(
    client: TestClient,
    adventure_id: int,
    scripted: ScriptedProvider,
    reply: str,
    said: str | None,
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "inline"}})
    scripted.finish_reason = "length"
    scripted.queue(reply)
    done = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "hire the ferry"}
    ).json()
    notes = [c["chip"]["text"] for c in done["turn"]["changes"] if c["chip"]["kind"] == "note"]
    flags = client.get(f"/api/adventures/{adventure_id}/state").json()["document"]["flags"]
    if said is None:  # the block came whole: kept, nothing to say
        assert flags["ferry_hired"] is True and notes == []
        return
    assert len(notes) == 1 and said in notes[0] and "length limit" in notes[0]
    assert [c["chip"]["text"] for c in done["changes"]] == [
        c["chip"]["text"] for c in done["turn"]["changes"]
    ]
    if "while writing" in said:  # what was whole of the block was still taken
        assert flags["ferry_hired"] is True
    insight = client.get(
        f"/api/adventures/{adventure_id}/turns/{done['turn']['id']}/insights"
    ).json()
    assert any(said in note for note in insight["notes"])
    page = client.get(f"/adventures/{adventure_id}").text
    assert said in page
