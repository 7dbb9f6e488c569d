"""Samplers reach the model: every provider that takes min-p, top-k, repetition and
presence penalties, stop strings and a seed gets them; one that does not says so."""

from __future__ import annotations

import asyncio

from llmtesting import chat, collect_sync, delta, sse
from test_llm_ollama import Ollama, ndjson
from test_llm_openai import Server

from talekeeper.context.generation import GenerationSettings
from talekeeper.llm.ollama import OllamaProvider
from talekeeper.llm.openai import OpenAIProvider
from talekeeper.llm.scripted import ScriptedProvider

CHOSEN = {
    "min_p": 0.05,
    "top_k": 40,
    "repetition_penalty": 1.1,
    "presence_penalty": 0.4,
    "seed": 7,
    "stop": "\\n> |###",
}


def test_settings_keep_samplers_and_empty_means_the_servers_default() -> None:
    chosen = GenerationSettings(**CHOSEN).samplers()
    assert chosen == {
        "min_p": 0.05,
        "top_k": 40,
        "repetition_penalty": 1.1,
        "presence_penalty": 0.4,
        "seed": 7,
        "stop": ["\n> ", "###"],
    }
    assert GenerationSettings(min_p="", top_k="", seed=" ").samplers() == {}


def test_openai_compatible_servers_get_every_sampler() -> None:
    server = Server(sse(delta("x", finish="stop")))
    collect_sync(server.provider(), chat(**GenerationSettings(**CHOSEN).samplers()))
    body = server.posted
    assert (
        body["min_p"],
        body["top_k"],
        body["repeat_penalty"],
        body["presence_penalty"],
        body["seed"],
    ) == (0.05, 40, 1.1, 0.4, 7)
    assert body["stop"] == ["\n> ", "###"]
    plain = Server(sse(delta("x", finish="stop")))
    collect_sync(plain.provider(), chat())
    assert not {"min_p", "top_k", "repeat_penalty", "presence_penalty", "seed"} & set(plain.posted)


def test_ollama_gets_them_as_options() -> None:
    server = Ollama(
        ndjson(
            {"message": {"role": "assistant", "content": "x"}, "done": True, "done_reason": "stop"}
        )
    )
    collect_sync(server.provider(), chat(**GenerationSettings(**CHOSEN).samplers()))
    _, body = server.posted
    options = body["options"]
    assert (
        options["min_p"],
        options["top_k"],
        options["repeat_penalty"],
        options["presence_penalty"],
        options["seed"],
    ) == (0.05, 40, 1.1, 0.4, 7)


def test_a_provider_that_does_not_take_them_says_so() -> None:
    chosen = GenerationSettings(**CHOSEN).samplers()

    def ignored(provider) -> list[str]:
        backend = asyncio.run(provider.backend())
        return [name for name in chosen if not backend.takes(name)]

    chosen["dry_base"] = 1.75
    assert ignored(ScriptedProvider(["x"])) == ["dry_base"]
    # a server that cannot be asked (nothing listens): what is assumed of it
    assert ignored(OpenAIProvider("http://127.0.0.1:1/v1", "m")) == ["dry_base"]
    assert ignored(OllamaProvider("http://127.0.0.1:11434", "m")) == ["dry_base"]
