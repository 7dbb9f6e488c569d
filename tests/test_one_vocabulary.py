"""Each rule once. The action vocabulary is named once, `story.actions.ActionKind`: no
module, route or template spells the kinds out again (a list of three kind words, or a
`Literal` of two, is a second copy waiting to drift). AI Dungeon's own action types
(interop/stories.py) are another app's vocabulary, not ours. A provider is asked for its
capabilities, never its id."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from talekeeper.story.actions import ACTION_KINDS, ActionKind

ROOT = Path(__file__).parents[1] / "talekeeper"
KIND_WORDS = {str(k) for k in ActionKind}
OWN = {ROOT / "story" / "actions.py", ROOT / "interop" / "stories.py"}
TEMPLATE_LIST = re.compile(r"""[(\[]\s*["'](?:do|say|story|continue|talk)["']\s*,""")


def _kind_words(node: ast.AST) -> int:
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else []
    return sum(isinstance(e, ast.Constant) and e.value in KIND_WORDS for e in elements)


def test_the_enum_is_the_vocabulary() -> None:
    assert [str(k) for k in ACTION_KINDS] == ["do", "say", "story", "continue", "talk"]
    assert ActionKind.DO == "do" and f"{ActionKind.TALK}" == "talk"


def test_no_module_spells_the_kinds_out_again() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path in OWN or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            literal = (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Literal"
                and _kind_words(node.slice) >= 2
            )
            if literal or _kind_words(node) >= 3:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_no_template_spells_the_kinds_out_again() -> None:
    found = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "web" / "templates").rglob("*.html"))
        if TEMPLATE_LIST.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_app_asks_a_provider_for_its_capabilities_never_its_id() -> None:
    """`runs_here`, `structured_by_default`, `supports_schema` …: a new provider that has
    the capability gets the behaviour without a list of ids to extend."""
    asking = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted(ROOT.rglob("*.py"))
        if "llm" not in path.relative_to(ROOT).parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"provider(_override)?\.id\b", line)
    ]
    assert asking == []
