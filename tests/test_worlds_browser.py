"""Issue 11 in a real browser: make a character within an origin, then talk to an NPC."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_make_a_character_and_talk_to_an_npc(isolated_home) -> None:
    provider = ScriptedProvider(['"Stolen," Oda snaps. "River rats."'], chunk_size=8)
    tk = Talekeeper(isolated_home, provider_override=provider)
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(url + "/")
        card = page.locator("#scenario-fenmouth-ledger")
        card.get_by_role("radio", name="The Deserter").check()
        card.get_by_label("Your character's name").fill("Aldric")
        card.get_by_label("Class").select_option("assassin")
        card.get_by_label("Wits").fill("4")
        card.get_by_label("Grace").fill("3")
        card.get_by_role("button", name="Start “The Fenmouth Ledger”").click()
        expect(page.locator(".story")).to_contain_text("You came down the river by barge")

        page.get_by_label("Who you talk to").select_option("oda_fenn")
        expect(
            page.get_by_role("radio", name="Talk to")
        ).to_be_checked()  # choosing someone means talking
        page.get_by_label("Your action").fill("what happened to the ledger?")
        page.keyboard.press("Enter")
        expect(page.locator("#story")).to_contain_text(
            '> You say to Oda Fenn, "What happened to the ledger?"'
        )
        expect(page.locator("#story")).to_contain_text("River rats.")
    last = provider.requests[-1]
    sent = last.prompt if last.mode == "completion" else "\n".join(m.content for m in last.messages)
    assert "burned the ledger herself" in sent  # Oda's own call carried her knowledge
