"""Any OpenAI-compatible server: Ollama's /v1, llama.cpp server, vLLM, LM Studio.

This is the path most players use, so it is the most forgiving about server quirks:
reasoning arrives as `delta.reasoning_content` (llama.cpp, vLLM), `delta.reasoning`
(Ollama, LM Studio) or inline `<think>` spans, all of which become "reasoning" events;
usage may come in the last chunk or a chunk of its own. It is also strict where a
player would otherwise lose text silently: a stream that ends without `[DONE]` or a
finish reason is an interruption, not a short answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from talekeeper.llm import backends, window
from talekeeper.llm.backends import NUMBERS, Backend
from talekeeper.llm.base import GenerationRequest, StreamEvent, Usage
from talekeeper.llm.catalog import ModelInfo, from_models_answer
from talekeeper.llm.errors import LLMError, ProviderHTTPError, StreamInterrupted
from talekeeper.llm.httpbase import (
    HTTPProvider,
    message_from_body,
)
from talekeeper.llm.services import Service, hosted_service_at
from talekeeper.llm.settings import openai_base, server_root
from talekeeper.llm.thinking import ThinkSplitter


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` payload of each server-sent event (multi-line data joined by newlines)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):  # comment / keep-alive
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def sampler_fields(request: GenerationRequest, backend: Backend) -> dict[str, Any]:
    """The request's optional samplers as this server spells them, only those it takes."""
    fields: dict[str, Any] = {
        backend.name_of(name): getattr(request, name)
        for name in NUMBERS
        if getattr(request, name) is not None and backend.takes(name)
    }
    if request.logit_bias and backend.takes("logit_bias"):
        fields["logit_bias"] = {str(token): bias for token, bias in request.logit_bias.items()}
    if request.banned_phrases and backend.banned_by == "native":
        fields["banned_tokens"] = list(request.banned_phrases)  # KoboldCpp's phrase banning
    return fields


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(
        prompt_tokens=raw.get("prompt_tokens"), completion_tokens=raw.get("completion_tokens")
    )


class OpenAIProvider(HTTPProvider):
    id = "openai"
    samplers = backends.GENERIC_LOCAL.samplers
    kind_label = "OpenAI-compatible"
    supports_schema = True

    def __init__(self, endpoint: str, model: str | None = None, **options: Any) -> None:
        super().__init__(openai_base(endpoint), model, **options)
        # Ask for token usage in the stream; dropped for a server that rejects the field.
        self._stream_options = True

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        yielded = False
        try:
            async for event in super().stream(request):
                yielded = True
                yield event
            return
        except ProviderHTTPError as exc:
            if yielded or not self._stream_options or "stream_options" not in str(exc):
                raise
            self._stream_options = False
        async for event in super().stream(request):
            yield event

    @property
    def description(self) -> str:
        return f"OpenAI-compatible at {self.endpoint}, model {self.model or '(first listed)'}"

    async def list_models(self) -> list[str]:
        return [info.id for info in await self.catalog()]

    async def catalog(self) -> list[ModelInfo]:
        """`GET /models`, with the context, price and samplers a service says (OpenRouter)."""
        return from_models_answer(await self._get_json(f"{self.endpoint}/models"))

    # --- which samplers the server takes (llm/backends.py) ---------------------------

    def _service(self) -> Service | None:
        return hosted_service_at(self.endpoint)

    def _fallback_backend(self) -> Backend:
        known = self._service()
        if known is not None and known.samplers is not None:
            return backends.hosted(known.label, known.samplers)
        return backends.GENERIC_LOCAL

    async def _detect_backend(self) -> Backend:
        """A hosted service by its documented list (OpenRouter's by the model's own), a
        local server by asking it (`backends.detect`)."""
        known = self._service()
        if known is not None:
            backend = self._fallback_backend()
            if self.model:
                try:
                    listed = {info.id: info for info in await self.catalog()}
                except LLMError:
                    listed = {}
                info = listed.get(self.model)
                backend = backend.narrowed(info.supported if info else None)
            return backend
        root = server_root(self.endpoint)
        return await backends.detect(lambda path: self._try_json("GET", root + path))

    async def _token_of(self, phrase: str) -> int | None:
        """llama.cpp's `POST /tokenize`: the phrase's one token, or None."""
        body = await self._try_json(
            "POST", server_root(self.endpoint) + "/tokenize", {"content": phrase}
        )
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if isinstance(tokens, list) and len(tokens) == 1 and isinstance(tokens[0], int):
            return tokens[0]
        return None

    async def _ask_window(self) -> int | None:
        """llama.cpp's /props, vLLM's /v1/models, LM Studio's /api/v0, Ollama's /api/show."""
        root = server_root(self.endpoint)
        found = window.from_llama_props(await self._try_json("GET", f"{root}/props"))
        if found:
            return found
        found = window.from_openai_models(
            await self._try_json("GET", f"{self.endpoint}/models"), self.model
        )
        if found:
            return found
        model = await self.model_name()
        found = window.from_lmstudio_model(
            await self._try_json("GET", f"{root}/api/v0/models/{model}")
        )
        if found:
            return found
        return window.from_ollama_show(
            await self._try_json("POST", f"{root}/api/show", {"model": model})
        )

    async def embed(self, texts: list[str], model: str | None = None) -> list[list[float]] | None:
        """`POST /v1/embeddings` with the named embedding model (None without one)."""
        if not model or not texts:
            return None
        body = await self._json(
            "POST", f"{self.endpoint}/embeddings", {"model": model, "input": list(texts)}
        )
        try:
            rows = sorted(body["data"], key=lambda row: row.get("index", 0))
            return [[float(x) for x in row["embedding"]] for row in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderHTTPError(
                f"The model server at {self.endpoint} sent unreadable embeddings."
            ) from exc

    def _schema_fields(self, request: GenerationRequest) -> dict[str, Any]:
        """How a JSON schema is asked for; the embedded server overrides this."""
        if request.json_schema is None:
            return {}
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "talekeeper_output",
                    "strict": True,
                    "schema": request.json_schema,
                },
            }
        }

    def _request_for(self, request: GenerationRequest, model: str) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": model,
            "stream": True,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if self._stream_options:
            body["stream_options"] = {"include_usage": True}
        if request.stop:
            body["stop"] = list(request.stop)
        body.update(sampler_fields(request, self._known_backend()))
        body.update(self._schema_fields(request))
        if request.mode == "chat":
            body["messages"] = [m.model_dump() for m in request.messages]
            return f"{self.endpoint}/chat/completions", body
        body["prompt"] = request.prompt
        return f"{self.endpoint}/completions", body

    async def _events(
        self, lines: AsyncIterator[str], request: GenerationRequest
    ) -> AsyncIterator[StreamEvent]:
        splitter = ThinkSplitter()
        finish: str | None = None
        usage: Usage | None = None
        saw_done = False
        async for data in sse_data(lines):
            if data.strip() == "[DONE]":
                saw_done = True
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError as exc:
                raise ProviderHTTPError(
                    f"The model server at {self.endpoint} sent an unreadable stream chunk: {data[:200]!r}"
                ) from exc
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise ProviderHTTPError(
                    f"The model server at {self.endpoint} failed mid-answer: {message_from_body(chunk)}"
                )
            usage = _usage(chunk.get("usage")) or usage
            choices = chunk.get("choices") or []
            choice = choices[0] if choices and isinstance(choices[0], dict) else {}
            if request.mode == "chat":
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                content = delta.get("content")
            else:
                reasoning, content = None, choice.get("text")
            if reasoning:
                yield StreamEvent("reasoning", text=reasoning)
            if content:
                for kind, piece in splitter.feed(content):
                    yield StreamEvent(kind, text=piece)
            finish = choice.get("finish_reason") or finish
        for kind, piece in splitter.flush():
            yield StreamEvent(kind, text=piece)
        if not saw_done and finish is None:
            raise StreamInterrupted(
                f"The answer from the model server at {self.endpoint} stopped before it was "
                "finished (the stream ended without a finish signal). Try again."
            )
        if usage is not None:
            yield StreamEvent("usage", usage=usage)
        yield StreamEvent("done", finish_reason=finish or "stop")
