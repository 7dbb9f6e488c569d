"""The turn's steps are numbered and named once, in `service/turns`' docstring, and every
reference in the code agrees with it: `# N. name` where `play_turn` runs a step (each step
once, in order), "step N (name)" wherever a docstring or comment refers to one."""

from __future__ import annotations

import re
from pathlib import Path

from talekeeper.service import state_engine, turns

SERVICE = Path(turns.__file__).parent
STEP = re.compile(r"^    (\d+)\. (\w+):", re.M)
RUN = re.compile(r"#\s*(\d+)\. (\w+)")
REFERENCE = re.compile(r"\b[Ss]teps? (\d+)\b(?! of new-game)(\s+\((\w+)\))?")


def documented() -> dict[str, str]:
    steps = dict(STEP.findall(turns.__doc__ or ""))
    assert list(steps) == [str(n) for n in range(1, len(steps) + 1)], steps
    return steps


def test_play_turn_runs_every_documented_step_once_in_order() -> None:
    import inspect

    source = inspect.getsource(turns.play_turn)
    assert RUN.findall(source) == list(documented().items())


def test_every_reference_to_a_step_names_it_as_the_docstring_does() -> None:
    steps = documented()
    wrong = []
    for path in sorted(SERVICE.rglob("*.py")):
        text = path.read_text()
        if path.name == "turns.py":
            text = text.replace(turns.__doc__ or "", "")  # the list itself
        for match in REFERENCE.finditer(text):
            if "seed" in text[max(0, match.start() - 12) : match.start()]:
                continue  # a step of a seed document, not of the turn
            number, name = match.group(1), match.group(3)
            if steps.get(number) != name:
                wrong.append(
                    f"{path.name}: {match.group(0)!r} (step {number} is {steps.get(number)!r})"
                )
    assert wrong == []


def test_the_steps_pass_values_forward() -> None:
    """What a step hands the next is a value it cannot edit (docs/architecture.md "A turn"):
    the start of step 2 (load), the reply of steps 4 (stream) to 7 (later), and the state
    engine's settled reply of steps 5 (settle) and 7 (later)."""
    import dataclasses

    import pytest

    reply = turns.Reply(raw="The tide turns.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.raw = "else"  # type: ignore[misc]
    assert turns.TurnStart.__dataclass_params__.frozen  # type: ignore[attr-defined]
    settled = state_engine.Settled("The tide turns.", {}, {"source": "model"}, [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        settled.state = {}  # type: ignore[misc]
    assert settled.noted(retold={"narration": "x"}).proposal == {
        "source": "model",
        "retold": {"narration": "x"},
    }
    assert settled.proposal == {"source": "model"}  # the value it was made from is unchanged
    assert isinstance(turns.Reply().echoed, tuple) and isinstance(turns.Reply().notes, tuple)
