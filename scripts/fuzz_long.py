"""The long fuzz run: the suite's fuzzing properties with a budget measured in hours, not seconds.

    .venv/bin/python scripts/fuzz_long.py [--examples 5000] [--variants 40] [--atheris-seconds 600]

1. tests/reliability/test_fuzz.py — every API route (no 500; a refusal changes nothing),
   rules declarations (loaded or refused by path), hostile model replies through a whole
   turn (the protocol never reaches screen or disk; a failed turn writes nothing); and
   tests/reliability/test_hostile_http.py — every route, JSON and page, accounts on and
   off, every family of hostile request and `--variants` random mutations a route, over a
   real socket (no 5xx, no answer over 2 s, bounded error bodies, no write from a refusal);
   on PostgreSQL too when $TALEKEEPER_DATABASE_URL names one;
2. tests/state/test_properties.py — the state engine's own properties (apply accounts for
   every event and a rejected one changes nothing; extraction and streaming never show the
   protocol; normalise repairs anything);
3. atheris, when it is installed (`.venv/bin/pip install atheris`): coverage-guided fuzzing
   of reply extraction and the streaming filter, which reaches a few branches the
   structured generators do not.

It prints how many inputs each part ran; the README's reliability section quotes the total.
Any failure prints hypothesis's (or libFuzzer's) reproduction and the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEEDS = [
    'Rain falls.\n```state\n{"events": [{"type": "change_stat", "stat": "player.hp", "amount": -3}]}\n```',
    'The guard nods.\n\n```state\n{"events": [{"type": "set_flag", "flag": "alarm_raised", "value": true}',
    "Prose with code:\n```python\nprint('hi')\n```\nand more prose.",
    'State:\n{"events": []}',
    "<think>plan</think>The door opens.",
]


def pytest_part(label: str, args: list[str], env: dict[str, str]) -> tuple[bool, str]:
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True,
    )  # fmt: skip
    print(
        f"  {label}: {'passed' if result.returncode == 0 else 'FAILED'} in {time.monotonic() - began:.0f}s",
        flush=True,
    )
    if result.returncode != 0:
        print(result.stdout[-6000:], result.stderr[-2000:], sep="\n")
    return result.returncode == 0, result.stdout


def atheris_child(seconds: int) -> None:  # pragma: no cover - runs under libFuzzer
    import atheris

    with atheris.instrument_imports():
        from talekeeper.state import FENCE_INFO, VisibleStream, extract_reply, visible_prefix

    fence = re.compile(
        r"`{3,}[ \t]*" + FENCE_INFO + r"(?![\w-])", re.IGNORECASE
    )  # a state fence opening

    def one_input(data: bytes) -> None:
        text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
        result = extract_reply(text)
        assert not fence.search(result.prose), (text, result.prose)
        again = extract_reply(result.prose)
        assert again.raw_block is None, ("protocol left in the prose", text, result.prose)
        shown = visible_prefix(text)
        assert not fence.search(shown), (text, shown)
        stream, streamed = VisibleStream(), ""  # the same text in pieces, each read once
        for at in range(0, len(text), 7):
            streamed += stream.feed(text[at : at + 7])
        assert shown.startswith(streamed) and not fence.search(streamed), (text, streamed)

    corpus = tempfile.mkdtemp(prefix="talekeeper-atheris-")
    for i, seed in enumerate(SEEDS):
        Path(corpus, f"seed{i}").write_text(seed)
    artifacts = tempfile.mkdtemp(prefix="talekeeper-atheris-crashes-")
    print(f"atheris: a failing input is written to {artifacts}", file=sys.stderr, flush=True)
    argv = [
        sys.argv[0],
        f"-max_total_time={seconds}",
        "-rss_limit_mb=4096",
        f"-artifact_prefix={artifacts}/",
        corpus,
    ]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--examples", type=int, default=5000, help="hypothesis examples per property (default 5000)"
    )
    parser.add_argument(
        "--per-route",
        type=int,
        default=None,
        help="HTTP examples per API route (default examples/10)",
    )
    parser.add_argument(
        "--variants",
        type=int,
        default=40,
        help="random mutations a route in the hostile HTTP run (default 40)",
    )
    parser.add_argument(
        "--atheris-seconds", type=int, default=600, help="atheris time budget; 0 skips it"
    )
    parser.add_argument("--atheris-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.atheris_child is not None:
        atheris_child(args.atheris_child)
        return 0

    began = time.monotonic()
    totals: dict[str, int] = {}
    ok = True
    print(f"fuzz_long: {args.examples} examples per property", flush=True)

    with tempfile.TemporaryDirectory() as scratch:
        counts = Path(scratch) / "counts.json"
        passed, _ = pytest_part(
            "tests/reliability/test_fuzz.py, test_hostile_http.py",
            ["tests/reliability/test_fuzz.py", "tests/reliability/test_hostile_http.py", "-s"],
            {
                "TALEKEEPER_FUZZ_EXAMPLES": str(args.examples),
                "TALEKEEPER_FUZZ_PER_ROUTE": str(args.per_route or max(10, args.examples // 10)),
                "TALEKEEPER_FUZZ_COUNTS": str(counts),
                "TALEKEEPER_HOSTILE_VARIANTS": str(max(1, args.variants)),
            },
        )
        ok &= passed
        if counts.exists():
            totals.update(
                {f"reliability: {k}": v for k, v in json.loads(counts.read_text()).items()}
            )

    passed, out = pytest_part(
        "tests/state/test_properties.py",
        ["tests/state/test_properties.py", "--hypothesis-show-statistics"],
        {"TALEKEEPER_EXAMPLES": str(args.examples)},
    )
    ok &= passed
    totals["state engine properties"] = sum(int(n) for n in re.findall(r"(\d+) passing", out))

    if args.atheris_seconds:
        try:
            import atheris  # noqa: F401
        except ImportError:
            print("  atheris: not installed, skipped (.venv/bin/pip install atheris)")
        else:
            began_atheris = time.monotonic()
            result = subprocess.run(
                [sys.executable, __file__, "--atheris-child", str(args.atheris_seconds)],
                cwd=REPO, capture_output=True, text=True,
            )  # fmt: skip
            runs = re.findall(r"Done (\d+) runs", result.stderr)
            passed = result.returncode == 0
            print(
                f"  atheris: {'passed' if passed else 'FAILED'} in {time.monotonic() - began_atheris:.0f}s",
                flush=True,
            )
            if not passed:
                print(result.stderr[-6000:])
            ok &= passed
            totals["atheris: extraction executions"] = int(runs[-1]) if runs else 0

    print("\ninputs run:")
    for name, count in totals.items():
        print(f"  {name:<40}{count:>12,}")
    print(f"  {'total':<40}{sum(totals.values()):>12,}")
    print(f"{'all properties held' if ok else 'FAILURES above'}; {time.monotonic() - began:.0f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
