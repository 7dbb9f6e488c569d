"""Sampler settings on the settings page: saved, used by the next turn, and named when the
active model does not take them (the providers' side: tests/llm/test_llm_samplers.py)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider


def test_the_settings_page_saves_them_and_names_what_the_model_ignores(client: TestClient, scripted: ScriptedProvider) -> None:
    page = client.get("/settings").text
    assert 'name="min_p"' in page and 'name="seed"' in page and 'id="samplers-ignored"' not in page
    form = {"provider": "auto", "mode": "chat", "max_tokens": "220", "temperature": "0.8", "top_p": "0.95", "context_budget": "3072",
            "state_updates": "auto", "min_p": "0.05", "top_k": "40", "repetition_penalty": "", "presence_penalty": "", "stop": "", "seed": "7"}
    saved = client.post("/settings", data=form)
    assert saved.status_code == 200, saved.text[:500]
    generation = client.get("/api/settings").json()["generation"]
    assert (generation["min_p"], generation["top_k"], generation["seed"], generation["repetition_penalty"]) == (0.05, 40, 7, None)
    page = client.get("/settings").text
    assert 'id="samplers-ignored"' in page and "min_p, top_k, seed" in page
    # …and a turn asks the model with them.
    scripted.queue("Fog.")
    aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
    client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
    request = scripted.requests[-1]
    assert (request.min_p, request.top_k, request.seed) == (0.05, 40, 7)
    assert json.loads(request.model_dump_json())["repetition_penalty"] is None
