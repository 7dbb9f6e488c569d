"""Embeddings through an OpenAI-compatible server's /v1/embeddings (stubbed HTTP)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from talekeeper.llm.base import Provider
from talekeeper.llm.errors import LLMError
from talekeeper.llm.openai import OpenAIProvider


def provider(handler) -> OpenAIProvider:
    return OpenAIProvider(
        "http://127.0.0.1:11434/v1", "story-model", transport=httpx.MockTransport(handler)
    )


def test_embeddings_request_and_order() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["url"] = str(request.url)
        seen["body"] = json.loads(request.content)
        return httpx.Response(
            200,
            json={
                "data": [
                    {"index": 1, "embedding": [0.0, 1.0]},
                    {"index": 0, "embedding": [1.0, 0.0]},
                ]
            },
        )

    vectors = asyncio.run(provider(handler).embed(["a", "b"], model="nomic-embed-text"))
    assert vectors == [[1.0, 0.0], [0.0, 1.0]]
    assert seen["url"] == "http://127.0.0.1:11434/v1/embeddings"
    assert seen["body"] == {"model": "nomic-embed-text", "input": ["a", "b"]}


def test_no_embedding_model_means_none() -> None:
    def handler(request: httpx.Request) -> httpx.Response:  # pragma: no cover - never called
        raise AssertionError("no request without a model")

    assert asyncio.run(provider(handler).embed(["a"], model=None)) is None


@pytest.mark.parametrize(
    "response",
    [httpx.Response(404, json={"error": "no such model"}), httpx.Response(200, json={"nope": 1})],
)
def test_embedding_errors_are_llm_errors(response: httpx.Response) -> None:
    with pytest.raises(LLMError):
        asyncio.run(provider(lambda request: response).embed(["a"], model="m"))


def test_base_provider_does_not_embed() -> None:
    assert Provider.embed.__doc__ and "None where unsupported" in Provider.embed.__doc__
