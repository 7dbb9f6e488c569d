"""Signing in cannot be turned into a flood (web/signin.py): failed sign-ins back off per
address and per name before any password is hashed, a stranger's failures never hold back
a player's own browser, at most a few hashes run at once (the rest are answered 503 with
Retry-After), and an invitation cannot be used to try name after name.
`benchmarks/signin_flood.py` measures what a flood does to signed-in players' reads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from talekeeper import accounts
from talekeeper.service.app import Talekeeper
from talekeeper.web import signin
from talekeeper.web.app import create_app

PASSWORD = "correct horse battery"


class CountingHasher(PasswordHasher):
    """A cheap hasher that counts its work (and can be made slow)."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.verified = 0
        self.delay = 0.0

    def verify(self, hash, password):  # type: ignore[no-untyped-def]
        self.verified += 1
        time.sleep(self.delay)
        return super().verify(hash, password)


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    counting = CountingHasher()
    monkeypatch.setattr(accounts, "_hasher", counting)
    monkeypatch.setattr(accounts, "_DUMMY_HASH", counting.hash("x"))
    return counting


@pytest.fixture(autouse=True)
def prompt_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refusals answered at once (test_a_refusal_takes_its_time tries the wait)."""
    monkeypatch.setattr(signin, "TARPIT", 0.0)


@pytest.fixture
def table(isolated_home: Path, hasher: CountingHasher) -> Iterator[tuple[Talekeeper, object]]:
    tk = Talekeeper(isolated_home, accounts=True)
    with tk.db.session() as session:
        accounts.create_user(session, "ada", PASSWORD, role="host")
    yield tk, create_app(tk)
    tk.db.dispose()


def browser(app, address: str = "203.0.113.7") -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1:8000", client=(address, 40000))


def sign_in(client: TestClient, name: str = "ada", password: str = PASSWORD):
    return client.post("/login", data={"name": name, "password": password}, follow_redirects=False)


def test_failures_from_one_address_back_off_before_any_hash(table, hasher) -> None:
    _, app = table
    stranger = browser(app)
    for _ in range(signin.FREE_PER_ADDRESS):
        assert sign_in(stranger, "ada", "wrong password!").status_code == 422
    hashed = hasher.verified
    held = sign_in(stranger, "ada", PASSWORD)  # even the right password: wait first
    assert held.status_code == 429 and int(held.headers["Retry-After"]) >= 1
    assert "Too many failed sign-ins" in held.text
    assert hasher.verified == hashed, "a backing-off attempt computed a hash"
    other_name = sign_in(stranger, "bob", "whatever whatever")
    assert other_name.status_code == 429  # the address backs off, whatever the name


def test_a_name_under_attack_backs_off_but_not_in_the_players_own_browser(table) -> None:
    _, app = table
    own = browser(app, "198.51.100.1")
    assert sign_in(own).status_code == 303 and own.cookies.get(signin.DEVICE_COOKIE)
    own.post("/logout", headers={"X-CSRF-Token": "none"})
    own.cookies.delete("talekeeper_session")
    for i in range(signin.FREE_PER_NAME):  # strangers at many addresses try ada's name
        attacker = browser(app, f"192.0.2.{i + 1}")
        assert sign_in(attacker, "ada", f"guess number {i}").status_code == 422
    newcomer = browser(app, "192.0.2.200")
    assert sign_in(newcomer).status_code == 429  # a browser ada never used: held back
    assert sign_in(own).status_code == 303  # ada's own browser: never locked out


def test_a_forged_device_cookie_is_no_device(table) -> None:
    _, app = table
    for i in range(signin.FREE_PER_NAME):
        sign_in(browser(app, f"192.0.2.{i + 1}"), "ada", f"guess number {i}")
    forger = browser(app, "192.0.2.250")
    forger.cookies.set(signin.DEVICE_COOKIE, "ada")
    assert sign_in(forger).status_code == 429


def test_a_success_clears_the_address_and_a_wait_ends(table, monkeypatch) -> None:
    _, app = table
    client = browser(app)
    for _ in range(signin.FREE_PER_ADDRESS):
        sign_in(client, "ada", "wrong password!")
    assert sign_in(client).status_code == 429
    later = time.monotonic() + signin.LONGEST + 1
    monkeypatch.setattr(signin.time, "monotonic", lambda: later)
    assert sign_in(client).status_code == 303  # the wait is over: the right password works
    client.cookies.clear()
    assert sign_in(client, "ada", "wrong again!!").status_code == 422  # counting from zero


@pytest.mark.parametrize(
    ("queue", "wait"), [(2, 30.0), (50, 0.3)], ids=["too many waiting", "waited too long"]
)
def test_at_most_a_few_hashes_run_at_once_and_the_rest_are_told_to_come_back(
    table, hasher, monkeypatch, queue, wait
) -> None:
    _, app = table
    monkeypatch.setattr(signin, "WAIT", wait)
    monkeypatch.setattr(signin, "QUEUE", queue)
    app.state.signin = signin.SignInGuard(app.state.tk, hashes=1)
    hasher.delay = 0.5
    answers: list[int] = []
    retry: list[str] = []

    def attempt(i: int) -> None:
        answer = sign_in(browser(app, f"192.0.2.{i + 1}"), f"nobody{i}", "wrong password!")
        answers.append(answer.status_code)
        if answer.status_code == 503:
            retry.append(answer.headers.get("Retry-After", ""))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.count(503) >= 6, answers  # one hashing, a few waiting: the rest refused
    assert 422 in answers and all(r.isdigit() for r in retry)
    assert hasher.verified < 6, "the refused ones must not have hashed"


def test_an_invitation_cannot_be_used_to_try_name_after_name(table) -> None:
    tk, app = table
    token = accounts.invite(tk, None)
    client = browser(app)
    for _ in range(signin.TAKEN_NAMES - 1):
        taken = client.post(
            "/signup", data={"invite": token, "name": "ada", "password": "whatever12345"}
        )
        assert taken.status_code == 409 and "taken" in taken.text
    last = client.post("/signup", data={"invite": token, "name": "ada", "password": "x" * 12})
    assert last.status_code == 422 and "cannot be used" in last.text
    free = client.post(
        "/signup",
        data={"invite": token, "name": "newcomer", "password": "whatever12345"},
        follow_redirects=False,
    )
    assert free.status_code == 422  # the invitation stopped working


def test_a_refusal_takes_its_time_so_a_connection_makes_one_attempt_a_second(
    table, monkeypatch
) -> None:
    _, app = table
    monkeypatch.setattr(signin, "TARPIT", 0.4)
    client = browser(app)
    for _ in range(signin.FREE_PER_ADDRESS):
        began = time.monotonic()
        assert sign_in(client, "ada", "wrong password!").status_code == 422
        assert time.monotonic() - began < 0.4  # a checked password is answered at once
    began = time.monotonic()
    assert sign_in(client, "ada", "wrong password!").status_code == 429
    assert time.monotonic() - began >= 0.4
