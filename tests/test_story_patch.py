"""What changed on the play page (adventures.story_change, web/turns.py): patching the page
with it gives the page a fresh draw would give, and a kept turn is never stale."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures
from talekeeper.service.adventures import Shown
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Node
from talekeeper.story import takes, tree
from talekeeper.web import turns
from tests.test_tree_api import play

HX = {"HX-Request": "true"}
MOVES = st.lists(
    st.one_of(
        st.just(("undo",)),
        st.just(("redo",)),
        st.tuples(st.just("turn"), st.sampled_from(["do", "say"])),
        st.tuples(st.just("retake"), st.integers(0, 3)),
        st.tuples(st.just("jump"), st.integers(0, 10_000)),
    ),
    min_size=1,
    max_size=25,
)


def _page(session, adventure, limit: int) -> list[int]:
    return tree.path_ids(session, tree.head(session, adventure), limit=limit)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(moves=MOVES, limit=st.integers(2, 8))
def test_a_patched_page_shows_what_a_fresh_one_would(tk: Talekeeper, moves, limit) -> None:
    """Any run of moves (undo, redo, a new turn, a new take of a shown turn, a jump to any
    turn, as a Save Point or another line makes): the page patched with each change lists
    the same turns, in order, as the page drawn afresh, or is refused a patch and drawn."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        for n in range(6):
            node = tree.append_child(
                session, adventure, node, tree.NewTurn("do", f"go {n}", f"Walk {n}.")
            )
        page = _page(session, adventure, limit)
        for move in moves:
            head = tree.head(session, adventure)
            if move[0] == "undo" and head.parent_id is not None:
                tree.undo(session, adventure)
            elif move[0] == "redo" and head.active_child_id is not None:
                tree.redo(session, adventure)
            elif move[0] == "turn":
                tree.append_child(session, adventure, head, tree.NewTurn(move[1], "on", "On."))
            elif move[0] == "retake":
                shown = session.get(Node, page[-1 - move[1] % len(page)])
                if shown.parent_id is not None:
                    parent = session.get(Node, shown.parent_id)
                    tree.append_child(
                        session, adventure, parent, tree.NewTurn("do", "again", "Again.")
                    )
            elif move[0] == "jump":
                ids = sorted(
                    session.scalars(select(Node.id).where(Node.adventure_id == adventure.id))
                )
                tree.move_head(adventure, session.get(Node, ids[move[1] % len(ids)]))
            session.flush()
            change = adventures.story_change(session, adventure, Shown(page[-1], page[0]), limit)
            fresh = _page(session, adventure, limit)
            if change is None:
                page = fresh
                continue
            assert page.index(change.keep) == len(page) - 1 - len(change.removed)
            assert page[len(page) - len(change.removed) :] == change.removed
            page = page[: len(page) - len(change.removed)] + [t.id for t in change.added]
            # a stretch of the line read now, ending at its head, as the page would draw it
            assert page == tree.path_ids(session, tree.head(session, adventure), len(page))
            assert change.story.head_id == fresh[-1]
            positions = takes.take_positions(session, [session.get(Node, i) for i in fresh])
            for turn in change.added:
                assert turn.takes.model_dump() == positions[turn.id].as_dict()


def test_a_kept_turn_is_drawn_again_when_its_takes_change(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    opening = client.get(f"/api/adventures/{adventure_id}").json()["head_id"]
    first = play(client, adventure_id, scripted, "Take one.")["turn"]["id"]
    page = client.get(f"/adventures/{adventure_id}").text
    assert "Take one." in page and "take 1/" not in page
    scripted.queue("Take two.")
    second = client.post(f"/api/adventures/{adventure_id}/retry").json()["turn"]["id"]
    patch = client.get(
        f"/adventures/{adventure_id}/story",
        params={"shown_head": first, "shown_first": opening},
        headers=HX,
    )
    assert patch.headers["HX-Reswap"] == "none"
    assert f'<article id="turn-{first}" hx-swap-oob="delete">' in patch.text
    assert "Take two." in patch.text and "take 2/2" in patch.text
    back = client.post(
        f"/adventures/{adventure_id}/tree/turns/{first}/choose",
        data={"shown_head": second, "shown_first": opening},
        headers=HX,
    ).text
    assert "Take one." in back and "take 1/2" in back  # the same turn, drawn with its takes
    assert re.search(rf'<article class="turn[^"]*" id="turn-{first}"', back)


def test_a_refusal_is_said_under_the_controls_and_changes_nothing(
    client: TestClient, adventure_id: int
) -> None:
    opening = client.get(f"/api/adventures/{adventure_id}").json()["head_id"]
    answer = client.post(
        f"/adventures/{adventure_id}/undo",
        data={"shown_head": opening, "shown_first": opening},
        headers=HX,
    )
    assert answer.headers["HX-Reswap"] == "none"
    assert 'role="alert"' in answer.text and "Nothing to undo" in answer.text
    assert 'hx-swap-oob="delete"' not in answer.text


def test_the_turn_template_may_read_only_what_the_kept_turns_key_holds() -> None:
    page = turns.TurnPage(1, False)
    assert page.id == 1 and page.opening_editable is False
    with pytest.raises(turns.TurnContextMissing, match="story.title"):
        page.title  # noqa: B018 - reading it is the test
