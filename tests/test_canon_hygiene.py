"""Model noise never becomes canon (issue 23 item 3).

Whole turns — the real turn pipeline, its state engine and the memory bank after each turn
— fed garbage replies: repetition loops, broken JSON, sections of the prompt echoed back,
notes and moments full of fragments and repeats. After them the record every role reads
back stays clean: the recent events are at most five short lines, each once, none built
from JSON or protocol; moments are plain and said once; no chip or note shows a JSON
fragment; no memory stores a line of the prompt or protocol.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.context import echo
from talekeeper.context.settings import update_context_settings
from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory import prompts
from talekeeper.memory.worker import worker_for
from talekeeper.service import adventures, state_engine
from talekeeper.service.app import Talekeeper
from talekeeper.service.settings import SettingsUpdate, update_settings
from talekeeper.service.turns import play_turn
from talekeeper.state.sentences import same_line
from talekeeper.store.models import Adventure, Memory, Node, StorySummary

FRAGMENT = re.compile(r"[{}\[\]`]|\"\s*:")
SENTENCES = [
    "The lighthouse has been dark since last winter.",
    "Maren's trust is a bit of a gale.",
    "Rain drums on the planks",
    "You look at the sea",
]
JUNK = ["}} ] {", '{"type": "note_event", "text": "', "```state", "]]", '"text": "x"}']


def prompt_lines(request: GenerationRequest) -> list[str]:
    text = request.prompt or "\n".join(m.content for m in request.messages)
    return [line for line in text.splitlines() if len(line.strip()) > 12]


@st.composite
def replies(draw: st.DrawFn) -> list[tuple[str, object]]:
    """One recipe a turn: what the garbage model answers to the narrator's prompt."""
    line = st.sampled_from(SENTENCES)
    junk = st.sampled_from(JUNK)
    noisy = st.builds(lambda s, j, k: (s + " ") * k + j, line, junk, st.integers(1, 4))
    recipe = st.one_of(
        st.tuples(st.just("loop"), st.tuples(line, st.integers(2, 12))),
        st.tuples(st.just("echo"), st.integers(1, 6)),
        st.tuples(st.just("notes"), st.lists(noisy, min_size=1, max_size=4)),
        st.tuples(st.just("broken"), st.tuples(noisy, st.integers(5, 80))),
        st.tuples(st.just("text"), st.text(max_size=80)),
    )
    return draw(st.lists(recipe, min_size=4, max_size=7))


def garbage_model(recipes: list[tuple[str, object]], mode: str):
    turn = [0]

    def events_of(texts: list[str]) -> list[dict]:
        out = []
        for i, text in enumerate(texts):
            if i % 2:
                out.append({"type": "record_moment", "text": text, "weight": 8})
            else:
                out.append({"type": "note_event", "text": text})
        return out

    def reply(request: GenerationRequest) -> str:
        system = request.messages[0].content if request.messages else request.prompt or ""
        if system.startswith((prompts.MARKER, prompts.SUMMARY_MARKER)):
            lines = prompt_lines(request)  # the summariser echoes its prompt and the notes
            echoed = " ".join(lines[:3])
            return f"Ada waited by the sea. {echoed} Recently: The tower is dark. player.luck 3"
        kind, arg = recipes[turn[0] % len(recipes)]
        if request.json_schema is not None:  # the structured pass: its answer, noisy
            texts = arg if kind == "notes" else [SENTENCES[0] + " " + JUNK[0]]
            return json.dumps({"events": events_of(texts)})
        turn[0] += 1
        if kind == "loop":
            sentence, times = arg
            return " ".join([sentence] * times)
        if kind == "echo":
            lines = prompt_lines(request)
            return "\n".join(lines[-arg:] + lines[:arg])
        if kind == "notes":
            block = json.dumps({"events": events_of(arg)})
            return "Fog rolls in.\n```state\n" + block + "\n```" if mode == "inline" else "Fog."
        if kind == "broken":
            text, cut = arg
            block = json.dumps({"events": events_of([text, text])})[:cut]
            return f"{SENTENCES[0]} {SENTENCES[0]}\n```state\n{block}"
        return str(arg) or "Nothing."

    return reply


async def play(tk: Talekeeper, aid: int, turns: int) -> None:
    for n in range(turns):
        async for _event in play_turn(tk, aid, "do", f"wait a while ({n})"):
            pass  # to its end: the turn releases its lock as it finishes
        await worker_for(tk).drain()


def record_of(tk: Talekeeper, aid: int) -> tuple[object, list[dict], list[str]]:
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        rules = state_engine.rules_of(adventure)
        head = session.get(Node, adventure.head_node_id)
        document = state_engine.document_of(head.state, rules)
        path_nodes = session.query(Node).filter(Node.adventure_id == aid).all()
        changes = [c for node in path_nodes for c in state_engine.changes_of(node)]
        memories = [m.text for m in session.query(Memory).filter(Memory.adventure_id == aid)]
        memories += [
            s.text for s in session.query(StorySummary).filter(StorySummary.adventure_id == aid)
        ]
    return document, changes, memories


def assert_clean(document, changes: list[dict], memories: list[str]) -> None:
    """`memories`: the memories and summaries the bank wrote."""
    recent = [e.text for e in document.recent_events]
    assert len(recent) <= 5
    for i, line in enumerate(recent):
        assert len(line) <= 121 and not FRAGMENT.search(line), line
        assert not echo.has_protocol(line, document.entities), line
        assert not any(same_line(line, other) for other in recent[:i]), recent
    moments = [m.text for m in document.moments]
    for i, text in enumerate(moments):
        assert not FRAGMENT.search(text) and not echo.has_protocol(text), text
        assert not any(same_line(text, other) for other in moments[:i]), moments
    for change in changes:
        chip = change.get("chip") or {}
        for said in (chip.get("text") or "", chip.get("detail") or ""):
            assert not FRAGMENT.search(said), change
    for memory in memories:
        assert not echo.has_protocol(memory), memory
        assert "Recently:" not in memory and "What the stats mean" not in memory, memory
        assert "[talekeeper:" not in memory, memory


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(recipes=replies(), mode=st.sampled_from(["inline", "structured"]))
def test_garbage_replies_leave_the_canon_log_and_memories_clean(
    tmp_path_factory, recipes: list[tuple[str, object]], mode: str
) -> None:
    home = Path(tmp_path_factory.mktemp("home"))
    tk = Talekeeper(home, provider_override=ScriptedProvider(garbage_model(recipes, mode)))
    try:
        with tk.db.session() as session:
            update_context_settings(
                session, {"memory_start": 2, "memory_every": 2, "summary_every": 4}
            )
            update_settings(session, SettingsUpdate(generation={"state_updates": mode}))
            aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
        asyncio.run(play(tk, aid, len(recipes)))
        assert_clean(*record_of(tk, aid))
    finally:
        asyncio.run(tk.aclose())


def test_twenty_turns_of_a_repetitive_garbage_model_leave_five_short_lines(
    client: TestClient, tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    """Issue 23's "done when": the State panel's "Recently" after 20 turns of a model that
    loops, repeats its notes and leaves JSON behind holds at most 5 distinct short lines."""
    client.put("/api/settings", json={"generation": {"state_updates": "inline"}})
    with tk.db.session() as session:  # (the memory bank would take the scripted replies)
        update_context_settings(session, {"memory_enabled": False})
    aid = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}}
    ).json()["id"]
    note = {
        "events": [
            {"type": "note_event", "text": SENTENCES[0] + " " + SENTENCES[0] + " }} ] {"},
            {"type": "note_event", "text": SENTENCES[1] + " " + SENTENCES[1]},
        ]
    }
    loop = " ".join([SENTENCES[0]] * 8)
    for n in range(20):
        reply = loop if n % 2 else loop + "\n```state\n" + json.dumps(note) + "\n```"
        scripted.queue(reply)
        response = client.post(
            f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "look at the tower"}
        )
        assert response.status_code == 200, response.text
    panel = client.get(f"/adventures/{aid}/state/panel").text
    section = panel.split("<h3>Recently</h3>", 1)[1].split("</ul>", 1)[0]
    lines = [
        re.sub(r"<[^>]+>", "", li).rsplit("(turn", 1)[0].strip() for li in section.split("<li>")[1:]
    ]
    assert 1 <= len(lines) <= 5, lines
    assert len(set(lines)) == len(lines), lines
    assert all(len(line) <= 121 and "}}" not in line for line in lines), lines
    assert not any(same_line(a, b) for i, a in enumerate(lines) for b in lines[:i]), lines
