"""What a newcomer tripped over on the play page, each checked in a real browser: controls
that must wait while a turn streams, the typed action surviving a reload, "Stopped" read as
a notice, the toolbar within reach, focus in the Edit form, a correction's answer in view,
the favicon, phone tap targets, and deleting a line without a CSP violation (the `web`
fixture fails a test on any)."""

from __future__ import annotations

import asyncio

import pytest
from playwright.sync_api import expect

from tests.browser import needs_chromium
from tests.test_web_browser import web

pytestmark = [pytest.mark.browser, needs_chromium]


def test_while_a_turn_streams_controls_wait_the_draft_survives_a_reload_and_stop_is_a_notice(
    isolated_home,
) -> None:
    gate = asyncio.Event()
    with web(
        isolated_home,
        ["Fog.", "The lamp gutters slowly in the wind.", "The lamp gutters slowly in the wind."],
    ) as w:
        page, story = w.page, w.page.locator("#story")
        w.start()
        w.act("look around", "Fog.")
        expect(page.get_by_role("button", name="Undo")).to_be_enabled()
        expect(page.get_by_role("button", name="Retry")).to_be_enabled()

        # held past the line's first four words (the echo guard shows a line once judged)
        w.provider.gate, w.provider.gate_after_chunks = gate, 3
        page.get_by_label("Your action").fill("light the lamp")
        page.get_by_role("button", name="Send").click()
        expect(page.locator("#live")).to_contain_text("The lamp")
        for name in ("Undo", "Retry"):
            expect(page.get_by_role("button", name=name)).to_be_disabled()
        page.reload()  # mid-turn: the action is not lost
        expect(page.get_by_label("Your action")).to_have_value("light the lamp")

        page.get_by_role("button", name="Send").click()
        expect(page.locator("#live")).to_contain_text("The lamp")
        page.get_by_role("button", name="Stop").click()
        notice = page.locator("#turn-error")
        expect(notice).to_contain_text("Stopped. Nothing was saved")
        expect(notice).to_have_attribute("role", "status")
        colours = page.evaluate(
            """() => {
              const probe = document.createElement("p"); probe.className = "error"; document.body.append(probe);
              const danger = getComputedStyle(probe).color; probe.remove();
              return [getComputedStyle(document.getElementById("turn-error")).color, danger];
            }"""
        )
        assert colours[0] != colours[1], "Stopped is the player's choice, not an error"
        expect(page.get_by_role("button", name="Undo")).to_be_enabled()
        expect(story).not_to_contain_text("The lamp gutters")


def test_toolbar_in_reach_edit_focus_favicon_and_a_correction_answer_in_view(isolated_home) -> None:
    long = "The rain keeps on. " * 60
    with web(isolated_home, [f"Hour {i}. {long}" for i in range(6)], width=390, height=700) as w:
        page = w.page
        w.start()
        for i in range(4):
            w.act(f"wait {i}", f"Hour {i}.")
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        expect(page.get_by_role("button", name="State", exact=True)).to_be_in_viewport()

        # The favicon is served (no 404 on every page).
        assert page.request.get(w.url + "/favicon.ico").status == 200
        icon = page.locator("link[rel=icon]").get_attribute("href")
        assert page.request.get(w.url + icon).status == 200

        # Edit moves focus into its form.
        page.get_by_role("button", name="Edit turn 4").click()
        expect(page.get_by_label("Edit the narration")).to_be_focused()
        page.get_by_role("button", name="Cancel").click()

        # A correction's answer shows where the player is looking, not far above it.
        page.get_by_role("button", name="State", exact=True).click()
        panel = page.locator("#panel")
        panel.get_by_text("Set or change a stat").click()
        form = panel.locator("form").filter(has=page.locator("input[value=set_stat]"))
        form.get_by_label("Stat").select_option("world.storm")
        form.get_by_label("New value").fill("7")
        form.get_by_role("button", name="Set").click()
        expect(panel.get_by_role("status")).to_contain_text("Corrected")
        expect(panel.locator(".correction-result")).to_be_in_viewport()


def test_phone_tap_targets_are_at_least_24px_and_deleting_a_line_breaks_no_policy(
    isolated_home,
) -> None:
    with web(
        isolated_home,
        ["The ferry creaks.", "Again.", "The cottage is dark."],
        width=390,
        height=844,
    ) as w:
        page, panel = w.page, w.page.locator("#panel")
        w.start()
        w.act("board the ferry", "The ferry creaks.")
        page.get_by_role("button", name="Retry").click()
        expect(page.locator("#story")).to_contain_text("Again.")
        small = page.evaluate(
            """() => [...document.querySelectorAll('main button, main a, nav a')]
                 .filter((el) => el.offsetParent !== null)
                 .map((el) => [el.textContent.trim() || el.getAttribute('aria-label'), el.getBoundingClientRect().height])
                 .filter(([, h]) => h < 24)"""
        )
        assert small == [], small

        page.get_by_role("button", name="Undo").click()
        w.act("go to the cottage", "The cottage is dark.")
        page.get_by_role("button", name="Lines").click()
        lines = panel.locator("[data-line]")
        expect(lines).to_have_count(2)
        lines.nth(0).get_by_role("button", name="Delete").click()
        expect(lines).to_have_count(1)


def test_two_adventures_of_one_scenario_can_be_renamed_and_found(isolated_home) -> None:
    with web(isolated_home, ["Fog."]) as w:
        page = w.page
        w.start("Ada")
        w.start("Bea")
        page.goto(w.url + "/")
        cards = page.locator("#adventure-list > li")
        expect(cards).to_have_count(2)
        first = cards.nth(0)
        first.get_by_label("New title for").fill("Bea, the harbour way")
        first.get_by_role("button", name="Rename").click()
        expect(page.locator("#adventure-list")).to_contain_text("Bea, the harbour way")
        page.reload()
        page.get_by_label("Find an adventure").fill("harbour")
        expect(page.locator("#adventure-list > li:visible")).to_have_count(1)
        expect(page.locator("#adventure-list > li:visible")).to_contain_text("Bea, the harbour way")
        page.get_by_label("Find an adventure").fill("")
        expect(page.locator("#adventure-list > li:visible")).to_have_count(2)


def test_a_refused_scenario_save_does_not_post_again_on_reload(isolated_home) -> None:
    with web(isolated_home, ["Fog."]) as w:
        page = w.page
        page.goto(w.url + "/scenarios/greywater-lantern")
        page.get_by_role("button", name="Duplicate to edit").click()
        expect(page.get_by_role("status")).to_contain_text("your own copy")
        page.get_by_label("Title").fill("")
        page.get_by_role("button", name="Save").first.click()
        expect(page.locator("#errors")).to_contain_text("a scenario needs a title")
        assert "/save/" not in page.url and page.url.endswith("?part=story")
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.reload()
        expect(page.get_by_label("Title")).to_be_visible()
        assert posts == []


def test_an_adventure_keeps_its_own_samplers_and_presets(isolated_home) -> None:
    with web(isolated_home, ["Fog."]) as w:
        page = w.page
        w.start()
        page.get_by_role("link", name="Plot").click()
        page.get_by_role("link", name="Samplers").click()
        page.get_by_role("textbox", name="Min P").fill("0.05")
        page.get_by_role("textbox", name="Top K").fill("40")
        page.get_by_label("Also keep these values as a preset named").fill("Tight")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_role("status")).to_contain_text("kept as the preset “Tight”")
        expect(page.locator("#samplers-effective")).to_contain_text("Min P 0.05; Top K 40")
        expect(page.locator("#presets")).to_contain_text("Tight")
