"""Engine overhead per turn, over HTTP, against an instant model, at 100 and 10,000 turns.

    .venv/bin/python benchmarks/turn_overhead.py [--sizes 100,10000] [--turns 30] [--profile]

1. Builds one story per size straight into the tree (with what a played story of that
   length has: a memory every 6 turns — at most 80 active, the older ones forgotten, as
   the bank's capacity does — and a summary every 15 turns).
2. Serves talekeeper on loopback (uvicorn, the real app) with its model endpoint set to a
   fake OpenAI-compatible server that answers at once (`tests/llm/fakeserver.py`), and
   plays `--turns` turns on each story in turn, round-robin, through `POST /api/
   adventures/{id}/turns`: prompt assembly, memory retrieval, streaming, extraction, state
   engine, commit, Insights. The fake model and the client each run in a process of their
   own, as a model server and a browser do: in this one their work would be counted as
   the engine's, and take turns with it for the interpreter. The memory bank writes its
   memories between turns on the same fake model, as in play: first each turn waits for
   the bank's run after the one before to end (as in play, where the player is reading
   meanwhile) and that run is timed apart; then the same number of turns again back to
   back, the bank's run sharing the two cores with the next turn (what a turn costs when
   the server is that busy).
3. Prints, per size, the median wall time per turn as the client sees it (the model costs
   nothing here, so this is the engine's overhead on the player's path), the CPU time the
   server's process spent on it, the bank's run after each, and the back-to-back time;
   and the ratios of the largest size to the smallest, and the load average (the machine
   is shared); last, the calls the fake model answered and the TCP connections it took
   (kept alive between calls: as many as ran at once, not one a call). Targets: ≤ 20 ms at 100 turns; 10,000 / 100 ≤ 1.2. Nothing is asserted.
4. Prints what reading a turn's narration costs on its own (the reader, the change reader
   and the contradiction guard, `state_engine.read_into`; part of every turn above), for a
   plain narration and for one that tells changes and clashes. Target: ≤ 2 ms.
5. Prints what the memory bank's run spends finding the blocks due a memory (`memory/due`)
   at the head, after an undo, on another line and at a Save Point, measured before the
   turns above (and the story's first run, with no marks yet), and the 10,000 / 100 ratio.

`--profile` also runs a few turns on the largest story under cProfile in-process (the
same pipeline without HTTP) and prints where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import multiprocessing
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.memory.worker import MemoryWorker, worker_for  # noqa: E402
from talekeeper.service import (
    adventures,  # noqa: E402
    unit_of_work,
)
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.store.models import Memory, Node, StorySummary, utcnow  # noqa: E402
from talekeeper.story import tree  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")  # the same way on every platform

NARRATION = (
    "Rain needles across the harbour as the ferry lurches against its ropes. Maren squints at "
    "you, then at the lantern in your hands, and says nothing for a long moment. Far out, the "
    "dark lighthouse stands against a bruised sky while the tide drags at the pilings."
)
MEMORY = "Ada and Maren crossed the harbour at dusk; Tobin kept the brass key {n} in the forge."
CAPACITY = 80


def bank_rows(
    session: Session, adventure_id: int, node_id: int, depth: int, turns: int, now: datetime
) -> None:
    """What the memory bank had written at turn `depth` of a `turns`-turn story played to
    `now`: a memory every 6 turns (at most CAPACITY active, the older ones forgotten, as the
    bank's capacity does) and a summary every 15."""
    if depth % 6 == 0 and depth >= 12:
        status = "active" if depth > turns - 6 * CAPACITY else "forgotten"
        # written while the story was played (20 s a turn), not all just now: the
        # kept index re-reads the rows written in its last 30 s (memory/recall)
        written = now - timedelta(seconds=20 * (turns - depth))
        session.add(
            Memory(
                adventure_id=adventure_id,
                node_id=node_id,
                first_depth=depth - 5,
                depth=depth,
                text=MEMORY.format(n=depth),
                source="auto",
                pinned=False,
                status=status,
                uses=0,
                created_at=written,
                updated_at=written,
            )
        )
    if depth % 15 == 0:
        session.add(
            StorySummary(
                adventure_id=adventure_id,
                node_id=node_id,
                depth=depth,
                text=f"The story so far, to turn {depth}.",
                source="auto",
            )
        )


def build(tk: Talekeeper, turns: int) -> int:
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        state, path = node.state, [node.id]
        now = utcnow()
        for depth in range(1, turns + 1):
            node = tree.append_child(
                session,
                adventure,
                node,
                tree.NewTurn("do", f"walk on, step {depth}", f"{NARRATION} ({depth})", state=state),
            )
            path.append(node.id)
            bank_rows(session, adventure.id, node.id, depth, turns, now)
        return adventure.id


def _fake_model(pipe) -> None:  # noqa: ANN001
    """The fake OpenAI-compatible server, in a process of its own: its URL is sent back,
    and it serves until the benchmark says it is done."""
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - (clients closing early are no news)
    from tests.llm.fakeserver import FakeOpenAIServer, FakeReply

    reply = FakeReply(NARRATION, chunk_size=4096, usage=None)
    calls = 0

    def answer(request: object) -> FakeReply:
        nonlocal calls
        calls += 1
        return reply

    with FakeOpenAIServer(answer, record=False) as fake:
        pipe.send(fake.url)
        pipe.recv()
        pipe.send({"model calls": calls, "TCP connections to the model": fake.connections})


class FakeModel:
    """The fake model's process, for the length of a `with`; its URL is the value."""

    def __enter__(self) -> str:
        self.pipe, there = SPAWN.Pipe()
        self.process = SPAWN.Process(target=_fake_model, args=(there,), daemon=True)
        self.process.start()
        there.close()  # (so a child that dies is an EOFError here, not a wait forever)
        return self.pipe.recv()

    def __exit__(self, *exc: object) -> None:
        self.pipe.send(None)
        self.served = self.pipe.recv()  # the calls it answered, the connections it accepted
        self.process.join(timeout=10)


class Served:
    """The real app under uvicorn on a free loopback port, in a thread."""

    def __init__(self, tk: Talekeeper) -> None:
        import uvicorn

        from talekeeper.web.app import create_app

        self.config = uvicorn.Config(
            create_app(tk), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def play(
    base: str, aids: dict[int, int], turns: int, bank: MemoryWorker | None = None
) -> tuple[dict[int, list[float]], dict[int, list[float]], dict[int, list[float]]]:
    """Per-turn wall times for each size, measured by a client in a process of its own (as a
    browser is: in this one its work would take turns with the server's); with `bank`, each
    turn waits for the memory bank's run after the previous one to end (as in play, where
    the player reads meanwhile), and the bank's run is timed on its own. Without, turns
    follow each other at once and the bank's run shares the CPU with the next turn. Also
    the CPU time this process (the server) spent on each turn."""
    times: dict[int, list[float]] = {size: [] for size in aids}
    banked: dict[int, list[float]] = {size: [] for size in aids}
    cpu: dict[int, list[float]] = {size: [] for size in aids}
    sizes = {aid: size for size, aid in aids.items()}
    here, there = SPAWN.Pipe()
    client = SPAWN.Process(
        target=_client, args=(there, base, list(aids.values()), turns), daemon=True
    )
    client.start()
    there.close()  # (so a client that dies is an EOFError here, not a wait forever)
    while (message := here.recv()) is not None:
        aid, n, elapsed = message  # asked before a turn (elapsed None) and after it
        if elapsed is None:
            used = time.process_time()
            here.send(None)
            continue
        used = time.process_time() - used
        ended = time.perf_counter()
        while bank is not None and bank._tasks:  # (read from this thread: a snapshot)
            time.sleep(0.0005)
        if n >= 2:  # the first turns fill the kept path and index (a restart's cost)
            times[sizes[aid]].append(elapsed)
            banked[sizes[aid]].append(time.perf_counter() - ended)
            cpu[sizes[aid]].append(used)
        here.send(None)
    client.join(timeout=10)
    if client.exitcode:
        raise SystemExit("the client failed (see above)")
    return times, banked, cpu


def _client(pipe, base: str, aids: list[int], turns: int) -> None:  # noqa: ANN001
    """The player's side: each turn a POST, timed from here; the server is told around it."""
    with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}) as client:
        for n in range(turns + 2):
            for aid in aids:
                pipe.send((aid, n, None))
                pipe.recv()
                start = time.perf_counter()
                response = client.post(
                    f"/api/adventures/{aid}/turns", json={"kind": "do", "text": f"look around, {n}"}
                )
                elapsed = time.perf_counter() - start
                if response.status_code != 200:
                    pipe.send(None)
                    raise SystemExit(f"turn failed ({response.status_code}): {response.text[:300]}")
                pipe.send((aid, n, elapsed))
                pipe.recv()
    pipe.send(None)


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def p90_ms(values: list[float]) -> float:
    return round(sorted(values)[int(0.9 * (len(values) - 1))] * 1000, 1)


def profile(tk: Talekeeper, aid: int, turns: int = 10) -> str:
    """cProfile over `turns` turns in-process (the memory bank's work between turns is
    left out: it runs after the turn, off the player's path)."""
    from talekeeper.service.turns import collect_turn

    profiler = cProfile.Profile()

    async def inline(function, /, *args, **kwargs):  # noqa: ANN001, ANN202
        return function(*args, **kwargs)

    # cProfile sees one thread: the turn's database steps run here instead of in workers
    asyncio.to_thread = inline  # type: ignore[assignment]

    async def go() -> None:
        await collect_turn(tk, aid, "do", "warm")
        await worker_for(tk).drain()
        for n in range(turns):
            profiler.enable()
            await collect_turn(tk, aid, "do", f"profile {n}")
            profiler.disable()
            await worker_for(tk).drain()

    asyncio.run(go())
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
    return out.getvalue()


TOLD = (
    "Maren rows you across to the lighthouse through the chop. Tobin hands you the brass key "
    "and grins. You turn the brass key over in your palm, thinking of the keeper's cottage."
)


def bank_after_jumps(tk: Talekeeper, aid: int, rounds: int = 20) -> dict[str, float]:
    """What the memory bank's run spends finding the blocks due a memory (`memory/due.py`,
    in-process, the path given), per head: at the head (after a turn, or a restart: nothing
    of it is kept in the process), after an undo of 50 turns, on a line played 12 turns from
    there, at a Save Point half way down. The story's first run, with no marks yet (a
    database from before them: every end asked about once), apart. Run before the story is
    played, while it has no marks."""
    from talekeeper.context.settings import context_settings
    from talekeeper.memory import bank, due

    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, aid)
        settings, head = context_settings(session), adventure.head_node_id
        path = bank.path_ids(session, head)
        node = session.get(Node, path[-51])
        for n in range(12):
            node = tree.append_child(
                session, adventure, node, tree.NewTurn("do", f"elsewhere {n}", NARRATION)
            )
        adventure.head_node_id = head
        heads = {
            "first run, no marks": path,
            "head, after a turn or a restart": path,
            "undo 50 turns": path[:-50],
            "another line": bank.path_ids(session, node.id),
            "save point half way": path[: len(path) // 2],
        }

    def run(found: Sequence[int]) -> float:
        with tk.db.session() as session:
            t0 = time.perf_counter()
            due.due_blocks(session, aid, found, settings, 4)
            return time.perf_counter() - t0

    out = {}
    for label, found in heads.items():
        times = (
            [run(found)] if label == "first run, no marks" else [run(found) for _ in range(rounds)]
        )
        out[f"{label}: ms"] = round(statistics.median(times) * 1000, 3)
    return out


def reading_cost(tk: Talekeeper, aid: int, rounds: int = 200) -> dict[str, float]:
    """What reading a turn's narration costs on its own (state_engine.read_into: the
    reader, the change reader with the validator for what it tells, and the guard), per
    turn, in-process: the benchmark's own narration (no change, no clash), and one that
    tells a move and a handing-over and clashes twice."""
    from talekeeper.service import state_engine

    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, aid)
        rules = state_engine.rules_of(adventure)
        before = state_engine.document_of(tree.head(session, adventure).state, rules)
    out = {}
    for label, text in (("plain narration", NARRATION), ("told changes and clashes", TOLD)):
        wall, cpu = [], []
        for _ in range(rounds):
            settled = state_engine.Settled(text, before.to_json(), {}, [], before)
            t0, c0 = time.perf_counter(), time.thread_time()
            state_engine.read_into(settled, text, before, rules, 1)
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - t0)
        # CPU time is what it costs; wall time also counts waiting for a shared core
        out[f"{label}: CPU ms"] = round(statistics.median(cpu) * 1000, 3)
        out[f"{label}: wall ms"] = round(statistics.median(wall) * 1000, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--turns", type=int, default=30, help="turns timed per story")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    model = FakeModel()
    with model as fake_url:
        os.environ["TALEKEEPER_ENDPOINT"] = fake_url
        os.environ["TALEKEEPER_MODEL"] = "fake-model"
        home = Path(tempfile.mkdtemp(prefix="tk-overhead-"))
        tk = Talekeeper(home)
        start = time.perf_counter()
        aids = {size: build(tk, size) for size in sizes}
        print(
            f"built {', '.join(f'{s:,}' for s in sizes)}-turn stories in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        jumps = {size: bank_after_jumps(tk, aids[size]) for size in sizes}
        bank = worker_for(tk)  # made here, so this thread and the server share it
        with Served(tk) as base:
            times, banked, cpu = play(base, aids, args.turns, bank)
            together, _, _ = play(base, aids, args.turns)
        for size in sizes:
            print(
                json.dumps(
                    {
                        "story turns": size,
                        "turns timed": len(times[size]),
                        "per-turn ms, median": median_ms(times[size]),
                        "p90 ms": p90_ms(times[size]),
                        "server CPU ms": median_ms(cpu[size]),
                        "memory bank's run after it, ms": median_ms(banked[size]),
                        "back to back, per-turn ms": median_ms(together[size]),
                    }
                )
            )
        small, large = min(sizes), max(sizes)
        for label, found in (("", times), ("back to back, ", together)):
            print(
                json.dumps(
                    {
                        "ratio": f"{label}{large:,} / {small:,}",
                        "value": round(
                            statistics.median(found[large]) / statistics.median(found[small]), 2
                        ),
                        "target": "<= 1.2; <= 20 ms at 100",
                    }
                )
            )
        print(json.dumps({"narration reading per turn": reading_cost(tk, aids[small])}))
        for size in sizes:
            print(json.dumps({"story turns": size, "blocks due, found after": jumps[size]}))
        print(
            json.dumps(
                {
                    "ratio": f"blocks due found, {large:,} / {small:,}",
                    "value": {k: round(jumps[large][k] / jumps[small][k], 2) for k in jumps[small]},
                }
            )
        )
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.profile:
            print(profile(tk, aids[large]))
    print(json.dumps(model.served))


if __name__ == "__main__":
    main()
