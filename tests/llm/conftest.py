"""Fixtures for the provider tests. `fakeserver` lives beside this file so other test
folders can reuse it (`from tests.llm.fakeserver import FakeOpenAIServer, FakeReply`)."""

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakeserver import fake_openai_server  # noqa: F401  (re-exported fixture)


@dataclass
class Certificate:
    """A self-signed certificate for 127.0.0.1: the fake server's side and the file."""

    path: Path
    server_context: ssl.SSLContext


@pytest.fixture
def loopback_certificate(tmp_path) -> Certificate:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    return Certificate(cert, server_context)
