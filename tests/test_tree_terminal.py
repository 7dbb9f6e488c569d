"""`talekeeper play`: the tree commands, typed into the real play loop."""

from __future__ import annotations

import pytest
from rich.console import Console

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, tree_ops, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.terminal import loop as terminal


def run_play(tk: Talekeeper, aid: int, lines: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    console = Console(record=True, width=140, color_system=None)
    typed = iter([*lines, "/quit"])
    monkeypatch.setattr(console, "input", lambda prompt="": next(typed))
    monkeypatch.setattr(terminal, "console", console)
    terminal.play(tk, adventure_id=aid)
    return console.export_text()


def test_the_tree_commands_in_the_terminal(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tk.db.session() as session:
        aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    scripted.queue("The fog is thick.", "The fog thins.", "A gull cries.", "The ferrywoman nods.")
    out = run_play(
        tk,
        aid,
        [
            "look around",
            "/retry",
            "/takes",
            "/take 1",
            "/edit The fog lifts at once.",
            "/edit-action say Hello there",
            "/undo",
            "/redo",
            "/save Harbour",
            "/saves",
            "/undo",
            "/continue",
            "/lines",
            "/name-line 2 Quiet way",
            "/delete-line 2",
            "/delete-line 1",
            "/restore 1",
            "/delete-line 2",
            "/rename-save 1 The harbour",
            "/delete-save 1",
            "/take 9",
            "/help",
        ],
        monkeypatch,
    )
    assert "The fog thins." in out  # the retry streamed
    assert "The fog is thick." in out and "The fog lifts at once." in out
    assert '> You say "Hello there."' in out and "The ferrywoman nods." in out
    assert "Saved “Harbour” at turn 1." in out and "you are here" in out
    assert "after the opening" in out and "⚑1" in out
    assert "Named the line “Quiet way”." in out
    # an edited action is a take of its turn, like the retry and the edited narration: the
    # story has two lines, the turn with its four takes (saved) and the Continue after going back
    assert "You are reading this line" in out  # the refused delete, in the player's words
    assert "Save Point" in out.split("/delete-line 1")[-1].split("Restored")[0]  # refused: saved
    assert "Deleted the line (1 turn no other line shared)." in out
    assert "Renamed it “The harbour”." in out and "none of the story was deleted" in out
    assert "There is no take 9; there are 4." in out
    assert "/edit-action [do|say|story] TEXT" in out  # /help lists the commands
    # What the terminal did is what the store holds.
    takes = tree_ops.list_takes(tk, aid).takes
    assert [(t.action, t.narration) for t in takes] == [
        ("look around", "The fog is thick."),
        ("look around", "The fog thins."),
        ("look around", "The fog lifts at once."),
        ("Hello there", "A gull cries."),
    ]
    assert [t.on_line for t in takes] == [False, False, False, True]  # restored to “Harbour”
    assert tree_ops.list_save_points(tk, aid).save_points == []
    assert [line.name for line in tree_ops.list_lines(tk, aid).lines] == [None]


def test_terminal_undo_takes_the_writer_lock(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tk.db.session() as session:
        aid = adventures.start_adventure(session, "greywater-lantern").id
    scripted.queue("Waves.")
    run_play(tk, aid, ["wait"], monkeypatch)
    tk.locks.acquire(aid)
    try:
        out = run_play(tk, aid, ["/undo"], monkeypatch)
    finally:
        tk.locks.release(aid)
    assert "busy" in out
    with tk.db.session() as session:
        assert unit_of_work.get_adventure(session, aid).turn_count == 1
