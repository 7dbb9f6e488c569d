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
