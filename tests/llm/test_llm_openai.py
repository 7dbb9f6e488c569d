"""OpenAIProvider against stubbed HTTP (httpx.MockTransport): parsing and every error."""

import json

import httpx
import pytest
from llmtesting import chat, collect_sync, delta, run, sse, text_of

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.errors import (
    ModelNotFound,
    ProviderHTTPError,
    ServerUnavailable,
    StreamInterrupted,
)
from talekeeper.llm.openai import OpenAIProvider

ENDPOINT = "http://127.0.0.1:8080"


class Server:
    """A scripted stub: answers generation with `body`, lists `models`, records requests."""

    def __init__(self, body: bytes = b"", status: int = 200, models=("narrator",), error=None):
        self.body, self.status, self.models, self.error = body, status, list(models), error
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": m} for m in self.models]})
        if self.status >= 400:
            return httpx.Response(self.status, json=self.error or {"error": {"message": "boom"}})
        return httpx.Response(200, content=self.body, headers={"content-type": "text/event-stream"})

    @property
    def posted(self) -> dict:
        return json.loads([r for r in self.requests if r.method == "POST"][-1].content)

    def provider(self, model: str | None = "narrator", **options) -> OpenAIProvider:
        return OpenAIProvider(ENDPOINT, model, transport=httpx.MockTransport(self), **options)


def test_chat_stream_text_usage_and_done():
    server = Server(
        sse(
            delta(role="assistant"),
            delta("You open "),
            delta("the door."),
            delta(finish="stop"),
            {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 4}},
        )
    )
    events = collect_sync(server.provider(), chat())
    assert text_of(events) == "You open the door."
    assert [e.kind for e in events][-2:] == ["usage", "done"]
    assert events[-2].usage.prompt_tokens == 12 and events[-2].usage.completion_tokens == 4
    assert events[-1].finish_reason == "stop"


def test_chat_request_body():
    server = Server(sse(delta("x", finish="stop")))
    request = chat(max_tokens=77, temperature=0.3, stop=["\n>"])
    collect_sync(server.provider(api_key="sekrit"), request)
    post = [r for r in server.requests if r.method == "POST"][0]
    assert post.url.path == "/v1/chat/completions"  # /v1 added to a bare server URL
    assert post.headers["authorization"] == "Bearer sekrit"
    body = server.posted
    assert body["model"] == "narrator" and body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "Narrate."},
        {"role": "user", "content": "> You open the door."},
    ]
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (77, 0.3, ["\n>"])
    assert "response_format" not in body


def test_json_schema_becomes_response_format():
    schema = {"type": "object", "properties": {"events": {"type": "array"}}, "required": ["events"]}
    server = Server(sse(delta('{"events": []}', finish="stop")))
    collect_sync(server.provider(), chat(json_schema=schema))
    assert server.posted["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "talekeeper_output", "strict": True, "schema": schema},
    }


def test_completion_mode():
    server = Server(
        sse(
            {"choices": [{"text": "You step ", "finish_reason": None}]},
            {"choices": [{"text": "inside.", "finish_reason": "length"}]},
        )
    )
    events = collect_sync(
        server.provider(), GenerationRequest(mode="completion", prompt="> You open the door.\n")
    )
    assert [r.url.path for r in server.requests] == ["/v1/completions"]
    assert server.posted["prompt"] == "> You open the door.\n" and "messages" not in server.posted
    assert text_of(events) == "You step inside."
    assert events[-1].finish_reason == "length"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_fields_are_a_separate_stream(field):
    server = Server(
        sse(
            delta(**{field: "The player wants "}),
            delta(**{field: "to enter."}),
            delta("You enter.", finish="stop"),
        )
    )
    events = collect_sync(server.provider(), chat())
    assert text_of(events, "reasoning") == "The player wants to enter."
    assert text_of(events) == "You enter."


def test_think_tags_split_across_chunks():
    parts = ["<thi", "nk>Door is lo", "cked.</th", "ink>The handle ", "will not turn."]
    server = Server(sse(*[delta(p) for p in parts], delta(finish="stop")))
    events = collect_sync(server.provider(), chat())
    assert text_of(events, "reasoning") == "Door is locked."
    assert text_of(events) == "The handle will not turn."
    assert all("<" not in e.text for e in events)


def test_sse_comments_multiline_and_missing_space_are_handled():
    body = (
        b": keep-alive\n\n"
        b'data:{"choices":[{"delta":{"content":"A"},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"B"},\ndata: "finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    events = collect_sync(Server(body).provider(), chat())
    assert text_of(events) == "AB" and events[-1].finish_reason == "stop"


def test_finish_reason_without_done_is_complete():
    events = collect_sync(Server(sse(delta("Fine.", finish="stop"), done=False)).provider(), chat())
    assert text_of(events) == "Fine." and events[-1].kind == "done"


def test_stream_ending_without_done_or_finish_is_interrupted():
    with pytest.raises(StreamInterrupted, match="stopped before it was finished"):
        collect_sync(Server(sse(delta("You open the"), done=False)).provider(), chat())


def test_error_chunk_mid_stream():
    body = sse(delta("You"), {"error": {"message": "context overflow", "code": 500}}, done=False)
    with pytest.raises(ProviderHTTPError, match="context overflow"):
        collect_sync(Server(body).provider(), chat())


class DropAfter(httpx.AsyncByteStream):
    def __init__(self, first: bytes, error: Exception):
        self.first, self.error = first, error

    async def __aiter__(self):
        yield self.first
        raise self.error


def test_connection_dropped_mid_stream():
    def handler(request):
        stream = DropAfter(
            sse(delta("You open"), done=False), httpx.RemoteProtocolError("peer closed connection")
        )
        return httpx.Response(200, stream=stream)

    provider = OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(handler))
    seen = []

    async def go():
        async for event in provider.stream(chat()):
            seen.append(event)

    with pytest.raises(StreamInterrupted, match="dropped in the middle"):
        run(go())
    assert text_of(seen) == "You open"  # what arrived was delivered before the error


def test_read_timeout_mid_stream_is_interrupted():
    def handler(request):
        return httpx.Response(
            200, stream=DropAfter(sse(delta("You"), done=False), httpx.ReadTimeout("timed out"))
        )

    provider = OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(handler), read_timeout=7)
    with pytest.raises(StreamInterrupted, match="7 seconds"):
        collect_sync(provider, chat())


def test_server_down():
    def handler(request):
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    provider = OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(handler))
    with pytest.raises(ServerUnavailable) as error:
        collect_sync(provider, chat())
    message = str(error.value)
    assert "http://127.0.0.1:8080/v1" in message and "running" in message and "Start it" in message


def test_no_answer_before_timeout_is_unavailable():
    def handler(request):
        raise httpx.ReadTimeout("timed out", request=request)

    provider = OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(handler), read_timeout=9)
    with pytest.raises(ServerUnavailable, match="did not answer within 9 seconds"):
        collect_sync(provider, chat())


def test_unknown_model_lists_the_available_ones():
    server = Server(
        status=404,
        models=["llama3:latest", "qwen3:8b"],
        error={"error": {"message": 'model "lama3" not found, try pulling it first'}},
    )
    with pytest.raises(ModelNotFound) as error:
        collect_sync(server.provider("lama3"), chat())
    message = str(error.value)
    assert "'lama3'" in message and "llama3:latest, qwen3:8b" in message


def test_vllm_style_unknown_model():
    server = Server(
        status=404,
        models=["mistral"],
        error={"object": "error", "message": "The model `x` does not exist.", "code": 404},
    )
    with pytest.raises(ModelNotFound, match="mistral"):
        collect_sync(server.provider("x"), chat())


def test_other_http_errors_quote_the_server():
    server = Server(status=500, error={"error": {"message": "CUDA out of memory"}})
    with pytest.raises(ProviderHTTPError) as error:
        collect_sync(server.provider(), chat())
    assert "500" in str(error.value) and "CUDA out of memory" in str(error.value)
    assert error.value.status_code == 500
    assert not isinstance(error.value, ModelNotFound)


def test_fastapi_detail_and_plain_text_errors():
    server = Server(
        status=422, error={"detail": [{"msg": "field required", "loc": ["body", "messages"]}]}
    )
    with pytest.raises(ProviderHTTPError, match="field required"):
        collect_sync(server.provider(), chat())

    def plain(request):
        return httpx.Response(502, text="Bad Gateway from nginx")

    provider = OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(plain))
    with pytest.raises(ProviderHTTPError, match="Bad Gateway from nginx"):
        collect_sync(provider, chat())


def test_unauthorized_mentions_the_api_key():
    server = Server(status=401, error={"error": {"message": "Invalid API key"}})
    with pytest.raises(ProviderHTTPError, match="API key") as error:
        collect_sync(server.provider(), chat())
    assert error.value.status_code == 401


def test_wrong_path_404_is_not_called_a_model_problem():
    server = Server(status=404, error={"error": {"message": "Not Found"}})
    with pytest.raises(ProviderHTTPError, match="OpenAI-compatible") as error:
        collect_sync(server.provider(), chat())
    assert not isinstance(error.value, ModelNotFound)


def test_no_model_named_uses_the_first_listed():
    server = Server(sse(delta("ok", finish="stop")), models=["only-model", "other"])
    collect_sync(server.provider(model=None), chat())
    assert server.posted["model"] == "only-model"


def test_no_model_named_and_none_listed():
    server = Server(models=[])
    with pytest.raises(ModelNotFound, match="lists no models"):
        collect_sync(server.provider(model=None), chat())


def test_check_reports_each_step():
    server = Server(sse(delta("OK", finish="length")), models=["narrator"])
    report = run(server.provider().check())
    assert report.ok
    assert [c[0] for c in report.checks] == ["server reachable", "model known", "generation works"]
    assert report.models_available == ["narrator"]
    assert server.posted["max_tokens"] == 1


def test_check_unknown_model_stops_before_generating():
    server = Server(models=["a", "b"])
    report = run(server.provider("c").check())
    assert not report.ok
    assert report.checks[-1][0] == "model known" and not report.checks[-1][1]
    assert "a, b" in report.checks[-1][2]
    assert not any(r.method == "POST" for r in server.requests)


def test_check_server_down():
    def handler(request):
        raise httpx.ConnectError("refused", request=request)

    report = run(OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(handler)).check())
    assert not report.ok and report.checks == [report.checks[0]] and not report.checks[0][1]
    assert report.as_dict()["checks"][0]["check"] == "server reachable"


def test_server_rejecting_stream_options_is_retried_without_them():
    bodies = []

    def handler(request):
        body = json.loads(request.content)
        bodies.append(body)
        if "stream_options" in body:
            return httpx.Response(
                400, json={"error": {"message": "Unrecognized request argument: stream_options"}}
            )
        return httpx.Response(200, content=sse(delta("Fine.", finish="stop")))

    provider = OpenAIProvider(ENDPOINT, "m", transport=httpx.MockTransport(handler))
    assert text_of(collect_sync(provider, chat())) == "Fine."
    assert text_of(collect_sync(provider, chat())) == "Fine."
    assert ["stream_options" in b for b in bodies] == [True, False, False]  # remembered


def test_check_marks_what_it_could_not_confirm_as_unchecked_not_passed():
    """A server that lists no models cannot confirm the model: not ✔ (nor a failure)."""
    server = Server(sse(delta("OK", finish="length")), models=[])
    report = run(server.provider("narrator").check())
    assert ("model known", None) == report.checks[1][:2] and "cannot be confirmed" in report.checks[
        1
    ][2]
    assert report.ok  # generation works, so the connection does


def test_endpoint_refusals_say_it_once_in_sentences():
    from talekeeper.llm.errors import EndpointRefused
    from talekeeper.llm.policy import _judge

    with pytest.raises(EndpointRefused) as public:
        _judge("8.8.8.8", ["8.8.8.8"], False, "http://8.8.8.8/v1")
    assert str(public.value).count("8.8.8.8 is") == 1 and "8.8.8.8: 8.8.8.8" not in str(
        public.value
    )
    with pytest.raises(EndpointRefused) as metadata:
        _judge("meta.example", ["169.254.169.254"], False, "http://meta.example/v1")
    text = str(metadata.value)
    assert "meta.example resolves to 169.254.169.254." in text and text.endswith(".")
