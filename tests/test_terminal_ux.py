"""`talekeeper play` as a newcomer meets it: commands it does not know, /help, the change
chips after a turn, the origin question, and Ctrl+C that must not break the next turn."""

from __future__ import annotations

import asyncio
import json
import re
import threading

import pytest
from rich.console import Console

from talekeeper.llm import embedded
from talekeeper.llm.base import GenerationRequest, Message
from talekeeper.llm.errors import EmbeddedModelError, ServerUnavailable
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, state_engine, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.story import tree
from talekeeper.terminal import loop as terminal


def run_play(tk: Talekeeper, lines: list[str], monkeypatch: pytest.MonkeyPatch, **where) -> str:
    console = Console(record=True, width=160, color_system=None)
    typed = iter([*lines, "/quit"])
    monkeypatch.setattr(console, "input", lambda prompt="", **_: next(typed))
    monkeypatch.setattr(terminal, "console", console)
    monkeypatch.setattr(terminal, "warm_up", lambda tk: None)
    terminal.play(tk, **where)
    return console.export_text()


def start(tk: Talekeeper) -> int:
    with tk.db.session() as session:
        return adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id


def test_an_unknown_command_is_refused_and_nothing_is_sent(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = start(tk)
    out = run_play(tk, ["/bogus", "/Undo now"], monkeypatch, adventure_id=aid)
    assert "There is no command /bogus." in out and "There is no command /Undo." in out
    assert scripted.requests == []
    with tk.db.session() as session:
        assert unit_of_work.get_adventure(session, aid).turn_count == 0


def test_help_lists_every_command_the_loop_accepts(
    tk: Talekeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = run_play(tk, ["/help"], monkeypatch, adventure_id=start(tk))
    for command in ("/continue", "/quit", "/help", "/undo", "/retry", "/lines", "/save NAME"):
        assert f" {command} " in out or f"\n{command} " in out, command


def test_a_turn_shows_its_change_chips(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [
        {"type": "change_stat", "stat": "world.storm", "by": 1},
        {"type": "teleport", "to": "moon"},
    ]
    scripted.queue("The wind rises.\n```state\n" + json.dumps({"events": events}) + "\n```")
    out = run_play(tk, ["wait"], monkeypatch, adventure_id=start(tk))
    assert "The wind rises." in out and "```" not in out
    assert "● Storm 4 → 5" in out
    # the model's mistake is counted, not shown as the player's (Insights says which and why)
    assert "1 of the model's changes was not applied" in out and "teleport" not in out


def test_a_reply_cut_off_mid_sentence_says_what_the_story_keeps(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal printed the unfinished end as it streamed; the story does not keep it."""
    scripted.finish_reason = "length"
    scripted.queue("The wind rises. Maren turns to")
    aid = start(tk)
    out = run_play(tk, ["wait"], monkeypatch, adventure_id=aid)
    assert "Maren turns to" in out and "cut off mid-sentence" in out
    with tk.db.session() as session:
        assert (
            tree.head(session, unit_of_work.get_adventure(session, aid)).narration
            == "The wind rises."
        )


def test_a_new_adventure_asks_where_to_begin(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Choose "New: The Lantern of Greywater" (row 1: the README's demo is listed first), then
    # the second origin, then a name.
    run_play(tk, ["1", "2", "Bea"], monkeypatch)
    with tk.db.session() as session:
        (adventure,) = adventures.list_adventures(session)
        view = adventures.story_view(session, adventure, limit=1)
    assert view.turns_shown[0].narration.startswith("Salt spray stings your face")
    assert '"Home, Bea," your cousin says' in view.turns_shown[0].narration


class _AliveServer:
    """An embedded server that is running but does not answer (what Ctrl+C used to leave)."""

    def __init__(self) -> None:
        self.stopped = 0

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        self.stopped += 1


class _Refusing:
    async def stream(self, request):
        raise ServerUnavailable(
            "Could not connect to the model server at http://127.0.0.1:1. Is the model server running? Start it (for example `ollama serve`)"
        )
        yield  # pragma: no cover


def test_an_embedded_model_that_does_not_answer_is_restarted_not_blamed_on_ollama(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = _AliveServer()
    provider = embedded.EmbeddedProvider(server=server)  # type: ignore[arg-type]

    async def fake_start(progress=None):
        return None

    monkeypatch.setattr(provider, "start", fake_start)
    monkeypatch.setattr(provider, "_delegate_for", lambda running: _Refusing())
    monkeypatch.setattr(embedded.EmbeddedProvider, "supports_chat", property(lambda self: True))
    request = GenerationRequest(messages=[Message(role="user", content="hi")])

    async def run() -> None:
        async for _ in provider.stream(request):
            pass

    with pytest.raises(EmbeddedModelError) as caught:
        asyncio.run(run())
    assert "ollama" not in str(caught.value) and "started again on your next turn" in str(
        caught.value
    )
    assert server.stopped == 1


@pytest.mark.embedded
def test_ctrl_c_at_the_terminal_does_not_reach_the_embedded_model() -> None:
    """The terminal's Ctrl+C goes to its whole process group; the model must not be in it."""
    import os

    provider = embedded.EmbeddedProvider()
    running = asyncio.run(provider.start())
    try:
        assert os.getpgid(running.pid) != os.getpgid(0)
    finally:
        provider.server.stop()


def test_state_shows_what_the_story_holds_true(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted.queue(
        "The wind rises.\n```state\n"
        + json.dumps({"events": [{"type": "change_stat", "stat": "world.storm", "by": 2}]})
        + "\n```"
    )
    out = run_play(tk, ["wait", "/state", "/help"], monkeypatch, adventure_id=start(tk))
    assert "Scene:" in out
    assert re.search(r"Storm\s+6 / 10\s+a gale", out), out
    assert "☐ Obtain the brass key" in out and "turn None" not in out
    assert "/state" in out.split("Command")[-1]  # /help lists it


def test_fix_corrects_the_state_by_name_and_undo_takes_it_back(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = start(tk)
    lines = [
        "/fix set storm 7",
        "/fix give brass key to Maren",
        "/fix flag ferry_hired on",
        "/fix set storm 7",
        "/state",
    ]
    out = run_play(tk, lines, monkeypatch, adventure_id=aid)
    assert "● Storm 4 → 7" in out and "● Maren now holds brass key" in out
    assert (
        "Storm 7 → 7" not in out and "Storm already 7" in out
    )  # setting what is true: no correction
    assert "Scene: Greywater docks" in out  # names, never ids
    assert scripted.requests == []  # corrections never call the model
    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, aid)
        head = tree.head(session, adventure)
        document = state_engine.document_of(head.state, state_engine.rules_of(adventure))
        assert document.stats.world["storm"].value == 7
        assert document.possessions["brass_key"] == "maren"
        assert document.flags["ferry_hired"] is True
        assert head.action_kind == "correction"
    run_play(tk, ["/undo"], monkeypatch, adventure_id=aid)
    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, aid)
        head = tree.head(session, adventure)
        document = state_engine.document_of(head.state, state_engine.rules_of(adventure))
        assert document.flags.get("ferry_hired") is not True  # the last correction undone
        assert document.possessions["brass_key"] == "maren"  # the one before it kept


@pytest.mark.parametrize(
    "line, says",
    [
        ("/fix", "What should be corrected?"),
        ("/fix set moonlight 3", "There is no stat 'moonlight'"),
        ("/fix give brass key to Nobody", "There is no holder 'Nobody'"),
        ("/fix move Maren to the moon", "There is no place 'the moon'"),
        ("/fix set storm lots", "'lots' is not a number"),
        ("/fix {not json", "That is not valid JSON"),
        ("/fix " + "[" * 1_000, "nested too deeply"),
        ("/fix " + "[" * 100_000, "too long for a correction"),
        ('/fix {"events": 5}', "Write a list of events"),
        ("/fix dance wildly", "I could not read that correction"),
        ('/fix {"type": "teleport", "to": "moon"}', "Nothing was changed"),
    ],
)
def test_fix_refuses_what_it_cannot_read_and_writes_nothing(
    tk: Talekeeper, monkeypatch: pytest.MonkeyPatch, line: str, says: str
) -> None:
    aid = start(tk)
    out = run_play(tk, [line], monkeypatch, adventure_id=aid)
    assert says in out
    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, aid)
        assert adventure.turn_count == 0
        assert tree.head(session, adventure).action_kind != "correction"


class HeldStatePass(ScriptedProvider):
    """Narrates at once; its structured state pass waits until `release` is set (from any
    thread: the terminal's loop runs on a thread of its own)."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies, chunk_size=6)
        self.release = threading.Event()

    async def complete(self, request: GenerationRequest) -> str:
        if request.json_schema is not None:
            for _ in range(1000):  # ten seconds at most: a broken terminal fails, not hangs
                if self.release.is_set():
                    break
                await asyncio.sleep(0.01)
        return await super().complete(request)


def test_the_prompt_comes_back_before_the_state_pass_and_an_early_action_waits_for_it(
    isolated_home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Structured mode in the terminal: the prompt is back as soon as the narration is
    written; the chips are printed when the state pass ends; an action typed before that
    says it waits, and is played on the settled state."""
    from talekeeper.service import settings as settings_service

    storm = json.dumps({"events": [{"type": "change_stat", "stat": "world.storm", "by": 1}]})
    provider = HeldStatePass(["The wind rises.", storm, "Rain on the glass.", '{"events": []}'])
    tk = Talekeeper(isolated_home, provider_override=provider)
    with tk.db.session() as session:
        settings_service.update_settings(
            session, settings_service.SettingsUpdate(generation={"state_updates": "structured"})
        )
    aid = start(tk)
    seen: list[str] = []

    def second_line() -> str:
        # the prompt is back: the first turn is written, its state pass still held
        with tk.db.session() as session:
            assert unit_of_work.get_adventure(session, aid).pending_turn_id is not None
        seen.append("prompt back while pending")
        threading.Timer(0.3, provider.release.set).start()
        return "run inside"

    lines = iter(["watch the sea", second_line, "/quit"])
    console = Console(record=True, width=160, color_system=None)

    def typed(prompt: str = "", **_: object) -> str:
        line = next(lines)
        return line() if callable(line) else line

    monkeypatch.setattr(console, "input", typed)
    monkeypatch.setattr(terminal, "console", console)
    monkeypatch.setattr(terminal, "warm_up", lambda tk: None)
    terminal.play(tk, adventure_id=aid)
    out = console.export_text()
    assert seen == ["prompt back while pending"]
    waiting, chips, second = (
        out.index("Updating the story's state…"),
        out.index("● Storm 4 → 5"),
        out.index("Rain on the glass."),
    )
    assert out.index("The wind rises.") < waiting < chips < second, out
    with tk.db.session() as session:
        head = tree.head(session, unit_of_work.get_adventure(session, aid))
        assert head.narration == "Rain on the glass."
        assert head.state["stats"]["world"]["storm"]["value"] == 5  # built on the settled turn
    tk.db.dispose()
