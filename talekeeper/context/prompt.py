"""Assembling what the model sees each turn.

The stable sections (instructions, persona, plot essentials) come first and stay
byte-identical between turns so llama.cpp, Ollama and vLLM reuse their prompt cache; the
history and the player's action come last. Every section keeps its source and token cost
so Insights can show exactly what was sent and why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from talekeeper.llm.base import GenerationRequest, Message
from talekeeper.story.actions import format_action

CONTINUE_CUE = "(The story continues.)"
BEGIN_CUE = "(Begin the story.)"


@dataclass
class Section:
    name: str
    text: str
    why: str
    tokens: int = 0


@dataclass
class HistoryTurn:
    action_kind: str
    action_text: str
    narration: str

    @property
    def action_line(self) -> str:
        return format_action(self.action_kind, self.action_text)


@dataclass
class Assembly:
    sections: list[Section]
    history: list[HistoryTurn]
    action_line: str
    budget: int
    history_included: int = 0
    history_dropped: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sections": [asdict(s) for s in self.sections],
            "budget": self.budget,
            "total_tokens": sum(s.tokens for s in self.sections),
            "history_included": self.history_included,
            "history_dropped": self.history_dropped,
            "notes": self.notes,
        }


def system_text(plot: dict[str, Any]) -> list[Section]:
    sections = []
    persona = plot.get("persona") or {}
    if plot.get("narrator_instructions"):
        sections.append(Section("narrator_instructions", plot["narrator_instructions"], "always sent"))
    if persona.get("name"):
        who = f"The player character is {persona['name']}"
        if persona.get("pronouns"):
            who += f" ({persona['pronouns']})"
        who += "."
        if persona.get("description"):
            who += " " + persona["description"]
        sections.append(Section("persona", who, "always sent"))
    if plot.get("ai_instructions"):
        sections.append(Section("ai_instructions", plot["ai_instructions"], "always sent"))
    if plot.get("plot_essentials"):
        sections.append(Section("plot_essentials", "Essentials: " + plot["plot_essentials"], "always sent"))
    return sections


async def assemble(
    plot: dict[str, Any],
    history: Sequence[HistoryTurn],
    action_kind: str,
    action_text: str,
    budget: int,
    count_tokens: Callable[[str], Awaitable[int]],
    reserve_for_reply: int = 0,
) -> Assembly:
    """Fit instructions, then as much history as the budget allows (newest first)."""
    sections = system_text(plot)
    for section in sections:
        section.tokens = await count_tokens(section.text)
    action_line = format_action(action_kind, action_text) or CONTINUE_CUE
    spent = sum(s.tokens for s in sections) + await count_tokens(action_line) + reserve_for_reply
    kept: list[HistoryTurn] = []
    for turn in reversed(history):
        cost = await count_tokens(turn.action_line + "\n" + turn.narration)
        if spent + cost > budget and kept:
            break
        spent += cost
        kept.append(turn)
    kept.reverse()
    assembly = Assembly(
        sections=sections,
        history=kept,
        action_line=action_line,
        budget=budget,
        history_included=len(kept),
        history_dropped=len(history) - len(kept),
    )
    history_text = "\n\n".join(_turn_text(t) for t in kept)
    assembly.sections.append(
        Section(
            "history",
            history_text,
            f"the last {len(kept)} of {len(history)} turns fit the budget",
            await count_tokens(history_text),
        )
    )
    assembly.sections.append(Section("action", action_line, "the player's action", await count_tokens(action_line)))
    if assembly.history_dropped:
        assembly.notes.append(f"{assembly.history_dropped} older turns did not fit and were left out.")
    return assembly


def _turn_text(turn: HistoryTurn) -> str:
    return "\n".join(part for part in (turn.action_line, turn.narration) if part)


def chat_request(assembly: Assembly, **options: Any) -> GenerationRequest:
    """Chat form: instructions as the system message, turns as user/assistant pairs."""
    system = "\n\n".join(s.text for s in assembly.sections if s.name not in {"history", "action"})
    messages = [Message(role="system", content=system)]
    for turn in assembly.history:
        cue = BEGIN_CUE if turn.action_kind == "opening" else CONTINUE_CUE
        messages.append(Message(role="user", content=turn.action_line or cue))
        messages.append(Message(role="assistant", content=turn.narration))
    messages.append(Message(role="user", content=assembly.action_line))
    return GenerationRequest(mode="chat", messages=_merge_same_roles(messages), **options)


def completion_request(assembly: Assembly, **options: Any) -> GenerationRequest:
    """Completion form: a plain transcript the model continues (base models, Gemma)."""
    head = "\n\n".join(s.text for s in assembly.sections if s.name not in {"history", "action"})
    story = "\n\n".join(_turn_text(t) for t in assembly.history)
    prompt = f"{head}\n\n---\n\n{story}\n\n{assembly.action_line}\n"
    stop = ["\n>", "\n\n\n", "---"]
    return GenerationRequest(mode="completion", prompt=prompt, stop=stop, **options)


def _merge_same_roles(messages: list[Message]) -> list[Message]:
    """Some chat templates reject two user messages in a row (a Story turn after Continue)."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role == message.role and message.role != "system":
            merged[-1] = Message(role=message.role, content=merged[-1].content + "\n\n" + message.content)
        else:
            merged.append(message)
    return merged
