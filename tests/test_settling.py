"""The state pass off the player's path (service/settling): a turn is written and `done`
is sent as soon as the narration has streamed; the structured state pass settles the same
turn afterwards while holding the writer lock; an action, undo or edit sent meanwhile
waits and is played on the settled state; a process that stops in between leaves no turn
half-settled."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, settling, tree_ops
from talekeeper.service import settings as settings_service
from talekeeper.service.app import Talekeeper
from talekeeper.service.locks import AdventureBusy, AdventureLocks, StillSettling
from talekeeper.service.turns import play_turn
from talekeeper.store.models import Adventure, Node
from talekeeper.views.story import Story
from tests import pg, waiting

STORM_UP = json.dumps({"events": [{"type": "change_stat", "stat": "world.storm", "by": 1}]})


class HeldPass(ScriptedProvider):
    """Narrates at once; each state pass (a `complete` under a schema) waits for `release`."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies, chunk_size=6)
        self.release = asyncio.Event()
        self.in_pass = asyncio.Event()
        self.passes = 0

    async def complete(self, request: GenerationRequest) -> str:
        if request.json_schema is not None:
            self.passes += 1
            self.in_pass.set()
            await self.release.wait()
        return await super().complete(request)


def structured(tk: Talekeeper) -> int:
    with tk.db.session() as session:
        settings_service.update_settings(
            session, settings_service.SettingsUpdate(generation={"state_updates": "structured"})
        )
        return adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id


def storm(tk: Talekeeper, adventure_id: int) -> int:
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        head = session.get(Node, adventure.head_node_id)
        return head.state["stats"]["world"]["storm"]["value"]


async def events_until(turn: AsyncIterator, kind: str) -> list:
    seen = []
    async for event in turn:
        seen.append(event)
        if event.kind == kind:
            return seen
    raise AssertionError(f"no {kind} event in {[e.kind for e in seen]}")


@pytest.fixture
def held(isolated_home: Path) -> tuple[Talekeeper, HeldPass]:
    provider = HeldPass([])
    tk = Talekeeper(isolated_home, provider_override=provider)
    yield tk, provider
    tk.db.dispose()


def test_done_comes_before_the_state_pass_and_settled_brings_its_chips(held) -> None:
    tk, provider = held
    aid = structured(tk)
    provider.queue("The wind rises over the docks.", STORM_UP)

    async def run() -> None:
        turn = play_turn(tk, aid, "do", "watch the sea")
        seen = await events_until(turn, "done")
        done = seen[-1].data
        assert "".join(e.text for e in seen if e.kind == "text") == (
            "The wind rises over the docks."
        )
        # written, and the player may act: the pass has not even been answered yet
        assert done["turn"]["pending"] is True and done["changes"] == []
        await asyncio.wait_for(provider.in_pass.wait(), waiting.bound(5))
        assert provider.passes == 1
        # the head's snapshot is the state known when the narration was written
        assert storm(tk, aid) == 4
        story = adventures.story(tk, aid)
        assert story.turns_shown[-1].pending is True
        assert story.head_id == done["turn"]["id"]
        provider.release.set()
        settled = (await events_until(turn, "settled"))[-1].data
        assert settled["turn"]["id"] == done["turn"]["id"]
        assert settled["turn"]["pending"] is False
        assert [(c["target"], c["before"], c["after"]) for c in settled["changes"]] == [
            ("world.storm", 4, 5)
        ]
        assert [e async for e in turn] == []  # `settled` is the last word

    asyncio.run(run())
    assert storm(tk, aid) == 5
    story = adventures.story(tk, aid)
    assert story.turns_shown[-1].pending is False
    assert story.turns_shown[-1].changes[0].after == 5
    assert not tk.locks.is_busy(aid)


def test_an_action_sent_during_the_pass_waits_and_plays_on_the_settled_state(held) -> None:
    tk, provider = held
    aid = structured(tk)
    provider.queue("The wind rises.", STORM_UP, "The rain comes.", '{"events": []}')

    async def run() -> None:
        first = play_turn(tk, aid, "do", "watch the sea")
        await events_until(first, "done")
        await asyncio.wait_for(provider.in_pass.wait(), waiting.bound(5))
        second = play_turn(tk, aid, "do", "go inside")
        assert (await anext(second)).kind == "status"  # it says it waits (test below)
        accepted = asyncio.ensure_future(anext(second))
        await asyncio.sleep(0.3)
        # neither refused nor begun: it waits for the pass
        assert not accepted.done(), accepted
        assert len(provider.requests) == 1  # the narrator's only; no second narration yet
        provider.release.set()
        assert (await accepted).kind == "accepted"
        await events_until(first, "settled")
        seen = await events_until(second, "settled")
        return seen[-1].data

    settled = asyncio.run(run())
    # the second turn was built on the first's settled state (storm 5), not on 4
    with tk.db.session() as session:
        second = session.get(Node, settled["turn"]["id"])
        first = session.get(Node, second.parent_id)
        assert first.state["stats"]["world"]["storm"]["value"] == 5
        assert second.state["stats"]["world"]["storm"]["value"] == 5
    narrator = provider.requests[2]  # turn 1's narration, its pass, then turn 2's narration
    assert narrator.json_schema is None and "The wind rises." in str(narrator.messages)


def test_undo_during_the_pass_waits_then_undoes_the_settled_turn(held) -> None:
    tk, provider = held
    aid = structured(tk)
    provider.queue("The wind rises.", STORM_UP)
    undone: list[Story] = []

    async def run() -> None:
        turn = play_turn(tk, aid, "do", "watch the sea")
        await events_until(turn, "done")
        await asyncio.wait_for(provider.in_pass.wait(), waiting.bound(5))
        thread = threading.Thread(target=lambda: undone.append(tree_ops.undo(tk, aid)))
        thread.start()  # the web and the terminal call undo from a worker thread
        await asyncio.sleep(0.3)
        assert thread.is_alive() and not undone  # waiting, not refused
        provider.release.set()
        await events_until(turn, "settled")
        await asyncio.to_thread(thread.join, 10)

    asyncio.run(run())
    assert undone[0].turns == 0 and undone[0].can_redo is True
    # the turn it stepped back from was settled whole, and Redo brings it back settled
    redone = tree_ops.redo(tk, aid)
    assert redone.turns_shown[-1].changes[0].after == 5
    assert storm(tk, aid) == 5


def test_a_reader_that_stops_at_done_does_not_stop_the_pass(held) -> None:
    """A closed tab, or a client that reads only up to `done`: the step still settles."""
    tk, provider = held
    aid = structured(tk)
    provider.queue("The wind rises.", STORM_UP)

    async def run() -> None:
        turn = play_turn(tk, aid, "do", "watch the sea")
        await events_until(turn, "done")
        await turn.aclose()  # the reader is gone
        provider.release.set()
        task = tk.settles.running(aid)
        assert task is not None
        await tk.settles.drain()

    asyncio.run(run())
    assert storm(tk, aid) == 5 and not tk.locks.is_busy(aid)


def test_a_failing_step_keeps_the_turn_marked_and_frees_the_adventure(
    held, monkeypatch: pytest.MonkeyPatch
) -> None:
    tk, provider = held
    aid = structured(tk)
    provider.queue("The wind rises.", STORM_UP)
    provider.release.set()

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug in the state pass")

    monkeypatch.setattr("talekeeper.service.turns.commit_settled", broken)

    async def run() -> dict:
        turn = play_turn(tk, aid, "do", "watch the sea")
        return (await events_until(turn, "settled"))[-1].data

    settled = asyncio.run(run())
    assert settled["turn"]["pending"] is False
    assert [c["type"] for c in settled["changes"]] == ["not_updated"]
    assert storm(tk, aid) == 4  # as the narration left it: nothing half-applied
    assert not tk.locks.is_busy(aid)


def test_a_turn_left_pending_by_a_stopped_process_is_marked_on_the_next_start(
    isolated_home: Path,
) -> None:
    provider = HeldPass([])
    tk = Talekeeper(isolated_home, provider_override=provider)
    aid = structured(tk)
    provider.queue("The wind rises.", STORM_UP)

    async def run() -> None:  # the process "dies" with the pass in flight: its loop ends
        turn = play_turn(tk, aid, "do", "watch the sea")
        await events_until(turn, "done")
        await asyncio.wait_for(provider.in_pass.wait(), waiting.bound(5))

    asyncio.run(run())
    with tk.db.session() as session:
        assert session.get(Adventure, aid).pending_turn_id is not None
    tk.db.dispose()

    again = Talekeeper(isolated_home, provider_override=ScriptedProvider([]))
    story = adventures.story(again, aid)
    last = story.turns_shown[-1]
    assert last.pending is False and last.narration == "The wind rises."
    assert [c.type for c in last.changes] == ["not_updated"]
    assert "not updated" in last.changes[0].reason
    assert storm(again, aid) == 4
    assert settling.sweep(again.db, again.locks) == 0  # nothing left to mark
    again.db.dispose()


def test_a_writer_marks_a_turn_another_process_left_pending(tk: Talekeeper) -> None:
    """PostgreSQL with several processes: the one that died is not the one that finds it."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        adventure.pending_turn_id = adventure.head_node_id
        aid = adventure.id
    story = tree_ops.list_takes(tk, aid)  # a reader changes nothing
    with tk.db.session() as session:
        assert session.get(Adventure, aid).pending_turn_id is not None
    tree_ops.create_save_point(tk, aid, "here")  # a writer, holding the lock, marks it
    with tk.db.session() as session:
        assert session.get(Adventure, aid).pending_turn_id is None
        node = session.get(Node, story.head_id)
        assert node.proposal["interrupted"] == settling.INTERRUPTED


def test_the_lock_waits_only_for_a_background_step() -> None:
    locks = AdventureLocks()
    locks.acquire(1)
    with pytest.raises(AdventureBusy) as busy:
        locks.acquire_waiting(1, timeout=5)  # a turn streaming: refused at once
    assert not isinstance(busy.value, StillSettling)
    locks.lend_to_settle(1)
    with pytest.raises(StillSettling):
        locks.acquire(1)
    threading.Timer(0.2, locks.release, (1,)).start()
    locks.acquire_waiting(1, timeout=5)  # waited out, then taken
    assert locks.is_busy(1) and not locks.is_settling(1)
    locks.lend_to_settle(1)
    with pytest.raises(StillSettling, match="took too long"):
        locks.acquire_waiting(1, timeout=0.1)

    async def on_the_loop() -> None:  # never blocks the loop the step runs on
        with pytest.raises(StillSettling):
            locks.acquire_waiting(1, timeout=5)

    asyncio.run(asyncio.wait_for(on_the_loop(), waiting.bound(2)))


@pytest.mark.skipif(not pg.on_postgresql(), reason=pg.NEEDS_POSTGRESQL)
def test_another_process_waits_for_a_state_pass_and_refuses_a_streaming_turn(
    isolated_home: Path,
) -> None:
    """Two app processes on one PostgreSQL database (two Talekeepers, each with its own
    locks): the second waits while the first's turn is settling (its adventure names a
    pending turn), and is refused at once while the first holds the lock otherwise."""
    first = Talekeeper(isolated_home / "one", provider_override=ScriptedProvider([]))
    second = Talekeeper(isolated_home / "two", provider_override=ScriptedProvider([]))
    with first.db.session() as session:
        aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    first.locks.acquire(aid)  # a turn streaming in the first process
    with pytest.raises(AdventureBusy) as busy:
        second.locks.acquire_waiting(aid, timeout=5)
    assert not isinstance(busy.value, StillSettling)
    with first.db.session() as session:  # its turn is written: the state pass runs now
        adventure = session.get(Adventure, aid)
        adventure.pending_turn_id = adventure.head_node_id
    first.locks.lend_to_settle(aid)
    took = threading.Event()
    waiter = threading.Thread(target=lambda: (second.locks.acquire_waiting(aid), took.set()))
    waiter.start()
    assert not took.wait(0.5)  # waiting, not refused
    with first.db.session() as session:  # settled: the mark cleared, then the lock let go
        session.get(Adventure, aid).pending_turn_id = None
    # Between the two, the step still holds the lock: a writer looking now is told to wait,
    # not refused (the waiting thread hit this moment in CI and gave up).
    with pytest.raises(StillSettling):
        second.locks.acquire(aid)
    first.locks.release(aid)
    assert took.wait(waiting.bound(10))
    waiter.join(waiting.bound(10))
    assert second.locks.is_busy(aid)
    second.locks.release(aid)
    first.db.dispose()
    second.db.dispose()


def test_an_action_that_waits_says_so_first(held) -> None:
    """The stream of an action sent during the pass opens with a `status` in words, before
    it is even accepted; a JSON client gets the settled turn all the same."""
    tk, provider = held
    aid = structured(tk)
    provider.queue("The wind rises.", STORM_UP, "The rain comes.", '{"events": []}')

    async def run() -> list:
        first = play_turn(tk, aid, "do", "watch the sea")
        await events_until(first, "done")
        await asyncio.wait_for(provider.in_pass.wait(), 5)
        second = play_turn(tk, aid, "do", "go inside")
        opening = await anext(second)
        provider.release.set()
        await events_until(first, "settled")
        return [opening, *await events_until(second, "settled")]

    events = asyncio.run(run())
    assert events[0].kind == "status"
    assert events[0].data["message"] == (
        "Updating the story's state… your action is played as soon as that is done."
    )
    assert [e.kind for e in events][1] == "accepted"
