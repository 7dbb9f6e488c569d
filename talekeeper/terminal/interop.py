"""The terminal side of export/import: progress bars and plain-worded outcomes."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

from talekeeper.interop import bundles
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.service.unit_of_work import AdventureNotFound

console = Console(highlight=False)


def _bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        console=console,
        transient=True,
    )


def export_adventure(tk: Talekeeper, adventure_id: int, path: Path | None) -> int:
    try:
        title = adventures.title_of(tk, adventure_id)
    except AdventureNotFound as exc:
        console.print(f"[red]{exc}[/red]")
        return 1
    path = path or Path(bundles.filename_for(title, adventure_id))
    with _bar() as bar:
        task = bar.add_task("Exporting", total=None)
        size = bundles.export_to(
            tk,
            adventure_id,
            path,
            lambda done, total: bar.update(task, completed=done, total=total),
        )
    console.print(f"Exported “{title}” to {path} ({size:,} bytes).")
    return 0


def import_adventure(tk: Talekeeper, path: Path) -> int:
    if not path.is_file():
        console.print(f"[red]No file at {path}.[/red]")
        return 1
    try:
        with _bar() as bar:
            task = bar.add_task("Checking, then importing", total=None)
            result = bundles.import_path(
                tk, path, lambda done, total: bar.update(task, completed=done, total=total)
            )
    except bundles.BundleInvalid as exc:
        console.print(f"[red]Refused:[/red] {exc}")
        return 1
    console.print(
        f"Imported “{result.title}” as adventure {result.adventure_id} ({result.nodes} turns in all lines)."
    )
    for note in result.notes:
        console.print(f"  {note}")
    return 0


def import_card(tk: Talekeeper, path: Path, yes: bool) -> int:
    """Convert a card / lorebook / other app's story, show what came across, approximated
    or was dropped, and save only after the player agrees (the web import's two steps)."""
    from talekeeper.interop import imports
    from talekeeper.service import scenarios

    if not path.is_file():
        console.print(f"[red]No file at {path}.[/red]")
        return 1
    try:
        found = imports.preview(tk, path.read_bytes(), path.name)
    except imports.Refused as exc:
        console.print(f"[red]Refused:[/red] {exc} Nothing was imported.")
        return 1
    failed = 0
    for item in found.items:
        console.print(
            f"[bold]{item.title}[/bold] ({item.format}): "
            f"{item.story_cards} story cards, {item.origins} origins"
        )
        for line in item.report:
            console.print(f"  {line.status}: {line.field} — {line.detail}")
        if item.errors:
            console.print("[red]Cannot be saved as it is:[/red] " + "; ".join(item.errors))
            failed += 1
            continue
        if not yes and not console.input(
            "Save this as a scenario? [y/N] "
        ).strip().lower().startswith("y"):
            console.print("Not saved.")
            continue
        try:
            done = imports.save(tk, item.scenario)
        except scenarios.ScenarioInvalid as exc:
            console.print(f"[red]Refused:[/red] {exc}")
            failed += 1
            continue
        console.print(f"Saved as scenario “{done.id}”.")
    return 1 if failed else 0
