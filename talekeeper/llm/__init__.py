"""Model providers: stream text, count tokens, test the connection. Knows nothing of stories.

    from talekeeper.llm import ModelSettings, build_provider
    provider = build_provider(ModelSettings(endpoint="http://127.0.0.1:11434/v1", model="llama3"))
    async for event in provider.stream(GenerationRequest(messages=[...])): ...

Importing this package is cheap: providers (and llama.cpp) load only when built.
"""

from talekeeper.llm.base import (
    ConnectionReport,
    GenerationRequest,
    Message,
    Provider,
    StreamEvent,
    Usage,
)
from talekeeper.llm.errors import (
    EmbeddedModelError,
    EndpointRefused,
    LLMError,
    ModelNotFound,
    ProviderHTTPError,
    ServerUnavailable,
    StreamInterrupted,
)
from talekeeper.llm.registry import build_provider, describe, register_provider
from talekeeper.llm.settings import ModelSettings

__all__ = [
    "ConnectionReport",
    "EmbeddedModelError",
    "EndpointRefused",
    "GenerationRequest",
    "LLMError",
    "Message",
    "ModelNotFound",
    "ModelSettings",
    "Provider",
    "ProviderHTTPError",
    "ServerUnavailable",
    "StreamEvent",
    "StreamInterrupted",
    "Usage",
    "build_provider",
    "describe",
    "register_provider",
]
