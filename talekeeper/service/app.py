"""The application object: one data directory, its database, settings and model.

Like datasette's `Datasette`, the web app and the CLI both build one of these and hand
it to the services; tests build one on a temporary directory. It lives in the service
layer (services take it and open their own transactions on its database); the public
import is `talekeeper.core.Talekeeper`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from talekeeper.llm.base import Provider
from talekeeper.llm.settings import ModelSettings
from talekeeper.service import scenarios
from talekeeper.service.advisory_locks import locks_for
from talekeeper.service.settings import effective_model_settings, generation_settings
from talekeeper.store.db import DATABASE_URL_ENV, Database

HOME_ENV = "TALEKEEPER_HOME"
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

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        if self.accounts is None:
            self.accounts = accounts_from_environment()
        url = self.database_url or os.environ.get(DATABASE_URL_ENV) or None
        self.db = Database(url) if url else Database.in_directory(self.data_dir)
        self.locks = locks_for(self.db)
        self._provider: Provider | None = None
        self._provider_key: str | None = None
        self._memory_worker = None  # created on first use by talekeeper.memory.worker
        with self.db.session() as session:
            scenarios.install_builtins(session)

    @classmethod
    def open(cls, data_dir: Path | None = None, **kwargs: Any) -> Talekeeper:
        return cls(data_dir or default_data_dir(), **kwargs)

    def model_settings(self) -> ModelSettings:
        with self.db.session() as session:
            return effective_model_settings(session, self.model_overrides)

    def generation(self):
        with self.db.session() as session:
            return generation_settings(session)

    def provider(self, settings: ModelSettings | None = None) -> Provider:
        """The provider for the current settings (or `settings`, already read in the
        caller's transaction), rebuilt when the settings change."""
        if self.provider_override is not None:
            return self.provider_override
        settings = settings or self.model_settings()
        key = settings.model_dump_json()
        if self._provider is None or key != self._provider_key:
            from talekeeper.llm.registry import build_provider

            self._provider = build_provider(settings)
            self._provider_key = key
        return self._provider

    def model_description(self, settings: ModelSettings | None = None) -> str:
        if self.provider_override is not None:
            return self.provider_override.description
        from talekeeper.llm.registry import describe

        return describe(settings or self.model_settings())

    async def aclose(self) -> None:
        """Release the model (the embedded child process too) and the database."""
        from talekeeper.llm.embedded_server import stop_embedded_server

        if self._memory_worker is not None:
            await self._memory_worker.drain()  # let a memory being written finish
        if self._provider is not None:
            await self._provider.aclose()
        stop_embedded_server()
        self.db.dispose()
