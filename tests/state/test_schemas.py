"""The published schemas: files match the code that generates them, and they accept
what the engine produces and refuse what it refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from talekeeper.state import (
    EVENTS,
    apply_proposal,
    document_schema,
    proposal_schema,
    rules_schema,
)

SCHEMAS = Path(__file__).parents[2] / "talekeeper" / "state" / "schemas"
GENERATED = {"document.schema.json": document_schema, "proposal.schema.json": proposal_schema}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_published_schema_matches_the_code(name):
    """Regenerate with TALEKEEPER_WRITE_SCHEMAS=1 after changing the models or events."""
    text = json.dumps(GENERATED[name](), indent=2, ensure_ascii=False) + "\n"
    path = SCHEMAS / name
    if os.environ.get("TALEKEEPER_WRITE_SCHEMAS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, (
        f"{name} is stale; rerun with TALEKEEPER_WRITE_SCHEMAS=1"
    )


@pytest.mark.parametrize("schema", [rules_schema, document_schema, proposal_schema])
def test_schemas_are_valid_json_schema(schema):
    jsonschema.Draft202012Validator.check_schema(schema())


def test_demo_rules_fit_the_rules_schema(raw_rules):
    jsonschema.validate(raw_rules, rules_schema())


def test_documents_fit_the_document_schema(doc, rules):
    jsonschema.validate(doc.to_json(), document_schema())
    after, _ = apply_proposal(
        doc,
        {
            "events": [
                {"type": "add_fact", "subject": "gwen", "predicate": "trusts", "object": "you"},
                {"type": "record_moment", "text": "Fell in the mud", "weight": 3},
                {"type": "reach_milestone", "milestone": "rescue_gwen"},
            ]
        },
        rules,
        turn=1,
    )
    jsonschema.validate(after.to_json(), document_schema())


def test_every_vocabulary_example_fits_the_proposal_schema():
    examples = [{"type": t, **spec.example} for t, spec in EVENTS.items()]
    jsonschema.validate({"events": examples}, proposal_schema())


def test_proposal_schema_refuses_unknown_types_and_fields():
    validator = jsonschema.Draft202012Validator(proposal_schema())
    assert not validator.is_valid({"events": [{"type": "heal", "amount": 5}]})
    assert not validator.is_valid(
        {"events": [{"type": "change_stat", "stat": "player.hp", "by": 1, "why": "x"}]}
    )
    assert not validator.is_valid({"events": [{"type": "change_stat", "stat": "player.hp"}]})


def test_narrowed_schema_names_only_what_exists(doc, rules):
    schema = proposal_schema(doc, rules, max_events=4)
    validator = jsonschema.Draft202012Validator(schema)
    assert schema["properties"]["events"]["maxItems"] == 4
    assert validator.is_valid(
        {"events": [{"type": "change_stat", "stat": "npc.gwen.trust", "by": 5}]}
    )
    assert not validator.is_valid(
        {"events": [{"type": "change_stat", "stat": "npc.bob.trust", "by": 5}]}
    )
    assert not validator.is_valid(
        {"events": [{"type": "change_stat", "stat": "player.mood", "by": 5}]}
    )
    assert validator.is_valid(
        {"events": [{"type": "set_possession", "item": "key", "holder": "player"}]}
    )
    assert not validator.is_valid(
        {"events": [{"type": "set_possession", "item": "sword", "holder": "player"}]}
    )
    assert validator.is_valid({"events": [{"type": "reach_milestone", "milestone": "rescue_gwen"}]})
    assert not validator.is_valid({"events": [{"type": "reach_milestone", "milestone": "win"}]})
    assert not validator.is_valid({"events": [{"type": "withdraw_fact", "fact": "f9"}]})
    assert not validator.is_valid({"events": [{}] * 5})


def test_narrowed_schema_leaves_out_events_with_nothing_to_name(doc):
    from talekeeper.state import empty_rules

    types = {
        e["properties"]["type"]["const"]
        for e in proposal_schema(doc, empty_rules())["properties"]["events"]["items"]["anyOf"]
    }
    assert "set_flag" not in types and "reach_milestone" not in types and "change_stat" not in types
    assert "note_event" in types
