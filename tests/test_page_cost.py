"""What opening the play page costs the database, counted (never timed): its reads — the
story's first paint, the cast, the connection in force and the sampler preset — in one
transaction, the settings rows among them in one statement, and nothing read again for the
warm-up it starts. `benchmarks/interactions.py` ("page load") measures the time."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import event

from talekeeper.service.app import Talekeeper

# The adventure, the settings rows, the connection profiles, the head, the path, the turns'
# takes and the scenario's title. It was 17 in 4 transactions when the model line's parts
# each opened their own and the warm-up read the settings again; raise it only knowingly.
MOST_STATEMENTS = 7


def test_the_play_page_reads_in_one_transaction(
    tk: Talekeeper, client: TestClient, adventure_id: int
) -> None:
    client.get(f"/adventures/{adventure_id}")  # warm: views and templates kept
    counted = {"statements": 0, "transactions": 0}

    def statement(*_args: object) -> None:
        counted["statements"] += 1

    def transaction(*_args: object) -> None:
        counted["transactions"] += 1

    event.listen(tk.db.engine, "before_cursor_execute", statement)
    event.listen(tk.db.engine, "begin", transaction)
    try:
        assert client.get(f"/adventures/{adventure_id}").status_code == 200
    finally:
        event.remove(tk.db.engine, "before_cursor_execute", statement)
        event.remove(tk.db.engine, "begin", transaction)
    assert counted["transactions"] == 1
    assert counted["statements"] <= MOST_STATEMENTS
