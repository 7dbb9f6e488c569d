"""Error answers are bounded and always writable, whatever the request held.

FastAPI's own 422 echoes every input whole: a lone surrogate (`"\\ud800"`) or NaN could not
be written back as JSON (a 500), and 80,000 unknown keys made an 8 MB answer built on the
event loop. tests/reliability/test_hostile_http.py sweeps every route with hostile input;
these pin the known cases down.
"""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from talekeeper.service.json_depth import MAX_MEMBERS
from talekeeper.web.errors import MAX_ECHO, MAX_ITEMS, error_body

JSON = {"Content-Type": "application/json"}
BOUND = 4096  # bytes: "a few KB", whatever the input


def json_body_routes(client: TestClient) -> list[tuple[str, str]]:
    spec = client.app.openapi()
    return [
        (method.upper(), path.replace("{", "").replace("}", ""))
        for path, methods in spec["paths"].items()
        for method, operation in methods.items()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    ]


def test_a_lone_surrogate_or_bytes_not_utf8_in_any_json_body_is_refused_plainly(
    client: TestClient,
) -> None:
    bodies = [
        b'{"scenario_id": "\\ud800", "kind": "\\udfff", "text": "\\ud83d"}',
        b'{"\\ud800": "\\ud800"}',
        b'{"scenario_id": "\xff\xfe", "text": "\xc3"}',
        b'{"a": NaN, "b": Infinity, "scenario_id": -Infinity}',
        b'{"n": ' + b"9" * 5000 + b"}",
        b"\xff\xfe{",
    ]
    routes = json_body_routes(client)
    assert len(routes) >= 15
    for method, path in routes:
        for body in bodies:
            response = client.request(method, path, content=body, headers=JSON)
            assert response.status_code < 500, (method, path, body, response.text[:300])
            assert len(response.content) <= BOUND, (method, path, len(response.content))
            if response.status_code >= 400:
                assert response.json()["detail"], response.text


def test_eighty_thousand_unknown_keys_are_refused_before_any_schema_reads_them(
    client: TestClient,
) -> None:
    body = {"scenario_id": "greywater-lantern", **{f"k{i}": 1 for i in range(80_000)}}
    response = client.post("/api/adventures", content=json.dumps(body), headers=JSON)
    assert response.status_code == 422
    assert response.json()["error"] == "TooWide"
    assert f"{MAX_MEMBERS:,}" in response.json()["detail"]
    assert len(response.content) <= BOUND
    listed = client.put("/api/settings", json={"stop": ["x"] * (MAX_MEMBERS + 1)})
    assert listed.status_code == 422 and listed.json()["error"] == "TooWide"


def test_many_mistakes_are_itemised_up_to_a_limit_and_counted(client: TestClient) -> None:
    keys = {f"unknown{i}": "x" * 10_000 for i in range(200)}
    response = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "y" * 5000: 1, **keys}
    )
    assert response.status_code == 422
    answer = response.json()
    listed = len(answer["errors"])
    assert 10 <= listed <= MAX_ITEMS  # as many as fit in a few KB
    assert f"({201 - listed} more not listed here.)" in answer["detail"]
    for error in answer["errors"]:
        assert all(len(str(p)) <= MAX_ECHO + 1 for p in error["loc"])
        assert len(str(error.get("input", ""))) <= MAX_ECHO + 1
    assert len(response.content) <= BOUND


def test_a_refusal_still_says_what_it_saw_when_that_is_short(client: TestClient) -> None:
    response = client.post("/api/adventures", json={"scenario_id": 5})
    error = response.json()["errors"][0]
    assert error["loc"] == ["body", "scenario_id"] and error["input"] == 5


def test_half_a_character_is_refused_before_anything_reads_it(client: TestClient) -> None:
    for body in (
        b'{"scenario_id": "a", "answers": {"name": "\\ud800"}}',
        b'{"scenario_id": "a", "answers": {"name": "\\udfff\\ud800"}}',
        b'{"scenario_id": "a", "answers": {"name": "\xed\xa0\x80"}}',
    ):
        response = client.post("/api/adventures", content=body, headers=JSON)
        assert response.status_code == 422 and response.json()["error"] == "HalfCharacter", body
    for body in (  # a whole character written as a pair, and an escaped backslash
        b'{"scenario_id": "greywater-lantern", "answers": {"name": "\\ud83d\\ude00"}}',
        b'{"scenario_id": "greywater-lantern", "answers": {"name": "\\\\ud800"}}',
    ):
        response = client.post("/api/adventures", content=body, headers=JSON)
        assert response.status_code == 201, response.text


def test_every_error_answer_is_writable_and_bounded() -> None:
    body = error_body(
        "x" * 100_000 + "\ud800",
        "Name\udfff",
        [{"a": float("nan"), "b": 10**5000, "\ud800": ["y" * 10_000] * 1000}] * 10_000,
    )
    text = json.dumps(body, allow_nan=False).encode("utf-8")
    assert len(text) <= BOUND
    assert body["detail"].endswith("more not listed here.)")
