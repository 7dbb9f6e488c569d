"""Shared fixtures: every test gets its own data directory and never the user's.

Property tests keep what they find. Every failing example Hypothesis shrinks is saved in
`tests/.hypothesis-examples/` — in the repository, so commit it — and replayed first by
every later run, here and in CI (where the folder is read, never written): a bug found
once by chance stays found. Each run's seed is printed in pytest's header; rerun with
TALEKEEPER_HYPOTHESIS_SEED=N (the same tests, in the same order) to draw the same examples.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import core as hypothesis_core
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
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


SEED_ENV = "TALEKEEPER_HYPOTHESIS_SEED"
RUN_SEED = int(os.environ.get(SEED_ENV) or random.randrange(2**32))
"""This run's seed. Hypothesis draws each test's seed from one random generator per run;
seeding that generator (not each test: a seeded test turns the example database off)
makes the run repeatable with the same tests in the same order."""
try:
    hypothesis_core.threadlocal._hypothesis_global_random = random.Random(RUN_SEED)
    _SEEDED = True
except AttributeError:  # a Hypothesis release that keeps its generator elsewhere
    _SEEDED = False


def pytest_report_header(config: pytest.Config) -> str:
    if not _SEEDED:
        return "hypothesis run seed: not applied (unknown Hypothesis release); failures print their blob"
    return f"hypothesis run seed: {RUN_SEED} (repeat this run with {SEED_ENV}={RUN_SEED})"


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


@pytest.fixture
def served_by_cli(monkeypatch: pytest.MonkeyPatch) -> dict:
    """What `talekeeper serve` would listen with, instead of listening: its uvicorn config
    (app, host, port) and the addresses it would announce. The CLI runs a uvicorn.Server of its own (it announces the address once
    listening), so patching uvicorn.run would let a test serve on port 8000 until killed."""
    import uvicorn

    from talekeeper import terminal

    served: dict = {}

    def record(server: uvicorn.Server, *args, **kwargs) -> None:
        served.update(app=server.config.app, host=server.config.host, port=server.config.port)

    def ready_lines(version: str, urls: list[str], *args, **kwargs) -> list[str]:
        served["urls"] = urls  # the addresses it would announce once listening
        return real_ready_lines(version, urls, *args, **kwargs)

    real_ready_lines = terminal.ready_lines
    monkeypatch.setattr(uvicorn.Server, "run", record)
    monkeypatch.setattr(terminal, "ready_lines", ready_lines)
    monkeypatch.setattr(terminal, "warm_up", lambda tk: None)
    return served


@pytest.fixture(autouse=True)
def sse_streams_open() -> Iterator[None]:
    """sse-starlette ends every event stream of the process for good once any uvicorn server
    in it is told to stop (it patches Server.handle_exit to set a process-wide flag): a test
    that stops a server must not leave every later test's turns streaming nothing."""
    from sse_starlette.sse import AppStatus

    yield
    AppStatus.should_exit = False
