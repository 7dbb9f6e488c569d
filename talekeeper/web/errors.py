"""Translate refusals into HTTP answers with one body shape and messages a player can read.

Every error answer is an `ErrorBody`: `detail` (a sentence for the player), `error` (the
refusal's name, stable for clients) and `errors` (itemised mistakes, when there are some:
a scenario's by path, a request's fields, a correction's outcomes). The status follows
the branch of `talekeeper.errors` the refusal sits under, so a new error class needs no
entry here.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy.exc import DataError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException

from talekeeper.errors import TalekeeperError, status_of
from talekeeper.service.json_depth import TooDeep
from talekeeper.store.db import DatabaseUnavailable, database_refusal


class ErrorBody(BaseModel):
    """The body of every error answer."""

    detail: str = Field(description="What went wrong, in words fit to show the player.")
    error: str = Field(
        description="The refusal's name, e.g. `AdventureNotFound`, `AdventureBusy`, `RequestInvalid`."
    )
    errors: list[Any] = Field(
        default_factory=list, description="Itemised mistakes, when there are several."
    )


MAX_DETAIL = 1000
"""Characters of an error answer's sentence (a scenario's mistakes can list thousands)."""
MAX_ITEMS = 20
"""Mistakes itemised in one error answer; the sentence counts the rest."""
MAX_ITEMS_SIZE = 3000
"""Bytes of itemised mistakes in one error answer (as JSON)."""
MAX_ECHO = 120
"""Characters of any one text (an input, a field name, a message) an itemised mistake repeats."""


def error_body(
    detail: str, error: str, errors: list[Any] | None = None, total: int | None = None
) -> dict[str, Any]:
    """The error answer, bounded (a few KB whatever the request held) and writable as JSON
    (a lone surrogate or a NaN a request carried is answered as text, never a 500).
    `total`: how many mistakes there were, when `errors` lists only the first."""
    items: list[Any] = []
    size = 0
    for item in (errors or [])[:MAX_ITEMS]:
        item = writable(item)
        size += len(json.dumps(item))
        if size > MAX_ITEMS_SIZE:
            break
        items.append(item)
    sentence = safe_text(detail, MAX_DETAIL)
    more = (len(errors or []) if total is None else total) - len(items)
    if more > 0:
        sentence += f" ({more:,} more not listed here.)"
    return {"detail": sentence, "error": safe_text(error), "errors": items}


def error_response(
    status: int,
    detail: str,
    error: str,
    errors: list[Any] | None = None,
    total: int | None = None,
    **kw: Any,
) -> JSONResponse:
    return JSONResponse(error_body(detail, error, errors, total), status_code=status, **kw)


# For routes' `responses=`: OpenAPI documents the error body once, under every status used.
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Something named in the path does not exist."},
    409: {
        "model": ErrorBody,
        "description": "Not now: busy, or the story cannot do that from here.",
    },
    422: {"model": ErrorBody, "description": "The request is not valid; nothing was changed."},
}


def install(app: FastAPI) -> None:
    app.add_exception_handler(TalekeeperError, refused)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(OverflowError, number_out_of_range)
    app.add_exception_handler(DataError, value_not_storable)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(RecursionError, nested_too_deeply)
    app.add_exception_handler(OperationalError, database_locked)
    app.add_exception_handler(InterfaceError, database_locked)
    app.add_exception_handler(PoolTimeout, database_out_of_reach)
    app.add_exception_handler(UnicodeError, text_not_storable)


async def refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TalekeeperError)
    status = status_of(exc)
    # busy, or backing off: worth trying again, after this many seconds
    headers = retry_after(exc) if status in (429, 503) else None
    if status == 503 and _wants_page(request):  # a page the browser navigated to: say it there
        from talekeeper.web.render import render

        page = render(request, "unavailable.html", status_code=503, message=str(exc))
        page.headers.update(headers or {})
        return page
    errors = list(getattr(exc, "errors", None) or [])
    return error_response(status, str(exc), type(exc).__name__, errors, headers=headers)


def _wants_page(request: Request) -> bool:
    return (
        not request.url.path.startswith("/api/")
        and "text/html" in request.headers.get("accept", "")
        and request.headers.get("hx-request") != "true"
    )


UNREADABLE_BODY = "There was an error parsing the body"


def retry_after(exc: Exception) -> dict[str, str]:
    return {"Retry-After": str(getattr(exc, "retry_after", 2))}


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    # Starlette's own refusals (unknown path, wrong method) and the body-size guard.
    assert isinstance(exc, HTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else "The request was refused."
    name = getattr(exc, "error", None) or {404: "NotFound", 405: "MethodNotAllowed"}.get(
        exc.status_code, "HTTPError"
    )
    if exc.status_code == 400 and detail == UNREADABLE_BODY:  # FastAPI's words
        detail, name = (
            "The request's body could not be read (it is not JSON in UTF-8, or not the "
            "form it says it is). Nothing was changed.",
            "BodyNotReadable",
        )
    return error_response(exc.status_code, detail, name, headers=getattr(exc, "headers", None))


async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own answer echoes every input whole: a 500 for input JSON cannot write back
    # (NaN, a lone surrogate), and 8 MB for 80,000 unknown keys. Each mistake here keeps
    # the input it saw only when that is a scalar, and error_body bounds the rest.
    found = exc.errors()
    errors = [_mistake(error) for error in found[:MAX_ITEMS]] + [None] * (len(found) - MAX_ITEMS)
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = (
        f"{where}: {first.get('msg', '')}"
        if where
        else str(first.get("msg", "The request is not valid."))
    )
    return error_response(
        422,
        f"The request is not valid ({message}). Nothing was changed.",
        "RequestInvalid",
        errors,
        total=len(found),
    )


def _mistake(error: Any) -> dict[str, Any]:
    """One validation mistake as it is answered: its type, where, what, and the input it
    saw when that is a scalar."""
    if not isinstance(error, dict):
        return {"msg": str(error)}
    out = {
        "type": error.get("type", ""),
        "loc": list(error.get("loc", ()))[:8],
        "msg": str(error.get("msg", "")),
    }
    if "input" in error and not isinstance(error["input"], dict | list | tuple | set):
        out["input"] = error["input"]
    return writable(out)


def writable(value: Any, depth: int = 0) -> Any:
    """`value` as an error answer may carry it: texts shortened and writable, numbers JSON
    can hold, containers cut to a few members and levels."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else safe_text(_int_text(value))
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str | bytes):
        return safe_text(value)
    if depth >= 3:
        return "…"
    if isinstance(value, dict):
        return {
            safe_text(str(k)): writable(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]
        }
    if isinstance(value, list | tuple):
        return [writable(v, depth + 1) for v in value[:MAX_ITEMS]]
    return safe_text(str(value))


def _int_text(value: int) -> str:
    # str() of an integer past 4,300 digits raises ValueError (Python's own guard)
    try:
        return str(value)
    except ValueError:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"


def safe_text(value: str | bytes, limit: int = MAX_ECHO) -> str:
    """`value` as an error answer may repeat it: at most `limit` characters, with bytes
    that are not UTF-8 and lone surrogates (which no JSON writer can encode) as U+FFFD."""
    if isinstance(value, bytes):
        value = value[: limit * 4].decode("utf-8", "replace")
    short = value[:limit]
    text = short.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text + "…" if len(value) > limit else text


async def number_out_of_range(request: Request, exc: Exception) -> JSONResponse:
    # An id or number past SQLite's 64-bit integers (a path like /api/adventures/9e20 or a
    # body field): the database cannot even look it up, so nothing was read or changed.
    return error_response(
        422,
        "A number in this request is too large (ids and numbers must fit in 64 bits). Nothing was changed.",
        "NumberOutOfRange",
    )


async def nested_too_deeply(request: Request, exc: Exception) -> JSONResponse:
    # The body guard measures JSON bodies as they arrive, but a form field holding JSON
    # (the scenario editor's, an import's review, a correction) is read by the page itself:
    # Python's JSON reader recurses once per level, so a deep one ends here. The unit of
    # work rolled back, so nothing was changed.
    return error_response(422, TooDeep().args[0], "TooDeep")


async def database_locked(request: Request, exc: Exception) -> Response:
    # Sessions turn a lock that outlasted the busy timeout, or a database out of reach,
    # into a refusal themselves; this catches one met outside a session. Any other
    # database failure stays a 500.
    assert isinstance(exc, OperationalError | InterfaceError)
    refusal = database_refusal(exc)
    if refusal is None:
        raise exc
    return await refused(request, refusal)


async def database_out_of_reach(request: Request, exc: Exception) -> Response:
    return await refused(request, DatabaseUnavailable("The database has no free connection"))


async def text_not_storable(request: Request, exc: Exception) -> JSONResponse:
    # Half a character (a lone surrogate) that reached a database or a writer past the
    # JSON guard: a form field, a file an importer read. The unit of work rolled back.
    return error_response(
        422,
        "Some text in this request holds half of a character (a lone surrogate), which "
        "cannot be stored. Nothing was changed.",
        "HalfCharacter",
    )


async def value_not_storable(request: Request, exc: DataError) -> JSONResponse:
    # PostgreSQL checks what SQLite lets through: an id past its 32-bit integer columns, a
    # NUL character in text. The unit of work rolled back, so nothing was changed.
    reason = str(getattr(exc, "orig", exc)).splitlines()[0]
    return error_response(
        422,
        f"A value in this request is beyond what the database can hold ({reason}). Nothing was changed.",
        "ValueNotStorable",
    )
