"""What a turn costs the database, counted (never timed): the statements a played turn
sends stay few, and the same whether the story is 90 turns long or 270 (longer than the
history window) — every per-turn read is O(window), not O(story).
`benchmarks/turn_overhead.py` measures the time."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import event

from talekeeper.context.settings import update_context_settings
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.service.turn_events import Done
from talekeeper.service.turns import play_turn
from talekeeper.store.models import Memory, StorySummary
from talekeeper.story import tree

# A warm turn today: step 2 reads the adventure with its head, the settings (the
# connection's among them, in one statement), the path, the summary in force, the memories
# changed, the last turns' Insights; step 7 reads the adventure with the parent, writes the
# node and the head, looks up and stores the texts new to Insights (the state notes change
# with the story), writes the record and the memories used. It was 29 before the turn's
# reads were trimmed, 14 while the connection's settings were a statement of their own;
# raise it only knowingly.
MOST_STATEMENTS = 13
# A new take of the last turn: the retry reads the turn it tells again (one statement),
# step 2 reads the adventure with the parent the take goes below (one), then a turn's reads;
# its commit also relinks the redo chain (a take forks the line: story/chains, five), reads
# the head it leaves and writes the takes' line ends (one statement both ways), which a
# played turn does not. It was 27 when the retry read the adventure, the turn and its parent
# apart, step 2 the adventure, the take and its parent, and each way of line end was written
# apart.
MOST_RETRY_STATEMENTS = 21
# A turn with a companion's remark, up to its `settled`: the remark is built from the turn's
# start (no read of its own), and written after `done` by step 7 (later)'s one short
# transaction — the pending turn, its narration, its call in Insights. It was 24 when that
# transaction read the adventure and the turn apart and asked for each text alone.
COMPANION_TRANSACTIONS = 3
BANK_RUN = str(Path("talekeeper", "memory", "worker.py"))
MOST_COMPANION_STATEMENTS = 21
NARRATION = "Rain needles across the harbour. Maren squints at you and says nothing."


def block_memory(adventure_id: int, node_id: int, depth: int, text: str) -> Memory:
    """The memory the bank writes of the 6 turns up to `depth`."""
    return Memory(
        adventure_id=adventure_id,
        node_id=node_id,
        first_depth=depth - 5,
        depth=depth,
        text=text,
        source="auto",
        pinned=False,
        status="active",
        uses=0,
    )


def grow(tk: Talekeeper, turns: int) -> int:
    """A story of `turns` turns written straight into the tree, with a memory every 6
    turns and a summary every 15, as the memory bank leaves them."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        for depth in range(1, turns + 1):
            node = tree.append_child(
                session,
                adventure,
                node,
                tree.NewTurn(
                    "do", f"walk on, step {depth}", f"{NARRATION} ({depth})", state=node.state
                ),
            )
            if depth % 6 == 0 and depth >= 12:
                text = f"Ada and Maren crossed the harbour; the brass key {depth}."
                session.add(block_memory(adventure.id, node.id, depth, text))
            if depth % 15 == 0:
                session.add(
                    StorySummary(
                        adventure_id=adventure.id,
                        node_id=node.id,
                        depth=depth,
                        text=f"The story so far, to turn {depth}.",
                        source="auto",
                    )
                )
        return adventure.id


def statements_of_turn(
    tk: Talekeeper, scripted: ScriptedProvider, adventure_id: int, text: str, retry: bool = False
) -> list[str]:
    """Every statement sent from the turn's start to its `done`; with `retry`, of a new take
    of the last turn instead, from the retry's own read of the turn it tells again."""
    sent: list[str] = []
    done = False

    def on_execute(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if not done:  # (the memory bank's run after the turn is not the turn's)
            sent.append(" ".join(statement.split())[:120])

    async def run() -> None:
        nonlocal done
        events = (
            tree_ops.retry(tk, adventure_id) if retry else play_turn(tk, adventure_id, "do", text)
        )
        async for item in events:
            if isinstance(item, Done):
                done = True
                return
        raise AssertionError("no done event")

    scripted.queue(f"The tide turns. ({text})")
    event.listen(tk.db.engine, "before_cursor_execute", on_execute)
    try:
        asyncio.run(run())
    finally:
        event.remove(tk.db.engine, "before_cursor_execute", on_execute)
    return sent


def test_a_turns_statements_are_few_and_do_not_grow_with_the_story(
    tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    assert_few_statements(tk, scripted, MOST_STATEMENTS)


def test_a_retrys_statements_are_few_and_grow_neither_with_the_story_nor_its_takes(
    tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    assert_few_statements(tk, scripted, MOST_RETRY_STATEMENTS, retry=True)


def assert_few_statements(
    tk: Talekeeper, scripted: ScriptedProvider, most: int, retry: bool = False
) -> None:
    """A warm turn (with `retry`, a new take of the last turn, which has takes already)
    sends at most `most` statements, as many in a story of 90 turns as in one of 270."""
    with tk.db.session() as session:
        update_context_settings(session, {"memory_enabled": False})  # no bank run mid-count
    counts = {}
    for turns in (90, 270):
        story = grow(tk, turns)
        for n in range(2):  # the first turns fill what is kept between turns
            statements_of_turn(tk, scripted, story, f"warm {n}")
        for _ in range(3 if retry else 0):
            statements_of_turn(tk, scripted, story, "", retry=True)
        sent = statements_of_turn(tk, scripted, story, "look around", retry)
        counts[turns] = len(sent)
        assert len(sent) <= most, "\n".join(sent)
    assert counts[90] == counts[270], counts


def test_the_memory_banks_run_asks_only_about_the_blocks_past_the_nearest_mark(
    tk: Talekeeper,
) -> None:
    """Each run after a turn looks for blocks with no memory; asking about every block on
    the path made that O(story). A run reads the mark the runs before it left on the path (in
    the database: any process, after a restart, after an undo or on another line) and asks
    only about its gaps and the ends past it; a block that has no memory is still found."""
    from talekeeper.context.settings import context_settings
    from talekeeper.memory import bank, due
    from talekeeper.store.models import Adventure, Node
    from talekeeper.story import paths

    story = grow(tk, 270)
    asked: list[int] = []

    def on_execute(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if "FROM memories" in statement:
            asked.append(len(parameters) - 2)  # less the adventure's id and the source: ends

    def found(head: int | None = None) -> list[int]:
        with tk.db.session() as session:
            head = head or session.get(Adventure, story).head_node_id
            path = bank.path_ids(session, head)
            settings = context_settings(session)
            return [b.depth for b in due.due_blocks(session, story, path, settings)]

    def play_and_look(depth: int) -> list[int]:
        """One turn played, then the bank's run after it: the blocks it finds due."""
        with tk.db.session() as session:
            adventure = session.get(Adventure, story)
            turn = tree.NewTurn("do", "on", f"Turn {depth}.")
            tree.append_child(session, adventure, tree.head(session, adventure), turn)
        return found()

    def remember(end: int) -> None:
        with tk.db.session() as session:
            path = bank.path_ids(session, session.get(Adventure, story).head_node_id)
            session.add(block_memory(story, path[end], end, f"Turns to {end}."))

    remember(6)  # the first block's memory (grow starts at turn 12)
    assert found() == []  # no mark yet: every block on the path asked about, once
    event.listen(tk.db.engine, "before_cursor_execute", on_execute)
    try:
        for depth in range(271, 283):  # turns played one by one, the bank running after each
            look = play_and_look(depth)
        assert look == [276]  # the block written while no memory was made for it
        assert asked and max(asked) <= 1, asked

        # 276 never gets its memory (its summary keeps failing) while the blocks after it
        # do: each run asks about that one and the new end, never again from 276 on.
        asked.clear()
        for depth in range(283, 320):
            look = play_and_look(depth)
            for end in look:
                if end != 276:
                    remember(end)
            assert 276 in look
        assert asked and max(asked) <= 2, asked

        # A restart (nothing kept in the process), then an undo 100 turns back and a new
        # line from there: still only a window of ends asked about.
        paths._cache.clear()
        asked.clear()
        with tk.db.session() as session:
            adventure = session.get(Adventure, story)
            back = bank.path_ids(session, adventure.head_node_id)[219]
            adventure.head_node_id = back
        assert found(back) == []
        for depth in range(220, 240):
            look = play_and_look(depth)
        assert look == [222, 228] and asked and max(asked) <= 8, asked
        with tk.db.session() as session:  # a Save Point far down the first line
            far = session.get(Node, bank.path_ids(session, back)[100]).id
        asked.clear()
        assert found(far) == [] and asked and max(asked) <= 8, asked
    finally:
        event.remove(tk.db.engine, "before_cursor_execute", on_execute)


def test_a_companions_remark_costs_only_its_settling(
    tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    """Counted to the turn's last event (`settled`): step 2 (load)'s read, step 6 (commit)'s
    write and step 7 (later)'s settling — the remark itself opens no transaction."""
    import json
    import traceback

    from tests.test_turn_pipeline import count_turn

    with tk.db.session() as session:
        update_context_settings(session, {"memory_enabled": False})
        story = adventures.start_adventure(
            session,
            "fenmouth-ledger",
            origin_id="deserter",
            character={"name": "Aldric", "class": "sellsword"},
        ).id
    moment = {"events": [{"type": "record_moment", "text": "you fell in the river", "weight": 8}]}
    scripted.queue(f"Your boot finds an eel.\n```state\n{json.dumps(moment)}\n```", "Fog drifts.")
    count_turn(tk, story, "step off the barge")
    count_turn(tk, story, "wring out your cloak")
    scripted.queue("A bell rings from the chapel.", '"Mind the eels, boss," Brannoc says.')
    sent: list[str] = []

    def on_execute(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        # (the memory bank's run, scheduled after the turn is settled, is not the turn's)
        if not any(frame.filename.endswith(BANK_RUN) for frame in traceback.extract_stack()):
            sent.append(" ".join(statement.split())[:120])

    event.listen(tk.db.engine, "before_cursor_execute", on_execute)
    try:
        transactions, _, done = count_turn(tk, story, "listen")
    finally:
        event.remove(tk.db.engine, "before_cursor_execute", on_execute)
    assert done["turn"]["narration"].endswith('"Mind the eels, boss," Brannoc says.')
    assert transactions == COMPANION_TRANSACTIONS
    assert len(sent) <= MOST_COMPANION_STATEMENTS, "\n".join(sent)
