"""The state engine at work in an adventure: rules in, documents and verdicts out.

`talekeeper.state` is pure; this module does the reading and the bookkeeping around it:
which rules an adventure plays by, the document at a node, the sections the prompt
needs, settling a reply (prose out, events validated and applied) and the player's own
corrections. Everything it returns is plain JSON, ready for a node's columns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from talekeeper.context import echo
from talekeeper.service import chips
from talekeeper.service.names import Names
from talekeeper.state import (
    Document,
    Extraction,
    Report,
    Rules,
    apply_proposal,
    canon_prompt,
    compact_vocabulary,
    emit_instructions,
    empty_rules,
    extract_reply,
    load_rules,
    normalise,
    refusal_notes,
    stat_guide_words,
    state_notes,
)
from talekeeper.state.acted import ACTION
from talekeeper.state.canon import event_line, record_event
from talekeeper.state.events import EVENTS
from talekeeper.state.report import Outcome
from talekeeper.state.sentences import plain_line, same_line
from talekeeper.state.telling import heard, read_telling
from talekeeper.state.told import beyond_reading
from talekeeper.store.models import Adventure, Node
from talekeeper.story.actions import ActionKind, format_action

TEXT_CHARS = 300
"""The longest sentence field an event may carry (the event schema's own limit)."""


@lru_cache(maxsize=64)
def _rules_from_text(text: str) -> Rules:
    return load_rules(json.loads(text))


class ProposalRecord(BaseModel):
    """The audit record kept with every turn's state proposal (a node's `proposal` column).

    Built here only (a model's reply, a player's correction, an edited take) and read back
    through `ProposalRecord.of`, which tolerates records written by older releases.
    """

    model_config = ConfigDict(extra="ignore")

    source: str | None = Field(
        None, description="Who proposed it: `model`, `player` or `player_edit`."
    )
    raw: str | None = Field(None, description="The state block as the model wrote it.")
    parse_error: str | None = Field(
        None, description="Why the block could not be read, if it could not."
    )
    events: list[Any] | None = Field(None, description="The proposed events, as written.")
    report: dict[str, Any] | None = Field(None, description="The validator's verdicts (a Report).")
    edited_from: int | None = Field(None, description="The take an edit was made from.")
    kept_changes_of: int | None = Field(
        None,
        description="An edit without a state block: the take whose changes it kept (re-checked).",
    )
    dropped: list[dict[str, Any]] | None = Field(
        None, description="Notes left out, and why: they restated the narration or wrote ids."
    )
    remark: dict[str, str] | None = Field(
        None,
        description="A companion's remark the narration ends with, `{by, text}`: shown as theirs.",
    )
    read: dict[str, Any] | None = Field(
        None,
        description="The changes read from the narration (not the model's): each with the "
        "sentence that told it, its events, and the validator's verdicts (a Report).",
    )
    contradictions: list[dict[str, Any]] | None = Field(
        None,
        description="What the narration said that the state does not: kind, subject, says, "
        "state, line, the rule that fired, and the events that would make it so.",
    )
    retold: dict[str, Any] | None = Field(
        None,
        description="The narration told first and its contradictions, when it was told again "
        "once before it was shown (the setting `contradictions: retry`).",
    )
    answers: dict[str, Any] | None = Field(
        None,
        description="A correction that accepted a turn's warning: the turn and which warning.",
    )
    interrupted: str | None = Field(
        None,
        description="The turn's background state update never finished (the app stopped): "
        "why its state is as the narration left it.",
    )
    cut_off: str | None = Field(
        None,
        description="The reply reached its token limit before its state block was whole: "
        "what of its changes was taken.",
    )

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> ProposalRecord:
        try:
            return cls.model_validate(stored or {})
        except ValueError:  # a damaged record reads as an empty one; its turn still shows
            return cls()

    @property
    def proposed(self) -> bool:
        return bool(self.source or self.raw)

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump()
        for optional in (
            "edited_from",
            "kept_changes_of",
            "dropped",
            "remark",
            "read",
            "contradictions",
            "retold",
            "answers",
            "interrupted",
            "cut_off",
        ):
            if data[optional] is None:
                del data[optional]
        return data


def rules_of(adventure: Adventure) -> Rules:
    """The adventure's rules (validated once and cached by content)."""
    if not adventure.rules:
        return empty_rules()
    return _rules_from_text(json.dumps(adventure.rules, sort_keys=True))


def document_of(state: dict[str, Any] | None, rules: Rules) -> Document:
    """A node's stored state as a document, repaired section by section if damaged."""
    document, _repairs = normalise(state, rules)
    return document


def last_report(proposal: dict[str, Any] | None) -> Report | None:
    """The verdicts recorded with a node's proposal, if any."""
    report = ProposalRecord.of(proposal).report
    if report is None:
        return None
    try:
        return Report.model_validate(report)
    except ValueError:
        return None


def prompt_sections(
    rules: Rules,
    document: Document,
    story_proposal: dict[str, Any] | None,
    in_scene_ids: list[str],
    mode: str = "inline",
    turn: int | None = None,
) -> dict[str, str | None]:
    """The state engine's prompt sections for the narrator, in the order of
    docs/architecture.md "Context and memory".

    Every section a model only reads is the canon in words (`state/notes`): the rules'
    canon, the stat guide with its band words, the state as notes and last turn's refusals —
    no id, stat path or JSON. Only in `inline` mode, where the narrator writes the state
    block itself, does the protocol follow: the compact vocabulary naming the ids and stat
    paths it may write, and the emit reminder (the structured state pass gets its ids in
    its own question, `state_updates`). The canon and the stat guide never change within
    an adventure, so they stay byte-identical from turn to turn (prompt-prefix caching).
    `story_proposal` is the last *model-written* turn's record
    (`HeadView.story_proposal`): refusals are the model's feedback, so a player's refused
    correction is never presented as its own. `turn` is the turn being written.
    """
    head_proposal = story_proposal if ProposalRecord.of(story_proposal).source != "player" else None
    report = last_report(head_proposal)
    inline = mode == "inline"
    unreadable = inline and bool(ProposalRecord.of(head_proposal).parse_error)
    refusals = refusal_notes(report, document, rules, unreadable) if mode != "off" else ""
    return {
        "canon": canon_prompt(rules) or None,
        "event_vocabulary": compact_vocabulary(rules, document) if inline else None,
        "stat_guide": stat_guide_words(rules) or None,
        "current_state": state_notes(document, rules, in_scene_ids, turn),
        "refusals": refusals or None,
        "emit_reminder": emit_instructions() if inline else None,
    }


def extract_prose(reply: str) -> str:
    return extract_reply(reply).prose


@dataclass(frozen=True)
class Settled:
    """A reply read by the engine: the prose to store and the state after it. A value:
    reading the narration, a note or a key of its record answer a new one (`noted`)."""

    prose: str
    state: dict[str, Any]
    proposal: dict[str, Any]
    outcomes: list[dict[str, Any]]
    document: Document | None = None
    """`state` as a document, when it was made here (the narration is read against it)."""

    def noted(self, **record: Any) -> Settled:
        """The same, with these keys set in its record (the proposal)."""
        return replace(self, proposal={**self.proposal, **record})


def settle_reply(reply: str, before: Document, rules: Rules, turn: int) -> Settled:
    """A reply's text settled as it stands (its prose kept as written): `settle`."""
    return settle(extract_reply(reply), before, rules, turn)


def settle(extraction: Extraction, before: Document, rules: Rules, turn: int) -> Settled:
    """Step 5 (settle) of a turn, and again in step 7 (later) with the state pass's block:
    the reply read apart (its prose already kept by the turn: service/turns.py), and the
    proposed events validated and applied.

    Every proposal is kept with its raw text for audit — accepted, partly accepted,
    rejected or unparseable.
    """
    record = ProposalRecord(
        source="model",
        raw=extraction.raw_block,
        parse_error=extraction.error,
        events=(extraction.proposal or {}).get("events"),
    )
    if extraction.proposal is None:
        # Code writes the turn's recent-event line even when no block came (seed 003).
        after = record_event(before, event_line(None, extraction.prose), turn)
        return Settled(extraction.prose, after.to_json(), record.to_json(), [], after)
    proposal, dropped = without_noise(extraction.proposal, extraction.prose, before)
    record.dropped = dropped or None
    prose = extraction.prose  # a status it contradicts is refused (state/checks._unsaid)
    after, report = apply_proposal(
        before, proposal, rules, turn, heard=lambda: heard(prose, before, rules)
    )
    said = chips.said_of(after.to_json())  # the recent event in the chips' words
    after = record_event(after, event_line(report, extraction.prose, said=said), turn)
    record.report = report.to_json()
    state = after.to_json()
    return Settled(extraction.prose, state, record.to_json(), outcome_views(report, state), after)


def read_into(
    settled: Settled,
    text: str,
    start: Document,
    rules: Rules,
    turn: int,
    guard: str = "flag",
    action: str = "",
) -> Settled:
    """Read a turn's narration against the state (state/telling): `settled` with what it
    told folded in — the changes it states outright, applied after the model's own (never
    one the model already made: its outcomes name the targets) and marked in the audit as
    read from the narration, with their chips; and its clashes with the state at each
    point, kept with the record for the warning under the turn. `guard` is the setting
    `generation.contradictions` ("off": no clashes; the changes are read whatever it says).
    `action`: the turn's Do action as the page shows it (`action_words`), read for the
    player's own changes the narration leaves unsaid (state/acted), marked as read from
    the action. Called again on the same turn (its state pass settled later), it starts over."""
    before = settled.document or document_of(settled.state, rules)
    telling = read_telling(
        text,
        start,
        before,
        rules,
        turn,
        last_report(settled.proposal),
        guard=guard != "off",
        action=action,
    )
    proposal = {k: v for k, v in settled.proposal.items() if k not in ("read", "contradictions")}
    if telling.told and telling.report is not None and telling.after is not None:
        state = telling.after.to_json()
        proposal["read"] = telling.record()
        sentences = [(t.source, t.claim.sentence) for t in telling.told for _event in t.events]
        settled = replace(
            settled,
            state=state,
            document=telling.after,
            outcomes=[*settled.outcomes, *read_views(telling.report, state, sentences)],
        )
    if telling.contradictions:
        proposal["contradictions"] = [c.to_json() for c in telling.contradictions]
    return replace(settled, proposal=proposal)


def guard_remark(settled: Settled, remark: str, rules: Rules, turn: int, guard: str) -> Settled:
    """A companion's remark after the narration, guarded against the state it was made
    from (the turn's, narration read): `settled` with its clashes among the turn's warnings."""
    if guard == "off":
        return settled
    seen = settled.document or document_of(settled.state, rules)
    heard = read_telling(remark, seen, seen, rules, turn, changes=False).contradictions
    clashes = list(settled.proposal.get("contradictions") or [])
    known = {(c["kind"], c["about"]) for c in clashes}
    clashes += [c.to_json() for c in heard if (c.kind, c.about) not in known]
    return settled.noted(contradictions=clashes) if clashes else settled


def without_noise(
    proposal: dict[str, Any], prose: str, before: Document
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The proposal as the story's record may keep it (`state/sentences`): every sentence a
    model wrote into an event's text fields cut to plain story — no JSON fragment, no
    sentence said twice, no loop; and the `note_event`s and `record_moment`s that are no
    change dropped: one with nothing of story left, one that writes protocol (an `(id)`
    tag, a stat path, a readout) into the record every role reads back, a note that only
    restates the narration or a line already in the recent events (and any note after the
    turn's first: one line a turn), a moment already remembered. What was dropped, and why,
    is kept for the audit trail."""
    events = proposal.get("events")
    if not isinstance(events, list):
        return proposal, []
    kept: list[Any] = []
    dropped: list[dict[str, Any]] = []
    noted = False
    moments = [m.text for m in before.moments]
    for event in events:
        kind = event.get("type") if isinstance(event, dict) else None
        raw = event.get("text") if kind in ("note_event", "record_moment") else None
        if kind == "note_event" and isinstance(raw, str) and _copies_recent(raw, before):
            # The more telling reason first: a copied "Recently:" line may also read as a
            # stat readout ("Maren's trust: warming (4 of 10)"), but it came from the prompt.
            dropped.append({"event": event, "why": "it is already in the recent events"})
            continue
        if isinstance(raw, str) and echo.has_protocol(raw, before.entities):
            dropped.append(
                {"event": event, "why": "it wrote ids, stat paths or a stat readout, not story"}
            )
            continue
        event, why = _plain_event(event)
        text = event.get("text") if kind in ("note_event", "record_moment") else None
        if why is None and isinstance(text, str):
            if kind == "note_event" and echo.restates(text, prose):
                why = "it only restated the narration"
            elif kind == "note_event" and _copies_recent(text, before):
                why = "it is already in the recent events"
            elif kind == "note_event" and noted:
                why = "one recent event a turn"
            elif kind == "record_moment" and any(same_line(text, m) for m in moments):
                why = "that moment is already remembered"
        if why:
            dropped.append({"event": event, "why": why})
            continue
        kept.append(event)
        noted = noted or kind == "note_event"
        if kind == "record_moment" and isinstance(text, str):
            moments.append(text)
    changed = dropped or kept != events
    return ({**proposal, "events": kept}, dropped) if changed else (proposal, [])


def _copies_recent(note: str, before: Document) -> bool:
    """The note copies a line of the prompt's "Recently: a / b / c"."""
    return any(same_line(part, e.text) for part in note.split(" / ") for e in before.recent_events)


def _plain_event(event: Any) -> tuple[Any, str | None]:
    """A model's event with its sentence fields as plain story (`plain_line`), and why it
    is dropped when one of them has none left."""
    spec = EVENTS.get(event.get("type")) if isinstance(event, dict) else None
    if spec is None:
        return event, None  # the validator says what is wrong with it
    plain = dict(event)
    for field in spec.fields:
        value = event.get(field.name)
        if field.shape == "text" and isinstance(value, str):
            plain[field.name] = plain_line(value, TEXT_CHARS)
            if not plain[field.name]:
                return event, f"its {field.name} held no story, only markup or repetition"
        elif field.shape == "texts" and isinstance(value, list):
            plain[field.name] = [
                plain_line(v, TEXT_CHARS) if isinstance(v, str) else v for v in value
            ]
    return plain, None


def correct(
    before: Document, events: list[Any], rules: Rules, turn: int
) -> tuple[dict[str, Any], dict[str, Any], Report]:
    """The player's correction: the same validator, recorded as the player's."""
    after, report = apply_proposal(before, {"events": events}, rules, turn, authority="player")
    record = ProposalRecord(source="player", events=events, report=report.to_json())
    return after.to_json(), record.to_json(), report


def rederive_for_edit(
    parent: Node, original: Node, narration: str, rules: Rules, guard: str = "flag"
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """An edited narration's take: the parent's state plus what the edited text implies.

    The edited text is read again like a narration (`read_into`): where people are, who
    holds what, who is here and who sleeps or dies are what the edited words tell —
    never the earlier take's, which described the old text. What the words cannot tell
    (a stat, a switch, a goal, a fact, a moment: `told.beyond_reading`) is kept from the
    earlier take, checked again by the validator, so mending a typo loses none of it. A
    state block written into the edited text replaces all of that: it is what the edit
    implies, with what the text tells.
    """
    before = document_of(parent.state, rules)
    extraction = extract_reply(narration)
    if extraction.proposal is not None:
        settled = settle_reply(narration, before, rules, original.depth)
    else:
        settled = _keep_unread(original, extraction.prose, before, rules)
    settled = settled.noted(source="player_edit", edited_from=original.id)
    action = action_words(original.action_kind, original.action_text)
    settled = read_into(settled, settled.prose, before, rules, original.depth, guard, action)
    return settled.prose, settled.state, settled.proposal


def kept_events(proposal: dict[str, Any] | None, rules: Rules) -> list[Any]:
    """The changes of a take that an edit of its narration keeps: those the validator did
    not refuse, of kinds the narration reader cannot tell (`told.beyond_reading`), without
    the model's note of what happened (it described the old text; code writes the edited
    take's line)."""
    report = last_report(proposal)
    if report is None:
        return []
    kept = []
    for outcome in report.outcomes:
        if outcome.index is None or outcome.status == "rejected" or outcome.type == "note_event":
            continue
        part = beyond_reading(outcome.event, rules)
        if part is not None:
            kept.append(part)
    return kept


def _keep_unread(original: Node, prose: str, before: Document, rules: Rules) -> Settled:
    """An edit without a state block: the earlier take's unreadable changes, checked again."""
    turn = original.depth
    kept = kept_events(original.proposal, rules)
    if not kept:
        after = record_event(before, event_line(None, prose), turn)
        return Settled(prose, after.to_json(), ProposalRecord().to_json(), [], after)
    after, report = apply_proposal(
        before, {"events": kept}, rules, turn, heard=lambda: heard(prose, before, rules)
    )
    after = record_event(after, event_line(report, prose), turn)
    record = ProposalRecord(events=kept, report=report.to_json(), kept_changes_of=original.id)
    state = after.to_json()
    return Settled(prose, state, record.to_json(), outcome_views(report, state), after)


def remark_of(node: Node) -> dict[str, str] | None:
    """The companion's remark a turn's narration ends with, `{by, text}`, or None (an edit
    makes the whole text the player's)."""
    remark = ProposalRecord.of(node.proposal).remark or {}
    text, by = remark.get("text"), remark.get("by")
    if isinstance(text, str) and isinstance(by, str) and text and node.narration.endswith(text):
        return {"by": by, "text": text}
    return None


def outcome_views(report: Report, state: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The change chips under a turn: applied, limited, unchanged at its limit, rejected —
    each with its words (`service.chips`), naming things as `state` (a document's JSON,
    the state after the turn) does."""
    names = Names(state)
    return [outcome_view(o, names, report.authority) for o in report.outcomes]


def outcome_view(outcome: Outcome, names: Names, by: str) -> dict[str, Any]:
    """One outcome as a chip's data; `by`: story (the model), player, or narration (read
    from the narration itself)."""
    return {
        "status": outcome.status,
        "type": outcome.type,
        "target": outcome.target,
        "before": None if outcome.hidden else outcome.before,
        "after": None if outcome.hidden else outcome.after,
        "reason": outcome.reason,
        "correction": outcome.correction,
        "hidden": outcome.hidden,
        "by": by,
        "chip": chips.describe(outcome.model_dump(), names).as_dict(),
    }


KEPT_CHANGES = (
    "You edited this text: where people are, what they hold and who is here were read from "
    "it again; its other changes were kept from the original take, checked again "
    "(write a state block in the text to say otherwise)."
)
KEPT_FROM = "Kept from the original take"


def changes_of(node: Node) -> list[dict[str, Any]]:
    report = last_report(node.proposal)
    record = ProposalRecord.of(node.proposal)
    views = outcome_views(report, node.state) if report else []
    if record.kept_changes_of:
        views = [{**v, "chip": _kept_chip(v["chip"])} for v in views]
    views += read_changes_of(node)
    if record.kept_changes_of and report is not None and report.outcomes:
        views.append(_note("kept_changes", KEPT_CHANGES, "player"))
    if record.interrupted:
        views.append(_note("not_updated", record.interrupted, "model"))
    if record.cut_off:
        views.append(_note("cut_off", record.cut_off, "model"))
    return views


def _kept_chip(chip: dict[str, str]) -> dict[str, str]:
    """A kept change's chip, its tooltip saying where it came from (then why it was limited)."""
    detail = chip.get("detail") or ""
    return {**chip, "detail": f"{KEPT_FROM}. {detail}" if detail else KEPT_FROM}


CUT_IN_BLOCK = (
    "The reply reached its length limit while writing its state update: only its complete "
    "changes, and what the narration tells, were taken."
)
CUT_BEFORE_BLOCK = (
    "The reply reached its length limit before any state update it meant to write: only what "
    "the narration tells was taken."
)


def note_cut_off(settled: Settled) -> Settled:
    """A reply (inline mode) its token limit ended: unless its state block came whole, say
    so under the turn (a muted note) and in its record — what it meant to change may be
    lost, and the player should know why."""
    record = ProposalRecord.of(settled.proposal)
    if record.raw and not record.parse_error:
        return settled  # the block was whole: nothing was lost
    words = CUT_IN_BLOCK if record.raw or record.parse_error else CUT_BEFORE_BLOCK
    return replace(
        settled.noted(cut_off=words), outcomes=[*settled.outcomes, _note("cut_off", words, "model")]
    )


def _note(kind: str, words: str, by: str) -> dict[str, Any]:
    """A word under a turn that is no change (a muted note, not a chip)."""
    return {
        "status": "note",
        "type": kind,
        "target": None,
        "before": None,
        "after": None,
        "reason": words,
        "correction": None,
        "hidden": False,
        "by": by,
        "chip": chips.Chip("note", words).as_dict(),
    }


WARNING_FIELDS = ("kind", "subject", "says", "state", "line")


def stored_contradictions(node: Node) -> list[dict[str, Any]]:
    """The clashes kept with a turn (each with its rule and its correction), as stored."""
    return [c for c in ProposalRecord.of(node.proposal).contradictions or [] if isinstance(c, dict)]


def contradictions_of(node: Node) -> list[dict[str, str]]:
    """A turn's clashes as the API and the page show them — kind, subject, says, state
    and line, in words (the rule and the correction stay in Insights and the record)."""
    return [{f: str(c.get(f, "")) for f in WARNING_FIELDS} for c in stored_contradictions(node)]


READ_FROM = {"narration": "Read from the narration", ACTION: "Read from your action"}


def action_words(kind: str, text: str) -> str:
    """A Do action as the page shows it ("You walk to the keeper's cottage."), the words
    the change reader reads the player's own changes from; "" for every other kind (what
    the player says or writes as the story is no deed of theirs to read)."""
    return format_action(kind, text).removeprefix(">").strip() if kind == ActionKind.DO else ""


def read_views(
    report: Report, state: dict[str, Any] | None, sentences: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The chips of the changes read from the narration or the player's action: ordinary
    chips (`by: narration`) whose tooltip says which and quotes the sentence that told each
    one (`sentences`: (source, sentence), one per event)."""
    names = Names(state)
    views = []
    for outcome in report.outcomes:
        view = outcome_view(outcome, names, "narration")
        at = outcome.index if outcome.index is not None else -1
        source, said = sentences[at] if 0 <= at < len(sentences) else ("narration", "")
        label = READ_FROM.get(source, READ_FROM["narration"])
        view["chip"] = {**view["chip"], "detail": f"{label}: “{said}”" if said else label}
        views.append(view)
    return views


def read_changes_of(node: Node) -> list[dict[str, Any]]:
    """A stored turn's chips for the changes read from its narration."""
    record = ProposalRecord.of(node.proposal).read or {}
    try:
        report = Report.model_validate(record.get("report"))
    except ValueError:
        return []
    sentences = [
        (str(change.get("from", "narration")), str(change.get("sentence", "")))
        for change in record.get("changes") or []
        if isinstance(change, dict)
        for _event in change.get("events") or []
    ]
    return read_views(report, node.state, sentences)


def stat_views(document: Document, rules: Rules) -> list[dict[str, Any]]:
    """Every declared stat with its label, value, range and band word, for the state panel.

    A hidden stat (luck) shows its band word only: its number is never shown, to the
    player as to the model (the start form promises it)."""
    from talekeeper.state import band_label

    names = Names(document.to_json())
    rows: list[dict[str, Any]] = []

    def add(owner: str, path: str, name: str, rule: Any, live: Any) -> None:
        value = live.value if live is not None else rule.initial
        rows.append(
            {
                "owner": owner,
                "path": path,
                "name": name,
                "label": names.stat(path),
                "kind": rule.kind,
                "value": None if rule.hidden else value,
                "min": None if rule.hidden else rule.min,
                "max": None if rule.hidden else rule.max,
                "band": band_label(rule, value),
                "hidden": rule.hidden,
                "desc": rule.desc,
            }
        )

    for name, rule in rules.stats.world.items():
        add("world", f"world.{name}", name, rule, document.stats.world.get(name))
    for name, rule in rules.stats.player.items():
        add("player", f"player.{name}", name, rule, document.stats.player.get(name))
    for npc, stats in rules.stats.npcs.items():
        live = document.stats.npcs.get(npc, {})
        for name, rule in stats.items():
            add(npc, f"npc.{npc}.{name}", name, rule, live.get(name))
    return rows


def state_view(document: Document, rules: Rules) -> dict[str, Any]:
    """The state at the head, grouped the way the state panel shows it."""
    entities = document.entities
    by_type: dict[str, list[dict[str, Any]]] = {}
    for entity in entities.values():
        by_type.setdefault(entity.type or "other", []).append(entity.model_dump(mode="json"))
    return {
        "scene": document.scene.model_dump(mode="json"),
        "entities": by_type,
        "possessions": [
            {
                "item": item,
                "item_name": _name(entities, item),
                "holder": holder,
                "holder_name": _name(entities, holder),
            }
            for item, holder in document.possessions.items()
        ],
        "facts": [f.model_dump(mode="json") for f in document.facts],
        "relationships": [r.model_dump(mode="json") for r in document.relationships],
        "threads": [t.model_dump(mode="json") for t in document.threads.values()],
        "stats": stat_views(document, rules),
        "flags": [
            {
                "name": name,
                "value": value,
                "desc": rules.flags[name].desc if name in rules.flags else "",
            }
            for name, value in document.flags.items()
        ],
        "milestones": [
            {
                "id": mid,
                "reached_at": turn,
                "desc": rules.milestones[mid].desc if mid in rules.milestones else "",
            }
            for mid, turn in document.milestones.items()
        ],
        "recent_events": [e.model_dump(mode="json") for e in document.recent_events],
        "moments": [m.model_dump(mode="json") for m in document.moments],
    }


def _name(entities: dict[str, Any], entity_id: str) -> str:
    entity = entities.get(entity_id)
    return entity.name if entity is not None else entity_id


def correction_summary(report: Report, state: dict[str, Any]) -> str:
    """How a correction reads in the story, in the chips' words."""
    return chips.correction_text(outcome_views(report, state))
