"""Story-tree commands for `talekeeper play`: undo, redo, retry, takes, edits, lines, Save Points.

Each command is a few lines that call `service.tree_ops` (so it takes the same lock and
obeys the same refusals as the web app) and print with Rich. Lines and Save Points are
picked by their number in the last listing (`/lines`, `/saves`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from talekeeper.service import adventures, tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import TurnEvent
from talekeeper.story.actions import RETOLD
from talekeeper.story.tree import TreeError
from talekeeper.terminal import connection, hand, memory
from talekeeper.views.story import Line, SavePoint

KINDS = RETOLD
T = TypeVar("T")

COMMANDS: dict[str, str] = {
    "/undo": "step back one turn",
    "/redo": "step forward again",
    "/retry": "tell the last turn again (the current take is kept)",
    "/takes": "list the takes of the last turn",
    "/take N": "read take N of the last turn",
    "/edit TEXT": "replace the last narration with TEXT, as a new take",
    "/edit-action [do|say|story] TEXT": "change your last action and have it told again",
    "/lines": "list every line of the story",
    "/line N": "read line N (from /lines)",
    "/name-line N NAME": "name line N (no NAME clears it)",
    "/delete-line N": "delete the turns only line N has",
    "/delete-turn": "delete the turn you are reading, when nothing comes after it (asks first)",
    "/save NAME": "make a Save Point at this moment",
    "/saves": "list Save Points, newest first",
    "/restore N": "go back to Save Point N (from /saves); nothing is deleted",
    "/rename-save N NAME": "rename Save Point N",
    "/delete-save N": "forget Save Point N (no story is deleted)",
}


@dataclass
class Outcome:
    """What the play loop does next: stream a new take, and/or show the story again."""

    events: AsyncIterator[TurnEvent] | None = None
    show_story: bool = False


def handles(line: str) -> bool:
    return line.split(" ", 1)[0] in {c.split(" ", 1)[0] for c in COMMANDS} | {"/help"}


def run(tk: Talekeeper, adventure_id: int, line: str, console: Console) -> Outcome:
    name, _, arg = line.partition(" ")
    return _HANDLERS[name](tk, adventure_id, arg.strip(), console)


def _number(arg: str, what: str) -> tuple[int, str]:
    first, _, rest = arg.partition(" ")
    if not first.isdigit() or int(first) < 1:
        raise TreeError(f"Say which {what} by its number, e.g. 1 (list them first).")
    return int(first), rest.strip()


def _pick(items: Sequence[T], n: int, what: str) -> T:
    if n > len(items):
        raise TreeError(
            f"There is no {what} {n}; there {'is' if len(items) == 1 else 'are'} {len(items)}."
        )
    return items[n - 1]


def _preview(text: str, width: int = 70) -> str:
    """A one-line preview, cut between words ("…"), never mid-word."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0] if " " in text[: width - 1] else text[: width - 1]
    return cut.rstrip(" ,;:—-") + "…"


# The play loop's own commands, listed by /help with the tree's.
LOOP_COMMANDS: dict[str, str] = {
    "TEXT": "do something (prefix say or story to speak or to write the story)",
    "/continue": "let the story go on without an action",
    "/state": "what the story holds true now: scene, stats, flags, milestones, quests",
    "/fix …": "correct the state (Undo takes it back): set <stat> <n> · add <stat> <±n> · flag <flag> on|off · "
    "milestone <id> · give <item> to <holder> · move <who> to <place> · status <who> <status> · or events as JSON",
    **connection.COMMANDS,
    **hand.COMMANDS,
    **memory.COMMANDS,
    "/accept [N]": "the story is right: update the state to match the last turn's warning N (Undo takes it back)",
}
LAST_COMMANDS: dict[str, str] = {
    "/help": "list these commands",
    "/quit": "leave (the story is saved as you go)",
}


def _help(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    table = Table("Command", "What it does", box=None)
    for command, what in {**LOOP_COMMANDS, **COMMANDS, **LAST_COMMANDS}.items():
        table.add_row(escape(command), what)
    console.print(table)
    return Outcome()


def _undo(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    tree_ops.undo(tk, aid)
    return Outcome(show_story=True)


def _redo(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    tree_ops.redo(tk, aid)
    return Outcome(show_story=True)


def _retry(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    return Outcome(events=tree_ops.retry(tk, aid))


def _takes(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    listing = tree_ops.list_takes(tk, aid)
    table = Table("#", "", "Take", box=None)
    for take in listing.takes:
        table.add_row(str(take.index), "▶" if take.on_line else "", _preview(take.narration))
    console.print(table)
    return Outcome()


def _take(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    n, _ = _number(arg, "take")
    take = _pick(tree_ops.list_takes(tk, aid).takes, n, "take")
    tree_ops.choose_take(tk, aid, take.id)
    return Outcome(show_story=True)


def _edit(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    if not arg:
        raise TreeError("Type the new narration after /edit, e.g. /edit The door creaks open.")
    view = tree_ops.list_takes(tk, aid)
    tree_ops.edit_narration(tk, aid, view.turn_id, arg)
    return Outcome(show_story=True)


def _edit_action(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    first, _, rest = arg.partition(" ")
    kind, text = (first, rest.strip()) if first in KINDS else ("do", arg)
    turn_id = tree_ops.list_takes(tk, aid).turn_id
    return Outcome(events=tree_ops.edit_action(tk, aid, turn_id, kind, text))


def _lines(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    table = Table("#", "", "Line", "Turns", "Left its parent line", "Ends with", box=None)
    for i, line in enumerate(_all_lines(tk, aid), start=1):
        fork = (
            "—"
            if line.fork_depth is None
            else f"after turn {line.fork_depth}"
            if line.fork_depth
            else "after the opening"
        )
        name = line.name or "(unnamed)"
        if line.save_points:
            name += f" ⚑{len(line.save_points)}"
        table.add_row(
            str(i),
            "▶" if line.has_head else "",
            name,
            str(line.length),
            fork,
            _preview(line.last_narration, 50),
        )
    console.print(table)
    console.print("[dim]▶ the line you are reading · ⚑ Save Points kept on it[/]")
    return Outcome()


def _numbered(
    what: str,
    listed: Callable[[Talekeeper, int], Sequence[T]],
    act: Callable[[Talekeeper, int, T, str], object],
    show_story: bool,
) -> Callable[[Talekeeper, int, str, Console], Outcome]:
    """A command on the Nth line or Save Point as `/lines` or `/saves` numbers them
    (`/line 2`, `/rename-save 1 NAME`): the number read, the item picked, what `act`
    says printed."""

    def handler(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
        n, rest = _number(arg, what)
        result = act(tk, aid, _pick(listed(tk, aid), n, what), rest)
        if isinstance(result, str):
            console.print(result)
        return Outcome(show_story=show_story)

    return handler


def _all_lines(tk: Talekeeper, aid: int) -> list[Line]:
    return tree_ops.list_lines(tk, aid).lines


def _all_saves(tk: Talekeeper, aid: int) -> list[SavePoint]:
    return tree_ops.list_save_points(tk, aid).save_points


def _save(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    sp = tree_ops.create_save_point(tk, aid, arg)
    console.print(f"Saved “{sp.name}” at turn {sp.turn}.")
    return Outcome()


def _saves(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    points = _all_saves(tk, aid)
    if not points:
        console.print("No Save Points yet. Make one with /save NAME.")
        return Outcome()
    table = Table("#", "Save Point", "Turn", "Where", box=None)
    for i, sp in enumerate(points, start=1):
        where = (
            "you are here" if sp.at_head else "on this line" if sp.on_line else "on a line you left"
        )
        table.add_row(str(i), sp.name, str(sp.turn), where)
    console.print(table)
    return Outcome()


def _switched(tk: Talekeeper, aid: int, line: Line, rest: str) -> None:
    tree_ops.switch_line(tk, aid, line.id, answer=False)


def _named_line(tk: Talekeeper, aid: int, line: Line, rest: str) -> str:
    name = tree_ops.rename_line(tk, aid, line.id, rest or None).name
    return f"Named the line “{name}”." if name else "Cleared the line's name."


def _deleted_line(tk: Talekeeper, aid: int, line: Line, rest: str) -> str:
    removed = tree_ops.delete_line(tk, aid, line.id).deleted_turns
    return f"Deleted the line ({removed} turn{'s' if removed != 1 else ''} no other line shared)."


def _restored(tk: Talekeeper, aid: int, sp: SavePoint, rest: str) -> None:
    tree_ops.restore_save_point(tk, aid, sp.id, answer=False)


def _renamed_save(tk: Talekeeper, aid: int, sp: SavePoint, rest: str) -> str:
    return f"Renamed it “{tree_ops.rename_save_point(tk, aid, sp.id, rest).name}”."


def _deleted_save(tk: Talekeeper, aid: int, sp: SavePoint, rest: str) -> str:
    tree_ops.delete_save_point(tk, aid, sp.id)
    return f"Forgot the Save Point “{sp.name}”; none of the story was deleted."


def _delete_turn(tk: Talekeeper, aid: int, arg: str, console: Console) -> Outcome:
    """The turn being read, when nothing follows it: asked first (it cannot be undone)."""
    head = adventures.story(tk, aid, limit=1).turns_shown[-1]
    sure = arg.strip().lower() == "yes" or console.input(
        f"Delete turn {head.depth} ({_preview(head.narration, 50)})? Only this take of it "
        "goes; this cannot be undone. [y/N] "
    ).strip().lower() in ("y", "yes")
    if not sure:
        console.print("Nothing was deleted.")
        return Outcome()
    tree_ops.delete_turn(tk, aid, head.id)
    console.print(f"Deleted turn {head.depth}.")
    return Outcome(show_story=True)


_HANDLERS: dict[str, Callable[[Talekeeper, int, str, Console], Outcome]] = {
    "/help": _help,
    "/undo": _undo,
    "/redo": _redo,
    "/retry": _retry,
    "/takes": _takes,
    "/take": _take,
    "/edit": _edit,
    "/edit-action": _edit_action,
    "/lines": _lines,
    "/line": _numbered("line", _all_lines, _switched, show_story=True),
    "/name-line": _numbered("line", _all_lines, _named_line, show_story=False),
    "/delete-line": _numbered("line", _all_lines, _deleted_line, show_story=False),
    "/delete-turn": _delete_turn,
    "/save": _save,
    "/saves": _saves,
    "/restore": _numbered("Save Point", _all_saves, _restored, show_story=True),
    "/rename-save": _numbered("Save Point", _all_saves, _renamed_save, show_story=False),
    "/delete-save": _numbered("Save Point", _all_saves, _deleted_save, show_story=False),
}
