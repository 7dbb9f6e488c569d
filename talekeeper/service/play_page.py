"""The play page's reads, in one unit of work: the story's first paint, whom the player can
Talk to, and the model line (the connection in force and the sampler preset followed).

Each part has a service of its own (adventures, profiles, samplers), and each would open a
transaction and read the settings rows again: the page read them in four sessions and
resolved the connection three times, about 40% of its server time. Here one session reads
every settings row the page needs in one statement (`setting_rows.prefetch`), the
connection is resolved once, and the settings it makes travel on to the page's warm-up
(`turns.warm_next_turn`) instead of being read again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from talekeeper.llm.settings import ModelSettings
from talekeeper.service import profiles, samplers, state_engine
from talekeeper.service.adventures import PageAnswer, page_answer
from talekeeper.service.connection_in_force import in_force_keys
from talekeeper.service.unit_of_work import reading
from talekeeper.store import setting_rows
from talekeeper.views.settings import ConnectionView
from talekeeper.views.story import Voice

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper


@dataclass(frozen=True)
class Note:
    """The play page's model line: who narrates, and the sampler preset followed."""

    connection: ConnectionView
    settings: ModelSettings  # the connection in force, as pages show it (no key)
    preset: str | None
    own_presets: list[str]  # the player's own presets' names (the starters: `STARTERS`)


@dataclass(frozen=True)
class PlayPage:
    answer: PageAnswer  # the story's first paint
    voices: list[Voice]  # whom the player can Talk to
    note: Note


def _note(session: Session, tk: Talekeeper, adventure_id: int) -> Note:
    setting_rows.prefetch(session, in_force_keys(adventure_id) | samplers.choice_keys(adventure_id))
    connection, settings = profiles.connection_in(session, tk, adventure_id)
    preset, own = samplers.preset_of(session, adventure_id)
    return Note(connection, settings, preset, own)


def play_page(tk: Talekeeper, adventure_id: int) -> PlayPage:
    """What the play page shows when it opens."""
    with reading(tk, adventure_id) as (session, adventure):
        cast = state_engine.rules_of(adventure).cast.values()
        voices = [Voice(id=m.id, name=m.name) for m in cast]
        note = _note(session, tk, adventure_id)
        return PlayPage(page_answer(session, adventure, None), voices, note)


def note(tk: Talekeeper, adventure_id: int) -> Note:
    """The model line alone (after the player switched the connection or the preset)."""
    with reading(tk, adventure_id) as (session, _adventure):
        return _note(session, tk, adventure_id)
