"""The architecture's figures (issue 26), printed so they can be measured again at any commit:

    .venv/bin/python scripts/architecture_figures.py            # every figure
    .venv/bin/python scripts/architecture_figures.py --no-turns # without playing turns

- service functions returning a dict: public functions of the service packages whose
  return annotation holds `dict[...]` (what a front would have to index by string);
- modules over 500 lines;
- function-level imports (an import inside a function body, `TYPE_CHECKING` aside);
- import circles: groups of modules that import each other, at module level, and counting
  function-level and `TYPE_CHECKING` imports too (a circle dodged inside a function is
  still a circle);
- upward arrows: an import of a package drawn on the same or a higher row of
  `tests/test_layers.py` — any import, `TYPE_CHECKING` and function-level ones included;
- `duplicates` pairs in `talekeeper/` (all, and those it calls boilerplate);
- transactions begun and statements sent by one turn, up to its last event: a plain turn
  (inline state updates), one with a companion's remark, one with accounts on.

Counted from the source (ast) and on a scripted model: nothing timed, nothing downloaded.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import re
import subprocess
import sys
import tempfile
import traceback
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "talekeeper"
# The packages that were `service/` before issue 26 split it: counted together throughout.
SERVICE_PACKAGES = ("service", "interop", "accounts", "views")
BIG = 500
BANK_RUN = str(Path("talekeeper", "memory", "worker.py"))  # scheduled after a turn: not its cost

sys.path.insert(0, str(ROOT))


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, own: str, known: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(target module, where: module|function|type_checking, line) for each talekeeper import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = own if path.name == "__init__.py" else own.rsplit(".", 1)[0]
    found: list[tuple[str, str, int]] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        names = [f"{module}.{alias.name}" for alias in node.names]
        submodules = [name for name in names if name in known]  # `from pkg import module`
        return submodules or [module]

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "type_checking")
            for child in node.orelse:
                visit(child, where)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in targets(node):
                if target.split(".")[0] == "talekeeper":
                    found.append((target, where, node.lineno))
            return
        inner = "function" if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else where
        for child in ast.iter_child_nodes(node):
            visit(child, inner if where == "module" else where)

    visit(tree, "module")
    return found


def resolve(target: str, known: dict[str, Path]) -> str | None:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def short(name: str) -> str:
    return name.removeprefix("talekeeper.")


def source_figures() -> None:
    from tests.test_layers import RANK, module_circles

    known = modules()
    found = {name: imports(path, name, known) for name, path in known.items()}

    dict_returns = []
    for name, path in known.items():
        if name.split(".")[1:2] and name.split(".")[1] in SERVICE_PACKAGES:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not node.name.startswith("_")
                    and node.returns is not None
                    and re.search(r"\bdict\[", ast.unparse(node.returns))
                ):
                    dict_returns.append((f"{short(name)}.{node.name}", ast.unparse(node.returns)))
    exact = [name for name, returns in dict_returns if returns == "dict[str, Any]"]
    print(
        f"service functions returning a dict: {len(dict_returns)} "
        f"({len(exact)} of them exactly dict[str, Any])"
    )

    big = {
        short(n): len(p.read_text(encoding="utf-8").splitlines())
        for n, p in known.items()
        if len(p.read_text(encoding="utf-8").splitlines()) > BIG
    }
    print(f"modules over {BIG} lines: {len(big)}")
    for name, lines in sorted(big.items(), key=lambda item: -item[1]):
        print(f"    {lines:5}  {name}")

    in_functions = [
        (n, line) for n, rows in found.items() for _, where, line in rows if where == "function"
    ]
    by_package: dict[str, int] = defaultdict(int)
    for name, _ in in_functions:
        by_package[name.split(".")[1] if "." in name else name] += 1
    print(
        f"function-level imports: {len(in_functions)} ("
        + ", ".join(f"{p} {c}" for p, c in sorted(by_package.items(), key=lambda i: -i[1]))
        + ")"
    )

    for label, kinds in (
        ("module level", {"module"}),
        ("with function-level and TYPE_CHECKING imports", {"module", "function", "type_checking"}),
    ):
        edges: dict[str, set[str]] = defaultdict(set)
        for name, rows in found.items():
            for target, where, _ in rows:
                resolved = resolve(target, known)
                if where in kinds and resolved and resolved != name:
                    edges[name].add(resolved)
        groups = module_circles(edges)
        print(f"import circles, {label}: {len(groups)}")
        for group in groups:
            print("    " + ", ".join(short(g) for g in group))

    upward = []
    for name, rows in found.items():
        own = name.split(".")[1] if "." in name else None
        for target, where, line in rows:
            other = target.split(".")[1] if "." in target else None
            if own in RANK and other in RANK and own != other and RANK[other] <= RANK[own]:
                upward.append(f"{short(name)}:{line} -> {short(target)} ({where})")
    print(f"upward arrows: {len(upward)}")
    for arrow in upward:
        print(f"    {arrow}")

    try:
        out = subprocess.run(
            ["duplicates", "--repo", str(PACKAGE), "--most", "200", "--seconds", "300"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except FileNotFoundError:
        print("duplicates pairs: (the `duplicates` tool is not installed)")
    else:
        rows = [line for line in out.splitlines() if re.match(r"D\d+ ", line)]
        more = re.search(r"\(\+(\d+) more pairs\)", out)
        total = len(rows) + (int(more.group(1)) if more else 0)
        boiler = sum("boilerplate" in line for line in rows)
        print(f"duplicates pairs in talekeeper/: {total} ({boiler} boilerplate)")


def turn_figures() -> None:
    from sqlalchemy import event

    from talekeeper import accounts
    from talekeeper.context.settings import update_context_settings
    from talekeeper.llm.scripted import ScriptedProvider
    from talekeeper.service import adventures
    from talekeeper.service.app import Talekeeper
    from talekeeper.service.turn_events import Done, Settled
    from talekeeper.service.turns import play_turn
    from talekeeper.store import owner

    def count(tk: Talekeeper, adventure_id: int, text: str) -> tuple[int, int]:
        counts = {"begin": 0, "statements": 0}
        finished = False  # the memory bank's run after the turn is not the turn's

        def the_turns() -> bool:
            return not finished and not any(
                frame.filename.endswith(BANK_RUN) for frame in traceback.extract_stack()
            )

        def on_begin(conn) -> None:  # type: ignore[no-untyped-def]
            counts["begin"] += the_turns()

        def on_execute(conn, cursor, statement, parameters, context, many) -> None:  # type: ignore[no-untyped-def]
            counts["statements"] += the_turns()

        async def run() -> None:
            nonlocal finished
            async for item in play_turn(tk, adventure_id, "do", text):
                if isinstance(item, Settled) or (
                    isinstance(item, Done) and not item.data["turn"]["pending"]
                ):
                    finished = True
                    return
            raise RuntimeError("the turn ended without a result")

        event.listen(tk.db.engine, "begin", on_begin)
        event.listen(tk.db.engine, "before_cursor_execute", on_execute)
        try:
            asyncio.run(run())
        finally:
            event.remove(tk.db.engine, "begin", on_begin)
            event.remove(tk.db.engine, "before_cursor_execute", on_execute)
        return counts["begin"], counts["statements"]

    def game(accounts_on: bool) -> tuple[Talekeeper, ScriptedProvider]:
        home = Path(tempfile.mkdtemp(prefix="talekeeper-figures-"))
        scripted = ScriptedProvider([], chunk_size=5)
        tk = Talekeeper(home, provider_override=scripted, accounts=accounts_on)
        with tk.db.session() as session:
            update_context_settings(session, {"memory_enabled": False})  # no bank run mid-count
        return tk, scripted

    figures = {}
    tk, scripted = game(False)
    with tk.db.session() as session:
        story = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
    for n in range(3):  # what is kept between turns fills on the first ones
        scripted.queue(f"The tide turns. ({n})")
        figures["plain"] = count(tk, story, f"look around {n}")
    tk.db.dispose()

    tk, scripted = game(False)
    with tk.db.session() as session:
        story = adventures.start_adventure(
            session,
            "fenmouth-ledger",
            origin_id="deserter",
            character={"name": "Aldric", "class": "sellsword"},
        ).id
    # a moment for the companion to raise (as tests/test_turn_pipeline.py plays it): without
    # one Brannoc's remark is due but never made, and the figure would count no remark
    moment = '{"events": [{"type": "record_moment", "text": "you fell in the river", "weight": 8}]}'
    scripted.queue(f"Your boot finds an eel.\n```state\n{moment}\n```", "Fog drifts.")
    count(tk, story, "step off the barge")
    count(tk, story, "wring out your cloak")
    scripted.queue("A bell rings from the chapel.", '"Mind the eels, boss," Brannoc says.')
    figures["companion"] = count(tk, story, "listen")
    narration = adventures.story(tk, story).turns_shown[-1].narration
    if not narration.endswith("Brannoc says."):
        raise RuntimeError(f"the companion's turn has no remark: {narration!r}")
    tk.db.dispose()

    tk, scripted = game(True)
    with tk.db.session() as session:
        user = accounts.create_user(session, "ada", "correct horse battery").id
    with owner.acting_as(user):
        with tk.db.session() as session:
            story = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"}).id
        for n in range(3):
            scripted.queue(f"The tide turns. ({n})")
            figures["accounts on"] = count(tk, story, f"look around {n}")
    tk.db.dispose()

    for name, (transactions, statements) in figures.items():
        print(f"turn, {name}: {transactions} transactions, {statements} statements")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-turns", action="store_true", help="skip playing turns")
    args = parser.parse_args()
    source_figures()
    if not args.no_turns:
        turn_figures()


if __name__ == "__main__":
    main()
