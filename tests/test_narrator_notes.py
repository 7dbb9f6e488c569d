"""What the narrator is sent: in `structured` and `off` modes the state as notes in words —
no id, stat path or JSON it could copy into the story; ids only where the model must write
them (the inline block's vocabulary, the structured state pass)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.scripted import ScriptedProvider
from tests.test_world_turns import play

# Every path and snake_case id of the demo's rules, and the `(id, kind)` tags of the old text.
PROTOCOL = re.compile(
    r"\b(?:world|player|npc)\.\w|\{\s*\"|\"type\"|```state|\b\w+_\w+\b|\((?:maren|tobin|docks|cottage|lighthouse)\b"
)


def sent(request: GenerationRequest) -> str:
    return (
        request.prompt
        if request.mode == "completion"
        else "\n".join(m.content for m in request.messages)
    )


@pytest.mark.parametrize("mode", ["structured", "off"])
def test_no_id_or_path_reaches_the_narrator(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider, mode: str
) -> None:
    assert (
        client.put("/api/settings", json={"generation": {"state_updates": mode}}).status_code == 200
    )
    answers = (
        [
            '{"events": [{"type": "change_stat", "stat": "npc.maren.trust", "by": 12}, '
            '{"type": "set_location", "entity": "Gwendolyn", "location": "docks"}]}'
        ]
        if mode == "structured"
        else []
    )
    scripted.queue("Maren eyes your coins, then the sky.", *answers)
    play(client, adventure_id, "offer Maren two coins")
    scripted.queue("The ferry creaks.", '{"events": []}')
    play(client, adventure_id, "step aboard")
    narrator = [r for r in scripted.requests if r.json_schema is None]
    assert len(narrator) == 2
    for request in narrator:
        text = sent(request)
        assert PROTOCOL.findall(text) == [], text
        # the story's facts are all still there, in words
        for said in (
            "Greywater docks",
            "Maren",
            "lamp-mender's tools",
            "Tobin",
            "brass key",
            "storm: a gale",
        ):
            assert said in text, said
    if mode == "structured":
        # last turn's refusal reaches the narrator in words (there is no Gwendolyn)
        assert "Gwendolyn did not move" in sent(narrator[1])
        state_pass = [r for r in scripted.requests if r.json_schema is not None][0]
        assert "npc.maren.trust" in sent(state_pass)  # ids stay where the model must write them


def test_inline_mode_keeps_the_vocabulary_and_ids(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "inline"}})
    scripted.queue("The ferry creaks.")
    play(client, adventure_id, "listen")
    text = sent(scripted.requests[-1])
    assert "npc.maren.trust" in text and "```state" in text
