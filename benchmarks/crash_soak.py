"""Crash soak: kill `talekeeper serve` with SIGKILL hundreds of times and lose nothing.

    .venv/bin/python benchmarks/crash_soak.py [--kills 200] [--runs 2] [--seed N]

The harness of tests/reliability/test_crash.py (see tests/reliability/crash.py), run for
longer: each run is one data directory and one fake model server; each kill point plays
a little, SIGKILLs the real server process at one of the moments below, checks the file
it left (integrity, no half-written node, a valid head, every acknowledged turn and Save
Point there), restarts it on the same directory and checks again through the API.

Printed: kill points per moment, how often the change in flight had committed although
the client never heard (allowed; it must then be whole), what survived, and timings.
Nothing is asserted here beyond the harness's own checks; a failure prints its seed.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    per_run = max(1, args.kills // args.runs)
    print(
        f"crash soak: {per_run * args.runs} kill points in {args.runs} runs, seed {seed}",
        flush=True,
    )

    began = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="talekeeper-soak-"))

    def one(index: int) -> crash.CrashRun:
        return crash.run(
            scratch / f"run{index}",
            kill_points=per_run,
            seed=seed + index,
            first_moment=index * per_run,
        )

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
