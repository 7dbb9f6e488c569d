"""A prompt the model's cache can keep: volatile sections after the history, cards with
hysteresis, history dropped in chunks, and a state pass that extends the narrator's prompt."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient

from talekeeper.context.prompt import (
    ORDER,
    ContextInput,
    ContextOptions,
    HistoryTurn,
    assemble,
    completion_request,
    flat_prompt,
    shared_prefix_share,
)
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.llm.fakeserver import FakeOpenAIServer


async def words(text: str) -> int:
    return len(text.split())


PLOT = {
    "narrator_instructions": "You narrate.",
    "story_cards": [
        {
            "name": "Lighthouse",
            "entry": "The lighthouse has been dark for years.",
            "triggers": "lighthouse",
        }
    ],
}


def turns(n: int, mention_at: int | None = None) -> list[HistoryTurn]:
    found = [HistoryTurn("opening", "", "It begins.", 1, 0)]
    for depth in range(1, n + 1):
        text = f"The tide turns {depth} times" + (
            " under the lighthouse." if depth == mention_at else "."
        )
        found.append(
            HistoryTurn(
                "do", f"walk {depth}", text + " More words follow here" * 3, depth + 1, depth
            )
        )
    return found


def assemble_at(history, options=None, **kwargs):
    inputs = ContextInput(
        plot=PLOT,
        history=history,
        action_kind="do",
        action_text="wait",
        options=options
        or ContextOptions(budget=4000, reserve_for_reply=0, window_turns=2, card_linger_turns=3),
        **kwargs,
    )
    return asyncio.run(assemble(inputs, words))


def test_volatile_sections_come_after_the_history() -> None:
    order = list(ORDER)
    history = order.index("history")
    for name in (
        "memories",
        "story_cards_after",
        "current_state",
        "refusals",
        "action",
        "event_vocabulary",
        "emit_reminder",
    ):
        assert order.index(name) > history, name
    for name in (
        "narrator",
        "persona",
        "canon",
        "stat_guide",
        "ai_instructions",
        "plot_essentials",
        "story_summary",
    ):
        assert order.index(name) < history, name


def test_a_card_enters_on_its_trigger_and_lingers_before_it_leaves() -> None:
    # Mentioned at turn 10: it fires on turn 11 (the window reads 2 turns) and, having no
    # timers of its own, lingers 3 turns from there (the window alone would drop it at 13).
    present = {}
    fired: dict[int, int] = {}
    for n in range(10, 19):
        assembly = assemble_at(turns(n, mention_at=10), turn=n + 1, card_last_fired=fired)
        fired.update({index: n + 1 for index in assembly.cards_fired})
        cards = assembly.section("story_cards_after")
        present[n + 1] = bool(cards and cards.text)
    assert [present[t] for t in range(11, 20)] == [True] * 4 + [False] * 5
    # A card that carries its own timers keeps them.
    plot = {**PLOT, "story_cards": [{**PLOT["story_cards"][0], "sticky": 1}]}
    inputs = ContextInput(
        plot=plot, history=turns(13, mention_at=10), action_kind="do", action_text="wait", turn=14,
        card_last_fired={0: 12}, options=ContextOptions(budget=4000, window_turns=2, card_linger_turns=3),
    )  # fmt: skip
    assert asyncio.run(assemble(inputs, words)).section("story_cards_after") is None


def test_history_is_dropped_in_chunks_and_only_grows_between_drops() -> None:
    options = ContextOptions(budget=600, reserve_for_reply=0, history_step=4, history_chunk=0.3)
    start, starts, shares, previous = None, [], [], ""
    for n in range(20, 80):
        assembly = assemble_at(turns(n), options, previous_history_start=start)
        start = assembly.history[0].node_id
        starts.append(assembly.history[0].depth)
        prompt = completion_request(assembly).prompt
        if previous:
            shares.append(shared_prefix_share(previous, prompt))
        previous = prompt
    drops = [b - a for a, b in zip(starts, starts[1:], strict=False) if b != a]
    assert drops and all(d >= 4 for d in drops)  # never a turn at a time
    assert all(b >= a for a, b in zip(starts, starts[1:], strict=False))
    assert len(drops) <= len(starts) / 4  # most turns keep the start, so the cache holds
    assert sum(shares) / len(shares) >= 0.8


def test_the_share_of_an_identical_prefix() -> None:
    assert shared_prefix_share("abcdef", "abcxyz") == 0.5
    assert shared_prefix_share("", "abc") == 0.0
    assert shared_prefix_share("abc", "abc") == 1.0
    assert shared_prefix_share("é1", "é2") == 2 / 3  # bytes, not characters


def test_the_state_pass_extends_the_narrators_request_and_insights_records_the_share(
    isolated_home, monkeypatch
) -> None:
    replies = iter(
        [
            "Maren pockets the coins and pushes off into the grey water.",
            '{"events": [{"type": "change_stat", "stat": "npc.maren.trust", "by": 1}]}',
            "The ferry creaks across the harbour while gulls circle the mast.",
            '{"events": []}',
        ]
    )
    with FakeOpenAIServer(lambda request: next(replies)) as server:
        monkeypatch.setenv("TALEKEEPER_ENDPOINT", server.url)
        tk = Talekeeper(isolated_home)
        with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
            assert (
                client.put(
                    "/api/settings", json={"generation": {"state_updates": "structured"}}
                ).status_code
                == 200
            )
            aid = client.post(
                "/api/adventures",
                json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}},
            ).json()["id"]
            first = client.post(
                f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "pay Maren"}
            )
            assert first.status_code == 200, first.text
            assert [(c["target"], c["status"]) for c in first.json()["changes"]] == [
                ("npc.maren.trust", "applied")
            ]
            second = client.post(
                f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "look back"}
            )
            assert second.status_code == 200, second.text
            page = client.get(f"/adventures/{aid}/insights?turn={second.json()['turn']['id']}")
        narrator, state_pass = (r.body for r in server.generation_requests[:2])
        count = len(narrator["messages"])
        assert (
            state_pass["messages"][:count] == narrator["messages"]
        )  # the same prefix, byte for byte
        assert state_pass["messages"][count] == {
            "role": "assistant",
            "content": "Maren pockets the coins and pushes off into the grey water.",
        }
        question = state_pass["messages"][count + 1]
        assert question["role"] == "user" and "npc.maren.trust" in question["content"]
        assert state_pass["response_format"]["type"] == "json_schema"
        assert page.status_code == 200 and 'id="prefix-share"' in page.text
        stored = tk.db.session
        from talekeeper.store.models import TurnInsight

        with stored() as session:
            share = session.get(TurnInsight, second.json()["turn"]["id"]).data["pfx"]
        next_narrator = server.generation_requests[2].body
        expected = shared_prefix_share(
            "".join(f"<{m['role']}>\n{m['content']}\n" for m in narrator["messages"]),
            "".join(f"<{m['role']}>\n{m['content']}\n" for m in next_narrator["messages"]),
        )
        assert share == round(expected, 4) and share > 0.3


def test_flat_prompt_reads_chat_in_order() -> None:
    from talekeeper.llm.base import GenerationRequest, Message

    request = GenerationRequest(
        messages=[Message(role="system", content="a"), Message(role="user", content="b")]
    )
    assert flat_prompt(request) == "<system>\na\n<user>\nb\n"
