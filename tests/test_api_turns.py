"""Playing turns through the JSON API and SSE, with a scripted model."""

import asyncio
import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import play_turn


def sse_events(body: str) -> list[tuple[str, dict]]:
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if name and data:
            events.append((name, json.loads("\n".join(data))))
    return events


def streamed_turn(client: TestClient, adventure_id: int, text: str) -> tuple[str, dict]:
    """Play a "do" turn over SSE: the text the reader was shown, and the finished turn."""
    response = client.post(
        f"/api/adventures/{adventure_id}/turns",
        json={"kind": "do", "text": text},
        headers={"Accept": "text/event-stream"},
    )
    events = sse_events(response.text)
    shown = "".join(data["text"] for name, data in events if name == "text")
    return shown, next(data for name, data in events if name == "done")["turn"]


def test_health_and_scenarios(client: TestClient) -> None:
    assert client.get("/api/health").json()["status"] == "ok"
    ids = [s["id"] for s in client.get("/api/scenarios").json()]
    assert "greywater-lantern" in ids


def test_new_adventure_starts_at_the_opening_with_placeholders_filled(
    client: TestClient, adventure_id: int
) -> None:
    story = client.get(f"/api/adventures/{adventure_id}").json()
    assert len(story["turns_shown"]) == 1
    assert "Ada" in story["turns_shown"][0]["narration"]
    assert "${name}" not in story["turns_shown"][0]["narration"]
    assert story["can_undo"] is False and story["can_redo"] is False


def test_a_turn_as_json(client: TestClient, adventure_id: int, scripted: ScriptedProvider) -> None:
    scripted.queue('The ferrywoman looks up. "Lamp-mender, is it?"')
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "say", "text": "Hello"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["turn"]["action_line"] == '> You say "Hello."'
    assert body["turn"]["narration"].startswith("The ferrywoman looks up.")
    assert body["can_undo"] is True and body["turns"] == 1
    # The model saw the player's action in the last message, after the current state.
    last = scripted.requests[-1].messages[-1].content
    assert '> You say "Hello."' in last
    assert last.index("You are at Greywater docks") < last.index('> You say "Hello."')


def test_a_turn_streams_over_sse(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue("Rain hammers the planks as you walk to the ferry.")
    response = client.post(
        f"/api/adventures/{adventure_id}/turns",
        json={"kind": "do", "text": "walk to the ferry"},
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[0] == "accepted" and names[-1] == "done"
    assert names.count("text") > 3  # streamed in pieces, not in one lump
    streamed = "".join(data["text"] for name, data in events if name == "text")
    assert streamed == "Rain hammers the planks as you walk to the ferry."
    assert events[-1][1]["turn"]["narration"] == streamed


def test_a_cut_stream_writes_nothing(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue("This narration will be cut off half way through.")
    scripted.fail_next(after_chunks=2)
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wait"}
    )
    assert response.status_code == 502
    story = client.get(f"/api/adventures/{adventure_id}").json()
    assert story["turns"] == 0 and len(story["turns_shown"]) == 1
    # and the adventure is not left locked
    scripted.queue("You wait.")
    assert (
        client.post(
            f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wait"}
        ).status_code
        == 200
    )


def test_cancelling_a_stream_writes_nothing_and_releases_the_lock(
    tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    from talekeeper.service import adventures, unit_of_work

    with tk.db.session() as session:
        aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    gate = asyncio.Event()
    # The echo guard shows a line only once its first words are judged story, so the
    # stream pauses after a whole first line (4 chunks of 8), not after a fragment of it
    # — a fragment is rightly held, and the player would see nothing to stop.
    first = "Rain drums on the ferry's planks.\n"
    scripted.gate, scripted.gate_after_chunks = gate, -(-len(first) // scripted.chunk_size)
    scripted.queue(first + "A long reply that the player stops before it ends.")

    async def run() -> None:
        events = play_turn(tk, aid, "do", "look around")
        assert (await anext(events)).kind == "accepted"
        assert (await anext(events)).kind == "text"
        assert tk.locks.is_busy(aid)
        await events.aclose()  # the player pressed Stop / closed the page

    asyncio.run(run())
    assert not tk.locks.is_busy(aid)
    with tk.db.session() as session:
        assert unit_of_work.get_adventure(session, aid).turn_count == 0


def test_a_second_writer_is_refused_with_409(
    client: TestClient, tk: Talekeeper, adventure_id: int
) -> None:
    tk.locks.acquire(adventure_id)  # a turn is in flight
    try:
        response = client.post(
            f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "run"}
        )
        assert response.status_code == 409
        assert "busy" in response.json()["detail"]
        assert client.post(f"/api/adventures/{adventure_id}/undo").status_code == 409
    finally:
        tk.locks.release(adventure_id)


def test_bad_turn_requests_are_refused_and_change_nothing(
    client: TestClient, adventure_id: int
) -> None:
    url = f"/api/adventures/{adventure_id}/turns"
    assert client.post(url, json={"kind": "shout", "text": "hi"}).status_code == 422
    assert client.post(url, json={"kind": "do", "text": "  "}).status_code == 422
    assert client.post(url, json={"kind": "do", "text": "x", "extra": 1}).status_code == 422
    assert (
        client.post("/api/adventures/9999/turns", json={"kind": "do", "text": "x"}).status_code
        == 404
    )
    assert client.get(f"/api/adventures/{adventure_id}").json()["turns"] == 0


def test_undo_and_redo_move_along_the_story(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue("First.", "Second.")
    client.post(f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "one"})
    client.post(f"/api/adventures/{adventure_id}/turns", json={"kind": "continue"})
    undone = client.post(f"/api/adventures/{adventure_id}/undo").json()
    assert [t["narration"] for t in undone["turns_shown"]][-1] == "First."
    assert undone["can_redo"] is True
    redone = client.post(f"/api/adventures/{adventure_id}/redo").json()
    assert redone["turns_shown"][-1]["narration"] == "Second."
    assert redone["can_redo"] is False
    client.post(f"/api/adventures/{adventure_id}/undo")
    client.post(f"/api/adventures/{adventure_id}/undo")
    opening = client.post(f"/api/adventures/{adventure_id}/undo")
    assert opening.status_code == 409 and "opening" in opening.json()["detail"]


def test_the_story_pages_backwards(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    for i in range(7):
        scripted.queue(f"Narration {i}.")
        client.post(
            f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": f"act {i}"}
        )
    page = client.get(f"/api/adventures/{adventure_id}", params={"limit": 3}).json()
    assert [t["narration"] for t in page["turns_shown"]] == [
        "Narration 4.",
        "Narration 5.",
        "Narration 6.",
    ]
    assert page["has_more"] is True
    older = client.get(
        f"/api/adventures/{adventure_id}",
        params={"limit": 3, "before": page["turns_shown"][0]["id"]},
    ).json()
    assert [t["narration"] for t in older["turns_shown"]] == [
        "Narration 1.",
        "Narration 2.",
        "Narration 3.",
    ]


def test_the_adventure_survives_a_restart(isolated_home, scripted: ScriptedProvider) -> None:
    tk = Talekeeper(isolated_home, provider_override=scripted)
    with TestClient(create_app_for(tk), base_url="http://127.0.0.1") as client:
        aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
        scripted.queue("You step onto the ferry.")
        client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "board"})
    again = Talekeeper(isolated_home, provider_override=scripted)
    with TestClient(create_app_for(again), base_url="http://127.0.0.1") as client:
        story = client.get(f"/api/adventures/{aid}").json()
        assert story["turns_shown"][-1]["narration"] == "You step onto the ferry."


def create_app_for(tk: Talekeeper):
    from talekeeper.web.app import create_app

    return create_app(tk)


def test_delete_adventure(client: TestClient, adventure_id: int) -> None:
    assert client.delete(f"/api/adventures/{adventure_id}").status_code == 204
    assert client.get(f"/api/adventures/{adventure_id}").status_code == 404
