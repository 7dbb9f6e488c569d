"""Signing in cannot be turned into a flood (with accounts on).

A password check runs Argon2id with 64 MiB and tens of milliseconds of a core, and a
stranger may ask for one as often as they like: unchecked, 30 wrong passwords at once took
1.8 GB and made a signed-in player's reads 200 times slower. So:

1. **At most `hashes_at_once` password hashes run at once** in a process (sign-in,
   sign-up, a password change or reset, a host making an account), on threads of their
   own, so a flood of them never takes the threads every other request is served by. One
   from a stranger that cannot start within `WAIT` seconds, or finds `QUEUE` others
   already waiting, is answered 503 with Retry-After and costs nothing. A player's own
   browser (below) and a signed-in player go first, whatever is waiting.
2. **Failed sign-ins back off**, per address and per name, before any hash is computed:
   past `FREE_PER_ADDRESS` failures from one address (`FREE_PER_NAME` for one name, from
   anywhere), each next attempt must wait twice as long as the last (1 s, 2 s, 4 s … up to
   `LONGEST`), and one made sooner is answered 429 with Retry-After. A success clears the
   address's count. Counts are per process, and forgotten an hour after the last failure.
3. **An invitation is no directory of names**: signing up with it under a name that is
   taken says so (the invitee must choose another), but after `TAKEN_NAMES` of them the
   invitation stops working, so one link cannot be used to try name after name.
4. **Refusals are slow to come**: an attempt refused for backing off or for too many
   hashes is answered after `TARPIT` seconds (a wait that holds no thread), so an
   attacker's connection makes one attempt a second, not hundreds, and the flood costs
   the server little more than the sockets it holds. (A flood from thousands of addresses
   at once is for a reverse proxy in front to turn away.)
5. **A stranger cannot lock a player out**: a browser that signed in as a name gets a
   `talekeeper_device` cookie naming it, sealed with this installation's secret
   (store/secrets.py); attempts from it are not held back by that name's failures, or by
   its address's. An attacker can make the name back off for everyone else, not for the
   player's own browser.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from http.cookies import SimpleCookie
from typing import Any, TypeVar

from starlette.requests import Request

from talekeeper.errors import TooMany, Unavailable
from talekeeper.service.app import Talekeeper

T = TypeVar("T")

WAIT = 2.0  # seconds a hash may wait for its turn
QUEUE = 8  # hashes that may wait at once, beyond those running
FREE_PER_ADDRESS = 5
FREE_PER_NAME = 10
LONGEST = 60.0  # seconds: the longest a backing-off address or name waits
FORGET = 3600.0  # seconds after its last failure that a count is forgotten
REMEMBERED = 10_000  # addresses (and names) counted at most; the oldest are forgotten
TARPIT = 1.0  # seconds before a refusal is answered
TAKEN_NAMES = 3  # taken names one invitation may try before it stops working
DEVICE_COOKIE = "talekeeper_device"
DEVICE_DAYS = 180
HASHES_ENV = "TALEKEEPER_HASHES_AT_ONCE"


def hashes_at_once() -> int:
    """Half the cores (at least one): the other half stays with the players."""
    try:
        return max(1, int(os.environ[HASHES_ENV]))
    except (KeyError, ValueError):
        return max(1, (os.cpu_count() or 2) // 2)


class SignInBusy(Unavailable):
    def __init__(self) -> None:
        super().__init__("Too many sign-ins are being checked at once; try again in a few seconds.")
        self.retry_after = math.ceil(WAIT)


class TooManyAttempts(TooMany):
    def __init__(self, wait: float) -> None:
        self.retry_after = max(1, math.ceil(wait))
        super().__init__(
            f"Too many failed sign-ins; try again in {self.retry_after} second"
            f"{'s' if self.retry_after != 1 else ''}."
        )


class Backoff:
    """Failures counted per key; past `free` of them, each next attempt waits twice as long
    as the one before (from 1 s, up to `LONGEST`)."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.counts: OrderedDict[str, tuple[int, float]] = OrderedDict()

    def wait(self, key: str, now: float) -> float:
        """Seconds until `key` may try again (0: now)."""
        found = self.counts.get(key)
        if found is None:
            return 0.0
        failures, last = found
        if now - last > FORGET:
            del self.counts[key]
            return 0.0
        if failures < self.free:
            return 0.0
        return max(0.0, last + min(LONGEST, 2.0 ** (failures - self.free)) - now)

    def failed(self, key: str, now: float) -> None:
        failures, _ = self.counts.pop(key, (0, now))
        self.counts[key] = (failures + 1, now)
        while len(self.counts) > REMEMBERED:
            self.counts.popitem(last=False)

    def forget(self, key: str) -> None:
        self.counts.pop(key, None)


class HashPool:
    """Threads of their own for password hashes, taking the most urgent job first."""

    def __init__(self, workers: int) -> None:
        self.jobs: queue.PriorityQueue[tuple[int, int, Any, Any]] = queue.PriorityQueue()
        self.order = itertools.count()
        self.threads = [
            threading.Thread(target=self._work, name="password-hash", daemon=True)
            for _ in range(workers)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, urgent: bool, work: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self.jobs.put((0 if urgent else 1, next(self.order), work, future))
        return future

    def _work(self) -> None:
        while True:
            _, _, work, future = self.jobs.get()
            if work is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to whoever waits for it
                future.set_exception(exc)

    def shutdown(self) -> None:
        for _ in self.threads:
            self.jobs.put((-1, next(self.order), None, None))


class SignInGuard:
    """The hash pool, the two backoffs and the device cookie, for one app."""

    def __init__(self, tk: Talekeeper, hashes: int | None = None) -> None:
        self.tk = tk
        self.hashes = hashes or hashes_at_once()
        self.pool = HashPool(self.hashes)
        self.waiting = 0  # strangers' hashes waiting or running
        self._count = threading.Lock()  # `waiting` is counted from the loop and from threads
        self.addresses = Backoff(FREE_PER_ADDRESS)
        self.names = Backoff(FREE_PER_NAME)
        self.invitations: OrderedDict[str, int] = OrderedDict()  # taken names tried, by link

    async def run(self, work: Callable[..., T], *args: Any, urgent: bool = False) -> T:
        """`work(*args)` (which hashes a password) on the hash pool, or SignInBusy. Waiting
        for a turn holds no thread. `urgent`: a player's own browser, served first."""
        future, counted = self._queue(work, args, urgent)
        try:
            return await asyncio.wrap_future(future)
        finally:
            self._done(counted)

    def run_blocking(self, work: Callable[..., T], *args: Any) -> T:
        """`run` for a signed-in player or a host, from a route already on a worker thread
        (one's own password change, a host making an account): served first."""
        future, counted = self._queue(work, args, True)
        try:
            return future.result()
        finally:
            self._done(counted)

    def _queue(self, work: Callable[..., T], args: tuple[Any, ...], urgent: bool) -> Any:
        if not urgent:
            with self._count:
                if self.waiting >= self.hashes + QUEUE:
                    raise SignInBusy()
                self.waiting += 1
        queued = time.monotonic()

        def turn() -> T:
            if not urgent and time.monotonic() - queued > WAIT:
                raise SignInBusy()  # waited too long for a turn: answer now, hash nothing
            return work(*args)

        return self.pool.submit(urgent, turn), not urgent

    def _done(self, counted: bool) -> None:
        if counted:
            with self._count:
                self.waiting -= 1

    def admit(self, request: Request, name: str) -> bool:
        """Raise TooManyAttempts while this address or name is backing off; True when the
        browser is one the name signed in from before (never held back, served first)."""
        if self.known_device(request, name):
            return True
        now = time.monotonic()
        wait = max(self.addresses.wait(_address(request), now), self.names.wait(name, now))
        if wait > 0:
            raise TooManyAttempts(wait)
        return False

    def failed(self, request: Request, name: str) -> None:
        now = time.monotonic()
        self.addresses.failed(_address(request), now)
        self.names.failed(name, now)

    def succeeded(self, request: Request) -> None:
        self.addresses.forget(_address(request))

    def name_taken(self, invitation: str) -> bool:
        """Count a taken name tried with this invitation; True once it has tried too many
        (the caller withdraws it)."""
        tried = self.invitations.pop(invitation, 0) + 1
        self.invitations[invitation] = tried
        while len(self.invitations) > REMEMBERED:
            self.invitations.popitem(last=False)
        return tried >= TAKEN_NAMES

    def device_cookie(self, request: Request, name: str) -> str:
        """The Set-Cookie value that marks this browser as one `name` signs in from."""
        cookie: SimpleCookie = SimpleCookie()
        cookie[DEVICE_COOKIE] = self.tk.keys.seal(f"{name}\n{int(time.time())}")
        morsel = cookie[DEVICE_COOKIE]
        morsel.update({"path": "/login", "httponly": True, "samesite": "Strict"})
        morsel["max-age"] = str(DEVICE_DAYS * 24 * 3600)
        from talekeeper.web.auth import secure_cookies_forced

        if request.url.scheme == "https" or secure_cookies_forced():
            morsel["secure"] = True
        return morsel.OutputString()

    def known_device(self, request: Request, name: str) -> bool:
        sealed = request.cookies.get(DEVICE_COOKIE)
        if not sealed or len(sealed) > 1000:
            return False
        try:
            held, issued = self.tk.keys.reveal(sealed).split("\n")
            return held == name and time.time() - int(issued) < DEVICE_DAYS * 24 * 3600
        except Exception:  # anything but this installation's own seal is no device
            return False


async def slow_refusal(exc: Exception) -> None:
    """Wait before answering a refusal of backing off or of too many hashes (see 4.)."""
    if isinstance(exc, TooManyAttempts | SignInBusy):
        await asyncio.sleep(TARPIT)


def _address(request: Request) -> str:
    return request.client.host if request.client else ""


def guard_of(request: Request) -> SignInGuard:
    return request.app.state.signin
