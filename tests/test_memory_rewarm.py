"""A new story summary moves the prompt near its start; with the embedded model the next
prompt is read into the cache right after the memory bank's run, not in the player's turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

from talekeeper.context.settings import update_context_settings
from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory.worker import worker_for
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.service.settings import SettingsUpdate, update_settings
from talekeeper.service.turns import collect_turn


def reply(request: GenerationRequest) -> str:
    return "Rain drums on the planks while the tide turns against the pilings."


class Embedded(ScriptedProvider):
    """Scripted answers, but the app treats it as its embedded model (the one it warms)."""

    runs_here = True


def warmups(provider: ScriptedProvider) -> int:
    return sum(1 for r in provider.requests if r.max_tokens == 1)


def play(home: Path, provider: ScriptedProvider, turns: int) -> list[int]:
    """Warm-ups sent after each turn's memory bank run."""
    tk = Talekeeper(home, provider_override=provider)
    with tk.db.session() as session:
        update_settings(session, SettingsUpdate(generation={"state_updates": "off"}))
        update_context_settings(session, {"summary_every": 3, "memory_start": 2, "memory_every": 2})
        adventure_id = adventures.start_adventure(session, "greywater-lantern", {"name": "Wren"}).id

    async def go() -> list[int]:
        seen = []
        for n in range(turns):
            await collect_turn(tk, adventure_id, "do", f"look around, {n}")
            await worker_for(tk).drain()
            seen.append(warmups(provider))
        return seen

    try:
        return asyncio.run(go())
    finally:
        tk.db.dispose()


def test_the_embedded_model_is_warmed_after_a_new_summary_only(tmp_path: Path) -> None:
    seen = play(tmp_path / "a", Embedded(reply), 7)
    # summaries are due at turns 3 and 6: one warm-up after each, none after the others
    assert seen == [0, 0, 1, 1, 1, 2, 2], seen


def test_a_server_of_the_players_own_is_left_alone(tmp_path: Path) -> None:
    assert play(tmp_path / "b", ScriptedProvider(reply), 4) == [0, 0, 0, 0]
