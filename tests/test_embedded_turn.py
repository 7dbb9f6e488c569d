"""The whole turn with the real embedded model: narration streams, and the state block is
produced under a grammar narrowed to the ids that exist, so it always parses."""

import asyncio

import pytest

from talekeeper.service import adventures, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import collect_turn, current_state_mode

pytestmark = pytest.mark.embedded


def test_the_demo_plays_a_turn_with_the_embedded_model(isolated_home) -> None:
    tk = Talekeeper(isolated_home)
    try:
        assert current_state_mode(tk) == "structured"
        with tk.db.session() as session:
            aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
        done = asyncio.run(collect_turn(tk, aid, "do", "ask Maren to take you across"))
        assert done.turn.narration.strip()
        assert "```" not in done.turn.narration
        with tk.db.session() as session:
            node = adventures.get_turn(
                session, unit_of_work.get_adventure(session, aid), done.turn.id
            )
            record = node.proposal
        # The grammar guarantees a readable block: a report exists, nothing was unparseable.
        assert record["source"] == "model" and record["parse_error"] is None
        assert record["report"] is not None
        assert all(
            c.status in ("applied", "limited", "unchanged", "rejected") for c in done.changes
        )
    finally:
        asyncio.run(tk.aclose())


def test_the_embedded_models_state_pass_runs_after_the_turn_is_written(isolated_home) -> None:
    """The real model in structured mode: `done` (Send enabled) comes with the turn written
    and its state pass still to run; `settled` brings the grammar-bound proposal, settled
    into the same turn, which the story then shows."""
    from talekeeper.service.turns import play_turn
    from talekeeper.store.models import Adventure

    tk = Talekeeper(isolated_home)
    try:
        with tk.db.session() as session:
            aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id

        async def run() -> list:
            seen = []
            async for event in play_turn(tk, aid, "do", "walk to the end of the jetty"):
                if event.kind == "done":  # the state pass has not run yet: the turn is pending
                    with tk.db.session() as session:
                        pending = session.get(Adventure, aid).pending_turn_id
                    assert pending == event.data["turn"]["id"] and event.data["turn"]["pending"]
                seen.append(event)
            return seen

        events = asyncio.run(run())
        kinds = [e.kind for e in events]
        assert kinds.index("done") < kinds.index("settled") == len(kinds) - 1
        done, settled = events[kinds.index("done")].data, events[-1].data
        assert settled["turn"]["id"] == done["turn"]["id"] and not settled["turn"]["pending"]
        with tk.db.session() as session:
            adventure = unit_of_work.get_adventure(session, aid)
            node = adventures.get_turn(session, adventure, done["turn"]["id"])
            assert adventure.pending_turn_id is None and adventure.head_node_id == node.id
            assert node.proposal["report"] is not None and node.proposal["parse_error"] is None
        story = adventures.story(tk, aid, limit=1).turns_shown[-1]
        changes = [change.model_dump(mode="json") for change in story.changes]
        assert changes == settled["changes"] and story.pending is False
    finally:
        asyncio.run(tk.aclose())
