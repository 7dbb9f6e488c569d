"""Every service preset's documented base URL becomes the OpenAI base requests go to."""

from __future__ import annotations

import pytest

from talekeeper.llm import services
from talekeeper.llm.settings import ModelSettings, openai_base


@pytest.mark.parametrize(
    ("service", "base"),
    [
        ("openrouter", "https://openrouter.ai/api/v1"),
        ("openai", "https://api.openai.com/v1"),
        ("groq", "https://api.groq.com/openai/v1"),
        ("together", "https://api.together.ai/v1"),
        ("mistral", "https://api.mistral.ai/v1"),
        ("deepseek", "https://api.deepseek.com/v1"),
        ("google", "https://generativelanguage.googleapis.com/v1beta/openai"),
        ("anthropic", "https://api.anthropic.com/v1"),
        ("llamacpp", "http://127.0.0.1:8080/v1"),
        ("koboldcpp", "http://127.0.0.1:5001/v1"),
        ("lmstudio", "http://127.0.0.1:1234/v1"),
        ("vllm", "http://127.0.0.1:8000/v1"),
    ],
)
def test_each_preset_reaches_its_documented_base(service: str, base: str) -> None:
    preset = services.BY_ID[service]
    assert openai_base(preset.base_url) == base
    assert openai_base(preset.base_url + "/") == base  # as a player might paste it
    ModelSettings(provider=preset.provider, endpoint=preset.base_url)  # a valid setting


def test_hosted_services_are_known_by_host_and_local_ones_are_not() -> None:
    hosted = [s for s in services.SERVICES if s.hosted]
    assert {s.id for s in hosted} == {
        "openrouter", "openai", "groq", "together", "mistral", "deepseek", "google", "anthropic"
    }  # fmt: skip
    for preset in hosted:
        assert preset.base_url.startswith("https://") and preset.needs_key
        assert services.hosted_service_at(preset.base_url + "/models") is preset
        assert preset.samplers is not None and "stop" in preset.samplers
    assert services.hosted_service_at("http://127.0.0.1:8080/v1") is None
    assert services.BY_ID["ollama"].provider == "ollama"
