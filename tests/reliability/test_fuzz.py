"""Fuzzing the edges where untrusted input arrives: HTTP requests, scenario rules, and
whatever the model writes.

Properties, for any input:
- nothing raises an unhandled error: no 500, only clear refusals (JSON with a `detail`);
- a refused input changes nothing: not one write reaches the database;
- the prose never carries the state protocol, on screen (SSE) or on disk.

tests/state/test_properties.py fuzzes the pure state engine (apply, extract, normalise);
these go through the layers around it. The suite runs a short budget;
`scripts/fuzz_long.py` runs the same properties for long (TALEKEEPER_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory.worker import MemoryWorker
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import INTERNAL_ERROR
from talekeeper.state import FENCE_INFO, RulesError, extract_reply, load_rules
from talekeeper.web.app import create_app
from tests.conftest import DEMO
from tests.reliability.test_concurrency import minimal

EXAMPLES = int(os.environ.get("TALEKEEPER_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    # The suite's example database (tests/conftest.py) keeps and replays what fails.
)
# HTTP: examples per route (about 40 routes), so every route is exercised in a short run.
HTTP_FUZZ = settings(
    FUZZ, max_examples=max(3, int(os.environ.get("TALEKEEPER_FUZZ_PER_ROUTE", EXAMPLES // 6)))
)
RUNS: Counter[str] = Counter()  # examples run per property (scripts/fuzz_long.py prints it)
if os.environ.get("TALEKEEPER_FUZZ_COUNTS"):
    atexit.register(lambda: Path(os.environ["TALEKEEPER_FUZZ_COUNTS"]).write_text(json.dumps(RUNS)))

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "",
            "0",
            "-1",
            "null",
            "do",
            "continue",
            "x" * 5000,
            "\x00",
            "../../etc/passwd",
            "<script>",
        ]
    )
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)
# Nesting as deep as a hostile client likes (up to 100,000 levels), as raw bytes: Python's
# JSON reader recurses per level, so unguarded this was a 500 (RecursionError).
deep_json = st.builds(
    lambda depth, kind: {
        "list": b"[" * depth + b"]" * depth,
        "object": b'{"a":' * depth + b"1" + b"}" * depth,
        "open": b"[" * depth,
        "in a body": b'{"kind": "do", "text": "x", "a": ' + b"[" * depth + b"]" * depth + b"}",
    }[kind],
    st.integers(1, 100_000) | st.sampled_from([63, 64, 65, 1_000, 100_000]),
    st.sampled_from(["list", "object", "open", "in a body"]),
)


class CommitWatch:
    """Whether anything was committed since the last look, in O(1) however large the
    database grows: SQLite's `data_version` changes when another connection commits.

    PostgreSQL has no such number for one database, so there the test gives it one: a row
    trigger on every table adds to a one-row counter in the same transaction as the write,
    so only a committed change moves it (a write rolled back takes its count with it).
    """

    def __init__(self, db) -> None:
        self.postgres = db.path is None
        if self.postgres:
            self.engine = create_engine(db.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
            self.connection = self.engine.connect()
            _count_writes(self.connection)
        else:
            self.db = sqlite3.connect(db.path, check_same_thread=False)
        self.seen = self.version()

    def version(self) -> int:
        if self.postgres:
            return self.connection.exec_driver_sql("SELECT n FROM tk_test_writes").scalar_one()
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    def changed(self) -> bool:
        now, before = self.version(), self.seen
        self.seen = now
        return now != before

    def close(self) -> None:
        if self.postgres:  # later tests run without the triggers
            connection = self.connection
            for table in _tables(connection):
                connection.exec_driver_sql(f'DROP TRIGGER IF EXISTS tk_test_count ON "{table}"')
            connection.exec_driver_sql("DROP TABLE tk_test_writes")
            connection.close()
            self.engine.dispose()
        else:
            self.db.close()


def _tables(connection) -> list[str]:
    return (
        connection.exec_driver_sql(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'tk_test_writes'"
        )
        .scalars()
        .all()
    )


def _count_writes(connection) -> None:
    connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS tk_test_writes (n bigint NOT NULL)")
    connection.exec_driver_sql("DELETE FROM tk_test_writes")
    connection.exec_driver_sql("INSERT INTO tk_test_writes VALUES (0)")
    connection.exec_driver_sql(
        "CREATE OR REPLACE FUNCTION tk_test_count_write() RETURNS trigger AS $$ "
        "BEGIN UPDATE tk_test_writes SET n = n + 1; RETURN NULL; END $$ LANGUAGE plpgsql"
    )
    for table in _tables(connection):
        connection.exec_driver_sql(f'DROP TRIGGER IF EXISTS tk_test_count ON "{table}"')
        connection.exec_driver_sql(
            f'CREATE TRIGGER tk_test_count AFTER INSERT OR UPDATE OR DELETE ON "{table}" '
            "FOR EACH ROW EXECUTE FUNCTION tk_test_count_write()"
        )


# --- HTTP requests ---------------------------------------------------------------------


@pytest.fixture
def quiet_bank(monkeypatch: pytest.MonkeyPatch) -> None:
    """No background memory runs: only the request under test may change the database."""
    monkeypatch.setattr(MemoryWorker, "schedule", lambda self, adventure_id, after=None: None)


def api_operations(app) -> tuple[list[tuple[str, str, dict[str, Any]]], dict[str, Any]]:
    spec = app.openapi()
    operations = [
        (method.upper(), path, operation)
        for path, methods in spec["paths"].items()
        if path.startswith("/api/")
        for method, operation in methods.items()
    ]
    return operations, spec.get("components", {}).get("schemas", {})


def test_any_request_gets_a_clear_answer_and_a_refusal_changes_nothing(
    isolated_home: Path, quiet_bank: None
) -> None:
    provider = ScriptedProvider(lambda request: "The lamp burns low.", chunk_size=7)
    tk = Talekeeper(isolated_home, provider_override=provider)
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    ids: dict[str, Any] = {"scenario_id": DEMO, "index": 0}

    def fresh_story() -> None:
        """A new adventure with two turns and a Save Point, so a route's examples never find
        its targets deleted by an earlier route's (DELETE an adventure, a branch …)."""
        story = client.post(
            "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
        ).json()
        turns = [
            client.post(f"/api/adventures/{story['id']}/turns", json={"kind": "continue"}).json()[
                "turn"
            ]
            for _ in range(2)
        ]
        point = client.post(f"/api/adventures/{story['id']}/save-points", json={"name": "fuzz"})
        ids.update(adventure_id=story["id"], node_id=turns[-1]["id"], leaf_id=turns[-1]["id"])
        if point.status_code == 201:
            ids["save_point_id"] = point.json()["id"]

    operations, components = api_operations(client.app)
    watch = CommitWatch(tk.db)

    def body_for(operation: dict[str, Any]) -> st.SearchStrategy[Any]:
        schema = (
            operation.get("requestBody", {})
            .get("content", {})
            .get("application/json", {})
            .get("schema")
        )
        if schema is None:
            return st.one_of(st.none(), json_values)
        valid = minimal(schema, components)
        mutated = st.none()
        if isinstance(valid, dict):
            mutated = st.builds(
                lambda key, value: {**valid, key: value},
                st.text(max_size=12) | st.sampled_from(sorted(valid) or ["x"]),
                json_values,
            )
        return st.one_of(st.just(valid), mutated, json_values)

    def requests(
        operation: tuple[str, str, dict[str, Any]],
    ) -> st.SearchStrategy[tuple[str, Any, bytes | None]]:
        method, path, spec = operation

        @st.composite
        def draw_request(draw) -> tuple[str, Any, bytes | None]:
            url = path
            for parameter in spec.get("parameters", []):
                if parameter["in"] == "path":
                    name = parameter["name"]
                    value = draw(
                        st.sampled_from(
                            [ids.get(name, 1), 0, -1, 2**63, 2**64, "x", "1.5", "%2e%2e"]
                        )
                        if draw(st.booleans())
                        else st.just(ids.get(name, 1))
                    )
                    url = url.replace("{" + name + "}", str(value))
            raw = draw(
                st.one_of(
                    st.none(),
                    st.none(),
                    st.binary(max_size=64),
                    st.just(b'{"kind": "do", "text": '),
                    deep_json,
                )
            )
            return url, draw(body_for(spec)), raw

        return draw_request()

    def check(operation: tuple[str, str, dict[str, Any]]) -> None:
        method = operation[0]

        @HTTP_FUZZ
        @given(requests(operation))
        def one(request: tuple[str, Any, bytes | None]) -> None:
            RUNS["http"] += 1
            url, body, raw = request
            watch.changed()  # forget what earlier (accepted) requests wrote
            if raw is not None:
                response = client.request(
                    method, url, content=raw, headers={"Content-Type": "application/json"}
                )
            elif body is None:
                response = client.request(method, url)
            else:  # as Python writes it: NaN and Infinity included, as a sloppy client might
                payload = json.dumps(body).encode()
                response = client.request(
                    method, url, content=payload, headers={"Content-Type": "application/json"}
                )
            assert response.status_code < 500, (
                method,
                url,
                body,
                response.status_code,
                response.text[:300],
            )
            if response.status_code >= 400:
                assert response.headers["content-type"].startswith("application/json"), (
                    response.headers
                )
                assert response.json().get("detail"), response.text
                assert not watch.changed(), f"refused {method} {url} wrote to the database"

        one()

    for operation in operations:  # every route gets its share, however many there are
        fresh_story()
        check(operation)
    watch.close()
    tk.db.dispose()


def test_pages_reading_json_from_a_form_refuse_any_depth_without_a_500(
    isolated_home: Path, quiet_bank: None
) -> None:
    """The HTML pages read JSON from form fields and uploads themselves (the scenario
    editor's JSON, an import's review, a correction, the import forms), past the body
    guard's JSON scan: any nesting, however deep, is a clear answer and never a 500, and
    nesting past the limit writes nothing."""
    from talekeeper.service.json_depth import MAX_DEPTH

    provider = ScriptedProvider(lambda request: "The lamp burns low.", chunk_size=7)
    tk = Talekeeper(isolated_home, provider_override=provider)
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    story = client.post(
        "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
    ).json()
    own = client.post(f"/api/scenarios/{DEMO}/duplicate")
    scenario_id = own.json()["id"] if own.status_code == 201 else DEMO
    forms = [
        (f"/adventures/{story['id']}/state/correct", "events", {"kind": "json"}),
        ("/interop/save", "document", {}),
        (f"/scenarios/{scenario_id}/save/json", "document", {}),
    ]
    uploads = ["/scenarios/import", "/interop/import", "/adventures/import"]
    watch = CommitWatch(tk.db)

    def depth_of(raw: bytes) -> int:
        deepest = depth = 0
        for byte in raw:
            depth += {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}.get(byte, 0)
            deepest = max(deepest, depth)
        return deepest

    # Six routes, each body up to ~600 KB: the per-route share of the HTTP budget, times three.
    @settings(HTTP_FUZZ, max_examples=HTTP_FUZZ.max_examples * 3)
    @given(deep_json, st.sampled_from(range(len(forms) + len(uploads))))
    def one(raw: bytes, which: int) -> None:
        RUNS["pages reading JSON"] += 1
        watch.changed()
        if which < len(forms):
            url, field, extra = forms[which]
            response = client.post(url, data={**extra, field: raw.decode()})
        else:
            url = uploads[which - len(forms)]
            response = client.post(url, files={"file": ("deep.json", raw, "application/json")})
        assert response.status_code < 500, (
            url,
            len(raw),
            response.status_code,
            response.text[:300],
        )
        if depth_of(raw) > MAX_DEPTH:
            assert not watch.changed(), f"{url} wrote a body nested {depth_of(raw)} deep"

    one()
    watch.close()
    tk.db.dispose()


# --- scenarios and their rules -------------------------------------------------------------

GREYWATER = json.loads(
    (Path(__file__).parents[2] / "talekeeper" / "scenarios" / "greywater.json").read_text()
)


def _demo_rules() -> dict[str, Any]:
    from tests.state.demo_scenario import DEMO_RULES as rules

    return copy.deepcopy(rules)


@st.composite
def mutated(draw, document: Any) -> Any:
    """`document` with a few values anywhere in its tree replaced by anything (or removed)."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 4))):
        node: Any = document
        parent, key = None, None
        for _depth in range(draw(st.integers(0, 6))):
            if isinstance(node, dict) and node:
                key = draw(st.sampled_from(sorted(node)))
            elif isinstance(node, list) and node:
                key = draw(st.integers(0, len(node) - 1))
            else:
                break
            parent, node = node, node[key]
        if parent is None:
            continue
        if isinstance(parent, dict) and draw(st.integers(0, 4)) == 0:
            del parent[key]
        else:
            parent[key] = draw(json_values)
    return document


@FUZZ
@given(st.one_of(json_values, st.deferred(lambda: mutated(_demo_rules()))))
def test_any_rules_declaration_is_loaded_or_refused_by_path(raw: Any) -> None:
    RUNS["rules"] += 1
    try:
        rules = load_rules(raw)
    except RulesError as exc:
        assert str(exc).strip(), "a refusal must say what is wrong"
        return
    assert rules is not None


def test_any_scenario_file_is_imported_and_playable_or_refused_whole(
    isolated_home: Path, quiet_bank: None
) -> None:
    """An import either gives a scenario an adventure can start from and play, or a 422 that
    names the mistakes and writes nothing."""
    provider = ScriptedProvider(lambda request: "The fog lifts a little.", chunk_size=9)
    tk = Talekeeper(isolated_home, provider_override=provider)
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    watch = CommitWatch(tk.db)
    exported = client.get(f"/api/scenarios/{DEMO}/export").json()
    files = (
        st.one_of(
            mutated(GREYWATER),
            mutated(exported),
            json_values,
        ).map(lambda doc: json.dumps(doc).encode())
        | st.binary(max_size=200)
        | deep_json
    )

    @FUZZ
    @given(files)
    def check(raw: bytes) -> None:
        RUNS["scenario import"] += 1
        watch.changed()
        response = client.post("/api/scenarios/import", content=raw)
        assert response.status_code in (201, 413, 422), (response.status_code, response.text[:300])
        if response.status_code != 201:
            assert response.json()["detail"], response.text
            assert not watch.changed(), "a refused import wrote to the database"
            return
        scenario = response.json()
        answers = {
            p["key"]: "Ada"
            for p in scenario["data"].get("placeholders") or []
            if isinstance(p, dict) and "key" in p
        }
        started = client.post(
            "/api/adventures", json={"scenario_id": scenario["id"], "answers": answers}
        )
        assert started.status_code in (201, 422), (started.status_code, started.text[:300])
        if started.status_code == 201:
            played = client.post(
                f"/api/adventures/{started.json()['id']}/turns", json={"kind": "continue"}
            )
            assert played.status_code == 200, (played.status_code, played.text[:300])
        else:
            assert started.json()["detail"], started.text

    check()
    watch.close()
    tk.db.dispose()


# --- what the model writes -----------------------------------------------------------------

STATE_FENCE = re.compile(
    r"`{3,}[ \t]*" + FENCE_INFO + r"(?![\w-])", re.IGNORECASE
)  # as the extractor reads one
PROSE = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80
) | st.sampled_from(
    # What a server's JSON escapes can decode to: halves of a surrogate pair, split or alone.
    ["A lamp \ud83d\udd6f burns.", "Half \ud83d", "\udd6f half", "\ud800"]
)
FENCES = st.sampled_from(
    [
        f"```{FENCE_INFO}\n",
        "```json\n",
        "```\n",
        f"``` {FENCE_INFO}",
        "~~~\n",
        "```" + FENCE_INFO.upper() + "\n",
    ]
)
BLOCK_BODIES = st.one_of(
    json_values.map(json.dumps),
    st.just('{"events": [{"type": "change_stat", "stat": "player.hp", "amount": -3}]}'),
    st.just('{"events": [{"type": "set_flag", "flag": "alarm_raised", "value": true}'),  # cut off
    st.just('{"events": ['),
    st.text(max_size=40),
)


@st.composite
def model_replies(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            parts.append(draw(PROSE))
        elif choice == 1:
            parts.append(
                draw(FENCES) + draw(BLOCK_BODIES) + draw(st.sampled_from(["\n```", "```", ""]))
            )
        elif choice == 2:
            parts.append("<think>" + draw(PROSE) + draw(st.sampled_from(["</think>", ""])))
        else:
            parts.append(draw(BLOCK_BODIES))
    return draw(st.sampled_from(["", "\n", " "])).join(parts)


def test_whatever_the_model_writes_the_story_stays_whole(
    isolated_home: Path, quiet_bank: None
) -> None:
    """A turn over any reply either commits whole, with prose free of the protocol, or is
    refused with a clear error and writes nothing."""
    replies: list[str] = []
    provider = ScriptedProvider(lambda request: replies[-1], chunk_size=5)
    tk = Talekeeper(isolated_home, provider_override=provider)
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    adventure = client.post(
        "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
    ).json()["id"]
    watch = CommitWatch(tk.db)

    @FUZZ
    @given(model_replies())
    def check(reply: str) -> None:
        RUNS["model output"] += 1
        replies.append(reply)
        watch.changed()
        response = client.post(
            f"/api/adventures/{adventure}/turns",
            json={"kind": "do", "text": "look"},
            headers={"Accept": "text/event-stream"},
        )
        assert response.status_code == 200, response.text[:300]
        events = [
            block for block in response.text.replace("\r\n", "\n").split("\n\n") if block.strip()
        ]
        shown = "".join(
            json.loads(line[5:].strip())["text"]
            for block in events
            if block.startswith("event: text")
            for line in block.split("\n")
            if line.startswith("data:")
        )
        assert not STATE_FENCE.search(shown), f"the protocol reached the screen: {shown!r}"
        last = events[-1]
        if last.startswith("event: error"):
            message = json.loads(last.split("data:", 1)[1])["message"]
            assert message != INTERNAL_ERROR, (
                f"the turn pipeline crashed on this reply (see the log): {reply!r}"
            )
            assert not watch.changed(), "a failed turn wrote something"
            return
        assert last.startswith("event: done"), last
        done = json.loads(last.split("data:", 1)[1])
        narration = done["turn"]["narration"]
        assert narration.strip()
        assert not STATE_FENCE.search(narration), narration
        again = extract_reply(narration)  # what the extractor itself would still call protocol
        assert again.raw_block is None, (
            f"protocol left in the stored narration: {again.raw_block!r}"
        )
        narration.encode("utf-8")  # storable as it was shown: no surrogate halves
        client.post(f"/api/adventures/{adventure}/undo")  # keep the story short

    check()
    watch.close()
    tk.db.dispose()
