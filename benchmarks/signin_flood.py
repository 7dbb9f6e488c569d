"""A flood of wrong passwords against a real server: what it costs signed-in players.

    .venv/bin/python benchmarks/signin_flood.py [--attackers 30] [--seconds 20]

A real `talekeeper serve --accounts` process (real Argon2id cost; web/signin.py's guard
on), a signed-in player reading her adventures list and a scenario in a loop, first alone,
then while `--attackers` threads send wrong passwords as fast as the server answers, each
from an address of its own on loopback (127.0.0.2, 127.0.0.3 …): half aim at the player's
name, half at names nobody has. Printed: the player's read times (median and p95) alone
and under the flood, and their ratio (the issue's bound: under 2×); what the attackers
were answered (422 checked and refused, 429 backing off, 503 too many at once); how many
passwords the server actually hashed; its peak memory; and whether the player, signing in
again from her own browser in the middle of the flood, got in (a stranger cannot lock her
out) while a browser she never used was held back.

Loopback only, bounded in time, and it stops its server whatever happens.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from talekeeper import accounts  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from tests.reliability.crash import free_port  # noqa: E402

PASSWORD = "correct horse battery staple"


def start_server(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALEKEEPER_")}
    env["PYTHONPATH"] = str(REPO)
    command = [
        sys.executable, "-m", "talekeeper.cli", "serve", "--accounts",
        "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(home),
    ]  # fmt: skip
    log = (home / "serve.log").open("ab")
    proc = subprocess.Popen(command, stdout=log, stderr=log, env=env, cwd=REPO)
    while True:  # ready when it answers (or gone when it died)
        if proc.poll() is not None:
            raise SystemExit(f"the server exited:\n{(home / 'serve.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code < 500:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)


def sign_in(base: str, client: httpx.Client, name: str, password: str) -> httpx.Response:
    return client.post(
        f"{base}/login", data={"name": name, "password": password}, follow_redirects=False
    )


def reads(base: str, client: httpx.Client, until: float, times: list[float]) -> None:
    while time.monotonic() < until:
        began = time.perf_counter()
        for path in ("/api/adventures", "/api/scenarios/greywater-lantern"):
            answer = client.get(f"{base}{path}")
            assert answer.status_code == 200, (path, answer.status_code, answer.text[:200])
        times.append((time.perf_counter() - began) / 2)


def flood(base: str, attackers: int, seconds: float, results: multiprocessing.Queue) -> None:
    """The attackers, in a process of their own (their threads must not slow the player's
    client here: only the server is under test)."""
    answers: Counter[int] = Counter()
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=attack, args=(base, i, until, answers), daemon=True)
        for i in range(attackers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(dict(answers))


def attack(base: str, number: int, until: float, answers: Counter[int]) -> None:
    transport = httpx.HTTPTransport(local_address=f"127.0.0.{2 + number % 250}")
    with httpx.Client(transport=transport, timeout=60) as client:
        tries = 0
        while time.monotonic() < until:
            tries += 1
            name = "ada" if number % 2 == 0 else f"nobody{number}x{tries}"
            try:
                answers[sign_in(base, client, name, f"guess {number} {tries}").status_code] += 1
            except httpx.HTTPError:
                answers[0] += 1


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[int(len(ordered) * 0.95)] if ordered else float("nan")
    return f"median {statistics.median(ordered) * 1000:6.1f} ms, p95 {p95 * 1000:6.1f} ms ({len(ordered)} reads)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attackers", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="talekeeper-flood-") as scratch:
        home = Path(scratch)
        tk = Talekeeper(home, accounts=True)
        with tk.db.session() as session:
            accounts.create_user(session, "ada", PASSWORD, role="host")
        tk.db.dispose()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start_server(home, port)
        try:
            player = httpx.Client(timeout=60)
            assert sign_in(base, player, "ada", PASSWORD).status_code == 303
            quiet: list[float] = []
            reads(base, player, time.monotonic() + args.seconds / 2, quiet)

            flooded: list[float] = []
            results: multiprocessing.Queue = multiprocessing.get_context("spawn").Queue()
            attackers = multiprocessing.get_context("spawn").Process(
                target=flood, args=(base, args.attackers, args.seconds, results)
            )
            cpu_before = cpu_seconds(proc.pid)
            attackers.start()
            until = time.monotonic() + args.seconds
            time.sleep(args.seconds / 3)  # the flood under way: ada comes back, and a stranger
            browser = httpx.Client(timeout=60)  # ada's browser: her device cookie, no session
            browser.cookies.set("talekeeper_device", player.cookies["talekeeper_device"])
            own = sign_in(base, browser, "ada", PASSWORD).status_code
            stranger = sign_in(base, httpx.Client(timeout=60), "ada", PASSWORD).status_code
            reads(base, player, until, flooded)
            answers = Counter(results.get(timeout=120))
            attackers.join(timeout=60)
            server_cpu = cpu_seconds(proc.pid) - cpu_before
            memory = peak_memory_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log = (home / "serve.log").read_text()

    ratio = statistics.median(flooded) / statistics.median(quiet)
    print(f"signed-in reads alone:        {summary(quiet)}")
    print(f"signed-in reads in the flood: {summary(flooded)}")
    print(f"ratio (flood / alone, medians): {ratio:.2f}x  (bound: under 2x)")
    total = sum(answers.values())
    print(
        f"{args.attackers} attackers, {total} sign-ins in {args.seconds:.0f} s: "
        + ", ".join(f"{count} answered {status}" for status, count in sorted(answers.items()))
    )
    print(
        f"the server's CPU in the flood: {server_cpu:.1f} s "
        f"({server_cpu / max(total, 1) * 1000:.2f} ms a sign-in); peak memory {memory:.0f} MB"
    )
    print(f"ada signing in again from her own browser mid-flood: {own} (303: signed in)")
    print(f"…from a browser she never used: {stranger} (429 or 503: held back)")
    if "Traceback" in log:
        print("the server logged a traceback:\n" + log[log.index("Traceback") :][:2000])
        return 1
    return 0 if ratio < 2 and own == 303 else 1


if __name__ == "__main__":
    raise SystemExit(main())
