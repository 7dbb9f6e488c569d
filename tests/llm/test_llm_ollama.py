"""OllamaProvider (native API) against stubbed HTTP."""

import json

import httpx
import pytest
from llmtesting import chat, collect_sync, run, text_of

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.errors import ModelNotFound, ProviderHTTPError, StreamInterrupted
from talekeeper.llm.ollama import OllamaProvider


def ndjson(*objects) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode()


class Ollama:
    def __init__(self, body=b"", status=200, error="", models=("llama3.1:8b",)):
        self.body, self.status, self.error, self.models = body, status, error, list(models)
        self.requests: list[httpx.Request] = []

    def __call__(self, request):
        self.requests.append(request)
        if request.url.path == "/api/tags":
            return httpx.Response(
                200, json={"models": [{"name": m, "model": m} for m in self.models]}
            )
        if self.status >= 400:
            return httpx.Response(self.status, json={"error": self.error})
        return httpx.Response(
            200, content=self.body, headers={"content-type": "application/x-ndjson"}
        )

    @property
    def posted(self):
        post = [r for r in self.requests if r.method == "POST"][-1]
        return post.url.path, json.loads(post.content)

    def provider(self, endpoint="http://127.0.0.1:11434/v1", model="llama3.1:8b"):
        return OllamaProvider(endpoint, model, transport=httpx.MockTransport(self))


def test_chat_with_thinking_and_counts():
    server = Ollama(
        ndjson(
            {
                "message": {"role": "assistant", "content": "", "thinking": "They want in."},
                "done": False,
            },
            {"message": {"role": "assistant", "content": "You step "}, "done": False},
            {"message": {"role": "assistant", "content": "inside."}, "done": False},
            {
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 31,
                "eval_count": 3,
            },
        )
    )
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    events = collect_sync(server.provider(), chat(json_schema=schema, max_tokens=50, stop=["\n>"]))
    assert text_of(events, "reasoning") == "They want in."
    assert text_of(events) == "You step inside."
    usage = [e for e in events if e.kind == "usage"][0].usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (31, 3)
    assert events[-1].kind == "done" and events[-1].finish_reason == "stop"
    path, body = server.posted
    assert path == "/api/chat"  # the /v1 the user typed is dropped for the native API
    assert body["format"] == schema  # structured output, enforced by Ollama
    assert body["options"]["num_predict"] == 50 and body["options"]["stop"] == ["\n>"]
    assert body["messages"][-1] == {"role": "user", "content": "> You open the door."}


def test_generate_is_raw_completion():
    server = Ollama(
        ndjson(
            {"response": "<think>hm</think>Rain ", "done": False},
            {"response": "falls.", "done": True, "done_reason": "length"},
        )
    )
    events = collect_sync(
        server.provider(), GenerationRequest(mode="completion", prompt="Story:\n")
    )
    path, body = server.posted
    assert path == "/api/generate" and body["raw"] is True and body["prompt"] == "Story:\n"
    assert "format" not in body
    assert text_of(events, "reasoning") == "hm" and text_of(events) == "Rain falls."
    assert events[-1].finish_reason == "length"


def test_stream_without_done_is_interrupted():
    server = Ollama(ndjson({"message": {"content": "You"}, "done": False}))
    with pytest.raises(StreamInterrupted):
        collect_sync(server.provider(), chat())


def test_error_line_mid_stream():
    server = Ollama(
        ndjson({"message": {"content": "You"}, "done": False}, {"error": "model runner crashed"})
    )
    with pytest.raises(ProviderHTTPError, match="model runner crashed"):
        collect_sync(server.provider(), chat())


def test_unknown_model_lists_pulled_models():
    server = Ollama(status=404, error="model 'lama3' not found", models=["llama3.1:8b", "qwen3:4b"])
    with pytest.raises(ModelNotFound) as error:
        collect_sync(server.provider(model="lama3"), chat())
    assert "llama3.1:8b, qwen3:4b" in str(error.value)


def test_check_accepts_latest_tag():
    server = Ollama(ndjson({"message": {"content": "OK"}, "done": True}), models=["llama3:latest"])
    report = run(server.provider(model="llama3").check())
    assert report.ok, report.checks
    assert report.models_available == ["llama3:latest"]


def test_embeddings_through_the_native_api():
    seen = []

    def handler(request):
        if request.url.path == "/api/tags":
            return httpx.Response(200, json={"models": [{"name": "llama3.1:8b"}]})
        seen.append((request.url.path, json.loads(request.content)))
        if json.loads(request.content)["model"] != "nomic-embed-text":
            return httpx.Response(404, json={"error": 'model "x" not found, try pulling it first'})
        return httpx.Response(200, json={"embeddings": [[1, 0], [0.5, 0.5]]})

    provider = OllamaProvider(
        "http://127.0.0.1:11434", "llama3.1:8b", transport=httpx.MockTransport(handler)
    )
    assert run(provider.embed(["a", "b"], model="nomic-embed-text")) == [[1.0, 0.0], [0.5, 0.5]]
    assert seen[0] == ("/api/embed", {"model": "nomic-embed-text", "input": ["a", "b"]})
    assert run(provider.embed(["a"], model=None)) is None
    with pytest.raises(ModelNotFound, match="llama3.1:8b"):
        run(provider.embed(["a"], model="x"))
