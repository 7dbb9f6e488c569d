"""Adventure bundle benchmark: does memory stay flat as the story grows?

Builds adventures of 1,000 and 10,000 turns (each turn with a state snapshot, a proposal
and verdicts; a Save Point every 100 turns), then exports each to a file and imports it
back, measuring the peak memory Python allocated during each step (tracemalloc, in a
run of its own) and the time. Prints both and the ratio 10,000 / 1,000: the story is 10× longer; a streaming
export and import should keep peak memory nearly flat (the import keeps a few bytes per
turn for the tree's shape). Speed is reported, never asserted.

    .venv/bin/python benchmarks/bundle.py [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.interop import bundles
from talekeeper.service import adventures, unit_of_work
from talekeeper.service import state_engine as world  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.state import load_rules, normalise  # noqa: E402
from talekeeper.story import savepoints, tree  # noqa: E402


def build(tk: Talekeeper, turns: int) -> int:
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        rules = load_rules(adventure.rules)
        head = tree.head(session, adventure)
        before, _ = normalise(head.state, rules)
        for n in range(1, turns + 1):
            block = json.dumps(
                {"events": [{"type": "set_flag", "flag": "ferry_hired", "value": bool(n % 2)}]}
            )
            reply = f"Turn {n}: the rain keeps on over Greywater, and the sea heaves against the docks.\n```state\n{block}\n```"
            settled = world.settle_reply(reply, before, rules, n)
            turn = tree.NewTurn(
                "do",
                f"walk on, step {n}",
                settled.prose,
                state=settled.state,
                proposal=settled.proposal,
                model="bench",
            )
            head = tree.append_child(session, adventure, head, turn)
            before, _ = normalise(settled.state, rules)
            if n % 100 == 0:
                savepoints.create(session, adventure, f"turn {n}")
                session.flush()
                session.expunge_all()
                adventure = unit_of_work.get_adventure(session, adventure.id)
                head = tree.head(session, adventure)
        return adventure.id


def measure(step) -> tuple[float, float, float, object]:
    """Peak traced memory (MB) of one run, and the wall and CPU time of another: tracing
    slows Python several times over, so the two are measured apart. (On a shared machine
    the CPU time is what this process spent; the wall time waits for the others too.)"""
    started, cpu = time.perf_counter(), time.process_time()
    step()
    took, used = time.perf_counter() - started, time.process_time() - cpu
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = step()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024 / 1024, took, used, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        tk = Talekeeper(Path(folder) / "home")
        for size in sizes:
            adventure_id = build(tk, size)
            path = Path(folder) / f"{size}.gz"
            export_mb, export_s, export_cpu, _ = measure(
                lambda a=adventure_id, p=path: bundles.export_to(tk, a, p)
            )
            import_mb, import_s, import_cpu, _ = measure(lambda p=path: bundles.import_path(tk, p))
            rows[size] = (
                path.stat().st_size / 1024 / 1024,
                export_mb,
                export_s,
                import_mb,
                import_s,
                export_cpu,
                import_cpu,
            )
        tk.db.dispose()
    print(
        f"{'turns':>7} {'file MB':>8} {'export peak MB':>15} {'export s':>9} {'(CPU s)':>8}"
        f" {'import peak MB':>15} {'import s':>9} {'(CPU s)':>8}"
    )
    for size, (file_mb, ex_mb, ex_s, im_mb, im_s, ex_cpu, im_cpu) in rows.items():
        print(
            f"{size:>7} {file_mb:>8.2f} {ex_mb:>15.2f} {ex_s:>9.2f} {ex_cpu:>8.2f}"
            f" {im_mb:>15.2f} {im_s:>9.2f} {im_cpu:>8.2f}"
        )
    if len(sizes) >= 2:
        small, large = rows[sizes[0]], rows[sizes[-1]]
        print(
            f"ratio {sizes[-1]}/{sizes[0]}: story ×{sizes[-1] / sizes[0]:.0f}, export peak memory ×{large[1] / small[1]:.2f}, "
            f"import peak memory ×{large[3] / small[3]:.2f}, export time ×{large[2] / small[2]:.1f}, import time ×{large[4] / small[4]:.1f}"
        )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
