"""The starter adventure: a short story already under way, for a newcomer to open and go on.

It is written for talekeeper, by hand (`scripts/build_starter.py` holds its text and plays it
through the real turn pipeline), and shipped as an adventure file in the package: opening it
imports a fresh copy, with its takes, its two lines, a Save Point, the change chips and
every turn's Insights, ready to continue with whatever model is set up.
"""

from __future__ import annotations

from pathlib import Path

from talekeeper.interop import bundles
from talekeeper.service.app import Talekeeper

STARTER = Path(__file__).parents[1] / "starter" / "greywater.talekeeper-adventure.jsonl.gz"


def open_starter(tk: Talekeeper) -> bundles.ImportResult:
    """A new copy of the starter adventure (each open is an adventure of its own)."""
    return bundles.import_path(tk, STARTER)
