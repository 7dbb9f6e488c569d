"""Crash soak: kill `talekeeper serve` with SIGKILL hundreds of times and lose nothing.

    .venv/bin/python benchmarks/crash_soak.py [--kills 200] [--runs 2] [--seed N] [--stress N]
                                              [--database-url URL]

The harness of tests/reliability/test_crash.py (see tests/reliability/crash.py), run for
longer: each run is one data directory and one fake model server; each kill point plays
a little, SIGKILLs the real server process at one of the moments below, checks the file
it left (integrity, no half-written node, a valid head, every acknowledged turn and Save
Point there), restarts it on the same directory and checks again through the API.

On PostgreSQL (`--database-url`, or $TALEKEEPER_DATABASE_URL: a server where the role may
create databases; scripts/postgres.sh starts one on loopback) each run gets a database of
its own, dropped after. `--stress N` runs N busy loops beside it for the whole soak (a
neighbour on the same cores: timing windows widen under load).

Printed: kill points per moment, how often the change in flight had committed although
the client never heard (allowed; it must then be whole), what survived, and timings.
Nothing is asserted here beyond the harness's own checks; a failure prints its seed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.store.db import DATABASE_URL_ENV, parse_database_url  # noqa: E402
from tests import pg  # noqa: E402
from tests.reliability import crash  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=200, help="kill points in all (default 200)")
    parser.add_argument(
        "--runs", type=int, default=2, help="independent runs side by side (default 2)"
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="base seed (default: random, printed)"
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(DATABASE_URL_ENV),
        help="a PostgreSQL server to soak on (default: $TALEKEEPER_DATABASE_URL, else SQLite)",
    )
    parser.add_argument("--stress", type=int, default=0, help="busy loops beside it (default 0)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    server = parse_database_url(args.database_url) if args.database_url else None
    if server is not None and server.get_backend_name() != "postgresql":
        server = None
    per_run = max(1, args.kills // args.runs)
    where = "PostgreSQL" if server is not None else "SQLite"
    print(
        f"crash soak: {per_run * args.runs} kill points in {args.runs} runs on {where}, "
        f"seed {seed}, {args.stress} busy loop(s) beside it",
        flush=True,
    )

    began = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="talekeeper-soak-"))

    def one(index: int) -> crash.CrashRun:
        soak = {
            "kill_points": per_run,
            "seed": seed + index,
            "first_moment": index * per_run,
        }
        if server is None:
            return crash.run(scratch / f"run{index}", **soak)
        with pg.fresh_database(server, f"talekeeper_soak_{os.getpid()}_{index}") as url:
            return crash.run(scratch / f"run{index}", **soak, database_url=url)

    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.stress)
    ]
    try:
        with ThreadPoolExecutor(args.runs) as pool:
            runs = list(pool.map(one, range(args.runs)))
    except BaseException:
        print(
            f"FAILED — rerun with --seed {seed} --runs {args.runs} --kills {args.kills}; "
            f"the databases and server logs are kept in {scratch}",
            flush=True,
        )
        raise
    finally:
        for loop in busy:
            with contextlib.suppress(OSError):
                loop.kill()
                loop.wait()
    shutil.rmtree(scratch)
    elapsed = time.monotonic() - began

    reports = [r for run in runs for r in run.reports]
    moments = Counter(r.moment for r in reports)
    unseen = Counter(r.moment for r in reports if r.committed_unseen)
    print(f"\nkill points: {len(reports)} (all checks passed)")
    print(f"{'moment':<16}{'kills':>7}{'committed unseen':>18}")
    for moment in crash.KILL_MOMENTS:
        print(f"{moment:<16}{moments[moment]:>7}{unseen[moment]:>18}")
    print(
        f"kills that landed while the memory bank was summarising: {sum(r.summariser_kills for r in runs)}"
    )
    if server is not None:
        late = sum(r.late_commits for r in reports)
        print(
            f"turns PostgreSQL committed after the kill (a read at once would have missed them, "
            f"then the restarted server shown them: issue 30's 'another head'): {late}"
        )
    nodes = sum(len(r.ledger.nodes) for r in runs)
    adventures = sum(len(r.ledger.heads) for r in runs)
    points = sum(len(r.ledger.save_points) for r in runs)
    memories = sum(r.previous.memories for r in runs if r.previous)
    print(
        f"survived: {adventures} adventures, {nodes} nodes, {points} Save Points, {memories} memories/summaries"
    )
    startups = [s for run in runs for s in run.startup_seconds]
    print(
        f"server start (median / max): {statistics.median(startups):.2f}s / {max(startups):.2f}s; "
        f"wall time {elapsed:.0f}s ({elapsed / len(reports):.2f}s per kill point with {args.runs} side by side)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
