"""Assembly under a budget: order, reservations, shares, history, author's note, forms."""

from __future__ import annotations

import asyncio

from talekeeper.context.prompt import (
    ORDER,
    ContextInput,
    ContextOptions,
    HistoryTurn,
    RetrievedMemory,
    assemble,
    chat_request,
    completion_request,
)
from talekeeper.context.tokens import TokenCounter


async def words(text: str) -> int:
    return len(text.split())


PLOT = {
    "narrator_instructions": "You narrate.",
    "ai_instructions": "Be eerie.",
    "plot_essentials": "The lantern must be lit.",
    "author_note": "Rain, always rain.",
    "persona": {"name": "Ada", "pronouns": "she/her", "description": "A lamp-mender."},
    "story_cards": [
        {"name": "Maren", "entry": "Maren runs the ferry " + "and more " * 10, "triggers": "maren"},
        {"name": "Boat", "entry": "A boat.", "triggers": "boat"},
    ],
}


def history(n: int, narration_words: int = 10) -> list[HistoryTurn]:
    turns = [HistoryTurn("opening", "", "It begins. " * 2, 1, 0)]
    for depth in range(1, n + 1):
        turns.append(
            HistoryTurn(
                "do", f"act {depth}", " ".join([f"w{depth}"] * narration_words), depth + 1, depth
            )
        )
    return turns


def build(**kwargs) -> ContextInput:
    options = kwargs.pop(
        "options", ContextOptions(budget=400, reserve_for_reply=50, history_step=1)
    )
    base = dict(
        plot=PLOT, history=history(5), action_kind="do", action_text="look around", options=options
    )
    base.update(kwargs)
    return ContextInput(**base)


def run(inputs: ContextInput):
    return asyncio.run(assemble(inputs, words))


def test_sections_follow_the_design_order_with_state_sections() -> None:
    assembly = run(
        build(
            history=history(3) + [HistoryTurn("do", "talk", "Maren nods.", 9, 4)],
            story_summary="So far, so good.",
            memories=[RetrievedMemory(7, "Ada met Tobin.", 0.9, depth=6, first_depth=1)],
            event_vocabulary="EVENTS",
            canon="CANON",
            stat_guide="STATS",
            current_state="STATE",
            refusals="REFUSED",
            emit_reminder="EMIT",
        )
    )
    names = [s.name for s in assembly.sections]
    assert names == [n for n in ORDER if n in names]
    chat = chat_request(assembly)
    assert chat.messages[0].content.startswith("You narrate.")
    assert chat.messages[-1].content.endswith("EMIT")
    last = chat.messages[-1].content
    assert last.index("STATE") < last.index("REFUSED") < last.index("> You look around.")
    assert last.index("> You look around.") < last.index("EVENTS") < last.index("EMIT")
    assert "CANON" in chat.messages[0].content and "EVENTS" not in chat.messages[0].content


def test_always_on_reserved_first_and_history_fills_the_rest() -> None:
    assembly = run(build(history=history(40)))
    usable = 400 - 50
    assert assembly.total_tokens <= usable
    assert assembly.history_dropped > 0 and assembly.history_included >= 1
    history_section = assembly.section("history")
    assert "older turns were cut" in history_section.why
    assert assembly.history[-1].depth == 40  # newest first
    assert any("did not fit" in n for n in assembly.notes)


def test_cards_dropped_first_when_the_budget_is_tight() -> None:
    roomy = run(build(action_text="ask maren about the boat"))
    cards = roomy.section("story_cards")
    assert [i.key for i in cards.items if i.included] == ["Maren", "Boat"]
    tight = run(
        build(
            action_text="ask maren about the boat",
            options=ContextOptions(budget=150, reserve_for_reply=50, history_step=1),
        )
    )
    tight_cards = tight.section("story_cards")
    dropped = [i for i in tight_cards.items if not i.included]
    assert (
        dropped
        and "dropped by the overall budget" in dropped[0].why
        and "20% of the context budget" in dropped[0].why
    )
    assert tight.history_included >= 1  # the newest turn always goes


def test_history_start_moves_in_steps_for_cache_stability() -> None:
    starts, start = [], None
    for n in range(30, 50):
        options = ContextOptions(budget=400, reserve_for_reply=50, history_step=4)
        assembly = asyncio.run(
            assemble(
                build(history=history(n), options=options, previous_history_start=start), words
            )
        )
        start = assembly.history[0].node_id
        starts.append(assembly.history[0].depth)
    moves = [b - a for a, b in zip(starts, starts[1:], strict=False) if b != a]
    assert moves and all(m >= 4 for m in moves)
    assert len(set(starts)) < len(starts)  # the same start is kept across turns


def test_author_note_is_n_lines_before_the_end() -> None:
    for depth in (0, 1, 3, 5):
        options = ContextOptions(budget=2000, author_note_depth=depth, history_step=1)
        assembly = run(build(options=options))
        lines = [line for line in assembly.section("history").text.split("\n") if line.strip()]
        note = "[Author's note: Rain, always rain.]"
        assert lines.index(note) == len(lines) - 1 - depth
        where = f"{depth} lines before the end of history" if depth else "right after the history"
        assert where in assembly.section("author_note").why
        chat = chat_request(assembly)
        flat = [m.content for m in chat.messages]
        assert sum(note in c for c in flat) == 1
        # never inside the model's own words
        assert all(note not in m.content for m in chat.messages if m.role == "assistant")
        completion = completion_request(assembly)
        assert completion.prompt.count(note) == 1


def test_prefix_is_byte_identical_turn_to_turn() -> None:
    prompts = []
    for n in range(3, 9):
        assembly = run(build(history=history(n), action_text=f"step {n}"))
        prompts.append(completion_request(assembly).prompt)
        chat = chat_request(assembly)
        assert chat.messages[0].content.startswith(
            "You narrate.\n\nPlayer character:\nYou are Ada (she/her). A lamp-mender."
        )
    stable = "You narrate.\n\nPlayer character:\nYou are Ada (she/her). A lamp-mender.\n\nBe eerie.\n\nEssentials: The lantern must be lit."
    assert all(p.startswith(stable) for p in prompts)


def test_memories_capped_ordered_by_story_and_covered_ones_left_out() -> None:
    memories = [
        RetrievedMemory(2, "Later memory.", 0.9, depth=12, first_depth=7),
        RetrievedMemory(1, "Early memory.", 0.5, depth=6, first_depth=1),
        RetrievedMemory(3, "Still in history.", 0.4, depth=40, first_depth=35),
    ]
    assembly = run(build(history=history(40), memories=memories, memory_note="lexical (BM25)"))
    section = assembly.section("memories")
    assert section.text.index("Early memory.") < section.text.index("Later memory.")
    covered = next(i for i in section.items if i.ref == 3)
    assert not covered.included and "still in the history" in covered.why
    assert "lexical (BM25)" in section.why


def test_over_budget_always_on_is_reported() -> None:
    plot = {**PLOT, "plot_essentials": "word " * 500}
    assembly = run(build(plot=plot))
    assert any("always-sent sections alone need" in n for n in assembly.notes)


def test_token_counter_caches() -> None:
    counter = TokenCounter(words)

    async def go():
        for _ in range(3):
            await counter("one two three")
        return await counter("one two three")

    assert asyncio.run(go()) == 3 and counter.calls == 1


def test_no_persona_no_section_and_merge_same_roles() -> None:
    plot = {k: v for k, v in PLOT.items() if k != "persona"}
    turns = history(1) + [HistoryTurn("continue", "", "More.", 9, 2)]
    assembly = run(build(plot=plot, history=turns, action_kind="continue", action_text=""))
    assert assembly.section("persona") is None
    chat = chat_request(assembly)
    roles = [m.role for m in chat.messages]
    assert all(a != b or a == "system" for a, b in zip(roles, roles[1:], strict=False))
    assert chat.messages[-1].content.endswith("(The story continues.)")
