"""Several app processes on one port (`talekeeper serve --workers N`), sharing the load.

uvicorn's own `--workers` hands one listening socket to every process, and whichever is
idle first takes the next connection: a browser keeps its connection open, so one process
ended up with most players (0/8, 1/7, 5/3 measured) and its death broke most turns at once.
Here each process listens on a socket of its own, bound to the same port with
SO_REUSEPORT (Linux, the BSDs): the kernel deals new connections out among them (by a hash
of each connection's addresses), so players spread across the processes whatever they
keep open. A process that dies is started again at once; only the turns it was writing
are lost (a turn commits whole or not at all), every other player goes on. Where the
platform has no SO_REUSEPORT this falls back to uvicorn's shared socket, and says so.

The other layout that balances is one process per port behind a reverse proxy (README:
"Hosting a table of players"); the proxy then decides who goes where.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time
from typing import Any

FACTORY = "talekeeper.web.app:from_environment"
RESTART_PAUSE = 1.0  # seconds before a dead process is started again
FAST_DEATHS = 5  # a process that dies this many times in a row within its first seconds …
FAST = 10.0  # … (seconds) is failing to start, not crashing: give up and say so


def balanced() -> bool:
    """Whether the kernel can spread one port's connections over several sockets."""
    return hasattr(socket, "SO_REUSEPORT")


def describe(workers: int, host: str, port: int) -> str:
    if balanced():
        return (
            f"{workers} app processes on {host}:{port}, each listening on a socket of its own "
            "(SO_REUSEPORT): the kernel deals new connections out among them. One that dies "
            "is started again; only the turns it was writing are lost."
        )
    return (
        f"{workers} app processes on {host}:{port}, sharing one socket (this platform has no "
        "SO_REUSEPORT, so a process may hold more players than the others; one process per "
        "port behind a reverse proxy balances them)."
    )


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _process(host: str, port: int, log_level: str, grace: int) -> None:  # pragma: no cover
    import uvicorn

    os.setpgrp()  # Ctrl+C reaches the supervisor, which tells each process once
    sock = listening_socket(host, port)
    config = uvicorn.Config(
        FACTORY, factory=True, log_level=log_level, timeout_graceful_shutdown=grace
    )
    uvicorn.Server(config).run(sockets=[sock])


def _port_is_free(host: str, port: int) -> None:
    """Bind without SO_REUSEPORT once: a port another program (or another talekeeper)
    holds is refused here, instead of quietly shared."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))


def serve(workers: int, host: str, port: int, log_level: str = "warning", grace: int = 3) -> int:
    """Run `workers` processes (each builds the app from the environment, see
    web/app.from_environment) until interrupted; returns the exit status."""
    if not balanced():
        import uvicorn

        uvicorn.run(
            FACTORY,
            factory=True,
            workers=workers,
            host=host,
            port=port,
            log_level=log_level,
            timeout_graceful_shutdown=grace,
        )
        return 0
    _port_is_free(host, port)  # fail here, not N times (and never share another's port)
    context = multiprocessing.get_context("spawn")
    stopping = False

    def start() -> Any:
        process = context.Process(target=_process, args=(host, port, log_level, grace))
        process.start()
        return process

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        for process in processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    processes = [start() for _ in range(workers)]
    started = [time.monotonic()] * workers
    fast_deaths = [0] * workers
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while True:
        for i, process in enumerate(processes):
            if process.is_alive() or stopping:
                continue
            fast_deaths[i] = fast_deaths[i] + 1 if time.monotonic() - started[i] < FAST else 0
            if fast_deaths[i] >= FAST_DEATHS:
                print(f"An app process keeps failing to start (exit {process.exitcode}); stopping.")
                stop(signal.SIGTERM, None)
                break
            print(
                f"App process {process.pid} ended (exit {process.exitcode}); starting another. "
                "Only the turns it was writing were lost."
            )
            time.sleep(RESTART_PAUSE)
            processes[i], started[i] = start(), time.monotonic()
        if stopping:
            for process in processes:
                process.join()
            return 0
        time.sleep(0.2)
