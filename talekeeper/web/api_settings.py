"""The JSON API for settings and health: what is stored, what is in effect, testing the model."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from talekeeper import __version__
from talekeeper.core import Talekeeper
from talekeeper.service import settings as settings_service
from talekeeper.web.deps import get_tk

router = APIRouter(prefix="/api")


@router.get("/health")
def health(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "model": tk.model_description()}


@router.get("/settings")
def get_settings(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return settings_service.settings_view(tk)


@router.put("/settings")
def put_settings(body: settings_service.SettingsUpdate, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    settings_service.save(tk, body)
    return settings_service.settings_view(tk)


@router.post("/settings/test")
async def test_connection(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Try the configured model and say plainly what works and what does not."""
    report = await tk.provider().check()
    return report.as_dict()
