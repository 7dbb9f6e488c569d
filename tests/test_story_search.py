"""Search within a story: the line being read, its actions and narration, with excerpts."""

from __future__ import annotations

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from tests.test_tree_api import play


def test_search_finds_turns_on_the_line_being_read(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    play(client, aid, scripted, "Maren coils the rope and says nothing.", "greet the ferrywoman")
    play(client, aid, scripted, "The lantern room is cold.", "climb to the lantern")
    client.post(f"/api/adventures/{aid}/undo")
    play(
        client, aid, scripted, "A 100% honest_gull squawks at the LANTERN.", "wait"
    )  # another line
    found = client.get(f"/api/adventures/{aid}/search", params={"q": "lantern"}).json()
    assert [m["turn"] for m in found["matches"]] == [
        0,
        2,
    ]  # the opening mentions it; turn 1 does not
    assert found["matches"][1]["excerpt"]["match"] == "LANTERN"
    assert "The lantern room" not in str(found)  # that is another line's turn
    by_action = client.get(f"/api/adventures/{aid}/search", params={"q": "ferrywoman"}).json()[
        "matches"
    ]
    assert [m["turn"] for m in by_action] == [1] and by_action[0][
        "action_line"
    ] == "> You greet the ferrywoman."
    literal = client.get(f"/api/adventures/{aid}/search", params={"q": "100% honest_"}).json()[
        "matches"
    ]
    assert [m["turn"] for m in literal] == [2]  # % and _ are matched as written
    assert client.get(f"/api/adventures/{aid}/search", params={"q": "0%_"}).json()["matches"] == []
    assert client.get(f"/api/adventures/{aid}/search", params={"q": "x" * 201}).status_code == 422
    page = client.get(f"/adventures/{aid}/search", params={"q": "gull"}).text
    assert (
        "<mark>gull</mark>" in page
        and "1 turn with" in page
        and f'href="/adventures/{aid}#turn-' in page
    )
    assert f'href="/adventures/{aid}/search"' in client.get(f"/adventures/{aid}").text
