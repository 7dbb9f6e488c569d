"""The play page patches itself after a change (web/turns.py): at 10,000 turns an undo, a
redo, a take step and a turn repaint only what changed, never reloading the story."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Node
from talekeeper.story import tree
from talekeeper.web.app import create_app
from tests.browser import browser_page, live_server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]

TURNS = 10_000


def long_story(tk: Talekeeper) -> tuple[int, int, int]:
    """An adventure of TURNS turns whose last turn has two takes; (id, older take, last)."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        state = node.state
        for n in range(1, TURNS + 1):
            turn = tree.NewTurn("do", f"step {n}", f"Step {n} of the long walk.", state=state)
            if n == TURNS:
                older = tree.append_child(
                    session,
                    adventure,
                    node,
                    tree.NewTurn("do", f"step {n}", "The walk ends in fog.", state=state),
                )
            node = tree.append_child(session, adventure, node, turn)
        return adventure.id, older.id, node.id


def test_an_undo_at_10000_turns_repaints_without_reloading_the_story(isolated_home) -> None:
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider(["The tide turns."]))
    adventure_id, older, last = long_story(tk)
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(f"{url}/adventures/{adventure_id}")
        story = page.locator("#story")
        expect(story).to_contain_text(f"Step {TURNS} of the long walk.")
        shown = story.locator(".turn")
        expect(shown).to_have_count(adventures.FIRST_PAINT)  # the first paint: a screenful
        # Mark every turn on the page: a story drawn again would lose the marks.
        page.evaluate(
            "document.querySelectorAll('#story .turn').forEach(t => t.dataset.kept = '1')"
        )
        answers: list[tuple[str, str, int]] = []
        page.on(
            "response",
            lambda r: (
                answers.append((r.request.method, r.url, len(r.body())))
                if "/adventures/" in r.url and r.request.resource_type in ("xhr", "fetch")
                else None
            ),
        )

        page.get_by_role("button", name="Undo").click()
        expect(story).not_to_contain_text(f"Step {TURNS} of the long walk.")
        expect(page.locator(f"#turn-{last}")).to_have_count(0)
        expect(shown).to_have_count(adventures.FIRST_PAINT - 1)
        assert page.locator("#story .turn:not([data-kept])").count() == 0  # none redrawn
        expect(page.get_by_role("button", name="Redo")).to_be_enabled()

        page.keyboard.press("Control+y")  # redo: the turn comes back, drawn alone
        expect(story).to_contain_text(f"Step {TURNS} of the long walk.")
        expect(page.locator("#story .turn:not([data-kept])")).to_have_count(1)
        expect(story.locator(".take-count")).to_have_text("take 2/2")

        page.get_by_role("button", name="Previous take").click()  # a take step
        expect(story).to_contain_text("The walk ends in fog.")
        expect(story).not_to_contain_text(f"Step {TURNS} of the long walk.")
        expect(story.locator(".take-count")).to_have_text("take 1/2")
        assert page.locator(f"#turn-{older}").count() == 1

        page.get_by_label("Your action").fill("wait for the tide")
        page.keyboard.press("Enter")  # a turn: the page asks only for what changed after it
        expect(story).to_contain_text("The tide turns.")
        expect(page.locator("#story .turn:not([data-kept])")).to_have_count(2)
        expect(page.get_by_role("button", name="Undo")).to_be_enabled()

        # Every answer was a patch of a few turns, never the story (50 turns ≈ 50 KB).
        moves = [a for a in answers if a[0] == "POST" and "/api/" not in a[1]]
        assert len(moves) == 3, answers
        refetched = [a for a in answers if a[0] == "GET" and "/story" in a[1]]
        assert len(refetched) == 1 and "shown_head=" in refetched[0][1], answers
        assert all(size < 6_000 for _, _, size in moves + refetched), answers
        assert page.locator("#story .turn[data-kept]").count() == adventures.FIRST_PAINT - 1
    tk.db.dispose()


def test_a_page_that_shows_none_of_the_line_now_read_is_drawn_afresh(isolated_home) -> None:
    """Undo past every turn the page shows (another tab moved far back): drawn again."""
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider([]))
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        ids = [node.id]
        for n in range(1, 41):
            node = tree.append_child(
                session,
                adventure,
                node,
                tree.NewTurn("do", f"go {n}", f"Walk {n}.", state=node.state),
            )
            ids.append(node.id)
        adventure_id = adventure.id
    with live_server(create_app(tk)) as url, browser_page() as page:
        page.goto(f"{url}/adventures/{adventure_id}")
        story = page.locator("#story")
        expect(story).to_contain_text("Walk 40.")
        with tk.db.session() as session:  # elsewhere, the reader went back to turn 3
            adventure = unit_of_work.get_adventure(session, adventure_id)
            tree.move_head(adventure, session.get(Node, ids[3]))
        page.get_by_role("button", name="Undo").click()
        expect(story).to_contain_text("Walk 2.")
        expect(story).not_to_contain_text("Walk 3.")
        expect(story.locator(".turn")).to_have_count(3)  # the opening, turns 1 and 2
    tk.db.dispose()
