"""Sampler settings on the settings page: saved, used by the next turn, and named when the
active model does not take them (the providers' side: tests/llm/test_llm_samplers.py)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider


def test_the_settings_page_saves_them_and_names_what_the_model_ignores(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    page = client.get("/settings").text
    assert 'name="min_p"' in page and 'name="seed"' in page and 'id="samplers-ignored"' not in page
    # DRY is not offered for a model that does not take it; a value set anyway is named.
    assert (
        'name="dry_multiplier"' not in page
        and "Not offered by scripted replies (tests): DRY, XTC" in page
    )
    form = {
        "provider": "auto",
        "mode": "chat",
        "max_tokens": "220",
        "temperature": "0.8",
        "top_p": "0.95",
        "context_budget": "3072",
        "state_updates": "auto",
        "min_p": "0.05",
        "top_k": "40",
        "repetition_penalty": "",
        "presence_penalty": "",
        "stop": "",
        "seed": "7",
        "dry_multiplier": "0.8",
    }
    saved = client.post("/settings", data=form)
    assert saved.status_code == 200, saved.text[:500]
    generation = client.get("/api/settings").json()["generation"]
    assert (
        generation["min_p"],
        generation["top_k"],
        generation["seed"],
        generation["repetition_penalty"],
    ) == (0.05, 40, 7, None)
    page = client.get("/settings").text
    assert 'id="samplers-ignored"' in page and "does not take DRY strength;" in page
    assert 'name="dry_multiplier"' in page  # shown while it holds a value
    # …and a turn asks the model with them.
    scripted.queue("Fog.")
    aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
    client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
    request = scripted.requests[-1]
    assert (request.min_p, request.top_k, request.seed) == (0.05, 40, 7)
    assert json.loads(request.model_dump_json())["repetition_penalty"] is None


def test_presets_and_an_adventures_own_samplers_reach_its_turns(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    aid = adventure_id
    assert client.put(
        "/api/sampler-presets/Tight", json={"min_p": 0.1, "top_k": 20, "stop": "###"}
    ).json() == {"min_p": 0.1, "top_k": 20, "stop": "###"}
    assert client.put("/api/sampler-presets/Wild", json={"min_p": 0.01}).status_code == 200
    assert set(client.get("/api/sampler-presets").json()) == {"Tight", "Wild"}
    assert client.put("/api/sampler-presets/Bad", json={"top_k": 0}).status_code == 422
    assert client.put("/api/sampler-presets/Bad", json={"temperature": 1}).status_code == 422
    # The adventure follows "Tight" and sets a seed of its own; its own values win.
    chosen = client.put(
        f"/api/adventures/{aid}/samplers",
        json={"preset": "Tight", "values": {"seed": 3, "top_k": 30}},
    )
    assert chosen.status_code == 200, chosen.text
    effective = client.get(f"/api/adventures/{aid}/samplers").json()["effective"]
    assert effective == {"min_p": 0.1, "top_k": 30, "seed": 3, "stop": ["###"]}
    scripted.queue("Fog.")
    client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
    request = scripted.requests[-1]
    assert (request.min_p, request.top_k, request.seed, request.stop[-1:]) == (0.1, 30, 3, ["###"])
    # Another adventure keeps the installation's samplers.
    other = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
    assert client.get(f"/api/adventures/{other}/samplers").json()["effective"] == {}
    assert client.put(f"/api/adventures/{aid}/samplers", json={"preset": "Nope"}).status_code == 422
    assert client.delete("/api/sampler-presets/Wild").status_code == 204
    assert client.delete("/api/sampler-presets/Wild").status_code == 404


def test_the_samplers_page_saves_an_adventures_choice_and_a_preset(
    client: TestClient, adventure_id: int
) -> None:
    url = f"/adventures/{adventure_id}/samplers"
    page = client.get(url).text
    assert 'name="preset"' in page and 'name="min_p"' in page and "the server's defaults" in page
    saved = client.post(
        url,
        data={"preset": "", "min_p": "0.07", "seed": "11", "save_as": "Careful"},
        follow_redirects=False,
    )
    assert saved.status_code == 303 and "message" not in saved.headers["location"]
    page = client.get(saved.headers["location"]).text
    assert (
        "kept as the preset “Careful”" in page
        and 'value="0.07"' in page
        and "Min P 0.07; Seed 11" in page
    )
    assert client.get("/api/sampler-presets").json() == {"Careful": {"min_p": 0.07, "seed": 11}}
    refused = client.post(url, data={"top_k": "0"})
    assert refused.status_code == 422 and 'role="alert"' in refused.text
    assert client.get(f"/api/adventures/{adventure_id}/samplers").json()["values"] == {
        "min_p": 0.07,
        "seed": 11,
    }


def test_deleting_an_adventure_forgets_its_samplers(
    client: TestClient, tk, adventure_id: int
) -> None:
    from talekeeper.store.models import Setting

    client.put(f"/api/adventures/{adventure_id}/samplers", json={"values": {"seed": 1}})
    assert client.delete(f"/api/adventures/{adventure_id}").status_code == 204
    with tk.db.session() as session:
        assert session.get(Setting, f"adventure_samplers:{adventure_id}") is None
