"""Opening the play page reads the next turn's prompt into the embedded model's cache."""

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app


class EmbeddedLike(ScriptedProvider):
    runs_here = True


def test_the_play_page_warms_the_embedded_model(isolated_home) -> None:
    provider = EmbeddedLike(["x", "The fog lifts."])
    tk = Talekeeper(isolated_home, provider_override=provider)
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
        assert client.get(f"/adventures/{aid}").status_code == 200
        (warm,) = provider.requests
        assert warm.max_tokens == 1
        client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "look"})
        turn = provider.requests[1]
        # Everything before the action is the same text the warm-up sent: the cache covers it.
        warm_text = "".join(m.content for m in warm.messages[:-1])
        turn_text = "".join(m.content for m in turn.messages[:-1])
        assert warm_text == turn_text
        assert client.get(f"/api/adventures/{aid}").json()["turns"] == 1


def test_a_server_of_the_players_own_is_not_warmed(
    client: TestClient, adventure_id: int, scripted
) -> None:
    client.get(f"/adventures/{adventure_id}")
    assert scripted.requests == []
