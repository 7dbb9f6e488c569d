"""The reference layer: turn the names a model writes into the ids the document keys on.

Models write "Gwen", "the ranger" or "gwen"; the document keys on `gwen`. Resolution is
case-insensitive over ids, names and aliases, and ignores a leading article. It never
picks between candidates: two matches are refused as ambiguous, naming both, and no match
is refused with the names that do exist — only `create_entity` introduces an entity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .document import PLAYER_ID, Document
from .rules import Rules

_ARTICLE = re.compile(r"^(the|a|an)\s+", re.IGNORECASE)


def norm(text: str) -> str:
    """How names are compared: case-folded, whitespace collapsed."""
    return " ".join(text.split()).casefold()


def bare(text: str) -> str:
    """`norm`, without a leading article ("the Harbourmaster" ~ "harbourmaster")."""
    return _ARTICLE.sub("", norm(text))


@dataclass(frozen=True)
class RefProblem:
    reason: str
    correction: str


def known_names(document: Document, limit: int = 20, exclude: set[str] | None = None) -> str:
    """`Name (id)` for the entities a correction should offer, scene first."""
    present = [i for i in document.scene.present if i in document.entities]
    order = list(dict.fromkeys([PLAYER_ID, *present, *document.entities]))
    shown = [i for i in order if i in document.entities and i not in (exclude or set())]
    items = [f"{document.entities[i].name} ({i})" for i in shown[:limit]]
    more = len(shown) - limit
    return ", ".join(items) + (f", and {more} more" if more > 0 else "") if items else "none"


def matches(document: Document, ref: str) -> list[str]:
    """Ids that `ref` names, at the first level that finds any: exact id, then
    case-insensitive id/name/alias, then the same without a leading article."""
    if ref in document.entities:
        return [ref]
    for key in (norm, bare):
        wanted = key(ref)
        if not wanted:
            continue
        found = [
            eid
            for eid, entity in document.entities.items()
            if wanted in {key(eid), key(entity.name), *(key(a) for a in entity.aliases)}
        ]
        if found:
            return found
    return []


def resolve_entity(document: Document, ref: str, role: str = "entity") -> str | RefProblem:
    """The id `ref` names, or why it names none (or more than one)."""
    found = matches(document, ref)
    if len(found) == 1:
        return found[0]
    if found:
        options = ", ".join(f"{document.entities[i].name} ({i})" for i in found)
        return RefProblem(
            f"{role} '{ref}' is ambiguous: it could be {options}",
            f"Name the {role} by its id: one of {', '.join(found)}.",
        )
    return RefProblem(
        f"there is no {role} called '{ref}'",
        f"Known entities: {known_names(document)}. Use one of these, or create_entity first.",
    )


@dataclass(frozen=True)
class StatRef:
    """A resolved stat path: `owner` is world, player or npc (then `npc` is its id)."""

    owner: str
    name: str
    npc: str | None = None

    @property
    def path(self) -> str:
        return f"npc.{self.npc}.{self.name}" if self.owner == "npc" else f"{self.owner}.{self.name}"


def stat_paths(rules: Rules) -> list[str]:
    """Every stat path the model may use, in declaration order."""
    paths = [f"world.{n}" for n in rules.stats.world] + [f"player.{n}" for n in rules.stats.player]
    for npc, block in rules.stats.npcs.items():
        paths += [f"npc.{npc}.{n}" for n in block]
    return paths


def resolve_stat(document: Document, rules: Rules, path: str) -> StatRef | RefProblem:
    """Resolve `world.<stat>`, `player.<stat>` or `npc.<name or id>.<stat>`."""
    head, _, rest = path.partition(".")
    owner = head.strip().casefold()
    if owner in ("npcs", "npc"):
        npc_ref, _, name = rest.rpartition(".")
        name = name.strip()
        if not npc_ref.strip():
            return _bad_path(rules, path)
        npc = resolve_entity(document, npc_ref.strip(), "NPC")
        with_stats = (
            ", ".join(
                f"{document.entities[i].name if i in document.entities else i} ({i})"
                for i in rules.stats.npcs
            )
            or "none"
        )
        if isinstance(npc, RefProblem) or npc not in rules.stats.npcs:
            return RefProblem(
                f"no NPC '{npc_ref.strip()}' has stats",
                f"NPCs with stats: {with_stats}. Address one as npc.<id>.<stat>.",
            )
        if name not in rules.stats.npcs[npc]:
            names = ", ".join(f"npc.{npc}.{n}" for n in rules.stats.npcs[npc])
            return RefProblem(
                f"{npc} has no stat '{name}'", f"{document_name(document, npc)}'s stats: {names}."
            )
        return StatRef("npc", name, npc)
    if owner in ("world", "player", "you"):
        owner = "player" if owner == "you" else owner
        name = rest.strip()
        block = getattr(rules.stats, owner)
        if name not in block:
            names = ", ".join(f"{owner}.{n}" for n in block) or "none"
            return RefProblem(
                f"{owner} has no stat '{name}'", f"{owner.capitalize()} stats: {names}."
            )
        return StatRef(owner, name)
    return _bad_path(rules, path)


def _bad_path(rules: Rules, path: str) -> RefProblem:
    paths = stat_paths(rules)
    shown = ", ".join(paths[:30]) or "none (this scenario declares no stats)"
    return RefProblem(
        f"'{path}' is not a stat path",
        f"Use world.<stat>, player.<stat> or npc.<id>.<stat>. Stats: {shown}.",
    )


def document_name(document: Document, entity_id: str) -> str:
    entity = document.entities.get(entity_id)
    return entity.name if entity else entity_id
