"""Translate the services' refusals into HTTP answers with messages a player can read."""

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from talekeeper.llm.errors import EndpointRefused, LLMError
from talekeeper.service.adventures import AdventureNotFound
from talekeeper.service.locks import AdventureBusy
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
