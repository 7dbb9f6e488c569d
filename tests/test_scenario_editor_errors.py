"""The scenario editor reports a mistake once in its list and once beside its field — not
again for every section around the field — and one wrong value is one mistake."""

from __future__ import annotations

import copy
import json

from fastapi.testclient import TestClient

from talekeeper.store.models import Scenario
from talekeeper.web.pages import templates
from talekeeper.web.pages_scenarios import editor_context


def test_a_mistake_is_listed_once_and_shown_beside_its_field_once(client: TestClient, tk) -> None:
    loc = client.post("/scenarios/greywater-lantern/duplicate", follow_redirects=False).headers[
        "location"
    ]
    sid = loc.split("?")[0].rsplit("/", 1)[1]
    with tk.db.session() as session:
        data = copy.deepcopy(session.get(Scenario, sid).data)
    data["rules"]["stats"]["world"]["storm"]["min"] = 50  # above its max: one slip
    answer = client.post(f"/scenarios/{sid}/save/json", data={"document": json.dumps(data)})
    assert answer.status_code == 422 and "Not saved: 1 mistake." in answer.text
    (error,) = [line for line in answer.text.split("<li><code>")[1:]]
    assert error.startswith("rules.stats.world.storm.max</code>: must be ≥ min (50)")
    for part, shown in (("rules", 2), ("world", 1), ("story", 1)):
        context = editor_context(
            sid, data, False, part, ["rules.stats.world.storm.max: must be ≥ min (50)"]
        )
        page = templates.env.get_template("scenario_editor.html").render(request=None, **context)
        assert page.count("must be ≥ min (50)") == shown, part
