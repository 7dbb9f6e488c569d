"""Flash messages after a redirect live in a one-time cookie, not in the URL: a reload (or
a bookmark) never repeats them."""

from __future__ import annotations

from fastapi.testclient import TestClient

DEMO = "greywater-lantern"


def test_a_flash_message_is_shown_once_and_never_in_the_url(client: TestClient) -> None:
    done = client.post(f"/scenarios/{DEMO}/duplicate", follow_redirects=False)
    assert done.status_code == 303 and "message" not in done.headers["location"]
    page = client.get(done.headers["location"])
    assert "This is your own copy: edit away." in page.text
    again = client.get(done.headers["location"])  # the reload
    assert again.status_code == 200 and "This is your own copy" not in again.text
