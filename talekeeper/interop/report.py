"""The import report: what came across, what was approximated, what was dropped, and why.

Entries about the same field and reason are grouped ("dropped on 12 entries: …"), so a
34-entry lorebook gives a report a person can read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Report:
    lines: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def add(self, where: str, status: str, detail: str, item: str = "") -> None:
        assert status in ("imported", "approximated", "dropped"), status
        self.lines.setdefault((where, status, detail), [])
        if item:
            self.lines[(where, status, detail)].append(item)

    def imported(self, where: str, detail: str, item: str = "") -> None:
        self.add(where, "imported", detail, item)

    def approximated(self, where: str, detail: str, item: str = "") -> None:
        self.add(where, "approximated", detail, item)

    def dropped(self, where: str, detail: str, item: str = "") -> None:
        self.add(where, "dropped", detail, item)

    def as_list(self) -> list[dict[str, Any]]:
        found = []
        for (where, status, detail), items in self.lines.items():
            entry: dict[str, Any] = {"field": where, "status": status, "detail": detail}
            if items:
                shown = ", ".join(items[:6]) + (
                    f" and {len(items) - 6} more" if len(items) > 6 else ""
                )
                entry["detail"] = f"{detail} ({len(items)}: {shown})"
                entry["count"] = len(items)
            found.append(entry)
        order = {"dropped": 0, "approximated": 1, "imported": 2}
        return sorted(found, key=lambda e: order[e["status"]])
