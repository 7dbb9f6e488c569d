"""The memory bank's background work, run after a turn without blocking the player.

`schedule(adventure_id)` starts one run per adventure (a second request while one runs
makes it go round once more). A run writes the memories that are due, embeds what has no
vector (when an embedding model is configured), updates the summary when due, and marks
memories over capacity forgotten. A failure is logged and recorded in `memory_status`
(the memory panel shows it); nothing advances, so the next turn's run retries it.

Tasks are kept in a set until done, so none is garbage-collected mid-run, and `drain()`
waits for them (tests, shutdown).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from talekeeper.context.settings import ContextSettings, context_settings
from talekeeper.memory import bank, due, prompts
from talekeeper.store.models import Adventure

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from talekeeper.llm.base import Provider
    from talekeeper.llm.settings import ModelSettings
    from talekeeper.store.db import Database

log = logging.getLogger(__name__)

MAX_MEMORIES_PER_RUN = 4
MAX_EMBED_BATCH = 32


class Talekeeper(Protocol):
    """What the bank's run uses of the application object (`service/app.Talekeeper`),
    named here: the memory layer sits below the services and never imports them."""

    db: Database
    _memory_worker: MemoryWorker | None

    def model_settings(
        self, adventure_id: int | None = None, session: Session | None = None
    ) -> ModelSettings: ...

    def provider(self, settings: ModelSettings | None = None) -> Provider: ...


class MemoryError_(Exception):
    """A summarisation step that produced nothing usable."""


async def embed(
    tk: Talekeeper, texts: Sequence[str], model: str | None, adventure_id: int | None = None
) -> list[list[float]] | None:
    """Vectors from the embedding model on the adventure's connection, or None (use BM25)."""
    if not model or not texts:
        return None
    settings = await asyncio.to_thread(tk.model_settings, adventure_id)
    return await embed_with(tk.provider(settings), texts, model)


async def embed_with(
    provider: Provider, texts: Sequence[str], model: str | None
) -> list[list[float]] | None:
    """`embed` with a provider already chosen (a turn chooses it once, at its start)."""
    if not model or not texts:
        return None
    method = getattr(provider, "embed", None)
    if method is None:
        return None
    vectors = await method(list(texts), model=model)
    if vectors is None or len(vectors) != len(texts):
        return None
    return vectors


async def run_post_turn(tk: Talekeeper, adventure_id: int) -> dict[str, Any]:
    """One pass of the bank's work for an adventure; returns what it did.

    Its reads and writes run in worker threads, so the event loop keeps serving players
    while the bank waits on the database."""

    def read():
        with tk.db.session() as session:
            settings = context_settings(session)
            adventure = session.get(Adventure, adventure_id)
            if (
                adventure is None
                or not settings.memory_enabled
                or not bank.bank_on(adventure.plot)
                or adventure.head_node_id is None
            ):
                return None
            plot = dict(adventure.plot or {})
            path = bank.path_ids(session, adventure.head_node_id)
            blocks = due.due_blocks(session, adventure_id, path, settings, MAX_MEMORIES_PER_RUN)
            excerpts = [bank.excerpt(session, path, b.first_depth, b.depth) for b in blocks]
            # whether the summary is due is read here too: most runs have nothing more to read
            current = bank.summary_at(
                session, adventure_id, path, str(plot.get("story_summary") or "")
            )
            return settings, plot, path, blocks, excerpts, current

    found = await asyncio.to_thread(read)
    if found is None:
        return {"skipped": True}
    settings, plot, path, blocks, excerpts, current = found
    done: dict[str, Any] = {"memories": [], "summary": None, "embedded": 0, "forgotten": []}
    # the adventure's own connection: a story kept on a local model is not summarised elsewhere
    provider = tk.provider(await asyncio.to_thread(tk.model_settings, adventure_id))

    # Memories of due blocks: independent, so generated concurrently.
    async def summarise(text_: str) -> str:
        request = prompts.memory_request(plot, text_, settings.memory_max_words)
        reply = await provider.complete(request)
        cleaned = prompts.clean(
            prompts.unechoed(reply, request, [text_]), settings.memory_max_words
        )
        if not cleaned:
            raise MemoryError_(
                "the model returned an empty memory (or only repeated its instructions)"
            )
        return cleaned

    results = await asyncio.gather(*(summarise(e) for e in excerpts), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if len(errors) < len(blocks):
        with tk.db.session() as session:
            for block, result in zip(blocks, results, strict=True):
                if isinstance(result, BaseException):
                    continue
                row = bank.add_memory(session, adventure_id, block, result)
                if row is not None:
                    done["memories"].append(row.id)

    await _embed_pending(tk, adventure_id, settings, done)

    # The running summary (its material read after this run's memories are written).
    def summary_material(target: int) -> list[str]:
        with tk.db.session() as session:
            return bank.summary_material(session, adventure_id, path, current.depth, target)

    target = bank.summary_due(path, current, settings)
    if target is not None:
        material = await asyncio.to_thread(summary_material, target)
        try:
            request = prompts.summary_request(plot, current.text, material)
            reply = await provider.complete(request)
            story = ["\n".join(material), current.text]
            text_ = prompts.clean(
                prompts.unechoed(reply, request, story), prompts.SUMMARY_MAX_WORDS
            )
            if not text_:
                raise MemoryError_("the model returned an empty summary")
            with tk.db.session() as session:
                if bank.add_summary(session, adventure_id, path, target, text_, current):
                    done["summary"] = target
        except Exception as exc:  # noqa: BLE001 - recorded and retried next turn
            errors.append(exc)

    message = "; ".join(f"{type(e).__name__}: {e}" for e in errors) if errors else None

    def finish() -> None:
        with tk.db.session() as session:
            done["forgotten"] = bank.evict_over_capacity(
                session, adventure_id, settings.memory_capacity
            )
            bank.touch_status(session, adventure_id, message)

    await asyncio.to_thread(finish)
    if errors:
        log.warning(
            "memory bank for adventure %s: %s (will retry next turn)", adventure_id, message
        )
    done["errors"] = [str(e) for e in errors]
    return done


async def _embed_pending(
    tk: Talekeeper, adventure_id: int, settings: ContextSettings, done: dict[str, Any]
) -> None:
    model = settings.embedding_model
    if not model:
        return
    with tk.db.session() as session:
        pending = bank.needing_vectors(session, adventure_id, model, MAX_EMBED_BATCH)
    if not pending:
        return
    vectors = await embed(tk, [t for _, t in pending], model, adventure_id)
    if vectors is None:
        return
    with tk.db.session() as session:
        for (memory_id, _), vector in zip(pending, vectors, strict=True):
            bank.set_vector(session, memory_id, vector, model)
    done["embedded"] = len(pending)


After = Callable[[dict[str, Any]], Awaitable[None]]


class MemoryWorker:
    """One per application object: the adventures' background runs."""

    def __init__(self, tk: Talekeeper) -> None:
        self.tk = tk
        self._tasks: set[asyncio.Task[None]] = set()
        self._running: dict[int, asyncio.Task[None]] = {}
        self._again: set[int] = set()
        self._after: dict[int, After] = {}
        self.last: dict[int, dict[str, Any]] = {}

    def schedule(self, adventure_id: int, after: After | None = None) -> None:
        """Run the bank for an adventure after its turn; `after` is called with what the run
        did, once it is done (the turn's own follow-up: see service/turns)."""
        if after is not None:
            self._after[adventure_id] = after
        if adventure_id in self._running and not self._running[adventure_id].done():
            self._again.add(adventure_id)
            return
        task = asyncio.get_running_loop().create_task(self._run(adventure_id))
        self._running[adventure_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, adventure_id: int) -> None:
        try:
            while True:
                self._again.discard(adventure_id)
                try:
                    self.last[adventure_id] = await run_post_turn(self.tk, adventure_id)
                except Exception as exc:  # noqa: BLE001 - never lost silently: logged and recorded
                    log.exception("memory bank run failed for adventure %s", adventure_id)
                    try:
                        with self.tk.db.session() as session:
                            bank.touch_status(session, adventure_id, f"{type(exc).__name__}: {exc}")
                    except Exception:  # noqa: BLE001 - e.g. the adventure was deleted
                        pass
                if adventure_id not in self._again:
                    break
            after = self._after.pop(adventure_id, None)
            if after is not None and adventure_id in self.last:
                try:
                    await after(self.last[adventure_id])
                except Exception:  # noqa: BLE001 - a follow-up is a courtesy, never the turn's error
                    log.info("after the memory bank run of %s", adventure_id, exc_info=True)
        finally:
            self._running.pop(adventure_id, None)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def worker_for(tk: Talekeeper) -> MemoryWorker:
    if tk._memory_worker is None:
        tk._memory_worker = MemoryWorker(tk)
    return tk._memory_worker
