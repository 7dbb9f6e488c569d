"""What a service says about its models: name, context window, price, accepted samplers.

`GET /v1/models` lists ids everywhere; some services say more in the same answer.
OpenRouter gives `context_length`, `pricing` (US dollars per token, as strings) and
`supported_parameters`; vLLM gives `max_model_len`. A player picking a model sees the
context and, where priced, what a turn may cost — worked out here from the price and the
tokens a turn sends and gets back, so it is an estimate of the most, not a bill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_MODELS = 2000  # a listing longer than this is cut (OpenRouter lists a few hundred)


@dataclass(frozen=True)
class ModelInfo:
    id: str
    name: str = ""
    context: int | None = None
    prompt_price: float | None = None  # US dollars per prompt token
    reply_price: float | None = None  # US dollars per generated token
    supported: frozenset[str] | None = None  # request fields it takes (None: not said)

    @property
    def priced(self) -> bool:
        return self.prompt_price is not None and self.reply_price is not None

    @property
    def free(self) -> bool:
        return self.priced and self.prompt_price == 0 and self.reply_price == 0

    def turn_cost(self, prompt_tokens: int, reply_tokens: int) -> float | None:
        """US dollars for one request of that size (None: the service gives no price)."""
        if not self.priced:
            return None
        return prompt_tokens * self.prompt_price + reply_tokens * self.reply_price  # type: ignore[operator]


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 and number == number and number != float("inf") else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number and number >= 1 else None


def from_models_answer(body: Any) -> list[ModelInfo]:
    """Every model in a `/v1/models` answer, with what the entry says beyond its id.
    Untrusted input: anything malformed is skipped, never raised."""
    entries = body.get("data") if isinstance(body, dict) else None
    found: list[ModelInfo] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str | int):
            continue
        pricing = entry.get("pricing") if isinstance(entry.get("pricing"), dict) else {}
        params = entry.get("supported_parameters")
        supported = (
            frozenset(str(p) for p in params if isinstance(p, str))
            if isinstance(params, list)
            else None
        )
        found.append(
            ModelInfo(
                id=str(entry["id"])[:200],
                name=str(entry.get("name") or "")[:200],
                context=_count(entry.get("context_length") or entry.get("max_model_len")),
                prompt_price=_number(pricing.get("prompt")),
                reply_price=_number(pricing.get("completion")),
                supported=supported,
            )
        )
        if len(found) >= MAX_MODELS:
            break
    return found


def cost_words(dollars: float | None) -> str:
    """A turn's estimated cost as a player reads it."""
    if dollars is None:
        return ""
    if dollars == 0:
        return "free"
    if dollars < 0.001:
        return "under $0.001"
    return f"about ${dollars:.3f}" if dollars < 0.1 else f"about ${dollars:.2f}"
