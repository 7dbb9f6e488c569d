"""The narration reader on a labelled corpus: the contradiction guard and the change reader.

    .venv/bin/python benchmarks/contradictions.py [--set dev|held|model|action|all] [--batch N] [--misses]

Each case of `narration_corpus.json` — narrations over both built-in scenarios in several
states: `dev` (written while the reader was tuned), `held` (written after, to test it) and
`model` (what SmolLM2 wrote in a run of `narration.py`, labelled by hand), `action` (a
player's Do action with the narration that answered it: the player's own changes read
from the action, `state/acted.py`); `--batch 2` keeps
only the held-out cases written by a second hand — is read
against its state as a turn reads it
(`state.telling.read_telling`): the clashes the guard reports and the changes the change
reader proposes are compared with the labels. Printed per kind: true and false
positives, misses, precision and recall — for the guard (presence, place, item, status)
and for the change reader (at, present, gone, holds, dropped, status) — and the time one
reading costs (median and 95th percentile per case, reader + change reader + guard).
`tests/state/test_narration_corpus.py` runs the same evaluation and fails below the
precision targets (0.95 for both); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.service.origins import with_origin  # noqa: E402
from talekeeper.service.scenarios import fill_placeholders, placeholder_answers  # noqa: E402
from talekeeper.service.shipped_scenarios import builtin_scenarios  # noqa: E402
from talekeeper.state import Document, Rules, initial_document, load_rules  # noqa: E402
from talekeeper.state.document import PLAYER_ID  # noqa: E402
from talekeeper.state.situation import Situation  # noqa: E402
from talekeeper.state.telling import Telling, read_telling  # noqa: E402

CORPUS = Path(__file__).with_name("narration_corpus.json")
GUARD_KINDS = ("presence", "place", "item", "status")
CHANGE_KINDS = ("at", "present", "gone", "holds", "dropped", "status")
TARGET_PRECISION = 0.95


def load_corpus() -> list[dict[str, Any]]:
    return json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]


@cache
def _scenario(prefix: str, origin: str | None) -> tuple[str, Rules]:
    data = next(d for d in builtin_scenarios() if d["id"].startswith(prefix))
    data = with_origin(fill_placeholders(data, placeholder_answers(data, None)), origin)
    rules = load_rules(data["rules"])
    return json.dumps(initial_document(rules).to_json()), rules


def state_for(case: dict[str, Any]) -> tuple[Document, Rules]:
    """The case's state: its scenario's (and origin's) start, patched by `state`."""
    text, rules = _scenario(case["s"], case.get("origin"))
    doc = Document.model_validate(json.loads(text))
    patch = case.get("state", {})
    if "player_at" in patch:
        place = patch["player_at"]
        view = Situation.of(doc, rules)
        doc.entities[PLAYER_ID].location = place
        doc.scene.location = place
        people = {e for e, x in doc.entities.items() if x.location == place and e in view.status}
        keep = {e for e in doc.scene.present if doc.entities[e].location is None}
        doc.scene.present = sorted((people | keep) - {PLAYER_ID})
    for eid, place in patch.get("at", {}).items():
        doc.entities[eid].location = place
    if "present" in patch:
        doc.scene.present = list(patch["present"])
    for eid, label in patch.get("status", {}).items():
        doc.entities[eid].status = label
    for eid, labels in patch.get("conditions", {}).items():
        doc.entities[eid].conditions = list(labels)
    for item, holder in patch.get("holds", {}).items():
        if holder is None:
            doc.possessions.pop(item, None)
        else:
            doc.possessions[item] = holder
    return doc, rules


def effects(telling: Telling, start: Document) -> set[tuple[str, ...]]:
    """What the told changes did, in the corpus's terms."""
    out: set[tuple[str, ...]] = set()
    for change in telling.told:
        claim = change.claim
        for event in change.events:
            kind = event["type"]
            if kind == "set_location" and event["entity"] == PLAYER_ID:
                out.add(("at", PLAYER_ID, event["location"]))
            elif kind == "set_scene" and "present" in event and "location" not in event:
                before = set(start.scene.present)
                now = set(event["present"])
                out |= {("present", x) for x in now - before}
                out |= {("gone", x) for x in before - now}
            elif kind == "set_location" and claim.kind == "moves" and event["location"]:
                if not any(e["type"] == "set_scene" for e in change.events):
                    out.add(("at", event["entity"], event["location"]))
                elif claim.subject == event["entity"] and event["location"] != start.scene.location:
                    out.add(("at", event["entity"], event["location"]))
            elif kind == "set_possession":
                out.add(("holds", event["holder"], event["item"]))
            elif kind == "clear_possession":
                out.add(("dropped", event["item"]))
            elif kind == "set_status":
                out.add(("status", event["entity"], event["status"]))
    return out


@dataclass
class Score:
    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)

    def add(self, predicted: set[tuple[str, ...]], expected: set[tuple[str, ...]]) -> None:
        for x in predicted & expected:
            self.tp[x[0]] += 1
        for x in predicted - expected:
            self.fp[x[0]] += 1
        for x in expected - predicted:
            self.fn[x[0]] += 1

    def precision(self, kind: str | None = None) -> float:
        tp = self.tp[kind] if kind else sum(self.tp.values())
        fp = self.fp[kind] if kind else sum(self.fp.values())
        return tp / (tp + fp) if tp + fp else 1.0

    def recall(self, kind: str | None = None) -> float:
        tp = self.tp[kind] if kind else sum(self.tp.values())
        fn = self.fn[kind] if kind else sum(self.fn.values())
        return tp / (tp + fn) if tp + fn else 1.0


@dataclass
class Result:
    guard: Score = field(default_factory=Score)
    changes: Score = field(default_factory=Score)
    times: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    cases: int = 0
    with_clash: int = 0
    with_change: int = 0


def evaluate(cases: list[dict[str, Any]]) -> Result:
    result = Result()
    for case in cases:
        doc, rules = state_for(case)
        t0 = time.perf_counter()
        telling = read_telling(case["text"], doc, doc, rules, 1, action=case.get("action", ""))
        result.times.append(time.perf_counter() - t0)
        found = {(c.kind, c.about) for c in telling.contradictions}
        wanted = {tuple(x) for x in case.get("clashes", [])}
        told = effects(telling, doc)
        meant = {tuple(x) for x in case.get("changes", [])}
        result.guard.add(found, wanted)
        result.changes.add(told, meant)
        result.cases += 1
        result.with_clash += bool(wanted)
        result.with_change += bool(meant)
        if found != wanted or told != meant:
            result.misses.append(
                f"{case['s']}/{case.get('origin') or '-'} {case['text']!r}\n"
                f"    clashes: got {sorted(found)} want {sorted(wanted)}\n"
                f"    changes: got {sorted(told)} want {sorted(meant)}"
            )
    return result


def _table(name: str, score: Score, kinds: tuple[str, ...]) -> list[str]:
    lines = [
        f"{name:<10} {'kind':<9} {'tp':>4} {'fp':>4} {'miss':>5} {'precision':>10} {'recall':>7}"
    ]
    for kind in (*kinds, None):
        label = kind or "all"
        tp = score.tp[kind] if kind else sum(score.tp.values())
        fp = score.fp[kind] if kind else sum(score.fp.values())
        fn = score.fn[kind] if kind else sum(score.fn.values())
        lines.append(
            f"{'':<10} {label:<9} {tp:>4} {fp:>4} {fn:>5} {score.precision(kind):>10.3f} {score.recall(kind):>7.3f}"
        )
    return lines


def report(result: Result, title: str) -> str:
    times = sorted(result.times)
    p95 = times[int(0.95 * (len(times) - 1))] if times else 0.0
    lines = [
        f"== {title}: {result.cases} narrations ({result.with_clash} with a clash, "
        f"{result.with_change} with a told change)",
        *_table("guard", result.guard, GUARD_KINDS),
        *_table("changes", result.changes, CHANGE_KINDS),
        f"reading cost per narration: median {statistics.median(times) * 1000:.3f} ms, "
        f"p95 {p95 * 1000:.3f} ms"
        if times
        else "no cases",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("dev", "held", "model", "action", "all"), default="all")
    parser.add_argument(
        "--batch", type=int, help="only the cases of this batch (2: the second hand's)"
    )
    parser.add_argument("--misses", action="store_true", help="print every case read wrong")
    args = parser.parse_args()
    cases = load_corpus()
    if args.batch is not None:
        cases = [c for c in cases if c.get("batch", 1) == args.batch]
    evaluate(cases[:5])  # warm the gazetteer caches, as a running server has them
    sets = ["dev", "held", "model", "action"] if args.set == "all" else [args.set]
    for name in sets:
        chosen = [c for c in cases if c.get("set", "dev") == name]
        if not chosen:
            continue
        result = evaluate(chosen)
        print(report(result, f"{name} set"))
        if args.misses:
            print("\n".join(result.misses) or "no misses")
        print()
    if args.set == "all":
        print(report(evaluate(cases), "whole corpus"))


if __name__ == "__main__":
    main()
