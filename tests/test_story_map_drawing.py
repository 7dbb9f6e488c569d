"""The story map drawn: one row per line from where it parted to its end, a joint on the
line it left, Save Point markers, and where the player is — as inline SVG with classes only."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import story_map
from talekeeper.service.app import Talekeeper
from tests.test_tree_api import play


def test_the_map_is_drawn_where_lines_part_with_save_points_and_you_are_here(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    play(client, aid, scripted, "One.", "one")
    play(client, aid, scripted, "Two.", "two")
    play(client, aid, scripted, "Three.", "three")
    client.post(f"/api/adventures/{aid}/save-points", json={"name": "Top"})
    client.post(f"/api/adventures/{aid}/undo")
    client.post(f"/api/adventures/{aid}/undo")
    play(client, aid, scripted, "Other.", "other")  # parts after turn 1; the player is here

    data = story_map.line_tree(tk, aid)
    first, second = data.drawing.rows
    scale = (story_map.WIDTH - 2 * story_map.LEFT) / 3
    assert first.x1 == story_map.LEFT and first.x2 == round(story_map.LEFT + 3 * scale, 1)
    assert first.joint_y is None and [s.name for s in first.saves] == ["Top"]
    assert first.saves[0].x == first.x2  # saved at turn 3, its end
    assert second.x1 == round(story_map.LEFT + 1 * scale, 1)  # it parted after turn 1
    assert second.joint_y == first.y and second.y > first.y
    assert second.here_x == second.x2 and first.here_x is None

    panel = client.get(f"/adventures/{aid}/tree/lines").text
    svg = panel[panel.index("<svg") : panel.index("</svg>")]
    assert svg.count('class="map-line"') == 2 and svg.count('class="map-fork"') == 1
    assert svg.count('class="map-save"') == 1 and svg.count('class="map-here"') == 1
    assert 'role="img"' in svg and "<title" in svg and "you are on" in svg
    assert not re.search(r"\sstyle=", svg)  # CSP: no inline style


def test_reading_an_earlier_moment_marks_it_on_the_line(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "One.", "one")
    play(client, adventure_id, scripted, "Two.", "two")
    client.post(f"/api/adventures/{adventure_id}/undo")
    (row,) = story_map.line_tree(tk, adventure_id).drawing.rows
    assert row.here_x == round(story_map.LEFT + 1 * (story_map.WIDTH - 2 * story_map.LEFT) / 2, 1)
