"""A JSON body nested 100,000 levels deep gets a clear 4xx on every route that reads JSON,
and changes nothing (it used to be a 500: Python's JSON reader recurses per level)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.service.json_depth import MAX_DEPTH, DepthScanner, TooDeep, check

DEEP = b"[" * 100_000 + b"]" * 100_000


def _json_routes(client: TestClient) -> list[tuple[str, str]]:
    spec = client.app.openapi()
    found = []
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            if path.startswith("/api/") and (
                "requestBody" in operation or path.endswith("/import")
            ):
                found.append((method.upper(), path))
    return found


def test_every_json_route_refuses_a_body_nested_100000_deep(client: TestClient) -> None:
    story = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}}
    ).json()
    before = client.get(f"/api/adventures/{story['id']}").json()
    routes = _json_routes(client)
    assert len(routes) >= 12 and ("POST", "/api/scenarios/import") in routes
    for method, path in routes:
        url = path.replace("{adventure_id}", str(story["id"])).replace(
            "{node_id}", str(story["head_id"])
        )
        url = url.replace("{scenario_id}", "greywater-lantern").replace(
            "{leaf_id}", str(story["head_id"])
        )
        for name in ("{index}", "{memory_id}", "{save_point_id}"):
            url = url.replace(name, "0")
        for content_type in ("application/json", None):
            headers = {"Content-Type": content_type} if content_type else {}
            response = client.request(method, url, content=DEEP, headers=headers)
            assert 400 <= response.status_code < 500, (
                method,
                url,
                response.status_code,
                response.text[:200],
            )
            assert response.json()["detail"], response.text
    assert client.get(f"/api/adventures/{story['id']}").json() == before


def test_the_scenario_import_page_refuses_a_deep_file(client: TestClient) -> None:
    page = client.post("/scenarios/import", files={"file": ("deep.json", DEEP, "application/json")})
    assert page.status_code == 422 and "nests too deeply" in page.text


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text('[]{}"\\', max_size=4), inner, max_size=3)
        ),
        max_leaves=30,
    ),
    st.integers(1, 7),
)
def test_the_scanner_measures_depth_as_the_parser_nests(value, chunk) -> None:
    """Depth by the scanner (fed in any chunking) equals the parsed value's nesting."""
    import json

    text = json.dumps(value).encode()

    def nesting(v) -> int:
        if isinstance(v, list):
            return 1 + max((nesting(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((nesting(x) for x in v.values()), default=0)
        return 0

    depth = nesting(value)
    scanner = DepthScanner(limit=max(depth, 1))
    for i in range(0, len(text), chunk):
        scanner.feed(text[i : i + chunk])
    assert scanner.depth == 0
    if depth > 1:
        try:
            check(text, depth - 1)
        except TooDeep:
            pass
        else:
            raise AssertionError(f"depth {depth} passed a limit of {depth - 1}: {text!r}")
    assert MAX_DEPTH >= 32


def test_pages_reading_json_from_a_form_field_refuse_deep_nesting(client: TestClient) -> None:
    """Form fields are not scanned by the body guard (their brackets arrive encoded): the
    pages that read JSON from one (a correction, an import's review, the scenario editor)
    refuse nesting Python's reader cannot follow in words, never a 500: the import's review
    and the scenario editor with a 422, the State panel as it shows every refused
    correction (the panel again, the refusal written in it), and nothing changes."""
    story = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}}
    ).json()
    own = client.post("/api/scenarios/greywater-lantern/duplicate").json()["id"]
    before = client.get(f"/api/adventures/{story['id']}").json()
    scenario_before = client.get(f"/api/scenarios/{own}").json()
    deep = "[" * 9_000 + "]" * 9_000  # within the correction's 20,000 characters
    panel = client.post(
        f"/adventures/{story['id']}/state/correct", data={"kind": "json", "events": deep}
    )
    assert panel.status_code == 200 and 'data-panel="state"' in panel.text
    assert "nested too deeply" in panel.text and "HX-Trigger" not in panel.headers
    for url, data in (
        ("/interop/save", {"document": deep}),
        (f"/scenarios/{own}/save/json", {"document": deep}),
    ):
        response = client.post(url, data=data)
        assert response.status_code == 422, (url, response.status_code, response.text[:200])
        assert (
            response.json()["error"] == "TooDeep"
            and "nested too deeply" in response.json()["detail"]
        )
    assert client.get(f"/api/adventures/{story['id']}").json() == before
    assert client.get(f"/api/scenarios/{own}").json() == scenario_before


def _lone(value) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list):
        return any(_lone(v) for v in value)
    if isinstance(value, dict):
        return any(_lone(k) or _lone(v) for k, v in value.items())
    return False


ESCAPES = st.sampled_from(
    ["\\ud83d\\ude00", "\\ud800", "\\udfff", "\\udbff\\udc00", "\\\\ud800", "\\u0041", "\\n", "a"]
)
RAW = st.sampled_from([b"", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\xe2\x82\xac"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(ESCAPES, RAW), min_size=1, max_size=6),
    st.integers(1, 13),
    st.booleans(),
)
def test_half_a_character_is_found_in_any_chunking(pieces, chunk, as_key) -> None:
    """The scanner refuses a text exactly when Python's reader would give a lone surrogate,
    whichever way its bytes are cut into chunks."""
    import json

    from talekeeper.service.json_depth import HalfCharacter

    inner = b"".join(escape.encode() + raw for escape, raw in pieces)
    text = b'{"' + inner + b'": 1}' if as_key else b'{"k": ["' + inner + b'", 2]}'
    expected = _lone(json.loads(text))
    scanner = DepthScanner()
    try:
        for i in range(0, len(text), chunk):
            scanner.feed(text[i : i + chunk])
        scanner.finish()
    except HalfCharacter:
        assert expected, text
    else:
        assert not expected, text
    assert scanner.depth == 0 or expected


def test_an_upload_that_is_not_json_is_left_to_its_importer(client: TestClient) -> None:
    """A gzip, PNG or zip file's bytes mean nothing to the JSON guard (a random megabyte
    holds brackets enough to look 64 levels deep, and the bytes of half a character)."""
    import os

    noise = b"\x1f\x8b\x08\x00" + b"[{" * 200 + os.urandom(50_000) + b"\xed\xa0\x80"
    response = client.post("/api/adventures/import", content=noise)
    assert response.status_code == 422
    assert response.json()["error"] not in ("TooDeep", "HalfCharacter"), response.text
    deep = client.post("/api/adventures/import", content=b"  " + DEEP)  # JSON: measured
    assert deep.status_code == 422 and deep.json()["error"] == "TooDeep"
