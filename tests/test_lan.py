"""LAN play: `talekeeper serve --host 0.0.0.0 --allow-host NAME` answers requests addressed
to NAME (a phone on the same network) and still refuses every other Host."""

from __future__ import annotations

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from talekeeper import cli


def test_allow_host_lets_a_named_lan_address_in_and_nothing_else(
    isolated_home, served_by_cli: dict
) -> None:
    served = served_by_cli
    result = CliRunner().invoke(
        cli.app,
        [
            "serve",
            "--host",
            "0.0.0.0",
            "--allow-host",
            "192.168.1.20",
            "--allow-host",
            "laptop.local",
            "--data-dir",
            str(isolated_home),
        ],
    )
    assert result.exit_code == 0, result.output
    assert served["host"] == "0.0.0.0" and "http://192.168.1.20:8000/" in served["urls"]
    with TestClient(served["app"]) as client:
        for host in ("192.168.1.20:8000", "laptop.local:8000", "127.0.0.1:8000"):
            assert client.get("/api/health", headers={"Host": host}).status_code == 200, host
        refused = client.get("/api/health", headers={"Host": "evil.example:8000"})
        assert refused.status_code == 403 and "not this talekeeper server" in refused.text
