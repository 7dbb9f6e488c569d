"""One exception tree for everything a model provider can go wrong with.

    LLMError (talekeeper.errors.Upstream: 502)
     ├── EndpointRefused        the endpoint policy forbids this address (also Invalid: 422)
     ├── ServerUnavailable      nothing answers (connection refused, DNS, timeout)
     ├── ModelNotFound          the server answers but does not know the model
     ├── ProviderHTTPError      any other 4xx/5xx, with the server's own message
     ├── StreamInterrupted      the stream was cut before it finished
     └── EmbeddedModelError     the embedded model could not be found or started

Providers translate foreign errors (httpx, subprocess) into these at the boundary, so
nothing above `talekeeper.llm` ever catches an httpx error.
"""

from talekeeper.errors import Invalid, Upstream


class LLMError(Upstream):
    """Base class; `str(error)` is a message fit to show a player."""


class EndpointRefused(Invalid, LLMError):
    """A setting or request the policy refuses: the request is wrong, not the server."""


class ServerUnavailable(LLMError):
    pass


class ModelNotFound(LLMError):
    pass


class ProviderHTTPError(LLMError):
    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class StreamInterrupted(LLMError):
    pass


class EmbeddedModelError(LLMError):
    pass
