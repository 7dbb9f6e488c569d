"""`talekeeper serve` says where to go last and whole, and one Ctrl+C stops it promptly
even with a play tab open: the play page's read-ahead of the next prompt is cancelled, and
requests still running get `SHUTDOWN_GRACE_S`, not as long as the model takes."""

from __future__ import annotations

import asyncio
import signal
import threading

import httpx
from rich.console import Console

from talekeeper import cli, terminal
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.terminal import loop
from talekeeper.web.app import create_app
from tests.browser import free_port


class StuckModel(ScriptedProvider):
    """An "embedded" model whose reading of a prompt never ends (as a long one seems to)."""

    runs_here = True

    def __init__(self) -> None:
        super().__init__([])
        self.reading = threading.Event()
        self.cancelled = threading.Event()

    async def complete(self, request):  # type: ignore[no-untyped-def]
        self.reading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return ""


def test_one_ctrl_c_stops_the_server_while_the_play_page_warms_the_model(
    isolated_home, monkeypatch
) -> None:
    model = StuckModel()
    tk = Talekeeper(isolated_home, provider_override=model)
    with tk.db.session() as session:
        aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    console = Console(record=True, width=60, color_system=None)
    monkeypatch.setattr(loop, "console", console)
    port = free_port()
    ready = terminal.ready_lines("9.9", [f"http://127.0.0.1:{port}/"], "/somewhere/talekeeper.db")
    import uvicorn

    config = uvicorn.Config(
        create_app(tk),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=None,  # no grace limit: only the cancel can end the wait
    )
    server = cli._Announcing(config, ready)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        while not server.started:
            thread.join(0.05)
        # the address is printed once listening, whole on its own line, after anything else
        out = console.export_text()
        assert f"    http://127.0.0.1:{port}/\n" in out
        assert out.rstrip().splitlines()[-2].startswith("Your stories are kept in")
        assert client.get(f"/adventures/{aid}").status_code == 200  # starts the read-ahead
        assert model.reading.wait(30)
    server.handle_exit(signal.SIGINT, None)  # what one Ctrl+C does
    thread.join(60)
    assert not thread.is_alive(), "the server still waits for the model"
    assert model.cancelled.is_set()
    tk.db.dispose()
