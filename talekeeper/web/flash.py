"""Flash messages after a form's redirect ("Saved.", "Deleted."), kept out of the URL.

A message in the query string is repeated by every reload and lands in history and
bookmarks. Instead the redirect carries it in a short-lived cookie scoped to this site;
the next page rendered shows it once (`render.render`) and clears the cookie.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

COOKIE = "talekeeper_flash"


def redirect(url: str, message: str | None = None) -> RedirectResponse:
    """See-other to `url`, with `message` shown once on the page it leads to."""
    response = RedirectResponse(url, status_code=303)
    if message:
        response.set_cookie(
            COOKIE, quote(message), max_age=60, httponly=True, samesite="strict", path="/"
        )
    return response


def take(request: Request) -> str | None:
    """The message waiting for this page, if any (`forget` it on the response)."""
    value = request.cookies.get(COOKIE)
    return unquote(value)[:500] if value else None


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
