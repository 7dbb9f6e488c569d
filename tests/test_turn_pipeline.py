"""The turn as its steps: one read at the start, one write at the end — counted on the
database itself — and a stream whose event kinds are the ones the README documents."""

from __future__ import annotations

import asyncio
import json
import re
import traceback
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import event

from talekeeper.context.settings import update_context_settings
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures
from talekeeper.service import settings as settings_service
from talekeeper.service.app import Talekeeper
from talekeeper.service.turn_events import KINDS, Done, Settled
from talekeeper.service.turns import play_turn

TURNS = str(Path("talekeeper", "service", "turns.py"))
README = Path(__file__).parents[1] / "README.md"


def test_the_readme_lists_every_stream_event() -> None:
    line = next(line for line in README.read_text().splitlines() if "play a turn: SSE" in line)
    listed = re.search(r"\(events ([^)]*)\)", line).group(1)
    assert tuple(re.findall(r"`(\w+)`", listed)) == KINDS


def count_turn(
    tk: Talekeeper, adventure_id: int, text: str, take_of: int | None = None
) -> tuple[int, int, dict]:
    """Transactions begun and head snapshots read while a turn runs, up to its last event
    (`settled` after a pending `done`: the background step is part of the turn's cost)."""
    counts = {"begin": 0, "snapshot": 0}

    def on_begin(conn) -> None:  # type: ignore[no-untyped-def]
        # the turn's own (not the memory bank's, which it schedules for after it)
        if any(frame.filename.endswith(TURNS) for frame in traceback.extract_stack()):
            counts["begin"] += 1

    def on_execute(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("SELECT") and "nodes.state" in statement:
            counts["snapshot"] += 1

    async def run() -> dict:
        last = None
        async for item in play_turn(tk, adventure_id, "do", text, take_of=take_of):
            if isinstance(item, Done | Settled):
                last = item.data
        assert last is not None, "no done event"
        return dict(counts, done=last)

    event.listen(tk.db.engine, "begin", on_begin)
    event.listen(tk.db.engine, "before_cursor_execute", on_execute)
    try:
        result = asyncio.run(run())
    finally:
        event.remove(tk.db.engine, "begin", on_begin)
        event.remove(tk.db.engine, "before_cursor_execute", on_execute)
    return result["begin"], result["snapshot"], result["done"]


def test_a_turn_runs_two_transactions_and_reads_the_head_once(
    tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    with tk.db.session() as session:
        update_context_settings(session, {"memory_enabled": False})
        story = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    for mode, replies in (
        (
            "inline",
            [
                'Maren nods.\n```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", "value": true}]}\n```'
            ],
        ),
        ("structured", ["The ferry creaks.", '{"events": []}']),
    ):
        with tk.db.session() as session:
            settings_service.update_settings(
                session, settings_service.SettingsUpdate(generation={"state_updates": mode})
            )
        scripted.queue(*replies)
        transactions, snapshots, done = count_turn(tk, story, f"wait ({mode})")
        # step 2 (load)'s read, step 6 (commit)'s write, and in structured mode the short
        # transaction that settles the turn after its state pass (step 7 (later))
        assert transactions == (2 if mode == "inline" else 3), (mode, transactions)
        assert snapshots == 1, (mode, snapshots)
        assert done["turn"]["narration"]
    # a new take of the last turn reads its parent's snapshot once too
    scripted.queue("The ferry groans.", '{"events": []}')
    transactions, snapshots, _ = count_turn(tk, story, "wait again", take_of=done["turn"]["id"])
    assert transactions == 3 and snapshots == 1


def test_a_companions_remark_adds_only_its_settling(
    client: TestClient, tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    """Banter is its own call, built from the turn's one start: no transaction of its own,
    and the head's snapshot read once. It comes after the turn is written (step 7 (later)),
    so settling the turn is the one more, short transaction."""
    from tests.test_worlds import start

    aid = start(client, "deserter", **{"class": "sellsword"})["id"]
    moment = {"events": [{"type": "record_moment", "text": "you fell in the river", "weight": 8}]}
    scripted.queue(
        "Your boot finds an eel.\n```state\n" + json.dumps(moment) + "\n```", "Fog drifts."
    )
    count_turn(tk, aid, "step off the barge")
    count_turn(tk, aid, "wring out your cloak")
    scripted.queue("A bell rings from the chapel.", '"Mind the eels, boss," Brannoc says.')
    transactions, snapshots, done = count_turn(tk, aid, "listen")  # the narrator, then Brannoc
    assert done["turn"]["narration"].endswith("Brannoc says.")
    assert transactions == 3 and snapshots == 1, (transactions, snapshots)


def test_the_prose_is_kept_once_per_turn(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch
) -> None:
    """The prose guards' last pass (`kept_prose`: echoes, loops, a cut-off sentence) runs
    once per turn in either mode; structured mode's state pass reuses the kept prose."""
    from talekeeper.service import turns

    kept: list[str] = []

    def counted(guard, reply, prose):  # type: ignore[no-untyped-def]
        kept.append(prose)
        return keep(guard, reply, prose)

    keep = turns.kept_prose
    monkeypatch.setattr(turns, "kept_prose", counted)
    with tk.db.session() as session:
        update_context_settings(session, {"memory_enabled": False})
        story = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    for mode, replies in (
        ("inline", ['Maren nods.\n```state\n{"events": []}\n```']),
        ("structured", ["The ferry creaks.", '{"events": []}']),
    ):
        with tk.db.session() as session:
            settings_service.update_settings(
                session, settings_service.SettingsUpdate(generation={"state_updates": mode})
            )
        scripted.queue(*replies)
        kept.clear()
        _, _, done = count_turn(tk, story, f"wait ({mode})")
        assert len(kept) == 1, (mode, kept)
        assert done["turn"]["narration"] == replies[0].split("\n")[0]
