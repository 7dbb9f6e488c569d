"""What the model receives per turn, and what the echo guard took out of its answers.

    .venv/bin/python benchmarks/prompt_sections.py [--turns 10] [--mode structured]

Plays a scripted run of the demo (The Lantern of Greywater, a fixed list of actions) with
the embedded model through the real turn pipeline (`play_turn`, as the web and terminal
do), memory bank off so nothing else runs beside it, and reports from each turn's own
Insights record:

- tokens by prompt section, as medians over the turns, and each section's share of the
  prompt; history against the protocol (event vocabulary + reminder) and the state notes;
- the echo guard: lines it removed from the model's replies (from the Insights note), as
  a share of all the lines the model wrote (kept + removed), and how they echoed.

Ratios are measured in one run; the README records a run with its conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.context.settings import update_context_settings  # noqa: E402
from talekeeper.core import Talekeeper  # noqa: E402
from talekeeper.service import adventures  # noqa: E402
from talekeeper.service import settings as settings_service  # noqa: E402
from talekeeper.service.turns import play_turn  # noqa: E402

ACTIONS = [
    "ask Maren to take you across",
    "look at the storm over the water",
    "ask Maren about the lighthouse",
    "check how much lamp oil you have",
    "help Maren untie the ferry",
    "ask about Tobin and the brass key",
    "hold the lamp high against the rain",
    "listen for the bell on the causeway",
    "ask Maren why the lantern went dark",
    "step onto the ferry",
    "look back at the docks",
    "ask how long the crossing takes",
]
PROTOCOL = ("event_vocabulary", "emit_reminder")
REMOVED = re.compile(r"The echo guard removed (\d+) lines?")
KIND = re.compile(r"\((verbatim|partial|paraphrase|protocol)(?:, [^)]*)?\)")


async def play(tk: Talekeeper, adventure_id: int, action: str) -> tuple[dict, float]:
    began = time.perf_counter()
    async for event in play_turn(tk, adventure_id, "do", action):
        if event.kind == "done":
            return event.data, time.perf_counter() - began
        if event.kind == "error":
            raise RuntimeError(event.data["message"])
    raise RuntimeError("the turn ended without a result")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--mode", default="structured", choices=["structured", "inline", "off"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        tk = Talekeeper(Path(home))
        try:
            with tk.db.session() as session:
                update_context_settings(session, {"memory_enabled": False})
                settings_service.update_settings(
                    session,
                    settings_service.SettingsUpdate(generation={"state_updates": args.mode}),
                )
                aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
            tokens: dict[str, list[int]] = {}
            totals, seconds, kept_lines, removed_lines = [], [], 0, 0
            kinds: Counter[str] = Counter()
            for n in range(args.turns):
                done, took = asyncio.run(play(tk, aid, ACTIONS[n % len(ACTIONS)]))
                prompt = done["prompt"]
                for section in prompt["sections"]:
                    tokens.setdefault(section["name"], []).append(section["tokens"])
                totals.append(prompt["total_tokens"])
                seconds.append(took)
                kept_lines += sum(
                    1 for line in done["turn"]["narration"].split("\n") if line.strip()
                )
                for note in prompt["notes"]:
                    if found := REMOVED.match(note):
                        removed_lines += int(found.group(1))
                        kinds.update(KIND.findall(note))
        finally:
            asyncio.run(tk.aclose())
    turns = len(totals)
    total = statistics.median(totals)
    print(f"{turns} turns of the demo, embedded model, {args.mode} mode (medians per turn)")
    print(f"{'section':<20}{'tokens':>8}{'share':>8}  (turns present)")
    for name, values in sorted(tokens.items(), key=lambda kv: -statistics.median(kv[1])):
        median = statistics.median(values)
        print(f"{name:<20}{median:>8.0f}{median / total:>8.1%}  ({len(values)})")
    print(f"{'prompt':<20}{total:>8.0f}")

    def share(names: tuple[str, ...]) -> float:
        return sum(statistics.median(tokens[n]) for n in names if n in tokens) / total

    print(
        f"history share {share(('history',)):.1%}; protocol (vocabulary + reminder) {share(PROTOCOL):.1%}; "
        f"state notes {share(('current_state',)):.1%}"
    )
    written = kept_lines + removed_lines
    print(
        f"echo guard: {removed_lines} of {written} lines the model wrote were removed "
        f"({removed_lines / written if written else 0:.1%}); by kind: {dict(kinds) or 'none'}"
    )
    print(
        f"turn time median {statistics.median(seconds):.1f} s (first turn cold: {seconds[0]:.1f} s)"
    )


if __name__ == "__main__":
    main()
