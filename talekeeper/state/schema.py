"""The published JSON Schemas: rules, document, proposal.

`rules.schema.json` is authored by hand (it is the scenario author's contract). The
document and proposal schemas are generated — the document's from its models, the
proposal's from the event allowlist — and the files under `schemas/` are snapshots a
test keeps equal to what this module generates.

`proposal_schema(document, rules)` narrows the proposal to what exists right now: entity
ids, stat paths, flags, pending milestones, active fact and relationship ids, open
threads. That is what a grammar for constrained output should be built from (issue 4:
only enums of the existing ids stopped small models inventing names), and `max_events`
bounds the block so a model cannot repeat one event until it runs out of tokens.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from referencing import Registry, Resource

from .document import Document
from .events import EVENTS, MAX_EVENTS, SHAPES, EventSpec
from .resolve import stat_paths
from .rules import Rules, _schema_messages, rules_schema

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def document_schema() -> dict[str, Any]:
    """The JSON Schema of a stored state document."""
    schema = Document.model_json_schema()
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://talekeeper.local/schemas/document.schema.json",
        **schema,
    }


def _enums(document: Document, rules: Rules) -> dict[tuple[str, str], list[str]]:
    numeric = [p for p in stat_paths(rules) if _rule_for(rules, p).numeric]
    threads = [t for t in document.threads.values() if t.status == "open"]
    return {
        ("*", "entity"): list(document.entities),
        ("set_stat", "stat"): stat_paths(rules),
        ("change_stat", "stat"): numeric,
        ("set_flag", "flag"): list(rules.flags),
        ("reach_milestone", "milestone"): [
            m for m in rules.milestones if document.milestones.get(m) is None
        ],
        ("withdraw_fact", "fact"): [f.id for f in document.facts if f.status == "active"],
        ("end_relationship", "relationship"): [
            r.id for r in document.relationships if r.status == "active"
        ],
        ("complete_objective", "thread"): [
            t.id for t in threads if any(not o.done for o in t.objectives)
        ],
        ("complete_objective", "objective"): sorted(
            {o.id for t in threads for o in t.objectives if not o.done}
        ),
        ("resolve_thread", "thread"): [t.id for t in threads],
    }


def _rule_for(rules: Rules, path: str):  # type: ignore[no-untyped-def]
    parts = path.split(".")
    return (
        rules.stat_rule("npc", parts[2], parts[1])
        if parts[0] == "npc"
        else rules.stat_rule(parts[0], parts[1])
    )


def _event_schema(
    spec: EventSpec, enums: dict[tuple[str, str], list[str]] | None
) -> dict[str, Any] | None:
    properties: dict[str, Any] = {"type": {"const": spec.type}}
    for field in spec.fields:
        schema = dict(SHAPES[field.shape].json_schema)
        if enums is not None:
            allowed = enums.get((spec.type, field.name))
            if allowed is None and field.shape in ("ref", "ref?", "refs"):
                allowed = enums[("*", "entity")]
            if allowed is not None:
                if not allowed and field.required:
                    return None  # nothing it could name: leave the event out
                if field.shape == "refs":
                    schema = {
                        "type": "array",
                        "maxItems": schema["maxItems"],
                        "items": {"enum": allowed},
                    }
                elif field.shape == "ref?":
                    schema = (
                        {"anyOf": [{"enum": allowed}, {"type": "null"}]}
                        if allowed
                        else {"type": "null"}
                    )
                elif allowed:
                    schema = {"enum": allowed}
        properties[field.name] = schema
    required = ["type", *(f.name for f in spec.fields if f.required)]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }


def proposal_schema(
    document: Document | None = None, rules: Rules | None = None, max_events: int = MAX_EVENTS
) -> dict[str, Any]:
    """The JSON Schema of a proposal; narrowed to existing ids when given a document and
    its rules."""
    enums = _enums(document, rules) if document is not None and rules is not None else None
    events = [s for s in (_event_schema(spec, enums) for spec in EVENTS.values()) if s is not None]
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://talekeeper.local/schemas/proposal.schema.json",
        "title": "talekeeper state proposal",
        "description": "What the model appends in its state block: the changes it proposes, as typed events.",
        "type": "object",
        "additionalProperties": False,
        "required": ["events"],
        "properties": {
            "events": {"type": "array", "maxItems": max_events, "items": {"anyOf": events}}
        },
    }


@cache
def _packaged(name: str) -> dict[str, Any]:
    return json.loads(
        resources.files(__package__).joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    )


def scenario_schema() -> dict[str, Any]:
    """A scenario document: its texts, cards, rules (by reference) and origins."""
    return _packaged("scenario")


def origin_schema() -> dict[str, Any]:
    """One origin: a thin starting overlay whose ids point into the scenario."""
    return _packaged("origin")


def canon_log_schema() -> dict[str, Any]:
    """The canon log every role reads (`canon.canon_log`)."""
    return _packaged("canon-log")


@cache
def _registry() -> Registry:
    schemas = (rules_schema(), origin_schema(), scenario_schema(), canon_log_schema())
    return Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)


def schema_errors(schema: dict[str, Any], value: Any, prefix: str = "") -> list[str]:
    """Every shape mistake in `value`, each starting with its path (`origins[1].quests[0]: …`)."""
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    found = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    out = []
    for error in found:
        for message in _schema_messages(error):
            if message.startswith("(rules)"):  # the root itself
                message = (prefix or "(value)") + message.removeprefix("(rules)")
            elif prefix:
                message = f"{prefix}.{message}"
            out.append(message)
    return list(dict.fromkeys(out))


__all__ = [
    "canon_log_schema",
    "document_schema",
    "origin_schema",
    "proposal_schema",
    "rules_schema",
    "scenario_schema",
    "schema_errors",
]
