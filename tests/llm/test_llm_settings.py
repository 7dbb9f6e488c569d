import pytest
from pydantic import ValidationError

from talekeeper.llm.settings import ALLOW_REMOTE_ENV, ModelSettings, openai_base, server_root


def test_defaults_mean_embedded_model():
    settings = ModelSettings()
    assert settings.provider == "auto"
    assert settings.resolved_provider() == "embedded"
    assert (settings.connect_timeout, settings.read_timeout, settings.embedded_context) == (
        5.0,
        120.0,
        8192,  # SmolLM2's trained length: room for the budget and the state pass after it
    )


def test_auto_with_endpoint_means_openai_compatible():
    assert ModelSettings(endpoint="http://127.0.0.1:8080").resolved_provider() == "openai"
    assert ModelSettings(provider="ollama").resolved_provider() == "ollama"


def test_blank_form_fields_are_unset():
    settings = ModelSettings(endpoint="  ", model="", api_key="", embedded_model_path="")
    assert (settings.endpoint, settings.model, settings.api_key, settings.embedded_model_path) == (
        None,
    ) * 4


@pytest.mark.parametrize(
    "endpoint",
    [
        "ftp://127.0.0.1/v1",
        "127.0.0.1:8080",
        "http://",
        "http://user:pw@127.0.0.1:8080",
        "http://127.0.0.1/v1?x=1",
    ],
)
def test_bad_endpoints_are_rejected(endpoint):
    with pytest.raises(ValidationError):
        ModelSettings(endpoint=endpoint)


def test_unknown_fields_are_rejected():
    with pytest.raises(ValidationError):
        ModelSettings(verify_tls=False)


def test_openai_provider_needs_an_endpoint():
    with pytest.raises(ValidationError, match="needs an endpoint"):
        ModelSettings(provider="openai")


def test_allow_remote_comes_from_the_operator_environment(monkeypatch):
    monkeypatch.delenv(ALLOW_REMOTE_ENV, raising=False)
    assert ModelSettings().allow_remote is False
    monkeypatch.setenv(ALLOW_REMOTE_ENV, "1")
    assert ModelSettings().allow_remote is True
    monkeypatch.setenv(ALLOW_REMOTE_ENV, "0")
    assert ModelSettings().allow_remote is False


def test_every_setting_is_documented():
    for name, info in ModelSettings.model_fields.items():
        assert info.description and len(info.description) > 20, name


@pytest.mark.parametrize(
    ("endpoint", "base", "root"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("https://box.lan/llm/v1", "https://box.lan/llm/v1", "https://box.lan/llm"),
    ],
)
def test_endpoint_with_or_without_v1(endpoint, base, root):
    assert openai_base(endpoint) == base
    assert server_root(endpoint) == root
