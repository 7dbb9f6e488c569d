"""Issue 30's "the API shows another head", held open on purpose and shut.

On PostgreSQL the database is another process: a COMMIT the app sent just before it was
SIGKILLed is still carried out by its backend afterwards. The crash soak's checker read the
database at once after the kill, saw the turn missing, adopted that as the truth — and the
restarted server then showed the turn there (it had committed: allowed, a turn being written
when the app died is whole or absent). It was the checker, not the product: the player was
never acknowledged that turn, and the head the API showed was the database's own.

Here the window is made seconds wide (a deferred trigger sleeps inside the turn's COMMIT)
and the kill lands in it: a read at once still misses the turn, the checker's read waits for
the dead server's backends to end (crash.settle_after_kill) and finds it, and the restarted
server shows the same head.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests import pg, waiting
from tests.reliability import crash
from tests.reliability.crash import DEMO, ServerProcess, sse_events
from tests.reliability.fakemodel import FakeModelServer
from tests.reliability.invariants import check_database

pytestmark = pg.postgresql_only

SLOW_COMMIT = [
    "CREATE OR REPLACE FUNCTION tk_test_slow_commit() RETURNS trigger AS $$ "
    "BEGIN PERFORM pg_sleep(4); RETURN NULL; END $$ LANGUAGE plpgsql",
    "CREATE CONSTRAINT TRIGGER tk_test_slow_commit AFTER INSERT ON nodes "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION tk_test_slow_commit()",
]
COMMITTING = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND query = 'COMMIT' AND wait_event = 'PgSleep'"
)


def test_a_commit_carried_out_after_the_kill_is_waited_for_then_seen_alike(
    tmp_path: Path,
) -> None:
    base = pg.configured_url()
    assert base is not None
    with (
        pg.fresh_database(base, f"{base.database}_window") as url,
        FakeModelServer(chunk_delay=0.001) as fake,
    ):
        server = ServerProcess(tmp_path, fake.endpoint, url)
        server.start()
        watch = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        try:
            with httpx.Client(base_url=server.base_url, timeout=waiting.bound(60)) as http:
                story = http.post(
                    "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
                ).json()
            adventure, head = story["id"], story["head_id"]
            with watch.connect() as connection:
                for statement in SLOW_COMMIT:
                    connection.execute(text(statement))

            def turn() -> None:
                try:
                    with (
                        httpx.Client(base_url=server.base_url, timeout=waiting.bound(60)) as http,
                        http.stream(
                            "POST",
                            f"/api/adventures/{adventure}/turns",
                            json={"kind": "continue"},
                            headers={"Accept": "text/event-stream"},
                        ) as response,
                    ):
                        list(sse_events(response))
                except httpx.HTTPError:
                    pass  # the server died under it: nothing was acknowledged

            playing = threading.Thread(target=turn)
            playing.start()
            with watch.connect() as connection:
                waiting.until(
                    lambda: connection.execute(COMMITTING).scalar_one() == 1,
                    "the turn's COMMIT running in the database",
                    60,
                )
            server.kill()  # the COMMIT was sent; its backend carries it out after this
            playing.join(waiting.bound(60))

            at_once = check_database(url).heads[adventure]
            assert at_once == head, "the window did not open: the turn was in at once"
            crash.settle_after_kill(url)
            settled = check_database(url).heads[adventure]
            assert settled != head, "the turn whose COMMIT was sent did not commit"

            server.start()
            with httpx.Client(base_url=server.base_url, timeout=waiting.bound(60)) as http:
                shown = http.get(f"/api/adventures/{adventure}", params={"limit": 3}).json()
            assert shown["head_id"] == settled  # what the checker read is what the player sees
        finally:
            server.kill()
            watch.dispose()
