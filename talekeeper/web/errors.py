"""Translate refusals into HTTP answers with one body shape and messages a player can read.

Every error answer is an `ErrorBody`: `detail` (a sentence for the player), `error` (the
refusal's name, stable for clients) and `errors` (itemised mistakes, when there are some:
a scenario's by path, a request's fields, a correction's outcomes). The status follows
the branch of `talekeeper.errors` the refusal sits under, so a new error class needs no
entry here.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import DataError, OperationalError
from starlette.exceptions import HTTPException

from talekeeper.errors import TalekeeperError, status_of
from talekeeper.service.json_depth import TooDeep
from talekeeper.store.db import database_refusal


class ErrorBody(BaseModel):
    """The body of every error answer."""

    detail: str = Field(description="What went wrong, in words fit to show the player.")
    error: str = Field(
        description="The refusal's name, e.g. `AdventureNotFound`, `AdventureBusy`, `RequestInvalid`."
    )
    errors: list[Any] = Field(
        default_factory=list, description="Itemised mistakes, when there are several."
    )


def error_body(detail: str, error: str, errors: list[Any] | None = None) -> dict[str, Any]:
    return {"detail": detail, "error": error, "errors": errors or []}


def error_response(
    status: int, detail: str, error: str, errors: list[Any] | None = None, **kw: Any
) -> JSONResponse:
    return JSONResponse(error_body(detail, error, errors), status_code=status, **kw)


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


async def refused(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TalekeeperError)
    status = status_of(exc)
    headers = {"Retry-After": "2"} if status == 503 else None  # busy: worth trying again soon
    errors = list(getattr(exc, "errors", None) or [])
    return error_response(status, str(exc), type(exc).__name__, errors, headers=headers)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    # Starlette's own refusals (unknown path, wrong method) and the body-size guard.
    assert isinstance(exc, HTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else "The request was refused."
    name = getattr(exc, "error", None) or {404: "NotFound", 405: "MethodNotAllowed"}.get(
        exc.status_code, "HTTPError"
    )
    return error_response(exc.status_code, detail, name, headers=getattr(exc, "headers", None))


async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own answer echoes the input, and a body holding NaN or Infinity (which
    # Python's JSON reader accepts) cannot be written back as JSON: that was a 500.
    errors = _json_safe(jsonable_encoder(exc.errors()))
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = (
        f"{where}: {first.get('msg', '')}"
        if where
        else str(first.get("msg", "The request is not valid."))
    )
    return error_response(
        422, f"The request is not valid ({message}). Nothing was changed.", "RequestInvalid", errors
    )


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return value


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


async def database_locked(request: Request, exc: Exception) -> JSONResponse:
    # Sessions turn a lock that outlasted the busy timeout into DatabaseBusy themselves;
    # this catches one met outside a session. Any other database failure stays a 500.
    assert isinstance(exc, OperationalError)
    refusal = database_refusal(exc)
    if refusal is None:
        raise exc
    return await refused(request, refusal)


async def value_not_storable(request: Request, exc: DataError) -> JSONResponse:
    # PostgreSQL checks what SQLite lets through: an id past its 32-bit integer columns, a
    # NUL character in text. The unit of work rolled back, so nothing was changed.
    reason = str(getattr(exc, "orig", exc)).splitlines()[0]
    return error_response(
        422,
        f"A value in this request is beyond what the database can hold ({reason}). Nothing was changed.",
        "ValueNotStorable",
    )
