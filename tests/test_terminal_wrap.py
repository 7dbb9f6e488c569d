"""The terminal wraps streamed text between words, whatever pieces it arrives in, and long
chips, notes and previews break between words too (never "washe / d out")."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.terminal import loop as terminal
from talekeeper.terminal.tree import _preview
from talekeeper.terminal.wrap import StreamWrap

WORD = st.text(alphabet="abcdefghij,.'\"-", min_size=1, max_size=12)
SPACE = st.sampled_from([" ", " ", " ", "  ", "\n"])


@given(
    st.lists(st.tuples(WORD, SPACE), min_size=1, max_size=60),
    st.lists(st.integers(1, 9), min_size=1, max_size=40),
    st.integers(12, 60),
)
def test_words_are_never_split_whatever_the_pieces(words, cuts, width) -> None:
    text = "".join(w + s for w, s in words)
    pieces, i = [], 0
    for n in cuts * (len(text) // max(1, sum(cuts)) + 1):
        if i >= len(text):
            break
        pieces.append(text[i : i + n])
        i += n
    wrap = StreamWrap(width)
    out = "".join(wrap.feed(p) for p in pieces) + wrap.flush()
    assert out.split() == text.split()  # every word whole, in order
    assert all(len(line.rstrip()) <= width for line in out.split("\n"))
    whole = StreamWrap(width)
    assert out == whole.feed(text) + whole.flush()  # the pieces change nothing
    # a line breaks only where the next word would not fit
    lines = out.split("\n")
    for line, after in zip(lines, lines[1:], strict=False):
        nxt = after.split(" ")[0]
        if line.strip() and nxt and "\n" not in text:
            assert len(line) + len(nxt) > width  # its spaces are printed already


def test_a_streamed_turn_wraps_between_words(
    isolated_home, monkeypatch: pytest.MonkeyPatch
) -> None:
    prose = (
        "The causeway is washed out, and the ferrywoman watches you with narrowed eyes while "
        "the lighthouse stands black against the clouds beyond the drowned road."
    )
    scripted = ScriptedProvider(
        [prose + "\n```state\n" + json.dumps({"events": []}) + "\n```"], chunk_size=3
    )
    tk = Talekeeper(isolated_home, provider_override=scripted)
    with tk.db.session() as session:
        aid = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    console = Console(record=True, width=40, color_system=None)
    typed = iter(["wait", "/quit"])
    monkeypatch.setattr(console, "input", lambda prompt="", **_: next(typed))
    monkeypatch.setattr(terminal, "console", console)
    monkeypatch.setattr(terminal, "warm_up", lambda tk: None)
    terminal.play(tk, adventure_id=aid)
    out = console.export_text()
    start = out.index("The causeway")
    told = out[start : out.index("\n\n", start)]
    assert told.split() == prose.split(), told
    assert all(len(line) <= 40 for line in told.split("\n"))


def test_long_notes_and_previews_break_between_words(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(record=True, width=40, color_system=None)
    monkeypatch.setattr(terminal, "console", console)
    note = "Tobin was seen rowing toward the lighthouse at dusk, muttering about the storm."
    terminal.show_changes(
        [
            {
                "status": "applied",
                "type": "note_event",
                "by": "story",
                "chip": {"kind": "note", "text": note, "detail": ""},
            }
        ]
    )
    lines = [line.rstrip() for line in console.export_text().splitlines() if line.strip()]
    assert lines[0].startswith("  · Tobin") and all(line.startswith("    ") for line in lines[1:])
    assert " ".join(" ".join(lines).replace("·", "").split()) == note
    preview = _preview("The ferrywoman unties the rope and pushes off into the black water", 30)
    assert preview == "The ferrywoman unties the…" and len(preview) <= 30
