"""Accounts in a real browser: sign in, play a streamed turn, undo, change one's password,
sign out and in with the new one.

Every change here (the start form, the streamed turn's fetch, HTMX's Undo, the sign-out
form, the password form) must carry the CSRF token the guard put in the page, or it is refused.
"""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher
from playwright.sync_api import expect

from talekeeper import accounts
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "correct horse battery"
NEW = "a brand new secret"


def test_sign_in_play_and_sign_out(isolated_home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )
    provider = ScriptedProvider(["The ferrywoman nods and takes your coin."], chunk_size=6)
    tk = Talekeeper(isolated_home, provider_override=provider, accounts=True)
    with tk.db.session() as session:
        accounts.create_user(session, "ada", PASSWORD)
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(url + "/")
        expect(page).to_have_url(url + "/login?next=%2F")
        page.get_by_label("Name").fill("ada")
        page.get_by_label("Password").fill("not the password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("do not match")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator(".signout .who")).to_have_text("ada")

        page.get_by_label("What is your name?").fill("Ada")
        page.get_by_role("button", name="Start “The Lantern of Greywater”").click()
        expect(page.locator(".story")).to_contain_text("Ada, the letter in your satchel says")
        page.get_by_label("Your action").fill("pay the ferrywoman")
        page.keyboard.press("Enter")
        expect(page.locator("#story")).to_contain_text("The ferrywoman nods and takes your coin.")
        page.get_by_role("button", name="Undo").click()
        expect(page.locator("#story")).not_to_contain_text("takes your coin")

        page.locator(".signout .who").click()  # one's name in the top bar: one's account
        expect(page.get_by_role("heading", name="Your account")).to_be_visible()
        page.get_by_label("Current password").fill("not the password")
        page.get_by_label("New password").fill(NEW)
        page.get_by_role("button", name="Change my password").click()
        expect(page.get_by_role("alert")).to_contain_text("current password is not right")
        page.get_by_label("Current password").fill(PASSWORD)
        page.get_by_label("New password").fill(NEW)
        page.get_by_role("button", name="Change my password").click()
        expect(page.locator("p.ok")).to_contain_text("Your password is changed")

        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(url + "/login")
        page.goto(url + "/")
        expect(page).to_have_url(url + "/login?next=%2F")
        page.get_by_label("Name").fill("ada")
        page.get_by_label("Password").fill(NEW)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator(".signout .who")).to_have_text("ada")
