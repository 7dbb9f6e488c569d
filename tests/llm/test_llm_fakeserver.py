"""OpenAIProvider streaming over real HTTP from the fake server on loopback."""

import ssl
import threading

import httpx
import pytest
from fakeserver import FakeOpenAIServer, FakeReply
from llmtesting import chat, collect, collect_sync, run, text_of

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.errors import ModelNotFound, ServerUnavailable, StreamInterrupted
from talekeeper.llm.openai import OpenAIProvider
from talekeeper.llm.registry import build_provider
from talekeeper.llm.settings import ModelSettings


def test_chat_stream_over_http(fake_openai_server):
    fake_openai_server.queue(
        FakeReply(
            "You open the door. Cold air rushes in.", reasoning="Describe the door.", usage=(40, 9)
        )
    )
    provider = build_provider(ModelSettings(endpoint=fake_openai_server.root, model="fake-model"))
    events = collect_sync(provider, chat(max_tokens=64))
    assert text_of(events) == "You open the door. Cold air rushes in."
    assert text_of(events, "reasoning") == "Describe the door."
    assert len([e for e in events if e.kind == "text"]) > 3  # really streamed in pieces
    usage = [e for e in events if e.kind == "usage"][0].usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (40, 9)
    (request,) = fake_openai_server.generation_requests
    assert request.path == "/v1/chat/completions"
    assert (
        request.body["max_tokens"] == 64
        and request.body["messages"][-1]["content"] == "> You open the door."
    )


def test_completion_stream_over_http(fake_openai_server):
    fake_openai_server.queue("The rain stops.")
    provider = OpenAIProvider(fake_openai_server.url, "fake-model")
    events = collect_sync(provider, GenerationRequest(mode="completion", prompt="> You wait.\n"))
    assert text_of(events) == "The rain stops."
    assert fake_openai_server.generation_requests[0].body["prompt"] == "> You wait.\n"


def test_connection_cut_mid_stream(fake_openai_server):
    fake_openai_server.queue(
        FakeReply("You open the door and step through.", chunk_size=4, cut_after_chunks=3)
    )
    provider = OpenAIProvider(fake_openai_server.url, "fake-model")
    seen = []

    async def go():
        try:
            async for event in provider.stream(chat()):
                seen.append(event)
        finally:
            await provider.aclose()

    with pytest.raises(StreamInterrupted):
        run(go())
    assert text_of(seen) == "You open the"
    assert not any(e.kind == "done" for e in seen)


def test_missing_done_and_finish_over_http(fake_openai_server):
    fake_openai_server.queue(
        FakeReply("Half a sent", finish_reason=None, send_done=False, usage=None)
    )
    with pytest.raises(StreamInterrupted):
        collect_sync(OpenAIProvider(fake_openai_server.url, "fake-model"), chat())


def test_stall_longer_than_read_timeout(fake_openai_server):
    fake_openai_server.queue(
        FakeReply("abcdefgh", chunk_size=4, delay=0.0),
        FakeReply("abcdefgh", chunk_size=4, delay=1.0),
    )
    provider = OpenAIProvider(fake_openai_server.url, "fake-model", read_timeout=0.3)
    assert text_of(collect_sync(provider, chat())) == "abcdefgh"
    with pytest.raises(StreamInterrupted, match="sent nothing for 0.3 seconds"):
        collect_sync(provider, chat())


def test_unknown_model_over_http():
    with FakeOpenAIServer(models=["narrator-7b", "narrator-13b"], strict_models=True) as server:
        with pytest.raises(ModelNotFound) as error:
            collect_sync(OpenAIProvider(server.url, "narator-7b"), chat())
    assert "narrator-7b, narrator-13b" in str(error.value)


def test_server_not_running():
    server = FakeOpenAIServer().start()
    url = server.url
    server.stop()  # nothing listens on that port any more
    with pytest.raises(ServerUnavailable) as error:
        collect_sync(OpenAIProvider(url, "fake-model", connect_timeout=2), chat())
    assert url in str(error.value)


def test_localhost_name_resolves_and_falls_back_between_addresses(fake_openai_server):
    # The fake server listens on 127.0.0.1 only; "localhost" may resolve to ::1 first.
    fake_openai_server.queue("Hello.")
    provider = OpenAIProvider(f"http://localhost:{fake_openai_server.port}", "fake-model")
    assert text_of(collect_sync(provider, chat())) == "Hello."
    assert (
        fake_openai_server.generation_requests[0].headers["Host"]
        == f"localhost:{fake_openai_server.port}"
    )


def test_check_against_a_real_server(fake_openai_server):
    fake_openai_server.queue("OK")
    report = run(OpenAIProvider(fake_openai_server.url, "fake-model").check())
    assert report.ok, report.checks
    assert report.models_available == ["fake-model"]


def test_replies_can_be_computed_and_held_in_flight():
    gate = threading.Event()

    def reply(request):
        return FakeReply(
            f"You said: {request.body['messages'][-1]['content']}", chunk_size=3, gate=gate
        )

    async def go(server):
        provider = OpenAIProvider(server.url, "fake-model")
        try:
            stream = provider.stream(chat("hello"))
            first = await stream.__anext__()
            assert server.requests[-1].body is not None and first.kind == "text"
            gate.set()
            rest = [e async for e in stream]
            return first.text + text_of(rest)
        finally:
            await provider.aclose()

    with FakeOpenAIServer(reply) as server:
        assert run(go(server)) == "You said: hello"


def test_empty_queue_is_a_clear_error(fake_openai_server):
    with pytest.raises(Exception, match="no reply queued"):
        collect_sync(OpenAIProvider(fake_openai_server.url, "fake-model"), chat())


def test_one_client_serves_several_turns(fake_openai_server):
    fake_openai_server.queue("One.", "Two.")
    provider = OpenAIProvider(fake_openai_server.url, "fake-model")

    async def go():
        try:
            return [text_of(await collect(provider, chat())) for _ in range(2)]
        finally:
            await provider.aclose()

    assert run(go()) == ["One.", "Two."]


def test_tls_certificates_are_always_verified(loopback_certificate):
    with FakeOpenAIServer(["Hello."], ssl_context=loopback_certificate.server_context) as server:
        # Control: the server itself works for a client that trusts its certificate.
        trusting = ssl.create_default_context(cafile=str(loopback_certificate.path))
        assert httpx.get(f"{server.url}/models", verify=trusting).status_code == 200
        # talekeeper does not trust a self-signed certificate, and offers no way around it.
        with pytest.raises(ServerUnavailable, match="certificate"):
            collect_sync(OpenAIProvider(server.url, "fake-model"), chat())
        assert server.generation_requests == []
