"""Helpers for the browser tests: a live server in a thread, Debian's Chromium via Playwright."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from tests import waiting

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (make test installs it as root)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(app) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    waiting.until(lambda: server.started or not thread.is_alive(), "the test server's start", 60)
    if not server.started:
        raise RuntimeError("the test server did not start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=waiting.bound(30))


@contextmanager
def browser_page(width: int = 1100, height: int = 800):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            # DOM states are waited for, never slept on; these bound how long, on this
            # machine (Playwright's own default, 5 s, was too short on a busy one)
            page.set_default_timeout(waiting.bound(30) * 1000)
            expect.set_options(timeout=waiting.bound(30) * 1000)
            yield page
        finally:
            browser.close()
