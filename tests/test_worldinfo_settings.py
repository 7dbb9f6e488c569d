"""The story-card settings over HTTP: the recursion depth and the overall card budget
reach the prompt, and Insights (the dry run) says what they held back."""

from __future__ import annotations

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider


def test_recursion_depth_and_card_budget_settings_reach_insights(
    client: TestClient, adventure_id: int
) -> None:
    base = f"/api/adventures/{adventure_id}/story-cards"
    for i in range(4):
        card = {
            "name": f"Chain {i}",
            "entry": f"Lore that names zq{i + 1}.",
            "triggers": f"zq{i}",
            "order": 900 - i,
        }
        assert client.post(base, json=card).status_code == 201

    def next_turn() -> dict:
        return client.get(
            f"/api/adventures/{adventure_id}/insights/next",
            params={"kind": "do", "text": "say zq0"},
        ).json()

    def sent(data: dict) -> list[str]:
        return [
            i["key"]
            for i in data["triggered_cards"]
            if i["included"] and i["key"].startswith("Chain")
        ]

    assert client.get("/api/context/settings").json()["card_recursion_depth"] == 2
    assert sent(next_turn()) == ["Chain 0", "Chain 1", "Chain 2"]
    assert client.put("/api/context/settings", json={"card_recursion_depth": 1}).status_code == 200
    data = next_turn()
    assert sent(data) == ["Chain 0", "Chain 1"]
    assert any(
        n.startswith("Recursion stopped at its depth limit (1): trigger 'zq2'")
        for n in data["notes"]
    )
    assert client.put("/api/context/settings", json={"card_recursion_depth": 11}).status_code == 422

    assert client.put("/api/context/settings", json={"card_budget": 8}).status_code == 200
    data = next_turn()
    cut = [i for i in data["triggered_cards"] if i["key"] == "Chain 1"][0]
    assert not cut["included"] and "story-card budget of 8 tokens" in cut["why"]
    assert any("cut by the overall card budget" in n and "'Chain 1'" in n for n in data["notes"])
    assert client.put("/api/context/settings", json={"card_budget": -1}).status_code == 422
    page = client.get("/settings").text
    assert 'name="card_budget"' in page and 'name="card_recursion_depth"' in page


def test_a_backtracking_regex_key_is_cut_off_with_a_note_in_insights(
    client: TestClient, adventure_id: int
) -> None:
    card = {"name": "Catastrophe", "entry": "Never sent.", "triggers": "/(x|xx)+$/"}
    assert client.post(f"/api/adventures/{adventure_id}/story-cards", json=card).status_code == 201
    data = client.get(
        f"/api/adventures/{adventure_id}/insights/next",
        params={"kind": "do", "text": "shout " + "x" * 64 + "!"},
    ).json()
    assert any(
        n.startswith("Regex key(s) cut off after 20 ms on a text: /(x|xx)+$/")
        for n in data["notes"]
    )
    row = next(i for i in data["triggered_cards"] if i["key"] == "Catastrophe")
    assert (
        not row["included"]
        and "regex key /(x|xx)+$/ was cut off (ran past its time limit)" in row["why"]
    )


def test_a_retried_turn_makes_the_same_probability_decision(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    """Five cards at 50%: each retry of the turn (a new take below the same head) rolls
    exactly as the first take did, and Insights shows the same roll."""
    base = f"/api/adventures/{adventure_id}/story-cards"
    for i in range(5):
        card = {
            "name": f"Omen {i}",
            "entry": f"Omen {i} is seen.",
            "triggers": "bell",
            "probability": 50,
        }
        assert client.post(base, json=card).status_code == 201

    def decisions(node_id: int) -> list[tuple[str, bool, str]]:
        data = client.get(f"/api/adventures/{adventure_id}/turns/{node_id}/insights").json()
        rows = [i for i in data["triggered_cards"] if i["key"].startswith("Omen")]
        return sorted(
            (i["key"], i["included"], i["why"].split("chance 50%: ")[1][:10]) for i in rows
        )

    scripted.queue("The bell tolls.")
    first = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "ring the bell"}
    )
    seen = decisions(first.json()["turn"]["id"])
    assert len(seen) == 5 and len({roll for _, _, roll in seen}) > 1  # each card rolls its own
    for reply in ("It tolls again.", "A third toll."):
        scripted.queue(reply)
        take = client.post(f"/api/adventures/{adventure_id}/retry").json()["turn"]["id"]
        assert take != first.json()["turn"]["id"] and decisions(take) == seen
