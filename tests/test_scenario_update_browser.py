"""Update from the scenario in a real browser: the Plot page's button, the preview with its
checkboxes, the step in the story, and Undo taking it back (issue 23 item 7)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium
from tests.test_scenario_update import copy_of, newer, save

pytestmark = [pytest.mark.browser, needs_chromium]


def test_preview_take_and_undo_an_update_from_the_scenario(isolated_home) -> None:
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider([]))
    sid, data = copy_of(tk, "greywater-lantern")
    with tk.db.session() as session:
        aid = adventures.start_adventure(session, sid, {"name": "Ada"}).id
    save(tk, sid, newer(data))
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(f"{url}/adventures/{aid}/plot")
        page.get_by_role("link", name="Update from the scenario…").click()
        expect(page.get_by_role("heading", name="Update from the scenario")).to_be_visible()
        expect(page.locator(".update-findings")).to_contain_text("Wren joins the story")
        page.get_by_label("Author's note").uncheck()  # keep the adventure's own note
        page.get_by_role("button", name="Take the checked parts").click()
        expect(page).to_have_url(f"{url}/adventures/{aid}")
        step = page.locator("#story .turn").last
        expect(step).to_contain_text("You updated the story from its scenario")
        expect(step).to_contain_text("Story cards")
        expect(step).not_to_contain_text("Author's note")
        expect(step.locator(".update-findings")).to_contain_text("Wren joins the story")
        page.get_by_role("button", name="Undo").click()
        expect(page.locator("#story")).not_to_contain_text("You updated the story")
    with tk.db.session() as session:
        plot = unit_of_work.get_adventure(session, aid).plot
    assert not any(card["name"] == "Mudflats" for card in plot["story_cards"])
