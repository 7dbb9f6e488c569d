"""The adventure bundle's format: one gzip-compressed JSON Lines file, versioned.

A bundle is a stream of records, one JSON object a line, so a story of any length is
written and read a record at a time (memory does not grow with the story's text):

    header            format, version, counts, and the adventure (title, plot, rules,
                      samplers, scenario snapshot, head and root)
    text*             Insights section texts, deduplicated (referenced by digest)
    node*             every turn of every line, parents before children
    memory*           the memory bank
    summary*          story-summary versions
    insight*          what was sent to the model for a turn (references texts, nodes, memories)
    save_point*
    end               the number of records and the SHA-256 of every line before it

Ids inside a bundle are its own (1, 2, 3 … in the order written); they never carry the
database's ids, so export → import → export gives the same file (up to `exported_at`).
A bundle carries what was stored, not derivations: the state snapshot after each turn is
stored as it was, and the proposal, parsed events and verdicts ride with the node.

`bundle_schema()` is the JSON Schema of one line (published at `/api/schemas/bundle`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FORMAT = "talekeeper-adventure"
VERSION = 1
MEDIA_TYPE = "application/gzip"
SUFFIX = ".talekeeper-adventure.jsonl.gz"

Text = Annotated[str, Field(max_length=1_000_000)]
Short = Annotated[str, Field(max_length=200)]
LocalId = Annotated[int, Field(ge=1, le=100_000_000)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScenarioSnapshot(_Record):
    id: Annotated[str, Field(max_length=80)]
    data: dict[str, Any] = Field(description="The scenario document as it was when exported.")


class SamplerChoice(_Record):
    preset: Short | None = Field(None, description="The sampler preset it follows, if any.")
    preset_values: dict[str, Any] | None = Field(
        None, description="That preset's values where it was exported (null: not known)."
    )
    values: dict[str, Any] = Field(
        default_factory=dict, description="Its own sampler values (they win over the preset's)."
    )


class AdventureRecord(_Record):
    title: Short
    scenario: ScenarioSnapshot | None = Field(
        None, description="The scenario it was started from, if it still existed."
    )
    plot: dict[str, Any] = Field(description="The adventure's own plot components and story cards.")
    rules: dict[str, Any] | None = Field(
        None, description="The adventure's copy of the rules (null: narrative only)."
    )
    samplers: SamplerChoice | None = Field(
        None, description="Its own samplers (Samplers in the adventure's links), if set."
    )
    canon: dict[str, Any] | None = Field(
        None,
        description="Each canon (plot texts and rules) it has had across updates from its "
        "scenario, by the update step's node (null: never updated); Undo brings them back.",
    )
    turn_count: Annotated[int, Field(ge=0)]
    root: LocalId
    head: LocalId
    created_at: datetime
    last_played_at: datetime


class Counts(_Record):
    texts: Annotated[int, Field(ge=0)] = 0
    nodes: Annotated[int, Field(ge=1)]
    memories: Annotated[int, Field(ge=0)] = 0
    summaries: Annotated[int, Field(ge=0)] = 0
    insights: Annotated[int, Field(ge=0)] = 0
    save_points: Annotated[int, Field(ge=0)] = 0


class Header(_Record):
    t: Literal["header"]
    format: Literal["talekeeper-adventure"]
    version: Literal[1]
    app_version: Short = ""
    exported_at: datetime
    counts: Counts
    adventure: AdventureRecord


class TextRecord(_Record):
    t: Literal["text"]
    digest: Annotated[str, Field(min_length=1, max_length=32)]
    text: Text


class NodeRecord(_Record):
    t: Literal["node"]
    id: LocalId
    parent: LocalId | None
    active_child: LocalId | None = Field(
        None, description="The child Redo follows; null exactly when there are none."
    )
    depth: Annotated[int, Field(ge=0)]
    kind: Annotated[str, Field(min_length=1, max_length=16)]
    action: Text = ""
    narration: Text = ""
    reasoning: Text = ""
    state: dict[str, Any] | None = Field(None, description="The state snapshot after this turn.")
    proposal: dict[str, Any] | None = Field(
        None, description="The raw proposal, parsed events and verdicts."
    )
    branch_name: Short | None = None
    take_of: LocalId | None = Field(
        None,
        description="The earlier sibling this turn tells again (a retry or an edit: a take of "
        "it); null for a turn written as a new action. Files without it group takes by action.",
    )
    model: Short = ""
    created_at: datetime


class MemoryRecord(_Record):
    t: Literal["memory"]
    id: LocalId
    node: LocalId
    first_depth: Annotated[int, Field(ge=0)]
    depth: Annotated[int, Field(ge=0)]
    text: Text
    source: Annotated[str, Field(max_length=16)] = "auto"
    pinned: bool = False
    status: Literal["active", "forgotten", "deleted"] = "active"
    uses: Annotated[int, Field(ge=0)] = 0
    last_used_depth: Annotated[int, Field(ge=0)] | None = None
    embedding: Annotated[str, Field(max_length=200_000)] | None = Field(
        None, description="float32 little-endian, base64."
    )
    embedding_dim: Annotated[int, Field(ge=0, le=20_000)] | None = None
    embedding_model: Short | None = None
    created_at: datetime
    updated_at: datetime


class SummaryRecord(_Record):
    t: Literal["summary"]
    node: LocalId
    depth: Annotated[int, Field(ge=0)]
    text: Text
    source: Annotated[str, Field(max_length=16)] = "auto"
    created_at: datetime


class InsightRecord(_Record):
    t: Literal["insight"]
    node: LocalId
    data: dict[str, Any]


class SavePointRecord(_Record):
    t: Literal["save_point"]
    node: LocalId
    name: Short
    note: Annotated[str, Field(max_length=2000)] = ""
    created_at: datetime


class EndRecord(_Record):
    t: Literal["end"]
    records: Annotated[int, Field(ge=1)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


Line = Annotated[
    Header
    | TextRecord
    | NodeRecord
    | MemoryRecord
    | SummaryRecord
    | InsightRecord
    | SavePointRecord
    | EndRecord,
    Field(discriminator="t"),
]
LINE = TypeAdapter(Line)
# The order records come in; a bundle out of order is refused.
ORDER = ("header", "text", "node", "memory", "summary", "insight", "save_point", "end")


def bundle_schema() -> dict[str, Any]:
    schema = LINE.json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "talekeeper adventure bundle: one line"
    schema["description"] = (
        "A bundle is gzip-compressed UTF-8 JSON Lines: a header, then texts, nodes, memories, "
        "summaries, insights and save points in that order, then an end record with the number "
        "of records before it and the SHA-256 of their bytes. Ids are the bundle's own."
    )
    return schema
