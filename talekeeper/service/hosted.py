"""The player's privacy choice: which hosted model services may receive the story.

By default talekeeper talks only to model servers on this computer or the private network
(llm/policy.py). A player who wants a better model than their machine can run may allow
a hosted service by name — after reading what that means: "your story, its cards and
state are sent to openrouter.ai". The permission is per host name, stored (the settings
row `hosted_services`), revocable, and shown on the play page while a connection uses it.
With accounts on, only a host may allow or revoke one, for the whole installation.

How it relates to the operator's switch: `TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1` allows every
public address for every connection, without asking; a permission here allows one named
host. Either way link-local, metadata and reserved addresses stay refused and TLS stays
verified — the permission changes which names may resolve to the internet, nothing else.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from talekeeper.errors import Forbidden, Invalid, NotFound
from talekeeper.llm import services
from talekeeper.service.connection_in_force import HOSTED_KEY, hosted_permissions
from talekeeper.store import owner, setting_rows
from talekeeper.views.settings import HostedServiceView

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

MAX_HOSTS = 100


class HostNotAllowed(Invalid):
    pass


class OnlyHostsAllow(Forbidden):
    def __init__(self) -> None:
        super().__init__(
            "Only a host of this talekeeper can allow a hosted model service or take the "
            "permission back."
        )


class PermissionNotFound(NotFound):
    pass


def sentence(host: str) -> str:
    """What allowing `host` means, in one plain sentence (the page shows it before asking)."""
    return f"Your story, its cards and state are sent to {host}."


def normal_host(host: str) -> str:
    """`host` as permissions are kept: lower-case, no trailing dot; refuses what is no name."""
    name = (host or "").strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if not name or len(name) > 253 or any(c.isspace() or c in "/:@?#" for c in name):
        if ":" in name:  # an IPv6 address
            try:
                return str(ipaddress.ip_address(name))
            except ValueError:
                pass
        raise HostNotAllowed(f"{host!r} is not a host name (for example openrouter.ai).")
    return name


def allow(session: Session, host: str) -> HostedServiceView:
    if not owner.may_manage_installation():
        raise OnlyHostsAllow()
    name = normal_host(host)
    stored = hosted_permissions(session)
    if name not in stored and len(stored) >= MAX_HOSTS:
        raise HostNotAllowed(f"At most {MAX_HOSTS} hosted services; take one back first.")
    stored.setdefault(name, {"allowed_at": datetime.now(UTC).isoformat(timespec="seconds")})
    setting_rows.write(session, HOSTED_KEY, stored)
    return view(name, stored[name])


def revoke(session: Session, host: str) -> None:
    if not owner.may_manage_installation():
        raise OnlyHostsAllow()
    name = normal_host(host)
    stored = hosted_permissions(session)
    if name not in stored:
        raise PermissionNotFound(f"{name} is not among the allowed hosted services.")
    del stored[name]
    setting_rows.write(session, HOSTED_KEY, stored)


def view(host: str, record: dict[str, Any]) -> HostedServiceView:
    known = services.hosted_service_at(f"https://{host}/")
    return HostedServiceView(
        host=host,
        service=known.label if known else host,
        allowed_at=record.get("allowed_at"),
        sentence=sentence(host),
    )


def sent_to(endpoint: str | None, allowed: tuple[str, ...]) -> str | None:
    """The hosted service a connection to `endpoint` sends the story to: a host allowed by
    name, or a known hosted service (None: a server on this computer or network)."""
    host = services.host_of(endpoint or "")
    known = services.hosted_service_at(endpoint)
    return host if host and (host in allowed or known is not None) else None


# --- entry points (each owns its transaction) ------------------------------------------------


def list_allowed(tk: Talekeeper) -> list[HostedServiceView]:
    with tk.db.session() as session:
        return [view(host, record) for host, record in sorted(hosted_permissions(session).items())]


def allow_host(tk: Talekeeper, host: str) -> HostedServiceView:
    with tk.db.session() as session:
        return allow(session, host)


def revoke_host(tk: Talekeeper, host: str) -> None:
    with tk.db.session() as session:
        revoke(session, host)
