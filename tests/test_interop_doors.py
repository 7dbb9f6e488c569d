"""Every import door reaches the same converter with the same verdict.

The doors: the web form (`POST /interop/import`), `POST /api/interop/import`,
`talekeeper import-card`, and for adventures `POST /api/adventures/import`, the home
page's form and `talekeeper import`. Uploaded bytes (PNG, zip, gzip) are never measured
as JSON; text that cannot be decoded is refused 4xx; a converter's unexpected exception
is a logged 4xx refusal; and conversion runs off the event loop, so other players are
served while a large file converts.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from talekeeper.cli import app
from talekeeper.interop import imports
from talekeeper.interop.imports import own_scenarios
from talekeeper.service import json_depth
from talekeeper.service.app import Talekeeper
from talekeeper.service.json_depth import TooDeep
from tests import waiting
from tests.interop_fixtures import BRACKETS, b64, card_v2, files, make_charx, make_png
from tests.interop_helpers import build_story, export_bytes, row_counts

SURROGATE_CARD = (
    b'{"spec": "chara_card_v2", "data": {"name": "Half \\ud83d", "first_mes": "Hi \\udc00"}}'
)
BAD_UTF8 = b'{"spec": "chara_card_v2", "data": {"name": "Caf\xe9", "first_mes": "hi"}}'


def _with_gzip_comment(data: bytes, comment: bytes) -> bytes:
    """A gzip file with a comment in its header (FCOMMENT): valid gzip, and its bytes
    hold whatever the comment holds."""
    assert data[:3] == b"\x1f\x8b\x08" and data[3] == 0
    return data[:3] + bytes([0x10]) + data[4:10] + comment + b"\x00" + data[10:]


# --- the depth guard never measures uploaded bytes -----------------------------------------


@pytest.mark.parametrize("content_type", [None, "application/json", "application/octet-stream"])
def test_binary_cards_full_of_brackets_import_through_the_api(
    client: TestClient, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    v3 = {**card_v2(), "spec": "chara_card_v3", "spec_version": "3.0"}
    png = make_png([("ccv3", b64(v3))], noise=BRACKETS)
    charx = make_charx(v3, {"assets/icon/images/main.png": make_png([], noise=BRACKETS)})
    for name, raw in (("card.png", png), ("card.charx", charx)):
        with pytest.raises(TooDeep):  # read as JSON, these bytes would nest past the limit
            json_depth.DepthScanner(whole_characters=False).feed(raw, final=True)
        answer = client.post(
            "/api/interop/import", params={"filename": name}, content=raw, headers=headers
        )
        assert answer.status_code == 200, (name, answer.text[:300])
        assert answer.json()["items"][0]["errors"] == []


def test_a_bundle_whose_bytes_hold_brackets_imports_through_the_api(
    client: TestClient, tk: Talekeeper
) -> None:
    story = build_story(tk, [("turn", 1), ("turn", 2)])
    bundle = _with_gzip_comment(export_bytes(tk, story), b"[" * 200 + b"{" * 200)
    with pytest.raises(TooDeep):
        json_depth.DepthScanner(whole_characters=False).feed(bundle, final=True)
    for content_type in (None, "application/json", "application/gzip"):
        headers = {"Content-Type": content_type} if content_type else {}
        answer = client.post("/api/adventures/import", content=bundle, headers=headers)
        assert answer.status_code == 201, answer.text[:300]


def test_json_too_deep_is_still_refused_by_the_reader(client: TestClient, tk: Talekeeper) -> None:
    before = row_counts(tk)
    for depth in (65, 100_000):
        deep = b"[" * depth + b"]" * depth
        answer = client.post("/api/interop/import", params={"filename": "x.json"}, content=deep)
        assert answer.status_code == 422 and "too deeply" in answer.json()["detail"]
    assert row_counts(tk) == before


# --- undecodable text: 4xx with the reason, never 500 ----------------------------------------


def test_undecodable_text_is_refused_at_every_door(
    client: TestClient, tk: Talekeeper, tmp_path: Path, isolated_home: Path
) -> None:
    before = row_counts(tk)
    cases = {
        "surrogate escapes": (SURROGATE_CARD, "not valid Unicode"),
        "invalid UTF-8": (BAD_UTF8, "is not UTF-8"),
        "surrogates in a PNG": (
            make_png([("chara", base64.b64encode(SURROGATE_CARD).decode())]),
            "not valid Unicode",
        ),
        "invalid UTF-8 in a PNG": (
            make_png([("chara", base64.b64encode(BAD_UTF8).decode())]),
            "not UTF-8",
        ),
    }
    for name, (raw, said) in cases.items():
        api = client.post("/api/interop/import", params={"filename": "c.json"}, content=raw)
        assert api.status_code == 422 and said in api.json()["detail"], (name, api.text[:200])
        page = client.post("/interop/import", files={"file": ("c.json", raw, "application/json")})
        assert page.status_code == 422 and said in unescape(page.text), name
        path = tmp_path / "c.json"
        path.write_bytes(raw)
        done = CliRunner().invoke(
            app, ["import-card", str(path), "--yes", "--data-dir", str(isolated_home)]
        )
        assert done.exit_code == 1 and said in " ".join(done.output.split()), (name, done.output)
    scenario = client.post(
        "/api/scenarios/import",
        content=b'{"id": "half", "title": "Half \\ud800", "opening": "x"}',
    )
    assert scenario.status_code == 422 and "half of a character" in scenario.json()["detail"]
    assert row_counts(tk) == before


# --- a converter's own failure is a logged refusal -------------------------------------------


def test_an_unexpected_converter_error_is_a_logged_4xx(
    client: TestClient,
    tk: Talekeeper,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    isolated_home: Path,
) -> None:
    def broken(raw: bytes, filename: str = "") -> list:
        raise KeyError("a field the converter forgot")

    monkeypatch.setattr(imports, "convert", broken)
    raw = json.dumps(card_v2()).encode()
    with caplog.at_level(logging.ERROR, logger="talekeeper.interop.imports"):
        api = client.post("/api/interop/import", params={"filename": "c.json"}, content=raw)
    assert api.status_code == 422, api.text
    assert "KeyError" in api.json()["detail"] and "logged" in api.json()["detail"]
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)
    page = client.post("/interop/import", files={"file": ("c.json", raw, "application/json")})
    assert page.status_code == 422 and "KeyError" in page.text
    path = tmp_path / "c.json"
    path.write_bytes(raw)
    done = CliRunner().invoke(app, ["import-card", str(path), "--data-dir", str(isolated_home)])
    assert done.exit_code == 1 and "KeyError" in " ".join(done.output.split())


def test_an_unexpected_bundle_error_is_a_logged_4xx(
    client: TestClient, tk: Talekeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    from talekeeper.interop import bundle_import

    story = build_story(tk, [("turn", 1)])
    data = export_bytes(tk, story)

    def broken(*args, **kwargs):
        raise ValueError("a record the checker did not expect")

    monkeypatch.setattr(bundle_import, "load", broken)
    before = row_counts(tk)
    answer = client.post("/api/adventures/import", content=data)
    assert answer.status_code == 422 and "ValueError" in answer.json()["detail"]
    assert row_counts(tk) == before


# --- off the event loop ------------------------------------------------------------------------


def _big_world_info(entries: int = 4000) -> bytes:
    return json.dumps(
        {
            "entries": {
                str(i): {"uid": i, "key": [f"place{i}"], "content": f"Place {i}. " * 40}
                for i in range(entries)
            }
        }
    ).encode()


@pytest.mark.parametrize("door", ["api", "form"])
def test_another_request_is_served_while_a_big_file_converts(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, door: str
) -> None:
    """The conversion waits until another request has been answered: were it on the event
    loop, that request could not be answered until the conversion ended (the wait gives
    up after a minute and the test fails)."""
    served, converting = threading.Event(), threading.Event()
    real = imports.convert
    waited: list[bool] = []

    def slow(raw: bytes, filename: str = "") -> list:
        converting.set()
        waited.append(served.wait(timeout=waiting.bound(60)))
        return real(raw, filename)

    monkeypatch.setattr(imports, "convert", slow)
    raw = _big_world_info()
    answers: list = []

    def upload() -> None:
        if door == "api":
            answers.append(
                client.post("/api/interop/import", params={"filename": "big.json"}, content=raw)
            )
        else:
            answers.append(
                client.post(
                    "/interop/import", files={"file": ("big.json", raw, "application/json")}
                )
            )

    worker = threading.Thread(target=upload)
    worker.start()
    assert converting.wait(timeout=waiting.bound(60))
    assert client.get("/api/scenarios").status_code == 200
    served.set()
    worker.join(timeout=waiting.bound(120))
    assert waited == [True], "the other request was not served while the file converted"
    assert answers and answers[0].status_code == 200


# --- one converter, one verdict ---------------------------------------------------------------


def _verdicts(
    client: TestClient, isolated_home: Path, tmp_path: Path, name: str, raw: bytes
) -> dict[str, str]:
    """What each door says of a file: 'refused: <reason>' or 'imported: <titles>'."""
    found = {}
    api = client.post("/api/interop/import", params={"filename": name}, content=raw)
    if api.status_code == 200:
        items = api.json()["items"]
        found["api"] = "imported: " + " | ".join(f"{i['format']}: {i['title']}" for i in items)
        titles = [(i["format"], i["title"]) for i in items]
    else:
        found["api"] = "refused: " + api.json()["detail"].removesuffix(
            " Nothing was imported."
        ).removesuffix(" Nothing was changed.")
    page = client.post("/interop/import", files={"file": (name, raw, "application/octet-stream")})
    text = unescape(page.text)
    if page.status_code == 200:
        assert all(f in text and t in text for f, t in titles), name
        found["form"] = found["api"]
    else:
        error = re.search(r'id="card-error"[^>]*>(.*?)<', page.text, re.S)
        found["form"] = "refused: " + unescape(
            error.group(1) if error else text
        ).strip().removesuffix(" Nothing was imported.").removesuffix(" Nothing was changed.")
    path = tmp_path / name
    path.write_bytes(raw)
    done = CliRunner().invoke(
        app, ["import-card", str(path), "--data-dir", str(isolated_home)], input="n\n" * 20
    )
    output = " ".join(done.output.split())
    if "Refused:" in output:
        found["cli"] = "refused: " + output.split("Refused:", 1)[1].strip().removesuffix(
            " Nothing was imported."
        )
    else:
        assert all(f in output and t in output for f, t in titles), (name, output)
        found["cli"] = found["api"]
    return found


HOSTILE = {
    "truncated.json": json.dumps(card_v2()).encode()[:200],
    "deep.json": b"[" * 500 + b"]" * 500,
    "noise.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
    "list.json": json.dumps([{"Park": {"description": "a park"}}]).encode(),
    "half.json": SURROGATE_CARD,
    "empty.json": b"   ",
}


@pytest.mark.parametrize(
    "name", sorted(files()) + sorted(HOSTILE), ids=lambda n: n.encode("ascii", "replace").decode()
)
def test_every_door_gives_the_same_verdict(
    client: TestClient, tk: Talekeeper, isolated_home: Path, tmp_path: Path, name: str
) -> None:
    raw = files().get(name) or HOSTILE[name]
    verdicts = _verdicts(client, isolated_home, tmp_path, name, raw)
    assert verdicts["api"] == verdicts["form"] == verdicts["cli"], verdicts
    assert verdicts["api"].startswith("imported" if name in files() else "refused"), verdicts
    assert own_scenarios(tk) == []  # previews save nothing
