"""The terminal side of accounts (`talekeeper users …`): the host at the machine makes the
first host, invites players, sets a forgotten password and adopts stories made before
accounts were on."""

from __future__ import annotations

from urllib.parse import urlencode

from rich.console import Console
from rich.table import Table

from talekeeper import accounts
from talekeeper.errors import TalekeeperError
from talekeeper.service.app import Talekeeper

console = Console(highlight=False)


def create(tk: Talekeeper, name: str, password: str, role: str, adopt: bool) -> int:
    try:
        user, adopted = accounts.add_user(tk, name, password, role, adopt)
        made = user.name
    except TalekeeperError as exc:
        console.print(f"[red]Not made:[/red] {exc}")
        return 1
    console.print(f"Made the {role} [bold]{made}[/bold].")
    if adopted:
        console.print(
            f"{made} now owns {adopted[0]} adventure(s) and {adopted[1]} scenario(s) made before accounts."
        )
    if not tk.accounts:
        console.print(
            "Serve with [bold]talekeeper serve --accounts[/bold] (or TALEKEEPER_ACCOUNTS=1) to use it."
        )
    return 0


def show(tk: Talekeeper) -> int:
    users = accounts.users(tk)
    if users:
        table = Table("id", "name", "role", "status")
        for user in users:
            table.add_row(
                str(user.id), user.name, user.role, "disabled" if user.disabled else "active"
            )
        console.print(table)
    else:
        console.print(
            "No accounts yet: make the first host with `talekeeper users create NAME --host`."
        )
    return 0


def invite(tk: Talekeeper, url: str, role: str) -> int:
    token = accounts.invite(tk, None, role)
    console.print(f"One-time sign-up link (valid {accounts.INVITATION_DAYS} days):")
    console.print(f"{url.rstrip('/')}/signup?{urlencode({'invite': token})}", soft_wrap=True)
    return 0


def adopt(tk: Talekeeper, name: str) -> int:
    try:
        adventures, scenarios = accounts.adopt(tk, name)
    except TalekeeperError as exc:
        console.print(f"[red]{exc}[/red]")
        return 1
    console.print(f"{name} now owns {adventures} more adventure(s) and {scenarios} scenario(s).")
    return 0


def set_password(tk: Talekeeper, name: str, password: str) -> int:
    try:
        accounts.set_password_named(tk, name, password)
    except TalekeeperError as exc:
        console.print(f"[red]Not changed:[/red] {exc}")
        return 1
    console.print(
        f"Set the password of [bold]{name.strip().lower()}[/bold]; their sessions have ended."
    )
    return 0
