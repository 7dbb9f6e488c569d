"""`talekeeper import-card`: the report is shown, nothing is saved until the player agrees."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from talekeeper.cli import app
from talekeeper.interop.imports import own_scenarios
from talekeeper.service.app import Talekeeper
from tests.test_interop_cards import v2_card


def test_import_card_asks_then_saves(tk: Talekeeper, tmp_path: Path, isolated_home: Path) -> None:
    card = tmp_path / "card.json"
    card.write_text(json.dumps(v2_card()))
    runner = CliRunner()
    home = ["--data-dir", str(isolated_home)]
    done = runner.invoke(app, ["import-card", str(card), *home], input="n\n")
    assert done.exit_code == 0, done.output
    assert "Not saved" in done.output and "dropped" in done.output
    assert own_scenarios(tk) == []
    done = runner.invoke(app, ["import-card", str(card), *home], input="y\n")
    assert done.exit_code == 0 and "Saved as scenario" in done.output, done.output
    assert len(own_scenarios(tk)) == 1
    done = runner.invoke(app, ["import-card", str(card), "--yes", *home])
    assert done.exit_code == 0 and len(own_scenarios(tk)) == 2


def test_import_card_refuses_bad_file(tk: Talekeeper, tmp_path: Path, isolated_home: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    done = CliRunner().invoke(
        app, ["import-card", str(bad), "--yes", "--data-dir", str(isolated_home)]
    )
    assert done.exit_code == 1 and "Nothing was imported" in done.output
    assert own_scenarios(tk) == []
