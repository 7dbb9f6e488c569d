"""The player's hand: "Write my turn" drafts the next action into the box in the player's
voice (never sent), "Suggest" offers three short actions — each a role call of its own,
built by the one prompt builder, passed through the guards, kept for Insights; nothing in
the story changes. In the web app (Chromium) and the terminal."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper


def test_write_my_turn_drafts_an_action_and_writes_nothing(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    before = client.get(f"/api/adventures/{adventure_id}").json()
    scripted.queue("You ask Maren about the ferry fare.")
    draft = client.post(f"/api/adventures/{adventure_id}/hand/write", json={"kind": "do"})
    assert draft.status_code == 200, draft.text
    assert draft.json() == {"kind": "do", "text": "ask Maren about the ferry fare.", "note": ""}
    request = scripted.requests[-1]
    system = request.messages[0].content
    assert "write their own next turn" in system and "starts with a verb" in system
    assert "Rain needles sideways" in "\n".join(m.content for m in request.messages)  # the story
    assert request.max_tokens <= 120
    assert client.get(f"/api/adventures/{adventure_id}").json() == before  # nothing written
    scripted.queue('"How much for the crossing?"')
    said = client.post(f"/api/adventures/{adventure_id}/hand/write", json={"kind": "say"})
    assert said.json()["text"] == "How much for the crossing?"
    assert "says next, in their own voice" in scripted.requests[-1].messages[0].content
    refused = client.post(f"/api/adventures/{adventure_id}/hand/write", json={"kind": "talk"})
    assert refused.status_code == 422


def test_suggest_offers_three_short_actions(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    scripted.queue(
        "1. Ask Maren about the ferry\n2) walk to the lighthouse\n- You check the letter again.\n"
        "4. a fourth one"
    )
    found = client.post(f"/api/adventures/{adventure_id}/hand/suggest").json()
    assert found["suggestions"] == [
        "Ask Maren about the ferry",
        "Walk to the lighthouse",
        "Check the letter again",
    ]
    assert "Offer three" in scripted.requests[-1].messages[0].content


def test_the_hand_passes_the_guards_and_is_shown_in_insights(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    # a protocol line and a stat path: the guards take them out, and Insights says so
    scripted.queue('ask Maren about the lantern\n```state\n{"events": []}\n```')
    draft = client.post(f"/api/adventures/{adventure_id}/hand/write", json={"kind": "do"}).json()
    assert draft["text"] == "ask Maren about the lantern" and "state" not in draft["text"]
    scripted.queue("1. npc.maren.trust +1\n2. Wave to the ferrywoman\n3. Read the letter")
    found = client.post(f"/api/adventures/{adventure_id}/hand/suggest").json()
    assert "npc.maren.trust" not in str(found["suggestions"])
    page = client.get(f"/adventures/{adventure_id}/insights").text
    assert 'id="your-hand"' in page and "Write my turn" in page and "Suggest" in page
    assert "write their own next turn" in page  # the prompt, as sent
    assert "Wave to the ferrywoman" in page  # what it answered


def test_a_model_that_offers_nothing_usable_is_said_plainly(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    scripted.queue("")
    refused = client.post(f"/api/adventures/{adventure_id}/hand/suggest")
    assert refused.status_code == 422 and "try again" in refused.json()["detail"]


def test_the_terminal_writes_and_suggests(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_terminal_ux import run_play, start

    aid = start(tk)
    scripted.queue(
        "wave to Maren",
        "1. Ask Maren about the ferry\n2. Walk to the lighthouse\n3. Read the letter",
        "Maren waves back.",
    )
    out = run_play(tk, ["/write", "/suggest", "/use 1"], monkeypatch, adventure_id=aid)
    assert "wave to Maren" in out and "1. Ask Maren about the ferry" in out
    assert "Maren waves back." in out
    assert "> You ask Maren about the ferry." in scripted.requests[-1].messages[-1].content
