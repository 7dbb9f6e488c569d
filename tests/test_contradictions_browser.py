"""The truth kept in the telling, in a real browser: a narration that brings an absent
person into the scene gets a quiet warning naming the clash, and each of its buttons does
what it says; a truthful mention is not flagged; a narration that walks the player into the
lighthouse moves them there as a real chip, and Undo takes it back — as does a move only the
player's own action states."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from talekeeper.service import tree_ops
from tests.browser import needs_chromium
from tests.test_web_browser import web

pytestmark = [pytest.mark.browser, needs_chromium]

ABSENT = "Tobin hands you a mug of tea and grins."
LINE = "Tobin is at Keeper's cottage, not here"


def where(w, who: str) -> tuple[str | None, bool]:
    """Where the state has someone now, and whether they are in the scene (the test's one
    adventure)."""
    state = tree_ops.current_state(w.tk, 1)
    return state["entities"][who]["location"], who in state["scene"]["present"]


def test_a_warning_names_the_clash_and_its_answers_do_what_they_say(isolated_home) -> None:
    replies = [ABSENT, "Maren hands you a coil of wet rope."]
    with web(isolated_home, replies) as w:
        page = w.page
        w.start()
        w.act("wait for the keeper", "a mug of tea")
        turn = page.locator(f"#turn-{page.locator('#story .turn').last.get_attribute('data-turn')}")
        warning = turn.locator(".clashes")
        expect(warning).to_contain_text(LINE)
        accept = warning.get_by_role("button", name="It’s right — update the state")
        again = warning.get_by_role("button", name="Tell it again")
        expect(accept).to_be_visible()
        expect(again).to_be_visible()
        # It's right: Tobin is brought into the scene, as a correction of the player's own
        accept.click()
        correction = page.locator("#story .turn.correction")
        expect(correction).to_have_count(1)
        expect(correction).to_contain_text("You made the state agree with the story")
        expect(correction).to_contain_text("Tobin")
        expect(accept).to_be_hidden()  # answered: the warning stays, muted, without buttons
        expect(again).to_be_hidden()
        muted = warning.evaluate(
            """el => {
              const probe = document.createElement('span');
              probe.style.color = getComputedStyle(document.documentElement).getPropertyValue('--muted');
              document.body.append(probe); const muted = getComputedStyle(probe).color; probe.remove();
              return getComputedStyle(el).color === muted;
            }"""
        )
        assert muted
        assert where(w, "tobin") == ("docks", True)
        # Undo takes the correction back, and the warning asks again
        page.locator("#undo").click()
        expect(correction).to_have_count(0)
        expect(accept).to_be_visible()
        assert where(w, "tobin") == ("cottage", False)
        # Tell it again: a new take, told afresh (this one true), with no warning
        again.click()
        expect(page.locator("#story")).to_contain_text("coil of wet rope")
        last = page.locator("#story .turn").last
        expect(last.locator(".take-count")).to_have_text("take 2/2")
        expect(last.locator(".clashes")).to_have_count(0)


def test_a_truthful_mention_is_not_flagged(isolated_home) -> None:
    replies = ["You think of Tobin up in his cottage. Maren says he keeps the brass key."]
    with web(isolated_home, replies) as w:
        w.start()
        w.act("ask about the keeper", "keeps the brass key")
        expect(w.page.locator("#story .turn").last.locator(".clashes")).to_have_count(0)


def test_a_told_move_is_a_real_chip_that_undo_takes_back(isolated_home) -> None:
    replies = ["You climb the slick steps and go into the lighthouse, out of the wind."]
    with web(isolated_home, replies) as w:
        page = w.page
        w.start()
        w.act("go into the lighthouse", "out of the wind")
        turn = page.locator("#story .turn").last
        chip = turn.locator(".chip-applied").first
        expect(chip).to_contain_text("lighthouse")
        assert "Read from the narration" in (chip.get_attribute("title") or "")
        expect(turn.locator(".clashes")).to_have_count(0)
        assert where(w, "player")[0] == "lighthouse"
        page.locator("#undo").click()
        expect(page.locator("#story")).not_to_contain_text("out of the wind")
        assert where(w, "player")[0] == "docks"


def test_a_move_only_the_action_states_is_a_real_chip_that_undo_takes_back(isolated_home):
    # the embedded model's way: the narration names the place but never moves you there
    replies = ["The keeper's cottage, the only way to reach the headland. Rain on the slates."]
    with web(isolated_home, replies) as w:
        page = w.page
        w.start()
        w.act("walk to the keeper's cottage", "Rain on the slates")
        chip = page.locator("#story .turn").last.locator(".chip-applied").first
        expect(chip).to_contain_text("cottage")
        assert "Read from your action" in (chip.get_attribute("title") or "")
        assert where(w, "player")[0] == "cottage"
        page.locator("#undo").click()
        expect(page.locator("#story")).not_to_contain_text("Rain on the slates")
        assert where(w, "player")[0] == "docks"


def test_told_again_the_first_telling_is_cleared_from_the_page(isolated_home) -> None:
    from talekeeper.service.settings import SettingsUpdate, update_settings

    replies = [ABSENT, "Maren hands you a coil of wet rope."]
    with web(isolated_home, replies, chunk_size=4) as w:
        with w.tk.db.session() as session:
            update_settings(session, SettingsUpdate(generation={"contradictions": "retry"}))
        w.start()
        # every text the streaming turn shows, as it shows it
        w.page.evaluate(
            """() => { window.shown = [];
              new MutationObserver(() => {
                const n = document.querySelector('.turn.streaming .narration');
                if (n) window.shown.push(n.textContent);
              }).observe(document.body, {subtree: true, childList: true, characterData: true}); }"""
        )
        w.act("wait for the keeper", "coil of wet rope")
        story = w.page.locator("#story")
        expect(story).not_to_contain_text("mug of tea")
        expect(story.locator(".turn").last.locator(".clashes")).to_have_count(0)
        shown = w.page.evaluate("window.shown")
        assert any("mug of tea" in t for t in shown)  # the first telling streamed…
        assert not any("mug of tea" in t and "rope" in t for t in shown)  # …and was cleared
