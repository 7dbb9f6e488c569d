"""The provider seam: every model, local or remote, streams typed events.

A provider turns a `GenerationRequest` into an async stream of `StreamEvent`s. The web
layer (SSE) and the CLI consume the same events. Capabilities are class attributes so
callers can ask before they rely on something (structured output, exact token counts).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from talekeeper.llm.backends import Backend
from talekeeper.llm.catalog import ModelInfo
from talekeeper.llm.errors import LLMError


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class GenerationRequest(BaseModel):
    """What to generate. Chat providers read `messages`; completion mode reads `prompt`."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["chat", "completion"] = "chat"
    messages: list[Message] = Field(default_factory=list)
    prompt: str = ""
    max_tokens: int = Field(300, ge=1, le=32768)
    temperature: float = Field(0.8, ge=0.0, le=2.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    stop: list[str] = Field(default_factory=list)
    # Optional samplers (None: the server's default). Which a provider passes on: `samplers`.
    min_p: float | None = Field(None, ge=0.0, le=1.0)
    top_k: int | None = Field(None, ge=1)
    repetition_penalty: float | None = Field(None, gt=0.0)
    frequency_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    presence_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    dry_multiplier: float | None = Field(None, ge=0.0, le=100.0)
    dry_base: float | None = Field(None, ge=1.0, le=8.0)
    dry_allowed_length: int | None = Field(None, ge=1, le=100)
    xtc_threshold: float | None = Field(None, ge=0.0, le=1.0)
    xtc_probability: float | None = Field(None, ge=0.0, le=1.0)
    logit_bias: dict[int, float] | None = None  # token id → bias (-100 bans it)
    banned_phrases: list[str] = Field(default_factory=list)  # never shown (llm/banned.py)
    seed: int | None = None
    # A JSON Schema the output must follow, where the provider supports it.
    json_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class StreamEvent:
    """One piece of a streamed generation.

    kind: "text" (narration), "reasoning" (the model's thinking, shown apart),
    "usage" (token counts, when the server reports them), "note" (what the provider did
    about the reply, for Insights: a banned phrase stopped), "done" (finish reason).
    """

    kind: Literal["text", "reasoning", "usage", "note", "done"]
    text: str = ""
    usage: Usage | None = None
    finish_reason: str | None = None


@dataclass
class ConnectionReport:
    """The answer to "test connection", in plain words for the player."""

    ok: bool
    provider: str
    endpoint: str
    model: str
    # (what, ok, detail); ok None: could not be checked, which is no failure either.
    checks: list[tuple[str, bool | None, str]] = field(default_factory=list)
    models_available: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "provider": self.provider,
            "endpoint": self.endpoint,
            "model": self.model,
            "checks": [{"check": c, "ok": o, "detail": d} for c, o, d in self.checks],
            "models_available": self.models_available,
        }


class Provider(ABC):
    """A model that streams text. Subclasses set `id` and their capabilities."""

    id: str = "base"
    # The optional samplers this provider passes to its model without asking its server
    # (`backend()` asks, where a server can say); others are ignored, and pages say so.
    samplers: frozenset[str] = frozenset()

    async def backend(self) -> Backend:
        """What this provider's server is and which samplers it takes (llm/backends.py)."""
        return Backend(self.id, self.description, self.samplers)

    supports_chat: bool = True
    supports_completion: bool = True
    supports_schema: bool = False
    exact_token_count: bool = False
    # What the rest of the app needs to know of a provider is asked of these flags, never
    # of its `id`:
    runs_here: bool = False
    """The model runs inside talekeeper (the embedded one): its prompt cache is worth
    warming between turns, its state-pass grammar is prepared at start, and its context
    budget is sized to leave room for the state pass."""
    structured_by_default: bool = False
    """Under `state_updates: auto` the state pass is a structured request (a grammar, or a
    JSON `format`), which always parses (service/state_updates)."""

    @abstractmethod
    def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        """Yield events; the last is always kind="done". Raises `LLMError`s."""

    async def complete(self, request: GenerationRequest) -> str:
        """Convenience: the whole text of a non-interactive generation."""
        parts = [e.text async for e in self.stream(request) if e.kind == "text"]
        return "".join(parts)

    async def count_tokens(self, text: str) -> int:
        from talekeeper.llm.tokens import estimate_tokens

        return estimate_tokens(text)

    async def embed(self, texts: list[str], model: str | None = None) -> list[list[float]] | None:
        """Embedding vectors for `texts` from `model`, or None where unsupported (the
        memory bank then retrieves lexically). Raises `LLMError`s like `stream`."""
        return None

    async def context_window(self) -> int | None:
        """Tokens the model can read at once, as the server reports it (None: unknown)."""
        return None

    async def catalog(self) -> list[ModelInfo]:
        """The models the server offers, with what it says about each (none: not a server
        with a list)."""
        return []

    @abstractmethod
    async def check(self) -> ConnectionReport:
        """Test the connection and say plainly what works and what does not."""

    async def generation_check(self, mode: Literal["chat", "completion"]) -> tuple[str, bool, str]:
        """The last line of every `check`: whether the model generates one token."""
        probe = GenerationRequest(
            mode=mode,
            messages=[Message(role="user", content="Say OK.")],
            prompt="OK",
            max_tokens=1,
            temperature=0.0,
        )
        try:
            await self.complete(probe)
        except LLMError as exc:
            return ("generation works", False, str(exc))
        return ("generation works", True, "generated a token")

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections or child processes."""

    @property
    def description(self) -> str:
        return self.id
