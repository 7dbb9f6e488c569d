"""Story-tree benchmark: do head moves and reads stay flat as a story grows?

Builds stories of 100, 1,000 and 10,000 turns — with forks (a retry take every 10 turns,
a two-turn side line every 50) — and times, as the API does them (writer lock, one
transaction, commit):

- undo, redo          one head move each
- restore             a Save Point restore (half of them far back, half near the end)
- play turn           a whole turn with the scripted model: context, state engine, commit
- read last 50        the story page the play page shows (`story_view`, 50 turns)
- delete line         a two-turn side line, left behind halfway, deleted (made afresh, untimed,
  before each); it reads where the lines part, so it is O(lines) here: information
- list lines          every line of the story, from the line ends the tree keeps; and
  list lines, walked  the same worked out from the whole tree (the code before them)
  (for information: here the lines grow with the story, a side line every 50 turns;
  `interactions.py` lists the same number of lines at every size)

Undo, redo and restore are reported as the engine's work (lock, reads, writes flushed);
the durable commit that follows each (an fsync: the disk's cost, and noisy) is its own
row, and the restore target applies to the two together.

All stories are built first, then each operation runs on each story in turn, round-robin,
so drift (disk, caches, the WAL) hits every size alike. It prints the median of each in
milliseconds and the ratio 10,000 / 100. Targets: restore ≤ 5 ms and every ratio except
the informational rows ≤ 1.2. Speed is reported, never asserted.

    .venv/bin/python benchmarks/tree.py [--sizes 100,1000,10000] [--repeat 200]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.llm.scripted import ScriptedProvider  # noqa: E402
from talekeeper.service import adventures, tree_ops, unit_of_work  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.service.turns import collect_turn  # noqa: E402
from talekeeper.store.models import Node  # noqa: E402
from talekeeper.story import branches, savepoints, tree  # noqa: E402

TARGET_RESTORE_MS = 5.0
TARGET_RATIO = 1.2
INFORMATION = {
    "list lines": "(O(lines); here the lines grow with the story; information)",
    "list lines, walked": "(O(story size): the whole tree; information)",
    "delete line": "(reads where the lines part: O(lines); information)",
    "durable commit": "(the fsync every change pays on top; the disk's, not the tree's)",
}
NARRATION = (
    "Rain needles across the harbour as the ferry lurches against its ropes. The ferrywoman "
    "squints at you, then at the lantern in your hands, and says nothing for a long moment."
)


def build(tk: Talekeeper, turns: int) -> tuple[int, list[int]]:
    """An adventure of `turns` turns on its main line, with forks; returns (id, main line)."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        state = node.state
        main = [node.id]
        for depth in range(1, turns + 1):
            turn = tree.NewTurn("do", f"act {depth}", f"{NARRATION} ({depth})", state=state)
            if depth % 10 == 0:  # a retry take beside this turn
                tree.append_child(
                    session,
                    adventure,
                    node,
                    tree.NewTurn("do", f"act {depth}", f"Another take {depth}.", state=state),
                )
            if depth % 50 == 0 and depth > 2:  # a two-turn side line, left behind
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
            main.append(node.id)
        tree.move_head(adventure, node)
        return adventure.id, main


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class Story:
    """One built story and the operations timed on it."""

    def __init__(self, tk: Talekeeper, turns: int):
        self.tk, self.turns = tk, turns
        self.aid, main = build(tk, turns)
        with tk.db.session() as session:
            adventure = unit_of_work.get_adventure(session, self.aid)
            tree.move_head(adventure, session.get(Node, main[2]))
            far = savepoints.create(session, adventure, "far back").id
            tree.move_head(adventure, session.get(Node, main[-1]))
            near = savepoints.create(session, adventure, "near the end").id
        self.targets = itertools.cycle([far, near])
        self.near = near
        self.fork, self.stays = main[turns // 2], main[turns // 2 + 1]
        self.head = main[-1]

    def write(self, step: Callable) -> None:
        """One change as the API makes it: writer lock, one transaction, durable commit.

        Records `work` (lock, reads, writes flushed) and `commit` (the fsync'd commit)."""
        start = time.perf_counter()
        with self.tk.locks.hold(self.aid), self.tk.db.session() as session:
            step(session, unit_of_work.get_adventure(session, self.aid))
            session.flush()
            self.work = time.perf_counter() - start
        self.commit = time.perf_counter() - start - self.work

    def undo(self) -> None:
        self.write(tree.undo)

    def redo(self) -> None:
        self.write(tree.redo)

    def restore(self) -> None:
        sid = next(self.targets)
        self.write(
            lambda session, adventure: savepoints.restore(
                session, adventure, savepoints.find(session, adventure, sid)
            )
        )

    def park(self) -> None:
        """Back at the end of the main line (a restore far back may have moved it)."""
        tree_ops.restore_save_point(self.tk, self.aid, self.near)

    def delete_line(self) -> None:
        """A side line left behind halfway (Redo and the head stay on the main line),
        made in a transaction of its own, then deleted as the API does."""
        with self.tk.db.session() as session:
            adventure = unit_of_work.get_adventure(session, self.aid)
            fork = session.get(Node, self.fork)
            side = tree.NewTurn("say", "wait", "A side line.", state=fork.state)
            side_node = tree.append_child(session, adventure, fork, side)
            leaf = tree.append_child(
                session, adventure, side_node, tree.NewTurn("do", "go on", "On.", state=fork.state)
            )
            leaf_id = leaf.id
            tree.set_active(session, adventure, fork, session.get(Node, self.stays))
            tree.move_head(adventure, session.get(Node, self.head))
        self.write(
            lambda session, adventure: branches.delete_line(
                session, adventure, session.get(Node, leaf_id)
            )
        )

    def read_last_50(self) -> None:
        with self.tk.db.session() as session:
            adventures.story_view(session, unit_of_work.get_adventure(session, self.aid), limit=50)

    def play_turn(self) -> float:
        async def once() -> float:
            start = time.perf_counter()
            await collect_turn(self.tk, self.aid, "do", "look around")
            return time.perf_counter() - start

        elapsed = asyncio.run(once())
        tree_ops.undo(self.tk, self.aid)  # stay in place: each play writes a fresh take
        return elapsed

    def list_lines(self) -> None:
        with self.tk.db.session() as session:
            branches.list_lines(session, unit_of_work.get_adventure(session, self.aid))

    def list_lines_walked(self) -> None:
        with self.tk.db.session() as session:
            branches.list_lines_slow(session, unit_of_work.get_adventure(session, self.aid))


def measure(stories: list[Story], repeat: int) -> dict[str, dict[int, float]]:
    """Each operation on every story in turn, round-robin, so drift hits all sizes alike."""
    plan: list[tuple[str, int]] = [
        ("undo", repeat),
        ("redo", repeat),
        ("restore", repeat),
        ("read last 50", repeat),
        ("delete line", max(10, repeat // 10)),
        ("play turn", max(10, repeat // 10)),
        ("list lines", max(5, repeat // 20)),
        ("list lines, walked", max(5, repeat // 20)),
    ]
    writes = {"undo", "redo", "restore", "delete line"}
    results: dict[str, dict[int, float]] = {}
    commits: dict[int, list[float]] = {s.turns: [] for s in stories}
    for op, rounds in plan:
        samples: dict[int, list[float]] = {s.turns: [] for s in stories}
        for _ in range(rounds):
            for story in stories:
                if op == "redo":
                    story.undo()
                if op == "play turn":
                    samples[story.turns].append(story.play_turn())
                    continue
                fn = {
                    "undo": story.undo,
                    "redo": story.redo,
                    "restore": story.restore,
                    "read last 50": story.read_last_50,
                    "delete line": story.delete_line,
                    "list lines": story.list_lines,
                    "list lines, walked": story.list_lines_walked,
                }[op]
                start = time.perf_counter()
                fn()
                if op in writes:
                    samples[story.turns].append(story.work)
                    commits[story.turns].append(story.commit)
                else:
                    samples[story.turns].append(time.perf_counter() - start)
                if op == "undo":
                    story.redo()
        if op == "restore":
            for story in stories:
                story.park()
        results[op] = {size: median_ms(values) for size, values in samples.items()}
    results["durable commit"] = {size: median_ms(values) for size, values in commits.items()}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    counter = itertools.count()
    provider = ScriptedProvider(
        lambda request: f"The rain keeps on. ({next(counter)})", chunk_size=40
    )
    with tempfile.TemporaryDirectory() as home:
        tk = Talekeeper(Path(home), provider_override=provider)
        started = time.perf_counter()
        stories = [Story(tk, size) for size in sizes]
        print(
            f"  built {', '.join(f'{s:,}' for s in sizes)} turns in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        table = measure(stories, args.repeat)
        tk.db.dispose()

    first, last = sizes[0], sizes[-1]
    header = (
        f"{'operation':<20}"
        + "".join(f"{f'{s:,} turns':>14}" for s in sizes)
        + f"{f'{last:,}/{first:,}':>12}  target"
    )
    print(header)
    print("-" * len(header))
    for op, by_size in table.items():
        ratio = by_size[last] / by_size[first]
        if op in INFORMATION:
            target = INFORMATION[op]
        else:
            restore_total = by_size[last] + table["durable commit"][last]
            ok = ratio <= TARGET_RATIO and (op != "restore" or restore_total <= TARGET_RESTORE_MS)
            target = (
                ("ok" if ok else "MISSED")
                + f" (ratio ≤ {TARGET_RATIO}"
                + (
                    f"; with its commit {restore_total:.2f} ms ≤ {TARGET_RESTORE_MS:g} ms)"
                    if op == "restore"
                    else ")"
                )
            )
        cells = "".join(f"{by_size[s]:>11.2f} ms" for s in sizes)
        print(f"{op:<20}{cells}{ratio:>12.2f}  {target}")


if __name__ == "__main__":
    main()
