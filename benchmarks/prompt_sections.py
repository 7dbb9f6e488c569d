"""What the model receives per turn, and what the echo guard took out of its answers.

    .venv/bin/python benchmarks/prompt_sections.py [--turns 10] [--mode structured]
    .venv/bin/python benchmarks/prompt_sections.py --model echo --window 8192 --turns 20 --mode inline

Plays a scripted run of the demo (The Lantern of Greywater, a fixed list of actions)
through the real turn pipeline (`play_turn`, as the web and terminal do), memory bank off
so nothing else runs beside it, and reports from each turn's own Insights record:

- tokens by prompt section, as medians over the turns, and each section's share of the
  prompt; history against the protocol (event vocabulary + reminder) and the state notes;
  and the same shares in the next prompt after the last turn (the Insights dry run);
- the echo guard: lines it removed from the model's replies (from the Insights note), as
  a share of all the lines the model wrote (kept + removed), and how they echoed.

Models: `embedded` (SmolLM2, the default) or `echo`, a held-out echoing model behind a fake
OpenAI-compatible server on loopback (`tests/llm/fakeserver.py`) whose context window is
`--window` tokens (llama.cpp's `/props`): each reply is four sentences of story, one line
copied from the end of its prompt (the notes) and, in inline mode, a state block — so the
prompt grows as a played story's does, without the minutes a real model takes per turn.
Token counts are the provider's own (the embedded model's tokenizer; a calibrated estimate
for a server). Ratios are measured in one run; the README records a run with its conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.context.settings import update_context_settings  # noqa: E402
from talekeeper.llm.openai import OpenAIProvider  # noqa: E402
from talekeeper.service import adventures  # noqa: E402
from talekeeper.service import settings as settings_service  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.service.insights import of_next  # noqa: E402
from talekeeper.service.turns import play_turn  # noqa: E402
from tests.llm.fakeserver import FakeOpenAIServer, RecordedRequest  # noqa: E402

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
    """One turn, its stream read to the end (a structured turn settles after `done`)."""
    began = time.perf_counter()
    done: dict | None = None
    async for event in play_turn(tk, adventure_id, "do", action):
        if event.kind == "done":
            done = event.data
        elif event.kind == "error":
            raise RuntimeError(event.data["message"])
    if done is None:
        raise RuntimeError("the turn ended without a result")
    return done, time.perf_counter() - began


STORY = [
    "Rain lashes the harbour wall, and the ferry strains at its ropes like a dog on a leash.",
    "Maren squints past you at the black headland, where the lighthouse stands unlit and silent.",
    "Somewhere out on the drowned causeway a bell tolls once, then again, slower than before.",
    "Your lamp gutters in the wind; the wick will need trimming before the night is out.",
    "Gulls wheel low over the grey water, crying at the swell that slaps against the pilings.",
    "The smell of tar and wet rope hangs over the docks, and the lamps in the cottages burn low.",
    "A shutter bangs somewhere behind you, and for a moment nobody on the quay says a word.",
]
"""The echoing model's story: four of these a reply, about the length (some 90 tokens) of
a SmolLM2 reply at the default reply length, so the history grows as a played story's."""


def echoing_model(mode: str):
    """The held-out echoing model: story, one copied line of its prompt's notes, a block."""
    turn = [0]

    def reply(request: RecordedRequest) -> str:
        body = request.body or {}
        messages = body.get("messages") or [{"content": body.get("prompt") or ""}]
        tail = [line for line in str(messages[-1]["content"]).splitlines() if len(line) > 20]
        n = turn[0] = turn[0] + 1
        story = " ".join(STORY[(n + k * 2) % len(STORY)] for k in range(4))
        echoed = tail[n % len(tail)] if tail else ""
        text = f"{story}\n{echoed}"
        if mode == "inline":
            note = {"type": "note_event", "text": STORY[n % len(STORY)]}
            text += '\n```state\n{"events": [' + json.dumps(note) + "]}\n```"
        return text

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--mode", default="structured", choices=["structured", "inline", "off"])
    parser.add_argument("--model", default="embedded", choices=["embedded", "echo"])
    parser.add_argument("--window", type=int, default=8192, help="the echo server's window")
    args = parser.parse_args()
    server = None
    if args.model == "echo":
        props = {"default_generation_settings": {"n_ctx": args.window}}
        server = FakeOpenAIServer(echoing_model(args.mode), extra={("GET", "/props"): props})
        server.start()
    with tempfile.TemporaryDirectory() as home:
        override = OpenAIProvider(server.url, "fake-model") if server else None
        tk = Talekeeper(Path(home), provider_override=override)
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
            after = asyncio.run(of_next(tk, aid, "do", ACTIONS[args.turns % len(ACTIONS)]))
        finally:
            asyncio.run(tk.aclose())
            if server is not None:
                server.stop()
    turns = len(totals)
    total = statistics.median(totals)
    model = (
        "the embedded model" if server is None else f"an echoing model, {args.window}-token window"
    )
    print(f"{turns} turns of the demo, {model}, {args.mode} mode (medians per turn)")
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
    sections = {s.name: s.tokens for s in after.sections}
    whole = after.total_tokens
    largest = max(sections, key=sections.__getitem__)
    print(
        f"the next prompt after turn {turns}: {whole} tokens; history {sections.get('history', 0) / whole:.1%}, "
        f"protocol {sum(sections.get(n, 0) for n in PROTOCOL) / whole:.1%}, "
        f"state notes {sections.get('current_state', 0) / whole:.1%}; largest section: {largest}"
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
