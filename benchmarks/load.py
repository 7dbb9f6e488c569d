"""Load test: N players at once against 1 and 2 app processes on PostgreSQL, and 1 on SQLite.

    .venv/bin/python benchmarks/load.py [--players 8] [--turns 25] [--database-url URL]

Everything on loopback and bounded: a fake OpenAI-compatible model server that answers at
once (tests/reliability/fakemodel.py), real `talekeeper serve` subprocesses, and N player
threads, each with an adventure of its own, playing `--turns` turns, undoing now and then,
and reading its story between turns. The model costs nothing here, so a turn's time is the
engine's overhead: reading the story, building the prompt, extracting the reply, committing.
Players are dealt round-robin to the app processes (as a reverse proxy would).

Printed per setup: turns per second (all players together), p50/p95 of a turn's time, and
the checks run afterwards on the database itself: no acknowledged turn lost or duplicated,
every node where the player saw it, every head valid (tests/reliability/invariants.py).

And where the CPU went, per turn (Linux: read from /proc): the app processes, this
database's PostgreSQL backends, and this process (the players' HTTP clients and the fake
model server). With the model free, a turn is CPU work end to end, so `cores / CPU per
turn` is the most turns per second the machine can give whatever the number of processes:
when one process already comes close to it, a second one has no CPU to add.

PostgreSQL: `--database-url` (or $TALEKEEPER_DATABASE_URL) names a server where the role may
create databases; each PostgreSQL setup gets a fresh database there, dropped after.
scripts/postgres.sh starts one on loopback. Without one, only the SQLite setup runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.store.db import DATABASE_URL_ENV, parse_database_url  # noqa: E402
from tests import pg  # noqa: E402
from tests.reliability.crash import DEMO, ServerProcess  # noqa: E402
from tests.reliability.fakemodel import FakeModelServer  # noqa: E402
from tests.reliability.invariants import check_database  # noqa: E402

UNDO_EVERY = 5  # every fifth turn is followed by an undo, and the turn is played again


@dataclass
class Player:
    """What one player was told: the turns acknowledged, in order, and the head last seen."""

    adventure: int = 0
    turns: list[float] = field(default_factory=list)  # seconds per acknowledged turn
    kept: list[int] = field(default_factory=list)  # acknowledged turns still on the path
    undone: list[int] = field(default_factory=list)  # acknowledged turns undone after
    head: int = 0
    errors: list[str] = field(default_factory=list)


def play(base_url: str, turns: int, player: Player) -> None:
    with httpx.Client(base_url=base_url, timeout=60) as http:
        made = http.post("/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}})
        made.raise_for_status()
        player.adventure = made.json()["id"]
        url = f"/api/adventures/{player.adventure}"
        for number in range(1, turns + 1):
            began = time.perf_counter()
            response = http.post(f"{url}/turns", json={"kind": "do", "text": f"step {number}"})
            elapsed = time.perf_counter() - began
            if response.status_code != 200:
                player.errors.append(f"turn {number}: {response.status_code} {response.text[:200]}")
                continue
            player.turns.append(elapsed)
            turn = response.json()["turn"]
            player.kept.append(turn["id"])
            player.head = turn["id"]
            if number % UNDO_EVERY == 0:
                undone = http.post(f"{url}/undo")
                if undone.status_code != 200:
                    player.errors.append(
                        f"undo after {number}: {undone.status_code} {undone.text[:200]}"
                    )
                    continue
                player.undone.append(player.kept.pop())
                player.head = undone.json()["head_id"]
            story = http.get(url)  # reading between turns, as a player does
            if story.status_code != 200 or story.json()["head_id"] != player.head:
                player.errors.append(f"read after {number}: {story.status_code} {story.text[:200]}")


def verify(store: Path | str, players: list[Player]) -> list[str]:
    """Compare the database with what every player was told; the list of problems."""
    problems: list[str] = []
    snap = check_database(store)  # structure: valid heads, whole nodes, no orphans
    for index, player in enumerate(players):
        mine = [n for n in snap.nodes.values() if n.adventure_id == player.adventure]
        if snap.heads.get(player.adventure) != player.head:
            problems.append(
                f"player {index}: head {snap.heads.get(player.adventure)} != {player.head} seen"
            )
            continue
        on_path = [n.id for n in snap.path(player.head)][1:]  # without the opening
        if on_path != player.kept:
            problems.append(f"player {index}: story {on_path} != acknowledged {player.kept}")
        expected = 1 + len(player.kept) + len(player.undone)  # opening + every turn, once
        if len(mine) != expected:
            problems.append(
                f"player {index}: {len(mine)} nodes, expected {expected} (lost or duplicated)"
            )
        if player.errors:
            problems.append(f"player {index}: {player.errors[:3]}")
    return problems


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a live process (Linux), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backend_pids(url: str) -> list[int]:
    """The PostgreSQL server processes serving this database's connections."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    parsed = parse_database_url(url)
    engine = create_engine(parsed, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = :db AND pid <> pg_backend_pid()"
                ),
                {"db": parsed.database},
            )
            return [row[0] for row in rows]
    finally:
        engine.dispose()


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_setup(
    name: str, processes: int, players: int, turns: int, scratch: Path, url: str | None
) -> dict:
    cpu: dict[str, float | None] = {"app": None, "postgresql": None, "players + fake model": None}
    with FakeModelServer(chunk_delay=0) as fake:
        servers = [
            ServerProcess(scratch / name / f"p{i}", fake.endpoint, url) for i in range(processes)
        ]
        try:
            for server in servers:
                server.start(timeout=120)
            team = [Player() for _ in range(players)]
            app_before = [cpu_seconds(server.proc.pid) for server in servers]
            mine_before = own_cpu()
            began = time.perf_counter()
            with ThreadPoolExecutor(players) as pool:
                done = [
                    pool.submit(play, servers[i % processes].base_url, turns, p)
                    for i, p in enumerate(team)
                ]
                for future in done:
                    future.result()
            wall = time.perf_counter() - began
            cpu["players + fake model"] = own_cpu() - mine_before
            app_after = [cpu_seconds(server.proc.pid) for server in servers]
            if None not in app_before + app_after:
                cpu["app"] = sum(app_after) - sum(app_before)
            if url is not None:  # backends live as long as the pools: all of the run's work
                backends = [cpu_seconds(pid) for pid in backend_pids(url)]
                cpu["postgresql"] = sum(b for b in backends if b is not None)
        finally:
            for server in servers:
                server.kill()
    store = url or scratch / name / "p0" / "talekeeper.db"
    problems = verify(store, team)
    times = sorted(t for p in team for t in p.turns)
    count = len(times)
    return {
        "setup": name,
        "turns": count,
        "turns_per_s": count / wall,
        "p50_ms": 1000 * statistics.median(times) if times else float("nan"),
        "p95_ms": 1000 * times[min(count - 1, int(0.95 * count))] if times else float("nan"),
        "problems": problems,
        "wall_s": wall,
        "cpu_ms_per_turn": {
            k: (1000 * v / count if v is not None and count else None) for k, v in cpu.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--players", type=int, default=8, help="players at once (default 8)")
    parser.add_argument("--turns", type=int, default=25, help="turns per player (default 25)")
    parser.add_argument(
        "--database-url", default=os.environ.get(DATABASE_URL_ENV), help="a PostgreSQL server"
    )
    args = parser.parse_args()
    server = parse_database_url(args.database_url) if args.database_url else None
    if server is not None and server.get_backend_name() != "postgresql":
        server = None
    lock = threading.Lock()
    results = []
    with tempfile.TemporaryDirectory(prefix="talekeeper-load-") as tmp:
        scratch = Path(tmp)
        setups: list[tuple[str, int, bool]] = [("SQLite, 1 process", 1, False)]
        if server is not None:
            setups += [("PostgreSQL, 1 process", 1, True), ("PostgreSQL, 2 processes", 2, True)]
        else:
            print(
                "no PostgreSQL server given (--database-url): only the SQLite setup runs",
                flush=True,
            )
        for index, (name, processes, on_pg) in enumerate(setups):
            print(f"… {name}: {args.players} players × {args.turns} turns", flush=True)
            if on_pg:
                with pg.fresh_database(server, f"talekeeper_load_{os.getpid()}_{index}") as url:
                    result = run_setup(name, processes, args.players, args.turns, scratch, url)
            else:
                result = run_setup(name, processes, args.players, args.turns, scratch, None)
            with lock:
                results.append(result)

    print("\n| setup | turns | turns/s | p50 turn | p95 turn | lost / duplicated / bad heads |")
    print("|---|---|---|---|---|---|")
    for r in results:
        verdict = "none" if not r["problems"] else f"{len(r['problems'])} PROBLEMS"
        print(
            f"| {r['setup']} | {r['turns']} | {r['turns_per_s']:.1f} | {r['p50_ms']:.0f} ms | "
            f"{r['p95_ms']:.0f} ms | {verdict} |"
        )
    by_name = {r["setup"]: r for r in results}
    one, two = by_name.get("PostgreSQL, 1 process"), by_name.get("PostgreSQL, 2 processes")
    if one and two:
        print(
            f"\n2 processes / 1 process on PostgreSQL: {two['turns_per_s'] / one['turns_per_s']:.2f}× the "
            f"turns/s, p95 {two['p95_ms'] / one['p95_ms']:.2f}× (target: ≥ 1.6× and ≤ 1.0×; "
            f"{os.cpu_count()} CPU cores here, shared by the players, the servers and PostgreSQL)"
        )
    print(
        f"\nCPU per turn ({os.cpu_count()} cores; the last column: the most turns/s all cores could give):"
    )
    print("| setup | app processes | PostgreSQL | players + fake model | total | cores ÷ total |")
    print("|---|---|---|---|---|---|")
    for r in results:
        parts = r["cpu_ms_per_turn"]
        known = [v for v in parts.values() if v is not None]
        total = sum(known)
        cells = " | ".join("–" if v is None else f"{v:.0f} ms" for v in parts.values())
        ceiling = f"{1000 * (os.cpu_count() or 1) / total:.1f}" if total else "–"
        print(f"| {r['setup']} | {cells} | {total:.0f} ms | {ceiling} |")
    failed = [p for r in results for p in r["problems"]]
    for problem in failed:
        print("PROBLEM:", problem)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
