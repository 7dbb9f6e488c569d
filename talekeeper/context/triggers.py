"""Story cards and in-scene characters, triggered the way AI Dungeon players expect.

A card's triggers are comma-separated words or phrases. Matching is case-insensitive and
partial-word (`boat` fires on `boats`, `key` on `keeper`), but spaces inside a phrase
count (`lantern room` needs the space). The text scanned is the *recent window*: the
player's current action plus the last few turns (actions and narration) before it.

Because the reply being written is not in the window yet, a card that the narration
mentions enters the prompt on the next turn, and it stays while its trigger word is still
inside the window. Characters from the state document become "in scene" the same way,
by their name or an alias; only in-scene characters' stats are shown to the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_WINDOW_TURNS = 4
"""How many past turns (each: action and narration) the trigger scan reads."""

MAX_CARDS = 5000
"""A sanity cap on story cards per adventure (AI Dungeon allows 5,000)."""


@dataclass(frozen=True)
class WindowPart:
    """One piece of scanned text and where it came from (for Insights)."""

    where: str  # "your action" | "turn 12 (action)" | "turn 12 (narration)"
    text: str


@dataclass(frozen=True)
class TriggerWindow:
    parts: tuple[WindowPart, ...]

    def find(self, phrase: str) -> WindowPart | None:
        """The newest part containing `phrase` (already lower-cased), or None."""
        for part in self.parts:
            if phrase in part.text:
                return part
        return None


@dataclass(frozen=True)
class Triggered:
    """A card (or character) that fired: which one, on which word, found where."""

    index: int  # position in the adventure's card list (or the character's id)
    key: str
    trigger: str
    where: str


def recent_window(
    history: Sequence[tuple[int, str, str]],
    action_line: str,
    turns: int = DEFAULT_WINDOW_TURNS,
) -> TriggerWindow:
    """The text the triggers are matched against, newest first.

    history: (depth, action line, narration) of past turns in story order.
    """
    parts = [WindowPart("your action", action_line.lower())] if action_line else []
    for depth, action, narration in reversed(list(history)[-turns:] if turns > 0 else []):
        if narration:
            parts.append(WindowPart(f"turn {depth} (narration)", narration.lower()))
        if action:
            parts.append(WindowPart(f"turn {depth} (action)", action.lower()))
    return TriggerWindow(tuple(parts))


def split_triggers(triggers: str | Iterable[str] | None) -> list[str]:
    """`"Maren, ferrywoman, ferry"` → `["maren", "ferrywoman", "ferry"]` (empty ones dropped)."""
    if triggers is None:
        return []
    raw = triggers.split(",") if isinstance(triggers, str) else list(triggers)
    found = []
    for item in raw:
        phrase = str(item).strip().lower()
        if phrase and phrase not in found:
            found.append(phrase)
    return found


def match_cards(cards: Sequence[Mapping[str, Any]], window: TriggerWindow) -> list[Triggered]:
    """Cards whose trigger appears in the window, most recently mentioned first.

    A card with an empty entry or no triggers never fires; a card fires once however many
    of its triggers appear (the one reported is the newest mention).
    """
    fired: list[tuple[int, Triggered]] = []
    order = {id(part): n for n, part in enumerate(window.parts)}
    for index, card in enumerate(cards[:MAX_CARDS]):
        if not str(card.get("entry") or "").strip():
            continue
        best: tuple[int, str, WindowPart] | None = None
        for phrase in split_triggers(card.get("triggers") or card.get("keys")):
            part = window.find(phrase)
            if part is not None and (best is None or order[id(part)] < best[0]):
                best = (order[id(part)], phrase, part)
        if best is not None:
            name = str(card.get("name") or f"card {index + 1}")
            fired.append((best[0], Triggered(index, name, best[1], best[2].where)))
    fired.sort(key=lambda pair: (pair[0], pair[1].index))
    return [t for _, t in fired]


def match_characters(
    characters: Iterable[tuple[str, Sequence[str]]], window: TriggerWindow
) -> list[Triggered]:
    """Which characters are "in scene": named (or aliased) in the window.

    characters: (id, [name, alias, ...]). Names shorter than 3 letters are ignored, so an
    alias like "you" or "he" does not put everyone in every scene.
    """
    fired = []
    for char_id, names in characters:
        for name in names:
            phrase = str(name).strip().lower()
            if len(phrase) < 3 or phrase == "you":
                continue
            part = window.find(phrase)
            if part is not None:
                fired.append(Triggered(-1, char_id, phrase, part.where))
                break
    return fired


def characters_in(
    document: Mapping[str, Any] | None, protagonist: str = "player"
) -> list[tuple[str, list[str]]]:
    """(id, names) for every non-player character in a state document (plain JSON form):
    an entity with NPC stats, or whose type reads as a person."""
    if not document:
        return []
    npc_ids = set(((document.get("stats") or {}).get("npcs") or {}).keys())
    entities = document.get("entities") or {}
    items = (
        entities.items() if isinstance(entities, Mapping) else ((e.get("id"), e) for e in entities)
    )
    found = []
    for entity_id, entity in items:
        if not isinstance(entity, Mapping) or entity_id in (protagonist, None):
            continue
        kind = str(entity.get("type", "")).lower()
        if entity_id not in npc_ids and kind not in {"person", "character", "npc", "creature"}:
            continue
        names = [str(entity.get("name") or "")] + [str(a) for a in entity.get("aliases") or []]
        found.append((str(entity_id), [n for n in names if n]))
    return found
