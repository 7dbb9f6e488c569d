"""The scenarios shipped with the package, kept current in the database at every start.

Read from `talekeeper/scenarios/*.json` and installed in the caller's transaction: the
application object installs them while it is built (service/app.py), so this module takes a
session, never the application object (service/scenarios.py, which lists and edits every
scenario, takes it).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.store.models import Scenario


def builtin_scenarios() -> list[dict[str, Any]]:
    folder = resources.files("talekeeper") / "scenarios"
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            found.append(json.loads(entry.read_text(encoding="utf-8")))
    return found


def install_builtins(session: Session) -> None:
    """Keep the shipped scenarios current in the database (they are read-only there)."""
    for data in builtin_scenarios():
        row = session.get(Scenario, data["id"])
        if row is None:
            session.add(
                Scenario(
                    id=data["id"],
                    title=data["title"],
                    description=data.get("description", ""),
                    data=data,
                    builtin=True,
                )
            )
        elif row.builtin and row.data != data:
            row.title, row.description, row.data = data["title"], data.get("description", ""), data
