"""Translate the services' refusals into HTTP answers with messages a player can read."""

import math

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from talekeeper.llm.errors import EndpointRefused, LLMError
from talekeeper.service.adventures import AdventureNotFound
from talekeeper.service.locks import AdventureBusy
from talekeeper.service.origins import OriginError
from talekeeper.service.scenarios import ScenarioError
from talekeeper.service.settings import SettingsError
from talekeeper.service.turns import TurnFailed
from talekeeper.story.actions import ActionError
from talekeeper.story.tree import TreeError

STATUS = [
    (AdventureBusy, 409),
    (TreeError, 409),
    (AdventureNotFound, 404),
    (ScenarioError, 422),
    (OriginError, 422),
    (ActionError, 422),
    (SettingsError, 422),
    (EndpointRefused, 422),
    (TurnFailed, 502),
    (LLMError, 502),
]


def install(app: FastAPI) -> None:
    for exc_type, status in STATUS:

        async def handler(request: Request, exc: Exception, status: int = status) -> JSONResponse:
            return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=status)

        app.add_exception_handler(exc_type, handler)
    app.add_exception_handler(OverflowError, number_out_of_range)
    app.add_exception_handler(RequestValidationError, invalid_request)


async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own answer echoes the input, and a body holding NaN or Infinity (which
    # Python's JSON reader accepts) cannot be written back as JSON: that was a 500.
    return JSONResponse({"detail": _json_safe(jsonable_encoder(exc.errors()))}, status_code=422)


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
    return JSONResponse(
        {
            "detail": "A number in this request is too large (ids and numbers must fit in 64 bits). Nothing was changed.",
            "error": "NumberOutOfRange",
        },
        status_code=422,
    )
