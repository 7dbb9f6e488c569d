"""Which model to talk to, and how: one validated settings object with help text.

The same model drives the settings page, the CLI options and their documentation
(each field's `description`). Two fields a request must never set: `allow_remote` comes from
the operator's environment (`TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1`) and `allowed_hosts` from
the hosted services the player (a host, with accounts on) allowed by name on the Settings
page (service/hosted.py); the service layer strips both from anything submitted. The API
key is a `SecretStr`, so no repr, log line or traceback of these settings shows it.
"""

from __future__ import annotations

import os
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

ALLOW_REMOTE_ENV = "TALEKEEPER_ALLOW_REMOTE_ENDPOINT"

ProviderId = Literal["auto", "openai", "ollama", "embedded"]


def operator_allows_remote() -> bool:
    """True when the operator set `TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1` (or true/yes)."""
    return os.environ.get(ALLOW_REMOTE_ENV, "").strip().lower() in {"1", "true", "yes"}


class ModelSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: ProviderId = Field(
        "auto",
        description=(
            "Which kind of model to use. 'auto': the embedded model when no endpoint is "
            "set, otherwise an OpenAI-compatible server. 'openai': any OpenAI-compatible "
            "server (Ollama's /v1, llama.cpp server, vLLM, LM Studio). 'ollama': Ollama's "
            "native API (structured output, separate thinking). 'embedded': the small "
            "model that ships with talekeeper."
        ),
    )
    endpoint: str | None = Field(
        None,
        description=(
            "Base URL of the model server, with or without /v1, for example "
            "http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080 (llama.cpp "
            "server). Empty: use the embedded model."
        ),
    )
    model: str | None = Field(
        None,
        description=(
            "Model name as the server knows it (e.g. 'llama3.1:8b'). Empty: the first "
            "model the server lists."
        ),
    )
    api_key: SecretStr | None = Field(
        None, description="API key sent as a Bearer token, for servers that require one."
    )
    mode: Literal["chat", "completion"] = Field(
        "chat",
        description=(
            "'chat' sends messages and lets the server apply the model's chat template; "
            "'completion' sends one raw prompt (base models without a chat template)."
        ),
    )
    connect_timeout: float = Field(
        5.0, gt=0, le=600, description="Seconds to wait for the server to accept a connection."
    )
    read_timeout: float = Field(
        120.0,
        gt=0,
        le=3600,
        description=(
            "Seconds to wait for the next piece of a streamed answer before giving up "
            "(raise it for slow hardware or very long prompts)."
        ),
    )
    embedded_model_path: str | None = Field(
        None,
        description=(
            "Path to a local GGUF file for the embedded model. Empty: the model packaged "
            "with talekeeper."
        ),
    )
    embedded_threads: int | None = Field(
        None,
        ge=1,
        le=256,
        description="CPU threads for the embedded model. Empty: half the CPU cores.",
    )
    embedded_context: int = Field(
        8192,
        ge=256,
        le=131072,
        description="Context window of the embedded model, in tokens.",
    )
    allow_remote: bool = Field(
        default_factory=operator_allows_remote,
        description=(
            "Operator only: allow model endpoints on public addresses. Set by the "
            f"environment variable {ALLOW_REMOTE_ENV}=1, never from the web page."
        ),
    )

    allowed_hosts: tuple[str, ...] = Field(
        (),
        description=(
            "Hosted services the player allowed by name on the Settings page (e.g. "
            "openrouter.ai): their public addresses may be used. Never from a request."
        ),
    )

    @field_validator("endpoint", "model", "api_key", "embedded_model_path", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        # Form fields arrive as "" when left empty; empty means "not set".
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    @field_validator("endpoint")
    @classmethod
    def _endpoint_is_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(
                "the endpoint must be an http:// or https:// URL with a host, "
                "for example http://127.0.0.1:11434/v1"
            )
        if parts.username or parts.password:
            raise ValueError("put credentials in the API key field, not in the URL")
        if parts.query or parts.fragment:
            raise ValueError("the endpoint must not carry a query string or fragment")
        return value

    @model_validator(mode="after")
    def _openai_needs_endpoint(self) -> ModelSettings:
        if self.provider == "openai" and not self.endpoint:
            raise ValueError(
                "an OpenAI-compatible provider needs an endpoint, for example "
                "http://127.0.0.1:8080/v1"
            )
        return self

    def key(self) -> str | None:
        """The API key itself, for a request's Authorization header only."""
        return self.api_key.get_secret_value() if self.api_key is not None else None

    def identity(self) -> str:
        """What tells two settings apart, the key included (its digest: the key itself
        stays out of any string that could be logged)."""
        import hashlib

        digest = hashlib.sha256((self.key() or "").encode()).hexdigest()
        return self.model_dump_json() + digest

    def resolved_provider(self) -> Literal["openai", "ollama", "embedded"]:
        """'auto' made concrete: embedded without an endpoint, otherwise OpenAI-compatible."""
        if self.provider == "auto":
            return "openai" if self.endpoint else "embedded"
        return self.provider


def server_root(endpoint: str) -> str:
    """The server's root URL: `http://h:p/v1/` → `http://h:p` (any path before /v1 kept)."""
    parts = urlsplit(endpoint.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def openai_base(endpoint: str) -> str:
    """The OpenAI API base URL, ending in /v1 whether or not the user typed it — except a
    path ending in /openai, which is the base itself (Google's .../v1beta/openai)."""
    path = urlsplit(endpoint.strip()).path.rstrip("/")
    if path.endswith("/openai"):
        return endpoint.strip().rstrip("/")
    return server_root(endpoint) + "/v1"
