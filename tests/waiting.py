"""How long a test may wait for something, on a machine as busy as the one it runs on.

Tests wait on readiness — a port that answers, a log line, a DOM state, an event — never
on a guessed pause. Where a wait still needs a bound (so a hung server fails the test
instead of hanging the suite), the bound is generous and scaled by `factor()`:
TALEKEEPER_TEST_TIMEOUT_FACTOR where it is set, else how loaded the machine is (its load
average over its cores, at least 1). A busy machine waits longer by itself; a quiet one
waits no longer than the moment the thing is ready.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

FACTOR_ENV = "TALEKEEPER_TEST_TIMEOUT_FACTOR"


def factor() -> float:
    """TALEKEEPER_TEST_TIMEOUT_FACTOR, or (unset) how many times over its cores the machine
    is loaded right now (1 on a quiet one): a busy machine gets longer waits by itself."""
    given = os.environ.get(FACTOR_ENV)
    if given:
        try:
            return max(1.0, float(given))
        except ValueError:
            return 1.0
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:  # no load average on this platform
        return 1.0


def bound(seconds: float) -> float:
    """A wait's upper bound on this machine: `seconds` times the factor."""
    return seconds * factor()


def until(ready: Callable[[], bool], what: str, seconds: float, poll: float = 0.02) -> None:
    """Return as soon as `ready()`; fail saying `what` did not happen within the bound."""
    deadline = time.monotonic() + bound(seconds)
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{what} did not happen within {bound(seconds):.0f} s "
                f"(raise {FACTOR_ENV} on a busy machine)"
            )
        time.sleep(poll)
