"""The FastAPI application: JSON API, server-rendered pages, static files."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from talekeeper import __version__
from talekeeper.service.app import Talekeeper
from talekeeper.web import (
    api,
    api_accounts,
    api_connections,
    api_context,
    api_hand,
    api_interop,
    api_samplers,
    api_scenarios,
    api_settings,
    api_state,
    api_tree,
    apidocs,
    errors,
    pages,
    pages_accounts,
    pages_connections,
    pages_context,
    pages_interop,
    pages_samplers,
    pages_scenarios,
    pages_settings,
    pages_state,
    pages_tree,
)
from talekeeper.web.auth import AccountsMiddleware
from talekeeper.web.security import LocalOnlyMiddleware
from talekeeper.web.signin import SignInGuard

STATIC = Path(__file__).parent / "static"


def create_app(tk: Talekeeper, allowed_hosts: set[str] | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await tk.aclose()
        if tk.accounts:
            app.state.signin.pool.shutdown()

    app = FastAPI(
        title="talekeeper",
        version=__version__,
        description="Local-first interactive storytelling: the model narrates, the app owns the truth.",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's pages pull their viewers from a CDN: see web/apidocs.py
        redoc_url=None,
    )
    app.state.tk = tk
    errors.install(app)
    if tk.accounts:
        app.state.signin = SignInGuard(tk)  # password hashes capped, failures backing off
        app.include_router(pages_accounts.router)
        app.include_router(api_accounts.router)
    app.include_router(api.router)
    app.include_router(
        api_interop.router
    )  # before api_state: /api/schemas/bundle is more specific than /api/schemas/{name}
    app.include_router(api_settings.router)
    app.include_router(api_scenarios.router)
    app.include_router(api_tree.router)
    app.include_router(api_state.router)
    app.include_router(pages.router)
    app.include_router(pages_settings.router)
    app.include_router(api_samplers.router)
    app.include_router(api_connections.router)
    app.include_router(pages_connections.router)
    app.include_router(api_hand.router)
    app.include_router(pages_samplers.router)
    app.include_router(pages_tree.router)
    app.include_router(pages_state.router)
    app.include_router(pages_scenarios.router)
    app.include_router(api_context.router)
    app.include_router(pages_context.router)
    app.include_router(pages_interop.router)
    app.include_router(apidocs.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:  # browsers ask for it on every page that names no icon
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    if tk.accounts:  # inside the local guard: Host, Origin and body limits are judged first
        app.add_middleware(AccountsMiddleware, tk=tk)
    app.add_middleware(LocalOnlyMiddleware, allowed_hosts=allowed_hosts or set())
    return app


ALLOWED_HOSTS_ENV = "TALEKEEPER_ALLOWED_HOSTS"


def from_environment() -> FastAPI:
    """The app as the environment describes it, for a process manager that starts several
    (`uvicorn --factory --workers N talekeeper.web.app:from_environment`, or what
    `talekeeper serve --workers N` runs): $TALEKEEPER_DATABASE_URL, $TALEKEEPER_ACCOUNTS,
    $TALEKEEPER_HOME, and $TALEKEEPER_ALLOWED_HOSTS (names besides loopback, comma-separated).
    """
    import os

    hosts = {h.strip() for h in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()}
    return create_app(Talekeeper.open(), allowed_hosts=hosts)
