"""The local API is not an open door: Host and Origin checks, security headers."""

from fastapi.testclient import TestClient


def test_foreign_host_is_refused(client: TestClient) -> None:
    response = client.get("/api/health", headers={"Host": "evil.example"})
    assert response.status_code == 403
    assert "DNS-rebinding" in response.json()["detail"]


def test_cross_site_changes_are_refused(client: TestClient, adventure_id: int) -> None:
    for headers in (
        {"Origin": "https://evil.example"},
        {"Referer": "https://evil.example/page"},
        {"Origin": "null"},
    ):
        response = client.delete(f"/api/adventures/{adventure_id}", headers=headers)
        assert response.status_code == 403, headers
    assert client.get(f"/api/adventures/{adventure_id}").status_code == 200
    same_site = client.delete(
        f"/api/adventures/{adventure_id}", headers={"Origin": "http://127.0.0.1:8000"}
    )
    assert same_site.status_code == 204


def test_security_headers_on_every_page(client: TestClient) -> None:
    for path in ("/", "/settings", "/api/health"):
        headers = client.get(path).headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert "unsafe-inline" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"


def test_narration_renders_as_text_not_markup(
    client: TestClient, adventure_id: int, scripted
) -> None:
    scripted.queue('<script>alert(1)</script><img src=x onerror="alert(2)">')
    client.post(f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "<b>look</b>"})
    page = client.get(f"/adventures/{adventure_id}").text
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;look&lt;/b&gt;" in page


def test_a_host_is_read_strictly(client: TestClient) -> None:
    """`[::1].evil.example` was judged as `[::1]`; a port that is no port, or a Host that is
    no address at all, is not this server either."""
    for host in ("[::1].evil.example", "[::1]x", "127.0.0.1:99999", "localhost:x1", "", "[::1"):
        answer = client.get("/api/health", headers={"Host": host})
        assert answer.status_code == 403, host
    for host in ("[::1]", "[::1]:8000", "127.0.0.1", "localhost:8000"):
        assert client.get("/api/health", headers={"Host": host}).status_code == 200, host


def test_two_host_headers_are_refused(client: TestClient) -> None:
    answer = client.get(
        "/api/health", headers=[("Host", "127.0.0.1:8000"), ("Host", "evil.example")]
    )
    assert answer.status_code == 400 and "one Host" in answer.json()["detail"]


def test_an_origin_of_another_scheme_is_another_site(
    client: TestClient, adventure_id: int, monkeypatch
) -> None:
    https = {"Origin": "https://127.0.0.1:8000"}
    assert client.delete(f"/api/adventures/{adventure_id}", headers=https).status_code == 403
    # behind a proxy that ends TLS (the host says so), the browser's pages are https://
    monkeypatch.setenv("TALEKEEPER_SECURE_COOKIES", "1")
    assert client.delete(f"/api/adventures/{adventure_id}", headers=https).status_code == 204


def test_private_answers_are_not_stored_by_any_cache(client: TestClient, adventure_id) -> None:
    for path in ("/", f"/adventures/{adventure_id}", f"/api/adventures/{adventure_id}", "/x"):
        assert client.get(path).headers["cache-control"] == "no-store", path
    assert "no-store" not in client.get("/static/app.css").headers.get("cache-control", "")
