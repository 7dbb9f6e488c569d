"""Accounts (`serve --accounts`): users, Argon2 passwords, invitations, sessions in the
database behind an HttpOnly cookie, CSRF on every change, the host's user page and CLI."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select, update
from typer.testing import CliRunner

from talekeeper import accounts
from talekeeper.cli import app as cli
from talekeeper.errors import Conflict
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Invitation, User, UserSession
from talekeeper.web.app import create_app
from talekeeper.web.pages_accounts import _local_target

PASSWORD = "correct horse battery"
REAL_HASHER = accounts._hasher
DEMO = "greywater-lantern"


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id still, with test-sized cost: the real one spends ~64 MiB and a good part of
    a second per hash on purpose, which two shared cores feel across a suite."""
    monkeypatch.setattr(
        accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


def test_the_real_hasher_uses_argon2ids_recommended_cost() -> None:
    assert REAL_HASHER.type.name == "ID"
    assert REAL_HASHER.memory_cost >= 64 * 1024 and REAL_HASHER.time_cost >= 3


@pytest.fixture
def tk_accounts(isolated_home: Path) -> Iterator[Talekeeper]:
    app = Talekeeper(
        isolated_home, provider_override=ScriptedProvider([], chunk_size=5), accounts=True
    )
    with app.db.session() as session:
        accounts.create_user(session, "hostess", PASSWORD, "host")
        accounts.create_user(session, "ada", PASSWORD)
    yield app
    app.db.dispose()


def _client(tk: Talekeeper, base_url: str = "http://127.0.0.1:8000") -> TestClient:
    return TestClient(create_app(tk), base_url=base_url)


def sign_in(client: TestClient, name: str, password: str = PASSWORD) -> str:
    """Signs in through the form; returns the session's CSRF token."""
    response = client.post(
        "/login", data={"name": name, "password": password}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    return client.get("/api/account").json()["csrf_token"]


# --- the service --------------------------------------------------------------------------


def test_passwords_are_stored_as_argon2id_hashes_only(tk_accounts: Talekeeper) -> None:
    with tk_accounts.db.session() as session:
        user = session.scalar(select(User).where(User.name == "ada"))
        assert user.password_hash.startswith("$argon2id$")
        assert PASSWORD not in user.password_hash
        assert accounts.authenticate(session, "  ADA ", PASSWORD).id == user.id


@pytest.mark.parametrize(
    ("name", "password"),
    [("ada", PASSWORD), ("nobody", PASSWORD), ("ada", PASSWORD + "x"), ("ada", ""), ("", "")],
)
def test_a_wrong_name_or_password_signs_no_one_in(
    tk_accounts: Talekeeper, name: str, password: str
) -> None:
    with tk_accounts.db.session() as session:
        if name == "ada" and password == PASSWORD:
            accounts.set_disabled(session, accounts.authenticate(session, "ada", PASSWORD).id, True)
        with pytest.raises(accounts.LoginFailed):
            accounts.authenticate(session, name, password)


@pytest.mark.parametrize(
    ("name", "password", "error"),
    [
        ("x", PASSWORD, accounts.AccountInvalid),
        ("has space", PASSWORD, accounts.AccountInvalid),
        ("-dash", PASSWORD, accounts.AccountInvalid),
        ("bob", "short", accounts.AccountInvalid),
        ("bob", "x" * (accounts.MAX_PASSWORD + 1), accounts.AccountInvalid),
        ("ADA", PASSWORD, accounts.NameTaken),
    ],
)
def test_bad_accounts_are_refused_and_nothing_is_made(
    tk_accounts: Talekeeper, name, password, error
) -> None:
    with tk_accounts.db.session() as session:
        before = len(accounts.list_users(session))
    with pytest.raises(error), tk_accounts.db.session() as session:
        accounts.create_user(session, name, password)
    with tk_accounts.db.session() as session:
        assert len(accounts.list_users(session)) == before


def test_an_invitation_signs_up_one_player_once(tk_accounts: Talekeeper) -> None:
    with tk_accounts.db.session() as session:
        token = accounts.create_invitation(session, None)
        assert session.get(Invitation, token) is None  # only its hash is kept
    with tk_accounts.db.session() as session:
        user = accounts.sign_up(session, token, "bob", PASSWORD)
        assert user.role == "player"
    with pytest.raises(accounts.InvitationInvalid), tk_accounts.db.session() as session:
        accounts.sign_up(session, token, "carol", PASSWORD)
    with pytest.raises(accounts.InvitationInvalid), tk_accounts.db.session() as session:
        accounts.sign_up(session, "made-up", "carol", PASSWORD)


def test_an_expired_invitation_is_refused(tk_accounts: Talekeeper) -> None:
    with tk_accounts.db.session() as session:
        token = accounts.create_invitation(session, None)
        session.execute(
            update(Invitation).values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    with pytest.raises(accounts.InvitationInvalid), tk_accounts.db.session() as session:
        accounts.sign_up(session, token, "bob", PASSWORD)


def test_a_session_ends_on_logout_expiry_and_disabling(tk_accounts: Talekeeper) -> None:
    with tk_accounts.db.session() as session:
        ada = accounts.authenticate(session, "ada", PASSWORD)
        tokens = [accounts.start_session(session, ada)[0] for _ in range(3)]
        assert session.get(UserSession, tokens[0]) is None  # stored hashed
    with tk_accounts.db.session() as session:
        assert all(accounts.signed_in(session, t).name == "ada" for t in tokens)
        accounts.end_session(session, tokens[0])
    with tk_accounts.db.session() as session:
        assert accounts.signed_in(session, tokens[0]) is None
        session.execute(
            update(UserSession)
            .where(UserSession.user_id == ada.id)
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        assert accounts.signed_in(session, tokens[1]) is None
        session.execute(
            update(UserSession).values(expires_at=datetime.now(UTC) + timedelta(days=1))
        )
        assert accounts.signed_in(session, tokens[2]) is not None
        accounts.set_disabled(session, ada.id, True)
        assert accounts.signed_in(session, tokens[2]) is None


def test_the_last_host_cannot_be_demoted_or_disabled(tk_accounts: Talekeeper) -> None:
    with tk_accounts.db.session() as session:
        host = accounts.authenticate(session, "hostess", PASSWORD)
        with pytest.raises(Conflict):
            accounts.set_role(session, host.id, "player")
        with pytest.raises(Conflict):
            accounts.set_disabled(session, host.id, True)
        ada = accounts.authenticate(session, "ada", PASSWORD)
        accounts.set_role(session, ada.id, "host")
        accounts.set_role(session, host.id, "player")  # another host exists now


@given(st.text(max_size=40))
def test_after_sign_in_the_browser_only_goes_to_a_path_here(target: str) -> None:
    chosen = _local_target(target)
    assert chosen.startswith("/") and not chosen.startswith(("//", "/\\"))


# --- the web ------------------------------------------------------------------------------


def test_with_accounts_off_there_is_nothing_to_sign_in_to(client: TestClient) -> None:
    assert client.get("/login").status_code == 404
    assert client.get("/api/account").status_code == 404
    assert client.get("/api/adventures").status_code == 200
    assert "csrf-token" not in client.get("/").text


def test_a_stranger_is_sent_to_sign_in_and_the_api_says_401(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts) as client:
        page = client.get("/adventures/1?x=1", follow_redirects=False)
        assert page.status_code == 303
        assert page.headers["location"] == "/login?next=%2Fadventures%2F1%3Fx%3D1"
        for method, path in [
            ("GET", "/api/adventures"),
            ("POST", "/api/adventures"),
            ("GET", "/openapi.json"),
        ]:
            response = client.request(method, path, json={})
            assert response.status_code == 401, path
            assert response.json()["error"] == "SignInRequired"
        assert client.get("/static/app.css").status_code == 200
        assert client.get("/login").status_code == 200


def test_signing_in_sets_a_protected_cookie_and_goes_where_asked(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts) as client:
        wrong = client.post("/login", data={"name": "ada", "password": "nope nope nope"})
        assert wrong.status_code == 422 and "do not match" in wrong.text
        response = client.post(
            "/login",
            data={"name": "ada", "password": PASSWORD, "next": "/scenarios"},
            follow_redirects=False,
        )
        assert response.status_code == 303 and response.headers["location"] == "/scenarios"
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie
        client.cookies.clear()
        evil = client.post(
            "/login",
            data={"name": "ada", "password": PASSWORD, "next": "//evil.example/"},
            follow_redirects=False,
        )
        assert evil.headers["location"] == "/"


def test_over_https_the_cookie_is_secure(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts, "https://127.0.0.1") as client:
        response = client.post(
            "/login", data={"name": "ada", "password": PASSWORD}, follow_redirects=False
        )
        assert "secure" in response.headers["set-cookie"].lower()
        assert client.get("/api/account").json()["name"] == "ada"


def test_every_change_needs_the_sessions_csrf_token(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts) as client:
        token = sign_in(client, "ada")
        body = {"scenario_id": DEMO, "answers": {"name": "Ada"}}
        for headers in ({}, {"X-CSRF-Token": "wrong"}):
            refused = client.post("/api/adventures", json=body, headers=headers)
            assert refused.status_code == 403 and refused.json()["error"] == "CsrfFailed"
        form = client.post("/adventures", data={"scenario_id": DEMO})
        assert form.status_code == 403
        assert client.get("/api/adventures").json() == []  # nothing was made
        made = client.post("/api/adventures", json=body, headers={"X-CSRF-Token": token})
        assert made.status_code == 201
        # A plain form posts the field the guard wrote into it.
        home = client.get("/").text
        forms = re.findall(r'<form\b[^>]*method="post"[^>]*>', home)
        assert forms and home.count(f'name="csrf_token" value="{token}"') == len(forms)
        assert f'<meta name="csrf-token" content="{token}">' in home
        renamed = client.post(
            f"/adventures/{made.json()['id']}/rename", data={"title": "Mine", "csrf_token": token}
        )
        assert renamed.status_code == 200, renamed.text
        assert [a["title"] for a in client.get("/api/adventures").json()] == ["Mine"]


def test_signing_out_ends_the_session_everywhere(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts) as client:
        token = sign_in(client, "ada")
        cookie = client.cookies.get("talekeeper_session")
        out = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
        assert out.status_code == 303 and out.headers["location"] == "/login"
    with _client(tk_accounts) as replay:  # the old cookie, kept by someone, opens nothing
        replay.cookies.set("talekeeper_session", cookie)
        assert replay.get("/api/adventures").status_code == 401


def test_the_host_invites_a_player_who_signs_up_and_plays(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts) as player:
        sign_in(player, "ada")
        assert player.get("/users").status_code == 403
        assert player.get("/api/users").status_code == 403
        assert "/users" not in player.get("/").text
    with _client(tk_accounts) as host:
        token = sign_in(host, "hostess")
        page = host.post("/users/invitations", data={"role": "player", "csrf_token": token})
        link = (
            re.search(r'<code id="invitation-link">([^<]+)</code>', page.text)
            .group(1)
            .replace("&amp;", "&")
        )
        assert link.startswith("http://127.0.0.1:8000/signup?invite=")
        assert [u["name"] for u in host.get("/api/users").json()] == ["ada", "hostess"]
    with _client(tk_accounts) as newcomer:
        signup = newcomer.get(link)
        assert signup.status_code == 200 and "Make my account" in signup.text
        invite = link.split("invite=")[1]
        made = newcomer.post(
            "/signup",
            data={"invite": invite, "name": "Bob", "password": PASSWORD},
            follow_redirects=False,
        )
        assert made.status_code == 303
        assert newcomer.get("/api/account").json()["name"] == "bob"
        again = newcomer.post(
            "/signup",
            data={"invite": invite, "name": "carol", "password": PASSWORD},
            headers={"X-CSRF-Token": newcomer.get("/api/account").json()["csrf_token"]},
        )
        assert again.status_code == 422


def test_the_host_disables_a_player_who_is_signed_out_at_once(tk_accounts: Talekeeper) -> None:
    with _client(tk_accounts) as player, _client(tk_accounts) as host:
        sign_in(player, "ada")
        token = sign_in(host, "hostess")
        ada = next(u for u in host.get("/api/users").json() if u["name"] == "ada")
        changed = host.patch(
            f"/api/users/{ada['id']}", json={"disabled": True}, headers={"X-CSRF-Token": token}
        )
        assert changed.status_code == 200 and changed.json()["disabled"] is True
        assert player.get("/api/adventures").status_code == 401
        made = host.post(
            "/api/users",
            json={"name": "carol", "password": PASSWORD},
            headers={"X-CSRF-Token": token},
        )
        assert made.status_code == 201 and made.json()["role"] == "player"


# --- the CLI ------------------------------------------------------------------------------


def test_the_cli_makes_the_first_host_and_adopts_older_stories(isolated_home: Path) -> None:
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider([]))
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:  # accounts off
        assert (
            client.post(
                "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
            ).status_code
            == 201
        )
    tk.db.dispose()
    runner = CliRunner()
    made = runner.invoke(
        cli,
        ["users", "create", "Hostess", "--host", "--adopt", "--password-stdin"],
        input=PASSWORD + "\n",
    )
    assert made.exit_code == 0, made.output
    assert "1 adventure(s)" in made.output
    listed = runner.invoke(cli, ["users", "list"])
    assert "hostess" in listed.output and "host" in listed.output
    invite = runner.invoke(cli, ["users", "invite", "--url", "http://table.example:8000"])
    assert "http://table.example:8000/signup?invite=" in invite.output
    short = runner.invoke(cli, ["users", "create", "bob", "--password-stdin"], input="short\n")
    assert short.exit_code == 1 and "at least 10" in short.output
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider([]), accounts=True)
    try:
        with _client(tk) as client:
            sign_in(client, "hostess")
            assert len(client.get("/api/adventures").json()) == 1
    finally:
        tk.db.dispose()
