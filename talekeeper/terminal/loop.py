"""Rich rendering for the CLI: the play loop, model status, progress while loading."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import AsyncIterator
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.prompt import IntPrompt, Prompt
from rich.table import Table

from talekeeper.errors import Conflict, Invalid, NotFound
from talekeeper.interop import starter
from talekeeper.llm.errors import LLMError
from talekeeper.service import adventures, corrections, scenarios, state_updates
from talekeeper.service.app import Talekeeper
from talekeeper.service.chips import turn_chips
from talekeeper.service.locks import AdventureBusy
from talekeeper.service.origins import origin_summaries
from talekeeper.service.turn_events import (
    Accepted,
    Done,
    Error,
    Reasoning,
    Remark,
    Retold,
    Settled,
    Text,
)
from talekeeper.service.turns import TurnEvent, current_state_mode, play_turn
from talekeeper.service.unit_of_work import AdventureNotFound
from talekeeper.story import tree
from talekeeper.story.actions import DRAFTED, ActionError
from talekeeper.terminal import character as terminal_character
from talekeeper.terminal import connection as terminal_connection
from talekeeper.terminal import hand as terminal_hand
from talekeeper.terminal import memory as terminal_memory
from talekeeper.terminal import tree as terminal_tree
from talekeeper.terminal.background import Background
from talekeeper.terminal.fix import events_from_words
from talekeeper.terminal.state import show_state
from talekeeper.terminal.wrap import StreamWrap
from talekeeper.views.story import Contradiction, TurnResult

console = Console()

HELP = (
    "Type an action and press Enter. Prefix with [bold]say[/] or [bold]story[/] to change the kind "
    "(default: do); [bold]talk Name: words[/] speaks to a character, who answers in their own voice. Commands: [bold]/continue[/], [bold]/undo[/], [bold]/redo[/], [bold]/retry[/], "
    "[bold]/takes[/], [bold]/edit[/], [bold]/lines[/], [bold]/save[/], [bold]/saves[/], "
    "[bold]/restore[/], [bold]/state[/], [bold]/fix[/] (correct the state), [bold]/model[/], [bold]/write[/], [bold]/suggest[/], [bold]/quit[/]; [bold]/help[/] lists them all."
)
QUIT = ("/quit", "/q", "/exit")
WAITING = "Updating the story's state… what you typed is done as soon as that is finished."
# The chip colours of the web page (web/static/app.css), in Rich's words.
CHIP_STYLE = {
    "applied": "green",
    "limited": "yellow",
    "unchanged": "dim",
    "rejected": "red",
    "milestone": "bold green",
}


def ready_lines(version: str, urls: list[str], data: str) -> list[str]:
    """What `talekeeper serve` says once it listens: where to open it, where the stories are."""
    lines = [f"talekeeper {version} is ready. Open this address in your browser:", f"    {urls[0]}"]
    lines += [f"    {url}   (also)" for url in urls[1:]]
    return [*lines, f"Your stories are kept in {data}. Ctrl+C stops the server."]


def show_ready(lines: list[str]) -> None:
    """Each line whole (an address never wrapped mid-way), set apart by rules."""
    console.rule(style="green")
    for line in lines:
        console.print(escape(line), soft_wrap=True, highlight=False)
    console.rule(style="green")


def warm_up(tk: Talekeeper) -> None:
    """Start the model before the first turn, with a spinner (the embedded model loads here)."""
    with console.status(f"Loading model: {tk.model_description()} …") as status:
        try:
            provider = tk.provider()
            start = getattr(provider, "start", None)
            if start is not None:
                asyncio.run(start(lambda message: status.update(f"Loading model: {message}")))
            if current_state_mode(tk) == "structured" and provider.runs_here:
                status.update("Preparing the state-update grammar (once per start) …")
                asyncio.run(state_updates.warm_up(provider))
        except LLMError as exc:
            console.print(f"[yellow]Model not ready:[/] {exc}")


def show_model(tk: Talekeeper, test: bool) -> bool:
    console.print(f"Active model: [bold]{tk.model_description()}[/]")
    if not test:
        return True
    with console.status("Testing the model …"):
        try:
            report = asyncio.run(tk.provider().check())
        except LLMError as exc:
            console.print(f"[red]✘[/] {exc}")
            return False
    for what, ok, detail in report.checks:
        mark = "[dim]–" if ok is None else "[green]✔" if ok else "[red]✘"  # None: not checkable
        console.print(f"{mark}[/] {what}: {detail}")
    return report.ok


def _choose_adventure(tk: Talekeeper, scenario_id: str | None, adventure_id: int | None) -> int:
    if adventure_id is not None:
        adventures.title_of(tk, adventure_id)  # refuses an unknown id (AdventureNotFound)
        return adventure_id
    if scenario_id is None:
        table = Table("#", "Adventure or scenario", "Turns")
        options: list[tuple[str, object]] = []
        for a in adventures.summaries(tk):
            options.append(("adventure", a.id))
            table.add_row(str(len(options)), f"Continue: {a.title}", str(a.turns))
        for s in scenarios.summaries(tk):
            options.append(("scenario", s.id))
            table.add_row(str(len(options)), f"New: {s.title}", "")
        options.append(("starter", ""))
        table.add_row(str(len(options)), "Open the starter story (seven turns in)", "7")
        options.append(("blank", ""))
        table.add_row(str(len(options)), "New: a blank page (you write how it begins)", "")
        console.print(table)
        choice = IntPrompt.ask("Choose", default=1, console=console)
        if not 1 <= choice <= len(options):
            raise SystemExit("No such choice.")
        kind, value = options[choice - 1]
        if kind == "adventure":
            return int(value)
        if kind == "starter":
            return starter.open_starter(tk).adventure_id
        if kind == "blank":
            opening = ""
            while not opening.strip():
                opening = Prompt.ask("How does your story begin?", console=console)
            return adventures.start_from_blank(tk, adventures.BlankStart(opening=opening)).id
        scenario_id = str(value)
    data = scenarios.read(tk, scenario_id).data
    origin_id = _ask_origin(data)
    answers = {
        p["key"]: Prompt.ask(
            p.get("question", p["key"]), default=p.get("default") or None, console=console
        )
        for p in data.get("placeholders", [])
    }
    character = terminal_character.ask_character(console, data, origin_id)
    return adventures.start(tk, scenario_id, answers, origin_id=origin_id, character=character).id


def _ask_origin(data: dict[str, Any]) -> str | None:
    """Where to begin, as the web's start form asks, when the scenario offers a choice."""
    choices = origin_summaries(data)
    if len(choices) < 2:
        return None
    table = Table("#", "Where you begin", "")
    for i, origin in enumerate(choices, 1):
        table.add_row(str(i), origin["title"], origin["description"])
    console.print(table)
    while True:
        choice = IntPrompt.ask("Begin where", default=1, console=console)
        if 1 <= choice <= len(choices):
            return choices[choice - 1]["id"]
        console.print(f"[red]Choose a number from 1 to {len(choices)}.[/]")


def _print_story(tk: Talekeeper, adventure_id: int, last: int = 6) -> None:
    view = adventures.story(tk, adventure_id, limit=last)
    console.rule(view.title)
    for turn in view.turns_shown:
        if turn.action_line:
            console.print(f"[italic cyan]{turn.action_line}[/]", markup=True, highlight=False)
        remark = turn.remark
        told = turn.narration[: len(turn.narration) - len(remark.text)] if remark else ""
        console.print(told.rstrip() if remark else turn.narration, markup=False, highlight=False)
        if remark:
            print_remark(remark.by, remark.text)
        console.print()


def _parse(line: str) -> tuple[str, str]:
    first, _, rest = line.partition(" ")
    if first.lower() in DRAFTED and rest.strip():  # do, say, story: a kind and its words
        return first.lower(), rest.strip()
    if first.lower() in ("talk", "/talk") and ":" in rest:  # talk Tobin: what about the key?
        return "talk", rest.strip()
    return "do", line.strip()


async def _stream_turn(
    tk: Talekeeper, adventure_id: int, kind: str, text: str
) -> AsyncIterator[TurnEvent] | None:
    return await _show_stream(play_turn(tk, adventure_id, kind, text), echo_action=False)


async def _show_stream(
    events: AsyncIterator[TurnEvent], echo_action: bool = True
) -> AsyncIterator[TurnEvent] | None:
    """Print a turn as it streams, up to `done`: the prompt comes back then. A pending
    turn's rest (its remark and chips, service/settling) is returned, to `_follow`."""
    printed = ""
    wrap = StreamWrap(console.width)  # lines break between words, never inside one

    def out(text: str) -> None:
        console.print(text, end="", markup=False, highlight=False, soft_wrap=True)

    async for event in events:
        if event.kind != "text":
            out(wrap.flush())
        if isinstance(event, Accepted) and event.action_line:
            if echo_action:  # a retry or an edited action: show what is being answered
                console.print(f"[italic cyan]{event.action_line}[/]", highlight=False)
        elif isinstance(event, Text):
            printed += event.text
            out(wrap.feed(event.text))
        elif isinstance(event, Remark):  # a companion's aside: theirs, labelled
            console.print()
            print_remark(event.by, event.text)
        elif isinstance(event, Reasoning):
            console.print(f"[dim]{event.text}[/]", end="")
        elif isinstance(event, Retold):  # that telling clashed with the state: told again
            console.print(f"\n\n[yellow]({escape(event.message)})[/]\n", highlight=False)
            printed = ""
        elif isinstance(event, Error):
            console.print(f"\n[red]{event.message}[/]")
        elif isinstance(event, Done):
            console.print("\n")
            done = event.result
            if len(done.turn.narration) < len(printed.strip()):  # (context/endings: cut off)
                console.print(
                    "[dim](The reply was cut off mid-sentence; the story keeps it up to its last whole sentence.)[/]\n"
                )
            if done.turn.pending:
                return events  # the rest comes while the player reads and types
            show_changes(done.changes)
            show_clashes(done.turn.contradictions)
    return None


async def _follow(events: AsyncIterator[TurnEvent], background: Background) -> None:
    """The rest of a pending turn, printed under it when it comes: a companion's remark,
    then the chips and warnings of its state pass (`settled`)."""
    async for event in events:
        if isinstance(event, Remark):
            background.above_prompt(lambda said=event: print_remark(said.by, said.text))
        elif isinstance(event, Settled):

            def chips(settled: TurnResult = event.result) -> None:
                show_changes(settled.changes)
                show_clashes(settled.turn.contradictions)

            background.above_prompt(chips)


def show_clashes(clashes: list[Contradiction]) -> None:
    """The contradiction guard's warning under a turn, as the web shows it, with the two
    answers: /retry tells the turn again, /accept makes the state agree with it."""
    for n, clash in enumerate(clashes, 1):
        number = f" {n}" if len(clashes) > 1 else ""
        console.print(f"  [yellow]⚠ {escape(clash.line)}[/]  [dim](/accept{number})[/]")
    if clashes:
        console.print(
            "  [dim]/retry tells it again · /accept updates the state to match the story[/]\n"
        )


def _accept(tk: Talekeeper, adventure_id: int, line: str) -> None:
    """/accept [N]: the last turn's warning N is right — update the state (Undo takes it back)."""
    arg = line.partition(" ")[2].strip() or "1"
    if not arg.isdigit() or int(arg) < 1:
        console.print("[red]Say which warning by its number, e.g. /accept 1.[/]")
        return
    head = adventures.story(tk, adventure_id, limit=1)
    try:
        assert head.head_id is not None  # (a story page at the head always names it)
        answer = corrections.accept(tk, adventure_id, head.head_id, int(arg) - 1)
    except corrections.CorrectionRefused as exc:
        console.print("[yellow]Nothing was changed:[/]")
        show_changes(exc.errors)
        return
    except (Invalid, AdventureBusy, NotFound, Conflict) as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        return
    console.print("[bold]The state now agrees with the story[/] (Undo takes it back):")
    show_changes(answer.changes)


def print_remark(by: str, text: str) -> None:
    """A companion's remark, apart from the narration and under their name."""
    console.print(f"\n[bold]{escape(by)}:[/] [italic]{escape(text)}[/]", highlight=False)


def show_changes(changes: list[dict[str, Any]]) -> None:
    """What the state engine made of the turn, one chip a line, described as the web's
    (`service.chips`): the model's refusals one muted count, notes muted. A long one wraps
    between words under its own first word, not back at the margin."""
    shown = turn_chips(changes)
    lines = [(CHIP_STYLE[c.kind], "● ", c.text) for c in shown.chips]
    lines += [("dim italic", "· ", n.text) for n in shown.notes]  # said, not changed
    if shown.refused:
        why = " (the web app's Insights says which and why)"
        lines.append(("dim", "· ", shown.refused_line + why))
    for style, mark, text in lines:
        wrapped = textwrap.fill(
            text, max(20, console.width - 2), initial_indent="  " + mark, subsequent_indent="    "
        )
        console.print(f"[{style}]{escape(wrapped)}[/]", highlight=False, soft_wrap=True)
    if changes:
        console.print()


def _fix(tk: Talekeeper, adventure_id: int, line: str) -> None:
    """A state correction, as the web's State panel makes one (Undo takes it back)."""
    try:
        events = events_from_words(line, corrections.state_at_head(tk, adventure_id))
        answer = corrections.correct(tk, adventure_id, events)
    except corrections.CorrectionRefused as exc:
        console.print("[yellow]Nothing was changed:[/]")
        show_changes(exc.errors)
        return
    except (Invalid, AdventureBusy) as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        return
    console.print("[bold]Corrected[/] (Undo takes it back):")
    show_changes(answer.changes)


def play(tk: Talekeeper, scenario_id: str | None = None, adventure_id: int | None = None) -> None:
    warm_up(tk)
    adventure_id = _choose_adventure(tk, scenario_id, adventure_id)
    _print_story(tk, adventure_id)
    console.print(HELP)
    background = Background()
    try:
        _loop(tk, adventure_id, background)
    finally:
        background.close(tk.settles.drain())  # a turn still settling is finished, not cut off


def _loop(tk: Talekeeper, adventure_id: int, background: Background) -> None:
    held = terminal_hand.Hand()  # what /write and /suggest offered, until /use
    while True:
        try:
            line = background.prompt(lambda: console.input("[bold]> [/]")).strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        if not line:
            continue
        if line in QUIT:
            break
        try:  # what follows reads or changes the story: the turn before settles first
            background.settle_first(lambda: console.print(f"[dim]{WAITING}[/]", highlight=False))
        except KeyboardInterrupt:
            console.print("\n[yellow]Stopped waiting; nothing was sent.[/]")
            continue
        if line == "/state":
            show_state(tk, adventure_id, console)
            continue
        if line == "/fix" or line.startswith("/fix "):
            _fix(tk, adventure_id, line)
            continue
        if terminal_memory.handles(line):
            terminal_memory.run(tk, adventure_id, line, console)
            continue
        if terminal_connection.handles(line):
            terminal_connection.run(tk, adventure_id, line, console)
            continue
        if terminal_hand.handles(line):
            chosen = terminal_hand.run(tk, adventure_id, line, console, held, background.run)
            if chosen is None:
                continue
            line = chosen[1] if chosen[0] == "do" else f"{chosen[0]} {chosen[1]}"
        if line == "/accept" or line.startswith("/accept "):
            _accept(tk, adventure_id, line)
            continue
        if line.startswith("/") and not (terminal_tree.handles(line) or line == "/continue"):
            command = line.split(" ", 1)[0]
            console.print(
                f"[red]There is no command {escape(command)}.[/] Type [bold]/help[/] for the list; nothing was sent to the story."
            )
            continue
        try:
            if terminal_tree.handles(line):
                outcome = terminal_tree.run(tk, adventure_id, line, console)
                if outcome.events is not None:
                    rest = background.run(_show_stream(outcome.events))
                    if rest is not None:
                        background.follow(_follow(rest, background))
                if outcome.show_story:
                    _print_story(tk, adventure_id, last=2)
                continue
            kind, text = ("continue", "") if line == "/continue" else _parse(line)
            rest = background.run(_stream_turn(tk, adventure_id, kind, text))
            if rest is not None:
                background.follow(_follow(rest, background))
        except KeyboardInterrupt:
            console.print("\n[yellow]Stopped. Nothing was saved.[/]")
        except (ActionError, tree.TreeError, AdventureBusy, AdventureNotFound, LLMError) as exc:
            console.print(f"[red]{exc}[/]")
