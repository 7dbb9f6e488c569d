"""`/docs` (Swagger UI) works with the network unplugged and under the page's strict
Content-Security-Policy: its files come from the installed `fastapi-offline` package."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Route, expect

from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from talekeeper.web.security import CSP
from tests.browser import browser_page, live_server, needs_chromium

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@pytest.mark.browser
@needs_chromium
def test_docs_render_offline_under_the_csp(isolated_home) -> None:
    tk = Talekeeper(isolated_home)
    with live_server(create_app(tk)) as url, browser_page() as page:
        problems: list[str] = []
        off_machine: list[str] = []

        def only_loopback(route: Route) -> None:
            if urlsplit(route.request.url).hostname in LOOPBACK:
                route.continue_()
            else:
                off_machine.append(route.request.url)
                route.abort("internetdisconnected")

        page.context.route("**/*", only_loopback)
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        # The page's own record of what the policy refused (console wording may change).
        page.add_init_script(
            "window.__violations = [];"
            "document.addEventListener('securitypolicyviolation',"
            " e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));"
        )

        response = page.goto(url + "/docs")
        assert response is not None and response.headers["content-security-policy"] == CSP
        operations = page.locator(".opblock")
        expect(operations.first).to_be_visible()
        count = operations.count()
        assert count == len([op for ops in tk_openapi(url).values() for op in ops]), count
        health = page.locator(".opblock", has=page.locator("[data-path='/api/health']"))
        expect(health).to_contain_text("GET")

        # The viewer works, not only shows: try an operation against this server.
        health.locator(".opblock-summary").click()
        page.get_by_role("button", name="Try it out").click()
        page.get_by_role("button", name="Execute").click()
        expect(health.locator(".live-responses-table")).to_contain_text('"status"')

        assert page.evaluate("window.__violations") == []
        assert not [p for p in problems if "Content Security Policy" in p or "Error" in p], problems
        assert off_machine == []
    tk.db.dispose()


def tk_openapi(url: str) -> dict:
    import httpx

    paths = httpx.get(url + "/openapi.json").json()["paths"]
    methods = {"get", "post", "put", "patch", "delete"}
    return {path: [m for m in ops if m in methods] for path, ops in paths.items()}


def test_docs_name_nothing_off_the_machine_and_redoc_leads_there(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-security-policy"] == CSP
    assert "http" not in page.text  # every file it loads is this server's
    assert "<script>" not in page.text and "style=" not in page.text
    for asset in (
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/swagger-ui.css",
        "/static/apidocs.js",
    ):
        assert asset in page.text
        served = client.get(asset)
        assert served.status_code == 200 and len(served.content) > 500, asset
    assert client.get("/docs/assets/redoc.standalone.js").status_code == 404
    assert client.get("/docs/assets/..%2F__init__.py").status_code == 404
    moved = client.get("/redoc", follow_redirects=False)
    assert moved.status_code == 307 and moved.headers["location"] == "/docs"
