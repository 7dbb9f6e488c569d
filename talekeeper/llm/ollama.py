"""Ollama's native API, for what it adds over its /v1 endpoint.

`format` takes a JSON schema and Ollama enforces it with a grammar, on every model,
in both chat and raw-completion calls; thinking comes back in its own `thinking`
field; `/api/tags` lists what is pulled; `/api/embed` embeds for the memory bank. The stream is NDJSON: one JSON object a line,
the last with `"done": true` and the token counts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from talekeeper.llm import backends, window
from talekeeper.llm.backends import Backend
from talekeeper.llm.base import GenerationRequest, StreamEvent, Usage
from talekeeper.llm.errors import ProviderHTTPError, StreamInterrupted
from talekeeper.llm.httpbase import HTTPProvider, message_from_body
from talekeeper.llm.openai import sampler_fields
from talekeeper.llm.settings import server_root
from talekeeper.llm.thinking import ThinkSplitter


class OllamaProvider(HTTPProvider):
    id = "ollama"
    samplers = backends.OLLAMA.samplers
    kind_label = "Ollama"
    supports_schema = True
    structured_by_default = True

    def __init__(self, endpoint: str, model: str | None = None, **options: Any) -> None:
        super().__init__(server_root(endpoint), model, **options)

    default_endpoint = "http://127.0.0.1:11434"

    def _fallback_backend(self) -> Backend:
        return backends.OLLAMA

    @property
    def description(self) -> str:
        return f"Ollama at {self.endpoint}, model {self.model or '(first listed)'}"

    async def list_models(self) -> list[str]:
        body = await self._get_json(f"{self.endpoint}/api/tags")
        entries = body.get("models", []) if isinstance(body, dict) else []
        return [str(e.get("name") or e.get("model")) for e in entries if isinstance(e, dict)]

    async def _ask_window(self) -> int | None:
        """`POST /api/show`: the model's num_ctx, else Ollama's default (see `llm.window`)."""
        model = await self.model_name()
        return window.from_ollama_show(
            await self._try_json("POST", f"{self.endpoint}/api/show", {"model": model})
        )

    async def embed(self, texts: list[str], model: str | None = None) -> list[list[float]] | None:
        """`POST /api/embed` with the named embedding model (None without one)."""
        if not model or not texts:
            return None
        body = await self._json(
            "POST", f"{self.endpoint}/api/embed", {"model": model, "input": list(texts)}, model
        )
        try:
            return [[float(x) for x in row] for row in body["embeddings"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderHTTPError(
                f"The Ollama server at {self.endpoint} sent unreadable embeddings."
            ) from exc

    def _request_for(self, request: GenerationRequest, model: str) -> tuple[str, dict[str, Any]]:
        options: dict[str, Any] = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            "num_predict": request.max_tokens,
        }
        if request.stop:
            options["stop"] = list(request.stop)
        options.update(sampler_fields(request, backends.OLLAMA))  # its options, as it spells them
        body: dict[str, Any] = {"model": model, "stream": True, "options": options}
        if request.json_schema is not None:
            body["format"] = request.json_schema
        if request.mode == "chat":
            body["messages"] = [m.model_dump() for m in request.messages]
            return f"{self.endpoint}/api/chat", body
        # raw: the prompt is sent as written, without the model's chat template.
        body.update(prompt=request.prompt, raw=True)
        return f"{self.endpoint}/api/generate", body

    async def _events(
        self, lines: AsyncIterator[str], request: GenerationRequest
    ) -> AsyncIterator[StreamEvent]:
        splitter = ThinkSplitter()
        final: dict[str, Any] | None = None
        async for line in lines:
            if not line.strip():
                continue
            try:
                chunk = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ProviderHTTPError(
                    f"The Ollama server at {self.endpoint} sent an unreadable line: {line[:200]!r}"
                ) from exc
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise ProviderHTTPError(
                    f"The Ollama server at {self.endpoint} failed mid-answer: {message_from_body(chunk)}"
                )
            if request.mode == "chat":
                message = chunk.get("message") or {}
                thinking, content = message.get("thinking"), message.get("content")
            else:
                thinking, content = chunk.get("thinking"), chunk.get("response")
            if thinking:
                yield StreamEvent("reasoning", text=thinking)
            if content:
                for kind, piece in splitter.feed(content):
                    yield StreamEvent(kind, text=piece)
            if chunk.get("done"):
                final = chunk
                break
        for kind, piece in splitter.flush():
            yield StreamEvent(kind, text=piece)
        if final is None:
            raise StreamInterrupted(
                f"The answer from the Ollama server at {self.endpoint} stopped before it was "
                "finished. Try again."
            )
        if "prompt_eval_count" in final or "eval_count" in final:
            yield StreamEvent(
                "usage",
                usage=Usage(
                    prompt_tokens=final.get("prompt_eval_count"),
                    completion_tokens=final.get("eval_count"),
                ),
            )
        yield StreamEvent("done", finish_reason=final.get("done_reason") or "stop")
