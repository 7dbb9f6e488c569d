"""How many tokens a turn's prompt may use: sized from the model's own context window.

- a server that reports its window (see `llm.window`): the whole window (the reply's
  share is kept inside it), up to the player's cap (`context_budget`; by default
  16,384: a longer prompt costs every uncached turn its reading time);
- the embedded model: 2,048, the size that keeps a turn's first words within seconds
  on a laptop CPU (its window is 4,096); a cap the player sets wins, inside the window;
- a server that does not say: the player's cap, else 3,072.
"""

from __future__ import annotations

from dataclasses import dataclass

from talekeeper.llm.base import Provider

DEFAULT_CAP = 16384
EMBEDDED_BUDGET = 2048
UNKNOWN_WINDOW_BUDGET = 3072
SMALLEST = 512


@dataclass(frozen=True)
class Budget:
    tokens: int
    why: str


async def context_budget(provider: Provider, cap: int | None) -> Budget:
    window = await provider.context_window()
    if provider.id == "embedded":
        tokens, why = (
            (cap, "your cap") if cap else (EMBEDDED_BUDGET, "the embedded model's fast size")
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
