"""Import what players own (cards, lorebooks, other apps' stories) as scenarios, in two
steps: `preview` converts and reports, saving nothing; `save` stores the reviewed
document (checked whole, like any scenario). Export a scenario as a Character Card V3.
"""

from __future__ import annotations

from typing import Any

from talekeeper.service import scenarios
from talekeeper.service.app import Talekeeper
from talekeeper.service.interop import card_export
from talekeeper.service.interop.containers import Refused
from talekeeper.service.interop.detect import convert

__all__ = ["Refused", "card_json", "card_png", "preview", "save"]


def preview(tk: Talekeeper, raw: bytes, filename: str = "") -> dict[str, Any]:
    """What the file would become, with its report. Raises Refused. Writes nothing."""
    results = convert(raw, filename)
    items = []
    with tk.db.session() as session:
        taken: set[str] = set()
        for result in results:
            wanted = str(result.document.get("id") or "") if result.exact else ""
            scenario_id = scenarios.free_id(
                session, wanted or result.title or filename or "imported"
            )
            while scenario_id in taken:  # several scenarios from one file
                scenario_id = scenarios.free_id(session, f"{scenario_id}-{len(taken) + 1}")
            taken.add(scenario_id)
            document = {**result.document, "id": scenario_id}
            errors = scenarios.check_scenario(document)
            items.append(
                {
                    "format": result.format,
                    "title": result.title,
                    "exact": result.exact,
                    "scenario": document,
                    "report": result.report,
                    "errors": errors,
                    "story_cards": len(document.get("story_cards") or []),
                    "origins": len(document.get("origins") or []),
                }
            )
        session.rollback()
    return {"filename": filename, "format": results[0].format if results else "", "items": items}


def save(tk: Talekeeper, document: dict[str, Any]) -> dict[str, Any]:
    """Store a reviewed document as the player's own scenario (a fresh id if taken)."""
    with tk.db.session() as session:
        if not isinstance(document, dict):
            raise scenarios.ScenarioInvalid(["(scenario): must be a JSON object"])
        wanted = document.get("id") if isinstance(document.get("id"), str) else "imported"
        row = scenarios.create_scenario(
            session, {**document, "id": scenarios.free_id(session, wanted)}
        )
        return {**scenarios.scenario_summary(row), "data": row.data}


def card_json(tk: Talekeeper, scenario_id: str) -> tuple[dict[str, Any], str]:
    with tk.db.session() as session:
        row = scenarios.get_scenario(session, scenario_id)
        return card_export.to_card(row.data), row.id


def card_png(tk: Talekeeper, scenario_id: str) -> tuple[bytes, str]:
    card, row_id = card_json(tk, scenario_id)
    return card_export.to_png(card), row_id
