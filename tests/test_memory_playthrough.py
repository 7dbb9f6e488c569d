"""The issue's 40-turn scripted playthrough: memories every 6 turns from 12, the summary
every 15 (a player's edit as the base), an early fact that scrolled out of the history
retrieved when it matters again, a story card entering on the turn after its trigger, the
author's note at its depth, Insights naming each with its reason, and undo/redo deciding
which memories can be retrieved.

Played through the service layer in one event loop, so the background memory work is
awaited (`drain`) after every turn exactly as the web app would run it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from talekeeper.context.settings import update_context_settings
from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory import bank, prompts
from talekeeper.memory.panel import panel
from talekeeper.memory.worker import worker_for
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.service.insights import of_next, of_turn
from talekeeper.service.settings import SettingsUpdate, update_settings
from talekeeper.service.turns import collect_turn
from talekeeper.store.models import Adventure, Memory, StorySummary
from talekeeper.story import tree

DEMO = "greywater-lantern"
FILLER = [
    "Wind drags at your coat as gulls wheel over the harbour, crying at the swell. Somewhere a shutter bangs, and the smell of tar and wet rope hangs in the air while the tide pulls at the pilings below.",
    "Rain drums on the slate roofs along the street. A dog barks twice and falls silent, and the lamps in the windows burn low and yellow while the clouds pile up black over the sea.",
    "Waves break white against the breakwater and the spray reaches the cobbles. Fishermen's wives watch the horizon from their doorways, arms folded, saying nothing at all to one another.",
]
FACT_EARLY = "Tobin whispers that the lantern's spare wick is hidden beneath the chapel hearthstone, wrapped in oilcloth."
FACT_LATE = "A gull drops a silver ring at your feet, engraved with the name Ysolde."
BELL = "Far out under the water, a drowned bell tolls once."


def narration_for(turn: int) -> str:
    if turn == 3:
        return FACT_EARLY + " " + FILLER[0]
    if turn == 27:
        return FACT_LATE + " " + FILLER[1]
    if turn == 20:
        return BELL + " " + FILLER[2]
    return FILLER[turn % 3]


class StoryModel:
    """Narrates by turn number; summarises by echoing the distinct facts it was shown."""

    def __init__(self) -> None:
        self.narrations = 0
        self.summary_requests: list[GenerationRequest] = []
        self.memory_requests: list[GenerationRequest] = []
        self.fail_next_memory = False

    def __call__(self, request: GenerationRequest) -> str:
        system = request.messages[0].content if request.messages else request.prompt
        if system.startswith(prompts.MARKER):
            self.memory_requests.append(request)
            if self.fail_next_memory:
                self.fail_next_memory = False
                return ""  # an empty memory is a failure: recorded, retried next turn
            excerpt = request.messages[-1].content.split("Story excerpt:", 1)[1]
            facts = [
                s
                for s in re.split(r"(?<=\.)\s+", excerpt)
                if any(w in s for w in ("Tobin", "Ysolde", "bell"))
            ]
            turns = re.findall(r"> You (\w+)", excerpt)
            return "Ada " + (
                " ".join(facts)
                if facts
                else f"kept watch through {len(turns)} quiet turns in Greywater."
            )
        if system.startswith(prompts.SUMMARY_MARKER):
            self.summary_requests.append(request)
            return f"Summary {len(self.summary_requests)}: Ada came to Greywater to relight the lighthouse."
        self.narrations += 1
        return narration_for(self.narrations)


def test_forty_turn_playthrough(tmp_path: Path) -> None:
    model = StoryModel()
    tk = Talekeeper(tmp_path / "home", provider_override=ScriptedProvider(model, chunk_size=50))
    try:
        asyncio.run(_play(tk, model))
    finally:
        tk.db.dispose()


def _memories(tk: Talekeeper, adventure_id: int) -> list[Memory]:
    with tk.db.session() as session:
        return list(
            session.query(Memory).filter_by(adventure_id=adventure_id).order_by(Memory.depth)
        )


async def next_insights(tk: Talekeeper, adventure_id: int, kind: str, text: str) -> dict:
    """The dry run's Insights as the JSON API sends them."""
    return (await of_next(tk, adventure_id, kind, text)).model_dump(mode="json")


def turn_insights(tk: Talekeeper, adventure_id: int, node_id: int) -> dict:
    """A turn's Insights as the JSON API sends them."""
    return of_turn(tk, adventure_id, node_id).model_dump(mode="json")


def _section(data: dict, name: str) -> dict | None:
    return next((s for s in data["sections"] if s["name"] == name), None)


async def _play(tk: Talekeeper, model: StoryModel) -> None:
    with tk.db.session() as session:
        update_settings(
            session, SettingsUpdate(generation={"context_budget": 1024, "max_tokens": 128})
        )
        update_context_settings(session, {"trigger_window_turns": 4})
        adventure = adventures.start_adventure(session, DEMO, {"name": "Ada"})
        adventure_id = adventure.id
        # A card of the player's own, triggered by a word the narration says at turn 20.
        from talekeeper.service.plot import StoryCard, add_card

        add_card(
            adventure,
            StoryCard(
                type="location",
                name="The drowned bell",
                entry="The drowned bell of old Greywater rings beneath the waves when a ship is doomed.",
                triggers="drowned bell, bell",
            ),
        )
    # Size the budget to what is always sent (the state engine's sections included) plus
    # room for about ten turns, so the history scrolls and memories must do the recalling.
    dry = await next_insights(tk, adventure_id, "do", "walk on along the harbour wall, step 1")
    always = sum(
        s["tokens"]
        for s in dry["sections"]
        if s["name"] not in ("history", "story_cards", "memories")
    )
    with tk.db.session() as session:
        update_settings(
            session,
            SettingsUpdate(generation={"context_budget": always + 128 + 900, "max_tokens": 128}),
        )
    worker = worker_for(tk)
    memory_counts: dict[int, int] = {}
    insights_by_turn: dict[int, dict] = {}

    for turn in range(1, 41):
        if turn == 36:
            action = ("do", "search the chapel for the hearthstone and the spare wick")
        elif turn == 21:
            action = ("continue", "")
        else:
            action = ("do", f"walk on along the harbour wall, step {turn}")
        done = await collect_turn(tk, adventure_id, *action)
        await worker.drain()
        node_id = done.turn.id
        insights_by_turn[turn] = turn_insights(tk, adventure_id, node_id)
        memory_counts[turn] = len(_memories(tk, adventure_id))
        if turn == 20:
            # The player rewrites the summary; it must be the base of the turn-30 update.
            from talekeeper.service.plot import PlotUpdate, update_plot

            with tk.db.session() as session:
                update_plot(
                    session,
                    session.get(Adventure, adventure_id),
                    PlotUpdate(story_summary="Ada's own notes: trust Maren, not Tobin."),
                )

    # Memories every 6 turns from 12: blocks 1–6 at 12, 7–12 at 18, … 25–30 at 36.
    assert [memory_counts[t] for t in (11, 12, 17, 18, 23, 24, 29, 30, 35, 36, 40)] == [
        0,
        1,
        1,
        2,
        2,
        3,
        3,
        4,
        4,
        5,
        5,
    ]
    memories = _memories(tk, adventure_id)
    assert [(m.first_depth, m.depth) for m in memories] == [
        (1, 6),
        (7, 12),
        (13, 18),
        (19, 24),
        (25, 30),
    ]
    assert all(len(m.text.split()) <= 50 for m in memories)
    assert "hearthstone" in memories[0].text and "Ysolde" in memories[4].text
    # Third person, named protagonist: the prompt says so.
    assert "Refer to the protagonist as Ada" in model.memory_requests[0].messages[0].content

    # The summary updated at 15 and at 30; the player's edit was the base of the second.
    with tk.db.session() as session:
        summaries = list(
            session.query(StorySummary)
            .filter_by(adventure_id=adventure_id)
            .order_by(StorySummary.id)
        )
    assert [(s.depth, s.source) for s in summaries] == [(15, "auto"), (20, "player"), (30, "auto")]
    assert len(model.summary_requests) == 2
    assert (
        "Ada's own notes: trust Maren, not Tobin." in model.summary_requests[1].messages[1].content
    )
    summary_31 = _section(insights_by_turn[31], "story_summary")
    assert summary_31 is not None and "Summary 2" in summary_31["text"]
    assert summary_31["source"] == "auto summary at turn 30"
    assert _section(insights_by_turn[16], "story_summary")["source"] == "auto summary at turn 15"

    # The early fact scrolled out of the history, and came back through the memory bank.
    turn36 = insights_by_turn[36]
    assert turn36["history_dropped"] > 6 and turn36["history_first_depth"] > 6
    history36 = _section(turn36, "history")
    assert "hearthstone" not in history36["text"]
    recalled = _section(turn36, "memories")
    assert recalled is not None and "hearthstone" in recalled["text"]
    item = next(i for i in recalled["items"] if i["ref"] == memories[0].id)
    assert item["included"] and "BM25" in item["why"]
    assert "lexical (BM25)" in recalled["why"]
    sent = "\n".join(m["content"] for m in turn36["prompt"]["messages"])
    assert "chapel hearthstone" in sent

    # The story card entered on the turn after its trigger, and said why.
    def card_keys(turn: int) -> list[str]:
        return [i["key"] for i in insights_by_turn[turn]["triggered_cards"] if i["included"]]

    assert "The drowned bell" not in card_keys(20)
    assert "The drowned bell" in card_keys(21)
    why = next(
        i["why"] for i in insights_by_turn[21]["triggered_cards"] if i["key"] == "The drowned bell"
    )
    assert why.startswith("trigger 'drowned bell' in turn 20 (narration)")
    # ... stays while the trigger is in the window (4 turns) and, having no timers of its
    # own, at least 4 turns from when it fired (hysteresis: no flicker), then leaves.
    assert "The drowned bell" in card_keys(24)
    assert "The drowned bell" in card_keys(25)
    assert "sticky" in next(
        i["why"] for i in insights_by_turn[25]["triggered_cards"] if i["key"] == "The drowned bell"
    )
    assert "The drowned bell" not in card_keys(26)

    # The author's note closes the history (depth 0: it does not move within the prompt
    # from turn to turn, so a prompt cache keeps the story before it), and Insights says so.
    for turn in (5, 30, 40):
        data = insights_by_turn[turn]
        note = _section(data, "author_note")
        assert note is not None and "right after the history" in note["why"]
        lines = [line for line in _section(data, "history")["text"].split("\n") if line.strip()]
        assert (
            lines[-1]
            == note["text"]
            == "[Author's note: Build tension as the storm rises; every scene should mention the weather.]"
        )
    assert all(d["verified"] for d in insights_by_turn.values())

    # Undo past the last memory's node (turn 30): no longer retrievable; redo: back again.
    query = ("do", "ask about Ysolde and the silver ring")
    at_40 = await next_insights(tk, adventure_id, *query)
    assert memories[4].id in _included_memories(at_40)
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        for _ in range(11):
            tree.undo(session, adventure)
        assert tree.head(session, adventure).depth == 29
        path = bank.path_ids(session, adventure.head_node_id)
        assert memories[4].id not in [
            c.id for c in bank.candidates(session, adventure_id, path, False)
        ]
        assert memories[4].id not in [m["id"] for m in panel(session, adventure)["memories"]]
    at_29 = await next_insights(tk, adventure_id, *query)
    assert memories[4].id not in _included_memories(at_29)
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        for _ in range(11):
            tree.redo(session, adventure)
    again = await next_insights(tk, adventure_id, *query)
    assert memories[4].id in _included_memories(again)

    # A failed summarisation is recorded, visible, and retried on the next turn.
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        for _ in range(4):
            tree.undo(session, adventure)  # back to 36: fork a new line from there
    for turn in range(37, 43):
        if turn == 42:
            model.fail_next_memory = True
        await collect_turn(tk, adventure_id, "do", f"take another road, step {turn}")
        await worker.drain()
    with tk.db.session() as session:
        status = panel(session, session.get(Adventure, adventure_id))
    assert (
        status["last_error"] and "empty memory" in status["last_error"] and status["failures"] == 1
    )
    assert len(_memories(tk, adventure_id)) == 5  # block 31–36 not written yet
    await collect_turn(tk, adventure_id, "do", "keep going")
    await worker.drain()
    with tk.db.session() as session:
        status = panel(session, session.get(Adventure, adventure_id))
    assert status["last_error"] is None and status["failures"] == 0
    assert [(m.first_depth, m.depth) for m in _memories(tk, adventure_id)][-1] == (31, 36)


def _included_memories(data: dict) -> list[int]:
    return [i["ref"] for i in data["retrieved_memories"] if i["included"]]
