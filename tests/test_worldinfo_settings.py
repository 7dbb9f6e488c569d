"""The story-card settings over HTTP: the recursion depth and the overall card budget
reach the prompt, and Insights (the dry run) says what they held back."""

from __future__ import annotations

from fastapi.testclient import TestClient


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
