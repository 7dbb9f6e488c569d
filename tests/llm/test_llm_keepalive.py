"""The connection to the model server is kept alive between calls, and only when whole.

Over real HTTP from the fake server on loopback (which counts the TCP connections it
accepts), and over stubbed HTTP for what a real server cannot be made to do on cue.
"""

import asyncio
import ssl
import threading
import time

import httpx
import pytest
from fakeserver import FakeOpenAIServer, FakeReply
from llmtesting import chat, collect, delta, run, sse, text_of

from talekeeper.llm.errors import ProviderHTTPError, StreamInterrupted
from talekeeper.llm.httpbase import REST_BYTES, REST_SECONDS
from talekeeper.llm.ollama import OllamaProvider
from talekeeper.llm.openai import OpenAIProvider
from tests import waiting

ENDPOINT = "http://127.0.0.1:8080"


def play(server: FakeOpenAIServer, turns: int, **options) -> list[str]:
    """`turns` generations in a row on one provider, as a story's turns are."""
    provider = OpenAIProvider(server.url, "fake-model", **options)

    async def go() -> list[str]:
        try:
            return [text_of(await collect(provider, chat())) for _ in range(turns)]
        finally:
            await provider.aclose()

    return run(go())


def test_turns_share_one_connection(fake_openai_server):
    fake_openai_server.queue("One.", "Two.", "Three.")
    assert play(fake_openai_server, 3) == ["One.", "Two.", "Three."]
    assert fake_openai_server.connections == 1  # it was one a turn


def test_turns_over_https_share_one_tls_connection(loopback_certificate):
    trusting = ssl.create_default_context(cafile=str(loopback_certificate.path))
    replies = ["One.", "Two.", "Three."]
    with FakeOpenAIServer(replies, ssl_context=loopback_certificate.server_context) as server:
        transport = httpx.AsyncHTTPTransport(verify=trusting)
        assert play(server, 3, transport=transport) == ["One.", "Two.", "Three."]
        assert server.connections == 1  # one handshake, not one a turn


def test_a_stream_kept_open_after_done_does_not_hold_the_turn(fake_openai_server):
    linger = waiting.bound(10.0)  # scaled: on a busy machine two turns take longer too
    fake_openai_server.queue(FakeReply("One.", linger=linger), "Two.")
    started = time.monotonic()
    assert play(fake_openai_server, 2) == ["One.", "Two."]
    assert time.monotonic() - started < linger / 2  # not the time the server kept it open
    assert fake_openai_server.connections == 2  # that one was closed, not reused half-read


def test_a_stop_mid_stream_closes_the_connection():
    gate = threading.Event()  # never set: the first answer is still streaming when stopped
    replies = [FakeReply("You open the door slowly.", chunk_size=4, gate=gate), "Two."]

    async def go(server) -> tuple[str, str]:
        provider = OpenAIProvider(server.url, "fake-model")
        try:
            stream = provider.stream(chat())
            first = await stream.__anext__()
            await stream.aclose()  # the player pressed Stop
            return first.text, text_of(await collect(provider, chat()))
        finally:
            await provider.aclose()

    with FakeOpenAIServer(replies) as server:
        try:
            assert run(go(server)) == ("You ", "Two.")
            assert server.connections == 2
        finally:
            gate.set()


def test_a_timed_out_or_cut_stream_closes_the_connection(fake_openai_server):
    timeout = waiting.bound(0.3)  # scaled, so a busy machine's slow chunk is no stall
    fake_openai_server.queue(
        FakeReply("abcdefgh", chunk_size=4, delay=timeout * 4), "Two.", FakeReply("abcdefgh", cut_after_chunks=1), "Three."
    )  # fmt: skip
    provider = OpenAIProvider(fake_openai_server.url, "fake-model", read_timeout=timeout)

    async def go() -> list[str]:
        told = []
        try:
            for _ in range(4):
                try:
                    told.append(text_of(await collect(provider, chat())))
                except StreamInterrupted:
                    told.append("interrupted")
        finally:
            await provider.aclose()
        return told

    assert run(go()) == ["interrupted", "Two.", "interrupted", "Three."]
    assert fake_openai_server.connections == 3  # "Two." kept its connection for the cut one


class Body(httpx.AsyncByteStream):
    """A streamed body that records how far it was read and whether it was closed."""

    def __init__(self, *parts: bytes, then: bytes | None = None, endless: bool = False):
        self.parts, self.then, self.endless = parts, then, endless
        self.sent = 0
        self.ended = self.closed = False

    async def __aiter__(self):
        for part in self.parts:
            self.sent += len(part)
            yield part
        while self.endless:  # never awaits: only the byte limit can stop reading this
            assert self.then is not None
            self.sent += len(self.then)
            yield self.then
        self.ended = True

    async def aclose(self) -> None:
        self.closed = True


def answered(body: Body, provider_class=OpenAIProvider):
    events = []

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body)

    provider = provider_class(ENDPOINT, "m", transport=httpx.MockTransport(handler))

    async def go():
        try:
            async for event in provider.stream(chat()):
                events.append(event)
        finally:
            await provider.aclose()

    run(go())
    return events


NDJSON = b'{"message": {"content": "Hi."}}\n{"done": true, "done_reason": "stop"}\n'


@pytest.mark.parametrize(
    ("provider_class", "body"),
    [(OpenAIProvider, sse(delta("Hi."), delta(finish="stop"))), (OllamaProvider, NDJSON)],
)
def test_the_body_is_read_to_its_end_before_done(provider_class, body):
    stream = Body(body, b"\n")
    events = answered(stream, provider_class)
    assert text_of(events) == "Hi." and events[-1].kind == "done"
    assert stream.ended and stream.closed


def test_a_flood_after_done_is_read_no_further_than_the_limit():
    stream = Body(sse(delta("Hi."), delta(finish="stop")), then=b": ping\n\n" * 512, endless=True)
    events = answered(stream)
    assert text_of(events) == "Hi." and events[-1].kind == "done"
    assert stream.sent < REST_BYTES + 3 * len(stream.then) + 200 and stream.closed


def test_silence_after_done_is_waited_for_no_longer_than_the_limit():
    class Silent(Body):
        async def __aiter__(self):
            yield sse(delta("Hi."), delta(finish="stop"))
            await asyncio.sleep(60)

    stream = Silent()
    started = time.monotonic()
    events = answered(stream)
    assert time.monotonic() - started < REST_SECONDS + waiting.bound(2.0)
    assert text_of(events) == "Hi." and events[-1].kind == "done" and stream.closed


def test_a_connection_dropped_after_done_leaves_the_answer_whole():
    class Dropped(Body):
        async def __aiter__(self):
            yield sse(delta("Hi."), delta(finish="stop"))
            raise httpx.RemoteProtocolError("peer closed connection without sending complete body")

    events = answered(Dropped())
    assert text_of(events) == "Hi." and events[-1].kind == "done"


def test_an_unreadable_stream_is_still_an_error():
    stream = Body(sse(delta("Hi."), "{not json"))
    with pytest.raises(ProviderHTTPError, match="unreadable stream chunk"):
        answered(stream)
    assert stream.closed and not stream.ended
