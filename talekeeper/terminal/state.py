"""`/state` in `talekeeper play`: the story's truth at the moment being read, as the web's
State panel groups it (scene, stats with their words, flags, milestones, quests)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from talekeeper.service import corrections
from talekeeper.service.app import Talekeeper


def _num(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def show_state(tk: Talekeeper, adventure_id: int, console: Console) -> None:
    state = corrections.state_at_head(tk, adventure_id)
    view, names = state.at.view, state.names
    scene = view.scene
    where = scene.location
    place = (names.get(where, where) if where else None) or "somewhere unknown"
    here = ", ".join(names.get(p, p) for p in scene.present)
    console.print(
        f"[bold]Scene:[/] {escape(str(place))}" + (f" · here: {escape(here)}" if here else ""),
        highlight=False,
    )
    if state.scene_note:
        console.print(f"[yellow]{escape(state.scene_note)}[/]", highlight=False)
    if view.stats:
        table = Table("Stat", "Value", "", box=None)
        for stat in view.stats:
            if stat.hidden:  # never a number: its word only
                shown = "hidden"
            else:
                span = (
                    f" / {_num(stat.max)}" if stat.max is not None and stat.kind != "text" else ""
                )
                shown = f"{_num(stat.value)}{span}"
            table.add_row(escape(stat.label), escape(shown), escape(stat.band or ""))
        console.print(table)
    for flag in view.flags:
        console.print(
            f"  {'☑' if flag.value else '☐'} {escape(flag.desc or flag.name)}", highlight=False
        )
    for milestone in view.milestones:
        reached = milestone.reached_at
        mark, when = ("✓", f" (turn {reached})") if reached is not None else ("☐", "")
        console.print(f"  {mark} {escape(milestone.desc or milestone.id)}{when}", highlight=False)
    for thread in view.threads:
        console.print(
            f"  • {escape(str(thread.title or thread.id))} — {escape(str(thread.status or ''))}",
            highlight=False,
        )
