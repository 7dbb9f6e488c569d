"""Screenshots of the main screens for the README, taken in Chromium.

    PYTHONPATH=. .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

Plays a short scripted story (no model needed) against a live server in a throwaway
data directory, then photographs: home, play with change chips, the state panel, the
story map, Save Points, Insights, settings (with adding a connection, and an adventure's
samplers), the scenario editor, character creation, an imported card's start, the starter
story, the edit form on a laptop screen, the phone layout and the dark theme.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import CHROMIUM, CHROMIUM_ARGS, live_server
from tests.test_interop_cards import make_png, v2_card


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


REPLIES = [
    'Maren looks you over, from your patched coat to the satchel of tools. "Lamp-mender," she says at last, '
    'and the word is almost kind. "Tobin won\'t thank you. But the boats might." The wind snatches at the rope in her hands.'
    + block(
        {"type": "change_stat", "stat": "npc.maren.trust", "by": 5},
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
        {"type": "change_stat", "stat": "world.storm", "by": 1},
    ),
    "The ferry bucks across the drowned causeway. Spray comes over the bow in sheets, and Maren leans on the pole "
    "without a word until the keel grinds on the shingle of the headland."
    + block(
        {"type": "reach_milestone", "milestone": "reached_headland"},
        {"type": "set_location", "entity": "player", "location": "lighthouse"},
        {"type": "set_scene", "location": "lighthouse", "present": ["maren"]},
        {"type": "change_stat", "stat": "world.night", "by": -1},  # a counter: refused
        {"type": "change_stat", "stat": "player.health", "by": 2},
    ),
    "The ferry spins in a rip of current; for a moment the headland swings away and back again.",
    "You wade ashore at the cottage instead, and a light goes out behind its shutters.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/screenshots", type=Path)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="talekeeper-shots-"))
    tk = Talekeeper(home, provider_override=ScriptedProvider(REPLIES, chunk_size=12))
    with live_server(create_app(tk)) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.set_default_timeout(10_000)
        page.on("dialog", lambda d: d.accept())

        page.goto(url + "/")
        page.get_by_label("What is your name?").fill("Ada")
        page.get_by_role("button", name="Start “The Lantern of Greywater”").click()
        story = page.locator("#story")
        page.get_by_label("Your action").fill("ask Maren to take me across to the lighthouse")
        page.keyboard.press("Enter")
        expect(story).to_contain_text("Lamp-mender")
        page.get_by_label("Say").check()
        page.get_by_label("Your action").fill("Take me across. Please.")
        page.keyboard.press("Enter")
        expect(story).to_contain_text("keel grinds")
        page.get_by_role("button", name="Retry").click()
        expect(story).to_contain_text("rip of current")
        page.get_by_role("button", name="Previous take").click()
        expect(story).to_contain_text("keel grinds")
        adventure_url = page.url.split("?")[0]
        page.screenshot(path=out / "play.png")

        page.get_by_role("button", name="State").click()
        expect(page.locator("#panel")).to_contain_text("Milestones")
        page.screenshot(path=out / "state-panel.png")

        turn_id = page.locator("#story .turn").last.get_attribute("data-turn")
        page.goto(f"{adventure_url}/insights?turn={turn_id}")
        page.screenshot(path=out / "insights.png")
        page.get_by_role("heading", name="What changed in the story").scroll_into_view_if_needed()
        page.screenshot(path=out / "insights-proposal.png")
        page.goto(adventure_url)

        page.get_by_role("button", name="Save Points").click()
        page.get_by_label("Name", exact=True).fill("On the headland")
        page.get_by_role("button", name="Save this moment").click()
        expect(page.locator("#panel")).to_contain_text("you are here")
        page.get_by_role("button", name="Undo").click()
        page.get_by_role("button", name="Undo").click()
        page.get_by_role("radio", name="Do").check()
        page.get_by_label("Your action").fill("walk to the keeper's cottage")
        page.keyboard.press("Enter")
        expect(story).to_contain_text("light goes out")
        page.screenshot(path=out / "save-points.png")
        page.get_by_role("button", name="Lines").click()
        expect(page.locator("#panel [data-line]")).to_have_count(2)  # a retry is a take, not a line
        page.locator("#panel li.current").get_by_label("Name of this line").fill("The cottage")
        page.locator("#panel li.current").get_by_role("button", name="Rename").click()
        expect(page.locator("#panel")).to_contain_text("The cottage")
        page.screenshot(path=out / "story-map.png")

        page.goto(url + "/settings")
        page.get_by_label("Endpoint").fill("http://203.0.113.7/v1")
        page.get_by_role(
            "button", name="Save settings"
        ).click()  # refused: the network policy, explained
        expect(page.get_by_role("alert").first).to_contain_text("private network")
        page.screenshot(path=out / "settings.png")
        page.get_by_text("Add a connection").click()  # a hosted service: the privacy choice
        page.locator("#p-service").select_option("openrouter")
        page.locator("#add-connection").scroll_into_view_if_needed()
        page.screenshot(path=out / "connections.png")
        page.goto(f"{adventure_url}/samplers")
        page.get_by_role("radio", name="Fresh").check()
        page.screenshot(path=out / "samplers.png")
        page.goto(url + "/")
        page.screenshot(path=out / "home.png", full_page=True)
        # Character creation: the points counted as they are spent, too many said beside them.
        card = page.locator("#scenario-fenmouth-ledger")
        card.get_by_label("Your character's name").fill("Aldric")
        card.get_by_label(re.compile("^Might")).fill("5")
        card.get_by_label(re.compile("^Wits")).fill("4")
        expect(card.locator(".points-left")).to_contain_text("too many")
        card.locator("fieldset.character").screenshot(path=out / "start-form.png")
        # An imported card, started from its own page.
        with tempfile.TemporaryDirectory() as folder:
            card_file = Path(folder) / "mira.png"
            mira = v2_card(
                first_mes="*{{char}} lowers her lantern.* Who sent you out in this, {{user}}?"
            )
            card_file.write_bytes(
                make_png([("chara", base64.b64encode(json.dumps(mira).encode()).decode())])
            )
            page.goto(url + "/scenarios")
            page.locator("#import-card input[type=file]").set_input_files(str(card_file))
            page.get_by_role("button", name="Read the file").click()
            page.get_by_role("button", name="Save “Mira” as a scenario").click()
            expect(page.locator(".start-here")).to_be_visible()
            page.screenshot(path=out / "card-start.png")
        # The starter story, opened from the home page.
        page.goto(url + "/")
        page.get_by_role("button", name="Open the starter story").click()
        expect(page.locator("#story")).to_contain_text("masthead light")
        page.get_by_role("button", name="Lines").click()
        expect(page.locator("#panel [data-line]")).to_have_count(2)
        page.screenshot(path=out / "starter.png")
        # The edit form on a laptop screen: whole, above the composer.
        laptop = browser.new_page(viewport={"width": 1280, "height": 757})
        laptop.goto(adventure_url)
        laptop.locator("#story .turn").last.get_by_role(
            "button", name=re.compile("^Edit turn")
        ).click()
        expect(laptop.locator(".edit-turn textarea").first).to_be_focused()
        laptop.wait_for_timeout(300)  # the scroll into view settles
        laptop.screenshot(path=out / "edit-turn.png")
        page.goto(url + "/scenarios/greywater-lantern")
        page.get_by_role("button", name="Duplicate to edit").click()
        page.get_by_role("link", name="Stats and rules").click()
        page.locator('[data-stat="rules.stats.world.storm"]').get_by_label("Highest").fill("-5")
        page.get_by_role("button", name="Save stats and rules").click()
        expect(page.locator("#errors")).to_be_visible()
        page.locator('[data-stat="rules.stats.world.storm"]').scroll_into_view_if_needed()
        page.screenshot(path=out / "scenario-editor.png")
        page.goto(url + "/scenarios")
        page.screenshot(path=out / "scenarios.png")

        phone = browser.new_page(
            viewport={"width": 390, "height": 844},
            device_scale_factor=2,
            is_mobile=True,
            has_touch=True,
        )
        phone.goto(adventure_url)
        phone.screenshot(path=out / "phone.png")
        phone.get_by_role("button", name="State", exact=True).click()
        expect(phone.locator("#panel")).to_contain_text("Milestones")
        phone.screenshot(path=out / "phone-state.png")
        dark = browser.new_page(viewport={"width": 1280, "height": 860}, color_scheme="dark")
        dark.goto(adventure_url + "?panel=state")
        expect(dark.locator("#panel")).to_contain_text("Milestones")
        dark.screenshot(path=out / "dark.png")
        browser.close()
    tk.db.dispose()
    print(f"Screenshots in {out}/")


if __name__ == "__main__":
    main()
