"""The JSON API for settings and health: what is stored, what is in effect, testing the model."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Depends

from talekeeper import __version__
from talekeeper.service import settings as settings_service
from talekeeper.service.app import Talekeeper
from talekeeper.views import settings as views
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", responses=ERRORS)


@router.get("/health", response_model=views.Health)
def health(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return {
        "status": "ok",
        "version": __version__,
        "model": tk.model_description(),
        "process": os.getpid(),
    }


@router.get("/settings", response_model=views.SettingsView)
def get_settings(tk: Talekeeper = Depends(get_tk)) -> views.SettingsView:
    return settings_service.settings_view(tk)


@router.put("/settings", response_model=views.SettingsView)
def put_settings(
    body: settings_service.SettingsUpdate, tk: Talekeeper = Depends(get_tk)
) -> views.SettingsView:
    settings_service.save(tk, body)
    return settings_service.settings_view(tk)


@router.post("/settings/test", response_model=views.ConnectionReport)
async def test_connection(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Try the configured model and say plainly what works and what does not."""
    report = await tk.provider().check()
    return report.as_dict()
