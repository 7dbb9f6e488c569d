"""The state engine: the application owns the truth of the story.

Pure — documents and proposals in, documents and reports out; no I/O. A turn:

    prose, raw, proposal, error = extract_reply(reply)        # extract.py
    new_doc, report = apply_proposal(doc, proposal, rules, turn)  # validate.py + apply.py
    refusals_for_prompt(report)                                # fed to the next turn

Modules, each one concept: `document` (the stored shape), `rules` (what a scenario
declares, checked by path), `initial` (a new adventure's document), `normalise` (read a
stored document back), `events` (the closed allowlist), `resolve` (names → ids),
`validate` (the layers), `stats` (stat mechanics), `apply`, `report`, `prompt` (the
id-ful text for a model that writes events), `notes` (the canon in words, for every role
that only reads it), `extract` (the state-block protocol),
`streaming` (the state block hidden while a reply streams), `schema` (published schemas).
Reading the narration: `reader` (text → claims, with `lexicon`), `situation` (who is where
at each point of it), `told` (the changes it states outright), `contradictions` (its
clashes with the state), `telling` (all three for one narration).
"""

from .apply import apply_proposal
from .document import (
    PLAYER_ID,
    RECENT_EVENTS_WINDOW,
    VERSION,
    Document,
    Entity,
    Fact,
    Moment,
    Objective,
    RecentEvent,
    Relationship,
    Scene,
    Stats,
    StatValue,
    Thread,
    empty_document,
)
from .events import EVENT_TYPES, EVENTS, MAX_EVENTS
from .extract import FENCE_INFO, Extraction, emit_instructions, extract_reply
from .initial import initial_document
from .normalise import normalise
from .notes import refusal_notes, stat_guide_words, state_notes
from .prompt import (
    canon_prompt,
    compact_vocabulary,
    refusals_for_prompt,
    stat_guide,
    state_for_prompt,
    vocabulary_prompt,
)
from .report import LOST, Outcome, Report
from .resolve import stat_paths
from .rules import Rules, RulesError, StatRule, check_rules, empty_rules, load_rules
from .schema import document_schema, proposal_schema, rules_schema
from .stats import band_label
from .streaming import VisibleStream, visible_prefix

__all__ = [
    "EVENTS",
    "EVENT_TYPES",
    "FENCE_INFO",
    "LOST",
    "MAX_EVENTS",
    "PLAYER_ID",
    "RECENT_EVENTS_WINDOW",
    "VERSION",
    "Document",
    "Entity",
    "Extraction",
    "Fact",
    "Moment",
    "Objective",
    "Outcome",
    "RecentEvent",
    "Relationship",
    "Report",
    "Rules",
    "RulesError",
    "Scene",
    "StatRule",
    "StatValue",
    "Stats",
    "Thread",
    "apply_proposal",
    "band_label",
    "canon_prompt",
    "check_rules",
    "document_schema",
    "emit_instructions",
    "empty_document",
    "empty_rules",
    "extract_reply",
    "initial_document",
    "load_rules",
    "normalise",
    "proposal_schema",
    "refusal_notes",
    "refusals_for_prompt",
    "rules_schema",
    "stat_guide",
    "stat_guide_words",
    "stat_paths",
    "state_for_prompt",
    "state_notes",
    "VisibleStream",
    "visible_prefix",
    "vocabulary_prompt",
    "compact_vocabulary",
]
