"""Fixtures for the provider tests. `fakeserver` lives beside this file so other test
folders can reuse it (`from tests.llm.fakeserver import FakeOpenAIServer, FakeReply`)."""

from fakeserver import fake_openai_server  # noqa: F401  (re-exported fixture)
