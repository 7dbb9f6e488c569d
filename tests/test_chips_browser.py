"""Chips in a real browser: a change is a chip; the model's note is muted and collapsed
under it, never styled as a change; a note that restates the narration shows nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser import needs_chromium
from tests.test_web_browser import block, web

pytestmark = [pytest.mark.browser, needs_chromium]


def test_notes_are_muted_and_collapsed_never_chips(isolated_home) -> None:
    reply = "Maren unties the ferry and pushes off into the black water." + block(
        {"type": "note_event", "text": "Tobin was seen rowing toward the lighthouse at dusk."},
        {
            "type": "note_event",
            "text": "Maren pushes off into the black water.",
        },  # restates: dropped
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
    )
    with web(isolated_home, [reply]) as w:
        page = w.page
        w.start()
        w.act("ask Maren for passage", "Maren unties the ferry")
        turn = page.locator("#story .turn").last
        expect(turn.locator(".chip")).to_have_count(1)
        expect(turn.locator(".chip-applied")).to_have_text("Ferry hired: on")
        notes = turn.locator("details.chip-notes")
        expect(notes).to_have_count(1)
        expect(notes).not_to_have_attribute("open", "")
        expect(notes.locator("summary")).to_have_text("1 note")
        note = notes.locator(".chip-note")
        expect(note).to_be_hidden()  # collapsed until asked for
        expect(note).to_have_count(1)  # the note that restated the narration is not there
        notes.locator("summary").click()
        expect(note).to_have_text("Tobin was seen rowing toward the lighthouse at dusk.")
        style = note.evaluate(
            """el => {
              const s = getComputedStyle(el), chip = getComputedStyle(document.querySelector('.chip-applied'));
              const muted = getComputedStyle(document.documentElement).getPropertyValue('--muted').trim();
              const probe = document.createElement('span'); probe.style.color = muted; document.body.append(probe);
              const mutedColour = getComputedStyle(probe).color; probe.remove();
              return {colour: s.color, muted: mutedColour, background: s.backgroundColor, border: s.borderTopStyle,
                      chipBackground: chip.backgroundColor, italic: s.fontStyle};
            }"""
        )
        assert style["colour"] == style["muted"], style
        assert (
            style["background"] in ("rgba(0, 0, 0, 0)", "transparent") and style["border"] == "none"
        ), style
        assert style["background"] != style["chipBackground"], style
        assert style["italic"] == "italic", style
