"""The command line: thin commands that build a Talekeeper and call a service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from talekeeper import __version__

app = typer.Typer(
    help="talekeeper: local-first interactive storytelling. The model narrates; the app owns the truth.",
    no_args_is_help=True,
    add_completion=False,
)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where the database lives (default: $TALEKEEPER_HOME or your user data folder).",
    ),
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="Store the data in this database instead of the SQLite file in the data folder, e.g. "
        "postgresql+psycopg://user:password@127.0.0.1/talekeeper (default: $TALEKEEPER_DATABASE_URL).",
    ),
]
Endpoint = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="OpenAI-compatible model server URL (overrides TALEKEEPER_ENDPOINT and settings).",
    ),
]
Model = Annotated[
    str | None,
    typer.Option("--model", help="Model name on that server (overrides TALEKEEPER_MODEL)."),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider", help="auto | openai | ollama | embedded (overrides TALEKEEPER_PROVIDER)."
    ),
]


def _open(
    data_dir: Path | None,
    endpoint: str | None,
    model: str | None,
    provider: str | None,
    database_url: str | None = None,
    accounts: bool | None = None,
):
    from talekeeper.service.app import Talekeeper
    from talekeeper.store.db import UnsupportedDatabase

    overrides: dict[str, Any] = {"endpoint": endpoint, "model": model, "provider": provider}
    try:
        return Talekeeper.open(
            data_dir,
            model_overrides={k: v for k, v in overrides.items() if v},
            database_url=database_url,
            accounts=accounts,
        )
    except UnsupportedDatabase as exc:
        raise typer.BadParameter(str(exc), param_hint="--database-url") from exc


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on. Keep 127.0.0.1 unless you know why.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    endpoint: Endpoint = None,
    model: Model = None,
    provider: ProviderOpt = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Also answer requests addressed to this name or IP (repeatable), e.g. your "
            "computer's LAN address to play from a phone with --host 0.0.0.0. Anyone on that "
            "network can then reach your stories: see the README's LAN section."
        ),
    ] = None,
    accounts: Annotated[
        bool,
        typer.Option(
            "--accounts",
            help="Several players: each signs in and sees only their own stories; hosts manage "
            "users and the model (default: $TALEKEEPER_ACCOUNTS; make the first host with "
            "`talekeeper users create NAME --host`).",
        ),
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="App processes to start on this port (more than one needs PostgreSQL): each "
            "listens for itself (SO_REUSEPORT), the kernel spreads connections among them, "
            "and one that dies is started again.",
        ),
    ] = 1,
) -> None:
    """Serve the web app (default http://127.0.0.1:8000)."""
    import os

    import uvicorn

    from talekeeper import terminal
    from talekeeper.accounts import has_any_user
    from talekeeper.web import processes
    from talekeeper.web.app import ALLOWED_HOSTS_ENV, create_app

    tk = _open(data_dir, endpoint, model, provider, database_url, accounts=accounts or None)
    if workers > 1 and not tk.db.is_postgresql:
        raise typer.BadParameter(
            "several app processes need PostgreSQL (--database-url): SQLite's writer lock lives in one process",
            param_hint="--workers",
        )
    if tk.accounts and not has_any_user(tk):
        terminal.console.print(
            "Accounts are on and there are no users yet: make the first host with "
            "[bold]talekeeper users create NAME --host[/bold]."
        )
    if workers == 1:  # several workers each warm their own model on first use
        terminal.warm_up(tk)
    allowed = {host, *(allow_host or [])}
    ready = terminal.ready_lines(
        __version__,
        [f"http://{name}:{port}/" for name in (host, *(allow_host or []))],
        tk.db.describe(),
    )
    if workers == 1:
        config = uvicorn.Config(
            create_app(tk, allowed_hosts=allowed),
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
        _Announcing(config, ready).run()
        return
    terminal.show_ready(ready)
    # Each worker process builds its own app from the environment (web/app.py from_environment).
    env = {
        "TALEKEEPER_HOME": str(tk.data_dir),
        "TALEKEEPER_DATABASE_URL": tk.db.url.render_as_string(hide_password=False),
        "TALEKEEPER_ACCOUNTS": "1" if tk.accounts else "",
        ALLOWED_HOSTS_ENV: ",".join(sorted(allowed)),
        "TALEKEEPER_ENDPOINT": endpoint or os.environ.get("TALEKEEPER_ENDPOINT", ""),
        "TALEKEEPER_MODEL": model or os.environ.get("TALEKEEPER_MODEL", ""),
        "TALEKEEPER_PROVIDER": provider or os.environ.get("TALEKEEPER_PROVIDER", ""),
    }
    os.environ.update(env)
    tk.db.dispose()
    terminal.console.print(processes.describe(workers, host, port))
    raise typer.Exit(processes.serve(workers, host, port, grace=SHUTDOWN_GRACE_S))


SHUTDOWN_GRACE_S = 3
"""Ctrl+C: how long requests still running (a turn being written, the play page's warm-up
of the next prompt) may take to finish before they are cancelled. A cancelled turn saves
nothing, so waiting longer buys nothing; without a limit one Ctrl+C waited for the embedded
model to read a whole prompt (20-45 s with a play tab open)."""


def _Announcing(config: Any, lines: list[str]) -> Any:
    """A uvicorn server that says where to go once it is listening: the last thing printed,
    after any install or model-loading output, so the address is easy to find."""
    import uvicorn

    from talekeeper import terminal
    from talekeeper.service.turns import stop_warming

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                terminal.show_ready(lines)

        def handle_exit(self, sig: int, frame: Any) -> None:
            stop_warming()  # the play page's read-ahead of the next prompt: not worth waiting for
            super().handle_exit(sig, frame)

    return Server(config)


@app.command()
def play(
    scenario: Annotated[
        str | None, typer.Option(help="Start a new adventure from this scenario id.")
    ] = None,
    adventure: Annotated[int | None, typer.Option(help="Continue this adventure id.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    endpoint: Endpoint = None,
    model: Model = None,
    provider: ProviderOpt = None,
) -> None:
    """Play in the terminal: type actions, the narration streams in."""
    from talekeeper import terminal

    tk = _open(data_dir, endpoint, model, provider, database_url)
    terminal.play(tk, scenario_id=scenario, adventure_id=adventure)


@app.command("model")
def model_command(
    test: Annotated[bool, typer.Option("--test", help="Also try a short generation.")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    endpoint: Endpoint = None,
    model: Model = None,
    provider: ProviderOpt = None,
) -> None:
    """Show which model is active, and test it."""
    from talekeeper import terminal

    tk = _open(data_dir, endpoint, model, provider, database_url)
    ok = terminal.show_model(tk, test=test)
    raise typer.Exit(0 if ok else 1)


@app.command("export")
def export_command(
    adventure: Annotated[
        int, typer.Argument(help="The adventure's id (see the home page or GET /api/adventures).")
    ],
    path: Annotated[
        Path | None,
        typer.Argument(help="Where to write the bundle (default: a name from its title)."),
    ] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Export a whole adventure (every line, Save Points, memories, Insights) as one bundle file."""
    from talekeeper.terminal import interop as interop_cli

    raise typer.Exit(
        interop_cli.export_adventure(
            _open(data_dir, None, None, None, database_url), adventure, path
        )
    )


@app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="A bundle written by `talekeeper export`.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Import an adventure bundle; it is checked whole first, and a bad file changes nothing."""
    from talekeeper.terminal import interop as interop_cli

    raise typer.Exit(
        interop_cli.import_adventure(_open(data_dir, None, None, None, database_url), path)
    )


@app.command("import-card")
def import_card_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="A character card (PNG/JSON/CHARX), lorebook, or another app's story file."
        ),
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Save without asking.")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Import a card, lorebook or story from another app as a scenario: shows the import report, asks before saving."""
    from talekeeper.terminal import interop as interop_cli

    raise typer.Exit(
        interop_cli.import_card(_open(data_dir, None, None, None, database_url), path, yes)
    )


users_app = typer.Typer(
    help="Accounts for `talekeeper serve --accounts`: make hosts and players, invite, adopt, set passwords."
)
app.add_typer(users_app, name="users")


PasswordStdin = Annotated[
    bool, typer.Option("--password-stdin", help="Read the password from standard input.")
]


def _password(from_stdin: bool, prompt: str) -> str:
    """The password of `users create` / `set-password`: one line of standard input (scripts),
    else asked twice without echo."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    return typer.prompt(prompt, hide_input=True, confirmation_prompt=True)


@users_app.command("create")
def users_create(
    name: Annotated[str, typer.Argument(help="The login name (2-40 letters, digits, . _ -).")],
    host: Annotated[
        bool, typer.Option("--host", help="A host: manages users and the model endpoint.")
    ] = False,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Also give this user every adventure and scenario made before accounts were on.",
        ),
    ] = False,
    password_stdin: PasswordStdin = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Make an account (the first host, before serving with --accounts); asks for the password."""
    from talekeeper.terminal import accounts as accounts_cli

    password = _password(password_stdin, "Password")
    tk = _open(data_dir, None, None, None, database_url)
    raise typer.Exit(accounts_cli.create(tk, name, password, "host" if host else "player", adopt))


@users_app.command("set-password")
def users_set_password(
    name: Annotated[str, typer.Argument(help="Whose password.")],
    password_stdin: PasswordStdin = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Set a user's password (one who forgot theirs); asks for it. Their sessions end."""
    from talekeeper.terminal import accounts as accounts_cli

    password = _password(password_stdin, "New password")
    raise typer.Exit(
        accounts_cli.set_password(_open(data_dir, None, None, None, database_url), name, password)
    )


@users_app.command("list")
def users_list(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List the accounts."""
    from talekeeper.terminal import accounts as accounts_cli

    raise typer.Exit(accounts_cli.show(_open(data_dir, None, None, None, database_url)))


@users_app.command("invite")
def users_invite(
    url: Annotated[
        str, typer.Option(help="The address players open, to print the whole link.")
    ] = "http://127.0.0.1:8000",
    host: Annotated[bool, typer.Option("--host", help="The invited user will be a host.")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Print a one-time sign-up link (valid 7 days)."""
    from talekeeper.terminal import accounts as accounts_cli

    tk = _open(data_dir, None, None, None, database_url)
    raise typer.Exit(accounts_cli.invite(tk, url, "host" if host else "player"))


@users_app.command("adopt")
def users_adopt(
    name: Annotated[str, typer.Argument(help="Who gets them.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Give every adventure and own scenario made before accounts were on to this user."""
    from talekeeper.terminal import accounts as accounts_cli

    raise typer.Exit(accounts_cli.adopt(_open(data_dir, None, None, None, database_url), name))


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


if __name__ == "__main__":
    app()
