"""Export and import in a real browser: an adventure downloaded from its page and
uploaded on the home page comes back whole; a character card goes through the review
page (its markup shown as text, nothing run) before it is saved."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import needs_chromium
from tests.test_interop_cards import make_png, v2_card
from tests.test_web_browser import web

pytestmark = [pytest.mark.browser, needs_chromium]


def test_adventure_export_then_import_from_the_home_page(
    isolated_home: Path, tmp_path: Path
) -> None:
    with web(isolated_home, ["Maren looks up from her ropes."]) as w:
        w.start()
        w.act("wave at Maren", "Maren looks up from her ropes.")
        with w.page.expect_download() as download:
            w.page.locator("#export-adventure").click()
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.name.endswith(".talekeeper-adventure.jsonl.gz")
        w.page.goto(w.url + "/")
        w.page.locator("#import-adventure input[type=file]").set_input_files(str(saved))
        w.page.get_by_role("button", name="Import adventure").click()
        expect(w.page.locator("#story")).to_contain_text("Maren looks up from her ropes.")
        assert w.page.url.rstrip("/").split("/")[-1] != "1"  # a new adventure
        # A damaged file is refused on the home page, in words.
        damaged = tmp_path / "damaged.gz"
        damaged.write_bytes(saved.read_bytes()[:-40])
        w.page.goto(w.url + "/")
        w.page.locator("#import-adventure input[type=file]").set_input_files(str(damaged))
        w.page.get_by_role("button", name="Import adventure").click()
        expect(w.page.locator("#bundle-error")).to_contain_text("Nothing was imported")


def test_card_import_reviews_before_saving_and_runs_nothing(
    isolated_home: Path, tmp_path: Path
) -> None:
    card = v2_card(creator_notes='<img src=x onerror="alert(1)"><script>alert(2)</script>')
    path = tmp_path / "mira.png"
    path.write_bytes(make_png([("chara", base64.b64encode(json.dumps(card).encode()).decode())]))
    with web(isolated_home, []) as w:
        w.page.goto(w.url + "/scenarios")
        w.page.locator("#import-card input[type=file]").set_input_files(str(path))
        w.page.get_by_role("button", name="Read the file").click()
        expect(w.page.locator("h1")).to_have_text("Review the import")
        expect(w.page.locator("main")).to_contain_text("Character Card V2 (PNG, 'chara' chunk)")
        expect(w.page.locator(".report")).to_contain_text("alternate_greetings")
        expect(w.page.locator("textarea[name=document]")).to_contain_text(
            "<script>alert(2)</script>"
        )
        assert w.dialogs == []  # the markup was shown, never run
        w.page.get_by_role("button", name="Save “Mira” as a scenario").click()
        expect(w.page.locator("main")).to_contain_text("Imported.")
        assert "/scenarios/mira" in w.page.url
