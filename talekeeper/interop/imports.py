"""Import what players own (cards, lorebooks, other apps' stories) as scenarios, in two
steps: `preview` converts and reports, saving nothing; `save` stores the reviewed
document (checked whole, like any scenario). Export a scenario as a Character Card V3.
"""

from __future__ import annotations

import logging
from typing import Any

from talekeeper.interop import card_export
from talekeeper.interop.containers import Refused
from talekeeper.interop.detect import Converted, convert
from talekeeper.service import scenarios
from talekeeper.service.app import Talekeeper
from talekeeper.views.scenarios import (
    ImportItem,
    ImportPreview,
    OwnScenario,
    ScenarioSaved,
)

__all__ = [
    "Refused",
    "add_cards",
    "card_json",
    "card_png",
    "convert_file",
    "own_scenarios",
    "preview",
    "save",
]
log = logging.getLogger(__name__)


def convert_file(raw: bytes, filename: str = "") -> list[Converted]:
    """The one converter behind every door (the web form, the API, `talekeeper
    import-card`). A converter must refuse what it cannot read with `Refused`; anything
    else it raises is a bug in talekeeper, logged here and answered as a refusal with its
    reason, never as a server error."""
    try:
        return convert(raw, filename)
    except Refused:
        raise
    except Exception as exc:
        log.exception("converting %r (%d bytes) failed unexpectedly", filename, len(raw))
        reason = f"{type(exc).__name__}: {str(exc)[:200]}".rstrip(": ")
        raise Refused(
            f"talekeeper could not read this file ({reason}). This is talekeeper's fault, not the file's; the error was logged."
        ) from None


def preview(tk: Talekeeper, raw: bytes, filename: str = "") -> ImportPreview:
    """What the file would become, with its report. Raises Refused. Writes nothing."""
    results = convert_file(raw, filename)
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
                ImportItem.model_validate(
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
            )
        session.rollback()
    return ImportPreview(
        filename=filename, format=results[0].format if results else "", items=items
    )


def save(tk: Talekeeper, document: dict[str, Any]) -> ScenarioSaved:
    """Store a reviewed document as the player's own scenario (a fresh id if taken)."""
    with tk.db.session() as session:
        if not isinstance(document, dict):
            raise scenarios.ScenarioInvalid(["(scenario): must be a JSON object"])
        wanted = document.get("id") if isinstance(document.get("id"), str) else "imported"
        row = scenarios.create_scenario(
            session, {**document, "id": scenarios.free_id(session, wanted)}
        )
        return ScenarioSaved.model_validate({**scenarios.scenario_summary(row), "data": row.data})


def add_cards(tk: Talekeeper, scenario_id: str, document: dict[str, Any]) -> ScenarioSaved:
    """Add a reviewed import's story cards to one of the player's own scenarios (a World
    Info file for a card's world, say). The scenario is checked whole, as any edit."""
    cards = document.get("story_cards") if isinstance(document, dict) else None
    if not isinstance(cards, list) or not cards:
        raise scenarios.ScenarioInvalid(["story_cards: this import has no story cards to add"])
    with tk.db.session() as session:
        row = scenarios.get_scenario(session, scenario_id)
        data = {**row.data, "story_cards": [*(row.data.get("story_cards") or []), *cards]}
        row = scenarios.update_scenario(session, scenario_id, data)
        return ScenarioSaved.model_validate(
            {**scenarios.scenario_summary(row), "data": row.data, "added": len(cards)}
        )


def own_scenarios(tk: Talekeeper) -> list[OwnScenario]:
    with tk.db.session() as session:
        return [
            OwnScenario(id=s.id, title=s.title)
            for s in scenarios.list_scenarios(session)
            if not s.builtin
        ]


def card_json(tk: Talekeeper, scenario_id: str) -> tuple[dict[str, Any], str]:
    with tk.db.session() as session:
        row = scenarios.get_scenario(session, scenario_id)
        return card_export.to_card(row.data), row.id


def card_png(tk: Talekeeper, scenario_id: str) -> tuple[bytes, str]:
    card, row_id = card_json(tk, scenario_id)
    return card_export.to_png(card), row_id
