"""Run the benchmarks one after another and print their tables (`make bench`).

Each prints ratios measured within its own run, so a noisy machine skews both sides
alike. The slow ones (the embedded model's prompt cache, the crash soak) run only with
--all.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
QUICK = [["tree.py"], ["memory.py", "--skip-models"], ["insights_size.py"], ["hostile_imports.py"]]
SLOW = [
    ["prefix_cache.py"],
    ["crash_soak.py", "--kills", "60"],
    ["load.py"],
    ["interactions.py"],
    ["bundle.py"],
    ["prompt_sections.py", "--turns", "8"],
    ["narration.py", "--situations", "12"],
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--all", action="store_true", help="also run the slow benchmarks")
    args = parser.parse_args()
    failed = 0
    for script, *options in QUICK + (SLOW if args.all else []):
        print(f"\n=== {script} {' '.join(options)}", flush=True)
        failed += subprocess.call([sys.executable, str(HERE / script), *options]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
