"""What a newcomer tripped over, checked in Chromium: the State panel's scene follows a
manual move, hidden luck is only ever a word, and chips under a turn speak in names."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser import needs_chromium
from tests.test_web_browser import block, web

pytestmark = [pytest.mark.browser, needs_chromium]


def test_the_scene_follows_a_manual_move_and_luck_is_a_word(isolated_home) -> None:
    reply = "Maren squints at you." + block(
        {"type": "change_stat", "stat": "npc.maren.trust", "by": 5},
        {"type": "change_stat", "stat": "world.night", "by": -1},
        {"type": "record_moment", "text": "Maren squinted", "weight": 11},
    )
    with web(isolated_home, [reply]) as w:
        page, story, panel = w.page, w.page.locator("#story"), w.page.locator("#panel")
        w.start("Ilse")
        w.act("ask Maren for passage", "Maren squints at you.")
        turn = story.locator(".turn").last
        expect(turn.locator(".chip-limited")).to_have_text("Maren's trust −2 → 1 (limited)")
        expect(turn.locator(".chip-rejected")).to_have_count(0)
        refused = turn.locator(".chips-refused")
        expect(refused).to_have_text("2 of the model's changes were not applied — see Insights")
        expect(refused.get_by_role("link")).to_have_attribute(
            "href", re.compile(r"/insights\?turn=\d+$")
        )

        page.get_by_role("button", name="State", exact=True).click()
        luck = panel.locator('[data-stat="player.luck"]')
        expect(luck).to_contain_text("hidden")
        expect(luck).to_contain_text("unremarkable")
        assert not re.search(r"\d", luck.inner_text()), luck.inner_text()
        assert luck.locator("meter").count() == 0

        panel.get_by_text("Who holds what, who is where").click()
        move = panel.locator("form").filter(has=page.locator("input[value=set_location]"))
        move.get_by_label("Who or what").select_option(label="Ilse")
        move.get_by_label("Is at").select_option(label="Keeper's cottage")
        move.get_by_role("button", name="Move").click()
        expect(panel.get_by_role("status")).to_contain_text("Corrected")
        scene = panel.locator("h3:has-text('Scene') + p")
        expect(scene).to_contain_text("Keeper's cottage")
        expect(panel).to_contain_text("Here: Tobin")
        expect(panel.locator(".scene-note")).to_have_count(0)
        correction = story.locator(".turn.correction").last
        expect(correction).to_contain_text("✎ You corrected the story:")
        expect(correction.locator(".chip")).to_have_text(
            ["Ilse is now at Keeper's cottage", "The scene is now Keeper's cottage; here: Tobin"]
        )
        for text in (story.inner_text(), panel.inner_text()):
            assert not re.search(r"player\.|npc\.|world\.|_", text), text


def test_a_new_action_after_going_back_reads_as_a_line_not_a_take(isolated_home) -> None:
    with web(isolated_home, ["The door is locked.", "The window gives.", "It sticks."]) as w:
        page, story, panel = w.page, w.page.locator("#story"), w.page.locator("#panel")
        w.start()
        w.act("open the door", "The door is locked.")
        page.get_by_role("button", name="Undo").click()
        expect(story).not_to_contain_text("The door is locked.")
        w.act("try the window", "The window gives.")
        last = story.locator(".turn").last
        expect(last.locator(".takes")).to_have_count(0)  # no "take 2/2" of the door
        page.get_by_role("button", name="Retry").click()
        expect(story).to_contain_text("It sticks.")
        expect(story.locator(".turn").last.locator(".take-count")).to_have_text("take 2/2")
        page.get_by_role("button", name="Lines").click()
        expect(panel.locator("[data-line]")).to_have_count(2)  # the door, and the window
