"""Reading a model's reply costs in step with its length, whatever the reply holds.

A reply is untrusted input. Hiding the state block while it streamed used to read the
whole reply again on every piece, with a pattern quadratic in a run of backticks: a reply
of 20,000 backticks took 46 s, and the prose guards re-read every line per piece too. Each
shape below is processed as a turn does it — streamed in 3-character pieces through the
state-block filter and both prose guards, then extracted and cleaned whole — at 1× and 8×
its size; linear work takes about 8× as long, quadratic about 64×. The bound is a ratio
measured in one run (CPU time of this thread, best of several), not a clock.
"""

from __future__ import annotations

import time

import pytest

from talekeeper.context.echo import EchoGuard
from talekeeper.context.prose_guard import ProseGuard
from talekeeper.context.repeats import RepeatGuard
from talekeeper.state import emit_instructions, extract_reply
from talekeeper.state.streaming import VisibleStream

SIZE = 3_000
RATIO = 20  # linear is ~8; quadratic ~64
SHAPES = {
    "backticks": lambda n: "`" * n,
    "backticks after prose": lambda n: "The door. " + "`" * n + "x",
    "state fences that are not": lambda n: "```states " * (n // 10),
    "a fence never closed": lambda n: "```\n" + "x\n" * (n // 2),
    "a fence of backticks": lambda n: "```\n" + "`" * n,
    "fence lines": lambda n: "```x\n" * (n // 5),
    "an events object never closed": lambda n: '{"events": [' + "1, " * (n // 3),
    "escaped quotes in one": lambda n: '{"events": ["' + '\\"' * (n // 2),
    "a brace, then blanks": lambda n: "{" + " " * n,
    "lines of braces": lambda n: "{}\n" * (n // 3),
    "list markers": lambda n: "* " * (n // 2),
    "newlines": lambda n: "\n" * n,
    "a label, then blanks": lambda n: "State" + " " * n,
    "one long word": lambda n: "x" * n,
    "one long sentence": lambda n: "and the rain falls softly " * (n // 26),
    "runs one short of a loop": lambda n: "no no no no yes, " * (n // 17),
    "phrases said thrice": lambda n: "the sea the sea the sea calls " * (n // 30),
    "marks": lambda n: "Rain" + "." * n,
    "sentences": lambda n: "The rain falls on the old roof again. " * (n // 38),
    "a loop's first words": lambda n: (
        "The sea is a great and unforgiving enemy. The sea is " + "a" * n
    ),
    "the reminder": lambda n: (emit_instructions() + "\n") * (n // 300),
}
GUARD = ProseGuard(
    EchoGuard(
        [
            ("narrator", "You are the narrator of a story set in a grey harbour town."),
            ("current_state", "Storm: 4 of 8. Maren is at the docks. The lantern is lit."),
            ("emit_reminder", emit_instructions()),
        ],
        story=["The ferry slides out into the fog.", "Gulls cry over the water."],
    ),
    RepeatGuard(),
)


def process(reply: str) -> None:
    visible, prose = VisibleStream(), GUARD.stream()
    for i in range(0, len(reply), 3):
        _, loops = prose.feed(visible.feed(reply[i : i + 3]))
        if loops:
            break
    GUARD.clean(extract_reply(visible.text).prose)


def cost(reply: str, tries: int) -> float:
    best = float("inf")
    for _ in range(tries):
        began = time.thread_time()
        process(reply)
        best = min(best, time.thread_time() - began)
    return max(best, 1e-6)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_reply_eight_times_longer_costs_about_eight_times_more(shape: str) -> None:
    make = SHAPES[shape]
    small, large = make(SIZE), make(8 * SIZE)
    for tries in (3, 7):  # a busy machine gets a second, longer look
        ratio = cost(large, tries) / cost(small, tries)
        if ratio < RATIO:
            return
    raise AssertionError(f"{shape}: 8× the reply cost {ratio:.0f}× the time (linear is ~8×)")
