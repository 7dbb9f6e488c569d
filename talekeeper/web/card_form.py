"""A story card from an HTML form (the cards panel and the scenario editor share it).

Checkboxes are all "off by default" (the form says `disabled`, not `enabled`), so a form
that posts only the basic fields still makes an enabled card with default rules. Empty
number fields mean "the default". Gates come as numbered rows: `gate-0-kind`, `gate-0-id`…
"""

from __future__ import annotations

from typing import Any

TEXT = (
    "type",
    "name",
    "entry",
    "triggers",
    "notes",
    "secondary_triggers",
    "logic",
    "position",
    "group",
)
FLAGS = (
    "whole_words",
    "case_sensitive",
    "constant",
    "group_override",
    "exclude_recursion",
    "prevent_recursion",
    "delay_until_recursion",
)
NUMBERS = (
    "scan_depth",
    "depth",
    "order",
    "probability",
    "group_weight",
    "sticky",
    "cooldown",
    "delay",
    "max_tokens",
)
GATE_FIELDS = ("kind", "id", "is", "who", "band", "min", "max")
MAX_GATE_ROWS = 20


def card_from_form(form: Any, prefix: str = "") -> dict[str, Any]:
    """The card as a plain dict for `StoryCard.model_validate` (which reports mistakes)."""

    def get(name: str) -> str:
        return str(form.get(prefix + name, "") or "")

    card: dict[str, Any] = {}
    for name in TEXT:
        value = get(name)
        if value or name in ("entry", "triggers"):
            card[name] = value.strip() if name not in ("entry", "notes") else value
    for name in FLAGS:
        if get(name):
            card[name] = True
    if get("disabled"):
        card["enabled"] = False
    for name in NUMBERS:
        value = get(name).strip()
        if value:
            card[name] = (
                value  # pydantic turns "3" into 3 and refuses "three" with the field's path
            )
    gates = []
    for i in range(MAX_GATE_ROWS + 1):
        row = {f: get(f"gate-{i}-{f}").strip() for f in GATE_FIELDS}
        if not row["kind"] or not row["id"]:
            continue
        gate: dict[str, Any] = {k: v for k, v in row.items() if v}
        if get(f"gate-{i}-not"):
            gate["not"] = True
        gates.append(gate)
    if gates:
        card["gates"] = gates
    return card
