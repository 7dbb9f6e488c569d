"""What every route is handed: the application object the app was created with."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from talekeeper.service.app import Talekeeper


def get_tk(request: Request) -> Talekeeper:
    return request.app.state.tk


Tk = Annotated[Talekeeper, Depends(get_tk)]  # a route's parameter, written short
