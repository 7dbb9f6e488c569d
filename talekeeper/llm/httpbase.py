"""What every HTTP model provider shares: one policed client, errors in players' words.

`HTTPProvider` owns the httpx client (always behind `PolicyTransport`), resolves which
model to use, runs "test connection", and translates every httpx error into the
`talekeeper.llm.errors` tree at this boundary. A concrete provider says only how to
list models, what to POST for a request, and how to read the streamed answer's lines.

The client keeps its connection to the server alive between calls (a turn, the memory
bank's, the state pass: no new TCP connection or TLS handshake each time; httpx drops one
idle for 5 s, as servers do). httpx pools a connection only once its response has been
read to the end, so after the answer's end marker the rest of the body is read too
(`read_rest`, bounded); a stream stopped, cut, timed out or unreadable before that is
closed, never reused half-read.
"""

from __future__ import annotations

import asyncio
import json
from abc import abstractmethod
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, Literal

import httpx

from talekeeper.llm import banned
from talekeeper.llm.backends import SAMPLERS, Backend
from talekeeper.llm.base import (
    ConnectionReport,
    GenerationRequest,
    Provider,
    StreamEvent,
)
from talekeeper.llm.catalog import ModelInfo
from talekeeper.llm.errors import (
    EndpointRefused,
    LLMError,
    ModelNotFound,
    ProviderHTTPError,
    ServerUnavailable,
    StreamInterrupted,
)
from talekeeper.llm.policy import PolicyTransport, Resolver
from talekeeper.llm.settings import ModelSettings

# The samplers whose spelling or support differs between servers: a request carrying one
# asks the server what it is first (stop is everyone's).
ASKED_SAMPLERS = tuple(name for name in SAMPLERS if name != "stop")
_START_HINT = (
    "Is the model server running? Start it (for example `ollama serve`, or llama.cpp's "
    "`llama-server -m MODEL.gguf`), or correct the address in the model settings."
)
_UNKNOWN_MODEL_WORDS = ("not found", "does not exist", "not exist", "unknown", "no such", "pull")
# How long, and how much further, a body is read after the answer's end marker so that its
# connection can be reused: a server ends the body at once, and one that keeps the stream
# open (or keeps sending) past that is not waited for: its connection is closed instead.
REST_SECONDS = 0.25
REST_BYTES = 64 * 1024


def error_message(response: httpx.Response) -> str:
    """The server's own explanation from an error response, as plain text."""
    try:
        body: Any = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = response.text.strip()
        return text[:300] if text else (response.reason_phrase or f"HTTP {response.status_code}")
    return message_from_body(body) or f"HTTP {response.status_code}"


def message_from_body(body: Any) -> str:
    """Dig the message out of the shapes servers use: {"error": {"message"}}, {"detail"}, …"""
    if isinstance(body, str):
        return body[:300]
    if isinstance(body, dict):
        for key in ("error", "detail", "message"):
            if key in body:
                value = body[key]
                if isinstance(value, dict):
                    return message_from_body(value) or json.dumps(value)[:300]
                if isinstance(value, list):  # FastAPI validation errors
                    return "; ".join(
                        str(item.get("msg", item)) if isinstance(item, dict) else str(item)
                        for item in value
                    )[:300]
                return str(value)[:300]
    return ""


def looks_like_unknown_model(message: str) -> bool:
    lowered = message.lower()
    return "model" in lowered and any(word in lowered for word in _UNKNOWN_MODEL_WORDS)


async def read_rest(response: httpx.Response, lines: AsyncIterator[str]) -> None:
    """Read `lines`, the rest of `response` after the answer's end marker, to the body's end,
    so httpx hands the connection back to its pool; give up after `REST_SECONDS` or
    `REST_BYTES` (the connection is then closed with the response, as a half-read one must
    be). The answer is already whole: nothing here can fail it."""
    most = response.num_bytes_downloaded + REST_BYTES
    try:
        async with asyncio.timeout(REST_SECONDS):
            async for _line in lines:
                if response.num_bytes_downloaded > most:
                    return
    except (TimeoutError, httpx.HTTPError):
        return


def translate_transport_error(
    exc: httpx.HTTPError, endpoint: str, started: bool, read_timeout: float
) -> LLMError:
    """An httpx failure as one of ours. `started`: the answer had begun streaming."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        if "CERTIFICATE_VERIFY_FAILED" in detail or "certificate" in detail.lower():
            return ServerUnavailable(
                f"The model server at {endpoint} presented a TLS certificate that could not "
                f"be verified ({detail}). talekeeper always verifies certificates; install "
                "the server's CA in the operating system's trust store."
            )
        return ServerUnavailable(
            f"Could not connect to the model server at {endpoint} ({detail}). {_START_HINT}"
        )
    if isinstance(exc, httpx.ReadTimeout):
        if started:
            return StreamInterrupted(
                f"The model server at {endpoint} sent nothing for {read_timeout:g} seconds, "
                "so the answer was cut off. Try again, or raise the read timeout in the "
                "model settings for slow hardware."
            )
        return ServerUnavailable(
            f"The model server at {endpoint} accepted the connection but did not answer "
            f"within {read_timeout:g} seconds. It may still be loading the model; try again, "
            "or raise the read timeout in the model settings."
        )
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        if started:
            return StreamInterrupted(
                f"The connection to the model server at {endpoint} dropped in the middle "
                f"of the answer ({detail}). Try again; if it keeps happening, the server "
                "may be crashing or running out of memory."
            )
        return ServerUnavailable(
            f"The model server at {endpoint} closed the connection without answering "
            f"({detail}). {_START_HINT}"
        )
    if isinstance(exc, httpx.TimeoutException):
        return ServerUnavailable(
            f"The model server at {endpoint} timed out ({detail}). {_START_HINT}"
        )
    return ServerUnavailable(f"Could not talk to the model server at {endpoint} ({detail}).")


class HTTPProvider(Provider):
    """Base for providers that stream over HTTP from a server the policy allows."""

    kind_label = "HTTP"

    def __init__(
        self,
        endpoint: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 120.0,
        allow_remote: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
        mode: Literal["chat", "completion"] = "chat",
        allowed_hosts: tuple[str, ...] = (),
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self.api_key = api_key
        self.mode = mode
        self.read_timeout = read_timeout
        self.timeout = httpx.Timeout(
            connect=connect_timeout,
            read=read_timeout,
            write=read_timeout,
            pool=connect_timeout,
        )
        self._allow_remote = allow_remote
        self._inner_transport = transport
        self._resolver = resolver
        self._allowed_hosts = tuple(allowed_hosts)
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._default_model: str | None = None
        self._window: int | None = None
        self._window_asked = False
        self._backend: Backend | None = None
        self._phrase_tokens: dict[str, int | None] = {}

    # Where the server usually listens when the settings name no endpoint (None: required).
    default_endpoint: str | None = None

    @classmethod
    def from_settings(
        cls,
        settings: ModelSettings,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
    ):
        endpoint = settings.endpoint or cls.default_endpoint
        if not endpoint:
            raise ValueError(f"the {cls.id} provider needs an endpoint")
        return cls(
            endpoint,
            settings.model,
            api_key=settings.key(),
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            allow_remote=settings.allow_remote,
            transport=transport,
            resolver=resolver,
            mode=settings.mode,
            allowed_hosts=settings.allowed_hosts,
        )

    # --- what a concrete provider supplies -------------------------------------------

    @abstractmethod
    async def list_models(self) -> list[str]:
        """Model names the server offers. Raises `LLMError`s."""

    async def catalog(self) -> list[ModelInfo]:
        """The models offered, with what the server says about each (ids alone here)."""
        return [ModelInfo(name) for name in await self.list_models()]

    @abstractmethod
    def _request_for(self, request: GenerationRequest, model: str) -> tuple[str, dict[str, Any]]:
        """(URL, JSON body) to POST for a streamed generation."""

    @abstractmethod
    def _events(
        self, lines: AsyncIterator[str], request: GenerationRequest
    ) -> AsyncIterator[StreamEvent]:
        """Read the streamed body's lines up to the answer's end marker and no further (the
        base reads the rest); the last event is "done". Raise `StreamInterrupted`."""

    # --- shared machinery ------------------------------------------------------------

    def client(self) -> httpx.AsyncClient:
        """The policed client, one per event loop (pooled connections belong to a loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop or self._client.is_closed:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            transport = PolicyTransport(
                self._inner_transport,
                allow_remote=self._allow_remote,
                resolver=self._resolver,
                allowed_hosts=self._allowed_hosts,
            )
            # trust_env=False: no proxies or .netrc from the environment decide where a
            # story goes; the policy transport is the only way out.
            self._client = httpx.AsyncClient(
                transport=transport, timeout=self.timeout, headers=headers, trust_env=False
            )
            self._client_loop = loop
        return self._client

    def _scrubbed(self, exc: LLMError) -> LLMError:
        """`exc` with the API key blotted out of its words: a server that quotes the key
        back in an error (a fake one, a proxy) must not put it on a page or in a log."""
        key = self.api_key
        if key and key in str(exc):
            exc.args = (str(exc).replace(key, "[your API key]"), *exc.args[1:])
        return exc

    async def _get_json(self, url: str) -> Any:
        """GET and decode JSON, with every failure translated."""
        return await self._json("GET", url)

    async def _json(self, method: str, url: str, body: Any = None, model: str | None = None) -> Any:
        """Send a request and decode its JSON answer, with every failure translated.

        With `model`, an error answer is read as being about that model (unknown model…).
        """
        try:
            return await self._json_unscrubbed(method, url, body, model)
        except LLMError as exc:
            raise self._scrubbed(exc) from exc.__cause__

    async def _json_unscrubbed(
        self, method: str, url: str, body: Any = None, model: str | None = None
    ) -> Any:
        try:
            response = await self.client().request(method, url, json=body)
        except httpx.HTTPError as exc:
            raise translate_transport_error(exc, self.endpoint, False, self.read_timeout) from exc
        if response.status_code >= 400:
            if model is not None:
                raise await self._status_error(response, model)
            raise ProviderHTTPError(
                f"The model server at {self.endpoint} answered {response.status_code} to "
                f"{url}: {error_message(response)}",
                response.status_code,
            )
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ProviderHTTPError(
                f"The model server at {self.endpoint} sent something that is not JSON from {url}."
            ) from exc

    async def context_window(self) -> int | None:
        """Asked once (see `llm.window`); a server that cannot be reached is asked again
        next time, one that does not say is not."""
        if not self._window_asked:
            try:
                self._window = await self._ask_window()
            except (ServerUnavailable, EndpointRefused):
                return None
            except LLMError:
                self._window = None
            self._window_asked = True
        return self._window

    async def _ask_window(self) -> int | None:
        return None

    async def _try_json(self, method: str, url: str, body: Any = None) -> Any:
        """An optional endpoint: its JSON, or None when the server has no such route."""
        try:
            return await self._json(method, url, body)
        except ProviderHTTPError:
            return None

    async def model_name(self) -> str:
        """The configured model, or the first one the server lists when none is set."""
        if self.model:
            return self.model
        if self._default_model is None:
            models = await self.list_models()
            if not models:
                raise ModelNotFound(
                    f"The model server at {self.endpoint} lists no models. Load or pull one, "
                    "or name one in the model settings."
                )
            self._default_model = models[0]
        return self._default_model

    async def _model_not_found(self, model: str, server_message: str) -> ModelNotFound:
        try:
            models = await self.list_models()
        except LLMError:
            models = []
        offered = (
            "It offers: " + ", ".join(models[:20]) + ("…" if len(models) > 20 else "") + "."
            if models
            else "Could not get the list of models it offers."
        )
        return ModelNotFound(
            f"The model server at {self.endpoint} does not know the model {model!r} "
            f"({server_message}). {offered} Choose one of those in the model settings, "
            "or load/pull the model on the server."
        )

    async def _status_error(self, response: httpx.Response, model: str) -> LLMError:
        message = error_message(response)
        status = response.status_code
        if status in (400, 404, 422) and looks_like_unknown_model(message):
            return await self._model_not_found(model, message)
        if status == 404:
            return ProviderHTTPError(
                f"The server at {self.endpoint} has no {response.request.url.path} (404: "
                f"{message}). Is this the address of an {self.kind_label} server?",
                status,
            )
        if status in (401, 403):
            return ProviderHTTPError(
                f"The model server at {self.endpoint} refused the request ({status}: "
                f"{message}). Check the API key in the model settings.",
                status,
            )
        return ProviderHTTPError(
            f"The model server at {self.endpoint} answered {status}: {message}", status
        )

    # --- which samplers the server takes (llm/backends.py) -----------------------------

    async def backend(self) -> Backend:
        """Asked of the server once; one that cannot be reached is asked again next time."""
        if self._backend is None:
            try:
                self._backend = await self._detect_backend()
            except (ServerUnavailable, EndpointRefused):
                return self._fallback_backend()
        return self._backend

    async def _detect_backend(self) -> Backend:
        return self._fallback_backend()

    def _fallback_backend(self) -> Backend:
        """What is assumed before (or without) asking the server."""
        return Backend(self.id, self.kind_label, self.samplers)

    def _known_backend(self) -> Backend:
        return self._backend or self._fallback_backend()

    async def _token_of(self, phrase: str) -> int | None:
        """The one token `phrase` is in this server's tokenizer (None: more than one, or the
        server cannot say). Only servers with a tokenizer endpoint override it."""
        return None

    async def _with_phrase_biases(
        self, request: GenerationRequest, backend: Backend
    ) -> GenerationRequest:
        """Banned phrases that are one token, banned by logit bias (where the server can)."""
        if backend.banned_by != "logit_bias" or not backend.takes("logit_bias"):
            return request
        biases = dict(request.logit_bias or {})
        for phrase in request.banned_phrases:
            for variant in (phrase, " " + phrase):
                if variant not in self._phrase_tokens:
                    self._phrase_tokens[variant] = await self._token_of(variant)
                token = self._phrase_tokens[variant]
                if token is not None:
                    biases[token] = -100.0
        return request.model_copy(update={"logit_bias": biases or None})

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        try:
            if request.banned_phrases and request.json_schema is None:
                backend = await self.backend()
                request = await self._with_phrase_biases(request, backend)
                events = banned.guarded(
                    self._stream_once,
                    request,
                    request.banned_phrases,
                    nudge=backend.kind not in ("llamacpp", "koboldcpp", "embedded"),
                )
            else:
                events = self._stream_once(request)
            async with aclosing(events) as stream:
                async for event in stream:
                    yield event
        except LLMError as exc:
            raise self._scrubbed(exc) from exc.__cause__

    async def _stream_once(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        if any(getattr(request, name, None) not in (None, [], {}) for name in ASKED_SAMPLERS):
            await self.backend()  # which of them the server takes, asked once
        model = await self.model_name()
        url, body = self._request_for(request, model)
        started = False
        try:
            async with self.client().stream("POST", url, json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise await self._status_error(response, model)
                started = True
                lines = response.aiter_lines()
                async for event in self._events(lines, request):
                    if event.kind == "done":  # before it: a reader may stop at "done"
                        await read_rest(response, lines)
                    yield event
        except httpx.HTTPError as exc:
            raise translate_transport_error(exc, self.endpoint, started, self.read_timeout) from exc

    async def check(self) -> ConnectionReport:
        checks: list[tuple[str, bool, str]] = []
        models: list[str] = []
        report = ConnectionReport(
            ok=False,
            provider=self.id,
            endpoint=self.endpoint,
            model=self.model or "",
            checks=checks,
        )
        try:
            models = await self.list_models()
            checks.append(
                (
                    "server reachable",
                    True,
                    f"{self.endpoint} answered and lists {len(models)} model(s)",
                )
            )
        except (ServerUnavailable, EndpointRefused) as exc:
            checks.append(("server reachable", False, str(exc)))
            return report
        except LLMError as exc:
            checks.append(("server reachable", True, f"{self.endpoint} answered"))
            checks.append(("models listed", None, f"listing models failed: {exc}"))
        report.models_available = models

        if self.model:
            known = not models or any(_same_model(self.model, name) for name in models)
            detail = (
                f"{self.model!r} is available"
                if models and known
                else f"the server lists no models, so {self.model!r} cannot be confirmed"
                if not models
                else f"{self.model!r} is not among: {', '.join(models[:20])}"
            )
            # None: could not be checked (the server lists nothing) — neither ✔ nor ✘.
            checks.append(("model known", (known if models else None), detail))
            if not known:
                return report
        elif models:
            report.model = models[0]
            checks.append(
                ("model known", True, f"no model named; using the first listed, {models[0]!r}")
            )
        else:
            checks.append(("model known", False, "no model named and the server lists none"))
            return report

        checks.append(await self.generation_check(self.mode))
        report.ok = all(ok is not False for _what, ok, _detail in checks)
        return report

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            try:
                await client.aclose()
            except RuntimeError:  # its event loop is already gone; nothing left to release
                pass


def _same_model(wanted: str, listed: str) -> bool:
    """Ollama lists 'llama3:latest' for a model the user calls 'llama3'."""
    return wanted == listed or f"{wanted}:latest" == listed or wanted == f"{listed}:latest"
