"""Asking the server for its context window, and sizing the budget from it."""

from __future__ import annotations

import asyncio

import pytest

from talekeeper.context.budget import (
    DEFAULT_CAP,
    EMBEDDED_BUDGET,
    UNKNOWN_WINDOW_BUDGET,
    context_budget,
)
from talekeeper.llm import window
from talekeeper.llm.embedded import EmbeddedProvider
from talekeeper.llm.ollama import OllamaProvider
from talekeeper.llm.openai import OpenAIProvider
from talekeeper.llm.scripted import ScriptedProvider
from tests.llm.fakeserver import FakeOpenAIServer

LLAMA = {("GET", "/props"): {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}}
VLLM_FIELDS = {"max_model_len": 32768}
LMSTUDIO = {
    ("GET", "/api/v0/models/fake-model"): {
        "id": "fake-model",
        "max_context_length": 131072,
        "loaded_context_length": 16384,
    }
}
OLLAMA = {
    ("POST", "/api/show"): {
        "parameters": "temperature 0.7\nnum_ctx 12288",
        "model_info": {"llama.context_length": 131072},
    }
}
OLLAMA_DEFAULT = {
    ("POST", "/api/show"): {
        "parameters": "temperature 0.7",
        "model_info": {"gemma3.context_length": 131072},
    }
}


def ask(server: FakeOpenAIServer, cls=OpenAIProvider) -> int | None:
    provider = cls(server.url, "fake-model")

    async def go() -> int | None:
        try:
            return await provider.context_window()
        finally:
            await provider.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("extra", "fields", "expected"),
    [
        (LLAMA, None, 8192),  # llama.cpp server
        ({}, VLLM_FIELDS, 32768),  # vLLM
        (LMSTUDIO, None, 16384),  # LM Studio: what it loaded, not the model's maximum
        (OLLAMA, None, 12288),  # Ollama /v1 with num_ctx set in the Modelfile
        (OLLAMA_DEFAULT, None, window.OLLAMA_DEFAULT_CONTEXT),  # Ollama's own default
        ({}, None, None),  # a server that does not say
    ],
)
def test_the_openai_provider_asks_each_kind_of_server(extra, fields, expected) -> None:
    with FakeOpenAIServer(extra=extra, model_fields=fields) as server:
        assert ask(server) == expected


def test_the_native_ollama_provider_asks_api_show() -> None:
    with FakeOpenAIServer(extra=OLLAMA) as server:
        assert ask(server, OllamaProvider) == 12288
        shown = [r for r in server.requests if r.path == "/api/show"]
        assert shown and shown[0].body == {"model": "fake-model"}


def test_the_window_is_asked_once_but_a_down_server_is_asked_again() -> None:
    with FakeOpenAIServer(extra=LLAMA) as server:
        provider = OpenAIProvider(server.url, "fake-model")

        async def twice() -> tuple[int | None, int | None]:
            try:
                return await provider.context_window(), await provider.context_window()
            finally:
                await provider.aclose()

        assert asyncio.run(twice()) == (8192, 8192)
        assert sum(r.path == "/props" for r in server.requests) == 1
    server = FakeOpenAIServer()
    server.start()
    url = server.url
    server.stop()
    assert asyncio.run(OpenAIProvider(url, "m").context_window()) is None


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        "x",
        {"n_ctx": -1},
        {"n_ctx": True},
        {"default_generation_settings": {"n_ctx": "lots"}},
    ],
)
def test_nonsense_answers_say_nothing(body) -> None:
    assert window.from_llama_props(body) is None
    assert window.from_openai_models(body, "m") is None
    assert window.from_lmstudio_model(body) is None


def run_budget(provider, cap):
    return asyncio.run(context_budget(provider, cap))


def test_the_budget_is_the_window_within_the_cap() -> None:
    with FakeOpenAIServer(extra=LLAMA) as server:
        assert run_budget(OpenAIProvider(server.url, "fake-model"), None).tokens == 8192
        assert run_budget(OpenAIProvider(server.url, "fake-model"), 4096).tokens == 4096
        capped = run_budget(OpenAIProvider(server.url, "fake-model"), 20000)
        assert capped.tokens == 8192 and "context window" in capped.why
    with FakeOpenAIServer(model_fields={"max_model_len": 131072}) as server:
        assert run_budget(OpenAIProvider(server.url, "fake-model"), None).tokens == DEFAULT_CAP
    assert run_budget(ScriptedProvider([]), None).tokens == UNKNOWN_WINDOW_BUDGET
    assert run_budget(ScriptedProvider([]), 1024).tokens == 1024
    embedded = EmbeddedProvider(model_path="/nonexistent.gguf")
    assert run_budget(embedded, None).tokens == EMBEDDED_BUDGET <= embedded.n_ctx - 1024
    small = EmbeddedProvider(model_path="/nonexistent.gguf", n_ctx=4096)
    assert run_budget(small, None).tokens == 3072  # the state pass still fits after it
    assert run_budget(small, 100000).tokens == 4096
