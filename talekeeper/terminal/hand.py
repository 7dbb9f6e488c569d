"""The player's hand in `talekeeper play`: the web's "Write my turn" and "Suggest".

    /write [say|story]   a draft of your next action (a Do unless said); nothing is sent
    /suggest             three short things you could do next
    /use [N]             send the draft, or suggestion N, as your action

A draft or a suggestion is only ever sent by `/use` (or by typing it): the same service
as the web's buttons (service/hand.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape

from talekeeper.errors import TalekeeperError
from talekeeper.llm.errors import LLMError
from talekeeper.service import hand
from talekeeper.service.app import Talekeeper

COMMANDS: dict[str, str] = {
    "/write [say|story]": "the model drafts your next action in your voice (nothing is sent)",
    "/suggest": "three short things you could do next",
    "/use [N]": "send the draft (or suggestion N) as your action",
}
NAMES = ("/write", "/suggest", "/use")


@dataclass
class Hand:
    """What the last /write or /suggest offered, until it is used or replaced."""

    draft: tuple[str, str] | None = None  # (kind, text)
    suggestions: list[str] = field(default_factory=list)


def handles(line: str) -> bool:
    return line.split(" ", 1)[0] in NAMES


def run(
    tk: Talekeeper,
    adventure_id: int,
    line: str,
    console: Console,
    held: Hand,
    run_async: Callable[[Coroutine[Any, Any, Any]], Any] = asyncio.run,
) -> tuple[str, str] | None:
    """Do the command; returns the action to play (kind, text) when it is `/use`.
    `run_async`: how the session runs a coroutine (its own event loop)."""
    name, _, arg = line.partition(" ")
    arg = arg.strip().lower()
    try:
        if name == "/write":
            kind = arg or "do"
            with console.status("Writing your turn …"):
                draft = run_async(hand.write_turn(tk, adventure_id, kind))
            held.draft = (draft.kind, draft.text)
            console.print(
                f"[bold]Your turn, drafted[/] ({escape(kind)}): {escape(draft.text)}",
                highlight=False,
            )
            console.print("[dim]/use sends it; or type your own action.[/]")
        elif name == "/suggest":
            with console.status("Thinking of what you could do …"):
                found = run_async(hand.suggest(tk, adventure_id))
            held.suggestions = found.suggestions
            for number, text in enumerate(held.suggestions, 1):
                console.print(f"  {number}. {escape(text)}", highlight=False)
            console.print("[dim]/use N sends suggestion N; or type your own action.[/]")
        else:
            return _use(arg, held, console)
    except (TalekeeperError, LLMError) as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
    return None


def _use(arg: str, held: Hand, console: Console) -> tuple[str, str] | None:
    if arg:
        if not arg.isdigit() or not 1 <= int(arg) <= len(held.suggestions):
            console.print(f"[red]There is no suggestion {escape(arg)}.[/] /suggest lists them.")
            return None
        return "do", held.suggestions[int(arg) - 1]
    if held.draft is None:
        console.print("[red]There is no draft to send.[/] /write makes one.")
        return None
    chosen, held.draft = held.draft, None
    return chosen
