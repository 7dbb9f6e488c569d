"""Renaming an adventure (JSON API and the home page's form)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_rename_through_the_api(client: TestClient, adventure_id: int) -> None:
    url = f"/api/adventures/{adventure_id}"
    renamed = client.patch(url, json={"title": "  Ada's   second try "})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Ada's second try"
    assert client.get(url).json()["title"] == "Ada's second try"
    assert [a["title"] for a in client.get("/api/adventures").json()] == ["Ada's second try"]
    for bad in ("   ", "x" * 201):
        refused = client.patch(url, json={"title": bad})
        assert refused.status_code == 422 and "title" in refused.text
    assert client.get(url).json()["title"] == "Ada's second try"  # a refusal changes nothing
    assert client.patch("/api/adventures/9999", json={"title": "x"}).status_code == 404


def test_rename_from_the_home_page(client: TestClient, adventure_id: int) -> None:
    home = client.get("/").text
    assert (
        f'hx-post="/adventures/{adventure_id}/rename"' in home and 'id="adventure-filter"' in home
    )
    card = client.post(f"/adventures/{adventure_id}/rename", data={"title": "The long night"})
    assert (
        card.status_code == 200
        and ">The long night</a>" in card.text
        and 'role="alert"' not in card.text
    )
    refused = client.post(f"/adventures/{adventure_id}/rename", data={"title": " "})
    assert (
        'role="alert"' in refused.text
        and "needs a title" in refused.text
        and ">The long night</a>" in refused.text
    )


def test_test_connection_marks_only_passed_checks_with_a_tick() -> None:
    """(The settings page's Test connection.) ✔ only beside what passed."""
    from talekeeper.web.pages import templates

    report = {
        "ok": False,
        "checks": [
            {"check": "server reachable", "ok": True, "detail": "answered"},
            {"check": "model known", "ok": None, "detail": "cannot be confirmed"},
            {"check": "generation works", "ok": False, "detail": "failed"},
        ],
    }
    html = templates.env.get_template("_connection.html").render(report=report, policy=False)
    assert "✔ server reachable" in html and "– model known" in html and "✘ generation works" in html
    assert html.count("✔") == 1
