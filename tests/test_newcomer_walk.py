"""A newcomer's whole first session in Chromium, read as a player reads it: both scenarios,
an imported card, a correction, a new line after going back, export and import, and the
starter story. Every page a player reads — home, the play page with its State, Lines and
Save Points panels open, memory, search — is walked after each step, and the test fails on
any id, stat path, JSON or event name in what it shows (its text and its tooltips). Insights,
the audit trail inside it, the scenario editor and the API documentation are for looking
under the hood and are not walked.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import needs_chromium
from tests.jargon import jargon_in, story_ids
from tests.test_interop_cards import make_png, v2_card
from tests.test_ux_browser import move_by_hand
from tests.test_web_browser import Web, block, web

pytestmark = [pytest.mark.browser, needs_chromium]

GREYWATER = [
    "Maren squints at you through the rain and says nothing for a long while."
    + block(
        {"type": "change_stat", "stat": "npc.maren.trust", "by": 5},  # limited
        {"type": "change_stat", "stat": "world.night", "by": -1},  # refused: a counter
        {"type": "record_moment", "text": "Maren squinted at you.", "weight": 11},  # refused
        {"type": "set_attribute", "entity": "maren", "attribute": "sea_mood", "value": "sour"},
        {"type": "note_event", "text": "Tobin was seen rowing toward the lighthouse."},
    ),
    "The ferry pushes off into the black water."
    + block(
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
        {"type": "set_location", "entity": "player", "location": "lighthouse"},
        {"type": "reach_milestone", "milestone": "reached_headland"},
        {"type": "record_moment", "text": "You crossed the drowned road in a gale.", "weight": 8},
    ),
    "You wait on the quay instead, and the rain finds every seam of your coat."
    + block({"type": "change_stat", "stat": "player.health", "by": -1}),
]
FENMOUTH = [
    "Oda Fenn looks up from an empty ledger shelf and does not smile."
    + block(
        {"type": "change_stat", "stat": "npc.oda_fenn.trust", "by": 1},
        {"type": "open_thread", "title": "Find out who burned the ledger"},
        {"type": "add_fact", "object": "the harbour office smells of smoke"},
    )
]
CARD = ["Mira lowers her lantern and lets you in out of the wind."]


def walk(w: Web, aid: int) -> None:
    """Every page a player reads of adventure `aid`, and the home page: no protocol shown."""
    page = w.page
    state = w.page.request.get(f"{w.url}/api/adventures/{aid}/state").json()
    ids = story_ids(state["document"], None)
    seen: list[tuple[str, str]] = []
    page.goto(f"{w.url}/adventures/{aid}")
    seen.append(("play", _read(page)))
    for panel in ("State", "Lines", "Save Points"):
        page.get_by_role("button", name=panel, exact=True).click()
        expect(page.locator("#panel [data-panel]")).to_have_count(1)
        seen.append((panel, _read(page)))
        page.get_by_role("button", name="Close the panel").click()
    for path in ("memory", "search?q=the"):
        page.goto(f"{w.url}/adventures/{aid}/{path}")
        seen.append((path, _read(page)))
    page.goto(w.url + "/")
    seen.append(("home", _read(page)))
    for where, text in seen:
        found = jargon_in(text, ids)
        spots = [text[max(0, text.find(f) - 80) : text.find(f) + 80] for f in found]
        assert found == [], (where, found, spots)


def _read(page: Page) -> str:
    """What a player reads: the page's text, and the tooltips they can hover."""
    return page.evaluate(
        """() => document.body.innerText + "\\n" +
             [...document.querySelectorAll("main [title]")].map(e => e.title).join("\\n")"""
    )


def _adventure_id(page: Page) -> int:
    return int(re.search(r"/adventures/(\d+)", page.url).group(1))


def test_a_newcomers_first_session_shows_no_protocol(isolated_home, tmp_path: Path) -> None:
    card = v2_card(first_mes="*{{char}} lowers her lantern.* Who sent you out in this, {{user}}?")
    card_file = tmp_path / "mira.png"
    card_file.write_bytes(
        make_png([("chara", base64.b64encode(json.dumps(card).encode()).decode())])
    )
    with web(isolated_home, GREYWATER + FENMOUTH + CARD) as w:
        page, story = w.page, w.page.locator("#story")

        # 1. The demo: a turn with chips, a refused proposal and a note; a correction.
        w.start("Ilse")
        greywater = _adventure_id(page)
        w.act("ask Maren for passage", "says nothing for a long while")
        expect(story.locator(".chips-refused")).to_contain_text("2 of the model's changes")
        page.get_by_role("button", name="State", exact=True).click()
        move_by_hand(page, "Ilse", "Keeper's cottage")
        page.get_by_role("button", name="Close the panel").click()
        # 2. A new line after going back (the correction, then the turn, undone).
        w.act("help her push the ferry off", "pushes off into the black water")
        for _ in range(2):
            page.get_by_role("button", name="Undo").click()
        expect(story).not_to_contain_text("pushes off into the black water")
        w.act("wait on the quay", "finds every seam of your coat")
        expect(story.locator(".turn").last.locator(".takes")).to_have_count(0)
        walk(w, greywater)

        # 3. The second scenario, with character creation.
        page.goto(w.url + "/")
        fen = page.locator("#scenario-fenmouth-ledger")
        fen.get_by_label("Your character's name").fill("Aldric")
        fen.get_by_role("button", name="Start “The Fenmouth Ledger”").click()
        fenmouth = _adventure_id(page)
        w.act("ask the harbourmaster about the ledger", "does not smile")
        walk(w, fenmouth)

        # 4. An imported card, started from its own page.
        page.goto(w.url + "/scenarios")
        page.locator("#import-card input[type=file]").set_input_files(str(card_file))
        page.get_by_role("button", name="Read the file").click()
        page.get_by_role("button", name="Save “Mira” as a scenario").click()
        start = page.locator(".start-here")
        start.get_by_label(re.compile("name", re.I)).first.fill("Ada")
        start.get_by_role("button", name="Start “Mira”").click()
        mira = _adventure_id(page)
        w.act("step inside", "lets you in out of the wind")
        walk(w, mira)

        # 5. Export the demo and import it again.
        page.goto(f"{w.url}/adventures/{greywater}")
        with page.expect_download() as download:
            page.locator("#export-adventure").click()
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        page.goto(w.url + "/")
        page.locator("#import-adventure input[type=file]").set_input_files(str(saved))
        page.get_by_role("button", name="Import adventure").click()
        expect(story).to_contain_text("finds every seam of your coat")
        walk(w, _adventure_id(page))

        # 6. The starter story.
        page.goto(w.url + "/")
        page.get_by_role("button", name="Open the starter story").click()
        expect(story).to_contain_text("masthead light rises and falls")
        walk(w, _adventure_id(page))
