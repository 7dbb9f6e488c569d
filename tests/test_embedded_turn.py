"""The whole turn with the real embedded model: narration streams, and the state block is
produced under a grammar narrowed to the ids that exist, so it always parses."""

import asyncio

import pytest

from talekeeper.core import Talekeeper
from talekeeper.service import adventures, unit_of_work
from talekeeper.service.turns import collect_turn, current_state_mode

pytestmark = pytest.mark.embedded


def test_the_demo_plays_a_turn_with_the_embedded_model(isolated_home) -> None:
    tk = Talekeeper(isolated_home)
    try:
        assert current_state_mode(tk) == "structured"
        with tk.db.session() as session:
            aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
        done = asyncio.run(collect_turn(tk, aid, "do", "ask Maren to take you across"))
        assert done["turn"]["narration"].strip()
        assert "```" not in done["turn"]["narration"]
        with tk.db.session() as session:
            node = adventures.get_turn(
                session, unit_of_work.get_adventure(session, aid), done["turn"]["id"]
            )
            record = node.proposal
        # The grammar guarantees a readable block: a report exists, nothing was unparseable.
        assert record["source"] == "model" and record["parse_error"] is None
        assert record["report"] is not None
        assert all(
            c["status"] in ("applied", "limited", "unchanged", "rejected") for c in done["changes"]
        )
    finally:
        asyncio.run(tk.aclose())
