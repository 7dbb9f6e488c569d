"""talekeeper.state stays pure: no I/O, no other talekeeper layer, only its allowed deps."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "talekeeper" / "state"
ALLOWED_THIRD_PARTY = {
    "pydantic",
    "jsonschema",
    "referencing",
    "json_repair",
}  # referencing: jsonschema's $ref registry
FORBIDDEN_STDLIB = {
    "os",
    "pathlib",
    "io",
    "socket",
    "subprocess",
    "shutil",
    "sqlite3",
    "urllib",
    "http",
    "asyncio",
    "threading",
    "tempfile",
    "glob",
    "random",
    "time",
    "datetime",
}


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module or ""
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "open",
            "print",
            "input",
        ):
            yield f"builtin {node.func.id}()"


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_only_pure_imports(path):
    for name in _imports(path):
        top = name.split(".")[0]
        assert not name.startswith("builtin "), f"{path.name} calls {name}"
        assert top != "talekeeper", (
            f"{path.name} imports {name}: state must not depend on other layers"
        )
        assert top not in FORBIDDEN_STDLIB, f"{path.name} imports {name}"
        assert (
            top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY or top == "__future__"
        ), f"{path.name} imports {name}, which is not an allowed dependency"


def test_the_package_imports_alone():
    """Importing the engine pulls in no web, store or model layer."""
    import subprocess

    code = (
        "import sys, talekeeper; before = set(sys.modules); import talekeeper.state; "
        "bad = [m for m in set(sys.modules) - before if m.split('.')[0] in {'sqlalchemy','fastapi','httpx','llama_cpp'} "
        "or (m.startswith('talekeeper.') and not m.startswith('talekeeper.state'))]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"
