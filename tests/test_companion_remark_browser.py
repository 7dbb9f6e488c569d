"""The companion's remark in a real browser: apart from the narration, under their name,
once the turn is in and after a reload (issue 27 item 11)."""

from __future__ import annotations

import json
import random

import pytest
from playwright.sync_api import expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]

MOMENT = {"events": [{"type": "record_moment", "text": "you fell in the river", "weight": 8}]}


def test_the_remark_shows_under_the_companions_name(isolated_home) -> None:
    provider = ScriptedProvider(
        [
            "Your boot finds an eel.\n```state\n" + json.dumps(MOMENT) + "\n```",
            "Fog drifts over the quay.",
            "A bell rings from the chapel.",
            '"Mind the eels, boss," he says.',
        ],
        chunk_size=8,
    )
    tk = Talekeeper(isolated_home, provider_override=provider)
    with tk.db.session() as session:
        aid = adventures.start_adventure(
            session,
            "fenmouth-ledger",
            origin_id="deserter",
            character={"name": "Aldric", "class": "sellsword"},
            rng=random.Random(4),
        ).id
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(f"{url}/adventures/{aid}")
        for action in ("step off the barge", "wring out your cloak", "listen"):
            page.get_by_label("Your action").fill(action)
            page.keyboard.press("Enter")
            expect(page.get_by_label("Your action")).to_have_value("")
            expect(page.locator("#story")).to_contain_text(f"You {action}")
        remark = page.locator("#story .turn").last.locator(".remark")
        expect(remark).to_have_text('Brannoc: "Mind the eels, boss," he says.')
        expect(remark.locator(".remark-by")).to_have_text("Brannoc:")
        narration = page.locator("#story .turn").last.locator(".narration")
        expect(narration).to_have_text("A bell rings from the chapel.")
        page.reload()
        expect(page.locator("#story .turn").last.locator(".remark")).to_have_text(
            'Brannoc: "Mind the eels, boss," he says.'
        )
