"""The embedded model's server: one managed child process per app.

llama.cpp is native code; if it crashes inside talekeeper's process, the player's web
page dies with it. So the model runs in llama-cpp-python's OpenAI-compatible server as a
child process on a free loopback port, and talekeeper talks to it like any other
server. A crash costs one answer: the next request starts it again. The process
keeps its KV cache between requests, so the stable prefix of each prompt is not
recomputed every turn.

The child is protected from the outside: it listens on 127.0.0.1 only, requires a random
API key that only this process knows (passed in its environment, not on the command
line), and gets a scrubbed environment so stray variables such as HOST or PORT (which
llama-cpp-python's settings read) cannot change where it listens. It exits when
talekeeper exits, even after a hard kill (see `_embedded_child`).

`EmbeddedServer` is synchronous and thread-safe so it works from any event loop (the
CLI and the web app each have their own); async code calls `ensure_running` through
`asyncio.to_thread`. `embedded_server()` is the one per app; `stop_embedded_server()`
stops it at app shutdown, and an atexit hook stops it at interpreter exit.
"""

from __future__ import annotations

import atexit
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from talekeeper.llm.errors import EmbeddedModelError

Progress = Callable[[str], None]

_CHILD = Path(__file__).with_name("_embedded_child.py")
_KEEP_ENV = {
    "PATH",
    "HOME",
    "USER",
    "USERNAME",
    "LANG",
    "LANGUAGE",
    "TMPDIR",
    "TMP",
    "TEMP",
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "VIRTUAL_ENV",
    "PYTHONHOME",
    "PYTHONPATH",
}
_KEEP_ENV_PREFIXES = ("LC_", "GGML_", "OMP_", "CUDA_", "HIP_", "ROCR_", "VK_")


@dataclass(frozen=True)
class ServerConfig:
    model_path: str
    n_ctx: int = 8192
    n_threads: int | None = None
    startup_timeout: float = 120.0

    def threads(self) -> tuple[int, int]:
        """(generation threads, prompt threads): half the CPUs for generation, as llama.cpp.

        Not all of them: llama.cpp's threads spin while they wait for each other, so
        using every core makes them fight the app and anything else running. On a busy
        2-core machine, 2 generation threads were several times slower than 1.
        """
        if self.n_threads:
            return self.n_threads, self.n_threads
        cpus = os.cpu_count() or 2
        return max(1, min(8, cpus // 2)), max(1, min(16, cpus))


@dataclass(frozen=True)
class RunningServer:
    base_url: str  # http://127.0.0.1:PORT (no /v1)
    api_key: str
    model_alias: str
    pid: int


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_environment(api_key: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k in _KEEP_ENV or k.startswith(_KEEP_ENV_PREFIXES)
    }
    env["API_KEY"] = api_key  # read by llama-cpp-python's pydantic settings
    env["PYTHONUNBUFFERED"] = "1"
    return env


class EmbeddedServer:
    """Starts, watches, restarts and stops the model's child process."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._config: ServerConfig | None = None
        self._running: RunningServer | None = None
        self._log_path: Path | None = None
        self.last_exit_code: int | None = None
        self.last_crash_log = ""
        self.starts = 0

    # --- state -------------------------------------------------------------------

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def exit_code(self) -> int | None:
        """The child's exit code once it has died; None while it runs or before any start."""
        return None if self._proc is None else self._proc.poll()

    @property
    def running(self) -> RunningServer | None:
        return self._running if self.alive() else None

    def log_tail(self, lines: int = 15) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        text = self._log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.strip().splitlines()[-lines:])

    # --- lifecycle -----------------------------------------------------------------

    def ensure_running(
        self, config: ServerConfig, progress: Progress | None = None
    ) -> RunningServer:
        """The running server for `config`, starting or restarting it as needed (blocking)."""
        say = progress or (lambda _message: None)
        with self._lock:
            if self.alive() and self._config == config and self._running is not None:
                return self._running
            if self._proc is not None and not self.alive():
                self.last_exit_code = self._proc.returncode
                self.last_crash_log = self.log_tail()
                say(f"The embedded model stopped (exit code {self.last_exit_code}); restarting it…")
                self._cleanup()
            elif self._proc is not None:
                say("Model settings changed; restarting the embedded model…")
                self.stop()
            try:
                return self._start(config, say)
            except EmbeddedModelError as first:
                if "address already in use" not in str(first).lower():
                    raise
                return self._start(config, say)  # lost a race for the port: one more try

    def _start(self, config: ServerConfig, say: Progress) -> RunningServer:
        model = Path(config.model_path)
        port = free_port()
        api_key = secrets.token_urlsafe(24)
        threads, batch_threads = config.threads()
        alias = model.stem
        args = [
            sys.executable, "-P", str(_CHILD),
            "--model", str(model),
            "--model_alias", alias,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(config.n_ctx),
            "--n_threads", str(threads),
            "--n_threads_batch", str(batch_threads),
            "--logits_all", "false",
            "--use_mlock", "false",
            "--verbose", "false",
            # A second request (a token count, say) must wait its turn, not cut off the
            # answer being streamed: llama-cpp-python would end that stream with [DONE].
            "--interrupt_requests", "false",
            # The structured state pass and the memory writer use prompts of their own; a RAM
            # cache of evaluated prompts lets the story's long prefix be restored after them
            # instead of being read again from scratch.
            "--cache", "true",
            "--cache_type", "ram",
            "--cache_size", str(512 * 1024 * 1024),
        ]  # fmt: skip
        fd, log_name = tempfile.mkstemp(prefix="talekeeper-embedded-", suffix=".log")
        self._log_path = Path(log_name)
        say(f"Starting the embedded model ({model.name})…")
        started = time.monotonic()
        with os.fdopen(fd, "wb") as log:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_environment(api_key),
                close_fds=True,
                # Its own session: Ctrl+C at the terminal stops the turn being told, and must
                # not reach (and shut down) the model serving every later turn. The stdin
                # pipe still ends it with talekeeper.
                start_new_session=True,
            )
        self._config = config
        self.starts += 1
        running = RunningServer(f"http://127.0.0.1:{port}", api_key, alias, self._proc.pid)
        self._wait_until_ready(running, config.startup_timeout, started, say)
        self._running = running
        say(f"Embedded model ready in {time.monotonic() - started:.1f} s.")
        return running

    def _wait_until_ready(
        self, running: RunningServer, timeout: float, started: float, say: Progress
    ) -> None:
        headers = {"Authorization": f"Bearer {running.api_key}"}
        next_note = started + 2.0
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                assert self._proc is not None
                if self._proc.poll() is not None:
                    code = self._proc.returncode
                    tail = self.log_tail()
                    self._cleanup()
                    raise EmbeddedModelError(
                        f"The embedded model failed to start (exit code {code}).\n{tail}".strip()
                    )
                try:
                    if (
                        client.get(f"{running.base_url}/v1/models", headers=headers).status_code
                        == 200
                    ):
                        return
                except httpx.HTTPError:
                    pass
                now = time.monotonic()
                if now - started > timeout:
                    tail = self.log_tail()
                    self.stop()
                    raise EmbeddedModelError(
                        f"The embedded model did not become ready within {timeout:g} s.\n{tail}".strip()
                    )
                if now >= next_note:
                    say(f"Still loading the embedded model… {now - started:.0f} s")
                    next_note = now + 2.0
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the child (politely, then firmly). Safe to call at any time, repeatedly."""
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                try:
                    if proc.stdin is not None:
                        proc.stdin.close()  # the child's watchdog exits on EOF
                    proc.wait(timeout=3)
                except (subprocess.TimeoutExpired, OSError):
                    proc.terminate()
                    try:
                        proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(timeout=5)
            self._cleanup()

    def _cleanup(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        self._proc = None
        self._running = None
        self._config = None
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None


_SERVER = EmbeddedServer()


def embedded_server() -> EmbeddedServer:
    """The one embedded server of this app."""
    return _SERVER


def stop_embedded_server() -> None:
    """Stop the embedded model (call at app shutdown; also runs at interpreter exit)."""
    _SERVER.stop()


atexit.register(stop_embedded_server)
