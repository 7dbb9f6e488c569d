"""The endpoint policy, with DNS answers injected (no network)."""

import ssl

import httpx
import pytest
from llmtesting import chat, collect_sync, run

from talekeeper.llm.errors import EndpointRefused
from talekeeper.llm.openai import OpenAIProvider
from talekeeper.llm.policy import (
    PolicyTransport,
    check_endpoint,
    refusal_reason,
    verified_ssl_context,
)


def resolver_for(table: dict[str, list[str]]):
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"Name or service not known: {host}")
        return table[host]

    return resolve


def no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"an IP literal must not be resolved ({host})")


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.1.2.3",
        "::1",
        "10.0.0.5",
        "172.16.0.1",
        "172.31.255.254",
        "192.168.1.20",
        "fd12:3456::1",
        "::ffff:192.168.1.20",
    ],
)
def test_loopback_and_private_addresses_are_allowed(address):
    assert refusal_reason(address, allow_remote=False) is None


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "172.32.0.1", "100.64.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"]
)
def test_public_addresses_are_refused_unless_the_operator_allows(address):
    reason = refusal_reason(address, allow_remote=False)
    assert reason is not None and "TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1" in reason
    assert refusal_reason(address, allow_remote=True) is None


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "169.254.1.1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:169.254.169.254",
        "100.100.100.200",
    ],
)
def test_link_local_and_metadata_are_refused_even_when_remote_is_allowed(address):
    for allow_remote in (False, True):
        reason = refusal_reason(address, allow_remote=allow_remote)
        assert reason is not None and "metadata" in reason


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "224.0.0.1", "255.255.255.255"])
def test_addresses_that_are_not_servers_are_refused(address):
    assert refusal_reason(address, allow_remote=True) is not None


def test_ip_literal_is_judged_without_dns():
    check_endpoint("http://127.0.0.1:8080/v1", allow_remote=False, resolver=no_dns)
    check_endpoint("http://[::1]:8080/v1", allow_remote=False, resolver=no_dns)
    with pytest.raises(EndpointRefused, match="8.8.8.8"):
        check_endpoint("http://8.8.8.8/v1", allow_remote=False, resolver=no_dns)


def test_hostname_is_judged_by_what_it_resolves_to():
    resolve = resolver_for({"gpu-box.lan": ["192.168.1.9"], "evil.example": ["93.184.216.34"]})
    check_endpoint("http://gpu-box.lan:11434", allow_remote=False, resolver=resolve)
    with pytest.raises(EndpointRefused) as refused:
        check_endpoint("http://evil.example/v1", allow_remote=False, resolver=resolve)
    message = str(refused.value)
    assert "evil.example" in message and "93.184.216.34" in message
    assert "TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1" in message


def test_every_resolved_address_must_pass():
    resolve = resolver_for({"mixed.lan": ["192.168.1.9", "93.184.216.34"]})
    with pytest.raises(EndpointRefused, match="93.184.216.34"):
        check_endpoint("http://mixed.lan/v1", allow_remote=False, resolver=resolve)


def test_hostname_pointing_at_metadata_is_refused_even_when_remote_is_allowed():
    resolve = resolver_for({"sneaky.example": ["169.254.169.254"]})
    with pytest.raises(EndpointRefused, match="metadata"):
        check_endpoint("http://sneaky.example/v1", allow_remote=True, resolver=resolve)


def test_a_setting_naming_a_host_that_does_not_resolve_is_refused_as_the_settings_fault():
    """Saving it is a 422 with the name (it was a 502, as if a model server had failed); a
    request to it later is still 'unavailable' (test_unresolvable_request_is_unavailable)."""
    from talekeeper.errors import status_of

    with pytest.raises(EndpointRefused, match="nowhere.lan") as refused:
        check_endpoint("http://nowhere.lan/v1", allow_remote=False, resolver=resolver_for({}))
    assert status_of(refused.value) == 422


def test_an_endpoint_that_is_not_a_url_is_refused_not_a_crash():
    for url in ("http://010.010.010.010/v1", "http://256.1.1.1/v1", "http://1.2.3.4:99999/v1"):
        with pytest.raises(EndpointRefused, match="cannot be read as a URL"):
            check_endpoint(url, allow_remote=True, resolver=no_dns)


def test_only_http_schemes():
    with pytest.raises(EndpointRefused):
        check_endpoint("file:///etc/passwd", allow_remote=True, resolver=no_dns)


class Recorder:
    def __init__(self, fail_on: set[str] | None = None):
        self.seen: list[httpx.Request] = []
        self.fail_on = fail_on or set()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.host in self.fail_on:
            raise httpx.ConnectError("connection refused", request=request)
        self.seen.append(request)
        return httpx.Response(200, json={"data": [{"id": "m"}]})


def get(transport: httpx.AsyncBaseTransport, url: str) -> httpx.Response:
    async def go():
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.get(url)

    return run(go())


def test_transport_refuses_before_the_request_leaves():
    inner = Recorder()
    transport = PolicyTransport(httpx.MockTransport(inner), resolver=no_dns)
    with pytest.raises(EndpointRefused):
        get(transport, "http://8.8.8.8:8080/v1/models")
    assert inner.seen == []


def test_transport_checks_every_request_and_pins_the_checked_address():
    answers = [["192.168.1.9"], ["169.254.169.254"]]  # DNS rebinding between two requests
    inner = Recorder()
    transport = PolicyTransport(
        httpx.MockTransport(inner), resolver=lambda host, port: answers.pop(0)
    )
    assert get(transport, "http://gpu-box.lan:8080/v1/models").status_code == 200
    with pytest.raises(EndpointRefused, match="169.254.169.254"):
        get(transport, "http://gpu-box.lan:8080/v1/models")
    assert len(inner.seen) == 1
    sent = inner.seen[0]
    assert sent.url.host == "192.168.1.9"  # connects to the address that was checked
    assert sent.headers["host"] == "gpu-box.lan:8080"  # while still naming the server
    assert sent.extensions["sni_hostname"] == "gpu-box.lan"  # and verifying its certificate


def test_transport_tries_each_checked_address_in_turn():
    inner = Recorder(fail_on={"::1"})
    transport = PolicyTransport(
        httpx.MockTransport(inner), resolver=lambda h, p: ["::1", "127.0.0.1"]
    )
    assert get(transport, "http://localhost:8080/v1/models").status_code == 200
    assert [r.url.host for r in inner.seen] == ["127.0.0.1"]


def test_provider_requests_go_through_the_policy():
    inner = Recorder()
    provider = OpenAIProvider(
        "http://93.184.216.34:8080/v1", "m", transport=httpx.MockTransport(inner)
    )
    with pytest.raises(EndpointRefused):
        collect_sync(provider, chat())
    assert inner.seen == []


def test_tls_is_verified_with_the_os_store_and_certifi():
    context = verified_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True
    assert type(context).__module__.startswith("truststore")
