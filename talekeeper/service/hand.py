"""The player's hand on their own turn: "Write my turn" and "Suggest".

"Write my turn" drafts the player's next action in the player's own voice — a Do, a Say
or a Story line, as the box is set — and puts it in the box; it is never sent by itself.
"Suggest" offers three short things the player could do next. Each is a role call of its
own (roles `player` and `suggest`), built by the one prompt builder from the same start a
turn reads (service/context: the canon, the story so far, the state), so it knows what
the narrator knows and no more. Its answer passes the guards every generated text passes
(service/guards: no echo of the prompt's notes, no protocol, no loop), and the call — its
prompt and what it answered — is kept for Insights ("Your hand" on the next turn's page).
Nothing of the story changes: no turn is written, no lock is taken; while a turn is being
told the hand is refused (409), and it waits out a turn's background step.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from talekeeper.context import echo, insights
from talekeeper.errors import Invalid
from talekeeper.service import guards
from talekeeper.service.context import Call, build, prompt_text
from talekeeper.service.roles import Role
from talekeeper.state import visible_prefix
from talekeeper.store import setting_rows
from talekeeper.store.models import Setting
from talekeeper.story.actions import DRAFTED
from talekeeper.views.context import Draft, HandCall, Suggestions

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

KINDS = DRAFTED
DRAFT_TOKENS, SUGGEST_TOKENS = 120, 120
MAX_ACTION = 4000
MAX_SUGGESTION = 100  # characters: a suggestion is a button
KEPT_CALLS = 6  # the latest hand calls kept per adventure for Insights
_NUMBERING = re.compile(r"^\s*(?:[-*•]|\d+[.)]|[a-c][.)])\s*")
_SPEAKER = re.compile(r"^\s*(?:you|player|action|suggestion|option)\s*\d*\s*:\s*", re.I)

_WRITE_WORDS = {
    "do": (
        "what the player's character does next, as the player types it after “What do you "
        "do?”: a short phrase that starts with a verb (for example “try the rusted "
        "gate”), without “you” or “I” in front"
    ),
    "say": (
        "what the player's character says next, in their own voice: the words alone, one or "
        "two sentences, without quotation marks or a speaker's name"
    ),
    "story": (
        "the next line of the story as the player would write it: one or two sentences in "
        "the second person (“You …”), about the player's character only"
    ),
}


class HandRefused(Invalid):
    pass


def write_role(kind: str) -> Role:
    """The player's own voice, writing their next action (never the narrator's part)."""
    return Role(
        "player",
        instructions=(
            "You help the player of this interactive story write their own next turn. Write "
            f"{_WRITE_WORDS[kind]}. Write it as the player's character would act here, from "
            "what the story and its state say; never decide what happens because of it, never "
            "speak for anyone else, and write nothing but the action itself."
        ),
    )


SUGGEST_ROLE = Role(
    "suggest",
    instructions=(
        "You help the player of this interactive story choose their next turn. Offer three "
        "different things the player's character could do next, fitting the scene and what "
        "the story's state says: each a short phrase that starts with a verb (at most twelve "
        "words, for example “try the rusted gate”), one a line, numbered 1 to 3. "
        "Write nothing else."
    ),
)


def hand_key(adventure_id: int) -> str:
    return f"adventure_hand:{adventure_id}"


async def _call(
    tk: Talekeeper, adventure_id: int, role: Role, max_tokens: int
) -> tuple[str, str, list[echo.Removed], str]:
    """One hand call: (its prompt as text, what it answered, what the guards took out,
    the guarded text)."""
    from talekeeper.service.turns import load_turn, unicode_safe

    await tk.locks.wait_until_told(adventure_id)  # never beside a turn being told
    start = await asyncio.to_thread(load_turn, tk, adventure_id, "continue", "", None)
    provider = tk.provider(start.model)
    # "off": the state as it is, without the vocabulary a narrator would write changes in
    prepared = await build(provider, start.context, Call(role, "off"))
    request = prepared.request.model_copy(update={"max_tokens": max_tokens})
    answer = unicode_safe(await provider.complete(request))
    guarded = guards.finish(
        guards.for_call(prepared, start.context.before), visible_prefix(answer).strip()
    )
    return prompt_text(prepared), answer, guarded.removed, guarded.text.strip()


def _action_text(text: str, kind: str) -> str:
    """The draft as the box takes it: one paragraph, no speaker, no quotes around a Say."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    line = _SPEAKER.sub("", _NUMBERING.sub("", first)).strip()
    if kind == "do":
        line = re.sub(r"^(?:>\s*)?(?:you|i)\s+", "", line, flags=re.I)
    if kind == "say":
        line = line.strip("\"“”'")
    return line[:MAX_ACTION]


def _suggestions(text: str) -> list[str]:
    found: list[str] = []
    for raw in text.splitlines():
        line = _SPEAKER.sub("", _NUMBERING.sub("", raw)).strip().strip('"“”')
        line = re.sub(r"^(?:you|i)\s+", "", line, flags=re.I).rstrip(".")
        if not line or len(line) > MAX_SUGGESTION:
            continue
        if line.lower() not in (f.lower() for f in found):
            found.append(line[0].upper() + line[1:])
        if len(found) == 3:
            break
    return found


def _note(removed: list[echo.Removed]) -> str:
    return echo.summary(removed) if removed else ""


def _remember(
    tk: Talekeeper, adventure_id: int, what: str, prompt: str, answer: str, note: str
) -> None:
    """Keep the call for Insights: its prompt and answer by digest, the latest few."""
    with tk.db.session() as session:
        entry: dict[str, Any] = {
            "role": what,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        texts = {}
        for key, text in (("h", prompt), ("a", answer)):
            entry[key] = digest = insights.text_digest(text)
            texts[digest] = text
        insights.store_texts(session, adventure_id, texts)
        if note:
            entry["note"] = note
        row = session.get(Setting, hand_key(adventure_id))
        kept = list((row.value or {}).get("calls") or []) if row is not None else []
        setting_rows.write(session, hand_key(adventure_id), {"calls": [*kept, entry][-KEPT_CALLS:]})


async def write_turn(tk: Talekeeper, adventure_id: int, kind: str = "do") -> Draft:
    """A draft of the player's next action, for the box (nothing is sent or written)."""
    if kind not in KINDS:
        raise HandRefused(f"“Write my turn” writes a Do, a Say or a Story line, not {kind!r}.")
    prompt, answer, removed, text = await _call(tk, adventure_id, write_role(kind), DRAFT_TOKENS)
    draft = _action_text(text, kind)
    note = _note(removed)
    await asyncio.to_thread(_remember, tk, adventure_id, "player", prompt, answer, note)
    if not draft:
        raise HandRefused("The model wrote no usable action this time; try again.")
    return Draft(kind=kind, text=draft, note=note)


async def suggest(tk: Talekeeper, adventure_id: int) -> Suggestions:
    """Three short things the player could do next (fewer when the model offered fewer)."""
    prompt, answer, removed, text = await _call(tk, adventure_id, SUGGEST_ROLE, SUGGEST_TOKENS)
    found = _suggestions(text)
    note = _note(removed)
    await asyncio.to_thread(_remember, tk, adventure_id, "suggest", prompt, answer, note)
    if not found:
        raise HandRefused("The model offered no usable suggestions this time; try again.")
    return Suggestions(suggestions=found, note=note)


def recent_calls(tk: Talekeeper, adventure_id: int) -> list[HandCall]:
    """The latest hand calls with their prompt and answer, newest first (Insights)."""
    with tk.db.session() as session:
        row = session.get(Setting, hand_key(adventure_id))
        calls = list((row.value or {}).get("calls") or []) if row is not None else []
        wanted = {c[k] for c in calls for k in ("h", "a") if c.get(k)}
        texts = insights.texts_for(session, adventure_id, wanted)
    return [
        HandCall(
            role="Write my turn" if c.get("role") == "player" else "Suggest",
            at=c.get("at"),
            prompt=texts.get(c.get("h"), ""),
            answer=texts.get(c.get("a"), ""),
            note=c.get("note"),
        )
        for c in reversed(calls)
    ]
