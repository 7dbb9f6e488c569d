"""One exception tree for every refusal talekeeper makes; the HTTP status follows the branch.

    TalekeeperError                  `str(error)` is a message fit to show a player
     ├── NotFound        404         no adventure, scenario, turn, Save Point, memory, Insights …
     ├── Forbidden       403         with accounts on: only a host may do that (users, the model)
     ├── Conflict        409         the story cannot do that now (busy, reading it, a Save Point)
     ├── Invalid         422         the request itself is wrong (an action, a setting, a file)
     ├── TooMany         429         too many attempts (failed sign-ins): wait, then try again
     ├── Upstream        502         the model failed (talekeeper.llm.errors.LLMError)
     └── Unavailable     503         the database is busy or out of reach; try again

Each layer defines its own named errors under one of these branches (`AdventureNotFound`,
`TreeError`, `ScenarioError`, …), so the web maps them by branch in one place and the
terminal can say the same words; nothing is recognised by its class name. This module
imports nothing, so every layer may use it.
"""

from __future__ import annotations


class TalekeeperError(Exception):
    """Base class. `status` is the HTTP status of the branch the error sits under."""

    status = 500


class NotFound(TalekeeperError, LookupError):
    status = 404


class Forbidden(TalekeeperError):
    status = 403


class Conflict(TalekeeperError):
    status = 409


class Invalid(TalekeeperError, ValueError):
    status = 422


class TooMany(TalekeeperError):
    status = 429


class Upstream(TalekeeperError):
    status = 502


class Unavailable(TalekeeperError):
    status = 503


BRANCHES: tuple[type[TalekeeperError], ...] = (
    NotFound,
    Forbidden,
    Conflict,
    Invalid,
    TooMany,
    Upstream,
    Unavailable,
)


def status_of(error: TalekeeperError) -> int:
    """The status of the first branch in the error's class order (so a class listing
    `Invalid` before `LLMError` is a 422, not a 502)."""
    for cls in type(error).__mro__:
        if cls in BRANCHES:
            return cls.status
    return TalekeeperError.status
