"""The terminal's character creation, after the origin is chosen: make a character
within it (name, a class from the origin's list, point-bought stats) when the scenario
declares character creation. Rolled and hidden stats are rolled by the server."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.prompt import IntPrompt, Prompt
from rich.table import Table

from talekeeper.service.origins import with_origin
from talekeeper.state.creation import creation_options


def ask_character(
    console: Console, data: dict[str, Any], origin_id: str | None
) -> dict[str, Any] | None:
    """The player's choices for character creation, or None when the scenario has none."""
    started = with_origin(data, origin_id)
    options = creation_options(started.get("rules"), (started.get("origin") or {}).get("build"))
    if options is None:
        return None
    choice: dict[str, Any] = {
        "name": Prompt.ask(
            "Your character's name", default=options["default_name"] or None, console=console
        )
    }
    if options["classes"]:
        table = Table("#", "Class", "")
        for i, klass in enumerate(options["classes"], 1):
            table.add_row(str(i), klass["name"], klass.get("description", ""))
        console.print(table)
        picked = IntPrompt.ask("Class", default=1, console=console)
        choice["class"] = options["classes"][min(max(picked, 1), len(options["classes"])) - 1]["id"]
    if options["method"] == "point_buy":
        console.print(f"Spend {options['points']} points; each stat starts at its minimum.")
        choice["stats"] = {
            s["name"]: IntPrompt.ask(
                f"{s['name']} ({s['min']:g}–{s['max']:g}) {s['desc']}".strip(),
                default=int(s["min"]),
                console=console,
            )
            for s in options["stats"]
        }
    elif options["method"] == "roll":
        console.print("Your stats are rolled when the story starts.")
    return choice
