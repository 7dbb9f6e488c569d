"""Turns through the player's own OpenAI-compatible server (a real fake one on loopback),
chosen by TALEKEEPER_ENDPOINT, by a CLI flag, and in the terminal play loop."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests import waiting
from tests.llm.fakeserver import FakeOpenAIServer, FakeReply


def test_environment_endpoint_carries_the_turn(
    isolated_home, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer(
        [FakeReply("The ferrywoman spits into the sea.", reasoning="She is wary.")]
    ) as server:
        monkeypatch.setenv("TALEKEEPER_ENDPOINT", server.url)
        monkeypatch.setenv("TALEKEEPER_MODEL", "fake-model")
        tk = Talekeeper(isolated_home)
        with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
            assert "OpenAI-compatible" in client.get("/api/health").json()["model"]
            aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()[
                "id"
            ]
            done = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wave"})
            assert done.status_code == 200, done.text
            turn = done.json()["turn"]
            assert turn["narration"] == "The ferrywoman spits into the sea."
            assert turn["reasoning"] == "She is wary."
        sent = server.generation_requests[-1].body
        assert sent["model"] == "fake-model" and sent["stream"] is True
        assert "> You wave." in sent["messages"][-1]["content"]


def test_turns_keep_one_connection_to_the_server(isolated_home, monkeypatch) -> None:
    with FakeOpenAIServer(lambda request: "Maren nods at you.") as server:
        monkeypatch.setenv("TALEKEEPER_ENDPOINT", server.url)
        monkeypatch.setenv("TALEKEEPER_MODEL", "fake-model")
        tk = Talekeeper(isolated_home)
        with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
            aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()[
                "id"
            ]
            for _ in range(4):
                done = client.post(
                    f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wave"}
                )
                assert done.status_code == 200, done.text
        assert len(server.generation_requests) == 4
        assert server.connections == 1  # one a turn before the stream was read to its end


def test_a_server_that_is_down_gets_a_clear_message_and_nothing_is_written(
    isolated_home, monkeypatch
) -> None:
    server = FakeOpenAIServer([])
    server.start()
    url = server.url
    server.stop()
    monkeypatch.setenv("TALEKEEPER_ENDPOINT", url)
    tk = Talekeeper(isolated_home)
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
        response = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wave"})
        assert response.status_code == 502
        assert "127.0.0.1" in response.json()["detail"]
        assert client.get(f"/api/adventures/{aid}").json()["turns"] == 0


def test_talekeeper_play_in_a_terminal_through_a_flagged_endpoint(isolated_home) -> None:
    with FakeOpenAIServer(["Maren nods at you.", "The ferry pushes off."]) as server:
        keys = "1\nAda\nwave at Maren\n/continue\n/undo\n/quit\n"  # the first origin, then the name
        result = subprocess.run(
            [sys.executable, "-m", "talekeeper.cli", "play", "--scenario", "greywater-lantern",
             "--endpoint", server.url, "--model", "fake-model", "--data-dir", str(isolated_home)],
            input=keys, capture_output=True, text=True, timeout=waiting.bound(120),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "Maren nods at you." in result.stdout
        assert "The ferry pushes off." in result.stdout
        assert len(server.generation_requests) == 2
    # The story was saved: one turn kept (the second was undone), and it survives a restart.
    tk = Talekeeper(isolated_home)
    from talekeeper.service import adventures

    with tk.db.session() as session:
        (adventure,) = adventures.list_adventures(session)
        assert adventure.turn_count == 1
