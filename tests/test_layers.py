"""The layer picture holds: a package imports only packages drawn below it (README "Layout").

Generalises tests/state/test_purity.py to every layer. Imports are read from the source:
at module level, inside functions and under `if TYPE_CHECKING:` alike — an annotation that
names a module above is a dependency on it too (a lower layer that needs the application
object names what it uses as a Protocol of its own, as `memory/worker.py` does).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "talekeeper"

# Top to bottom. A package may import its own modules and any package on a lower row;
# packages on the same row are independent of each other.
LAYERS: list[set[str]] = [
    {"cli"},
    {"web", "terminal"},
    # other apps' files and bundles (converters, and the doors that store them); players
    {"interop", "accounts"},
    {"service"},
    {"views"},  # the answers' shapes (the API's contracts), from service to screen
    {"memory"},
    {"context"},
    {"story"},
    {"state", "store", "llm"},
    {"errors"},  # the exception tree every layer's refusals hang from; imports nothing
]
RANK = {name: i for i, row in enumerate(LAYERS) for name in row}


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "talekeeper" or len(parts) < 2:
        return None
    return parts[1]


def _imports(tree: ast.AST, own: str) -> list[tuple[int, str]]:
    """(line, module) for every import, wherever it stands."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = own.split(".")[: -node.level]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            if module == "talekeeper":  # `from talekeeper import web` (not `__version__`)
                found.extend(
                    (node.lineno, f"talekeeper.{a.name}") for a in node.names if a.name in RANK
                )
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "migrations" not in p.parts)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_package_has_a_row() -> None:
    packages = {_package(_module_name(p)) for p in _modules()} - {None}
    assert packages <= set(RANK), f"packages missing from the layer picture: {packages - set(RANK)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    own_name = _module_name(path)
    own = _package(own_name)
    if own is None:
        return  # talekeeper/__init__.py
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for line, module in _imports(tree, own_name if path.name != "__init__.py" else own_name + ".x"):
        target = _package(module)
        if target is None or target == own:
            continue
        assert RANK[target] > RANK[own], (
            f"{path.relative_to(ROOT)}:{line} imports {module}: `{own}` may not depend on `{target}` "
            "(same or higher layer)"
        )


def test_pages_never_import_api_modules() -> None:
    """HTML pages and JSON routes both call services; neither calls the other."""
    for path in sorted((ROOT / "web").glob("pages*.py")):
        for line, module in _imports(
            ast.parse(path.read_text(encoding="utf-8")), _module_name(path)
        ):
            name = module.rsplit(".", 1)[-1]
            assert not (module.startswith("talekeeper.web.") and name.startswith("api")), (
                f"web/{path.name}:{line} imports {module}"
            )


@pytest.mark.parametrize("front", ["web", "terminal"])
def test_fronts_open_no_session_and_take_no_lock(front: str) -> None:
    """The services own the unit of work; routes, pages and the terminal only translate."""
    for path in sorted((ROOT / front).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for needle in (".db.session(", ".locks.hold(", ".locks.acquire(", ".locks.release("):
            assert needle not in text, f"{front}/{path.name} calls {needle}: call a service instead"


def _own_imports(path: Path, names: set[str]) -> set[str]:
    """The talekeeper modules `path` imports, wherever the import stands (a function body,
    `if TYPE_CHECKING:`), each resolved to the module that defines what it names."""
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
            module = module if node.level else node.module or ""
            submodules = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in names]
            targets = submodules or [module]  # `from pkg import module`, or names in `module`
        else:
            continue
        for target in targets:
            while target and target not in names:  # `talekeeper.service.app.Talekeeper`
                target = target.rpartition(".")[0]
            if target and target != own:
                found.add(target)
    return found


def module_circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of more than one module that import each other (Tarjan's strongly connected
    components; iterative, so depth is no limit). scripts/architecture_figures.py counts
    with it too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def _module_edges() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in _modules()}
    return {name: _own_imports(path, set(paths)) for name, path in paths.items()}


def test_no_import_circle_between_modules() -> None:
    """Inside a package too (`service/` above all): no two modules import each other, even
    through others, counting imports inside functions and under `TYPE_CHECKING` — a circle
    dodged by a late import is still a circle. What both sides need moves down into a
    module both can import (service/connection_in_force.py), or is passed as a value."""
    assert module_circles(_module_edges()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert module_circles(edges) == [["a", "b", "c"]]
    assert module_circles({"a": {"b"}, "b": set()}) == []


def test_one_web_layout() -> None:
    """Every feature's JSON routes are in `web/api_X.py` and its pages in `web/pages_X.py`
    (docs/architecture.md "The fronts"): no module holds both, and pages stay out of the
    OpenAPI document. `apidocs.py` serves the API's documentation pages."""
    import importlib

    from fastapi import APIRouter
    from fastapi.routing import APIRoute

    seen = 0
    for path in sorted((ROOT / "web").glob("*.py")):
        module = importlib.import_module(_module_name(path))
        routes = [
            route
            for value in vars(module).values()
            if isinstance(value, APIRouter)
            for route in value.routes
            if isinstance(route, APIRoute)
        ]
        for route in routes:
            seen += 1
            where = f"web/{path.name}: {sorted(route.methods)} {route.path}"
            if path.stem == "apidocs":
                assert not route.include_in_schema, where
            elif path.stem.startswith("pages"):
                assert not route.path.startswith("/api/"), f"{where}: a JSON route among pages"
                assert not route.include_in_schema, f"{where}: a page in the OpenAPI document"
            else:
                assert path.stem.startswith("api"), f"{where}: routes outside api_X/pages_X"
                assert route.path.startswith("/api/"), f"{where}: a page among JSON routes"
    assert seen > 100
