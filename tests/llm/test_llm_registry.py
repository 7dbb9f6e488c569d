import httpx
from llmtesting import chat, collect_sync, text_of

from talekeeper.llm.base import ConnectionReport, Provider
from talekeeper.llm.embedded import EmbeddedProvider
from talekeeper.llm.ollama import OllamaProvider
from talekeeper.llm.openai import OpenAIProvider
from talekeeper.llm.registry import build_provider, describe, provider_ids, register_provider
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.llm.settings import ModelSettings


def test_no_endpoint_builds_the_embedded_model_without_starting_it():
    provider = build_provider(ModelSettings(embedded_context=2048, embedded_threads=3))
    assert isinstance(provider, EmbeddedProvider)
    assert (provider.n_ctx, provider.n_threads) == (2048, 3)
    assert describe(ModelSettings()) == "embedded SmolLM2-135M (demo quality)"
    assert provider.description == describe(ModelSettings())


def test_custom_gguf_is_described_by_file_name():
    settings = ModelSettings(embedded_model_path="/models/tiny-story.Q8_0.gguf")
    assert describe(settings) == "embedded tiny-story.Q8_0.gguf (demo quality)"


def test_endpoint_builds_openai_compatible_with_settings_applied():
    settings = ModelSettings(
        endpoint="http://127.0.0.1:8080", model="qwen", api_key="k", read_timeout=33
    )
    provider = build_provider(settings)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.endpoint, provider.model, provider.api_key, provider.read_timeout) == (
        "http://127.0.0.1:8080/v1",
        "qwen",
        "k",
        33,
    )
    assert describe(settings) == "OpenAI-compatible at http://127.0.0.1:8080/v1, model qwen"
    assert describe(ModelSettings(endpoint="http://127.0.0.1:8080/v1/")) == (
        "OpenAI-compatible at http://127.0.0.1:8080/v1, the first model it lists"
    )


def test_ollama_native():
    settings = ModelSettings(
        provider="ollama", endpoint="http://127.0.0.1:11434/v1", model="llama3"
    )
    provider = build_provider(settings)
    assert isinstance(provider, OllamaProvider) and provider.endpoint == "http://127.0.0.1:11434"
    assert describe(settings) == "Ollama at http://127.0.0.1:11434, model llama3"


def test_injected_transport_reaches_the_provider_behind_the_policy():
    seen = []

    def handler(request):
        seen.append(request.url.path)
        return httpx.Response(
            200,
            content=b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n',
        )

    provider = build_provider(
        ModelSettings(endpoint="http://10.1.2.3:8000", model="m"), httpx.MockTransport(handler)
    )
    assert text_of(collect_sync(provider, chat())) == "hi"
    assert seen == ["/v1/chat/completions"]


def test_extensions_register_through_the_same_seam(monkeypatch):
    import talekeeper.llm.registry as registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    built = ScriptedProvider(["scripted narration"])
    register_provider(
        "openai", lambda settings, transport: built, lambda settings: "scripted stand-in"
    )
    settings = ModelSettings(endpoint="http://127.0.0.1:1")
    assert build_provider(settings) is built
    assert describe(settings) == "scripted stand-in"
    assert set(provider_ids()) >= {"openai", "ollama", "embedded"}


def test_every_builtin_is_a_provider():
    for settings in (
        ModelSettings(),
        ModelSettings(endpoint="http://127.0.0.1:1"),
        ModelSettings(provider="ollama"),
    ):
        provider = build_provider(settings)
        assert isinstance(provider, Provider)
        assert callable(provider.check) and ConnectionReport
