"""Shared fixtures: every test gets its own data directory and never the user's.

Property tests keep what they find. Every failing example Hypothesis shrinks is saved in
`tests/.hypothesis-examples/` — in the repository, so commit it — and replayed first by
every later run, here and in CI (where the folder is read, never written): a bug found
once by chance stays found. Each run's seed is printed in pytest's header; rerun with
`--hypothesis-seed=N` to draw the same examples again.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

from talekeeper.core import Talekeeper
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.store.db import DATABASE_URL_ENV
from talekeeper.web.app import create_app
from tests import pg

DEMO = "greywater-lantern"
EXAMPLES = Path(__file__).resolve().parent / ".hypothesis-examples"

_examples = DirectoryBasedExampleDatabase(EXAMPLES)
settings.register_profile(
    "talekeeper",
    database=ReadOnlyDatabase(_examples) if os.environ.get("CI") else _examples,
    print_blob=True,  # a failure prints the @reproduce_failure line that replays it exactly
)
settings.load_profile("talekeeper")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Every run has a seed, chosen here when none was given, so it can be printed and
    the run repeated (Hypothesis's own plugin reads the option after this)."""
    if config.getoption("hypothesis_seed", None) is None:
        config.option.hypothesis_seed = str(random.randrange(2**32))


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed", None)
    return f"hypothesis seed: {seed} (repeat this run's examples with --hypothesis-seed={seed})"


@pytest.fixture(scope="session", autouse=True)
def postgres_database() -> Iterator[str | None]:
    """With TALEKEEPER_DATABASE_URL at a PostgreSQL server: a database of this session's
    own there, which every test (and every `talekeeper serve` it starts) uses."""
    server = pg.configured_url()
    if server is None:
        yield None
        return
    name = f"talekeeper_test_{os.getpid()}"
    url = pg.create_database(server, name).render_as_string(hide_password=False)
    before = os.environ[DATABASE_URL_ENV]
    os.environ[DATABASE_URL_ENV] = url
    try:
        yield url
    finally:
        os.environ[DATABASE_URL_ENV] = before
        pg.drop_database(server, name)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_database: str | None
) -> Path:
    if postgres_database is not None:
        pg.empty_tables(pg.parse_database_url(postgres_database))
    home = tmp_path / "home"
    monkeypatch.setenv("TALEKEEPER_HOME", str(home))
    for var in (
        "TALEKEEPER_ENDPOINT",
        "TALEKEEPER_MODEL",
        "TALEKEEPER_PROVIDER",
        "TALEKEEPER_API_KEY",
        "TALEKEEPER_MODE",
        "TALEKEEPER_EMBEDDED_MODEL",
        "TALEKEEPER_ALLOW_REMOTE_ENDPOINT",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def scripted() -> ScriptedProvider:
    return ScriptedProvider([], chunk_size=5)


@pytest.fixture
def tk(isolated_home: Path, scripted: ScriptedProvider) -> Iterator[Talekeeper]:
    app = Talekeeper(isolated_home, provider_override=scripted)
    yield app
    app.db.dispose()


@pytest.fixture
def client(tk: Talekeeper) -> Iterator[TestClient]:
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as test_client:
        yield test_client


@pytest.fixture
def adventure_id(client: TestClient) -> int:
    response = client.post(
        "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]
