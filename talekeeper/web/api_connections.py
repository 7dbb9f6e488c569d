"""Connections over JSON: profiles, which one narrates, and the hosted services allowed.

The pages are `pages_connections.py`; both call the same services (service/profiles.py,
service/hosted.py). No answer ever carries an API key: profiles say `has_key`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from talekeeper.service import hosted, profiles
from talekeeper.service.app import Talekeeper
from talekeeper.views import settings as views
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", tags=["connections"], responses=ERRORS)


@router.get("/services", response_model=list[views.ServiceView])
def list_services() -> list[views.ServiceView]:
    """The services a connection can start from, with their documented addresses."""
    return views.service_views()


@router.get("/profiles", response_model=list[views.ProfileView])
def list_profiles(tk: Talekeeper = Depends(get_tk)) -> list[dict[str, Any]]:
    return profiles.list_profiles(tk)


@router.post("/profiles", response_model=views.ProfileView, status_code=201)
def create_profile(body: profiles.ProfileIn, tk: Talekeeper = Depends(get_tk)) -> views.ProfileView:
    """A new connection. Its `api_key` is stored sealed and never shown again."""
    return profiles.keep(tk, body)


@router.get("/profiles/{profile_id}", response_model=views.ProfileView)
def read_profile(profile_id: int, tk: Talekeeper = Depends(get_tk)) -> views.ProfileView:
    return profiles.read(tk, profile_id)


@router.put("/profiles/{profile_id}", response_model=views.ProfileView)
def replace_profile(
    profile_id: int, body: profiles.ProfileIn, tk: Talekeeper = Depends(get_tk)
) -> views.ProfileView:
    """Replace a connection; an empty `api_key` keeps the stored one (`forget_key` drops it)."""
    return profiles.keep(tk, body, profile_id)


@router.delete("/profiles/{profile_id}", status_code=204)
def delete_profile(profile_id: int, tk: Talekeeper = Depends(get_tk)) -> None:
    profiles.forget(tk, profile_id)


@router.get("/profiles/{profile_id}/models", response_model=views.ModelListView)
async def profile_models(profile_id: int, tk: Talekeeper = Depends(get_tk)) -> views.ModelListView:
    """The models the connection's service offers, with context and an estimate per turn."""
    return await profiles.models_of(tk, profile_id)


@router.get("/connection", response_model=views.ConnectionView)
def default_connection(tk: Talekeeper = Depends(get_tk)) -> views.ConnectionView:
    """Which connection narrates by default, and every one that could."""
    return profiles.connection_view(tk)


@router.put("/connection", response_model=views.ConnectionView)
def choose_default(
    body: views.ConnectionChoice, tk: Talekeeper = Depends(get_tk)
) -> views.ConnectionView:
    profiles.use_by_default(tk, profiles.parse_choice(body.use))
    return profiles.connection_view(tk)


@router.get("/adventures/{adventure_id}/connection", response_model=views.ConnectionView)
def adventure_connection(
    adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> views.ConnectionView:
    return profiles.connection_view(tk, adventure_id)


@router.put("/adventures/{adventure_id}/connection", response_model=views.ConnectionView)
def choose_for_adventure(
    adventure_id: int, body: views.ConnectionChoice, tk: Talekeeper = Depends(get_tk)
) -> views.ConnectionView:
    """This adventure's connection; null follows the default again."""
    profiles.use_for_adventure(tk, adventure_id, profiles.parse_choice(body.use))
    return profiles.connection_view(tk, adventure_id)


@router.get("/hosted-services", response_model=list[views.HostedServiceView])
def allowed_services(tk: Talekeeper = Depends(get_tk)) -> list[views.HostedServiceView]:
    """The hosted services allowed to receive the story."""
    return hosted.list_allowed(tk)


@router.put("/hosted-services/{host}", response_model=views.HostedServiceView)
def allow_service(host: str, tk: Talekeeper = Depends(get_tk)) -> views.HostedServiceView:
    """Allow `host` (e.g. openrouter.ai): your story, its cards and state are sent there
    by the connections that use it. With accounts on, a host's decision."""
    return hosted.allow_host(tk, host)


@router.delete("/hosted-services/{host}", status_code=204)
def revoke_service(host: str, tk: Talekeeper = Depends(get_tk)) -> None:
    """Take the permission back: no request goes to `host` from now on."""
    hosted.revoke_host(tk, host)
