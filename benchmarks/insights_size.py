"""Insights storage per turn: how much a turn's "what was sent and why" adds to the story.

    .venv/bin/python benchmarks/insights_size.py [--turns 200]

Plays a story with a scripted model (narrations of ~60 words, the demo scenario's five
cards, the memory bank on) and reports, per turn: the bytes of the stored Insights record,
the new deduplicated texts it added, the node's own narration for scale, and what storing
every section's full text (the naive way) would have cost instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.llm.scripted import ScriptedProvider  # noqa: E402
from talekeeper.memory.worker import worker_for  # noqa: E402
from talekeeper.service import adventures  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.service.settings import SettingsUpdate, update_settings  # noqa: E402
from talekeeper.service.turns import collect_turn  # noqa: E402
from talekeeper.store.models import ContextText, Node, TurnInsight  # noqa: E402

LINES = [
    "Rain hammers the slate roofs of Greywater and the gutters overflow into the lane.",
    "Maren coils a wet rope on the ferry's deck and watches you without a word.",
    "Far out on the headland the lighthouse stands black; no lamp burns in the lantern room.",
    "Tobin's cottage door is shut, but smoke curls from the chimney and a dog barks inside.",
    "The tide is rising over the drowned causeway, and the wind smells of salt and tar.",
]


def reply(request) -> str:
    system = request.messages[0].content if request.messages else request.prompt
    if system.startswith("[talekeeper:"):
        return "Wren walked the harbour, spoke with Maren about the ferry and saw smoke at Tobin's cottage."
    n = len(request.messages)
    return " ".join(LINES[(n + i) % len(LINES)] for i in range(3))


async def run(turns: int) -> dict:
    tk = Talekeeper(
        Path(tempfile.mkdtemp(prefix="tk-insights-")),
        provider_override=ScriptedProvider(reply, chunk_size=200),
    )
    with tk.db.session() as session:
        update_settings(session, SettingsUpdate(generation={"context_budget": 4096}))
        adventure_id = adventures.start_adventure(session, "greywater-lantern", {"name": "Wren"}).id
    for n in range(turns):
        await collect_turn(
            tk, adventure_id, "do", f"walk along the harbour and look around, step {n}"
        )
        await worker_for(tk).drain()
    with tk.db.session() as session:
        records = [
            TurnInsight.data.type.process_bind_param(r.data, None)
            for r in session.query(TurnInsight)
        ]
        texts = sum(len(t.text) + len(t.digest) for t in session.query(ContextText))
        narration = sum(
            len(n.narration.encode()) + len(n.action_text.encode()) for n in session.query(Node)
        )
    from talekeeper.context import insights as insights_mod
    from talekeeper.service.insights import of_turn as turn_insights

    with tk.db.session() as session:
        last = session.query(Node).order_by(Node.depth.desc()).first()
        node_ids = [n.id for n in session.query(Node).filter(Node.depth > 0)]
    naive = 0
    for node_id in node_ids[-20:]:
        data = turn_insights(tk, adventure_id, node_id)
        naive += len(zlib.compress(json.dumps(data["sections"]).encode(), 6))
    naive_per_turn = naive / min(20, len(node_ids))
    del insights_mod, last
    return {
        "turns": turns,
        "record_bytes_per_turn": round(sum(map(len, records)) / len(records)),
        "text_bytes_per_turn": round(texts / len(records)),
        "insights_bytes_per_turn": round((sum(map(len, records)) + texts) / len(records)),
        "narration_bytes_per_turn": round(narration / (turns + 1)),
        "naive_full_text_bytes_per_turn_compressed": round(naive_per_turn),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.turns)), indent=1))


if __name__ == "__main__":
    main()
