"""Passwords from the web with accounts on: a player changes their own (the current one
required; their other sessions end), and a host gives one who forgot theirs a one-time
reset link (stored only hashed, expiring, single use; using it ends every session of
theirs). Also `talekeeper users set-password`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update
from typer.testing import CliRunner

from talekeeper import accounts
from talekeeper.cli import app as cli
from talekeeper.errors import Conflict
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import PasswordReset, User, UserSession
from talekeeper.web.app import create_app

PASSWORD = "correct horse battery"
NEW = "a brand new secret"
LATER = "yet another secret!"


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


@pytest.fixture
def tk(isolated_home: Path) -> Iterator[Talekeeper]:
    app = Talekeeper(isolated_home, provider_override=ScriptedProvider([]), accounts=True)
    with app.db.session() as session:
        accounts.create_user(session, "hostess", PASSWORD, "host")
        accounts.create_user(session, "ada", PASSWORD)
        accounts.create_user(session, "bob", PASSWORD)
    yield app
    app.db.dispose()


def _id(tk: Talekeeper, name: str) -> int:
    with tk.db.session() as session:
        return session.scalar(select(User.id).where(User.name == name))


def _hash(tk: Talekeeper, name: str) -> str:
    with tk.db.session() as session:
        return session.scalar(select(User.password_hash).where(User.name == name))


def _logins(tk: Talekeeper, name: str, count: int = 2) -> list[str]:
    with tk.db.session() as session:
        user = accounts.authenticate(session, name, PASSWORD)
        return [accounts.start_session(session, user)[0] for _ in range(count)]


def _signed_in(tk: Talekeeper, token: str) -> bool:
    with tk.db.session() as session:
        return accounts.signed_in(session, token) is not None


def _password_is(tk: Talekeeper, name: str, password: str) -> bool:
    try:
        with tk.db.session() as session:
            accounts.authenticate(session, name, password)
    except accounts.LoginFailed:
        return False
    return True


def _client(tk: Talekeeper) -> TestClient:
    return TestClient(create_app(tk), base_url="http://127.0.0.1:8000")


def sign_in(client: TestClient, name: str, password: str = PASSWORD) -> str:
    response = client.post(
        "/login", data={"name": name, "password": password}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    token = client.get("/api/account").json()["csrf_token"]
    client.headers["X-CSRF-Token"] = token
    return token


# --- the service --------------------------------------------------------------------------


def test_a_player_changes_their_own_password_and_their_other_sessions_end(tk: Talekeeper) -> None:
    here, elsewhere = _logins(tk, "ada")
    bobs = _logins(tk, "bob", 1)[0]
    with tk.db.session() as session:
        accounts.change_own_password(session, _id(tk, "ada"), PASSWORD, NEW, here)
    assert _password_is(tk, "ada", NEW) and not _password_is(tk, "ada", PASSWORD)
    assert _signed_in(tk, here) and not _signed_in(tk, elsewhere)
    assert _signed_in(tk, bobs) and _password_is(tk, "bob", PASSWORD)


@pytest.mark.parametrize(
    ("current", "new", "error"),
    [
        ("not my password", NEW, accounts.WrongPassword),
        ("", NEW, accounts.WrongPassword),
        (PASSWORD, "short", accounts.AccountInvalid),
        (PASSWORD, "x" * (accounts.MAX_PASSWORD + 1), accounts.AccountInvalid),
    ],
)
def test_a_refused_change_changes_nothing(tk: Talekeeper, current, new, error) -> None:
    logins = _logins(tk, "ada")
    before = _hash(tk, "ada")
    with pytest.raises(error), tk.db.session() as session:
        accounts.change_own_password(session, _id(tk, "ada"), current, new, logins[0])
    assert _hash(tk, "ada") == before
    assert all(_signed_in(tk, t) for t in logins)


def test_a_reset_link_works_once_and_ends_every_session(tk: Talekeeper) -> None:
    logins = _logins(tk, "ada")
    with tk.db.session() as session:
        token = accounts.create_password_reset(session, _id(tk, "ada"), _id(tk, "hostess"))
        assert session.get(PasswordReset, token) is None  # only its hash is kept
        assert token not in str(session.scalars(select(PasswordReset.token_hash)).all())
    with tk.db.session() as session:
        assert accounts.use_password_reset(session, token, NEW).name == "ada"
    assert _password_is(tk, "ada", NEW)
    assert not any(_signed_in(tk, t) for t in logins)
    with pytest.raises(accounts.ResetInvalid), tk.db.session() as session:
        accounts.use_password_reset(session, token, LATER)  # used: refused, nothing changes
    assert _password_is(tk, "ada", NEW) and not _password_is(tk, "ada", LATER)


def test_an_expired_replaced_or_unknown_link_changes_nothing(tk: Talekeeper) -> None:
    ada = _id(tk, "ada")
    with tk.db.session() as session:
        old = accounts.create_password_reset(session, ada, None)
    with tk.db.session() as session:
        newer = accounts.create_password_reset(session, ada, None)
    with tk.db.session() as session:
        expiring = accounts.create_password_reset(session, _id(tk, "bob"), None)
        session.execute(
            update(PasswordReset)
            .where(PasswordReset.user_id == _id(tk, "bob"))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    logins = _logins(tk, "ada") + _logins(tk, "bob")
    hashes = (_hash(tk, "ada"), _hash(tk, "bob"))
    for token in (old, expiring, "made-up", "", newer + "x"):
        with pytest.raises(accounts.ResetInvalid), tk.db.session() as session:
            accounts.use_password_reset(session, token, NEW)
    assert (_hash(tk, "ada"), _hash(tk, "bob")) == hashes
    assert all(_signed_in(tk, t) for t in logins)
    # A password too short is refused and the link stays usable.
    with pytest.raises(accounts.AccountInvalid), tk.db.session() as session:
        accounts.use_password_reset(session, newer, "short")
    with tk.db.session() as session:
        accounts.use_password_reset(session, newer, NEW)
    assert _password_is(tk, "ada", NEW)


def test_a_disabled_user_gets_no_link_and_cannot_use_one(tk: Talekeeper) -> None:
    ada = _id(tk, "ada")
    with tk.db.session() as session:
        token = accounts.create_password_reset(session, ada, None)
        accounts.set_disabled(session, ada, True)
    before = _hash(tk, "ada")
    with pytest.raises(accounts.ResetInvalid), tk.db.session() as session:
        accounts.use_password_reset(session, token, NEW)
    with pytest.raises(Conflict), tk.db.session() as session:
        accounts.create_password_reset(session, ada, None)
    assert _hash(tk, "ada") == before
    with tk.db.session() as session:
        assert accounts.password_reset_holder(session, token) is None


def test_changing_the_password_kills_outstanding_reset_links(tk: Talekeeper) -> None:
    with tk.db.session() as session:
        token = accounts.create_password_reset(session, _id(tk, "ada"), None)
    with tk.db.session() as session:
        accounts.change_own_password(session, _id(tk, "ada"), PASSWORD, NEW, None)
    with pytest.raises(accounts.ResetInvalid), tk.db.session() as session:
        accounts.use_password_reset(session, token, LATER)
    assert _password_is(tk, "ada", NEW)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(guess=st.text(max_size=60))
def test_no_guessed_link_opens_an_account(tk: Talekeeper, guess: str) -> None:
    with tk.db.session() as session:
        token = accounts.create_password_reset(session, _id(tk, "ada"), None)
    before = _hash(tk, "ada")
    if guess != token:
        with pytest.raises(accounts.ResetInvalid), tk.db.session() as session:
            accounts.use_password_reset(session, guess, NEW)
    assert _hash(tk, "ada") == before


# --- the web ------------------------------------------------------------------------------


def test_the_account_page_changes_the_password_and_signs_out_elsewhere(tk: Talekeeper) -> None:
    with _client(tk) as here, _client(tk) as elsewhere:
        token = sign_in(here, "ada")
        sign_in(elsewhere, "ada")
        page = here.get("/account")
        assert page.status_code == 200 and 'action="/account/password"' in page.text
        assert f'name="csrf_token" value="{token}"' in page.text  # the guard wrote it in
        assert 'href="/account"' in page.text  # reached from every page's top bar
        del here.headers["X-CSRF-Token"]  # a plain form, as a browser posts it
        wrong = here.post(
            "/account/password",
            data={"current_password": "not it at all", "new_password": NEW, "csrf_token": token},
        )
        assert wrong.status_code == 422 and "current password is not right" in wrong.text
        assert elsewhere.get("/api/account").status_code == 200
        short = here.post(
            "/account/password",
            data={"current_password": PASSWORD, "new_password": "short", "csrf_token": token},
        )
        assert short.status_code == 422 and "at least 10" in short.text
        no_token = here.post(
            "/account/password", data={"current_password": PASSWORD, "new_password": NEW}
        )
        assert no_token.status_code == 403
        other_site = here.post(
            "/account/password",
            data={"current_password": PASSWORD, "new_password": NEW, "csrf_token": token},
            headers={"Origin": "http://evil.example"},
        )
        assert other_site.status_code == 403
        assert _password_is(tk, "ada", PASSWORD)
        done = here.post(
            "/account/password",
            data={"current_password": PASSWORD, "new_password": NEW, "csrf_token": token},
        )
        assert done.status_code == 200 and "Your password is changed" in done.text
        assert here.get("/api/account").json()["name"] == "ada"  # this session stays
        assert elsewhere.get("/api/account").status_code == 401  # the other one ended
    assert _password_is(tk, "ada", NEW)


def test_the_api_changes_ones_own_password_only(tk: Talekeeper) -> None:
    with _client(tk) as ada, _client(tk) as bob:
        sign_in(ada, "ada")
        sign_in(bob, "bob")
        wrong = ada.post(
            "/api/account/password",
            json={"current_password": "not it at all", "new_password": NEW},
        )
        assert wrong.status_code == 422 and wrong.json()["error"] == "WrongPassword"
        assert (
            ada.post(
                "/api/account/password", json={"current_password": PASSWORD, "new_password": NEW}
            ).status_code
            == 204
        )
        assert ada.get("/api/account").status_code == 200
        # Bob knows Ada's old password, but the route only ever changes the caller's own.
        mine = bob.post(
            "/api/account/password", json={"current_password": PASSWORD, "new_password": LATER}
        )
        assert mine.status_code == 204
    assert _password_is(tk, "ada", NEW) and _password_is(tk, "bob", LATER)


def test_the_host_makes_a_reset_link_the_player_uses_once(tk: Talekeeper) -> None:
    ada_id = _id(tk, "ada")
    with _client(tk) as host, _client(tk) as ada_old, _client(tk) as stranger:
        sign_in(host, "hostess")
        sign_in(ada_old, "ada")
        users = host.get("/users").text
        assert f'action="/users/{ada_id}/reset"' in users
        made = host.post(f"/users/{ada_id}/reset")
        assert made.status_code == 200
        link = re.search(r'<code id="reset-link">([^<]+)</code>', made.text).group(1)
        assert link.startswith("http://127.0.0.1:8000/reset?token=")
        token = link.split("token=", 1)[1]
        # Ada, signed out, opens the link: the page names her account.
        form = stranger.get(f"/reset?token={token}")
        assert form.status_code == 200 and "<strong>ada</strong>" in form.text
        short = stranger.post("/reset", data={"token": token, "new_password": "short"})
        assert short.status_code == 422 and "at least 10" in short.text
        from_elsewhere = stranger.post(
            "/reset",
            data={"token": token, "new_password": NEW},
            headers={"Origin": "http://evil.example"},
        )
        assert from_elsewhere.status_code == 403
        assert _password_is(tk, "ada", PASSWORD)
        done = stranger.post("/reset", data={"token": token, "new_password": NEW})
        assert done.status_code == 200 and "is set" in done.text
        assert ada_old.get("/api/account").status_code == 401  # every session of hers ended
        again = stranger.post("/reset", data={"token": token, "new_password": LATER})
        assert again.status_code == 422 and "cannot be used" in again.text
        assert stranger.get(f"/reset?token={token}").status_code == 404
        assert stranger.get("/reset?token=made-up").status_code == 404
        assert host.get("/api/account").status_code == 200  # the host's own session is untouched
    assert _password_is(tk, "ada", NEW) and not _password_is(tk, "ada", LATER)


def test_the_reset_link_api_is_the_hosts_and_refuses_a_disabled_player(tk: Talekeeper) -> None:
    ada_id = _id(tk, "ada")
    with _client(tk) as host, _client(tk) as bob:
        sign_in(host, "hostess")
        sign_in(bob, "bob")
        for method, path in (
            ("POST", f"/api/users/{ada_id}/password-reset"),
            ("POST", f"/users/{ada_id}/reset"),
        ):
            refused = bob.request(method, path)
            assert refused.status_code == 403, path
        with tk.db.session() as session:
            assert session.scalar(select(PasswordReset.token_hash)) is None  # none was made
        made = host.post(f"/api/users/{ada_id}/password-reset")
        assert made.status_code == 201 and made.json()["link"].endswith(made.json()["token"])
        assert host.post("/api/users/9999/password-reset").status_code == 404
        host.patch(f"/api/users/{ada_id}", json={"disabled": True})
        assert host.post(f"/api/users/{ada_id}/password-reset").status_code == 409
        page = host.post(f"/users/{ada_id}/reset")
        assert page.status_code == 409 and "disabled" in page.text
        used = bob.post("/reset", data={"token": made.json()["token"], "new_password": NEW})
        assert used.status_code == 422
    assert _password_is(tk, "ada", PASSWORD) is False  # disabled: signs in with nothing
    with tk.db.session() as session:
        accounts.set_disabled(session, ada_id, False)
    assert _password_is(tk, "ada", PASSWORD)


def test_the_cli_sets_a_forgotten_password(tk: Talekeeper) -> None:
    logins = _logins(tk, "ada")
    runner = CliRunner()
    done = runner.invoke(
        cli, ["users", "set-password", "ADA", "--password-stdin"], input=NEW + "\n"
    )
    assert done.exit_code == 0, done.output
    assert _password_is(tk, "ada", NEW) and not any(_signed_in(tk, t) for t in logins)
    short = runner.invoke(cli, ["users", "set-password", "ada", "--password-stdin"], input="x\n")
    assert short.exit_code == 1 and "at least 10" in short.output
    nobody = runner.invoke(
        cli, ["users", "set-password", "zed", "--password-stdin"], input=NEW + "\n"
    )
    assert nobody.exit_code == 1 and "No user named" in nobody.output
    assert _password_is(tk, "ada", NEW)
    with tk.db.session() as session:
        assert session.scalar(select(UserSession.token_hash)) is None
