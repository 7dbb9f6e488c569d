"""Crash durability: SIGKILL a real `talekeeper serve` at random moments, restart, check.

Twenty kill points per run of the suite, cycling through every moment in
`crash.KILL_MOMENTS` (before the reply, mid-stream, as the model finishes and the server
commits, during a turn's state pass after its `done`, during undo/redo bursts, while an
adventure is created, while the memory bank summarises), in two independent runs side by
side. See `crash.py` for what is checked
after each kill. `benchmarks/crash_soak.py` runs the same harness for longer.

A failure prints its seed; rerun it with TALEKEEPER_CRASH_SEED=<seed>.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests import pg
from tests.reliability import crash

KILL_POINTS = 20
RUNS = 2


def test_sigkill_at_random_moments_loses_nothing_the_player_saw(tmp_path: Path) -> None:
    base_seed = int(os.environ.get("TALEKEEPER_CRASH_SEED") or random.randrange(1_000_000))
    per_run = KILL_POINTS // RUNS

    server = pg.configured_url()  # on PostgreSQL: a database of its own for each run

    def one(index: int) -> crash.CrashRun:
        seed = base_seed + index
        try:
            if server is None:
                return crash.run(
                    tmp_path / f"run{index}",
                    kill_points=per_run,
                    seed=seed,
                    first_moment=index * per_run,
                )
            with pg.fresh_database(server, f"{server.database}_crash{index}") as url:
                return crash.run(
                    tmp_path / f"run{index}",
                    kill_points=per_run,
                    seed=seed,
                    first_moment=index * per_run,
                    database_url=url,
                )
        except BaseException as exc:
            raise AssertionError(
                f"crash run failed; rerun with TALEKEEPER_CRASH_SEED={base_seed}"
            ) from exc

    with ThreadPoolExecutor(RUNS) as pool:
        runs = list(pool.map(one, range(RUNS)))

    reports = [report for run in runs for report in run.reports]
    assert len(reports) >= KILL_POINTS
    moments = Counter(report.moment for report in reports)
    assert set(moments) == set(crash.KILL_MOMENTS), moments
    assert sum(run.summariser_kills for run in runs) >= 1, (
        "no kill landed while the memory bank ran"
    )
    assert sum(run.state_pass_kills for run in runs) >= 1, (
        "no kill landed while a turn's state pass ran"
    )
    # Each run played real stories: several turns per adventure survived the kills.
    for run in runs:
        assert len(run.ledger.nodes) > len(run.ledger.heads) * 2
