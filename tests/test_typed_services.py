"""One typed shape per thing, from service to screen: an entry point a front calls (a public
function of the service packages taking the application object, `tk`) answers with a view
(`views/`) or a frozen value, never a dict a page, the terminal or the API would
index by string. Read from the return annotations, so a new entry point is held to it too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[1] / "talekeeper"
SERVICE = [
    *sorted((ROOT / "service").rglob("*.py")),
    ROOT / "accounts.py",
    *sorted((ROOT / "interop").glob("*.py")),
]

# Documents by nature: a JSON document the player edits or downloads as it is (a scenario,
# a card, a state snapshot), whose own schema is published — not a view of one.
DOCUMENTS = {
    "service/scenarios.py:export",  # the scenario file, as downloaded
    "service/scenarios.py:document",  # the scenario document the editor edits
    "service/tree_ops.py:current_state",  # the head's state snapshot (/api/schemas/document)
    "interop/imports.py:card_json",  # a Character Card V3, as downloaded
    "service/turns.py:rewarm",  # a callback given the memory bank's run (no front reads it)
}


def entry_points() -> dict[str, str]:
    """`module:function` → its return annotation, for every public function whose first
    parameter is the application object."""
    found = {}
    for path in SERVICE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and not node.name.startswith("_")
                and node.args.args
                and node.args.args[0].arg == "tk"
            ):
                returns = ast.unparse(node.returns) if node.returns else "(none)"
                found[f"{path.relative_to(ROOT)}:{node.name}"] = returns
    return found


def test_the_service_has_entry_points_to_hold() -> None:
    assert len(entry_points()) > 100


def test_every_entry_point_says_what_it_returns() -> None:
    assert [name for name, returns in entry_points().items() if returns == "(none)"] == []


def test_no_entry_point_answers_a_front_with_a_dict() -> None:
    loose = {
        name
        for name, returns in entry_points().items()
        if re.search(r"\b(dict|Any)\b", returns) and name not in DOCUMENTS
    }
    assert loose == set(), "return a view (views/) or a frozen value"
