"""Plot components and story cards: the adventure's own copy, editable mid-story.

An adventure starts with the scenario's narrator instructions, AI instructions, plot
essentials, story summary, author's note, persona and story cards (copied at creation, so
editing them never changes the scenario). Every field is validated here with the same
limits the API documents. The story summary is special: the one in force is the newest
version on the path to the head (see `memory.bank`), so an edit is written as a version at
the head, and undoing past it brings the earlier summary back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from talekeeper.context.cardspec import StoryCard, card_errors, load_card, rules_in_words
from talekeeper.context.keys import split_keys
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.errors import Invalid, NotFound
from talekeeper.memory import bank
from talekeeper.service.unit_of_work import reading, writing
from talekeeper.store.models import Adventure, Node
from talekeeper.views.context import Plot, StoryCardView

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

TEXT_FIELDS = ("narrator_instructions", "ai_instructions", "plot_essentials", "author_note")


class ContextError(Invalid):
    """A request the context engine refuses; the message says why."""


class CardNotFound(NotFound):
    pass


class Persona(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "", max_length=80, description="The protagonist's name; empty turns the persona off."
    )
    pronouns: str = Field("", max_length=40, description="e.g. she/her, he/him, they/them.")
    description: str = Field("", max_length=2000, description="Who they are, in a sentence or two.")


class PlotUpdate(BaseModel):
    """Any subset of the plot components; omitted fields are left as they are."""

    model_config = ConfigDict(extra="forbid")

    narrator_instructions: str | None = Field(
        None, max_length=20000, description="How the narrator writes (sent first, every turn)."
    )
    ai_instructions: str | None = Field(
        None, max_length=20000, description="Behavioural guidance for the model (always sent)."
    )
    plot_essentials: str | None = Field(
        None,
        max_length=20000,
        description="Facts the model must always remember (AI Dungeon's 'Memory').",
    )
    story_summary: str | None = Field(
        None,
        max_length=20000,
        description="The running summary; your edit is the base of the next automatic update.",
    )
    author_note: str | None = Field(
        None,
        max_length=2000,
        description="Steering text placed a few lines before the end of history as [Author's note: …].",
    )
    persona: Persona | None = None


def plot_view(session: Session, adventure: Adventure) -> dict[str, Any]:
    plot = adventure.plot or {}
    path = bank.path_ids(session, adventure.head_node_id) if adventure.head_node_id else []
    summary = bank.summary_at(session, adventure.id, path, str(plot.get("story_summary") or ""))
    persona = plot.get("persona") or {}
    return {
        "adventure_id": adventure.id,
        **{name: str(plot.get(name) or "") for name in TEXT_FIELDS},
        "story_summary": summary.text,
        "story_summary_source": summary.label,
        "persona": {k: str(persona.get(k) or "") for k in ("name", "pronouns", "description")},
        "story_cards": len(plot.get("story_cards") or []),
    }


def update_plot(session: Session, adventure: Adventure, update: PlotUpdate) -> dict[str, Any]:
    plot = dict(adventure.plot or {})
    for name in TEXT_FIELDS:
        value = getattr(update, name)
        if value is not None:
            plot[name] = value.strip()
    if update.persona is not None:
        plot["persona"] = update.persona.model_dump()
    adventure.plot = plot
    if update.story_summary is not None:
        head = session.get(Node, adventure.head_node_id)
        assert head is not None
        path = bank.path_ids(session, head.id)
        current = bank.summary_at(session, adventure.id, path, str(plot.get("story_summary") or ""))
        if update.story_summary.strip() != current.text.strip():
            bank.set_summary(session, adventure.id, head, update.story_summary)
    session.flush()
    return plot_view(session, adventure)


def cards(adventure: Adventure) -> list[StoryCardView]:
    return [card_view(i, c) for i, c in enumerate((adventure.plot or {}).get("story_cards") or [])]


def card_view(index: int, card: dict[str, Any]) -> StoryCardView:
    model = load_card(card)
    return StoryCardView.model_validate(
        {
            "index": index,
            **model.view(),
            "trigger_list": split_keys(model.triggers),
            "rules_in_words": rules_in_words(model),
        }
    )


def _card_list(adventure: Adventure) -> list[dict[str, Any]]:
    return [dict(c) for c in (adventure.plot or {}).get("story_cards") or []]


class CardInvalid(ContextError):
    """A story card with mistakes; `errors` lists each with its field path."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("This story card has mistakes; nothing was saved. " + "; ".join(errors))


def _check(adventure: Adventure, card: StoryCard) -> None:
    """The card's own mistakes and its gates' against the adventure's rules."""
    errors = card_errors(card.dump(), adventure.rules)
    if errors:
        raise CardInvalid(errors)


def add_card(adventure: Adventure, card: StoryCard) -> StoryCardView:
    _check(adventure, card)
    items = _card_list(adventure)
    if len(items) >= MAX_CARDS:
        raise ContextError(f"An adventure holds at most {MAX_CARDS} story cards.")
    items.append(card.dump())
    adventure.plot = {**(adventure.plot or {}), "story_cards": items}
    return card_view(len(items) - 1, items[-1])


def replace_card(adventure: Adventure, index: int, card: StoryCard) -> StoryCardView:
    _check(adventure, card)
    items = _card_list(adventure)
    if not 0 <= index < len(items):
        raise CardNotFound(f"No story card {index} in this adventure.")
    items[index] = card.dump()
    adventure.plot = {**(adventure.plot or {}), "story_cards": items}
    return card_view(index, items[index])


def delete_card(adventure: Adventure, index: int) -> None:
    items = _card_list(adventure)
    if not 0 <= index < len(items):
        raise CardNotFound(f"No story card {index} in this adventure.")
    del items[index]
    adventure.plot = {**(adventure.plot or {}), "story_cards": items}


# --- entry points (each owns its transaction; edits hold the adventure's writer lock) ---------


def plot_of(tk: Talekeeper, adventure_id: int) -> Plot:
    with reading(tk, adventure_id) as (session, adventure):
        return Plot.model_validate(plot_view(session, adventure))


def edit_plot(tk: Talekeeper, adventure_id: int, update: PlotUpdate) -> Plot:
    with writing(tk, adventure_id) as (session, adventure):
        return Plot.model_validate(update_plot(session, adventure, update))


def cards_of(tk: Talekeeper, adventure_id: int) -> list[StoryCardView]:
    with reading(tk, adventure_id) as (_session, adventure):
        return cards(adventure)


def add_card_to(tk: Talekeeper, adventure_id: int, card: StoryCard) -> StoryCardView:
    with writing(tk, adventure_id) as (_session, adventure):
        return add_card(adventure, card)


def replace_card_in(
    tk: Talekeeper, adventure_id: int, index: int, card: StoryCard
) -> StoryCardView:
    with writing(tk, adventure_id) as (_session, adventure):
        return replace_card(adventure, index, card)


def delete_card_from(tk: Talekeeper, adventure_id: int, index: int) -> None:
    with writing(tk, adventure_id) as (_session, adventure):
        delete_card(adventure, index)
