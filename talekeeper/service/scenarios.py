"""Scenarios: the built-in ones shipped with the package, and the player's own."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.store.models import Scenario

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ScenarioError(ValueError):
    pass


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


def list_scenarios(session: Session) -> list[Scenario]:
    return list(session.scalars(select(Scenario).order_by(Scenario.builtin.desc(), Scenario.title)))


def get_scenario(session: Session, scenario_id: str) -> Scenario:
    row = session.get(Scenario, scenario_id)
    if row is None:
        raise ScenarioError(f"No scenario with id {scenario_id!r}.")
    return row


def scenario_summary(row: Scenario) -> dict[str, Any]:
    return {
        "id": row.id,
        "title": row.title,
        "description": row.description,
        "builtin": row.builtin,
        "placeholders": row.data.get("placeholders", []),
        "tags": row.data.get("tags", []),
    }


def fill_placeholders(value: Any, answers: dict[str, str]) -> Any:
    """Replace `${key}` everywhere in a scenario value; unknown keys are left visible."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: answers.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [fill_placeholders(v, answers) for v in value]
    if isinstance(value, dict):
        return {k: fill_placeholders(v, answers) for k, v in value.items()}
    return value


def placeholder_answers(data: dict[str, Any], given: dict[str, str] | None) -> dict[str, str]:
    given = {k: str(v).strip() for k, v in (given or {}).items()}
    answers = {}
    for placeholder in data.get("placeholders", []):
        key = placeholder["key"]
        answer = given.get(key) or placeholder.get("default", "")
        if not answer:
            raise ScenarioError(f"Please answer: {placeholder.get('question', key)}")
        if len(answer) > 200:
            raise ScenarioError(f"The answer for {key!r} is too long (at most 200 characters).")
        answers[key] = answer
    return answers
