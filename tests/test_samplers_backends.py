"""Samplers that fit the backend: each server is asked what it is (or known by its
documented list), offered only what it takes, and sent only that, spelled its way — DRY
and XTC for a llama.cpp server and KoboldCpp, penalties and logit bias for OpenAI, stop
alone for strict Mistral, OpenRouter's per model — with the starter presets and banned
phrases kept out by the server or by stop-and-regenerate, never by cutting the text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.conftest import DEMO
from tests.llm.fakeserver import FakeOpenAIServer, FakeReply, RecordedRequest
from tests.llm.standin import PUBLIC_ADDRESS, StandIn, resolver_for

LLAMA_PROPS = {
    "default_generation_settings": {
        "n_ctx": 8192,
        "params": {"dry_multiplier": 0.0, "dry_base": 1.75, "xtc_probability": 0.0, "top_k": 40},
    }
}
HOSTS = {"api.openai.com", "api.mistral.ai", "openrouter.ai"}


@pytest.fixture
def hosted_fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(
        extra={
            ("GET", "/v1/models"): {
                "data": [
                    {"id": "m", "supported_parameters": ["temperature", "min_p", "stop"]},
                    {"id": "wide"},
                ]
            }
        }
    ) as server:
        yield server


@pytest.fixture
def client(isolated_home: Path, hosted_fake: FakeOpenAIServer) -> Iterator[TestClient]:
    standin = StandIn(hosted_fake.root)
    standin.prefix = ("/v1", "/v1")  # OpenAI's and Mistral's base is /v1 already
    tk = Talekeeper(
        isolated_home,
        resolver=resolver_for(dict.fromkeys(HOSTS, PUBLIC_ADDRESS)),
        transport=_Paths(standin),
    )
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as test_client:
        for host in HOSTS:
            test_client.put(f"/api/hosted-services/{host}")
        yield test_client
    tk.db.dispose()


class _Paths(StandIn):
    """OpenRouter's /api/v1 and the others' /v1 to the one fake."""

    def __init__(self, standin: StandIn) -> None:
        super().__init__(str(standin.target))

    async def handle_async_request(self, request):
        self.prefix = ("/api/v1", "/v1") if request.url.path.startswith("/api/v1") else ("", "")
        return await super().handle_async_request(request)


def _play(client: TestClient, server: FakeOpenAIServer, profile: dict, values: dict) -> dict:
    """An adventure on `profile`, with `values` of its own, plays one turn: what was sent."""
    created = client.post("/api/profiles", json=profile)
    assert created.status_code == 201, created.text
    aid = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
    client.put(f"/api/adventures/{aid}/connection", json={"use": created.json()["id"]})
    assert client.put(f"/api/adventures/{aid}/samplers", json={"values": values}).status_code == 200
    server.queue("The gulls wheel overhead.")
    done = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "look"})
    assert done.status_code == 200, done.text
    return {"aid": aid, "body": server.generation_requests[-1].body}


EVERYTHING = {
    "min_p": 0.05,
    "top_k": 40,
    "repetition_penalty": 1.1,
    "frequency_penalty": 0.2,
    "presence_penalty": 0.2,
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 2,
    "xtc_threshold": 0.1,
    "xtc_probability": 0.5,
    "logit_bias": "42: -100",
    "seed": 9,
}


def test_dry_is_offered_for_a_llama_cpp_server_and_sent_as_it_spells_it(
    client: TestClient,
) -> None:
    with FakeOpenAIServer(extra={("GET", "/props"): LLAMA_PROPS}) as llama:
        profile = {"name": "Llama", "service": "llamacpp", "endpoint": llama.url, "model": "m"}
        played = _play(client, llama, profile, EVERYTHING)
        body = played["body"]
        assert (body["dry_multiplier"], body["dry_base"], body["dry_allowed_length"]) == (
            0.8,
            1.75,
            2,
        )
        assert (body["xtc_threshold"], body["xtc_probability"]) == (0.1, 0.5)
        assert body["repeat_penalty"] == 1.1 and "repetition_penalty" not in body
        assert body["logit_bias"] == {"42": -100.0} and body["frequency_penalty"] == 0.2
        page = client.get(f"/adventures/{played['aid']}/samplers").text
        assert 'name="dry_multiplier"' in page and 'name="xtc_probability"' in page
        assert "Not offered by" not in page
        assert "suggested: 0.8" in page  # DRY strength's suggested value


def test_an_older_llama_cpp_without_dry_is_not_offered_it(client: TestClient) -> None:
    props = {"default_generation_settings": {"n_ctx": 4096, "top_k": 40}}
    with FakeOpenAIServer(extra={("GET", "/props"): props}) as llama:
        profile = {"name": "Old llama", "service": "llamacpp", "endpoint": llama.url}
        body = _play(client, llama, profile, EVERYTHING)["body"]
        assert not {"dry_multiplier", "xtc_threshold"} & set(body)
        assert body["min_p"] == 0.05


def test_openai_is_offered_penalties_and_logit_bias_but_not_dry(
    client: TestClient, hosted_fake: FakeOpenAIServer
) -> None:
    profile = {"name": "OpenAI", "service": "openai", "api_key": "sk-x", "model": "gpt"}
    played = _play(client, hosted_fake, profile, EVERYTHING)
    body = played["body"]
    assert (body["frequency_penalty"], body["presence_penalty"], body["seed"]) == (0.2, 0.2, 9)
    assert body["logit_bias"] == {"42": -100.0}
    assert not {"dry_multiplier", "xtc_threshold", "min_p", "top_k", "repeat_penalty"} & set(body)
    page = client.get(f"/adventures/{played['aid']}/samplers").text
    assert "Not offered by OpenAI:" in page and "DRY, XTC" in page
    assert 'name="frequency_penalty"' in page
    # the values set anyway are shown, said to be ignored, and kept
    assert "OpenAI does not take" in page and "DRY strength" in page


def test_strict_mistral_gets_nothing_it_does_not_know(
    client: TestClient, hosted_fake: FakeOpenAIServer
) -> None:
    profile = {"name": "Mistral", "service": "mistral", "api_key": "k", "model": "small"}
    body = _play(client, hosted_fake, profile, {**EVERYTHING, "stop": "###"})["body"]
    assert not set(EVERYTHING) & set(body) and "repeat_penalty" not in body
    assert body["stop"] == ["###"]


def test_openrouter_is_offered_what_the_chosen_model_takes(
    client: TestClient, hosted_fake: FakeOpenAIServer
) -> None:
    profile = {"name": "OR", "service": "openrouter", "api_key": "k", "model": "m"}
    body = _play(client, hosted_fake, profile, EVERYTHING)["body"]
    assert body["min_p"] == 0.05  # "m" says it takes min_p…
    assert "frequency_penalty" not in body and "top_k" not in body  # …and nothing else


def test_koboldcpp_gets_its_own_names_and_bans_phrases_itself(client: TestClient) -> None:
    version = {"result": "KoboldCpp", "version": "1.80"}
    with FakeOpenAIServer(extra={("GET", "/api/extra/version"): version}) as kobold:
        profile = {"name": "Kobold", "service": "koboldcpp", "endpoint": kobold.url}
        values = {**EVERYTHING, "banned_phrases": "a testament to"}
        body = _play(client, kobold, profile, values)["body"]
        assert (body["rep_pen"], body["dry_multiplier"], body["xtc_probability"]) == (1.1, 0.8, 0.5)
        assert body["banned_tokens"] == ["a testament to"]
        assert "logit_bias" not in body and "frequency_penalty" not in body


def test_starter_presets_are_offered_on_the_play_page_and_fit_each_server(
    client: TestClient, hosted_fake: FakeOpenAIServer
) -> None:
    with FakeOpenAIServer(extra={("GET", "/props"): LLAMA_PROPS}) as llama:
        pid = client.post(
            "/api/profiles",
            json={"name": "Llama", "service": "llamacpp", "endpoint": llama.url},
        ).json()["id"]
        aid = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
        client.put(f"/api/adventures/{aid}/connection", json={"use": pid})
        play = client.get(f"/adventures/{aid}").text
        for starter in ("Steady", "Fresh", "Focused"):
            assert f'<option value="{starter}"' in play
        note = client.post(f"/adventures/{aid}/samplers/preset", data={"preset": "Fresh"}).text
        assert 'id="preset-about"' in note and "passed over" in note
        llama.queue("Rain.")
        client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
        body = llama.generation_requests[-1].body
        assert (body["xtc_threshold"], body["dry_multiplier"], body["frequency_penalty"]) == (
            0.1,
            1.0,
            0.3,
        )
    # the same preset on OpenAI: its penalties only
    oid = client.post(
        "/api/profiles", json={"name": "OpenAI", "service": "openai", "api_key": "k", "model": "g"}
    ).json()["id"]
    client.put(f"/api/adventures/{aid}/connection", json={"use": oid})
    hosted_fake.queue("Rain again.")
    client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
    body = hosted_fake.generation_requests[-1].body
    assert (body["frequency_penalty"], body["presence_penalty"]) == (0.3, 0.3)
    assert not {"xtc_threshold", "dry_multiplier", "min_p"} & set(body)
    # starters are the app's: not overwritten, not deleted
    assert client.put("/api/sampler-presets/Fresh", json={"min_p": 0.2}).status_code == 422
    assert client.delete("/api/sampler-presets/Fresh").status_code == 422


def _phrase_reply(request: RecordedRequest) -> FakeReply:
    """The first answer says the banned phrase; a continuation goes on without it."""
    messages = (request.body or {}).get("messages") or []
    if (
        messages
        and messages[-1]["role"] == "user"
        and messages[-1]["content"].startswith("[Continue")
    ):
        assert messages[-2] == {"role": "assistant", "content": "The hall was "}
        return FakeReply("quiet, and rain fell on the roof.")
    return FakeReply("The hall was a testament to old wars. It was never spoken of.")


def test_a_banned_phrase_is_stopped_and_the_model_goes_on_from_there(client: TestClient) -> None:
    with FakeOpenAIServer(_phrase_reply) as local:
        profile = {"name": "Local", "service": "custom", "endpoint": local.url, "model": "m"}
        played = _play(client, local, profile, {"banned_phrases": "A Testament To|shivers"})
        aid = played["aid"]
        story = client.get(f"/api/adventures/{aid}").json()
        narration = story["turns_shown"][-1]["narration"]
        assert narration == "The hall was quiet, and rain fell on the roof."
        assert len(local.generation_requests) == 2
        notes = _notes(client, aid, story["head_id"])
        assert any("The banned phrase “A Testament To” was stopped" in n for n in notes)


def _notes(client: TestClient, aid: int, node: int) -> list[str]:
    return client.get(f"/api/adventures/{aid}/turns/{node}/insights").json()["notes"]


def test_a_phrase_that_keeps_coming_back_ends_the_reply_before_it_and_says_so(
    client: TestClient,
) -> None:
    def stubborn(request: RecordedRequest) -> FakeReply:
        going_on = (request.body or {}).get("messages", [{}])[-1].get("content", "")
        return FakeReply(
            "a testament to grief."
            if going_on.startswith("[Continue")
            else "Her eyes held a testament to grief."
        )

    with FakeOpenAIServer(stubborn) as local:
        profile = {"name": "Local", "service": "custom", "endpoint": local.url, "model": "m"}
        played = _play(client, local, profile, {"banned_phrases": "a testament to"})
        story = client.get(f"/api/adventures/{played['aid']}").json()
        assert story["turns_shown"][-1]["narration"] == "Her eyes held"
        assert len(local.generation_requests) == 4  # the reply and three tries to go on
        notes = _notes(client, played["aid"], story["head_id"])
        assert any("came back 4 times; the reply ends before it" in n for n in notes)


def test_a_one_token_phrase_is_banned_by_logit_bias_on_llama_cpp(client: TestClient) -> None:
    extra = {
        ("GET", "/props"): LLAMA_PROPS,
        ("POST", "/tokenize"): {"tokens": [31337]},  # every phrase one token, for the test
    }
    with FakeOpenAIServer(extra=extra) as llama:
        profile = {"name": "Llama", "service": "llamacpp", "endpoint": llama.url}
        body = _play(client, llama, profile, {"banned_phrases": "delve"})["body"]
        assert body["logit_bias"] == {"31337": -100.0}


def test_settings_state_the_embedded_models_budget_as_the_turn_uses_it(client: TestClient) -> None:
    from talekeeper.context.budget import EMBEDDED_BUDGET

    page = client.get("/settings").text
    assert EMBEDDED_BUDGET == 6144
    assert "the embedded model: 6,144 of its window" in page and "2,048" not in page
