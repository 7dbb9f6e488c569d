"""The memory bank's pieces: vectors, ranking, pinned and top-K, capacity, schedule,
summary compare-and-set, embeddings through the provider."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from talekeeper.context.settings import ContextSettings, update_context_settings
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory import bank, due, lexical, prompts
from talekeeper.memory.vectors import VectorIndex, pack, unpack
from talekeeper.memory.worker import run_post_turn
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Adventure, Memory, Node
from talekeeper.story import tree


def test_vectors_pack_as_float32() -> None:
    vector = [0.5, -1.25, 3.0]
    blob = pack(vector)
    assert len(blob) == 12 and unpack(blob).tolist() == vector


def test_index_ranks_by_cosine_and_ignores_other_dimensions() -> None:
    index = VectorIndex(
        [1, 2, 3, 4], [pack([1, 0, 0]), pack([0, 1, 0]), pack([0.9, 0.1, 0]), pack([1, 0])]
    )
    assert len(index) == 3  # the 2-dimension vector is set aside
    assert [i for i, _ in index.top_k([1, 0, 0], 2)] == [1, 3]
    assert index.scores([1, 0]) == {}  # a query of another dimension scores nothing
    allowed = np.array([False, True, True])
    assert [i for i, _ in index.top_k([1, 0, 0], 5, allowed)] == [3, 2]


def test_rank_vectors_gives_zero_to_stale_or_missing_vectors() -> None:
    pool = [
        bank.Candidate(1, 6, 1, "a", False, pack([1, 0, 0]), "new"),
        bank.Candidate(2, 12, 7, "b", False, pack([1, 0, 0, 0]), "old"),  # other model, other size
        bank.Candidate(3, 18, 13, "c", False, None, None),
    ]
    ranked = bank.rank_vectors([1, 0, 0], pool, "new")
    assert [(c.id, round(s, 3)) for c, s in ranked] == [(1, 1.0), (3, 0.0), (2, 0.0)]


def test_pinned_count_toward_top_k() -> None:
    pool = [bank.Candidate(i, i * 6, i * 6 - 5, f"m{i}", pinned=i in (1, 2)) for i in range(1, 8)]
    ranked = [(c, 1.0 / c.id) for c in pool]
    chosen = bank.choose(ranked, 3, "BM25")
    assert [m.id for m in chosen] == [1, 2, 3] and [m.why for m in chosen][:2] == [
        "pinned",
        "pinned",
    ]
    assert len(bank.choose(ranked, 1, "BM25")) == 2  # pinned always go, nothing else
    assert [m.id for m in bank.choose([(c, 0.0) for c in pool], 5, "BM25")] == [
        1,
        2,
    ]  # no score, no slot


def test_last_turns_memories_keep_their_place_unless_clearly_beaten() -> None:
    pool = [bank.Candidate(i, i * 6, i * 6 - 5, f"m{i}", pinned=False) for i in range(1, 4)]
    ranked = [(pool[0], 1.0), (pool[1], 0.9), (pool[2], 0.7)]
    assert [m.id for m in bank.choose(ranked, 1, "BM25")] == [1]
    sticky = bank.choose(ranked, 1, "BM25", frozenset({2}))
    assert [m.id for m in sticky] == [2] and sticky[0].why.endswith("also sent last turn")
    assert [m.id for m in bank.choose(ranked, 1, "BM25", frozenset({3}))] == [1]  # 0.7 × 1.25 < 1.0


def test_lexical_finds_names_and_stems() -> None:
    docs = [
        "Ada learned the spare wick is under the chapel hearthstone.",
        "Ada rowed Maren's ferry across the causeway.",
        "Ada watched the storm build over the boats.",
    ]
    scores = lexical.rank("You search the chapel for the hearthstone", docs)
    assert scores.index(max(scores)) == 0
    assert lexical.rank("a boat", docs).index(max(lexical.rank("a boat", docs))) == 2
    assert lexical.rank("zzz", docs) == [0.0, 0.0, 0.0]
    assert lexical.tokens("The boats were locked") == ["boat", "lock"]


def test_clean_limits_words_and_strips_labels() -> None:
    assert prompts.clean('Memory: "Ada met Maren."', 50) == "Ada met Maren."
    long = " ".join(["word"] * 30) + ". " + " ".join(["more"] * 40)
    cleaned = prompts.clean(long, 50)
    assert len(cleaned.split()) <= 50 and cleaned.endswith(".")
    assert prompts.clean(" ".join(["x"] * 80), 50).endswith("…")


def test_memory_prompt_names_the_protagonist_and_cast() -> None:
    plot = {
        "persona": {"name": "Kaelen", "pronouns": "he/him", "description": "A ranger."},
        "plot_essentials": "Bandits hold the camp.",
        "story_cards": [
            {"type": "character", "name": "Gwen", "entry": "Gwen is an ally.", "triggers": "gwen"}
        ],
    }
    request = prompts.memory_request(plot, "You signal Gwen.", 50)
    system, user = request.messages[0].content, request.messages[1].content
    assert system.startswith(prompts.MARKER) and "as Kaelen" in system and "never 'you'" in system
    assert "At most 50 words" in system
    assert (
        "- Kaelen (he/him) — the protagonist. A ranger." in user
        and "- Gwen — Gwen is an ally." in user
    )
    assert "Setting:\nBandits hold the camp." in user
    bare = prompts.memory_request({}, "You wait.", 50)
    assert (
        bare.messages[1].content.startswith("Story excerpt:")
        and "the player" in bare.messages[0].content
    )


@pytest.fixture
def story(tk: Talekeeper):
    """An adventure with 20 plain turns written straight into the tree."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        for depth in range(1, 21):
            node = tree.append_child(
                session, adventure, node, tree.NewTurn("do", f"act {depth}", f"Narration {depth}.")
            )
        return adventure.id


def test_due_blocks_follow_the_schedule(tk: Talekeeper, story: int) -> None:
    settings = ContextSettings()
    with tk.db.session() as session:
        path = bank.path_ids(session, session.get(Adventure, story).head_node_id)
        assert [
            (b.first_depth, b.depth) for b in due.due_blocks(session, story, path[:13], settings)
        ] == [(1, 6)]  # head at 12
        assert due.due_blocks(session, story, path[:12], settings) == []  # head at 11
        assert [
            (b.first_depth, b.depth) for b in due.due_blocks(session, story, path, settings)
        ] == [(1, 6), (7, 12)]
        bank.add_memory(session, story, due.due_blocks(session, story, path, settings)[0], "m")
        assert [
            (b.first_depth, b.depth) for b in due.due_blocks(session, story, path, settings)
        ] == [(7, 12)]
        assert (
            bank.summary_due(path, bank.SummaryInForce("", -1, "plot components"), settings) == 15
        )
        assert (
            bank.summary_due(path[:15], bank.SummaryInForce("", -1, "plot components"), settings)
            is None
        )
        assert (
            bank.summary_due(path, bank.SummaryInForce("x", 15, "auto summary", 1), settings)
            is None
        )


def test_capacity_forgets_least_useful_never_pinned(tk: Talekeeper, story: int) -> None:
    with tk.db.session() as session:
        path = bank.path_ids(session, session.get(Adventure, story).head_node_id)
        rows = [
            bank.add_memory(session, story, bank.Block(d, d, path[d]), f"m{d}") for d in range(1, 7)
        ]
        rows[0].pinned = True
        rows[1].uses = 3
        rows[2].uses = 1
        session.flush()
        forgotten = bank.evict_over_capacity(session, story, 3)
        assert sorted(forgotten) == sorted([rows[3].id, rows[4].id, rows[5].id])
        statuses = {m.id: m.status for m in session.query(Memory).filter_by(adventure_id=story)}
        assert statuses[rows[0].id] == "active" and statuses[rows[1].id] == "active"
        assert bank.evict_over_capacity(session, story, 3) == []


def test_auto_summary_never_overwrites_a_player_edit_made_meanwhile(
    tk: Talekeeper, story: int
) -> None:
    with tk.db.session() as session:
        adventure = session.get(Adventure, story)
        path = bank.path_ids(session, adventure.head_node_id)
        read = bank.summary_at(session, story, path, "")
        at_15 = session.get(Node, path[15])
        bank.set_summary(session, story, at_15, "Mine.")  # the player edits while the model writes
        assert bank.add_summary(session, story, path, 15, "Model's.", read) is False
        now = bank.summary_at(session, story, path, "")
        assert now.text == "Mine." and now.source == "your edit"
        # An edit later on the path stays in force over an update anchored earlier.
        bank.set_summary(session, story, tree.head(session, adventure), "Mine, later.")
        assert bank.add_summary(session, story, path, 15, "Model's.", now) is True
        assert bank.summary_at(session, story, path, "").text == "Mine, later."


def test_embeddings_used_when_configured(tk: Talekeeper, story: int) -> None:
    class Embedding(ScriptedProvider):
        def __init__(self):
            super().__init__(lambda r: "Ada did things.")
            self.embedded: list[list[str]] = []

        async def embed(self, texts, model=None):
            self.embedded.append(list(texts))
            return [[1.0, float("wick" in t), 0.0] for t in texts]

    provider = Embedding()
    tk.provider_override = provider
    with tk.db.session() as session:
        update_context_settings(session, {"embedding_model": "tiny-embed"})
        path = bank.path_ids(session, session.get(Adventure, story).head_node_id)
        bank.add_memory(
            session, story, bank.Block(1, 6, path[6]), "The spare wick is under the hearthstone."
        )
        bank.add_memory(session, story, bank.Block(7, 12, path[12]), "Nothing of note.")
    result = asyncio.run(run_post_turn(tk, story))
    assert result["embedded"] == 2 and len(provider.embedded) == 1
    with tk.db.session() as session:
        stored = session.query(Memory).filter_by(adventure_id=story).order_by(Memory.depth).all()
        assert all(m.embedding_dim == 3 and m.embedding_model == "tiny-embed" for m in stored)
        # A new embedding model: everything is re-embedded.
        update_context_settings(session, {"embedding_model": "bigger-embed"})
    asyncio.run(run_post_turn(tk, story))
    with tk.db.session() as session:
        assert {
            m.embedding_model
            for m in session.query(Memory).filter_by(adventure_id=story, status="active")
        } == {"bigger-embed"}

    from talekeeper.service.turns import build_context

    prepared = asyncio.run(build_context(tk, story, "do", "find the wick"))
    assert prepared.retrieval.method == "embeddings (bigger-embed)"
    first = prepared.assembly.section("memories").items[0]
    assert "hearthstone" in first.text and "cosine" in first.why


def test_post_turn_does_nothing_when_disabled(tk: Talekeeper, story: int) -> None:
    with tk.db.session() as session:
        update_context_settings(session, {"memory_enabled": False})
    assert asyncio.run(run_post_turn(tk, story)) == {"skipped": True}


def test_a_turn_counts_the_memories_it_sent(tk: Talekeeper, scripted: ScriptedProvider) -> None:
    """Capacity keeps the most used memories: each turn's prompt counts its own, once."""
    from talekeeper.service.settings import SettingsUpdate, update_settings
    from talekeeper.service.turns import collect_turn

    weather = (
        "Rain drums on the slate roofs while the lamps burn low and the tide pulls at the pilings. "
        * 3
    )
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        path = [node.id]
        for depth in range(1, 41):
            node = tree.append_child(
                session, adventure, node, tree.NewTurn("do", f"walk on {depth}", weather)
            )
            path.append(node.id)
        story = adventure.id
        sent = bank.add_memory(
            session, story, bank.Block(1, 6, path[6]), "Tobin hid the brass key in the forge."
        ).id
        unsent = bank.add_memory(
            session, story, bank.Block(7, 12, path[12]), "Gulls circled the harbour."
        ).id
        update_context_settings(session, {"memory_top_k": 1})  # one a turn, the one that matches
        update_settings(
            session, SettingsUpdate(generation={"context_budget": 2048, "max_tokens": 128})
        )
    scripted.queue("You lift the latch of the forge.")
    done = asyncio.run(collect_turn(tk, story, "do", "search the forge for the brass key"))
    memories = next(s for s in done.prompt.sections if s.name == "memories")
    assert [item.ref for item in memories.items if item.included] == [sent]
    with tk.db.session() as session:
        rows = {
            m.id: (m.uses, m.last_used_depth)
            for m in session.query(Memory).filter_by(adventure_id=story)
        }
    assert rows[sent] == (1, 41) and rows[unsent] == (0, None)
