"""Kill `talekeeper serve` at random moments and check that nothing the player saw is lost.

The harness behind tests/reliability/test_crash.py and benchmarks/crash_soak.py:

1. start `talekeeper serve` as a real subprocess (`python -m talekeeper.cli serve`) on a
   free port, a data directory of its own, and `--endpoint` at a `FakeModelServer`;
2. act as a player over real HTTP — turns streamed over SSE, undo, redo, Save Points,
   new adventures — and remember everything the server *acknowledged* (a turn's `done`
   event, a 200 from a move);
3. SIGKILL the process at a chosen moment: before the reply starts, mid-stream, just
   after the model's last byte (the server is committing), during a turn's state pass
   (the turn already written and acknowledged, its state still to settle), or at a random
   time while moves are in flight;
4. check the file the dead process left (`invariants.check_database`: no half-written
   node, a valid head, integrity and foreign keys), compare it with what was
   acknowledged, restart the server on the same directory and check again through the
   API.

What may differ from the acknowledgements is exactly one thing: the operation in flight
at the kill may have committed without the client hearing about it (a whole turn — the
full reply, never a prefix — or a finished move). Everything acknowledged must be there.

Turns are played in both state modes (the setting is switched before each kill point):
inline, and structured, where `done` comes before the state pass and `settled` after it.
A turn killed between the two stays as acknowledged; after the restart it is no longer
pending (marked not updated), and the state the API shows is its snapshot.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests import waiting
from tests.reliability.fakemodel import FakeModelServer
from tests.reliability.invariants import Snapshot, check_database

DEMO = "greywater-lantern"
DB_NAME = "talekeeper.db"
REPO = Path(__file__).resolve().parents[2]
SAVE_POINTS = "/api/adventures/{id}/save-points"

KILL_MOMENTS = (
    "before-reply",  # the request is in, nothing streamed yet
    "mid-stream",  # after a random number of streamed pieces
    "model-finished",  # the model's last byte is out: the server is extracting and committing
    "during-moves",  # a burst of undo / redo (and Save Points, where they exist)
    "new-adventure",  # creating an adventure (root node + head in one transaction)
    "summarising",  # while the memory bank writes a memory or the story summary
    "state-pass",  # after `done`, while the turn's state pass runs or settles (structured)
)
# The memory bank's prompts open with these (talekeeper/memory/prompts.py).
SUMMARISER_MARKERS = ("[talekeeper:memory]", "[talekeeper:summary]")
MAX_TURNS_TO_A_SUMMARY = 16


def is_state_pass(body: dict[str, Any]) -> bool:
    return body.get("response_format") is not None


def is_summariser(body: dict[str, Any]) -> bool:
    text = json.dumps(body.get("messages") or body.get("prompt") or "")
    return any(marker in text for marker in SUMMARISER_MARKERS)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One `talekeeper serve` process on `data_dir`."""

    def __init__(self, data_dir: Path, endpoint: str, database_url: str | None = None) -> None:
        self.data_dir = data_dir
        self.endpoint = endpoint
        self.database_url = database_url  # a PostgreSQL database instead of the SQLite file
        self.proc: subprocess.Popen[bytes] | None = None
        self.base_url = ""
        self.log = data_dir / "serve.log"
        self.killed = threading.Event()  # set *before* the signal: the client's cue
        self.generation = 0  # which start this is: a late timer must not kill the next one

    def start(self, timeout: float = 120.0) -> None:
        """Start it and wait until it answers (the bound, scaled by the machine's factor,
        only stops a server that hangs: a busy machine took over 30 s to start one)."""
        port = free_port()
        self.generation += 1
        self.killed.clear()
        self.base_url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TALEKEEPER_")}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        command = [
            sys.executable, "-m", "talekeeper.cli", "serve",
            "--host", "127.0.0.1", "--port", str(port),
            "--data-dir", str(self.data_dir),
            "--endpoint", self.endpoint, "--model", "fake",
        ]  # fmt: skip
        if self.database_url:
            command += ["--database-url", self.database_url]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=log, env=env, cwd=REPO)

        def answers() -> bool:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(
                    f"talekeeper serve exited with {self.proc and self.proc.returncode}:\n"
                    f"{self.tail()}"
                )
            try:
                return (
                    httpx.get(f"{self.base_url}/api/health", timeout=waiting.bound(5)).status_code
                    == 200
                )
            except httpx.HTTPError:
                return False

        try:
            waiting.until(answers, "talekeeper serve answering", timeout)
        except TimeoutError as exc:
            self.kill()
            raise RuntimeError(f"{exc}:\n{self.tail()}") from None

    def store(self) -> Path | str:
        """Where this server keeps its data, as `check_database` takes it."""
        return self.database_url or self.data_dir / DB_NAME

    def kill_later(self, delay: float) -> threading.Timer:
        """SIGKILL this start of the server after `delay` seconds, if it is still this one."""
        generation = self.generation
        timer = threading.Timer(delay, lambda: self.generation == generation and self.kill())
        timer.start()
        return timer

    def kill(self) -> None:
        self.killed.set()
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=waiting.bound(10))

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def settle_after_kill(store: Path | str, seconds: float = 60.0) -> None:
    """Wait until what a killed server sent its database has been done, before reading it.

    A SQLite file is written by the app's own process: once it is dead, nothing more
    arrives. A PostgreSQL server is another process: a COMMIT the app sent just before it
    was killed is still read and carried out by its backend (which notices the dead client
    only when it next reads from it). A snapshot taken in between showed the turn missing,
    the restarted server then showed it there: "the API shows another head" (issue 30),
    under load where that backend waits its turn for a core. So on PostgreSQL the check
    waits until the database has no backend left but its own."""
    if isinstance(store, Path):
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    # autocommit: each look a transaction of its own (one transaction sees one snapshot of
    # pg_stat_activity however long it waits)
    engine = create_engine(store, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    try:
        with engine.connect() as connection:
            waiting.until(
                lambda: connection.execute(query).scalar_one() == 0,
                "the killed server's database backends ending",
                seconds,
                poll=0.05,
            )
    finally:
        engine.dispose()


def sse_events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    name, data = None, []
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and name and data:
            yield name, json.loads("\n".join(data))
            name, data = None, []


@dataclass
class Ledger:
    """What the server acknowledged to the client, and what was in flight at the kill."""

    nodes: dict[int, tuple[int | None, str, str, str]] = field(
        default_factory=dict
    )  # id -> parent, kind, action, narration
    heads: dict[int, int] = field(default_factory=dict)  # adventure -> acknowledged head
    save_points: dict[int, tuple[int, int, str]] = field(
        default_factory=dict
    )  # id -> adventure, node, name
    in_flight: set[int] = field(default_factory=set)  # adventures with an unacknowledged change
    adventure_in_flight: bool = False

    def saw_turn(self, adventure_id: int, turn: dict[str, Any]) -> None:
        self.nodes[turn["id"]] = (
            turn["parent_id"],
            turn["kind"],
            turn["action"],
            turn["narration"],
        )
        self.heads[adventure_id] = turn["id"]

    def saw_story(self, story: dict[str, Any]) -> None:
        for turn in story["turns_shown"]:
            self.nodes[turn["id"]] = (
                turn["parent_id"],
                turn["kind"],
                turn["action"],
                turn["narration"],
            )
        self.heads[story["id"]] = story["head_id"]


@dataclass
class KillReport:
    moment: str
    committed_unseen: int = 0  # changes that committed although the client never heard
    late_commits: int = 0  # …of which PostgreSQL carried out after the kill (see settle_after_kill)
    lost_in_flight: int = 0  # in-flight changes that did not commit (allowed: not acknowledged)


class CrashRun:
    """Plays, kills and checks, over and over, on one data directory."""

    def __init__(
        self, data_dir: Path, fake: FakeModelServer, seed: int, database_url: str | None = None
    ) -> None:
        self.data_dir = data_dir
        self.fake = fake
        self.rng = random.Random(seed)
        self.server = ServerProcess(data_dir, fake.endpoint, database_url)
        self.ledger = Ledger()
        self.previous: Snapshot | None = None
        self.reports: list[KillReport] = []
        self.save_points_available: bool | None = None
        self.startup_seconds: list[float] = []
        self.summariser_kills = 0
        self.state_pass_kills = 0

    # -- the loop ------------------------------------------------------------------
    def start(self) -> None:
        began = time.monotonic()
        self.server.start()
        self.startup_seconds.append(time.monotonic() - began)
        if self.save_points_available is None:
            paths = httpx.get(
                f"{self.server.base_url}/openapi.json", timeout=waiting.bound(60)
            ).json()["paths"]
            self.save_points_available = SAVE_POINTS.replace("{id}", "{adventure_id}") in paths

    def kill_point(self, moment: str) -> KillReport:
        """From a running server: play a little, kill at `moment`, check, restart."""
        with httpx.Client(base_url=self.server.base_url, timeout=waiting.bound(60)) as http:
            if not self.ledger.heads:
                self.new_adventure(http)
            adventure = self.rng.choice(sorted(self.ledger.heads))
            structured = moment == "state-pass" or self.rng.random() < 0.5
            self.state_updates(http, "structured" if structured else "inline")
            for _ in range(self.rng.randint(0, 2)):  # some acknowledged play first
                self.turn(http, adventure)
            if self.save_points_available and self.rng.random() < 0.5:
                self.save_point(http, adventure)
            self.rng.choice([lambda: None, lambda: self.move(http, adventure, "undo")])()
            self.interrupt(http, adventure, moment)
        report = self.verify(moment)
        self.reports.append(report)
        self.start()
        self.verify_through_api()
        return report

    def interrupt(self, http: httpx.Client, adventure: int, moment: str) -> None:
        if moment == "new-adventure":
            self.ledger.adventure_in_flight = True
            self.kill_while(lambda: self.new_adventure(http), self.rng.uniform(0.0, 0.05))
            return
        self.ledger.in_flight.add(adventure)
        if moment == "before-reply":
            self.kill_while(lambda: self.turn(http, adventure), self.rng.uniform(0.0, 0.03))
        elif moment == "mid-stream":
            self.turn(http, adventure, kill_after_pieces=self.rng.randint(1, 6))
        elif moment == "model-finished":
            delay = self.rng.uniform(0.0, 0.02)
            self.fake.on_finished = lambda _n: self.server.kill_later(delay)
            try:
                self.turn(http, adventure)
            finally:
                self.fake.on_finished = None
        elif moment == "during-moves":

            def burst() -> None:
                for _ in range(50):
                    action = self.rng.choice(["undo", "redo", "redo", "save"])
                    if action == "save":
                        if self.save_points_available:
                            self.save_point(http, adventure)
                    else:
                        self.move(http, adventure, action)

            self.kill_while(burst, self.rng.uniform(0.005, 0.08))
        elif moment == "summarising":
            self.until_summariser_runs(http, adventure)
        elif moment == "state-pass":
            self.during_state_pass(http, adventure)
        else:
            raise ValueError(moment)
        self.server.kill()  # whatever happened above, the process dies now

    def during_state_pass(self, http: httpx.Client, adventure: int) -> None:
        """Play a turn in structured mode and kill while its state pass streams, or just
        after (while the server settles the turn): its `done` has been heard by then."""
        answer = self.fake.state_answer(0)
        pass_seconds = self.fake.chunk_delay * (len(answer) / self.fake.chunk_chars)
        delay = self.rng.uniform(0.0, pass_seconds * 1.5)

        def on_request(_number: int, body: dict[str, Any]) -> None:
            if is_state_pass(body) and not self.server.killed.is_set():
                self.state_pass_kills += 1
                self.server.kill_later(delay)

        self.fake.on_request = on_request
        try:
            self.turn(http, adventure)
        finally:
            self.fake.on_request = None

    def state_updates(self, http: httpx.Client, mode: str) -> None:
        """How turns hand over their changes from now on (a global setting)."""
        response = http.put("/api/settings", json={"generation": {"state_updates": mode}})
        assert response.status_code == 200, response.text

    def until_summariser_runs(self, http: httpx.Client, adventure: int) -> None:
        """Play turns until the memory bank asks the model for a memory or summary, then
        kill while that reply streams (or just after it, while the bank writes it)."""
        reply_seconds = self.fake.chunk_delay * (len(self.fake.compose(0)) / self.fake.chunk_chars)
        delay = self.rng.uniform(0.0, reply_seconds * 1.5)

        def on_request(_number: int, body: dict[str, Any]) -> None:
            if is_summariser(body) and not self.server.killed.is_set():
                self.summariser_kills += 1
                self.server.kill_later(delay)

        self.fake.on_request = on_request
        try:
            for _ in range(MAX_TURNS_TO_A_SUMMARY):
                if self.server.killed.is_set():
                    break
                try:
                    self.turn(http, adventure)
                except AssertionError:
                    if not self.server.killed.is_set():
                        raise
                    break
            else:
                if not self.server.killed.wait(2.0):
                    raise AssertionError(
                        f"the memory bank never called the model in {MAX_TURNS_TO_A_SUMMARY} turns"
                    )
        finally:
            self.fake.on_request = None

    def kill_while(self, action, delay: float) -> None:
        timer = self.server.kill_later(delay)
        try:
            action()
        except httpx.HTTPError:
            if not self.server.killed.is_set():
                raise
            # the connection died with the server: nothing was acknowledged
        timer.join()

    # -- player actions (each records only what the server acknowledged) -------------
    def new_adventure(self, http: httpx.Client) -> None:
        response = http.post(
            "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
        )
        if response.status_code == 201:
            self.ledger.saw_story(response.json())

    def turn(
        self, http: httpx.Client, adventure: int, kill_after_pieces: int | None = None
    ) -> None:
        kind, text = self.rng.choice([("do", "look around"), ("say", "Hello?"), ("continue", "")])
        pieces = 0
        try:
            with http.stream(
                "POST",
                f"/api/adventures/{adventure}/turns",
                json={"kind": kind, "text": text},
                headers={"Accept": "text/event-stream"},
            ) as response:
                if response.status_code != 200:
                    response.read()
                    raise AssertionError(
                        f"turn refused: {response.status_code} {response.text}\n{self.server.tail(60)}"
                    )
                for name, data in sse_events(response):
                    if name == "text":
                        pieces += 1
                        if kill_after_pieces is not None and pieces >= kill_after_pieces:
                            self.server.kill()
                    elif name in ("done", "settled"):  # settled: a remark may end it
                        self.ledger.saw_turn(adventure, data["turn"])
                        self.ledger.heads[adventure] = data["head_id"]
                    elif name == "error":
                        raise AssertionError(f"turn failed with the server alive: {data}")
        except (httpx.HTTPError, httpx.StreamError):
            if not self.server.killed.is_set():
                raise

    def move(self, http: httpx.Client, adventure: int, which: str) -> None:
        response = http.post(f"/api/adventures/{adventure}/{which}")
        if response.status_code == 200:
            self.ledger.saw_story(response.json())
        elif response.status_code != 409:  # 409: nothing to undo/redo
            raise AssertionError(
                f"{which}: {response.status_code} {response.text}\n{self.server.tail(60)}"
            )

    def save_point(self, http: httpx.Client, adventure: int) -> None:
        name = f"save {len(self.ledger.save_points) + 1}"
        response = http.post(SAVE_POINTS.format(id=adventure), json={"name": name})
        if response.status_code in (200, 201):
            body = response.json()
            point = body.get("save_point", body)
            self.ledger.save_points[point["id"]] = (adventure, point["node_id"], point["name"])

    # -- checks --------------------------------------------------------------------
    def verify(self, moment: str) -> KillReport:
        report = KillReport(moment)
        if not isinstance(self.server.store(), Path):  # what a read at once would have seen
            early = check_database(self.server.store()).heads
            settle_after_kill(self.server.store())
        snap = check_database(self.server.store())
        if not isinstance(self.server.store(), Path):
            report.late_commits = sum(early.get(a) != h for a, h in snap.heads.items())
        ledger = self.ledger
        for node_id, (parent, kind, action, narration) in ledger.nodes.items():
            node = snap.nodes.get(node_id)
            assert node is not None, f"[{moment}] acknowledged turn {node_id} is gone"
            assert (node.parent_id, node.kind, node.action, node.narration) == (
                parent,
                kind,
                action,
                narration,
            ), f"[{moment}] acknowledged turn {node_id} changed"
        for sp_id, point in ledger.save_points.items():
            assert snap.save_points.get(sp_id) == point, (
                f"[{moment}] Save Point {sp_id} lost or moved"
            )
        if self.previous is not None:
            missing = set(self.previous.nodes) - set(snap.nodes)
            assert not missing, f"[{moment}] nodes that were on disk vanished: {missing}"
        full_replies = {reply.strip() for reply in self.fake.replies.values()}
        known = set(ledger.nodes) | (set(self.previous.nodes) if self.previous else set())
        for node_id in set(snap.nodes) - known:
            node = snap.nodes[node_id]
            if node.parent_id is None:
                continue  # an adventure's opening (checked below)
            assert node.narration in full_replies, (
                f"[{moment}] node {node_id} holds narration the model never finished: {node.narration!r}"
            )
            assert node.adventure_id in ledger.in_flight, (
                f"[{moment}] node {node_id} appeared from nowhere"
            )
            # A turn commits whole: its node and the head move together, or neither.
            assert snap.heads[node.adventure_id] == node_id, (
                f"[{moment}] node {node_id} was written but the head did not move to it"
            )
            report.committed_unseen += 1
        new_adventures = set(snap.heads) - set(ledger.heads)
        assert len(new_adventures) <= (1 if ledger.adventure_in_flight else 0), (
            f"[{moment}] adventures appeared without being asked for: {new_adventures}"
        )
        report.committed_unseen += len(new_adventures)
        for adventure, head in ledger.heads.items():
            assert adventure in snap.heads, f"[{moment}] adventure {adventure} is gone"
            if adventure not in ledger.in_flight:
                assert snap.heads[adventure] == head, (
                    f"[{moment}] adventure {adventure}: head moved by itself"
                )
        if ledger.adventure_in_flight and not new_adventures:
            report.lost_in_flight += 1
        for adventure in ledger.in_flight:
            if snap.heads[adventure] == ledger.heads[adventure] and not report.committed_unseen:
                report.lost_in_flight += 1
        # From here on the file is the truth: adopt what committed unseen.
        for adventure, head in snap.heads.items():
            ledger.heads[adventure] = head
        for sp_id, point in snap.save_points.items():
            ledger.save_points[sp_id] = point
        for node_id, node in snap.nodes.items():
            ledger.nodes[node_id] = (node.parent_id, node.kind, node.action, node.narration)
        ledger.in_flight.clear()
        ledger.adventure_in_flight = False
        self.previous = snap
        return report

    def verify_through_api(self) -> None:
        """The restarted server shows exactly the file's story at every head, none of it
        pending (a turn a kill left settling is marked not updated at start), and the
        state it shows is the head's snapshot."""
        snap = check_database(self.server.store())
        assert not snap.pending, f"turns still pending after the restart: {snap.pending}"
        with httpx.Client(base_url=self.server.base_url, timeout=waiting.bound(60)) as http:
            for adventure, head in self.ledger.heads.items():
                story = http.get(f"/api/adventures/{adventure}", params={"limit": 3}).json()
                if story["head_id"] != head:  # say whether the store itself moved since
                    now = check_database(self.server.store()).heads.get(adventure)
                    raise AssertionError(
                        f"adventure {adventure}: the API shows another head ({story['head_id']}; "
                        f"the store held {head} when checked after the kill, {now} now)"
                    )
                assert story["head_id"] == head, (
                    f"adventure {adventure}: the API shows another head"
                )
                assert story["turns_shown"][-1]["narration"] == self.ledger.nodes[head][3]
                assert story["turns_shown"][-1]["pending"] is False
                state = http.get(f"/api/adventures/{adventure}/state").json()
                assert state["head_id"] == head and state["document"] == snap.states[head], (
                    f"adventure {adventure}: the state shown is not the head's snapshot"
                )
            if self.save_points_available:
                for adventure in self.ledger.heads:
                    listed = http.get(SAVE_POINTS.format(id=adventure))
                    if listed.status_code == 200:
                        body = listed.json()
                        items = body.get("save_points", body) if isinstance(body, dict) else body
                        ids = {item["id"] for item in items}
                        expected = {
                            i for i, p in self.ledger.save_points.items() if p[0] == adventure
                        }
                        assert expected <= ids, (
                            f"adventure {adventure}: Save Points missing after restart"
                        )


def run(
    data_dir: Path,
    kill_points: int,
    seed: int,
    first_moment: int = 0,
    chunk_delay: float = 0.004,
    database_url: str | None = None,
) -> CrashRun:
    """`kill_points` kills, cycling through every moment (from `first_moment`, so runs side
    by side can share the moments out), on one data directory (or one PostgreSQL database)."""
    with FakeModelServer(chunk_delay=chunk_delay) as fake:
        crash = CrashRun(data_dir, fake, seed, database_url)
        crash.start()
        try:
            moments = [
                KILL_MOMENTS[(first_moment + i) % len(KILL_MOMENTS)] for i in range(kill_points)
            ]
            crash.rng.shuffle(moments)
            for moment in moments:
                crash.kill_point(moment)
        finally:
            crash.server.kill()
        return crash
