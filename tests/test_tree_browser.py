"""The play page's tree controls in a real browser: retry, takes, edit, lines, Save Points."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_retry_takes_edit_lines_and_save_points_in_the_browser(isolated_home) -> None:
    provider = ScriptedProvider(
        ["The ferry creaks.", "The ferry groans.", "The ferrywoman waves back.", "The tide turns."],
        chunk_size=6,
    )
    tk = Talekeeper(isolated_home, provider_override=provider)
    page_dialogs: list[str] = []
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.on("dialog", lambda dialog: (page_dialogs.append(dialog.message), dialog.accept()))
        page.goto(url + "/")
        page.get_by_role("button", name="Start “The Lantern of Greywater”").click()
        story = page.locator("#story")
        expect(page.get_by_role("button", name="Retry")).to_be_disabled()

        page.get_by_label("Your action").fill("board the ferry")
        page.keyboard.press("Enter")
        expect(story).to_contain_text("The ferry creaks.")

        # Retry streams a new take in place of the last one; the old take is kept.
        page.get_by_role("button", name="Retry").click()
        expect(story).to_contain_text("The ferry groans.")
        expect(story).not_to_contain_text("The ferry creaks.")
        expect(story.locator(".take-count")).to_have_text("take 2/2")
        page.get_by_role("button", name="Previous take").click()
        expect(story).to_contain_text("The ferry creaks.")
        expect(story.locator(".take-count")).to_have_text("take 1/2")

        # Edit the narration: a third take carrying the player's words.
        page.get_by_role("button", name="Edit turn 1").click()
        page.get_by_label("Edit the narration").fill("The ferry is silent.")
        page.get_by_role("button", name="Save as a new take").click()
        expect(story).to_contain_text("The ferry is silent.")
        expect(story.locator(".take-count")).to_have_text("take 3/3")

        # Edit the action: a fourth take, narrated afresh (streamed).
        page.get_by_role("button", name="Edit turn 1").click()
        edit = page.locator("form.edit-action")
        edit.get_by_label("Say").check()
        edit.get_by_label("Your action").fill("Hello, ferrywoman")
        edit.get_by_role("button", name="Replay with this action").click()
        expect(story).to_contain_text('> You say "Hello, ferrywoman."')
        expect(story).to_contain_text("The ferrywoman waves back.")
        expect(story.locator(".take-count")).to_have_text("take 4/4")

        # A Save Point here, then read another line, then come back by restoring it.
        page.get_by_role("button", name="Save Points").click()
        page.get_by_label("Name").fill("At the ferry")
        page.get_by_role("button", name="Save this moment").click()
        expect(page.locator("#panel")).to_contain_text("you are here")

        # The retry and both edits are takes of "board the ferry", not lines: one line. A new
        # action after going back is a second.
        page.get_by_role("button", name="Lines").click()
        panel = page.locator("#panel")
        expect(panel.locator("[data-line]")).to_have_count(1)
        page.get_by_role("button", name="Undo").click()
        expect(story).not_to_contain_text("waves back")
        page.get_by_label("Your action").fill("wait on the quay")
        page.keyboard.press("Enter")
        expect(story).to_contain_text("The tide turns.")
        expect(story.locator(".take-count")).to_have_count(0)
        expect(panel.locator("[data-line]")).to_have_count(2)  # the open panel follows
        expect(panel.locator("li.current")).to_contain_text("you are reading this line")
        panel.locator("[data-line]").first.get_by_role("button", name="Read this line").click()
        expect(story).to_contain_text("The ferrywoman waves back.")
        expect(story).not_to_contain_text("The tide turns.")
        panel.locator("[data-line]").last.get_by_role("button", name="Read this line").click()
        expect(story).to_contain_text("The tide turns.")

        # Deleting the line being read is refused, and says why.
        panel.locator("li.current").get_by_role("button", name="Delete").click()
        expect(panel.get_by_role("alert")).to_contain_text("Switch to another line first")

        page.get_by_role("button", name="Save Points").click()
        page.get_by_role("button", name="Restore").click()
        expect(story).to_contain_text("The ferrywoman waves back.")
        expect(page.locator("#panel")).to_contain_text("you are here")
        assert any("Everything written after it is kept" in m for m in page_dialogs)

        # Undo and Redo still work on top of it all.
        page.get_by_role("button", name="Undo").click()
        expect(story).not_to_contain_text("waves back")
        expect(page.locator("#panel")).to_contain_text("on this line")  # the open panel follows
        page.get_by_role("button", name="Redo").click()
        expect(story).to_contain_text("The ferrywoman waves back.")
