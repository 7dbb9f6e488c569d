"""How many tokens the server's model can read: asked, not assumed.

Each server says it its own way; each reader below takes one answer (parsed JSON) and
returns the window in tokens, or None when that answer does not say:

- llama.cpp server: `GET /props` → `default_generation_settings.n_ctx` (the running
  context, per slot), older builds a top-level `n_ctx`;
- vLLM: `GET /v1/models` → each entry's `max_model_len`;
- LM Studio: `GET /api/v0/models/{model}` → `loaded_context_length` (what it was loaded
  with), else `max_context_length`;
- Ollama: `POST /api/show` → the `num_ctx` parameter of the model when its Modelfile sets
  one, else Ollama's own default context (4,096 tokens): Ollama does not give a model more
  than that unless asked, whatever `model_info.*.context_length` says the model was
  trained for.

A server that answers none of these leaves the budget at its fixed default.
"""

from __future__ import annotations

import re
from typing import Any

OLLAMA_DEFAULT_CONTEXT = 4096
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value >= 1:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and int(value) >= 1:
        return int(value)
    return None


def from_llama_props(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(body.get("n_ctx"))


def from_openai_models(body: Any, model: str | None) -> int | None:
    """vLLM's `max_model_len` on the entry for `model` (or the first entry)."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, dict)]
    chosen = next((e for e in entries if e.get("id") == model), entries[0] if entries else None)
    return _positive(chosen.get("max_model_len")) if chosen else None


def from_lmstudio_model(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    return _positive(body.get("loaded_context_length")) or _positive(body.get("max_context_length"))


def from_ollama_show(body: Any) -> int | None:
    if not isinstance(body, dict) or not (
        "model_info" in body or "parameters" in body or "modelfile" in body
    ):
        return None
    parameters = body.get("parameters")
    if isinstance(parameters, str):
        found = _NUM_CTX.search(parameters)
        if found:
            return int(found.group(1))
    trained = None
    info = body.get("model_info")
    if isinstance(info, dict):
        trained = next(
            (_positive(v) for k, v in info.items() if k.endswith(".context_length")), None
        )
    return min(trained, OLLAMA_DEFAULT_CONTEXT) if trained else OLLAMA_DEFAULT_CONTEXT
