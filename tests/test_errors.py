"""One exception tree, mapped to HTTP by branch, with one error body shape."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from fastapi.testclient import TestClient

import talekeeper
from talekeeper.errors import (
    BRANCHES,
    Conflict,
    Invalid,
    NotFound,
    TalekeeperError,
    Upstream,
    status_of,
)
from talekeeper.llm.errors import EndpointRefused, LLMError

SHAPE = {"detail", "error", "errors"}


def _all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


def _import_everything() -> None:
    for info in pkgutil.walk_packages(talekeeper.__path__, "talekeeper."):
        if ".migrations" in info.name or info.name.endswith("_embedded_child"):
            continue
        importlib.import_module(info.name)


def test_every_refusal_sits_under_a_branch() -> None:
    _import_everything()
    named = _all_subclasses(TalekeeperError) - set(BRANCHES)
    assert len(named) >= 15  # the layers' own errors, not just the branches
    for cls in named:
        assert any(issubclass(cls, b) for b in BRANCHES), f"{cls.__name__} is under no branch"


def test_status_follows_the_first_branch() -> None:
    assert status_of(NotFound("x")) == 404 and status_of(Conflict("x")) == 409
    assert status_of(Invalid("x")) == 422 and status_of(Upstream("x")) == 502
    assert status_of(LLMError("x")) == 502
    # a refused endpoint is the setting's fault (422), though it is also a model error
    assert status_of(EndpointRefused("x")) == 422 and isinstance(EndpointRefused("x"), LLMError)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/adventures/999999", None),
        ("get", "/api/scenarios/no-such-scenario", None),
        ("get", "/api/scenarios/no-such-scenario/export", None),
        ("post", "/api/scenarios/no-such-scenario/duplicate", None),
        ("get", "/api/adventures/999999/state", None),
        ("get", "/api/adventures/999999/lines", None),
        ("post", "/api/adventures/999999/undo", None),
        ("post", "/api/adventures", {"scenario_id": "no-such-scenario"}),
        (
            "post",
            "/api/adventures",
            {"scenario_id": "greywater-lantern", "origin_id": "no-such-origin"},
        ),
        ("get", "/api/scenarios/no-such-scenario/character", None),
        ("get", "/api/schemas/no-such-schema", None),
        ("get", "/api/no/such/route", None),
    ],
)
def test_every_missing_thing_is_404_with_one_shape(
    client: TestClient, method: str, path: str, body
) -> None:
    response = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert response.status_code == 404, response.text
    data = response.json()
    assert set(data) == SHAPE and isinstance(data["detail"], str) and data["detail"]


def test_a_conflict_and_an_invalid_request_have_the_same_shape(client: TestClient) -> None:
    started = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}}
    )
    aid = started.json()["id"]
    conflict = client.post(f"/api/adventures/{aid}/undo")
    assert (
        conflict.status_code == 409
        and set(conflict.json()) == SHAPE
        and conflict.json()["error"] == "TreeError"
    )
    invalid = client.post(f"/api/adventures/{aid}/turns", json={"kind": "shout", "text": "hi"})
    assert invalid.status_code == 422 and set(invalid.json()) == SHAPE
    assert invalid.json()["error"] == "RequestInvalid" and invalid.json()["errors"][0]["loc"] == [
        "body",
        "kind",
    ]
    mistakes = client.post("/api/scenarios", json={"id": "x"})
    assert (
        mistakes.status_code == 422 and set(mistakes.json()) == SHAPE and mistakes.json()["errors"]
    )
