"""The web app in a real browser (Chromium via Playwright), against a live server with a
scripted model: play and its controls, change chips, the state panel and corrections,
the story map and Save Points, Insights and story cards, the scenario editor, settings,
an XSS attempt, and the 390 px phone layout.

Every test also fails on a Content-Security-Policy violation or a script error in the page:
the app promises no inline script or style, and JavaScript that breaks is a broken page.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import Page, expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.views.story import Story
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
START = "Start “The Lantern of Greywater”"


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


@dataclass
class Web:
    url: str
    page: Page
    provider: ScriptedProvider
    tk: Talekeeper
    problems: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def start(self, name: str = "Ada") -> None:
        self.page.goto(self.url + "/")
        self.page.get_by_label("What is your name?").fill(name)
        self.page.get_by_role("button", name=START).click()
        expect(self.page.locator("#story")).to_contain_text(f"{name}, the letter in your satchel")

    def act(self, text: str, expect_text: str) -> None:
        self.page.get_by_label("Your action").fill(text)
        self.page.keyboard.press("Enter")
        expect(self.page.locator("#story")).to_contain_text(expect_text)


@contextmanager
def web(
    isolated_home, replies, width: int = 1100, height: int = 800, **provider_options
) -> Iterator[Web]:
    provider = ScriptedProvider(
        replies, chunk_size=provider_options.pop("chunk_size", 9), **provider_options
    )
    tk = Talekeeper(isolated_home, provider_override=provider)
    with live_server(create_app(tk)) as url, browser_page(width, height) as page:
        w = Web(url, page, provider, tk)
        page.on("console", lambda m: w.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: w.problems.append(str(e)))
        page.on("dialog", lambda d: (w.dialogs.append(d.message), d.accept()))
        yield w
        assert not [p for p in w.problems if "Content Security Policy" in p or "Error" in p], (
            w.problems
        )
    tk.db.dispose()


def no_horizontal_scroll(page: Page) -> None:
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{page.url} scrolls sideways by {overflow}px"


# --- play ------------------------------------------------------------------------------------


def test_play_stream_stop_chips_keys_takes_and_inert_markup(isolated_home) -> None:
    gate = asyncio.Event()
    chips = "Maren squints at you." + block(
        {"type": "change_stat", "stat": "npc.maren.trust", "by": 5},  # limited to 3 a turn
        {"type": "change_stat", "stat": "world.night", "by": -1},  # a counter: refused
        {"type": "change_stat", "stat": "player.health", "by": 2},  # at its maximum
        {"type": "reach_milestone", "milestone": "got_key"},
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
    )
    hostile = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> The tide turns. <b>bold</b>'
    replies = [
        chips,
        "<think>She is testing me.</think>The rope creaks.",
        hostile,
        "A gull cries.",
        "A second gull cries.",
        "The lamp gutters in the wind.",
    ]
    with web(isolated_home, replies) as w:
        page, story = w.page, w.page.locator("#story")
        w.start()
        expect(page.get_by_role("button", name="Undo")).to_be_disabled()

        # A turn with a state block: prose only on the page, and one chip per outcome.
        w.act("ask Maren for passage", "Maren squints at you.")
        expect(story).not_to_contain_text("change_stat")
        turn = story.locator(".turn").last
        expect(turn.locator(".chip-limited")).to_contain_text("Maren's trust −2 → 1 (limited)")
        expect(turn.locator(".chip-rejected")).to_have_count(0)  # the model's: counted, not red
        expect(turn.locator(".chips-refused")).to_have_text(
            "1 of the model's changes was not applied — see Insights"
        )
        expect(turn.locator(".chip-unchanged")).to_contain_text("no change — Health at its limit")
        expect(turn.locator(".chip-milestone")).to_contain_text(
            "✓ Milestone reached: Obtain the brass key"
        )
        expect(turn.locator(".chip-applied")).to_contain_text("Ferry hired: on")

        # Say, with the model's thinking in a closed panel.
        page.get_by_text("Say", exact=True).click()
        w.act("Please.", "The rope creaks.")
        expect(story).to_contain_text('> You say "Please."')
        thinking = story.locator(".turn").last.locator("details.reasoning")
        expect(thinking).not_to_have_attribute("open", "")
        thinking.locator("summary").click()
        expect(thinking).to_contain_text("She is testing me.")

        # Narration that tries to be markup is shown as text and runs nothing.
        page.get_by_text("Do", exact=True).click()
        w.act("wait", "The tide turns.")
        expect(story).to_contain_text('<img src=x onerror="window.__xss = 2">')
        assert story.locator("img, b, script").count() == 0
        assert page.evaluate("window.__xss") is None

        # Continue keeps what is typed; Ctrl+Z / Ctrl+Y undo and redo; Ctrl+R retries.
        page.get_by_label("Your action").fill("half-typed idea")
        page.get_by_role("button", name="Continue").click()
        expect(story).to_contain_text("A gull cries.")
        expect(page.get_by_label("Your action")).to_have_value("half-typed idea")
        page.get_by_label("Your action").fill("")
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("Control+z")
        expect(story).not_to_contain_text("A gull cries.")
        page.keyboard.press("Control+y")
        expect(story).to_contain_text("A gull cries.")
        page.keyboard.press("Control+r")
        expect(story).to_contain_text("A second gull cries.")
        expect(story).not_to_contain_text("A gull cries.")
        takes = story.locator(".turn").last.locator(".take-count")
        expect(takes).to_have_text("take 2/2")
        page.get_by_role("button", name="Previous take").click()
        expect(takes).to_have_text("take 1/2")
        expect(story).to_contain_text("A gull cries.")
        page.get_by_role("button", name="Next take").click()
        expect(takes).to_have_text("take 2/2")

        # Edit a turn's narration: a new take, the original kept.
        page.get_by_role("button", name="Edit turn 4").click()
        page.get_by_label("Edit the narration").fill("No gull at all.")
        page.get_by_role("button", name="Save as a new take").click()
        expect(story).to_contain_text("No gull at all.")
        expect(takes).to_have_text("take 3/3")

        # Streaming: text shows while the turn is still being written; Stop saves nothing.
        # (held past the line's first four words: the echo guard shows a line once judged)
        w.provider.gate, w.provider.gate_after_chunks = gate, 3
        page.get_by_label("Your action").fill("light the lamp")
        page.get_by_role("button", name="Send").click()
        expect(page.locator("#live")).to_contain_text("The lamp gutters in")
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        page.get_by_role("button", name="Stop").click()
        expect(page.locator("#turn-error")).to_contain_text("Stopped. Nothing was saved")
        expect(page.get_by_label("Your action")).to_have_value("light the lamp")
        expect(story).not_to_contain_text("The lamp gutters")
        expect(page.get_by_role("button", name="Stop")).to_be_hidden()

        # Stored turns keep their chips after a reload.
        page.reload()
        expect(page.locator("#story .chip-milestone")).to_contain_text("Obtain the brass key")


class HeldStatePass(ScriptedProvider):
    """Narrates at once, then holds each structured state pass until the test releases it."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.releases: list[asyncio.Event] = []

    async def complete(self, request):
        if request.json_schema is not None:
            self.loop = asyncio.get_running_loop()
            release = asyncio.Event()
            self.releases.append(release)
            await release.wait()
        return await super().complete(request)

    def release(self) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self.releases[-1].set)


def structured_app(isolated_home, provider: ScriptedProvider) -> Talekeeper:
    """An app on `provider` in structured mode: the state pass after the narration."""
    from talekeeper.service import settings as settings_service

    tk = Talekeeper(isolated_home, provider_override=provider)
    with tk.db.session() as session:
        settings_service.update_settings(
            session, settings_service.SettingsUpdate(generation={"state_updates": "structured"})
        )
    return tk


def test_send_is_enabled_while_the_state_updates_and_an_early_action_waits(
    isolated_home,
) -> None:
    """After the last word Send works at once; the turn shows that its state is being
    updated; an action sent then says it waits, and is played on the settled state."""
    provider = HeldStatePass(
        [
            "The wind rises.",
            json.dumps({"events": [{"type": "change_stat", "stat": "world.storm", "by": 1}]}),
            "Rain lashes the harbour wall.",
            json.dumps({"events": []}),
        ]
    )
    tk = structured_app(isolated_home, provider)
    with live_server(create_app(tk)) as url, browser_page() as page:
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        w = Web(url, page, provider, tk)
        w.start()
        page.get_by_label("Your action").fill("watch the sea")
        page.keyboard.press("Enter")
        turn = page.locator("#story .turn").last
        expect(turn).to_contain_text("The wind rises.")
        # the turn is written and the pass still held: Send is back, the turn says why
        expect(page.locator("#send")).to_be_enabled()
        expect(turn.locator(".state-pending")).to_have_text("Updating the story's state…")
        assert provider.releases and not provider.releases[-1].is_set()
        page.get_by_label("Your action").fill("run for the lighthouse")
        page.keyboard.press("Enter")
        waiting = page.locator("#live .status-line")
        expect(waiting).to_contain_text("Updating the story's state…")
        expect(waiting).to_contain_text("played as soon as that is done")
        expect(page.locator("#live")).not_to_contain_text("Rain lashes")
        assert len(provider.requests) == 1  # the second narration has not been asked for
        provider.release()  # the first turn settles; the second is played after it
        expect(page.locator("#story .turn").nth(1).locator(".chip-applied")).to_have_text(
            "Storm 4 → 5"
        )
        expect(page.locator("#story")).to_contain_text("Rain lashes the harbour wall.")
        expect(page.locator("#story .turn.pending")).to_have_count(1)  # the second's own pass
        provider.release()
        expect(page.locator("#story .turn.pending")).to_have_count(0)
        expect(page.locator("#live")).to_be_empty()
        assert problems == []
    # the second turn was played on the first's settled state
    story = adventures_story(tk)
    assert [t.narration for t in story.turns_shown[1:]] == [
        "The wind rises.",
        "Rain lashes the harbour wall.",
    ]
    state = tree_ops.current_state(tk, story.id)
    assert state["stats"]["world"]["storm"]["value"] == 5
    tk.db.dispose()


def test_a_page_opened_while_the_state_updates_shows_the_chips_when_it_ends(
    isolated_home,
) -> None:
    """Reloaded (or opened in another tab) while a turn's state is being updated, the page
    says so under that turn, and shows the chips once the update ends — no stream of its
    own to tell it, so it looks again by itself."""
    provider = HeldStatePass(
        [
            "The wind rises.",
            json.dumps({"events": [{"type": "change_stat", "stat": "world.storm", "by": 1}]}),
        ]
    )
    tk = structured_app(isolated_home, provider)
    with live_server(create_app(tk)) as url, browser_page() as page:
        w = Web(url, page, provider, tk)
        w.start()
        page.get_by_label("Your action").fill("watch the sea")
        page.keyboard.press("Enter")
        expect(page.locator("#send")).to_be_enabled()
        expect(page.locator("#story .turn.pending")).to_have_count(1)
        page.reload()  # the stream that would have said `settled` is gone
        pending = page.locator("#story .turn.pending .state-pending")
        expect(pending).to_have_text("Updating the story's state…")
        provider.release()
        expect(page.locator("#story .turn").nth(1).locator(".chip-applied")).to_have_text(
            "Storm 4 → 5"
        )
        expect(page.locator("#story .turn.pending")).to_have_count(0)
    tk.db.dispose()


def adventures_story(tk: Talekeeper) -> Story:
    """The story of the only adventure."""
    from talekeeper.service import adventures

    return adventures.story(tk, adventures.summaries(tk)[0].id)


def test_a_long_story_loads_earlier_turns_as_the_reader_scrolls_back(isolated_home) -> None:
    from talekeeper.service import adventures
    from talekeeper.story import tree

    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider([]))
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        for n in range(1, 121):
            node = tree.append_child(
                session,
                adventure,
                node,
                tree.NewTurn("do", f"step {n}", f"Page {n} of the long walk.", state=node.state),
            )
        adventure_id = adventure.id
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(f"{url}/adventures/{adventure_id}")
        story = page.locator("#story")
        expect(story).to_contain_text("Page 120 of the long walk.")
        expect(story.locator(".turn")).to_have_count(adventures.FIRST_PAINT)
        expect(story).not_to_contain_text("Ada, the letter")
        # Scrolling back pulls in the earlier pages; what was on screen stays where it was.
        first_shown = story.locator(".turn").first
        first_id = first_shown.get_attribute("data-turn")
        for _ in range(4):  # the first paint, then pages of PAGE_SIZE
            shown = story.locator(".turn").count()
            top = page.evaluate(
                f"document.getElementById('turn-{first_id}').getBoundingClientRect().top"
            )
            page.mouse.wheel(0, top - 200)
            page.wait_for_timeout(50)
            page.mouse.wheel(0, -10)
            expect(story.locator(".turn")).not_to_have_count(shown)
            moved = page.evaluate(
                f"document.getElementById('turn-{first_id}').getBoundingClientRect().top"
            )
            assert abs(moved - 200) < 60, moved  # kept its place on screen
            if story.locator(".turn").count() == 121:
                break
            first_id = story.locator(".turn").first.get_attribute("data-turn")
        expect(story.locator(".turn")).to_have_count(121)
        expect(story).to_contain_text("Ada, the letter")
    tk.db.dispose()


# --- the state panel ----------------------------------------------------------------------------


def test_state_panel_corrections_refusals_and_audit(isolated_home) -> None:
    replies = ["The storm rises." + block({"type": "change_stat", "stat": "world.storm", "by": 2})]
    with web(isolated_home, replies) as w:
        page, story, panel = w.page, w.page.locator("#story"), w.page.locator("#panel")
        w.start()
        w.act("look at the sky", "The storm rises.")
        page.get_by_role("button", name="State", exact=True).click()
        expect(page.get_by_role("button", name="State", exact=True)).to_have_attribute(
            "aria-expanded", "true"
        )
        storm = panel.locator('[data-stat="world.storm"]')
        expect(storm).to_contain_text("6 / 10 · a gale")
        expect(storm.locator("meter")).to_have_attribute("value", "6")
        expect(panel.locator(".milestones")).to_contain_text("☐ Obtain the brass key")
        expect(panel.locator('[data-stat="player.luck"]')).to_contain_text("hidden")
        expect(panel).to_contain_text("Relight the Greywater lantern")

        # A correction passes the same rules: asked 99, held at the maximum.
        panel.get_by_text("Set or change a stat").click()
        form = panel.locator("form").filter(has=page.locator("input[value=set_stat]"))
        form.get_by_label("Stat").select_option("world.storm")
        form.get_by_label("New value").fill("99")
        form.get_by_role("button", name="Set").click()
        expect(panel.get_by_role("status")).to_contain_text("Corrected")
        expect(panel.locator(".chip-limited")).to_contain_text("Storm 6 → 10 (limited)")
        expect(panel.locator('[data-stat="world.storm"]')).to_contain_text("10 / 10 · a tempest")
        correction = story.locator(".turn.correction").last
        expect(correction).to_contain_text("✎ You corrected the story:")
        expect(correction.locator(".chip-limited")).to_have_text("Storm 6 → 10 (limited)")

        # A refused correction says why, in words, and changes nothing.
        panel.get_by_text("Events as JSON").click()
        panel.get_by_label("Events").fill(
            '[{"type": "set_flag", "flag": "dragon_awake", "value": true}]'
        )
        panel.get_by_role("button", name="Apply").click()
        expect(panel.get_by_role("alert")).to_contain_text("Nothing was changed.")
        expect(panel.locator(".chip-rejected")).to_contain_text("there is no flag 'dragon_awake'")
        panel.get_by_text("Events as JSON").click()
        panel.get_by_label("Events").fill("[{")
        panel.get_by_role("button", name="Apply").click()
        expect(panel.get_by_role("alert")).to_contain_text("not valid JSON")

        # Milestones: reached by hand, ticked in the checklist.
        panel.get_by_text("Flags and milestones").click()
        panel.get_by_label("Milestone").select_option("got_key")
        panel.get_by_role("button", name="Mark reached").click()
        expect(panel.locator(".milestones")).to_contain_text("✓ Obtain the brass key")

        # The audit trail, in Insights: the narrator's block as written, and the corrections.
        audit_url = page.url.split("?")[0] + "/insights/audit"
        expect(panel.get_by_role("link", name="the audit trail, in Insights")).to_have_attribute(
            "href", audit_url.removeprefix(w.url)
        )

        # Undo takes a correction back, and the open panel follows the story.
        page.get_by_role("button", name="Undo").click()
        expect(panel.locator(".milestones")).to_contain_text("☐ Obtain the brass key")
        page.get_by_role("button", name="Close the panel").click()
        expect(panel).to_be_empty()
        expect(page.get_by_role("button", name="State", exact=True)).to_be_focused()
        page.goto(audit_url)
        audit = page.locator(".audit")
        expect(audit.locator(":scope > li")).to_have_count(2)  # the last correction was undone
        expect(audit).to_contain_text("your correction")
        expect(audit).to_contain_text("the narrator")


# --- story map and Save Points ------------------------------------------------------------------


def test_story_map_draws_lines_as_a_tree_and_save_points_round_trip(isolated_home) -> None:
    with web(isolated_home, ["The ferry creaks.", "The tower looms.", "The cottage is dark."]) as w:
        page, story, panel = w.page, w.page.locator("#story"), w.page.locator("#panel")
        w.start()
        w.act("board the ferry", "The ferry creaks.")
        w.act("climb the tower", "The tower looms.")

        page.get_by_role("button", name="Save Points").click()
        page.get_by_label("Name", exact=True).fill("At the tower")
        page.get_by_label("Note (optional)").fill("before the climb")
        page.get_by_role("button", name="Save this moment").click()
        saved = panel.locator("[data-save-point]")
        expect(saved).to_contain_text("you are here")
        saved.get_by_label("New name for At the tower").fill("Tower door")
        saved.get_by_role("button", name="Rename").click()
        expect(saved).to_contain_text("Tower door")

        # A new action after Undo starts a second line; the map draws it under the first.
        page.get_by_role("button", name="Undo").click()
        expect(story).not_to_contain_text("The tower looms.")
        w.act("go to the cottage", "The cottage is dark.")
        page.get_by_role("button", name="Lines").click()
        lines = panel.locator("[data-line]")
        expect(lines).to_have_count(2)
        expect(lines.nth(0)).to_have_class(re.compile(r"\bdepth-0\b"))
        expect(lines.nth(1)).to_have_class(re.compile(r"\bdepth-1\b"))
        expect(lines.nth(0)).to_contain_text("the first line")
        expect(lines.nth(0)).to_contain_text("Tower door")
        expect(lines.nth(1)).to_contain_text("you are reading this line")
        expect(lines.nth(1)).to_contain_text("left its parent line after turn 1")
        lines.nth(1).get_by_label("Name of this line").fill("The cottage way")
        lines.nth(1).get_by_role("button", name="Rename").click()
        expect(panel).to_contain_text("The cottage way")
        expect(page.locator("#story")).to_contain_text("Line: The cottage way")

        # The line holding a Save Point cannot be deleted, and the map says why.
        lines.nth(0).get_by_role("button", name="Delete").click()
        expect(panel.get_by_role("alert")).to_contain_text("Save Point")
        expect(lines).to_have_count(2)

        # Restore asks first, then reads the saved moment; the other line stays.
        page.get_by_role("button", name="Save Points").click()
        panel.get_by_role("button", name="Restore").click()
        expect(story).to_contain_text("The tower looms.")
        expect(story).not_to_contain_text("The cottage is dark.")
        assert any("Everything written after it is kept" in d for d in w.dialogs)
        panel.get_by_role("button", name="Delete").click()
        expect(panel).to_contain_text("No Save Points yet.")
        expect(story).to_contain_text("The tower looms.")

        # The map opens from a link too, and survives a reload.
        page.goto(page.url.split("?")[0] + "?panel=lines")
        expect(panel.locator("[data-line]")).to_have_count(2)


# --- Insights, story cards, plot, memory --------------------------------------------------------


def test_story_card_edit_triggers_and_insights_show_why(isolated_home) -> None:
    replies = [
        "An albatross circles the mast."
        + block({"type": "change_stat", "stat": "world.storm", "by": 1}),
        "It lands.",
    ]
    with web(isolated_home, replies) as w:
        page = w.page
        w.start()
        adventure = page.url.split("?")[0]
        page.get_by_role("link", name="Story cards").click()
        new = page.locator("#new-card")
        new.get_by_label("Type").fill("creature")
        new.get_by_label("Name").fill("The albatross")
        new.get_by_label("Triggers").fill("albatross, great bird")
        new.get_by_label("Entry").fill("An albatross is an omen of storms in Greywater.")
        new.get_by_role("button", name="Add card").click()
        expect(page.get_by_role("status")).to_have_text("Saved.")
        card = page.locator(".story-card").filter(has_text="The albatross")
        expect(card.locator(".trigger-list li")).to_have_count(2)

        # The dry run for an action shows the card before anything is sent.
        page.goto(adventure + "/insights")
        page.get_by_label("Action text").fill("look for the albatross")
        page.get_by_label("Action kind").select_option("do")
        page.get_by_role("button", name="Preview").click()
        expect(page.locator(".insights-table")).to_contain_text("The albatross")
        expect(page.locator("#insights-summary")).to_contain_text("tokens")

        page.goto(adventure)
        w.act("look for the albatross", "An albatross circles the mast.")
        page.get_by_role("link", name="What was sent for turn 1").click()
        expect(page.locator("#insights-summary")).to_contain_text("verified")
        expect(page.locator("#insights-summary meter")).to_be_visible()
        triggered = page.locator(".insights-table tr.item").filter(has_text="The albatross")
        expect(triggered).to_contain_text("albatross")
        expect(page.locator(".chip-applied")).to_contain_text("Storm 4 → 5")
        page.get_by_text("The proposal as written").click()
        expect(page.locator("pre").first).to_contain_text("change_stat")

        # Plot components are editable mid-story; the memory panel opens.
        page.get_by_role("link", name="Plot").click()
        page.get_by_label("Author's note").fill("Keep the albatross near.")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_role("status")).to_have_text("Saved.")
        expect(page.get_by_label("Author's note")).to_have_value("Keep the albatross near.")
        page.get_by_role("link", name="Memory").click()
        expect(page.get_by_role("heading", name="Memory bank")).to_be_visible()


# --- home, scenario editor, settings ------------------------------------------------------------


def test_scenario_editor_checks_rules_inline_and_imports_safely(isolated_home, tmp_path) -> None:
    with web(isolated_home, ["Hello."]) as w:
        page = w.page
        page.goto(w.url + "/scenarios/greywater-lantern?part=rules")
        expect(page.get_by_role("note")).to_contain_text("read-only")
        expect(page.get_by_role("button", name=re.compile("^Save"))).to_have_count(0)
        page.get_by_role("button", name="Duplicate to edit").click()
        expect(page.get_by_role("status")).to_contain_text("your own copy")

        page.get_by_role("link", name="Stats and rules").click()
        storm = page.locator('[data-stat="rules.stats.world.storm"]')
        storm.get_by_label("Highest").fill("-5")
        page.get_by_role("button", name="Save stats and rules").click()
        expect(page.locator("#errors")).to_contain_text("Not saved")
        storm = page.locator('[data-stat="rules.stats.world.storm"]')
        expect(storm).to_have_class(re.compile("has-errors"))
        expect(storm.locator(".field-error").first).to_contain_text("rules.stats.world.storm.max")
        expect(storm.get_by_label("Highest")).to_have_value("-5")  # what was typed stays
        storm.get_by_label("Highest").fill("12")
        page.get_by_role("button", name="Save stats and rules").click()
        expect(page.get_by_role("status")).to_have_text("Saved.")
        expect(
            page.locator('[data-stat="rules.stats.world.storm"]').get_by_label("Highest")
        ).to_have_value("12")

        # Story texts and a story card.
        page.get_by_role("link", name="Story", exact=True).click()
        page.get_by_label("Title").fill("Greywater Remixed")
        page.get_by_role("button", name="Save story").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("Greywater Remixed")
        page.get_by_role("link", name="Story cards").click()
        last = page.locator("li.row").last
        last.get_by_label("Name").fill("Gull")
        last.get_by_label("Triggers").fill("gull")
        page.get_by_role("button", name="Save story cards").click()
        expect(page.locator("#errors")).to_contain_text("a card needs an entry")

        # Raw JSON: a broken document is refused with its position.
        page.get_by_role("link", name="Raw JSON").click()
        page.get_by_label("Scenario document").fill('{"id": ')
        page.get_by_role("button", name="Save raw json").click()
        expect(page.locator("#errors")).to_contain_text("not valid JSON")

        # Import: a bad file changes nothing; a good one arrives as a new scenario.
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"id": "broken", "title": "Broken", "opening": "Hi ${who}."}))
        page.goto(w.url + "/scenarios")
        page.get_by_label("Scenario file").set_input_files(bad)
        page.get_by_role("button", name="Import").click()
        expect(page.get_by_role("alert")).to_contain_text("nothing was imported")
        expect(page.get_by_role("alert")).to_contain_text("'${who}' is used but not declared")
        expect(page.locator("#scenario-broken")).to_have_count(0)
        good = tmp_path / "good.json"
        good.write_text(
            json.dumps({"id": "quiet-bay", "title": "Quiet Bay", "opening": "The bay is still."})
        )
        page.get_by_label("Scenario file").set_input_files(good)
        page.get_by_role("button", name="Import").click()
        expect(page.get_by_role("status")).to_contain_text("Imported.")

        # It is on the home page, ready to play.
        page.goto(w.url + "/")
        page.get_by_role("button", name="Start “Quiet Bay”").click()
        expect(page.locator("#story")).to_contain_text("The bay is still.")


def test_home_settings_and_the_phone_layout(isolated_home) -> None:
    with web(isolated_home, ["Rain.", "More rain."], width=390, height=844) as w:
        page = w.page
        page.goto(w.url + "/")
        no_horizontal_scroll(page)
        demo = page.locator("#scenario-greywater-lantern")  # the home page lists two scenarios
        demo.get_by_label("What is your name?").fill("Bo")
        demo.get_by_text("Your character (optional)").click()
        demo.get_by_label("Pronouns").fill("he/him")
        demo.get_by_role("radio", name="Maren's cousin").check()  # an origin: another way in
        demo.get_by_role("button", name=START).click()
        expect(page.locator("#story")).to_contain_text("Home, Bo")
        w.act("listen", "Rain.")
        no_horizontal_scroll(page)
        page.get_by_role("button", name="State", exact=True).click()
        expect(page.locator("#panel")).to_contain_text("Milestones")
        expect(page.locator('#panel [data-stat="npc.maren.trust"]')).to_contain_text(
            "4 / 10 · warming"
        )
        no_horizontal_scroll(page)
        page.keyboard.press("Escape")
        expect(page.locator("#panel")).to_be_empty()
        page.get_by_role("link", name="Plot").click()
        expect(page.get_by_label("Pronouns")).to_have_value("he/him")
        for path in (
            "/scenarios/greywater-lantern?part=rules",
            "/settings",
            page.url.replace("/plot", "/insights"),
        ):
            page.goto(path if path.startswith("http") else w.url + path)
            no_horizontal_scroll(page)

        # Home: continue the most recent adventure; delete asks first.
        page.goto(w.url + "/")
        expect(page.locator(".hero")).to_contain_text("Rain.")
        expect(page.locator("#adventure-list")).to_contain_text("1 turn")
        page.get_by_role("link", name="Continue the story").click()
        expect(page.locator("#story")).to_contain_text("Rain.")
        page.goto(w.url + "/")
        page.get_by_role("button", name="Delete The Lantern of Greywater").click()
        expect(page.locator("#adventure-list li")).to_have_count(0)
        assert any("cannot be undone" in d for d in w.dialogs)

        # Settings: the local-network policy explains a refusal; values are checked.
        page.goto(w.url + "/settings")
        page.get_by_label("Endpoint").fill("http://8.8.8.8/v1")
        page.get_by_role("button", name="Save settings").click()
        alert = page.get_by_role("alert").first
        expect(alert).to_contain_text("Not saved")
        expect(alert).to_contain_text("private network")
        expect(alert).to_contain_text("TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1")
        page.get_by_label("Endpoint").fill("")
        page.get_by_label("State updates").select_option("off")
        page.get_by_label("Memories retrieved per turn").fill("3")
        page.get_by_role("button", name="Save settings").click()
        expect(page.get_by_role("status").first).to_contain_text("Saved")
        expect(page.get_by_label("State updates")).to_have_value("off")
        expect(page.get_by_label("Memories retrieved per turn")).to_have_value("3")
        page.get_by_role("button", name="Test connection").click()
        expect(page.locator("#connection")).to_contain_text("The connection works.")
