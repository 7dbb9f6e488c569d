"""The summariser's prompts: one for a block's memory, one for the running summary.

Both open with a cast brief (the protagonist by name, the characters the block mentions,
from the story cards) and the setting (plot essentials), and ask for third person with the
protagonist named — the predecessor's A/B runs showed that without this, memories come back
in second person or as "the player", and vary four-fold in length.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from talekeeper.context.echo import EchoGuard, has_protocol
from talekeeper.context.repeats import RepeatGuard
from talekeeper.context.triggers import match_cards, recent_window
from talekeeper.llm.base import GenerationRequest, Message

MARKER = "[talekeeper:memory]"
"""Opens every summariser system prompt, so logs and test scripts can tell them apart."""
SUMMARY_MARKER = "[talekeeper:summary]"
MAX_CAST = 6
SUMMARY_MAX_WORDS = 200


def protagonist(persona: Mapping[str, Any] | None) -> str:
    name = str((persona or {}).get("name") or "").strip()
    return name or "the player"


def cast_brief(plot: Mapping[str, Any], excerpt: str) -> str:
    persona = plot.get("persona") or {}
    lines = []
    name = str(persona.get("name") or "").strip()
    if name:
        who = f"- {name}"
        if persona.get("pronouns"):
            who += f" ({persona['pronouns']})"
        who += " — the protagonist."
        if persona.get("description"):
            who += f" {str(persona['description']).strip()}"
        lines.append(who)
    cards = [
        c for c in plot.get("story_cards") or [] if str(c.get("type", "")).lower() == "character"
    ]
    window = recent_window([(0, "", excerpt)], "", turns=1)
    matched = [cards[t.index] for t in match_cards(cards, window)]
    others = [c for c in cards if c not in matched]
    for card in (matched + others)[:MAX_CAST]:
        lines.append(f"- {card.get('name', '?')} — {str(card.get('entry', '')).strip()}")
    parts = []
    if lines:
        parts.append("Cast:\n" + "\n".join(lines))
    if str(plot.get("plot_essentials") or "").strip():
        parts.append("Setting:\n" + str(plot["plot_essentials"]).strip())
    return "\n\n".join(parts)


def memory_request(plot: Mapping[str, Any], excerpt: str, max_words: int) -> GenerationRequest:
    name = protagonist(plot.get("persona"))
    system = (
        f"{MARKER} You compress interactive-fiction story excerpts into memories. Write one "
        f"or two plain sentences, past tense, third person: never 'you'. Refer to the "
        f"protagonist as {name}, and name other characters rather than using bare pronouns. "
        f"At most {max_words} words. Keep the concrete details a later scene could turn on: "
        "names, places, items, promises, injuries, secrets. No preamble, no commentary."
    )
    brief = cast_brief(plot, excerpt)
    user = (f"{brief}\n\n" if brief else "") + f"Story excerpt:\n\n{excerpt}\n\nMemory:"
    return GenerationRequest(
        mode="chat",
        messages=[Message(role="system", content=system), Message(role="user", content=user)],
        max_tokens=max(64, max_words * 3),
        temperature=0.3,
    )


def summary_request(
    plot: Mapping[str, Any], previous: str, material: Sequence[str]
) -> GenerationRequest:
    name = protagonist(plot.get("persona"))
    system = (
        f"{SUMMARY_MARKER} You keep the running summary of an interactive story. Rewrite the "
        f"summary so it also covers the new events, in third person, past tense, naming the "
        f"protagonist {name}. Keep what still matters (goals, promises, who knows what, "
        f"where things are); compress what no longer does. At most {SUMMARY_MAX_WORDS} words. "
        "Answer with the summary only."
    )
    joined = "\n".join(material)
    brief = cast_brief(plot, joined)
    user = f"{brief}\n\n" if brief else ""
    user += f"Summary so far (the player may have edited it; keep their wording where it still holds):\n{previous.strip() or '(none yet)'}"
    user += f"\n\nNew events:\n{joined}\n\nUpdated summary:"
    return GenerationRequest(
        mode="chat",
        messages=[Message(role="system", content=system), Message(role="user", content=user)],
        max_tokens=SUMMARY_MAX_WORDS * 2,
        temperature=0.3,
    )


def unechoed(reply: str, request: GenerationRequest, story: Sequence[str]) -> str:
    """The reply without the sentences that repeat the summariser's own prompt — its
    instructions and cast brief, not the `story` it was given (the excerpt, the summary so
    far) — and without what no memory says: protocol (a stat path, an `(id)` tag, JSON, a
    stat readout) or a line of a prompt's notes ("Recently: …", "[Author's note: …"), and
    cut where it begins to loop ("You walk to the lighthouse. You walk to the lighthouse.").
    The same guards as the narration's, so an echo or a loop is never stored as a memory
    or a summary and fed back into later prompts."""
    sources = []
    for message in request.messages:
        content = message.content
        for text in story:
            content = content.replace(text, "") if text.strip() else content
        sources.append((message.role, content))
    guard = EchoGuard(sources)
    sentences = re.split(r"(?<=[.!?…])\s+|\n+", reply.strip())
    kept = " ".join(
        s for s in sentences if s.strip() and guard.judge(s) is None and not _prompt_line(s)
    )
    return RepeatGuard().clean(kept)[0]


_LABELLED = re.compile(r"^\s*(?:\[|[-*>]\s|[A-Z][\w'’ -]{0,30}:(?:\s|$))")
"""How a prompt's own lines open: a bracket, a list mark, or a label ("Recently:",
"What the stats mean:"). A memory is sentences of story, in the past tense: never these."""


_ANSWER = re.compile(r"^\s*(?:memory|summary|updated summary)(?:\s+\d+)?\s*:", re.I)
"""The label a summariser may open its answer with ("Summary:"): its own, not a note's."""


def _prompt_line(sentence: str) -> bool:
    labelled = _LABELLED.match(sentence) and not _ANSWER.match(sentence)
    return bool(labelled) or has_protocol(sentence)


_PREAMBLE = re.compile(r"^\s*(memory|summary|updated summary)\s*:\s*", re.I)


def clean(text: str, max_words: int) -> str:
    """Strip a label the model echoed and keep at most `max_words` words, ending at a
    sentence boundary when one is near."""
    text = _PREAMBLE.sub("", text.strip()).strip().strip('"“”').strip()
    text = " ".join(text.split())
    words = text.split(" ")
    if len(words) <= max_words:
        return text
    cut = " ".join(words[:max_words])
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if cut.endswith((".", "!", "?")):
        return cut
    if end >= len(cut) // 2:
        return cut[: end + 1]
    return cut.rstrip(",;:") + "…"
