"""`/model` in `talekeeper play`: which connection narrates this adventure, and switching it.

    /model            list the connections, the one in use marked
    /model N          use connection N (from the list) for this adventure
    /model built-in   the embedded model, at once
    /model default    follow the default connection (Settings) again

The same service as the web's play-page switch (service/profiles.py).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from talekeeper.errors import TalekeeperError
from talekeeper.service import profiles
from talekeeper.service.app import Talekeeper
from talekeeper.views.settings import ConnectionView

COMMANDS: dict[str, str] = {
    "/model [N]": "list the model connections, or narrate this adventure with connection N "
    "(built-in: the embedded model; default: as in Settings)",
}
WORDS = {"built-in": profiles.EMBEDDED, "builtin": profiles.EMBEDDED, "embedded": profiles.EMBEDDED}


def handles(line: str) -> bool:
    return line == "/model" or line.startswith("/model ")


def run(tk: Talekeeper, adventure_id: int, line: str, console: Console) -> None:
    arg = line[len("/model") :].strip().lower()
    view = profiles.connection_view(tk, adventure_id)
    if not arg:
        show(view, console)
        return
    choices = view.choices
    if arg in ("default", "settings"):
        choice = None
    elif arg in WORDS:
        choice = WORDS[arg]
    elif arg.isdigit() and 1 <= int(arg) <= len(choices):
        choice = choices[int(arg) - 1].use
    else:
        console.print(
            f"[red]There is no connection {escape(arg)}.[/] Type [bold]/model[/] for the list."
        )
        return
    try:
        profiles.use_for_adventure(tk, adventure_id, choice)
    except TalekeeperError as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        return
    now = profiles.connection_view(tk, adventure_id)
    console.print(f"Narrating with [bold]{escape(now.model)}[/].")
    if now.sent_to:
        console.print(f"[yellow]Your story is sent to {escape(now.sent_to)}.[/]")


def show(view: ConnectionView, console: Console) -> None:
    table = Table("#", "Connection", "", box=None)
    for number, choice in enumerate(view.choices, 1):
        here = "◀ narrating" if choice.use == view.use else ""
        sent = f" (sent to {choice.sent_to})" if choice.sent_to else ""
        table.add_row(str(number), escape(choice.label + sent), here)
    console.print(table)
    how = "chosen for this adventure" if view.chosen_by == "adventure" else "as in Settings"
    console.print(f"Narrating: [bold]{escape(view.model)}[/] ({how}).")
    if view.sent_to:
        console.print(f"[yellow]Your story is sent to {escape(view.sent_to)}.[/]")
    console.print("[dim]/model N switches this adventure; /model built-in; /model default.[/]")
