"""Views of scenarios and the files that carry them: the library, a scenario with its
document, checks, exports, previews of other apps' files, Character Cards.

Built by `service/scenarios.py` and `interop/imports.py`. A scenario's document is its
own published schema (`/api/schemas/scenario`), kept as JSON here.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from talekeeper.views.base import View
from talekeeper.views.state import CreationOptions

DOCUMENT = "The scenario document (`/api/schemas/scenario`)."


class OriginSummary(View):
    """A place the story may start from."""

    id: str
    title: str
    description: str


class ScenarioSummary(View):
    """A scenario as the library lists it."""

    id: str
    title: str
    description: str
    builtin: bool = Field(description="Built-in scenarios are read-only: duplicate one to edit it.")
    placeholders: list[dict[str, Any]] = Field(
        description="The `${key}` questions asked when an adventure starts."
    )
    tags: list[str]
    origins: list[OriginSummary] = Field(description="Where an adventure may start.")


class ScenarioInLibrary(ScenarioSummary):
    """A scenario as the scenarios page lists it."""

    cards: int = Field(description="How many story cards it has.")
    has_rules: bool = Field(description="Whether it declares stats and rules.")


class ClassOffer(View):
    """A class the start form offers, with the origins that allow it."""

    model_config = {"extra": "allow"}

    id: str
    name: str | None = None
    origins: list[str] = Field(description="The origins that allow it; empty: every origin.")


class CreationOffer(CreationOptions):
    """Character creation as the start form offers it: classes with the origins that allow them."""

    classes: list[ClassOffer]  # type: ignore[assignment]


class ScenarioListed(ScenarioSummary):
    """A scenario as the start form offers it."""

    persona: dict[str, Any] = Field(
        description="The scenario's persona (name, pronouns, description)."
    )
    creation: CreationOffer | None = Field(description="Character creation; null when it has none.")


class Scenario(ScenarioSummary):
    """A scenario with its document."""

    data: dict[str, Any] = Field(description=DOCUMENT)


class ScenarioImported(Scenario):
    """A scenario made from an imported file."""

    notes: list[str] = Field(description="What was adjusted (a fresh id, say).")


class ScenarioSaved(Scenario):
    """A reviewed import saved as a scenario (or its story cards added to one)."""

    added: int | None = Field(None, description="With `into`: how many story cards were added.")


class ScenarioCheck(View):
    """Whether a scenario document is valid, and every mistake by path."""

    valid: bool
    errors: list[str] = Field(
        description="Every mistake, each with its path (`rules.stats.world.storm.max: …`)."
    )


class ScenarioFile(View):
    """A scenario as a file (`talekeeper-scenario`, version 1)."""

    format: str
    version: int
    scenario: dict[str, Any] = Field(description=DOCUMENT)


class ReportLine(View):
    """One line of an import's report: what became of a part of the file."""

    field: str = Field(description="Where in the file.")
    status: str = Field(description="imported, approximated or dropped.")
    detail: str
    count: int | None = None


class ImportItem(View):
    """One scenario a file would become, with its report and mistakes."""

    format: str = Field(description="What the file was recognised as.")
    title: str
    exact: bool = Field(description="A talekeeper document, taken as it is.")
    scenario: dict[str, Any] = Field(description=DOCUMENT)
    report: list[ReportLine]
    errors: list[str] = Field(description="Mistakes the document would be refused for, by path.")
    story_cards: int
    origins: int


class ImportPreview(View):
    """What a file would become, with its report. Nothing is saved."""

    filename: str
    format: str
    items: list[ImportItem] = Field(description="One per scenario the file holds.")


class OwnScenario(View):
    """One of the player's own scenarios (not built in), as a choice to add cards to."""

    id: str
    title: str


class CharacterCard(View):
    """A Character Card V3 (`chara_card_v3`)."""

    spec: str
    spec_version: str
    data: dict[str, Any] = Field(
        description="The card's fields, as the Character Card V3 specification names them."
    )
