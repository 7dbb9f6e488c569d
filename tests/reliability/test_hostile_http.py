"""Every route, JSON and page alike, with accounts on and off: hostile requests over a real
socket never get a server error, never stall, are refused with a bounded answer, and a
refused one writes nothing (tests/reliability/hostile.py says what is sent and how it is
judged). With TALEKEEPER_DATABASE_URL set it runs on PostgreSQL, as `make test`'s second
pass does; `scripts/fuzz_long.py` runs it with many more random mutations a route
(TALEKEEPER_HOSTILE_VARIANTS)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher

from talekeeper import accounts
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory.worker import MemoryWorker
from talekeeper.service.app import Talekeeper
from talekeeper.web import signin
from talekeeper.web.app import create_app
from tests.conftest import DEMO
from tests.reliability.hostile import Families, Sent, Server, judge, routes, send
from tests.reliability.test_fuzz import RUNS, CommitWatch

PASSWORD = "correct horse battery"
VARIANTS = int(os.environ.get("TALEKEEPER_HOSTILE_VARIANTS", "0"))  # 0: the suite's short run
SEED = int(os.environ.get("TALEKEEPER_HOSTILE_SEED", str(random.randrange(10**6))))


@pytest.fixture
def quiet_bank(monkeypatch: pytest.MonkeyPatch) -> None:
    """No background memory runs: only the request under test may change the database."""
    monkeypatch.setattr(MemoryWorker, "schedule", lambda self, adventure_id, after=None: None)


@pytest.fixture
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cheap hashes, and refusals answered at once (the flood's pace is
    tests/test_signin_guard.py's)."""
    monkeypatch.setattr(signin, "TARPIT", 0.0)
    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    monkeypatch.setattr(accounts, "_hasher", cheap)
    monkeypatch.setattr(accounts, "_DUMMY_HASH", cheap.hash("x"))


class Player:
    """Requests as the app's player: signed in (a host, so every route is reachable) with
    accounts on; with them off, as anyone."""

    def __init__(self, port: int, accounts_on: bool) -> None:
        self.port = port
        self.accounts_on = accounts_on
        self.headers: list[tuple[bytes, bytes]] = []
        self.device = b""  # the browser's device cookie: its sign-ins are not held back
        if accounts_on:
            self.sign_in()

    def sign_in(self) -> None:
        answer = send(
            self.port,
            Sent(
                "POST",
                b"/login",
                f"name=ada&password={PASSWORD.replace(' ', '+')}".encode(),
                [(b"Content-Type", b"application/x-www-form-urlencoded")]
                + ([(b"Cookie", self.device)] if self.device else []),
            ),
        )
        sent = {c.split("=", 1)[0]: c.split(";")[0] for c in answer.cookies}
        cookie = sent.get("talekeeper_session", "")
        assert cookie.startswith("talekeeper_session="), answer
        self.device = sent.get("talekeeper_device", self.device.decode()).encode()
        account = send(
            self.port, Sent("GET", b"/api/account", headers=[(b"Cookie", cookie.encode())])
        )
        token = json.loads(account.body)["csrf_token"]
        self.headers = [(b"Cookie", cookie.encode()), (b"X-CSRF-Token", token.encode())]

    def still_signed_in(self) -> None:
        """Sign in again if a route under test ended the session (sign out, a password)."""
        if self.accounts_on and self.json("GET", "/api/account", None)[0] != 200:
            self.sign_in()

    def json(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        sent = Sent(
            method,
            path.encode(),
            json.dumps(body).encode() if body is not None else b"",
            [(b"Content-Type", b"application/json"), *self.headers],
        )
        answer = send(self.port, sent)
        try:
            return answer.status, json.loads(answer.body or b"null")
        except ValueError:
            return answer.status, None

    def story(self, ids: dict[str, str]) -> dict[str, str]:
        """A fresh adventure (two turns, a Save Point), a scenario of one's own, a sampler
        preset: real things for the path parameters, whatever earlier routes deleted. The
        last ones are deleted (the home page lists every adventure: it stays small)."""
        if ids:
            self.json("DELETE", f"/api/adventures/{ids['adventure_id']}", None)
            if ids["scenario_id"] != DEMO:
                self.json("DELETE", f"/api/scenarios/{ids['scenario_id']}", None)
        status, made = self.json(
            "POST", "/api/adventures", {"scenario_id": DEMO, "answers": {"name": "Ada"}}
        )
        assert status == 201, made
        adventure = str(made["id"])
        turns = [
            self.json("POST", f"/api/adventures/{adventure}/turns", {"kind": "continue"})[1]
            for _ in range(2)
        ]
        node = str(turns[-1]["turn"]["id"])
        point = self.json("POST", f"/api/adventures/{adventure}/save-points", {"name": "fuzz"})
        own = self.json("POST", f"/api/scenarios/{DEMO}/duplicate", None)[1]
        self.json("PUT", "/api/sampler-presets/calm", {"values": {"temperature": 0.5}})
        return {
            "adventure_id": adventure,
            "node_id": node,
            "leaf_id": node,
            "save_point_id": str(point[1]["id"]) if point[0] == 201 else "1",
            "scenario_id": own["id"] if isinstance(own, dict) and "id" in own else DEMO,
            "name": "calm",
            "index": "0",
            "memory_id": "1",
            "part": "story",
            "host": "example.com",
            "profile_id": "1",
            "user_id": self.bob,
        }


@pytest.mark.parametrize("accounts_on", [False, True], ids=["accounts off", "accounts on"])
def test_no_hostile_request_gets_a_server_error_a_stall_or_a_write(
    isolated_home: Path, quiet_bank: None, cheap_hashes: None, accounts_on: bool
) -> None:
    provider = ScriptedProvider(lambda request: "The lamp burns low.", chunk_size=7)
    tk = Talekeeper(isolated_home, provider_override=provider, accounts=accounts_on)
    bob = "1"
    if accounts_on:
        with tk.db.session() as session:
            accounts.create_user(session, "ada", PASSWORD, role="host")
            bob = str(accounts.create_user(session, "bob", PASSWORD).id)
    app = create_app(tk)
    rng = random.Random(SEED)
    failures: list[str] = []
    print(f"hostile HTTP: seed {SEED} (TALEKEEPER_HOSTILE_SEED), variants {VARIANTS}")
    with Server(app) as server:
        player = Player(server.port, accounts_on)
        player.bob = bob  # type: ignore[attr-defined]
        families = Families(app, {}, rng)
        watch = CommitWatch(tk.db)
        sent_count = 0
        for number, route in enumerate(routes(app)):
            player.still_signed_in()
            families.ids = player.story(families.ids)
            for sent in families.all(route, VARIANTS, short=None if VARIANTS else number):
                if not any(name.lower() == b"cookie" for name, _ in sent.headers):
                    sent.headers += player.headers
                    if sent.family.startswith(("form", "multipart")) and number % 2:
                        # the token in the form, as a page posts it: the guard reads the body
                        sent.headers = [h for h in sent.headers if h[0] != b"X-CSRF-Token"]
                watch.changed()
                answer = send(server.port, sent)
                sent_count += 1
                problem = judge(sent, answer, answer.status >= 400 and watch.changed())
                if problem:
                    failures.append(f"{sent.describe()}\n    -> {problem}")
        watch.close()
    RUNS["hostile http"] += sent_count
    tk.db.dispose()
    if failures and os.environ.get("TALEKEEPER_HOSTILE_REPORT"):
        Path(os.environ["TALEKEEPER_HOSTILE_REPORT"]).write_text("\n".join(failures))
    assert not failures, (
        f"{len(failures)} of {sent_count} answers failed (seed {SEED}):\n"
        + "\n".join(failures[:60])
    )
