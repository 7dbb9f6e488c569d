"""A story's state taken onto a scenario's newer rules: what changed, and what no longer fits.

An author fixes a typo in an NPC's description, adds a character, tightens a stat's range
or drops a flag; an adventure begun from the older scenario can take the newer rules
(`service/scenario_update.py`). Its state was built under the old ones, so it is checked
again here, declaration by declaration, comparing the old rules, the new and what the
story made of them:

- what the scenario now declares that the story lacks is added (a new character or place,
  a new stat at its initial value, a new flag, milestone, canon fact or objective);
- what the scenario changed and the story left as it was follows the scenario (an NPC's
  description, a place's name, an objective's words); what the story changed stays the
  story's, and is said;
- what the scenario no longer declares is never dropped silently: a character or place
  stays (the story knows them) and is named; a stat, flag or milestone that no longer
  exists is removed, with its last value, a canon fact no longer in the scenario is
  withdrawn, and a stat outside its new range is held to it — each said in words.

Pure: documents and rules in, a document and two lists of sentences out (`Rebased`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .document import PLAYER_ID, Document, Fact, Objective, StatValue
from .initial import initial_document
from .normalise import normalise
from .notes import stat_guide_words, words
from .rules import Rules, StatRule
from .stats import band_label, num


@dataclass
class Rebased:
    """The state under the new rules, `changes`: what the new rules change (in words),
    `findings`: what of the story's state did not fit them, and what became of it."""

    document: Document
    changes: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def rebase(document: Document, old: Rules, new: Rules) -> Rebased:
    """`document`, made under `old`, checked again against `new` (see the module doc)."""
    doc = document.model_copy(deep=True)
    was, now = initial_document(old), initial_document(new)
    out = Rebased(doc)
    _entities(doc, was, now, old, new, out)
    _stats(doc, old, new, out)
    _switches(doc, old, new, out)
    _facts(doc, was, now, out)
    _threads(doc, was, now, out)
    _canon(old, new, out)
    if stat_guide_words(old) != stat_guide_words(new):
        out.changes.append("The stat guide (what each stat means, its range and words) changed.")
    checked, repairs = normalise(doc.to_json(), new)
    out.document = checked
    out.findings += [f"Repaired: {r}." for r in repairs]
    return out


def _entities(
    doc: Document, was: Document, now: Document, old: Rules, new: Rules, out: Rebased
) -> None:
    for eid, declared in now.entities.items():
        if eid == PLAYER_ID:
            continue
        before = was.entities.get(eid)
        kind = (
            "character"
            if eid in new.cast
            else "place"
            if declared.type in ("place", "location")
            else declared.type
        )
        if before is None:
            out.changes.append(f"New {kind}: {declared.name}.")
        mine = doc.entities.get(eid)
        if mine is None:
            doc.entities[eid] = declared.model_copy(deep=True)
            holder = now.possessions.get(eid)
            if holder is not None and holder in doc.entities:
                doc.possessions[eid] = holder
            out.findings.append(f"{declared.name} joins the story (new in the scenario).")
            continue
        if before is None:
            continue  # the story made one of the same id first: the story's stays
        for attribute, label in (("name", "name"), ("description", "description")):
            old_value, new_value = getattr(before, attribute), getattr(declared, attribute)
            if old_value == new_value:
                continue
            out.changes.append(f"{declared.name}'s {label} changed.")
            if getattr(mine, attribute) == old_value:
                setattr(mine, attribute, new_value)
            else:
                out.findings.append(
                    f"{mine.name}'s {label} was changed by the story; the story's is kept."
                )
        if before.aliases != declared.aliases and mine.aliases == before.aliases:
            mine.aliases = list(declared.aliases)
    for eid, before in was.entities.items():
        if eid != PLAYER_ID and eid not in now.entities:
            out.changes.append(f"{before.name} is no longer in the scenario.")
            if eid in doc.entities:
                out.findings.append(
                    f"{doc.entities[eid].name} is no longer in the scenario; kept in the story, "
                    "which knows them."
                )
    for cid, member in new.cast.items():
        previous = old.cast.get(cid)
        if previous is not None and previous != member:
            out.changes.append(
                f"{member.name}'s own material (who they are, what they know or may do) changed."
            )


def _declared_stats(rules: Rules) -> dict[tuple[str, str, str | None], StatRule]:
    found: dict[tuple[str, str, str | None], StatRule] = {}
    found.update({("world", n, None): r for n, r in rules.stats.world.items()})
    found.update({("player", n, None): r for n, r in rules.stats.player.items()})
    for npc, block in rules.stats.npcs.items():
        found.update({("npc", n, npc): r for n, r in block.items()})
    return found


def _stat_name(doc: Document, owner: str, name: str, npc: str | None) -> str:
    if owner == "npc":
        who = doc.entities[npc].name if npc in doc.entities else words(npc or "")
        return f"{who}'s {words(name)}"
    return f"your {words(name)}" if owner == "player" else f"the {words(name)}"


def _live(doc: Document, owner: str, npc: str | None) -> dict[str, StatValue]:
    if owner == "npc":
        return doc.stats.npcs.setdefault(npc or "", {})
    return doc.stats.player if owner == "player" else doc.stats.world


def _stats(doc: Document, old: Rules, new: Rules, out: Rebased) -> None:
    before, after = _declared_stats(old), _declared_stats(new)
    for key, rule in after.items():
        owner, name, npc = key
        said = _stat_name(doc, owner, name, npc)
        live = _live(doc, owner, npc)
        if key not in before:
            out.changes.append(f"New stat: {said}.")
        elif before[key] != rule:
            out.changes.append(f"The rules of {said} changed.")
        current = live.get(name)
        if current is None:
            live[name] = StatValue(value=rule.initial)
            out.findings.append(f"{_cap(said)} starts at {_shown(rule, rule.initial)}.")
            continue
        value = current.value
        if isinstance(value, str) != (rule.kind == "text"):
            live[name] = StatValue(value=rule.initial, changed=current.changed)
            out.findings.append(
                f"{_cap(said)} is now a {'few words' if rule.kind == 'text' else 'number'}; "
                f"it was {_shown(rule, value)}, and starts again at {_shown(rule, rule.initial)}."
            )
            continue
        if isinstance(value, int | float):
            held = min(value, rule.max) if rule.max is not None else value
            held = max(held, rule.min) if rule.min is not None else held
            if held != value:
                held = int(held) if rule.integer else held
                live[name] = StatValue(value=held, changed=current.changed)
                out.findings.append(
                    f"{_cap(said)} was {_shown(rule, value)}, outside its new "
                    f"range; held to {_shown(rule, held)}."
                )
    for key, rule in before.items():
        if key in after:
            continue
        owner, name, npc = key
        said = _stat_name(doc, owner, name, npc)
        out.changes.append(f"{_cap(said)} is no longer a stat.")
        live = _live(doc, owner, npc)
        if name in live:
            last = live.pop(name).value
            out.findings.append(
                f"{_cap(said)} is no longer a stat in the scenario; removed "
                f"(it was {_shown(rule, last)})."
            )
    doc.stats.npcs = {npc: block for npc, block in doc.stats.npcs.items() if block}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _shown(rule: StatRule, value: Any) -> str:
    """A stat's value as the player may read it: a hidden stat as its band word."""
    if isinstance(value, str):
        return f"“{value}”"
    if rule.hidden:
        return band_label(rule, value) or "hidden"
    return num(value)


def _switches(doc: Document, old: Rules, new: Rules, out: Rebased) -> None:
    for name, flag in new.flags.items():
        said = flag.desc or words(name)
        if name not in old.flags:
            out.changes.append(f"New switch: {said}.")
        if name not in doc.flags:
            doc.flags[name] = flag.initial
    for name, flag in old.flags.items():
        if name not in new.flags:
            said = flag.desc or words(name)
            out.changes.append(f"The switch “{said}” is gone.")
            if name in doc.flags:
                was = doc.flags.pop(name)
                out.findings.append(
                    f"The switch “{said}” is no longer in the scenario; removed (it was "
                    f"{'on' if was else 'off'})."
                )
    for mid, milestone in new.milestones.items():
        if mid not in old.milestones:
            out.changes.append(f"New goal: {milestone.desc or words(mid)}.")
        elif old.milestones[mid].desc != milestone.desc:
            out.changes.append(f"A goal now reads: {milestone.desc or words(mid)}.")
        doc.milestones.setdefault(mid, None)
    for mid, milestone in old.milestones.items():
        if mid not in new.milestones:
            said = milestone.desc or words(mid)
            out.changes.append(f"The goal “{said}” is gone.")
            if mid in doc.milestones:
                reached = doc.milestones.pop(mid)
                out.findings.append(
                    f"The goal “{said}” is no longer in the scenario; removed"
                    + (f" (it was reached on turn {reached})." if reached is not None else ".")
                )


def _fact_key(fact: Fact) -> tuple[str, str, str, Any]:
    return (fact.subject, fact.predicate, fact.object, fact.value)


def _fact_words(doc: Document, fact: Fact) -> str:
    subject = doc.entities[fact.subject].name if fact.subject in doc.entities else fact.subject
    text = " ".join(x for x in (subject, fact.predicate, fact.object) if x)
    return text + (f": {fact.value}" if fact.value is not None else "")


def _facts(doc: Document, was: Document, now: Document, out: Rebased) -> None:
    old_keys = {_fact_key(f) for f in was.facts}
    new_keys = {_fact_key(f) for f in now.facts}
    canon = {_fact_key(f): f for f in doc.facts if f.authority == "canon" and f.status == "active"}
    used = {f.id for f in doc.facts}
    for fact in now.facts:
        key = _fact_key(fact)
        if key in old_keys or key in canon:
            continue
        out.changes.append(f"New fact: {_fact_words(doc, fact)}.")
        n = len(used) + 1
        while f"f{n}" in used:
            n += 1
        used.add(f"f{n}")
        doc.facts.append(fact.model_copy(update={"id": f"f{n}"}))
    for key, fact in canon.items():
        if key in old_keys and key not in new_keys:
            out.changes.append(f"No longer a fact of the scenario: {_fact_words(doc, fact)}.")
            fact.status = "withdrawn"
            fact.withdrawn_by = "canon"
            fact.withdrawn_reason = "no longer in the scenario"
            out.findings.append(
                f"“{_fact_words(doc, fact)}” is no longer a fact of the scenario; withdrawn (the "
                "story's own facts stay)."
            )


def _threads(doc: Document, was: Document, now: Document, out: Rebased) -> None:
    for tid, declared in now.threads.items():
        before = was.threads.get(tid)
        mine = doc.threads.get(tid)
        if before is None:
            out.changes.append(f"New quest: {declared.title} (not opened: the story decides).")
            continue
        if mine is None:
            continue
        if before.title != declared.title:
            out.changes.append(f"The quest “{before.title}” is now called “{declared.title}”.")
            if mine.title == before.title:
                mine.title = declared.title
        old_texts = {o.id: o.text for o in before.objectives}
        for objective in declared.objectives:
            current = next((o for o in mine.objectives if o.id == objective.id), None)
            if current is None:
                mine.objectives.append(Objective(id=objective.id, text=objective.text))
                out.changes.append(f"New step in “{mine.title}”: {objective.text}.")
                if mine.status == "open":
                    out.findings.append(f"“{mine.title}” has a new step: {objective.text}.")
            elif old_texts.get(objective.id) != objective.text:
                out.changes.append(f"A step of “{mine.title}” now reads: {objective.text}.")
                if current.text == old_texts.get(objective.id):
                    current.text = objective.text
        gone = [o for o in before.objectives if o.id not in {d.id for d in declared.objectives}]
        for objective in gone:
            out.changes.append(f"A step of “{mine.title}” is gone: {objective.text}.")
            out.findings.append(
                f"“{objective.text}” is no longer a step of “{mine.title}” in the scenario; kept "
                "in the story's quest."
            )


def _canon(old: Rules, new: Rules, out: Rebased) -> None:
    for rule in new.canon.rules:
        if rule not in old.canon.rules:
            out.changes.append(f"New canon: {rule}")
    for rule in old.canon.rules:
        if rule not in new.canon.rules:
            out.changes.append(f"No longer canon: {rule}")
    if old.canon.forbidden_status_changes != new.canon.forbidden_status_changes:
        out.changes.append("The status changes the canon forbids changed.")
