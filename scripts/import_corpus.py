"""Run every file in folders through talekeeper's importers and say, per file, whether it
was imported (with its report's size) or refused and why. Writes nothing.

    python scripts/import_corpus.py [FOLDER ...]

With no folder: the third-party corpus (`../shared/interop-corpus`, where present) and
the project's own spec-built fixtures (`tests/fixtures/interop`, written by
`tests/interop_fixtures.py`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from talekeeper.interop.containers import Refused
from talekeeper.interop.imports import convert_file as convert
from talekeeper.service.scenarios import check_scenario

SKIP_SUFFIXES = {".md", ".py", ".txt"}


def main(folder: Path) -> int:
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() not in SKIP_SUFFIXES and p.name != "ccv3_LICENSE"
    )
    imported = refused = 0
    for path in files:
        started = time.perf_counter()
        name = str(path.relative_to(folder))
        try:
            results = convert(path.read_bytes(), path.name)
        except Refused as exc:
            refused += 1
            print(f"REFUSED   {name}: {exc}")
            continue
        problems = [e for r in results for e in check_scenario({**r.document, "id": "check"})]
        if problems:
            refused += 1
            print(f"INVALID   {name}: {problems[:3]}")
            continue
        imported += 1
        took = time.perf_counter() - started
        summary = "; ".join(
            f"{r.format} → “{r.title[:40]}”: {len(r.document.get('story_cards') or [])} story cards, "
            f"{len(r.document.get('origins') or [])} origins, "
            f"{sum(1 for e in r.report if e['status'] == 'approximated')} approximated, "
            f"{sum(1 for e in r.report if e['status'] == 'dropped')} dropped"
            for r in results[:3]
        )
        more = f" (+{len(results) - 3} more scenarios)" if len(results) > 3 else ""
        print(f"IMPORTED  {name}: {summary}{more} [{took * 1000:.0f} ms]")
    print(f"\n{len(files)} files: {imported} imported, {refused} refused")
    return 0


if __name__ == "__main__":
    here = Path(__file__).resolve().parent.parent
    corpus = [p / "shared" / "interop-corpus" for p in here.parents]
    folders = [Path(a) for a in sys.argv[1:]] or [
        *[p for p in corpus if p.is_dir()][:1],
        here / "tests" / "fixtures" / "interop",
    ]
    for folder in folders:
        print(f"== {folder}")
        main(folder)
        print()
