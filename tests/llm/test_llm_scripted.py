import asyncio

import pytest
from llmtesting import chat, collect_sync, run, text_of

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.errors import LLMError, StreamInterrupted
from talekeeper.llm.scripted import ScriptedProvider
from tests import waiting


def test_streams_queued_replies_in_small_chunks_and_records_requests():
    provider = ScriptedProvider(["You open the door.", "It creaks."], chunk_size=4)
    first = collect_sync(provider, chat("> open"))
    texts = [e.text for e in first if e.kind == "text"]
    assert texts == ["You ", "open", " the", " doo", "r."]
    assert [e.kind for e in first][-2:] == ["usage", "done"]
    assert text_of(collect_sync(provider, chat("> listen"))) == "It creaks."
    assert [r.messages[-1].content for r in provider.requests] == ["> open", "> listen"]
    assert provider.remaining == 0


def test_replies_from_a_function_of_the_request():
    provider = ScriptedProvider(lambda request: f"echo: {request.prompt}")
    events = collect_sync(provider, GenerationRequest(mode="completion", prompt="hi"))
    assert text_of(events) == "echo: hi"


def test_running_out_of_replies_is_an_error():
    provider = ScriptedProvider([])
    with pytest.raises(LLMError, match="no reply left"):
        collect_sync(provider, chat())


def test_fail_mid_stream_after_n_chunks():
    provider = ScriptedProvider(["abcdefgh"], chunk_size=2, fail_after_chunks=2)
    seen = []

    async def go():
        async for event in provider.stream(chat()):
            seen.append(event)

    with pytest.raises(StreamInterrupted):
        run(go())
    assert text_of(seen) == "abcd"


def test_fail_next_is_one_shot():
    provider = ScriptedProvider(["first reply", "second reply"], chunk_size=3)
    provider.fail_next(after_chunks=1)
    with pytest.raises(StreamInterrupted):
        collect_sync(provider, chat())
    assert text_of(collect_sync(provider, chat())) == "second reply"


def test_gate_holds_the_stream_in_flight():
    async def go():
        gate = asyncio.Event()
        provider = ScriptedProvider(
            ["You wait in the dark."], chunk_size=4, gate=gate, gate_after_chunks=1
        )
        seen: list[str] = []

        async def consume():
            async for event in provider.stream(chat()):
                seen.append(event.text)

        task = asyncio.create_task(consume())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not task.done() and "".join(seen) == "You "  # held after the first chunk
        gate.set()
        await asyncio.wait_for(task, waiting.bound(1))
        return "".join(seen)

    assert run(go()) == "You wait in the dark."


def test_think_spans_become_reasoning():
    provider = ScriptedProvider(["<think>they are scared</think>You hide."], chunk_size=3)
    events = collect_sync(provider, chat())
    assert text_of(events, "reasoning") == "they are scared" and text_of(events) == "You hide."


def test_check_and_complete():
    provider = ScriptedProvider(["Done."])
    assert run(provider.check()).ok
    assert run(provider.complete(chat())) == "Done."
