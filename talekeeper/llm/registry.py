"""From settings to a provider: a registry keyed by provider id.

The built-in providers register through `register_provider`, the same call an
extension would make; nothing is discovered or imported at import time, and each
factory imports its module only when it is used (the embedded one never loads unless
chosen).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx

from talekeeper.llm.base import Provider
from talekeeper.llm.settings import ModelSettings, openai_base, server_root

Factory = Callable[[ModelSettings, httpx.AsyncBaseTransport | None], Provider]
Describer = Callable[[ModelSettings], str]


@dataclass(frozen=True)
class ProviderEntry:
    id: str
    factory: Factory
    describe: Describer


_REGISTRY: dict[str, ProviderEntry] = {}


def register_provider(provider_id: str, factory: Factory, describe: Describer) -> None:
    """Make `provider_id` buildable. Registering an id again replaces it."""
    _REGISTRY[provider_id] = ProviderEntry(provider_id, factory, describe)


def provider_ids() -> list[str]:
    return sorted(_REGISTRY)


def _entry(settings: ModelSettings) -> ProviderEntry:
    provider_id = settings.resolved_provider()
    try:
        return _REGISTRY[provider_id]
    except KeyError:
        raise ValueError(
            f"unknown model provider {provider_id!r}; known: {', '.join(provider_ids())}"
        ) from None


def build_provider(
    settings: ModelSettings, transport: httpx.AsyncBaseTransport | None = None
) -> Provider:
    """The provider `settings` describe. `transport`: an inner httpx transport (tests pass
    `httpx.MockTransport`); HTTP providers always wrap it in the endpoint policy."""
    return _entry(settings).factory(settings, transport)


def describe(settings: ModelSettings) -> str:
    """One line for the player: which model is in use, and where."""
    return _entry(settings).describe(settings)


# --- built-ins ---------------------------------------------------------------------------


def _openai(settings: ModelSettings, transport: httpx.AsyncBaseTransport | None) -> Provider:
    from talekeeper.llm.openai import OpenAIProvider

    return OpenAIProvider.from_settings(settings, transport)


def _ollama(settings: ModelSettings, transport: httpx.AsyncBaseTransport | None) -> Provider:
    from talekeeper.llm.ollama import OllamaProvider

    return OllamaProvider.from_settings(settings, transport)


def _embedded(settings: ModelSettings, transport: httpx.AsyncBaseTransport | None) -> Provider:
    from talekeeper.llm.embedded import EmbeddedProvider

    return EmbeddedProvider.from_settings(settings, transport)


def _model_part(settings: ModelSettings) -> str:
    return f"model {settings.model}" if settings.model else "the first model it lists"


def _describe_openai(settings: ModelSettings) -> str:
    return f"OpenAI-compatible at {openai_base(settings.endpoint or '')}, {_model_part(settings)}"


def _describe_ollama(settings: ModelSettings) -> str:
    return f"Ollama at {server_root(settings.endpoint or 'http://127.0.0.1:11434')}, {_model_part(settings)}"


def _describe_embedded(settings: ModelSettings) -> str:
    from talekeeper.llm.embedded import model_label

    return f"embedded {model_label(settings.embedded_model_path)} (demo quality)"


register_provider("openai", _openai, _describe_openai)
register_provider("ollama", _ollama, _describe_ollama)
register_provider("embedded", _embedded, _describe_embedded)
