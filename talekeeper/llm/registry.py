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
from talekeeper.llm.policy import Resolver
from talekeeper.llm.settings import ModelSettings, openai_base, server_root

# (settings, transport) -> provider; the built-ins also take `resolver=` (the test seam).
Factory = Callable[..., Provider]
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
    settings: ModelSettings,
    transport: httpx.AsyncBaseTransport | None = None,
    resolver: Resolver | None = None,
) -> Provider:
    """The provider `settings` describe. `transport`: an inner httpx transport (tests pass
    `httpx.MockTransport`); HTTP providers always wrap it in the endpoint policy, which
    looks names up with `resolver` (tests: a name that claims a public address)."""
    factory = _entry(settings).factory
    if resolver is None:  # an extension's factory may take only (settings, transport)
        return factory(settings, transport)
    return factory(settings, transport, resolver=resolver)


def describe(settings: ModelSettings) -> str:
    """One line for the player: which model is in use, and where."""
    return _entry(settings).describe(settings)


# --- built-ins ---------------------------------------------------------------------------


def _openai(
    settings: ModelSettings,
    transport: httpx.AsyncBaseTransport | None,
    resolver: Resolver | None = None,
) -> Provider:
    from talekeeper.llm.openai import OpenAIProvider

    return OpenAIProvider.from_settings(settings, transport, resolver)


def _ollama(
    settings: ModelSettings,
    transport: httpx.AsyncBaseTransport | None,
    resolver: Resolver | None = None,
) -> Provider:
    from talekeeper.llm.ollama import OllamaProvider

    return OllamaProvider.from_settings(settings, transport, resolver)


def _embedded(
    settings: ModelSettings,
    transport: httpx.AsyncBaseTransport | None,
    resolver: Resolver | None = None,
) -> Provider:
    from talekeeper.llm.embedded import EmbeddedProvider

    return EmbeddedProvider.from_settings(settings, transport, resolver)


def _model_part(settings: ModelSettings) -> str:
    return f"model {settings.model}" if settings.model else "the first model it lists"


def _describe_openai(settings: ModelSettings) -> str:
    from talekeeper.llm.services import hosted_service_at

    known = hosted_service_at(settings.endpoint)
    if known is not None:  # "OpenRouter, model x": the service by its name
        return f"{known.label}, {_model_part(settings)}"
    return f"OpenAI-compatible at {openai_base(settings.endpoint or '')}, {_model_part(settings)}"


def _describe_ollama(settings: ModelSettings) -> str:
    return f"Ollama at {server_root(settings.endpoint or 'http://127.0.0.1:11434')}, {_model_part(settings)}"


def _describe_embedded(settings: ModelSettings) -> str:
    from talekeeper.llm.embedded import model_label

    return f"embedded {model_label(settings.embedded_model_path)} (demo quality)"


register_provider("openai", _openai, _describe_openai)
register_provider("ollama", _ollama, _describe_ollama)
register_provider("embedded", _embedded, _describe_embedded)
