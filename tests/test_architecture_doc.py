"""docs/architecture.md stays true: every module and folder it names exists, the turn's
steps it lists are service/turns' own, and the code cites its sections — never a design
file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_turn_steps import documented

ROOT = Path(__file__).parents[1]
DOC = ROOT / "docs" / "architecture.md"
TEXT = DOC.read_text(encoding="utf-8")
PATH = re.compile(
    r"`((?:talekeeper|tests|scripts|docs|benchmarks)/[\w/.]*|[a-z_]+/[\w/]*\.py|[a-z_]+/)`"
)
CITATION = re.compile(r'docs/architecture\.md\s+"([^"]+)"')


def named_paths() -> set[str]:
    return {match.group(1) for match in PATH.finditer(TEXT)}


def test_it_names_many_modules() -> None:
    assert len(named_paths()) > 50  # the reader's map: not a page of generalities


def test_every_module_and_folder_it_names_exists() -> None:
    missing = []
    for name in sorted(named_paths()):
        first = name.split("/")[0]
        base = (
            ROOT
            if first in {"talekeeper", "tests", "scripts", "docs", "benchmarks"}
            else ROOT / "talekeeper"
        )
        if not (base / name).exists():
            missing.append(name)
    assert missing == []


def headings() -> set[str]:
    return set(re.findall(r"^##+ (.+)$", TEXT, re.M))


def test_every_section_the_code_cites_is_here() -> None:
    cited = {}
    for path in sorted((ROOT / "talekeeper").rglob("*.py")):
        for section in CITATION.findall(path.read_text(encoding="utf-8")):
            section = " ".join(section.split())  # a citation may wrap
            cited.setdefault(section, []).append(str(path.relative_to(ROOT)))
    assert cited, "modules cite the design by its sections"
    assert {s: where for s, where in cited.items() if s not in headings()} == {}


def test_no_module_cites_a_design_file_outside_the_repository() -> None:
    citing = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "talekeeper").rglob("*.py"))
        if "DESIGN.md" in path.read_text(encoding="utf-8")
    ]
    assert citing == []


def test_the_turns_steps_are_listed_as_service_turns_names_them() -> None:
    section = TEXT[TEXT.index("## A turn") :]
    section = section[: section.index("\n## ", 1)]
    listed = re.findall(r"^(\d+)\. \*\*(\w+)\*\*", section, re.M)
    assert dict(listed) == documented()
