"""A reply cut off by its length limit ends at its last whole sentence; one the model
ended itself is kept as it is."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.context.endings import unfinished_end
from talekeeper.llm.scripted import ScriptedProvider
from tests.test_api_turns import streamed_turn

CUT = 'Maren coils the rope. "You want to cross tonight?" she asks. The old keeper is not your'


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (CUT, 'Maren coils the rope. "You want to cross tonight?" she asks.'),
        ("Gulls wheel.\n\nThe lantern", "Gulls wheel."),
        ('"Go home." She turns to', '"Go home."'),
        ("The tide… It pulls at", "The tide…"),
        ("Gulls wheel.", "Gulls wheel."),  # a whole sentence at the end: nothing cut
        ('"Why?" she asks', '"Why?" she asks'),  # a question in speech, then its speaker
        ("Rain and wind and the", "Rain and wind and the"),  # no whole sentence: kept
    ],
)
def test_the_unfinished_end_is_cut_at_the_last_whole_sentence(text: str, kept: str) -> None:
    assert unfinished_end(text)[0] == kept
    assert unfinished_end(text)[1] == text[len(kept) :].strip()


@given(st.text(alphabet=st.sampled_from(list("ab .!?\"'\n…”)")), max_size=60))
def test_what_is_kept_is_the_text_up_to_a_sentence_end_and_cutting_again_cuts_nothing(
    text: str,
) -> None:
    kept, rest = unfinished_end(text)
    if rest:
        assert text.startswith(kept) and kept.rstrip()[-1] in ".!?…\"')]”’"
        assert text[len(kept) :].strip() == rest
    else:
        assert kept == text
    assert unfinished_end(kept) == (kept, "")


class CutOff(ScriptedProvider):
    """Answers every narration with `CUT`, stopped by its length limit."""

    def __init__(self) -> None:
        super().__init__(lambda request: CUT, chunk_size=7, finish_reason="length")


@pytest.fixture
def scripted() -> ScriptedProvider:  # the app's model in this module's turn tests
    return CutOff()


@pytest.mark.parametrize("mode", ["off", "structured", "inline"])
def test_a_reply_cut_off_by_its_length_limit_is_stored_to_its_last_whole_sentence(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider, mode: str
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": mode}})
    shown, turn = streamed_turn(client, adventure_id, "ask Maren to take you across")
    assert turn["narration"] == 'Maren coils the rope. "You want to cross tonight?" she asks.'
    assert shown.startswith(turn["narration"])  # what streamed is not taken back as it streams
    insights = client.get(f"/api/adventures/{adventure_id}/turns/{turn['id']}/insights").json()
    assert any(
        "length limit mid-sentence" in note and "not your" in note for note in insights["notes"]
    )


def test_a_reply_the_model_ended_itself_is_kept_whole(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.finish_reason = "stop"
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    _shown, turn = streamed_turn(client, adventure_id, "ask Maren to take you across")
    assert turn["narration"] == CUT
