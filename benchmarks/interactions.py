"""Every interaction a player has with a story, over HTTP, at 100 and 10,000 turns.

    .venv/bin/python benchmarks/interactions.py [--sizes 100,10000] [--samples 30]
                                                [--bundle-samples 3] [--only undo,redo]

1. Builds one story per size straight into the tree, with what a played story of that
   length has: a state snapshot and a proposal (chips) on every turn, a retry take every
   10 turns, a memory every 6 turns and a summary every 15, and two takes of the last
   turn; and, spread along it, the same number of side lines and Save Points at every
   size (5 two-turn side lines, 7 Save Points: lines and Save Points are listed whole, so
   more of them would measure their number, not the story's length).
2. Serves talekeeper on loopback (uvicorn, the real app) with its model set to a fake
   OpenAI-compatible server that answers at once, in a process of its own; the client
   (the player's browser) runs in another process, so neither's work is counted as the
   server's.
3. Times, round-robin over the sizes, each interaction as the play page makes it (a change
   made from the story says which turns the page shows, and is answered with what changed):

   page load        GET  /adventures/{id}                      the play page
   story, afresh    GET  /adventures/{id}/story                the story drawn again (after a panel's change)
   undo, redo       POST /adventures/{id}/undo, /redo          the page's buttons (Ctrl+Z / Ctrl+Y)
   take step        POST /adventures/{id}/tree/turns/{t}/choose  the ‹ › under a turn
   retry            POST /api/adventures/{id}/retry            a new take of the last turn, streamed
   story fragment   GET  /adventures/{id}/story?shown_…        what the page asks for after a turn
   list lines       GET  /adventures/{id}/tree/lines           the Lines panel (story map)
   restore          POST /adventures/{id}/tree/save-points/{s}/restore  from the Save Points panel
   search           GET  /adventures/{id}/search?q=…           four hits, anywhere on the line
   export, import   GET  /api/adventures/{id}/export, POST /api/adventures/import

   and prints, per interaction and size, the median wall time the client saw, the median
   CPU time the server's process spent on it, the answer's size, and the ratio
   10,000 / 100 of each. After a retry the memory bank's run is waited for (the player
   reads meanwhile), as in `turn_overhead.py`.

Targets on a quiet machine: every interaction ≤ 10 ms of server time and 10,000/100 ≤ 1.2
(export and import excepted: ≤ 2 s each at 10,000 turns; their memory is `bundle.py`'s).
The machine this runs on is shared: read the ratios (both sizes measured in one run,
interleaved) and the load average printed with them. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.turn_overhead import NARRATION, FakeModel, Served, bank_rows  # noqa: E402
from talekeeper.memory.worker import worker_for  # noqa: E402
from talekeeper.service import (
    adventures,  # noqa: E402
    unit_of_work,
)
from talekeeper.service import state_engine as world  # noqa: E402
from talekeeper.service.adventures import FIRST_PAINT  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.state import load_rules, normalise  # noqa: E402
from talekeeper.store.models import utcnow  # noqa: E402
from talekeeper.story import savepoints, tree  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")
TARGET_MS = 10.0
TARGET_RATIO = 1.2
TARGET_BUNDLE_S = 2.0
NEEDLE = "quayside"  # planted in four turns of each story: search finds the same four


@dataclass
class Story:
    """One built story and the ids its interactions need."""

    size: int
    aid: int = 0
    takes: tuple[int, int] = (0, 0)  # the last turn's two takes: choose alternates
    save_points: tuple[int, int] = (0, 0)  # halfway, and at the end
    bundle: bytes = b""
    imported: list[int] = field(default_factory=list)


def build(tk: Talekeeper, turns: int) -> Story:
    story = Story(turns)
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        rules = load_rules(adventure.rules)
        node = tree.head(session, adventure)
        before, _ = normalise(node.state, rules)
        block = json.dumps({"events": [{"type": "set_flag", "flag": "ferry_hired", "value": True}]})
        settled = world.settle_reply(f"{NARRATION}\n```state\n{block}\n```", before, rules, 1)
        state, proposal = settled.state, settled.proposal
        plant = {3, turns - 5, turns - 20, turns - 40}
        now = utcnow()
        spread = {max(1, turns * k // 6) for k in range(1, 6)}  # 5 side lines, 5 Save Points
        halfway = None
        for depth in range(1, turns + 1):
            text = f"{NARRATION} ({depth})"
            if depth in plant:
                text = f"On the {NEEDLE} the nets are drying. {text}"
            turn = tree.NewTurn(
                "do", f"walk on, step {depth}", text, state=state, proposal=proposal, model="bench"
            )
            if depth % 10 == 0 or depth == turns:  # a retry take beside this turn
                other = tree.NewTurn(
                    "do", turn.action_text, f"Another take {depth}.", state=state, model="bench"
                )
                first = tree.append_child(session, adventure, node, other)
            if depth in spread:  # a two-turn side line, left behind
                side = tree.append_child(
                    session,
                    adventure,
                    node,
                    tree.NewTurn("say", "wait", "A side line.", state=state),
                )
                tree.append_child(
                    session,
                    adventure,
                    side,
                    tree.NewTurn("do", "go on", "It goes on.", state=state),
                )
            node = tree.append_child(session, adventure, node, turn)
            bank_rows(session, adventure.id, node.id, depth, turns, now)
            if depth in spread:
                savepoints.create(session, adventure, f"turn {depth}")
            if depth == turns // 2:
                halfway = savepoints.create(session, adventure, "halfway")
        end = savepoints.create(session, adventure, "the end")
        session.flush()
        story.aid = adventure.id
        story.takes = (first.id, node.id)
        story.save_points = (halfway.id, end.id)
    return story


# --- the client: the player's browser, in a process of its own ---------------------------------


def _client(pipe, base: str) -> None:  # noqa: ANN001
    """Makes each request the server side sends, times it, answers (seconds, status, bytes,
    body when asked); None ends it."""
    with httpx.Client(base_url=base, timeout=300, headers={"Origin": base}) as client:
        while (ask := pipe.recv()) is not None:
            method, url, body, headers, keep = ask
            start = time.perf_counter()
            response = client.request(method, url, content=body, headers=headers)
            content = response.content  # read to the end: a streamed export counts whole
            elapsed = time.perf_counter() - start
            failed = response.status_code >= 400
            pipe.send(
                (elapsed, response.status_code, len(content), content if keep or failed else None)
            )


class Browser:
    """The client process, and the server's CPU time around each request it makes."""

    def __enter__(self) -> Browser:
        return self

    def start(self, base: str) -> None:
        self.pipe, there = SPAWN.Pipe()
        self.process = SPAWN.Process(target=_client, args=(there, base), daemon=True)
        self.process.start()
        there.close()  # (so a client that dies is an EOFError here, not a wait forever)

    def ask(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        keep: bool = False,
    ) -> tuple[float, float, int, bytes | None]:
        """(wall s, server CPU s, answer bytes, body if kept); anything but 2xx/3xx stops."""
        used = time.process_time()
        self.pipe.send((method, url, body, headers or {}, keep))
        elapsed, status, size, content = self.pipe.recv()
        used = time.process_time() - used
        if status >= 400:
            raise SystemExit(f"{method} {url} answered {status}: {(content or b'')[:300]!r}")
        return elapsed, used, size, content

    def __exit__(self, *exc: object) -> None:
        if hasattr(self, "pipe"):
            self.pipe.send(None)
            self.process.join(timeout=10)


# --- the interactions ------------------------------------------------------------------------


class Interactions:
    """Each interaction as the play page makes it: one timed request (and, around it, the
    untimed ones that put the story back). A change made from the story says what the
    page shows (its first and last turn), as the page does."""

    def __init__(self, browser: Browser, tk: Talekeeper) -> None:
        self.browser, self.tk = browser, tk

    def shown(self, s: Story) -> str:
        """What the page shows now: the first paint's turns, ending at the head."""
        with self.tk.db.session() as session:
            head = tree.head(session, unit_of_work.get_adventure(session, s.aid))
            ids = tree.path_ids(session, head, limit=FIRST_PAINT)
        return f"shown_head={ids[-1]}&shown_first={ids[0]}"

    def post(self, url: str, s: Story):
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        return self.browser.ask("POST", url, self.shown(s).encode(), form)

    def page_load(self, s: Story):
        yield "page load", self.browser.ask("GET", f"/adventures/{s.aid}")

    def story_afresh(self, s: Story):
        yield "story, drawn afresh", self.browser.ask("GET", f"/adventures/{s.aid}/story")

    def undo(self, s: Story):
        yield "undo", self.post(f"/adventures/{s.aid}/undo", s)
        self.post(f"/adventures/{s.aid}/redo", s)

    def redo(self, s: Story):
        self.post(f"/adventures/{s.aid}/undo", s)
        yield "redo", self.post(f"/adventures/{s.aid}/redo", s)

    def take_step(self, s: Story):
        yield "take step", self.post(f"/adventures/{s.aid}/tree/turns/{s.takes[0]}/choose", s)
        self.post(f"/adventures/{s.aid}/tree/turns/{s.takes[1]}/choose", s)

    def retry(self, s: Story):
        """A retry as the page makes it: the turn, streamed, then the story's fragment, asked
        for what changed since the page showed the take it replaced."""
        shown = self.shown(s)
        stream = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        yield "retry", self.browser.ask("POST", f"/api/adventures/{s.aid}/retry", b"{}", stream)
        bank = worker_for(self.tk)
        while bank._tasks:  # the bank's run after the turn (the player reads meanwhile)
            time.sleep(0.0005)
        yield "story fragment", self.browser.ask("GET", f"/adventures/{s.aid}/story?{shown}")

    def list_lines(self, s: Story):
        yield "list lines", self.browser.ask("GET", f"/adventures/{s.aid}/tree/lines")

    def restore(self, s: Story):
        halfway, end = s.save_points
        url = f"/adventures/{s.aid}/tree/save-points/{{}}/restore"
        yield "restore", self.browser.ask("POST", url.format(halfway))
        self.browser.ask("POST", url.format(end))

    def search(self, s: Story):
        yield "search", self.browser.ask("GET", f"/adventures/{s.aid}/search?q={NEEDLE}")

    def export(self, s: Story):
        timed = self.browser.ask("GET", f"/api/adventures/{s.aid}/export", keep=True)
        s.bundle = timed[3] or b""
        yield "export", timed

    def import_(self, s: Story):
        if not s.bundle:
            list(self.export(s))
        raw = {"Content-Type": "application/octet-stream"}
        yield "import", self.browser.ask("POST", "/api/adventures/import", s.bundle, raw)


PLAN = [  # (what --only names, the method making it)
    ("page load", "page_load"),
    ("story, drawn afresh", "story_afresh"),
    ("undo", "undo"),
    ("redo", "redo"),
    ("take step", "take_step"),
    ("list lines", "list_lines"),
    ("restore", "restore"),
    ("search", "search"),
    ("retry", "retry"),  # and the story fragment the page asks for after it
    ("export", "export"),
    ("import", "import_"),
]
BUNDLE = {"export", "import"}


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--samples", type=int, default=30, help="samples per interaction and size")
    parser.add_argument("--bundle-samples", type=int, default=3, help="for export and import")
    parser.add_argument("--only", default="", help="comma-separated interaction names")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    # a name with a comma in it ("story, drawn afresh") arrives split at it: its pieces name it
    plan = [(n, m) for n, m in PLAN if not wanted or {p.strip() for p in n.split(",")} <= wanted]
    with FakeModel() as fake_url, Browser() as browser:
        os.environ["TALEKEEPER_ENDPOINT"] = fake_url
        os.environ["TALEKEEPER_MODEL"] = "fake-model"
        tk = Talekeeper(Path(tempfile.mkdtemp(prefix="tk-interactions-")))
        started = time.perf_counter()
        stories = [build(tk, size) for size in sizes]
        print(
            f"built {', '.join(f'{s:,}' for s in sizes)}-turn stories in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
        worker_for(tk)  # made here, so this thread and the server share it
        with Served(tk) as base:
            browser.start(base)
            act = Interactions(browser, tk)
            for story in stories:  # warm: templates compiled, paths and indexes kept
                for name, method in plan:
                    if name not in BUNDLE:
                        list(getattr(act, method)(story))
            rows = []
            for name, method in plan:
                count = args.bundle_samples if name in BUNDLE else args.samples
                wall: dict[str, dict[int, list[float]]] = {}
                cpu: dict[str, dict[int, list[float]]] = {}
                size: dict[str, dict[int, int]] = {}
                for _ in range(count):
                    for story in stories:
                        for label, (elapsed, used, answered, _) in getattr(act, method)(story):
                            wall.setdefault(label, {}).setdefault(story.size, []).append(elapsed)
                            cpu.setdefault(label, {}).setdefault(story.size, []).append(used)
                            size.setdefault(label, {})[story.size] = answered
                for label in wall:
                    rows.append(row_of(label, sizes, wall[label], cpu[label], size[label]))
                    print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    print_table(rows, sizes)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def row_of(
    name: str,
    sizes: list[int],
    wall: dict[int, list[float]],
    cpu: dict[int, list[float]],
    size: dict[int, int],
) -> dict:
    """One interaction's medians at each size, and the ratios of the largest to the smallest."""
    row: dict = {"interaction": name}
    for n in sizes:
        row[f"{n:,} wall ms"] = median_ms(wall[n])
        row[f"{n:,} server CPU ms"] = median_ms(cpu[n])
        row[f"{n:,} answer KB"] = round(size[n] / 1024, 1)
    small, large = min(sizes), max(sizes)
    row["ratio wall"] = round(statistics.median(wall[large]) / statistics.median(wall[small]), 2)
    row["ratio CPU"] = round(statistics.median(cpu[large]) / statistics.median(cpu[small]), 2)
    if name in BUNDLE:
        ok = statistics.median(wall[large]) <= TARGET_BUNDLE_S
        row["target"] = f"{'ok' if ok else 'MISSED'} (≤ {TARGET_BUNDLE_S:g} s)"
    else:
        ok = statistics.median(cpu[large]) * 1000 <= TARGET_MS and row["ratio CPU"] <= TARGET_RATIO
        row["target"] = (
            f"{'ok' if ok else 'MISSED'} (server ≤ {TARGET_MS:g} ms, ratio ≤ {TARGET_RATIO})"
        )
    return row


def print_table(rows: list[dict], sizes: list[int]) -> None:
    small, large = min(sizes), max(sizes)
    header = (
        f"{'interaction':<20}"
        + "".join(f"{f'{n:,} wall':>12}{f'{n:,} CPU':>12}" for n in (small, large))
        + f"{'ratio wall':>11}{'ratio CPU':>10}  {'answer KB':>14}  target"
    )
    print()
    print(header)
    print("-" * len(header))
    for row in rows:
        bundle = row["interaction"] in BUNDLE
        unit, scale = ("s", 1000) if bundle else ("ms", 1)
        cells = "".join(
            f"{row[f'{n:,} wall ms'] / scale:>9.2f} {unit:<2}{row[f'{n:,} server CPU ms'] / scale:>9.2f} {unit:<2}"
            for n in (small, large)
        )
        answers = f"{row[f'{small:,} answer KB']:g} / {row[f'{large:,} answer KB']:g}"
        print(
            f"{row['interaction']:<20}{cells}{row['ratio wall']:>11.2f}{row['ratio CPU']:>10.2f}"
            f"  {answers:>14}  {row['target']}"
        )


if __name__ == "__main__":
    main()
