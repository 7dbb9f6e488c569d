"""With accounts on, no route leaks another player's data.

The routes are read from the app itself (JSON and HTML alike), so a route added later is
swept too; one taking a path parameter this file does not know fails until it is placed.
Ada owns an adventure (played, with a Save Point, a memory and a story card) and a scenario
of her own; Bob, signed in with a valid CSRF token, tries every route on them and gets 404,
and Ada's data is byte for byte what it was. The services are tried directly as well: the
guard's check by address is the outer wall, the services' is the inner one.
"""

from __future__ import annotations

import asyncio
import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from talekeeper import accounts
from talekeeper.errors import NotFound
from talekeeper.interop import bundles
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, hosted, scenarios, tree_ops, turns
from talekeeper.service.app import Talekeeper
from talekeeper.store import owner
from talekeeper.store.models import Memory
from talekeeper.web.app import create_app
from tests.llm.standin import PUBLIC_ADDRESS, resolver_for

PASSWORD = "correct horse battery"
DEMO = "greywater-lantern"
SECRET = "Ada's secret voyage"
SECRET_WORLD = "Ada's secret world"
SECRET_PROFILE = "Ada's secret connection"
# Path parameters that name something owned, and what of Ada's fills them.
OWNED = {"adventure_id", "scenario_id", "profile_id"}
INSIDE = {"node_id", "turn_id", "leaf_id", "save_point_id", "memory_id", "index", "part"}
# Path parameters that name nothing of a player's: a schema, one's own sampler preset
# (a per-player setting), a user (hosts only: changing one, or making their password-reset
# link; test_a_player_reaches_no_route_about_another_user tries them all), a hosted
# service's host name (the installation's permission, a host's to give). Routes with no
# parameter act on the caller alone (`/account/password` changes one's own password) or on
# a secret the request carries (`/reset`, `/signup`: the link's token).
NOT_OWNED = {"name", "user_id", "host"}


def all_routes(app) -> list[tuple[str, str]]:
    """(method, path) for every route the app answers, page routes included."""

    def walk(routes) -> Iterator[object]:
        for route in routes:
            candidates = getattr(route, "effective_candidates", None)
            if candidates is not None:
                yield from walk(candidates() if callable(candidates) else candidates)
            elif getattr(route, "methods", None):
                yield route

    found = set()
    for route in walk(app.routes):
        path = getattr(route, "path_format", None) or route.path
        for method in route.methods - {"HEAD"}:
            found.add((method, path))
    return sorted(found)


def params(path: str) -> set[str]:
    return set(re.findall(r"{(\w+)}", path))


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


@pytest.fixture
def table(isolated_home: Path) -> Iterator[dict]:
    """Ada's adventure and scenario, Bob's own adventure, and both signed in."""
    provider = ScriptedProvider(
        ["The ferry slides out into the fog.", "Gulls.", "Rain.", "Bells."], chunk_size=50
    )
    tk = Talekeeper(
        isolated_home,
        provider_override=provider,
        accounts=True,
        resolver=resolver_for({"openrouter.ai": PUBLIC_ADDRESS}),
    )
    with tk.db.session() as session:
        ada_id = accounts.create_user(session, "ada", PASSWORD).id
        bob_id = accounts.create_user(session, "bob", PASSWORD).id
        hosted.allow(session, "openrouter.ai")  # the installation's permission (the CLI's)
    app = create_app(tk)
    with (
        TestClient(app, base_url="http://127.0.0.1:8000") as ada,
        TestClient(app, base_url="http://127.0.0.1:8000") as bob,
    ):
        for client, name in ((ada, "ada"), (bob, "bob")):
            assert (
                client.post(
                    "/login", data={"name": name, "password": PASSWORD}, follow_redirects=False
                ).status_code
                == 303
            )
            client.headers["X-CSRF-Token"] = client.get("/api/account").json()["csrf_token"]
        made = ada.post(
            "/api/adventures",
            json={"scenario_id": DEMO, "answers": {"name": "Ada"}, "title": SECRET},
        )
        aid = made.json()["id"]
        played = ada.post(
            f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "board the ferry"}
        )
        assert played.status_code == 200, played.text
        head = played.json()["turn"]["id"]
        sp = ada.post(f"/api/adventures/{aid}/save-points", json={"name": "On the ferry"}).json()[
            "id"
        ]
        with tk.db.session() as session:
            memory = Memory(
                adventure_id=aid,
                node_id=head,
                first_depth=1,
                depth=1,
                text="Ada boarded the ferry.",
            )
            session.add(memory)
            session.flush()
            memory_id = memory.id
        copy = ada.post(f"/api/scenarios/{DEMO}/duplicate")
        assert copy.status_code in (200, 201), copy.text
        sid = copy.json()["id"]
        data = {**ada.get(f"/api/scenarios/{sid}").json()["data"], "title": SECRET_WORLD}
        assert ada.put(f"/api/scenarios/{sid}", json=data).status_code == 200
        assert ada.put("/api/sampler-presets/ada-preset", json={"top_k": 7}).status_code == 200
        profile = ada.post(
            "/api/profiles",
            json={"name": SECRET_PROFILE, "service": "openrouter", "api_key": "sk-or-ada"},
        )
        assert profile.status_code == 201, profile.text
        own = bob.post(
            "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Bob"}}
        ).json()["id"]
        yield {
            "tk": tk,
            "app": app,
            "ada": ada,
            "bob": bob,
            "ada_id": ada_id,
            "bob_id": bob_id,
            "values": {
                "adventure_id": aid,
                "scenario_id": sid,
                "node_id": head,
                "turn_id": head,
                "leaf_id": head,
                "save_point_id": sp,
                "memory_id": memory_id,
                "index": 0,
                "part": "texts",
                "profile_id": profile.json()["id"],
            },
            "bob_adventure": own,
        }
    tk.db.dispose()


def adas_world(table: dict) -> dict:
    """Everything of Ada's, as she reads it: compared before and after Bob's tries."""
    ada, v = table["ada"], table["values"]
    aid, sid = v["adventure_id"], v["scenario_id"]
    return {
        # Every line of the bundle, less the moment it was exported (and the digest over it).
        "bundle": re.sub(
            rb'"(exported_at|sha256)": ?"[^"]*"',
            b"",
            gzip.decompress(ada.get(f"/api/adventures/{aid}/export").content),
        ),
        "story": ada.get(f"/api/adventures/{aid}").json(),
        "save_points": ada.get(f"/api/adventures/{aid}/save-points").json(),
        "memories": ada.get(f"/api/adventures/{aid}/memories").json(),
        "samplers": ada.get(f"/api/adventures/{aid}/samplers").json(),
        "scenario": ada.get(f"/api/scenarios/{sid}").json(),
        "presets": ada.get("/api/sampler-presets").json(),
        "profiles": ada.get("/api/profiles").json(),
        "list": ada.get("/api/adventures").json(),
    }


def _fill(path: str, values: dict) -> str:
    return re.sub(r"{(\w+)}", lambda m: str(values[m.group(1)]), path)


def test_every_route_is_placed(table: dict) -> None:
    """A new path parameter must be decided: owned, inside an owned thing, or nobody's."""
    unknown = {
        (m, p) for m, p in all_routes(table["app"]) if params(p) - OWNED - INSIDE - NOT_OWNED
    }
    assert not unknown, f"place these routes' parameters in this test: {sorted(unknown)}"
    inside_only = {
        (m, p) for m, p in all_routes(table["app"]) if params(p) & INSIDE and not params(p) & OWNED
    }
    assert not inside_only, (
        f"a part of an adventure reached without its adventure: {sorted(inside_only)}"
    )


def test_every_route_on_another_players_adventure_or_scenario_is_404(table: dict) -> None:
    before = adas_world(table)
    swept = []
    for method, path in all_routes(table["app"]):
        if not params(path) & OWNED:
            continue
        url = _fill(path, table["values"])
        response = table["bob"].request(method, url, json={})
        assert response.status_code == 404, (
            f"{method} {url}: {response.status_code} {response.text[:200]}"
        )
        assert SECRET not in response.text and SECRET_WORLD not in response.text
        assert SECRET_PROFILE not in response.text
        swept.append((method, path))
    # Read, play, undo, export and delete are among them, JSON and HTML.
    for needed in [
        ("GET", "/api/adventures/{adventure_id}"),
        ("GET", "/adventures/{adventure_id}"),
        ("POST", "/api/adventures/{adventure_id}/turns"),
        ("POST", "/api/adventures/{adventure_id}/undo"),
        ("POST", "/adventures/{adventure_id}/undo"),
        ("GET", "/api/adventures/{adventure_id}/export"),
        ("GET", "/adventures/{adventure_id}/export"),
        ("DELETE", "/api/adventures/{adventure_id}"),
        ("DELETE", "/adventures/{adventure_id}"),
        ("DELETE", "/api/scenarios/{scenario_id}"),
        ("POST", "/scenarios/{scenario_id}/delete"),
        ("GET", "/api/profiles/{profile_id}"),
        ("PUT", "/api/profiles/{profile_id}"),
        ("DELETE", "/api/profiles/{profile_id}"),
        ("POST", "/settings/profiles/{profile_id}"),
    ]:
        assert needed in swept
    assert len(swept) > 80
    assert adas_world(table) == before


def test_parts_of_another_players_adventure_are_not_reached_through_ones_own(table: dict) -> None:
    """Bob's own adventure in the address, Ada's turn, Save Point, line or memory inside it."""
    before = adas_world(table)
    values = {**table["values"], "adventure_id": table["bob_adventure"]}
    tried = 0
    for method, path in all_routes(table["app"]):
        inside = params(path) & {"node_id", "turn_id", "leaf_id", "save_point_id", "memory_id"}
        if not inside or "adventure_id" not in params(path):
            continue
        url = _fill(path, values)
        if path.startswith("/api/"):
            response = table["bob"].request(method, url, json={})
            assert response.status_code in (404, 422), f"{method} {url}: {response.status_code}"
        else:  # a page answers a refusal in the page (or by going back to Bob's own page)
            response = table["bob"].request(
                method, url, data={"action": "delete"}, follow_redirects=False
            )
        assert SECRET not in response.text and "Ada boarded" not in response.text
        tried += 1
    assert tried > 15
    assert adas_world(table) == before


def test_lists_and_pages_show_only_ones_own(table: dict) -> None:
    bob = table["bob"]
    titles = [a["title"] for a in bob.get("/api/adventures").json()]
    assert titles == ["The Lantern of Greywater"]
    shown = [s["id"] for s in bob.get("/api/scenarios").json()]
    assert table["values"]["scenario_id"] not in shown and DEMO in shown
    for page in ("/", "/scenarios", "/settings"):
        text = bob.get(page).text
        assert SECRET not in text and SECRET_WORLD not in text, page
        assert SECRET_PROFILE not in text, page
    assert bob.get("/api/profiles").json() == []
    assert [p["name"] for p in table["ada"].get("/api/profiles").json()] == [SECRET_PROFILE]
    assert bob.get("/api/sampler-presets").json() == {}
    assert "ada-preset" in table["ada"].get("/api/sampler-presets").json()


def test_built_in_scenarios_are_shared_read_only(table: dict) -> None:
    bob = table["bob"]
    demo = bob.get(f"/api/scenarios/{DEMO}")
    assert demo.status_code == 200
    assert bob.put(f"/api/scenarios/{DEMO}", json=demo.json()["data"]).status_code == 422
    assert bob.delete(f"/api/scenarios/{DEMO}").status_code == 422
    assert table["ada"].get(f"/api/scenarios/{DEMO}").json() == demo.json()


def test_an_imported_bundle_is_its_importers(table: dict) -> None:
    bundle = table["ada"].get(f"/api/adventures/{table['values']['adventure_id']}/export").content
    imported = table["bob"].post("/api/adventures/import", content=bundle)
    assert imported.status_code in (200, 201), imported.text
    assert len(table["bob"].get("/api/adventures").json()) == 2
    assert len(table["ada"].get("/api/adventures").json()) == 1


def test_settings_are_each_players_and_the_model_is_the_hosts(table: dict) -> None:
    ada, bob = table["ada"], table["bob"]
    assert bob.put("/api/settings", json={"generation": {"temperature": 0.3}}).status_code == 200
    assert ada.get("/api/settings").json()["generation"]["temperature"] == 0.8
    assert bob.get("/api/settings").json()["generation"]["temperature"] == 0.3
    refused = bob.put("/api/settings", json={"model": {"endpoint": "http://127.0.0.1:9/v1"}})
    assert refused.status_code == 403
    assert bob.get("/api/settings").json()["model"].get("endpoint") is None
    assert "model-by-host" in bob.get("/settings").text
    assert bob.put("/api/context/settings", json={"memory_capacity": 12}).status_code == 200
    assert ada.get("/api/context/settings").json()["memory_capacity"] == 80
    with table["tk"].db.session() as session:
        accounts.set_role(session, table["ada_id"], "host")
    ada.headers["X-CSRF-Token"] = ada.get("/api/account").json()["csrf_token"]
    allowed = ada.put("/api/settings", json={"model": {"endpoint": "http://127.0.0.1:9/v1"}})
    assert allowed.status_code == 200, allowed.text
    assert bob.get("/api/settings").json()["model"]["endpoint"] == "http://127.0.0.1:9/v1"


def test_the_services_refuse_another_players_adventure_themselves(table: dict) -> None:
    """Not only the guard: read, play, undo, export and delete, called as Bob, find nothing."""
    tk, v = table["tk"], table["values"]
    aid, sid = v["adventure_id"], v["scenario_id"]

    async def play() -> None:
        async for _event in turns.play_turn(tk, aid, "do", "steal the ferry"):
            pass

    with owner.acting_as(table["bob_id"]):
        for attempt in (
            lambda: adventures.story(tk, aid),
            lambda: asyncio.run(play()),
            lambda: tree_ops.undo(tk, aid),
            lambda: tree_ops.restore_save_point(tk, aid, v["save_point_id"]),
            lambda: bundles.export_download(tk, aid)[1].__next__(),
            lambda: adventures.delete(tk, aid),
            lambda: scenarios.read(tk, sid),
            lambda: scenarios.export(tk, sid),
            lambda: scenarios.update(tk, sid, {"title": "mine now"}),
            lambda: scenarios.delete(tk, sid),
        ):
            with pytest.raises(NotFound):
                attempt()
        assert all(a.id != aid for a in adventures.summaries(tk))
    with owner.acting_as(table["ada_id"]):
        assert adventures.story(tk, aid).title == SECRET


def test_an_import_cannot_add_cards_to_another_players_scenario(table: dict) -> None:
    before = adas_world(table)
    sid = table["values"]["scenario_id"]
    cards = {"story_cards": [{"title": "Theft", "keys": ["ferry"], "content": "Bob was here."}]}
    tried = table["bob"].post("/api/interop/save", json={"scenario": cards, "into": sid})
    assert tried.status_code == 404
    assert adas_world(table) == before


def test_a_player_reaches_no_route_about_another_user(table: dict) -> None:
    """Every route naming a user (change them, make their reset link) is a host's: Bob gets
    403 on Ada's and can still not sign in as her with anything he sent."""
    from talekeeper.store.models import PasswordReset, User

    tried = 0
    with table["tk"].db.session() as session:
        before = session.get(User, table["ada_id"]).password_hash
    for method, path in all_routes(table["app"]):
        if "user_id" not in params(path):
            continue
        url = path.replace("{user_id}", str(table["ada_id"]))
        response = table["bob"].request(method, url, json={"disabled": True, "role": "host"})
        assert response.status_code == 403, f"{method} {url}: {response.status_code}"
        tried += 1
    assert tried >= 4
    with table["tk"].db.session() as session:
        ada = session.get(User, table["ada_id"])
        assert (ada.password_hash, ada.role, ada.disabled) == (before, "player", False)
        assert session.query(PasswordReset).count() == 0
