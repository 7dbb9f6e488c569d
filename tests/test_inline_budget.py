"""On a player's own server with an 8k window, inline mode: after 20 turns of the demo the
story, not the protocol, fills the prompt."""

from __future__ import annotations

import asyncio
import itertools

from talekeeper.context.prompt import PROTOCOL
from talekeeper.memory.worker import worker_for
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import build_context, collect_turn
from tests.llm.fakeserver import FakeOpenAIServer

SENTENCES = [
    "Rain needles the harbour as Maren coils a wet rope at the end of the jetty.",
    "The lamps along the seawall gutter, one after another, as if something breathes on them.",
    "Tobin's forge glows orange behind you, and the smell of hot iron drifts over the cobbles.",
    "A gull lands on the bollard beside you and tilts its head at the dark lighthouse.",
    "Somewhere below the boards the tide sucks at the pilings with a slow, patient sound.",
    "Maren mutters that no boat has crossed to the rock since the lantern failed.",
    "You notice fresh scratches on the chapel door, as though someone tried the lock at night.",
    "The wind shifts, carrying the bell of the drowned church from far out on the water.",
]
STATE = (
    '\n\n```state\n{"events": [{"type": "change_stat", "stat": "npc.maren.trust", "by": 1}]}\n```'
)


def narration(n: int) -> str:
    picked = itertools.islice(itertools.cycle(SENTENCES), n, n + 6)
    return " ".join(picked) + (STATE if n % 3 == 0 else "")


def test_after_twenty_turns_history_is_the_largest_section_and_the_protocol_small(
    isolated_home, monkeypatch
) -> None:
    counter = itertools.count()
    props = {("GET", "/props"): {"default_generation_settings": {"n_ctx": 8192}}}
    with FakeOpenAIServer(lambda request: narration(next(counter)), extra=props) as server:
        monkeypatch.setenv("TALEKEEPER_ENDPOINT", server.url)
        tk = Talekeeper(isolated_home)

        async def play() -> dict[str, int]:
            with tk.db.session() as session:
                aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
            for n in range(20):
                await collect_turn(tk, aid, "do", f"look around the harbour, step {n}")
                await worker_for(tk).drain()
            prepared = await build_context(tk, aid, "do", "walk to the lighthouse")
            await tk.aclose()
            assert prepared.assembly.budget == 8192
            return {s.name: s.tokens for s in prepared.assembly.sections}

        sizes = asyncio.run(play())
    total = sum(sizes.values())
    assert max(sizes, key=sizes.get) == "history", sizes
    protocol = sum(sizes.get(name, 0) for name in PROTOCOL)
    assert protocol > 0  # inline mode: the vocabulary and the reminder are there
    assert protocol <= 0.15 * total, (protocol, total, sizes)
