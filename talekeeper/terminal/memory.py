"""The memory bank from the terminal: write a memory by hand, turn the bank on or off."""

from __future__ import annotations

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from talekeeper.errors import TalekeeperError
from talekeeper.service import memories
from talekeeper.service.app import Talekeeper

COMMANDS: dict[str, str] = {
    "/remember TEXT": "write a memory by hand; it belongs to this moment of the story",
    "/memory on|off": "turn this adventure's memory bank on or off",
}
NAMES = ("/remember", "/memory")


def handles(line: str) -> bool:
    return line.split(" ", 1)[0] in NAMES


def run(tk: Talekeeper, adventure_id: int, line: str, console: Console) -> None:
    name, _, arg = line.partition(" ")
    arg = arg.strip()
    try:
        if name == "/remember":
            memory = memories.add(tk, adventure_id, memories.MemoryNew(text=arg))
            console.print(f"Remembered: [italic]{escape(memory.text)}[/]", highlight=False)
            return
        if arg.lower() not in ("on", "off"):
            console.print("Write [bold]/memory on[/] or [bold]/memory off[/].")
            return
        panel = memories.switch(tk, adventure_id, arg.lower() == "on")
        console.print(
            "This adventure's memory bank is on: memories are written and sent."
            if panel.bank_on
            else "This adventure's memory bank is off: nothing is written or sent."
        )
    except ValidationError:
        console.print("[red]Write what to remember after /remember (at most 2,000 characters).[/]")
    except TalekeeperError as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
