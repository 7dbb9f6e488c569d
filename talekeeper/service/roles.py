"""Who answers a model call, sharing one canon log (seed 003 "Per-role injection";
docs/architecture.md "Context and memory").

    narrator  the log only — never any character's private knowledge
    npc       the log + that character's persona, private `knowledge` and `moves`, when the
              player addresses them ("ask Tobin about the key", a Say opening with their
              name, or an explicit Talk); its proposals are validated like any other
    banter    a companion's one-line remark drawing on the strongest memorable moment
    state     the structured state pass: the narrator's prompt, extended by a question
              naming the ids and stat paths its answer must write

Every role's prompt is built by the one builder, `service/context.build`, from the turn's
one start, so they share one canon log; a role differs only in the instructions that open
the prompt (`Role.adjust_plot` replaces the narrator's) and in what of the canon it takes.
A character's knowledge lives in the rules' cast, never in the state document, and only
`npc_instructions` reads it — so it can enter no prompt but that character's own call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.context import insights
from talekeeper.state import Document, Rules, band_label
from talekeeper.state.canon import banter_moment
from talekeeper.state.rules import CastMember
from talekeeper.store.models import TurnInsight
from talekeeper.story.actions import ActionError, talk_text

BANTER_EVERY = 3
"""A companion speaks up at most every third turn (on turns divisible by it)."""
_ADDRESS = re.compile(
    r"^\s*(?:ask|tell|talk to|talk with|speak to|speak with|question|greet|answer|reply to)\s+(.+)$",
    re.I,
)


@dataclass(frozen=True)
class Role:
    """Who a model call speaks for. `instructions` replace the narrator's instructions."""

    name: str  # narrator | npc | banter
    who: str | None = None
    instructions: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name}:{self.who}" if self.who else self.name

    def adjust_plot(self, plot: dict[str, Any]) -> dict[str, Any]:
        if self.instructions is None:
            return plot
        return {**plot, "narrator_instructions": self.instructions}


NARRATOR = Role("narrator")
STATE_PASS = Role("state")


def _names(member: CastMember, document: Document) -> list[str]:
    entity = document.entities.get(member.id)
    names = [member.name, member.id, *(entity.aliases if entity else [])]
    if entity is not None:
        names.insert(0, entity.name)
    return [n for n in dict.fromkeys(names) if n and len(n) >= 3]


def _match(text: str, rules: Rules, document: Document, *, at_start: bool) -> CastMember | None:
    lowered = text.strip().lower()
    best: tuple[int, CastMember] | None = None
    for member in rules.cast.values():
        if member.id not in document.entities:
            continue
        for name in _names(member, document):
            name_l = name.lower()
            hit = (
                lowered.startswith(name_l)
                if at_start
                else re.search(rf"\b{re.escape(name_l)}\b", lowered) is not None
            )
            if hit and (best is None or len(name_l) > best[0]):
                best = (len(name_l), member)
    return best[1] if best else None


def addressed(
    kind: str, text: str, document: Document, rules: Rules, in_scene_ids: list[str]
) -> CastMember | None:
    """The character the player speaks to this turn, if any.

    Talk names them ("Tobin: …"); a Do that asks, tells or talks to someone in scene; a Say
    that opens with the name of someone in scene ("Maren, how much?"), or any Say when
    exactly one character with a voice is in scene. Raises ActionError for a Talk to
    someone with no voice of their own here.
    """
    if not rules.cast:
        if kind == "talk":
            raise ActionError("No one in this story has a voice of their own to talk to; use Say.")
        return None
    scene = set(document.scene.present) | set(in_scene_ids)
    if kind == "talk":
        who = text.partition(":")[0]
        member = _match(who, rules, document, at_start=True)
        if member is None:
            voices = ", ".join(m.name for m in rules.cast.values() if m.id in document.entities)
            raise ActionError(
                f"No one called {who.strip()!r} to talk to; you can talk to: {voices}."
            )
        return member
    if kind == "do":
        found = _ADDRESS.match(text)
        member = _match(found.group(1), rules, document, at_start=True) if found else None
        return member if member is not None and member.id in scene else None
    if kind == "say":
        member = _match(text.strip().strip('"“'), rules, document, at_start=True)
        if member is not None and member.id in scene:
            return member
        voiced = [m for m in rules.cast.values() if m.id in scene and m.id in document.entities]
        return voiced[0] if len(voiced) == 1 else None
    return None


def _called(member: CastMember, document: Document) -> str:
    """A cast member's name as the story now has it (a rename in the state wins), for the
    openings of both an NPC's and a companion's call."""
    entity = document.entities.get(member.id)
    return entity.name if entity is not None else member.name


def npc_instructions(member: CastMember, document: Document, rules: Rules) -> str:
    """The opening of an NPC's own call: who they are, what they privately know, what
    they may do, and how they feel about the player (band words for hidden stats)."""
    name = _called(member, document)
    lines = [
        f"You are {name}, a character in an interactive story, answering the player who has just "
        f"spoken to you. Reply as {name} only: one to three sentences of what {name} says (in "
        f"quotes) and does. Never speak or act for the player, and never narrate anyone else.",
    ]
    if member.persona:
        lines.append(f"Who {name} is: {member.persona}")
    elif member.description:
        lines.append(f"Who {name} is: {member.description}")
    if member.knowledge:
        lines.append(
            f"What {name} knows (private — {name} reveals it only when they would, to someone they trust):"
        )
        lines += [f"- {k}" for k in member.knowledge]
    if member.moves:
        lines.append(f"What {name} may do in this conversation:")
        lines += [f"- {m}" for m in member.moves]
    feelings = []
    for stat, rule in rules.stats.npcs.get(member.id, {}).items():
        live = document.stats.npcs.get(member.id, {}).get(stat)
        value = live.value if live is not None else rule.initial
        label = band_label(rule, value) if rule.numeric else str(value)
        if label:
            feelings.append(f"{stat}: {label}")
    if feelings:
        lines.append(f"{name} toward the player — " + "; ".join(feelings) + ".")
    return "\n".join(lines)


def banter_instructions(member: CastMember, document: Document, moment_text: str) -> str:
    name = _called(member, document)
    lines = [
        f"You are {name}, the player's travelling companion. Add one short remark of {name}'s (one "
        f"sentence, in quotes, with at most a small gesture) on what just happened. {name} has not "
        f"forgotten this, and may needle the player about it: {moment_text}",
    ]
    if member.persona:
        lines.append(f"Who {name} is: {member.persona}")
    return "\n".join(lines)


def role_for_turn(
    kind: str, text: str, document: Document, rules: Rules, in_scene_ids: list[str]
) -> tuple[Role, str]:
    """Which role answers this action (read in step 2 (load)): the addressed character,
    else the narrator; and the action's text, with a Talk's addressee written as their name."""
    member = addressed(kind, text, document, rules, in_scene_ids)
    if member is None:
        return NARRATOR, text
    if kind == "talk":
        text = talk_text(document.entities[member.id].name, text.partition(":")[2])
    return Role("npc", member.id, npc_instructions(member, document, rules)), text


def banter_due(rules: Rules, turn: int) -> bool:
    """It is a companion's turn to speak, in a cast that has one (asked before the state
    after the turn is read: most turns have no remark)."""
    return turn % BANTER_EVERY == 0 and any(m.companion for m in rules.cast.values())


def banter_role(
    document: Document, rules: Rules, turn: int, in_scene_ids: list[str]
) -> Role | None:
    """A companion's remark, when one is in scene, it is their turn to speak and a moment
    is strong enough to raise."""
    if not banter_due(rules, turn):
        return None
    scene = set(document.scene.present) | set(in_scene_ids)
    companions = [
        m
        for m in rules.cast.values()
        if m.companion and m.id in scene and m.id in document.entities
    ]
    moment = banter_moment(document, turn)
    if not companions or moment is None:
        return None
    return Role(
        "banter", companions[0].id, banter_instructions(companions[0], document, moment.text)
    )


@dataclass(frozen=True)
class ExtraCall:
    """Another role's call for a turn, as Insights keeps it: its prompt, what it
    answered, and what the guards took out of that (empty: nothing)."""

    role: Role
    prompt: str
    answer: str = ""
    note: str = ""


def calls_record(
    session: Session, adventure_id: int, role: Role, extra: list[ExtraCall]
) -> dict[str, Any]:
    """Which role wrote a turn's main call, and every other role's prompt and answer (kept
    by digest, like all Insights texts) so Insights shows each one: keys for the turn's
    record."""
    calls, texts = [], {}
    for call in extra:
        entry = {"role": call.role.label}
        for key, text in (("h", call.prompt), ("a", call.answer)):
            entry[key] = digest = insights.text_digest(text)
            texts[digest] = text
        if call.note:
            entry["note"] = call.note
        calls.append(entry)
    insights.store_texts(session, adventure_id, texts)
    return {"role": role.label, "calls": calls}


def record_calls(session: Session, adventure_id: int, node_id: int, extra: list[ExtraCall]) -> None:
    """Add role calls made after a turn was written to its record: a companion's remark,
    made in step 7 (later)."""
    row = session.get(TurnInsight, node_id)
    if row is None or not extra:
        return
    made = calls_record(session, adventure_id, NARRATOR, extra)["calls"]
    row.data = {**row.data, "calls": [*(row.data.get("calls") or []), *made]}


def role_calls(session: Session, node_id: int, adventure_id: int) -> list[dict[str, str | None]]:
    """Every extra role call recorded for a turn, with its prompt text and its answer
    (None: recorded before answers were kept)."""
    row = session.get(TurnInsight, node_id)
    if row is None:
        return []
    calls = row.data.get("calls") or []
    wanted = {c[k] for c in calls for k in ("h", "a") if c.get(k)}
    texts = insights.texts_for(session, adventure_id, wanted)
    return [
        {
            "role": c["role"],
            "prompt": texts.get(c["h"], ""),
            "answer": texts.get(c["a"]) if c.get("a") else None,
            "note": c.get("note"),
        }
        for c in calls
    ]
