"""How many tokens a turn's prompt may use: sized from the model's own context window.

- a server that reports its window (see `llm.window`): the whole window (the reply's
  share is kept inside it), up to the player's cap (`context_budget`; by default
  16,384: a longer prompt costs every uncached turn its reading time);
- the embedded model: 6,144 of its 8,192-token window (SmolLM2's trained length),
  leaving `STATE_PASS_ROOM` for the state pass that extends the narrator's prompt. Its
  prompt cache keeps a turn's cost to what changed — the last turn and the notes after
  the history — so a longer history costs only the first turn after a start, and the
  longer the history, the larger the share of the prompt read from cache
  (`benchmarks/prefix_cache.py`). A cap the player sets wins, inside the window;
- a server that does not say: the player's cap, else 3,072.
"""

from __future__ import annotations

from dataclasses import dataclass

from talekeeper.llm.base import Provider

DEFAULT_CAP = 16384
EMBEDDED_BUDGET = 6144
STATE_PASS_ROOM = 1024
"""What the structured state pass adds after the narrator's prompt and reply: its question
and its answer (at most `state_updates.MAX_STRUCTURED_TOKENS`), with room to spare."""
UNKNOWN_WINDOW_BUDGET = 3072
SMALLEST = 512

REPLY_WORDS = {"short": 50, "medium": 110, "long": 250}
"""The most words a narration should run to, by the player's reply-length setting: the
hint the narrator reads (`length_hint`) and what its token limit is sized from."""
TOKENS_PER_WORD = 2  # generous (English runs ~1.3): a reply the hint allows is never cut
STATE_BLOCK_ROOM = 160
"""What inline mode's state block after the prose needs, so the limit leaves room for it."""
SMALLEST_REPLY = 64


def reply_tokens(max_tokens: int | None, length: str, budget: int, inline: bool) -> int:
    """The narration's token limit: the player's own number when set; else sized from the
    length setting (with room for the state block in inline mode), at most a quarter of
    the context budget — a small window gets a shorter reply, never one that crowds out
    the story."""
    if max_tokens:
        return max_tokens
    tokens = REPLY_WORDS.get(length, REPLY_WORDS["medium"]) * TOKENS_PER_WORD
    tokens += STATE_BLOCK_ROOM if inline else 0
    return max(SMALLEST_REPLY, min(tokens, budget // 4))


LABELS = ("Length",)
"""The label `length_hint` opens its line with (see context/echo)."""


def length_hint(length: str) -> str:
    """The narrator's word on length, matching the token limit it is given."""
    words = REPLY_WORDS.get(length, REPLY_WORDS["medium"])
    if length == "short":
        return (
            f"Length: keep each reply short, one to three sentences (about {words} words at most)."
        )
    if length == "long":
        return f"Length: a reply may run to two or three paragraphs (about {words} words at most)."
    return f"Length: keep each reply to one paragraph (about {words} words at most)."


@dataclass(frozen=True)
class Budget:
    tokens: int
    why: str


async def context_budget(provider: Provider, cap: int | None) -> Budget:
    window = await provider.context_window()
    if provider.runs_here:
        fits = min(EMBEDDED_BUDGET, window - STATE_PASS_ROOM) if window else EMBEDDED_BUDGET
        tokens, why = (
            (cap, "your cap")
            if cap
            else (fits, "the embedded model's size: its window less room for the state pass")
        )
    elif window is None:
        tokens, why = (
            (cap, "your cap")
            if cap
            else (UNKNOWN_WINDOW_BUDGET, "the server does not report its context window")
        )
    else:
        tokens, why = (cap, "your cap") if cap else (DEFAULT_CAP, "the default cap")
    if window is not None and window < tokens:
        tokens, why = window, f"the model's context window ({window} tokens)"
    elif window is not None:
        why += f", within the model's {window}-token window"
    return Budget(max(SMALLEST, tokens), f"Context budget {max(SMALLEST, tokens)} tokens: {why}.")
