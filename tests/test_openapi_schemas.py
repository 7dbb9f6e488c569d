"""Every JSON operation documents its body: `/openapi.json` has a typed schema for each
success answer and the one error shape for its refusals, and bodies keep their keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.service import (
    adventures,
    corrections,
    insights,
    memories,
    plot,
    scenarios,
    settings,
)
from talekeeper.service.app import Talekeeper
from talekeeper.views.base import View
from talekeeper.web.app import create_app

API = "/api/"
SKIP = {"parameters"}


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def untyped(spec: dict[str, Any], schema: dict[str, Any] | None, where: str) -> list[str]:
    """Where a schema says nothing about its shape: missing, `{}`, or an object with no
    properties whose extra keys are anything (`additionalProperties: true`)."""
    if not schema:
        return [f"{where}: no schema"]
    schema = _resolve(spec, schema)
    if "anyOf" in schema or "oneOf" in schema:
        return [
            p
            for i, s in enumerate(schema.get("anyOf") or schema["oneOf"])
            for p in untyped(spec, s, f"{where}|{i}")
        ]
    kind = schema.get("type")
    if kind == "array":
        return untyped(spec, schema.get("items"), f"{where}[]")
    if kind == "object" or "properties" in schema:
        if schema.get("properties"):
            return []
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return untyped(spec, extra, f"{where}{{}}")
        return [f"{where}: an object with no properties"]
    if kind in ("string", "integer", "number", "boolean"):
        return []
    return [f"{where}: untyped ({schema})"]


@pytest.fixture(params=[False, True], ids=["single-player", "accounts"])
def spec(request: pytest.FixtureRequest, isolated_home, scripted) -> Iterator[dict[str, Any]]:
    """The document of the app as served, with accounts off and on (their routes too)."""
    tk = Talekeeper(isolated_home, provider_override=scripted, accounts=request.param)
    try:
        yield create_app(tk).openapi()
    finally:
        tk.db.dispose()


def test_openapi_json_is_served(client: TestClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200 and "/api/adventures" in response.json()["paths"]


def operations(spec: dict[str, Any]):
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if method not in SKIP and path.startswith(API):
                yield f"{method.upper()} {path}", op


def test_the_api_has_its_operations(spec: dict[str, Any]) -> None:
    # A guard on the walk below: if routes stopped showing up, it would pass vacuously.
    assert sum(1 for _ in operations(spec)) >= 60


def test_every_success_answer_has_a_typed_schema(spec: dict[str, Any]) -> None:
    problems = []
    for name, op in operations(spec):
        successes = {code: r for code, r in op["responses"].items() if code.startswith("2")}
        assert successes, f"{name}: no success answer documented"
        for code, response in successes.items():
            content = response.get("content") or {}
            if code == "204":
                if content:
                    problems.append(f"{name} 204: documents a body")
                continue
            if not content:
                problems.append(f"{name} {code}: no content documented")
            for media, body in content.items():
                problems += untyped(spec, body.get("schema"), f"{name} {code} {media}")
    # The fix: declare the route's `response_model` (a view from talekeeper/views/).
    assert not problems, "\n".join(problems)


def test_the_turn_stream_is_documented(spec: dict[str, Any]) -> None:
    for path in ("/api/adventures/{adventure_id}/turns", "/api/adventures/{adventure_id}/retry"):
        content = spec["paths"][path]["post"]["responses"]["200"]["content"]
        assert content["text/event-stream"]["schema"]["type"] == "string"
        assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/TurnResult"}


def test_every_refusal_has_the_one_error_shape(spec: dict[str, Any]) -> None:
    error = {"$ref": "#/components/schemas/ErrorBody"}
    problems = []
    for name, op in operations(spec):
        refusals = {code: r for code, r in op["responses"].items() if code.startswith("4")}
        if not {"404", "409", "422"} <= refusals.keys():
            problems.append(f"{name}: documents {sorted(refusals)}, not 404, 409 and 422")
        for code, response in refusals.items():
            if response.get("content", {}).get("application/json", {}).get("schema") != error:
                problems.append(f"{name} {code}: not the ErrorBody shape")
    # The fix: `responses=ERRORS` (talekeeper.web.errors) on the route or its router.
    assert not problems, "\n".join(problems)
    body = spec["components"]["schemas"]["ErrorBody"]
    assert set(body["properties"]) == {"detail", "error", "errors"}


def test_a_schema_field_has_its_description(spec: dict[str, Any]) -> None:
    story = spec["components"]["schemas"]["Story"]
    assert story["properties"]["can_undo"]["description"] == "Undo has somewhere to go."
    assert "head_id" not in story.get("required", [])  # absent from a page before the first turn


def test_a_view_refuses_a_key_it_does_not_declare() -> None:
    from talekeeper.views.story import LineDeleted

    with pytest.raises(ValueError, match="extra"):
        LineDeleted.model_validate({"deleted_turns": 1, "surprise": True})


def test_a_view_writes_every_key_it_declares_null_when_empty() -> None:
    """A client can rely on a key being there: a story page before the first turn says its
    head and controls are null rather than leaving them out. Only a settings document as
    stored (`Sparse`) keeps to the fields that are set."""
    from talekeeper.views.settings import SamplerValues
    from talekeeper.views.story import Story

    page = {
        "id": 1,
        "title": "t",
        "scenario_id": None,
        "scenario_title": None,
        "turns": 0,
        "last_played_at": "2026-01-01T00:00:00",
        "created_at": "2026-01-01T00:00:00",
        "turns_shown": [],
        "has_more": False,
    }
    written = Story.model_validate(page).model_dump(mode="json", by_alias=True)
    assert set(written) == {f.alias or name for name, f in Story.model_fields.items()}
    assert written["head_id"] is None and written["can_undo"] is None
    assert {k: written[k] for k in page} == page
    assert issubclass(Story, View)
    assert SamplerValues(top_k=40).model_dump(mode="json") == {"top_k": 40}


def _json(value: Any) -> Any:
    from fastapi.encoders import jsonable_encoder

    return jsonable_encoder(value)


def test_bodies_are_the_services_dicts_unchanged(
    client: TestClient, tk, scripted, adventure_id: int
) -> None:
    """The views change no body: each route answers exactly what its service returns."""
    scripted.queue(
        'Maren nods.\n\n```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", "value": true}]}\n```'
    )
    turn = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "offer coins"}
    )
    assert turn.status_code == 200, turn.text
    card = {
        "name": "Ferry",
        "entry": "x",
        "triggers": "door",
        "gates": [{"kind": "flag", "id": "ferry_hired", "not": True}],
    }
    assert client.post(f"/api/adventures/{adventure_id}/story-cards", json=card).status_code == 201
    node_id = turn.json()["turn"]["id"]
    expected = {
        f"/api/adventures/{adventure_id}": adventures.story(tk, adventure_id),
        "/api/adventures": adventures.summaries(tk),
        f"/api/adventures/{adventure_id}/state/audit": corrections.audit(tk, adventure_id),
        f"/api/adventures/{adventure_id}/canon-log": corrections.canon_log(tk, adventure_id),
        f"/api/adventures/{adventure_id}/turns/{node_id}/insights": insights.of_turn(
            tk, adventure_id, node_id
        ),
        f"/api/adventures/{adventure_id}/memories": memories.panel_of(tk, adventure_id),
        f"/api/adventures/{adventure_id}/plot": plot.plot_of(tk, adventure_id),
        f"/api/adventures/{adventure_id}/story-cards": plot.cards_of(tk, adventure_id),
        "/api/scenarios": scenarios.summaries(tk),
        "/api/settings": settings.settings_view(tk),
    }
    expected[f"/api/adventures/{adventure_id}/state"] = corrections.state_at_head(
        tk, adventure_id
    ).at
    for path, body in expected.items():
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert response.json() == _json(body), path


def test_the_pages_get_the_same_views(
    client: TestClient, adventure_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The play page and the home page render the API's own views, not loose dicts."""
    from talekeeper.views.scenarios import ScenarioListed
    from talekeeper.views.story import AdventureSummary, Story
    from talekeeper.web import pages

    seen: dict[str, dict[str, Any]] = {}
    real = pages.render

    def spy(request, name, status_code=200, **context):
        seen[name] = context
        return real(request, name, status_code, **context)

    monkeypatch.setattr(pages, "render", spy)
    assert client.get(f"/adventures/{adventure_id}").status_code == 200
    assert client.get("/").status_code == 200
    assert isinstance(seen["play.html"]["story"], Story)
    assert seen["home.html"]["adventures"] and all(
        isinstance(a, AdventureSummary) for a in seen["home.html"]["adventures"]
    )
    assert all(isinstance(s, ScenarioListed) for s in seen["home.html"]["scenarios"])


def test_the_memory_and_plot_pages_render_their_views(
    client: TestClient, tk, scripted, adventure_id: int
) -> None:
    from talekeeper.memory import bank
    from talekeeper.store.models import Adventure

    scripted.queue("The lamp gutters.")
    assert (
        client.post(
            f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wait"}
        ).status_code
        == 200
    )
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        path = bank.path_ids(session, adventure.head_node_id)
        bank.add_memory(session, adventure_id, bank.Block(1, 1, path[1]), "Ada waited by the lamp.")
    client.put(f"/api/adventures/{adventure_id}/plot", json={"author_note": "Keep it rainy."})
    memory = client.get(f"/adventures/{adventure_id}/memory")
    assert (
        memory.status_code == 200
        and "Ada waited by the lamp." in memory.text
        and "Turns 1–1" in memory.text
    )
    plot_page = client.get(f"/adventures/{adventure_id}/plot")
    assert plot_page.status_code == 200 and "Keep it rainy." in plot_page.text
    # Insights: a section's items (a dict's `items` would be its method) render as rows.
    insights_page = client.get(f"/adventures/{adventure_id}/insights")
    assert insights_page.status_code == 200 and "↳ memory 1" in insights_page.text


def test_the_stream_documents_every_event_kind(spec: dict[str, Any]) -> None:
    from talekeeper.service.turn_events import KINDS

    path = spec["paths"]["/api/adventures/{adventure_id}/turns"]["post"]
    words = path["responses"]["200"]["content"]["text/event-stream"]["schema"]["description"]
    assert all(f"`{kind}`" in words for kind in KINDS), (KINDS, words)


STORY = {
    "id": 1,
    "title": "The Greywater Lantern",
    "scenario_id": "greywater-lantern",
    "scenario_title": "The Greywater Lantern",
    "turns": 1,
    "last_played_at": "2026-01-01T00:00:00+00:00",
    "created_at": "2026-01-01T00:00:00+00:00",
    "head_id": 2,
    "can_undo": True,
    "can_redo": False,
    "can_retry": True,
    "opening_editable": False,
    "line_name": None,
    "has_more": False,
    "turns_shown": [
        {
            "id": 2,
            "parent_id": 1,
            "depth": 1,
            "kind": "do",
            "action": "wait",
            "action_line": "> You wait.",
            "narration": "Rain.",
            "reasoning": None,
            "model": "scripted",
            "created_at": None,
            "changes": [
                {
                    "status": "applied",
                    "type": "adjust_stat",
                    "target": "world.storm",
                    "before": 4,
                    "after": 6.5,
                    "reason": "",
                    "correction": None,
                    "hidden": False,
                    "by": "story",
                    "chip": {"kind": "applied", "text": "Storm 4 → 6.5", "detail": ""},
                },
            ],
            "pending": False,
            "takes": {"index": 1, "count": 1, "previous_id": None, "next_id": None},
        }
    ],
    "persona": {"name": "Ada", "pronouns": "", "description": ""},
}
OPTIONAL = [
    "head_id",
    "can_undo",
    "can_redo",
    "can_retry",
    "opening_editable",
    "line_name",
    "persona",
]


@given(drop=st.sets(st.sampled_from(OPTIONAL)))
def test_a_story_keeps_its_values_and_writes_every_key(drop: set[str]) -> None:
    """Whatever optional keys a service leaves out come back null (or their default); what
    it gave comes back as given; numbers keep their type."""
    from talekeeper.views.story import Story

    body = {k: v for k, v in STORY.items() if k not in drop}
    out = Story.model_validate(body).model_dump(mode="json", by_alias=True)
    assert set(out) == set(Story.model_fields)
    assert all(out[k] in (None, Story.model_fields[k].default) for k in drop)
    assert {k: out[k] for k in body if k != "turns_shown"} == {
        k: v for k, v in body.items() if k != "turns_shown"
    }
    (turn,) = out["turns_shown"]
    assert {k: turn[k] for k in STORY["turns_shown"][0]} == STORY["turns_shown"][0]
    assert type(out["turns_shown"][0]["changes"][0]["before"]) is int


GATE_FIELDS = {"is": "open", "who": "gwen", "band": "high", "min": 1, "max": 2.5, "not": True}


@given(keep=st.sets(st.sampled_from(sorted(GATE_FIELDS))))
def test_a_gate_keeps_the_stored_form(keep: set[str]) -> None:
    """A card's gates come back as stored: `kind`, `id` and only the fields given."""
    from talekeeper.views.context import GateView

    gate = {"kind": "stat", "id": "world.storm", **{k: GATE_FIELDS[k] for k in keep}}
    assert GateView.model_validate(gate).model_dump(mode="json", by_alias=True) == gate
