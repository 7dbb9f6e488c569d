"""The play page in a real browser: start the demo, play a turn that streams, undo, redo."""

from __future__ import annotations

import asyncio

import pytest
from playwright.sync_api import expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_start_the_demo_and_play_a_streamed_turn(isolated_home) -> None:
    provider = ScriptedProvider(
        ["The ferrywoman squints at you through the rain. <b>Not</b> markup.", "You wait."],
        chunk_size=6,
    )
    tk = Talekeeper(isolated_home, provider_override=provider)
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(url + "/")
        page.get_by_label("What is your name?").fill("Ada")
        page.get_by_role("button", name="Start “The Lantern of Greywater”").click()
        expect(page.locator(".story")).to_contain_text("Ada, the letter in your satchel says")
        expect(page.get_by_role("button", name="Undo")).to_be_disabled()

        page.get_by_label("Your action").fill("wave to the ferrywoman")
        page.keyboard.press("Enter")
        expect(page.locator("#story")).to_contain_text("> You wave to the ferrywoman.")
        expect(page.locator("#story")).to_contain_text(
            "The ferrywoman squints at you through the rain. <b>Not</b> markup."
        )
        assert page.locator("#story b").count() == 0
        expect(page.get_by_role("button", name="Undo")).to_be_enabled()
        expect(page.get_by_label("Your action")).to_have_value("")

        page.get_by_role("button", name="Undo").click()
        expect(page.locator("#story")).not_to_contain_text("squints")
        page.get_by_role("button", name="Redo").click()
        expect(page.locator("#story")).to_contain_text("squints")

        # The story survives a reload (it is the server's, not the page's).
        page.reload()
        expect(page.locator("#story")).to_contain_text("squints")


def test_streaming_shows_text_before_the_turn_finishes(isolated_home) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider(
        ["Thunder rolls over the headland while the lamp gutters."],
        chunk_size=8,
        gate=gate,
        gate_after_chunks=4,
    )
    tk = Talekeeper(isolated_home, provider_override=provider)
    app = create_app(tk)
    with live_server(app) as url, browser_page() as page:
        page.goto(url + "/")
        page.get_by_role("button", name="Start “The Lantern of Greywater”").click()
        page.get_by_label("Your action").fill("listen")
        page.get_by_role("button", name="Send").click()
        # Four chunks arrive and the stream is held: the page already shows them (the echo
        # guard lets a line out once its first four words are judged story).
        expect(page.locator("#live")).to_contain_text("Thunder rolls over the")
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        page.get_by_role("button", name="Stop").click()
        expect(page.locator("#turn-error")).to_contain_text("Nothing was saved")
        expect(page.get_by_label("Your action")).to_have_value("listen")
        expect(page.locator("#story")).not_to_contain_text("Thunder")
