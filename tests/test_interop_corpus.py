"""The interop corpus (third-party files, read where they lie; skipped when absent): every
file imports with a report or is refused with a reason; the refusals are exactly the
broken and non-export files."""

from __future__ import annotations

import json

import pytest

from talekeeper.interop.containers import Refused
from talekeeper.interop.detect import convert
from talekeeper.service.scenarios import check_scenario
from tests.interop_helpers import CORPUS

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the interop corpus is not present")
DATA = (
    sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix.lower() not in (".md", ".py") and p.name != "ccv3_LICENSE"
    )
    if CORPUS.is_dir()
    else []
)
REFUSED = {
    "INVALID_Ripple (Mon Oct 17 2022).lorebook": "not valid JSON",
    "INVALID_generated_lorebook__pandas.lorebook": "table dump",
    "aid_script_sandbox_data.JSON": "not an AI Dungeon export",
    "opendungeon_Park.json": "does not recognise",
}


@pytest.mark.parametrize("path", DATA, ids=lambda p: p.name)
def test_corpus_file(path) -> None:
    if path.name in REFUSED:
        with pytest.raises(Refused, match=REFUSED[path.name]):
            convert(path.read_bytes(), path.name)
        return
    results = convert(path.read_bytes(), path.name)
    assert results
    for result in results:
        assert check_scenario({**result.document, "id": "corpus"}) == [], path.name
        assert result.report, path.name


def test_seraphina_keeps_her_lorebook() -> None:
    png = CORPUS / "st-cards" / "default_Seraphina__3e131556.png"
    result = convert(png.read_bytes(), png.name)[0]
    assert "'ccv3' chunk" in result.format
    assert result.document["opening"].startswith("*You wake")
    assert len(result.document["story_cards"]) == 4
    assert "{{char}}" not in str(result.document) and "{{user}}" not in str(result.document)


def test_chub_lexicon_is_not_lost() -> None:
    png = CORPUS / "st-cards" / "Aira __ Sweet Hydromancer Friend.png"
    result = convert(png.read_bytes(), png.name)[0]
    assert len(result.document["story_cards"]) >= 10  # 1 entry + 10 lexicon items


IMPORTS = [p for p in DATA if p.name not in REFUSED]


@pytest.mark.parametrize("path", IMPORTS, ids=lambda p: p.name)
def test_corpus_file_saves_through_every_door(path, client, tk, tmp_path, isolated_home) -> None:
    """Every real export imports and saves alike through the API, the web form and
    `talekeeper import-card` (the doors share one converter; this walks each door)."""
    from typer.testing import CliRunner

    from talekeeper.cli import app
    from talekeeper.interop.imports import own_scenarios

    raw = path.read_bytes()
    api = client.post("/api/interop/import", params={"filename": path.name}, content=raw)
    assert api.status_code == 200, api.text[:300]
    items = api.json()["items"]
    for item in items:
        assert item["errors"] == []
        saved = client.post("/api/interop/save", json={"scenario": item["scenario"]})
        assert saved.status_code == 201, saved.text[:300]
    page = client.post(
        "/interop/import", files={"file": (path.name, raw, "application/octet-stream")}
    )
    assert page.status_code == 200
    for item in items:
        done = client.post(
            "/interop/save", data={"document": json.dumps(item["scenario"])}, follow_redirects=False
        )
        assert done.status_code == 303, done.text[:300]
    before = len(own_scenarios(tk))
    copy = tmp_path / path.name
    copy.write_bytes(raw)
    done = CliRunner().invoke(
        app, ["import-card", str(copy), "--yes", "--data-dir", str(isolated_home)]
    )
    assert done.exit_code == 0, done.output[-500:]
    assert len(own_scenarios(tk)) == before + len(items)
