"""Story cards in a real browser (Chromium via Playwright, a scripted model): a card gated
on a flag, made in the cards panel, is sent once the story sets the flag, leaves the
prompt on Undo and comes back on Redo — Insights shows each, with its reason."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser import needs_chromium
from tests.test_web_browser import block, web

pytestmark = [pytest.mark.browser, needs_chromium]

ENTRY = "Maren's ferry waits at the pier, oars shipped."


def next_turn_card(page: Page, adventure: str):
    """The card's row in Insights for the next turn (what would be sent now)."""
    page.goto(adventure + "/insights")
    expect(page.locator("#insights-summary")).to_contain_text("What would be sent")
    return page.locator(".insights-table tr.item").filter(has_text="Hired ferry")


def expect_sent(page: Page, adventure: str, sent: bool) -> None:
    row = next_turn_card(page, adventure)
    prompt = page.locator(".context-page pre").filter(has_text=ENTRY)
    if sent:
        expect(row).not_to_have_class("item dropped")
        expect(row).to_contain_text("gate held: the flag ferry_hired is set")
        expect(prompt).to_have_count(1)
    else:
        expect(row).to_have_class("item dropped")
        expect(row).to_contain_text("gate failed: the flag ferry_hired is set (not set)")
        expect(prompt).to_have_count(0)


def test_a_gated_card_appears_with_its_flag_leaves_on_undo_and_returns_on_redo(
    isolated_home,
) -> None:
    hired = "Maren pockets the coins and unties the ferry." + block(
        {"type": "set_flag", "flag": "ferry_hired", "value": True}
    )
    with web(isolated_home, [hired]) as w:
        page = w.page
        w.start()
        adventure = page.url.split("?")[0]

        # Made in the cards panel: no trigger words, one gate on a flag the scenario declares.
        page.get_by_role("link", name="Story cards").click()
        new = page.locator("#new-card")
        new.get_by_label("Name").fill("Hired ferry")
        new.get_by_label("Entry").fill(ENTRY)
        new.locator("summary").filter(has_text="Rules").click()
        new.get_by_label("Kind").select_option("flag")
        new.get_by_label("Id", exact=True).fill("ferry_hierd")  # a typo is refused by path
        new.get_by_role("button", name="Add card").click()
        expect(page.get_by_role("status")).to_contain_text("no flag 'ferry_hierd'")
        new = page.locator("#new-card")
        new.get_by_label("Name").fill("Hired ferry")
        new.get_by_label("Entry").fill(ENTRY)
        if not new.get_by_label("Kind").is_visible():
            new.locator("summary").filter(has_text="Rules").click()
        new.get_by_label("Kind").select_option("flag")
        new.get_by_label("Id", exact=True).fill("ferry_hired")
        new.get_by_role("button", name="Add card").click()
        expect(page.get_by_role("status")).to_have_text("Saved.")
        card = page.locator(".story-card").filter(has_text="Hired ferry")
        expect(card.locator(".card-rules-words")).to_contain_text(
            "Only while the flag ferry_hired is set."
        )

        expect_sent(page, adventure, False)

        page.goto(adventure)
        w.act("offer Maren three coins for passage", "Maren pockets the coins")
        expect_sent(page, adventure, True)

        page.goto(adventure)
        page.get_by_role("button", name="Undo").click()
        expect(page.locator("#story")).not_to_contain_text("Maren pockets the coins")
        expect_sent(page, adventure, False)

        page.goto(adventure)
        page.get_by_role("button", name="Redo").click()
        expect(page.locator("#story")).to_contain_text("Maren pockets the coins")
        expect_sent(page, adventure, True)
