"""The application object: one data directory, its database, settings and model.

Like datasette's `Datasette`, the web app and the CLI both build one of these and hand
it to the services; tests build one on a temporary directory. It lives in the service
layer (services take it and open their own transactions on its database), so nothing in
`service/` imports upwards; everything imports it from here, by one path. It is built only
on modules that work in a caller's transaction and never take it (the connection in force,
the shipped scenarios, the settling sweep), so no module it imports imports it back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy.orm import Session

from talekeeper.llm.base import Provider
from talekeeper.llm.policy import Resolver
from talekeeper.llm.settings import ModelSettings
from talekeeper.service import settling
from talekeeper.service.advisory_locks import locks_for
from talekeeper.service.connection_in_force import (
    effective_model_settings,
    generation_settings,
    seal_plain_key,
)
from talekeeper.service.shipped_scenarios import install_builtins
from talekeeper.store.db import DATABASE_URL_ENV, Database
from talekeeper.store.secrets import KeyBox

HOME_ENV = "TALEKEEPER_HOME"
PROVIDERS_KEPT = 4  # connections kept open at once (adventures may use different ones)
ACCOUNTS_ENV = "TALEKEEPER_ACCOUNTS"


def accounts_from_environment() -> bool:
    return os.environ.get(ACCOUNTS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def default_data_dir() -> Path:
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser()
    return Path(platformdirs.user_data_dir("talekeeper", appauthor=False))


@dataclass
class Talekeeper:
    data_dir: Path
    # CLI flags that override stored and environment settings for this run.
    model_overrides: dict[str, Any] = field(default_factory=dict)
    # Tests inject a provider (scripted, or one bound to a fake server).
    provider_override: Provider | None = None
    # A database server instead of the SQLite file in data_dir (--database-url, or
    # $TALEKEEPER_DATABASE_URL): PostgreSQL, for several app processes on one database.
    database_url: str | None = None
    # Several players, each signed in and seeing only their own stories (--accounts, or
    # $TALEKEEPER_ACCOUNTS=1); off, the single local player sees everything as ever.
    accounts: bool | None = None
    # The network seam for tests: how the endpoint policy looks names up (a name that claims
    # a public address), and the transport under it (a loopback fake standing in for a
    # hosted service). The policy itself is never bypassed.
    resolver: Resolver | None = None
    transport: Any = None

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        if self.accounts is None:
            self.accounts = accounts_from_environment()
        url = self.database_url or os.environ.get(DATABASE_URL_ENV) or None
        self.db = Database(url) if url else Database.in_directory(self.data_dir)
        self.locks = locks_for(self.db)
        self.keys = KeyBox(self.data_dir)  # API keys at rest (store/secrets.py)
        self.settles = settling.Settles()  # turns' background steps (service/settling)
        self._providers: dict[str, Provider] = {}
        self._memory_worker = None  # created on first use by talekeeper.memory.worker
        with self.db.session() as session:
            install_builtins(session)
            seal_plain_key(session, self.keys)
        settling.sweep(self.db, self.locks)  # turns a stopped process left pending

    @classmethod
    def open(cls, data_dir: Path | None = None, **kwargs: Any) -> Talekeeper:
        return cls(data_dir or default_data_dir(), **kwargs)

    def model_settings(
        self, adventure_id: int | None = None, session: Session | None = None
    ) -> ModelSettings:
        """The connection in force for `adventure_id` (or by default), its key filled in:
        for talking to the model only — shown anywhere, `api_key` is left out."""
        if session is not None:
            return effective_model_settings(session, self.model_overrides, adventure_id, self.keys)
        with self.db.session() as own:
            return effective_model_settings(own, self.model_overrides, adventure_id, self.keys)

    def generation(self):
        with self.db.session() as session:
            return generation_settings(session)

    def provider(self, settings: ModelSettings | None = None) -> Provider:
        """The provider for the current settings (or `settings`, already read in the
        caller's transaction), rebuilt when the settings change."""
        if self.provider_override is not None:
            return self.provider_override
        settings = settings or self.model_settings()
        key = settings.identity()
        provider = self._providers.get(key)
        if provider is None:
            from talekeeper.llm.registry import build_provider

            provider = build_provider(settings, self.transport, self.resolver)
            while len(self._providers) >= PROVIDERS_KEPT:  # the oldest goes (kept open:
                self._providers.pop(next(iter(self._providers)))  # a turn may still use it)
            self._providers[key] = provider
        return provider

    def model_description(self, settings: ModelSettings | None = None) -> str:
        if self.provider_override is not None:
            return self.provider_override.description
        from talekeeper.llm.registry import describe

        return describe(settings or self.shown_settings())

    def shown_settings(self, adventure_id: int | None = None) -> ModelSettings:
        """The connection in force, as pages show it: without its key (nothing to reveal,
        so a key that can no longer be read does not stop a page)."""
        with self.db.session() as session:
            return effective_model_settings(session, self.model_overrides, adventure_id)

    async def aclose(self) -> None:
        """Release the model (the embedded child process too) and the database."""
        from talekeeper.llm.embedded_server import stop_embedded_server

        await self.settles.drain()  # a turn's background step finishes, not cut off
        if self._memory_worker is not None:
            await self._memory_worker.drain()  # let a memory being written finish
        for provider in list(self._providers.values()):
            await provider.aclose()
        self._providers.clear()
        stop_embedded_server()
        self.db.dispose()
