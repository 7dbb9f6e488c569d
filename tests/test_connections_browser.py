"""A new player picks a hosted service in Chromium, as issue 29's "done when" tells it: from a
fresh install, "OpenRouter" in Settings, a pasted key, the privacy sentence read, the host
allowed, a model picked from the service's list, a turn played — against a fake OpenRouter
on loopback standing in behind the real endpoint policy (tests/llm/standin.py) — and the
built-in model one click away. The key appears on no page the player saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium
from tests.llm.fakeserver import FakeOpenAIServer, FakeReply
from tests.llm.standin import PUBLIC_ADDRESS, StandIn, resolver_for

pytestmark = [pytest.mark.browser, needs_chromium]
KEY = "sk-or-v1-BROWSERKEY-0c9d8e7f"
LLAMA_PROPS = {
    "default_generation_settings": {
        "n_ctx": 8192,
        "params": {"dry_multiplier": 0.0, "xtc_probability": 0.0},
    }
}
MODELS = {
    "object": "list",
    "data": [
        {
            "id": "nousresearch/hermes-3-llama-3.1-70b",
            "name": "Hermes 3 70B",
            "context_length": 131072,
            "pricing": {"prompt": "0.00000012", "completion": "0.0000003"},
        },
        {
            "id": "mistralai/mistral-nemo:free",
            "name": "Mistral Nemo (free)",
            "context_length": 32768,
            "pricing": {"prompt": "0", "completion": "0"},
        },
    ],
}


@dataclass
class Session:
    url: str
    page: Page
    service: FakeOpenAIServer
    standin: StandIn
    seen: list[str] = field(default_factory=list)  # every page's HTML the player saw
    problems: list[str] = field(default_factory=list)

    def look(self) -> None:
        self.seen.append(self.page.content())


@contextmanager
def fresh_install(home: Path) -> Iterator[Session]:
    with FakeOpenAIServer(extra={("GET", "/v1/models"): MODELS}) as service:
        standin = StandIn(service.root)
        tk = Talekeeper(
            home, resolver=resolver_for({"openrouter.ai": PUBLIC_ADDRESS}), transport=standin
        )
        with live_server(create_app(tk)) as url, browser_page() as page:
            session = Session(url, page, service, standin)
            page.on("pageerror", lambda e: session.problems.append(str(e)))
            page.on(
                "console",
                lambda m: session.problems.append(m.text) if m.type == "error" else None,
            )
            yield session
        tk.db.dispose()
        # (a refused form answers 422, which the console reports as a failed load: expected)
        problems = [p for p in session.problems if not p.startswith("Failed to load resource")]
        assert not problems, problems


def test_a_new_player_plays_through_openrouter_and_switches_back_in_one_click(
    isolated_home: Path,
) -> None:
    with fresh_install(isolated_home) as s:
        page = s.page
        page.goto(s.url + "/settings")
        page.get_by_text("Add a connection").click()
        page.locator("#p-service").select_option(label="OpenRouter (hosted)")
        expect(page.get_by_label("Name", exact=True)).to_have_value("OpenRouter")
        page.get_by_label("API key", exact=True).fill(KEY)
        sentence = page.locator("#p-sentence")
        expect(sentence).to_be_visible()
        expect(sentence).to_have_text("Your story, its cards and state are sent to openrouter.ai.")
        # Not allowed yet: saving is refused in words, and nothing went out.
        page.get_by_role("button", name="Save and choose a model").click()
        expect(page.get_by_role("alert")).to_contain_text("openrouter.ai")
        assert not s.standin.delivered
        page.locator("#p-service").select_option(label="OpenRouter (hosted)")
        page.get_by_label("API key", exact=True).fill(KEY)
        page.get_by_label("Allow openrouter.ai to receive my story").check()
        page.get_by_role("button", name="Save and choose a model").click()
        expect(page.get_by_role("heading", name="Connection: OpenRouter")).to_be_visible()
        expect(page.locator("#profile-privacy")).to_contain_text("You allowed openrouter.ai")
        model = page.locator("#pp-model")
        expect(model).to_contain_text("131,072 tokens of context")
        expect(model).to_contain_text("free a turn")
        s.look()
        model.select_option("nousresearch/hermes-3-llama-3.1-70b")
        page.get_by_role("button", name="Save and use it").click()
        expect(page.get_by_role("status").first).to_contain_text("Now narrating with “OpenRouter”")
        s.look()

        page.goto(s.url + "/")
        page.get_by_label("What is your name?").fill("Ada")
        page.get_by_role("button", name="Start “The Lantern of Greywater”").click()
        expect(page.locator("#sent-to")).to_contain_text("openrouter.ai")
        s.service.queue(FakeReply("Maren lifts the lantern and the fog parts for a moment."))
        page.get_by_label("Your action").fill("wave to Maren")
        page.keyboard.press("Enter")
        expect(page.locator("#story")).to_contain_text("the fog parts for a moment")
        sent = s.service.generation_requests[-1]
        assert sent.headers["Authorization"] == f"Bearer {KEY}"
        assert sent.body["model"] == "nousresearch/hermes-3-llama-3.1-70b"
        s.look()

        # The player's hand: a draft in the box, never sent; suggestions as buttons.
        turns = len(s.service.generation_requests)
        s.service.queue(FakeReply("You hold up the lantern and call out to the ferry."))
        page.get_by_role("button", name="Write my turn").click()
        expect(page.get_by_label("Your action")).to_have_value(
            "hold up the lantern and call out to the ferry."
        )
        expect(page.locator("#hand-status")).to_contain_text("A draft of your turn is in the box")
        s.service.queue(
            FakeReply("1. Ask Maren about the ferry\n2. Climb the sea wall\n3. Read the letter")
        )
        page.get_by_role("button", name="Suggest").click()
        expect(page.locator("#suggestions button")).to_have_count(3)
        page.get_by_role("button", name="Climb the sea wall").click()
        expect(page.get_by_label("Your action")).to_have_value("Climb the sea wall")
        assert len(s.service.generation_requests) == turns + 2  # the two hand calls, no turn
        expect(page.locator("#story .turn")).to_have_count(2)  # the opening and one turn
        s.look()

        # Samplers fit the server: no DRY for OpenRouter's models; a llama.cpp server has it.
        page.get_by_role("link", name="Samplers…").click()
        expect(page.locator("#samplers-missing")).to_contain_text("Not offered by OpenRouter")
        expect(page.locator("#samplers-missing")).to_contain_text("DRY")
        expect(page.get_by_role("textbox", name="DRY strength")).to_have_count(0)
        adventure = page.url.rsplit("/samplers", 1)[0]
        with FakeOpenAIServer(extra={("GET", "/props"): LLAMA_PROPS}) as llama:
            page.goto(s.url + "/settings")
            page.get_by_text("Add a connection").click()
            page.locator("#p-service").select_option(label="llama.cpp server")
            page.get_by_label("Address", exact=True).fill(llama.url)
            page.get_by_role("button", name="Save and choose a model").click()
            expect(page.get_by_role("heading", name="Connection: llama.cpp server")).to_be_visible()
            page.goto(adventure)
            page.locator("#connection-use").select_option(label="llama.cpp server")
            expect(page.locator("#narrated-by")).to_contain_text("127.0.0.1")
            page.get_by_role("link", name="Samplers…").click()
            expect(page.get_by_role("textbox", name="DRY strength")).to_be_visible()
            expect(page.get_by_role("textbox", name="XTC chance")).to_be_visible()
            s.look()
            page.goto(adventure)

        # Back to the built-in model: one click, and the privacy line goes with it.
        page.get_by_role("button", name="Use the built-in model").click()
        expect(page.locator("#narrated-by")).to_contain_text("embedded")
        expect(page.locator("#sent-to")).to_have_count(0)
        s.look()
        page.goto(page.url.split("#")[0] + "/insights")
        s.look()
        page.goto(s.url + "/settings")
        s.look()
        for html in s.seen:
            assert KEY not in html and "BROWSERKEY" not in html
