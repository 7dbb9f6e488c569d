"""The state, the rules and last turn's refusals, in the words the model reads.

Three kinds of text, kept apart because the prompt caches differently around them:

- stable per scenario — `vocabulary_prompt()`, `stat_guide(rules)`, `canon_prompt(rules)`:
  byte-identical every turn, so they sit early in the prompt and stay cached;
- per turn — `state_for_prompt(...)`: the current state, compact, naming every id and
  stat path the model may use (seed 001: a milestone whose id never reached the prompt
  was never once marked);
- feedback — `refusals_for_prompt(report)`: only what was lost entirely last turn. A
  partial limit is not mentioned, or the model treats the shortfall as a debt.

Hidden stats appear only as their band label, never as a number, anywhere here.
"""

from __future__ import annotations

import json

from .canon import narrator_moments
from .document import PLAYER_ID, Document
from .events import EVENTS, SHAPES
from .report import LOST, Report
from .resolve import document_name
from .rules import Rules, StatRule
from .stats import band_label, num

# --- stable sections --------------------------------------------------------------------


def vocabulary_prompt() -> str:
    """The event vocabulary, generated from the allowlist itself so the two cannot drift."""
    lines = [
        'State events — the only changes you may propose. Each is a JSON object with a "type"; '
        "fields marked ? are optional. Entities are named by name or id.",
    ]
    for spec in EVENTS.values():
        fields = ", ".join(f"{f.name}{'' if f.required else '?'}" for f in spec.fields)
        example = json.dumps({"type": spec.type, **spec.example}, ensure_ascii=False)
        lines.append(f"- {spec.type} {{{fields}}}: {spec.summary}. e.g. {example}")
    lines.append(
        "set_stat takes an absolute value; change_stat a signed amount (negative lowers). "
        "Stat paths: " + SHAPES["stat"].help + "."
    )
    return "\n".join(lines)


CORE_EVENTS = (
    "create_entity",
    "set_location",
    "set_possession",
    "set_status",
    "add_fact",
    "open_thread",
    "note_event",
)
SHORT_EXAMPLES: dict[str, dict[str, object]] = {
    "create_entity": {"name": "Oda Fenn", "kind": "person"},
    "open_thread": {"title": "Find the ledger"},
    "note_event": {"text": "The bridge fell."},
}


SHOWN = frozenset(
    {
        "set_location",
        "set_possession",
        "change_stat",
        "set_flag",
        "reach_milestone",
        "complete_objective",
    }
)
"""The event types the vocabulary shows as a whole JSON example — the common moves, and
those whose ids must be copied exactly (stat paths, flags, milestones, objectives); the
rest are named with their fields, which the examples' shape carries over to."""


def compact_vocabulary(rules: Rules, document: Document) -> str:
    """The event vocabulary for this scenario at this moment: only the event types it can
    use (no stat events without stats, no flags without flags…), the common and id-bound
    ones as a short example each, written with its own names, stat paths, flags,
    milestones and thread ids, the rest by their fields.

    A fraction of `vocabulary_prompt()`: in inline mode it is sent every turn, and it is
    protocol, not story — kept to at most 15% of the prompt of a played story
    (`benchmarks/prompt_sections.py --model echo --mode inline`)."""
    doc = document
    examples: dict[str, dict[str, object]] = {
        t: dict(SHORT_EXAMPLES.get(t, EVENTS[t].example)) for t in CORE_EVENTS
    }
    people = [
        e.name
        for i, e in doc.entities.items()
        if i != PLAYER_ID and e.type in ("person", "npc", "character")
    ]
    things = [e.name for e in doc.entities.values() if e.type in ("item", "thing", "object")]
    places = [e.name for e in doc.entities.values() if e.type in ("place", "location")]
    if people:
        examples["set_status"] = {"entity": people[0], "status": "injured"}
        examples["add_fact"] = {"subject": people[0], "predicate": "owes", "object": "you a favour"}
    if places:
        examples["set_location"] = {"entity": "player", "location": places[0]}
    if things:
        examples["set_possession"] = {"item": things[0], "holder": "player"}
    stats = _all_stats(rules)
    numeric = [(p, r) for p, r in stats if r.kind != "text"]
    if numeric:
        path, rule = numeric[0]
        examples["change_stat"] = {"stat": path, "by": 1 if rule.kind == "counter" else -1}
    texts = [(p, r) for p, r in stats if r.kind == "text"]
    if texts:
        examples["set_stat"] = {"stat": texts[0][0], "value": "a few words"}
    elif numeric:
        path, rule = numeric[-1]
        examples["set_stat"] = {
            "stat": path,
            "value": rule.initial if rule.initial is not None else rule.min or 0,
        }
    if rules.flags:
        examples["set_flag"] = {"flag": next(iter(rules.flags)), "value": True}
    pending = [m for m in rules.milestones if doc.milestones.get(m) is None]
    if pending:
        examples["reach_milestone"] = {"milestone": pending[0]}
    threads = [t for t in doc.threads.values() if t.status == "open"]
    objectives = [(t.id, o.id) for t in threads for o in t.objectives if not o.done]
    if objectives:
        examples["complete_objective"] = {"thread": objectives[0][0], "objective": objectives[0][1]}
    if threads:
        examples["resolve_thread"] = {"thread": threads[0].id, "outcome": "resolved"}
    ordered = sorted(examples.items(), key=lambda pair: EVENT_ORDER.index(pair[0]))
    lines = ["State events, one JSON object each; only these types:"]
    lines += [
        json.dumps({"type": t, **example}, ensure_ascii=False)
        for t, example in ordered
        if t in SHOWN
    ]
    others = [f"{t} {{{', '.join(example)}}}" for t, example in ordered if t not in SHOWN]
    if others:
        lines.append("Also: " + "; ".join(others) + ".")
    if stats:
        lines.append("Stats: " + ", ".join(p for p, _ in stats) + ".")
    if rules.flags:
        lines.append("Flags: " + ", ".join(rules.flags) + ".")
    if pending:
        lines.append("Milestones: " + ", ".join(pending) + ".")
    if objectives:
        lines.append("Objectives: " + ", ".join(f"{t} {o}" for t, o in objectives) + ".")
    return "\n".join(lines)


EVENT_ORDER = tuple(EVENTS)


def stat_guide(rules: Rules) -> str:
    """The fixed legend: each stat's description and its whole band ladder, plus the
    flags. Hidden stats show only their labels in order, never the numbers."""
    lines: list[str] = []
    for path, rule in _all_stats(rules):
        lines.append(f"- {path}: {_guide_line(rule)}")
    for name, flag in rules.flags.items():
        lines.append(f"- flag {name}: {flag.desc or 'on/off'}")
    return "Stat guide:\n" + "\n".join(lines) if lines else ""


def _all_stats(rules: Rules) -> list[tuple[str, StatRule]]:
    out = [(f"world.{n}", r) for n, r in rules.stats.world.items()]
    out += [(f"player.{n}", r) for n, r in rules.stats.player.items()]
    for npc, block in rules.stats.npcs.items():
        out += [(f"npc.{npc}.{n}", r) for n, r in block.items()]
    return out


def _guide_line(rule: StatRule) -> str:
    parts = [rule.desc] if rule.desc else []
    if rule.kind == "text":
        parts.append(f"text, at most {rule.max_length} characters; set it with set_stat")
    elif rule.hidden:
        parts.append(
            "from low to high: "
            + " < ".join(b.label for b in rule.bands)
            + " (its number is hidden)"
        )
    else:
        if rule.min is not None and rule.max is not None:
            parts.append(f"{num(rule.min)} to {num(rule.max)}")
        elif rule.min is not None:
            parts.append(f"at least {num(rule.min)}")
        elif rule.max is not None:
            parts.append(f"at most {num(rule.max)}")
        if rule.bands:
            parts.append(" · ".join(f"{num(b.lo)} to {num(b.hi)} {b.label}" for b in rule.bands))
    if rule.kind == "counter":
        parts.append("counter: only rises")
    if rule.max_change_per_turn is not None and not rule.hidden:
        parts.append(f"moves at most {num(rule.max_change_per_turn)} per turn")
    elif rule.max_change_per_turn is not None:
        parts.append("moves only a little per turn")
    if rule.cooldown:
        parts.append(f"then rests {rule.cooldown} turn{'s' if rule.cooldown != 1 else ''}")
    return "; ".join(parts) or "no description"


def canon_prompt(rules: Rules) -> str:
    """The scenario's canon: its rules in words and the status changes it forbids."""
    lines = [f"- {rule}" for rule in rules.canon.rules]
    lines += [
        f"- Nothing goes from {_status(c.from_)} to {_status(c.to)}."
        for c in rules.canon.forbidden_status_changes
    ]
    return "Canon:\n" + "\n".join(lines) if lines else ""


def _status(pattern: str) -> str:
    return "any status" if pattern == "*" else f"'{pattern}'"


# --- the current state ------------------------------------------------------------------


def _value(rule: StatRule | None, value: float | int | str) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if rule is None:
        return num(value)
    label = band_label(rule, value)
    if rule.hidden:
        return label or "(hidden)"
    text = f"{num(value)}/{num(rule.max)}" if rule.max is not None else num(value)
    return f"{text} ({label})" if label else text


def _stats_line(doc: Document, rules: Rules, owner: str, npc: str | None = None) -> str:
    if owner == "npc":
        declared, live, prefix = (
            rules.stats.npcs.get(npc or "", {}),
            doc.stats.npcs.get(npc or "", {}),
            f"npc.{npc}",
        )
    else:
        declared, live, prefix = getattr(rules.stats, owner), getattr(doc.stats, owner), owner
    parts = []
    for name, rule in declared.items():
        current = live.get(name)
        parts.append(f"{prefix}.{name} {_value(rule, current.value if current else rule.initial)}")
    return ", ".join(parts)


def _entity_line(doc: Document, eid: str) -> str:
    e = doc.entities[eid]
    bits = [f"{e.name} ({eid})" if e.type == eid else f"{e.name} ({eid}, {e.type})"]
    if e.status:
        bits.append(e.status)
    if e.location:
        bits.append(f"at {document_name(doc, e.location)}")
    if e.conditions:
        bits.append("conditions: " + ", ".join(e.conditions))
    if e.attributes:
        bits.append(", ".join(f"{k}: {v}" for k, v in e.attributes.items()))
    held = [document_name(doc, item) for item, holder in doc.possessions.items() if holder == eid]
    if held:
        bits.append("holds " + ", ".join(held))
    return " — ".join(bits)


LABELS = (
    "Canon",
    "Stat guide",
    "Scene",
    "Present",
    "Now",
    "Your stats",
    "World",
    "Here",
    "Elsewhere",
    "Flags",
    "Goals",
    "Achieved",
    "Open threads",
    "Facts",
    "No longer true",
    "Relationships",
    "Recently",
    "Not forgotten",
    "Also",
    "Stats",
    "Milestones",
    "Objectives",
)
"""The labels this module's notes write ("Scene: …", "Recently: …"; not "You:", which a
reply may use as a speaker's): a reply line that opens with one copies the notes' form,
whatever follows (context/echo)."""


def state_for_prompt(
    document: Document, rules: Rules, in_scene_ids: list[str] | None = None
) -> str:
    """The current state as compact text for the prompt.

    `in_scene_ids` are the NPCs in scene this turn (default: the scene's `present`), as
    the context layer detects them; only their stats are shown. Every id, stat path, flag and milestone id the model may
    use is named. Facts the player established are marked as theirs, and withdrawn facts
    are named as no longer true.
    """
    doc = document
    present = [i for i in doc.scene.present if i in doc.entities]
    # Who the scene says is present is always in scene, whatever the recent text calls them.
    in_scene = [i for i in dict.fromkeys([*present, *(in_scene_ids or [])]) if i in doc.entities]
    lines: list[str] = []
    scene = doc.scene
    where = (
        document_name(doc, scene.location) + f" ({scene.location})" if scene.location else "unknown"
    )
    head = f"Scene: {where}" + (f", {scene.time}" if scene.time else "")
    if present:
        head += ". Present: " + ", ".join(f"{document_name(doc, i)} ({i})" for i in present)
    lines.append(head + ".")
    if scene.summary:
        lines.append(f"Now: {scene.summary}")
    lines.append("You: " + _entity_line(doc, PLAYER_ID))
    if rules.stats.player:
        lines.append("Your stats: " + _stats_line(doc, rules, "player"))
    if rules.stats.world:
        lines.append("World: " + _stats_line(doc, rules, "world"))
    for npc in in_scene:
        if npc in rules.stats.npcs:
            lines.append(f"{document_name(doc, npc)}: " + _stats_line(doc, rules, "npc", npc))
    here = _in_view(doc, list(dict.fromkeys([*present, *filter(doc.may_be_here, in_scene)])))
    if here:
        lines.append("Here:")
        lines += [f"- {_entity_line(doc, i)}" + _described(doc, i, in_scene) for i in here]
    elsewhere = [i for i in doc.entities if i != PLAYER_ID and i not in here]
    if elsewhere:
        lines.append("Elsewhere: " + ", ".join(_brief(doc, i) for i in elsewhere))
    if rules.flags:
        lines.append(
            "Flags: "
            + ", ".join(
                f"{n} {'on' if doc.flags.get(n, f.initial) else 'off'}"
                for n, f in rules.flags.items()
            )
        )
    pending = [m for m in rules.milestones if doc.milestones.get(m) is None]
    reached = [m for m in rules.milestones if doc.milestones.get(m) is not None]
    if pending:
        lines.append(
            "Goals (mark with reach_milestone): "
            + "; ".join(f"{m} — {rules.milestones[m].desc}" for m in pending)
        )
    if reached:
        lines.append("Achieved: " + "; ".join(f"{m} — {rules.milestones[m].desc}" for m in reached))
    open_threads = [t for t in doc.threads.values() if t.status == "open"]
    if open_threads:
        lines.append("Open threads:")
        for t in open_threads:
            objectives = "; ".join(
                f"{o.id} {'[done] ' if o.done else ''}{o.text}" for o in t.objectives
            )
            lines.append(
                f"- {t.id} ({t.kind}): {t.title}" + (f" — {objectives}" if objectives else "")
            )
    active = [f for f in doc.facts if f.status == "active"]
    if active:
        lines.append("Facts:")
        lines += [
            f"- {f.id}: {_fact_text(doc, f)}"
            + (" [set by the player; it stands]" if f.authority == "player" else "")
            for f in active
        ]
    withdrawn = [f for f in doc.facts if f.status == "withdrawn"]
    if withdrawn:
        lines.append("No longer true:")
        lines += [
            f"- {f.id}: {_fact_text(doc, f)}"
            + (f" ({f.withdrawn_reason})" if f.withdrawn_reason else "")
            for f in withdrawn
        ]
    rels = [r for r in doc.relationships if r.status == "active"]
    if rels:
        lines.append(
            "Relationships: "
            + "; ".join(
                f"{r.id}: {document_name(doc, r.source)} {r.kind} {document_name(doc, r.target)}"
                for r in rels
            )
        )
    if doc.recent_events:
        lines.append("Recently: " + " / ".join(e.text for e in doc.recent_events))
    turn = max([0, *(e.turn for e in doc.recent_events), *(m.turn for m in doc.moments)])
    memorable = narrator_moments(doc, turn)
    if memorable:
        lines.append("Not forgotten: " + " / ".join(memorable))
    return "\n".join(lines)


def _described(doc: Document, eid: str, in_scene: list[str]) -> str:
    """A character in scene comes with their description (what anyone could see), so the
    narrator can write them; private knowledge is never here (it is not in the document)."""
    entity = doc.entities[eid]
    return f" — {entity.description}" if eid in in_scene and entity.description else ""


def _in_view(doc: Document, present: list[str]) -> list[str]:
    """Entities shown in full: the scene's place, who is present, what they and the
    player hold, and what is located in the scene's place."""
    ids = [doc.scene.location] if doc.scene.location else []
    ids += present
    holders = {PLAYER_ID, *present}
    ids += [item for item, holder in doc.possessions.items() if holder in holders]
    ids += [
        i
        for i, e in doc.entities.items()
        if doc.scene.location and e.location == doc.scene.location
    ]
    return [i for i in dict.fromkeys(ids) if i in doc.entities and i != PLAYER_ID]


def _brief(doc: Document, eid: str) -> str:
    e = doc.entities[eid]
    return f"{e.name} ({eid}{', ' + e.status if e.status else ''})"


def _fact_text(doc: Document, fact) -> str:  # type: ignore[no-untyped-def]
    subject = document_name(doc, fact.subject) if fact.subject else ""  # "": a fact about the world
    text = " ".join(x for x in (subject, fact.predicate, fact.object) if x)
    return text + (f": {fact.value}" if fact.value is not None else "")


# --- feedback ---------------------------------------------------------------------------


def refusals_for_prompt(report: Report | None, unreadable: str | None = None) -> str:
    """What was lost entirely last turn — rejected, or unchanged at its limit — each with
    its correction. Limited changes are left out on purpose. `unreadable` is the
    extraction error when last turn's state block could not be read (or was cut off).
    Empty when nothing was lost."""
    lost = [o for o in report.outcomes if o.status in LOST] if report is not None else []
    if not lost and not unreadable:
        return ""
    lines = ["Last turn these proposed changes did NOT happen (the state above is what is true):"]
    if unreadable:
        lines.append(
            f"- the state block: {unreadable}; what could not be read was not applied. "
            "Send one ```state block holding valid JSON, and only complete events."
        )
    for o in lost:
        what = _event_text(o.event) if o.index is not None else "the state block"
        verdict = "no change — at its limit" if o.status == "unchanged" else "refused"
        line = f"- {what}: {verdict}: {o.reason}."
        if o.correction:
            line += f" {o.correction}"
        lines.append(line)
    return "\n".join(lines)


def _event_text(event: object) -> str:
    try:
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = str(event)
    return text if len(text) <= 140 else text[:139] + "…"
