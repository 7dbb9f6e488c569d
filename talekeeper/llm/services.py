"""The model services a player can pick by name: where each one listens, and what it takes.

A connection profile starts from one of these presets. Hosted services are on the
internet: picking one sends the story there, so the player allows each host by name
first (service/hosted.py). Local ones run on the player's machine or network.

Each base URL is the one the service's own documentation gives for OpenAI-compatible
clients (cited beside it). `samplers` is what the service is documented to accept beyond
temperature/top-p/max tokens — a strict service (Mistral) refuses a request with a field it
does not know, so only these are sent; for local servers the server itself is asked
(llm/backends.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

# The samplers every OpenAI-compatible service documents (OpenAI's own request fields).
OPENAI_STANDARD = frozenset({"frequency_penalty", "presence_penalty", "logit_bias", "seed", "stop"})


def host_of(url: str) -> str:
    """The host name of `url`, lower-case, without port ('' when there is none)."""
    try:
        return (urlsplit(url.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


@dataclass(frozen=True)
class Service:
    id: str
    label: str
    base_url: str
    provider: Literal["openai", "ollama"] = "openai"
    hosted: bool = False
    needs_key: bool = False
    samplers: frozenset[str] | None = None  # None: ask the server (local ones)
    key_help: str = ""
    notes: str = ""
    models_hint: tuple[str, ...] = field(default=())

    @property
    def host(self) -> str:
        return host_of(self.base_url)


SERVICES: tuple[Service, ...] = (
    # https://openrouter.ai/docs (quick start: baseURL "https://openrouter.ai/api/v1"); its
    # GET /api/v1/models also gives each model's context_length, pricing and
    # supported_parameters (llm/catalog.py reads them).
    Service(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        hosted=True,
        needs_key=True,
        samplers=frozenset(
            {*OPENAI_STANDARD, "repetition_penalty", "min_p", "top_k"}
        ),  # refined per model by its supported_parameters
        key_help="Create a key at openrouter.ai/keys. Models ending in :free cost nothing.",
    ),
    # https://platform.openai.com/docs/api-reference (base URL https://api.openai.com/v1)
    Service(
        "openai",
        "OpenAI",
        "https://api.openai.com/v1",
        hosted=True,
        needs_key=True,
        samplers=OPENAI_STANDARD,
        key_help="Create a key at platform.openai.com/api-keys.",
    ),
    # https://console.groq.com/docs/openai: base_url https://api.groq.com/openai/v1; logit_bias
    # is refused with a 400 there.
    Service(
        "groq",
        "Groq",
        "https://api.groq.com/openai/v1",
        hosted=True,
        needs_key=True,
        samplers=OPENAI_STANDARD - {"logit_bias"},
        key_help="Create a key at console.groq.com/keys.",
    ),
    # https://docs.together.ai/docs/inference/openai-compatibility: base_url
    # https://api.together.ai/v1; it also takes repetition_penalty, min_p and top_k.
    Service(
        "together",
        "Together AI",
        "https://api.together.ai/v1",
        hosted=True,
        needs_key=True,
        samplers=frozenset({*OPENAI_STANDARD, "repetition_penalty", "min_p", "top_k"}),
        key_help="Create a key at api.together.ai/settings/api-keys.",
    ),
    # https://docs.mistral.ai/api/ (POST https://api.mistral.ai/v1/chat/completions). Strict:
    # an unknown field is refused, so only stop is sent (its seed is called random_seed).
    Service(
        "mistral",
        "Mistral AI",
        "https://api.mistral.ai/v1",
        hosted=True,
        needs_key=True,
        samplers=frozenset({"stop"}),
        key_help="Create a key at console.mistral.ai/api-keys.",
    ),
    # https://api-docs.deepseek.com: base_url https://api.deepseek.com (or …/v1 "for
    # compatibility with OpenAI; the v1 has nothing to do with the model's version").
    Service(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        hosted=True,
        needs_key=True,
        samplers=frozenset({"frequency_penalty", "presence_penalty", "stop"}),
        key_help="Create a key at platform.deepseek.com/api_keys.",
    ),
    # https://ai.google.dev/gemini-api/docs/openai: base_url
    # https://generativelanguage.googleapis.com/v1beta/openai/
    Service(
        "google",
        "Google Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        hosted=True,
        needs_key=True,
        samplers=frozenset({"stop", "seed"}),
        key_help="Create a key at aistudio.google.com/apikey.",
    ),
    # https://docs.anthropic.com/en/api/openai-sdk: base_url https://api.anthropic.com/v1/
    # ("intended to test and compare"; penalties and seed are ignored there).
    Service(
        "anthropic",
        "Anthropic Claude",
        "https://api.anthropic.com/v1",
        hosted=True,
        needs_key=True,
        samplers=frozenset({"stop"}),
        key_help="Create a key at console.anthropic.com/settings/keys.",
        notes="Anthropic calls its OpenAI-compatible endpoint a way to test and compare.",
    ),
    # https://github.com/ollama/ollama/blob/main/docs/api.md (http://localhost:11434); the
    # native API takes repeat_penalty and the other options (llm/ollama.py).
    Service("ollama", "Ollama", "http://127.0.0.1:11434", provider="ollama"),
    # https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md (llama-server
    # listens on 127.0.0.1:8080; OpenAI-compatible routes under /v1)
    Service("llamacpp", "llama.cpp server", "http://127.0.0.1:8080/v1"),
    # https://github.com/LostRuins/koboldcpp/wiki (port 5001; OpenAI-compatible under /v1)
    Service("koboldcpp", "KoboldCpp", "http://127.0.0.1:5001/v1"),
    # https://lmstudio.ai/docs/api/openai-api (base_url "http://localhost:1234/v1")
    Service("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1"),
    # https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html
    # (base_url "http://localhost:8000/v1")
    Service("vllm", "vLLM", "http://127.0.0.1:8000/v1"),
    Service("custom", "Another OpenAI-compatible server", ""),
)
BY_ID = {service.id: service for service in SERVICES}
_BY_HOST = {service.host: service for service in SERVICES if service.hosted}


def service(service_id: str | None) -> Service:
    return BY_ID.get(service_id or "custom", BY_ID["custom"])


def hosted_service_at(url: str | None) -> Service | None:
    """The hosted service `url` points at, judged by its host (None: not a known one)."""
    return _BY_HOST.get(host_of(url or ""))
