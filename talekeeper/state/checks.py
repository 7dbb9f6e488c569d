"""The per-event checks: references, rules and canon (layers 4–6 of `validate.py`).

One function per event type, each taking the document as it stands and an event whose
shape is already checked, and returning a `Verdict`. References are resolved first (an
unknown name is refused with the names that exist), then the rules and the canon. Doing
the same thing twice, or asking for what is already true, is `applied` with nothing to
change; only a numeric move blocked at a limit is `unchanged`.
"""

from __future__ import annotations

import re
from typing import Any

from .document import AUTHORITY_RANK, PLAYER_ID, Document, Entity, StatValue
from .events import EVENTS
from .resolve import RefProblem, bare, matches, norm, resolve_entity, resolve_stat
from .stats import plan_stat
from .verdict import Context, Verdict, noop, reject

MAX_ATTRIBUTES = 32
MAX_CONDITIONS = 16
MAX_PRESENT = 16


def _entity(document: Document, ref: str, role: str = "entity") -> str | Verdict:
    found = resolve_entity(document, ref, role)
    if isinstance(found, RefProblem):
        return reject("reference", found.reason, found.correction)
    return found


def _create_entity(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    for name in [e["name"], *e.get("aliases", [])]:
        taken = matches(doc, name)
        if taken:
            who = ", ".join(f"{doc.entities[i].name} ({i})" for i in taken)
            return reject(
                "reference",
                f"'{name}' already names {who}",
                f"Refer to {who} instead of creating it; a different one needs a distinct name.",
            )
    if "id" in e:
        if e["id"] in doc.entities:
            return reject(
                "reference",
                f"the id '{e['id']}' is taken by {doc.entities[e['id']].name}",
                "Choose an unused id, or leave id out and one is made from the name.",
            )
        new_id = e["id"]
    else:
        new_id = _unique(slug(e["name"]) or "entity", doc.entities)
    location = None
    if e.get("location") is not None:
        location = _entity(doc, e["location"], "location")
        if isinstance(location, Verdict):
            return location
    entity = Entity(
        id=new_id,
        name=e["name"],
        type=e["kind"],
        aliases=e.get("aliases", []),
        description=e.get("description", ""),
        status=e.get("status", ""),
        location=location,
    )
    return Verdict(
        "applied",
        f"created {e['name']} ({new_id})",
        new_id,
        None,
        e["name"],
        change={"op": "create_entity", "entity": entity},
    )


def slug(text: str) -> str:
    """A new id from a name: lowercase ASCII words joined by `_`, at most 40 characters."""
    words = re.findall(r"[a-z0-9]+", text.casefold())
    return "_".join(words)[:40].strip("_")


def _unique(base: str, taken: dict[str, Any] | set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def _set_status(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    eid = _entity(doc, e["entity"])
    if isinstance(eid, Verdict):
        return eid
    entity = doc.entities[eid]
    target = f"{eid}.status"
    if entity.status == e["status"]:
        return noop(f"{entity.name} is already {e['status']}", target, entity.status)
    unsaid = _unsaid(entity.name, eid, [e["status"]], ctx, target, status=True)
    if unsaid is not None:
        return unsaid
    for rule in ctx.rules.canon.forbidden_status_changes:
        if entity.status and rule.forbids(entity.status, e["status"]):
            return reject(
                "canon",
                f"canon forbids {entity.name} going from '{entity.status}' to '{e['status']}'",
                f"{entity.name} is {entity.status}; this campaign's canon does not allow "
                f"{rule.from_} → {rule.to}. Keep it so.",
                target,
            )
    return Verdict(
        "applied",
        f"{entity.name}: {entity.status or '(none)'} → {e['status']}",
        target,
        entity.status,
        e["status"],
        change={"op": "set_status", "id": eid, "status": e["status"]},
    )


def _set_attribute(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    eid = _entity(doc, e["entity"])
    if isinstance(eid, Verdict):
        return eid
    entity, key, value = doc.entities[eid], e["attribute"], e["value"]
    target = f"{eid}.attributes.{key}"
    before = entity.attributes.get(key)
    if before == value and type(before) is type(value):
        return noop(f"{entity.name}'s {key} is already {value!r}", target, value)
    if (
        value is not None
        and key not in entity.attributes
        and len(entity.attributes) >= MAX_ATTRIBUTES
    ):
        return reject(
            "rules",
            f"{entity.name} already has {MAX_ATTRIBUTES} attributes",
            f"Reuse one of {entity.name}'s attributes: {', '.join(entity.attributes)}.",
            target,
        )
    return Verdict(
        "applied",
        f"{entity.name}'s {key}: {before!r} → {value!r}",
        target,
        before,
        value,
        change={"op": "set_attribute", "id": eid, "key": key, "value": value},
    )


def _set_conditions(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    eid = _entity(doc, e["entity"])
    if isinstance(eid, Verdict):
        return eid
    entity = doc.entities[eid]
    remove = {norm(c) for c in e.get("remove", [])}
    after = [c for c in entity.conditions if norm(c) not in remove]
    for label in e.get("add", []):
        if norm(label) not in {norm(c) for c in after}:
            after.append(label)
    target = f"{eid}.conditions"
    unsaid = _unsaid(
        entity.name, eid, [c for c in after if c not in entity.conditions], ctx, target
    )
    if unsaid is not None:
        return unsaid
    if after == entity.conditions:
        return noop(f"{entity.name}'s conditions already match", target, list(after))
    if len(after) > MAX_CONDITIONS:
        return reject(
            "rules",
            f"{entity.name} would have more than {MAX_CONDITIONS} conditions",
            f"Remove conditions that no longer hold: {', '.join(entity.conditions)}.",
            target,
        )
    return Verdict(
        "applied",
        f"{entity.name}'s conditions: {', '.join(after) or '(none)'}",
        target,
        list(entity.conditions),
        after,
        change={"op": "set_conditions", "id": eid, "conditions": after},
    )


DOING = {"speak": "speaking", "move": "going somewhere", "use": "handling things"}


def _unsaid(
    name: str, eid: str, labels: list[str], ctx: Context, target: str, status: bool = False
) -> Verdict | None:
    """A story's status or condition the turn's narration contradicts (`ctx.heard`):
    it has `eid` do what the label forbids and never tells the label ("Brannoc laughs",
    the model says he is dead), or — for a status — it tells another one outright
    ("Brannoc falls asleep", the model says he died). Refused, so a small model's babble
    never kills or fells anyone the story shows otherwise; what the narration tells is
    then read from it (`telling`)."""
    heard = ctx.heard
    if heard is None or ctx.authority != "story":
        return None
    does = heard.does.get(eid, {})
    tells = heard.tells.get(eid, frozenset())
    for label in labels:
        if norm(label) in tells:
            continue
        if status and tells:
            other = sorted(tells)[0]
            return reject(
                "rules",
                f"the narration tells that {name} is {other}, not {label}",
                f"Set the status the narration tells: {name} is {other}.",
                target,
            )
        rule = ctx.rules.status_rule(label)
        for capacity in rule.forbids if rule is not None else ():
            if capacity in does:
                doing = DOING.get(capacity, capacity)
                return reject(
                    "rules",
                    f"the narration has {name} {doing} (“{does[capacity]}”) and never tells "
                    f"that {name} is {label}",
                    f"Set a status only when the narration tells it: {name} is still {doing}.",
                    target,
                )
    return None


def _chain(start: str | None, links: dict[str, str | None], stop: str) -> bool:
    """Whether following `links` from `start` reaches `stop` (guards against cycles)."""
    seen: set[str] = set()
    while start is not None and start not in seen:
        if start == stop:
            return True
        seen.add(start)
        start = links.get(start)
    return False


def _set_location(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    eid = _entity(doc, e["entity"])
    if isinstance(eid, Verdict):
        return eid
    where = None
    if e["location"] is not None:
        where = _entity(doc, e["location"], "location")
        if isinstance(where, Verdict):
            return where
    entity, target = doc.entities[eid], f"{eid}.location"
    if entity.location == where:
        return noop(f"{entity.name} is already there", target, where)
    links = {i: x.location for i, x in doc.entities.items()}
    if where is not None and _chain(where, links, eid):
        return reject(
            "rules",
            f"{entity.name} cannot be inside {doc.entities[where].name}, which is inside it",
            f"Choose a location that is not {entity.name} or within it.",
            target,
        )
    return Verdict(
        "applied",
        f"{entity.name} is now at {doc.entities[where].name if where else '(nowhere known)'}",
        target,
        entity.location,
        where,
        change={"op": "set_location", "id": eid, "location": where},
    )


def _set_possession(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    item = _entity(doc, e["item"], "item")
    if isinstance(item, Verdict):
        return item
    holder = _entity(doc, e["holder"], "holder")
    if isinstance(holder, Verdict):
        return holder
    target = f"possession {item}"
    name = doc.entities[item].name
    if item == PLAYER_ID:
        return reject(
            "rules",
            "the player cannot be held as an item",
            "Give items to the player instead.",
            target,
        )
    if doc.possessions.get(item) == holder:
        return noop(f"{doc.entities[holder].name} already holds {name}", target, holder)
    if _chain(holder, dict(doc.possessions), item):
        return reject(
            "rules",
            f"{name} cannot be held by {doc.entities[holder].name}, which it holds or is",
            f"Give {name} to someone or something it does not contain.",
            target,
        )
    return Verdict(
        "applied",
        f"{doc.entities[holder].name} now holds {name}",
        target,
        doc.possessions.get(item),
        holder,
        change={"op": "set_possession", "item": item, "holder": holder},
    )


def _clear_possession(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    item = _entity(doc, e["item"], "item")
    if isinstance(item, Verdict):
        return item
    target, name = f"possession {item}", doc.entities[item].name
    if item not in doc.possessions:
        return noop(f"no one holds {name}", target, None)
    return Verdict(
        "applied",
        f"no one holds {name} now",
        target,
        doc.possessions[item],
        None,
        change={"op": "clear_possession", "item": item},
    )


def _add_fact(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    # With no subject the fact is about the world ("the eastern bridge is washed out"):
    # the sentence is its object. A subject needs a predicate to say something about it.
    subject = ""
    predicate, obj, value = e.get("predicate", ""), e.get("object", ""), e.get("value")
    if "subject" in e:
        found = _entity(doc, e["subject"], "subject")
        if isinstance(found, Verdict):
            return found
        subject = found
        if not predicate:
            return reject(
                "shape",
                "add_fact with a subject needs a predicate",
                "Send a predicate, or leave out the subject for a fact about the world: "
                '{"type": "add_fact", "object": "the eastern bridge is washed out"}.',
                "fact",
            )
    elif not obj:
        return reject(
            "shape",
            "add_fact about the world needs its sentence in object",
            'e.g. {"type": "add_fact", "object": "the eastern bridge is washed out"}.',
            "fact",
        )
    for fact in doc.facts:
        if (
            fact.status == "active"
            and fact.subject == subject
            and norm(fact.predicate) == norm(predicate)
            and norm(fact.object) == norm(obj)
            and fact.value == value
        ):
            return noop(f"already established as {fact.id}", f"fact {fact.id}", fact.id)
    fid = _next_id("f", [f.id for f in doc.facts])
    text = " ".join(x for x in (doc.entities[subject].name if subject else "", predicate, obj) if x)
    return Verdict(
        "applied",
        f"{fid}: {text}" + (f" = {value!r}" if value is not None else ""),
        f"fact {fid}",
        None,
        text,
        change={
            "op": "add_fact",
            "id": fid,
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "value": value,
        },
    )


def _next_id(prefix: str, existing: list[str]) -> str:
    numbers = [
        int(i[len(prefix) :])
        for i in existing
        if i.startswith(prefix) and i[len(prefix) :].isdigit()
    ]
    return f"{prefix}{max(numbers, default=0) + 1}"


def _find(items: list[Any], ref: str) -> Any:
    return next((x for x in items if x.id == ref), None) or next(
        (x for x in items if norm(x.id) == norm(ref)), None
    )


def _outranked(ctx: Context, authority: str, what: str, text: str) -> Verdict | None:
    if AUTHORITY_RANK[ctx.authority] < AUTHORITY_RANK.get(authority, 0):
        who = {"canon": "the scenario's canon", "player": "the player"}.get(authority, authority)
        return reject(
            "rules",
            f"{what} was established by {who} and outranks the {ctx.authority}",
            f"{what} stands ({text}); don't contradict it.",
            what,
        )
    return None


def _withdraw_fact(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    fact = _find(doc.facts, e["fact"])
    if fact is None:
        active = [f.id for f in doc.facts if f.status == "active"][-12:]
        return reject(
            "reference",
            f"there is no fact '{e['fact']}'",
            f"Withdraw a fact by its id; active facts: {', '.join(active) or 'none'}.",
        )
    target = f"fact {fact.id}"
    if fact.status == "withdrawn":
        return noop(f"{fact.id} was already withdrawn", target, "withdrawn")
    text = " ".join(
        x
        for x in (
            doc.entities[fact.subject].name if fact.subject in doc.entities else fact.subject,
            fact.predicate,
            fact.object,
        )
        if x
    )
    outranked = _outranked(ctx, fact.authority, target, text)
    if outranked:
        return outranked
    return Verdict(
        "applied",
        f"{fact.id} withdrawn: {text}",
        target,
        "active",
        "withdrawn",
        change={"op": "withdraw_fact", "id": fact.id, "reason": e.get("reason", "")},
    )


def _add_relationship(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    source = _entity(doc, e["source"], "source")
    if isinstance(source, Verdict):
        return source
    target_id = _entity(doc, e["target"], "target")
    if isinstance(target_id, Verdict):
        return target_id
    if source == target_id:
        return reject(
            "rules",
            "a relationship needs two different entities",
            "Relate the entity to someone or something else.",
        )
    for rel in doc.relationships:
        if rel.status == "active" and (rel.source, norm(rel.kind), rel.target) == (
            source,
            norm(e["kind"]),
            target_id,
        ):
            return noop(f"already related as {rel.id}", f"relationship {rel.id}", rel.id)
    rid = _next_id("r", [r.id for r in doc.relationships])
    text = f"{doc.entities[source].name} {e['kind']} {doc.entities[target_id].name}"
    return Verdict(
        "applied",
        f"{rid}: {text}",
        f"relationship {rid}",
        None,
        text,
        change={
            "op": "add_relationship",
            "id": rid,
            "source": source,
            "kind": e["kind"],
            "target": target_id,
            "note": e.get("note", ""),
        },
    )


def _end_relationship(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    rel = _find(doc.relationships, e["relationship"])
    if rel is None:
        active = [r.id for r in doc.relationships if r.status == "active"][-12:]
        return reject(
            "reference",
            f"there is no relationship '{e['relationship']}'",
            f"End a relationship by its id; active ones: {', '.join(active) or 'none'}.",
        )
    target = f"relationship {rel.id}"
    if rel.status == "ended":
        return noop(f"{rel.id} had already ended", target, "ended")
    outranked = _outranked(ctx, rel.authority, target, f"{rel.source} {rel.kind} {rel.target}")
    if outranked:
        return outranked
    return Verdict(
        "applied",
        f"{rel.id} ended",
        target,
        "active",
        "ended",
        change={"op": "end_relationship", "id": rel.id},
    )


def _open_thread(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    same = [
        t for t in doc.threads.values() if t.status == "open" and norm(t.title) == norm(e["title"])
    ]
    if "id" in e and e["id"] in doc.threads:
        existing = doc.threads[e["id"]]
        if existing.status == "open" and norm(existing.title) == norm(e["title"]):
            return noop(f"thread {existing.id} is already open", f"thread {existing.id}", "open")
        return reject(
            "reference",
            f"the thread id '{e['id']}' is taken ({existing.title}, {existing.status})",
            "Choose an unused id, or leave id out.",
            f"thread {e['id']}",
        )
    if same and "id" not in e:
        return noop(f"thread {same[0].id} is already open", f"thread {same[0].id}", "open")
    tid = e.get("id") or _unique(slug(e["title"]) or "thread", doc.threads)
    return Verdict(
        "applied",
        f"opened {tid}: {e['title']}",
        f"thread {tid}",
        None,
        "open",
        change={
            "op": "open_thread",
            "id": tid,
            "title": e["title"],
            "kind": e.get("kind", "thread"),
            "objectives": e.get("objectives", []),
        },
    )


def _thread(doc: Document, ref: str) -> str | Verdict:
    if ref in doc.threads:
        return ref
    found = [
        t.id
        for t in doc.threads.values()
        if norm(ref) in (norm(t.id), norm(t.title)) or bare(ref) == bare(t.title)
    ]
    if len(found) == 1:
        return found[0]
    listing = (
        ", ".join(f"{t.id} ({t.title})" for t in doc.threads.values() if t.status == "open")
        or "none"
    )
    if found:
        return reject(
            "reference",
            f"thread '{ref}' is ambiguous",
            f"Name the thread by id: {', '.join(found)}.",
        )
    return reject("reference", f"there is no thread '{ref}'", f"Open threads: {listing}.")


def _complete_objective(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    tid = _thread(doc, e["thread"])
    if isinstance(tid, Verdict):
        return tid
    thread = doc.threads[tid]
    objective = _find(thread.objectives, e["objective"]) or next(
        (o for o in thread.objectives if norm(o.text) == norm(e["objective"])), None
    )
    if objective is None:
        listing = "; ".join(f"{o.id} ({o.text})" for o in thread.objectives) or "none"
        return reject(
            "reference",
            f"{tid} has no objective '{e['objective']}'",
            f"Objectives of {tid}: {listing}.",
        )
    target = f"thread {tid}.{objective.id}"
    if objective.done:
        return noop(f"{objective.id} of {tid} is already done", target, True)
    if thread.status != "open":
        return reject(
            "rules",
            f"{tid} is already {thread.status}",
            f"{tid} is closed; its objectives stay as they are.",
            target,
        )
    return Verdict(
        "applied",
        f"{tid}: done — {objective.text}",
        target,
        False,
        True,
        change={"op": "complete_objective", "thread": tid, "objective": objective.id},
    )


def _resolve_thread(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    tid = _thread(doc, e["thread"])
    if isinstance(tid, Verdict):
        return tid
    thread, target = doc.threads[tid], f"thread {tid}"
    if thread.status == e["outcome"]:
        return noop(f"{tid} is already {thread.status}", target, thread.status)
    if thread.status != "open":
        return reject(
            "rules",
            f"{tid} was already {thread.status} at turn {thread.closed}",
            f"{tid} is closed as {thread.status}; open a new thread for new business.",
            target,
        )
    return Verdict(
        "applied",
        f"{tid} {e['outcome']}: {thread.title}",
        target,
        "open",
        e["outcome"],
        change={
            "op": "resolve_thread",
            "id": tid,
            "outcome": e["outcome"],
            "note": e.get("note", ""),
        },
    )


def _set_scene(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    scene = doc.scene.model_dump()
    after = dict(scene)
    if "location" in e:
        after["location"] = None
        if e["location"] is not None:
            where = _entity(doc, e["location"], "location")
            if isinstance(where, Verdict):
                return where
            after["location"] = where
    if "present" in e:
        present: list[str] = []
        for ref in e["present"]:
            found = _entity(doc, ref)
            if isinstance(found, Verdict):
                return found
            if found not in present:
                present.append(found)
        if len(present) > MAX_PRESENT:
            return reject(
                "rules",
                f"more than {MAX_PRESENT} present",
                "Name only who is in the scene.",
                "scene",
            )
        after["present"] = present
    for key in ("time", "summary"):
        if key in e:
            after[key] = e[key]
    if after == scene:
        return noop("the scene already matches", "scene", scene)
    changed = ", ".join(k for k in after if after[k] != scene[k])
    return Verdict(
        "applied",
        f"scene: {changed}",
        "scene",
        scene,
        after,
        change={"op": "set_scene", "scene": after},
    )


def _stat(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    ref = resolve_stat(doc, ctx.rules, e["stat"])
    if isinstance(ref, RefProblem):
        return reject("reference", ref.reason, ref.correction)
    rule = ctx.rules.stat_rule(ref.owner, ref.name, ref.npc)
    assert rule is not None
    current = stat_value(doc, ref.owner, ref.name, ref.npc) or StatValue(value=rule.initial)
    plan = plan_stat(
        rule,
        ref.path,
        current.value,
        set_to=e.get("value") if e["type"] == "set_stat" else None,
        change_by=e.get("by") if e["type"] == "change_stat" else None,
        turn=ctx.turn,
        last_changed=current.changed,
        moved_this_turn=ctx.moved.get(ref.path, 0),
        paced=ctx.paced,
    )
    moved = plan.status in ("applied", "limited") and plan.value != current.value
    return Verdict(
        plan.status,
        plan.reason,
        ref.path,
        current.value,
        plan.value,
        plan.correction,
        "rules" if plan.status == "rejected" else None,
        rule.hidden,
        change={
            "op": "stat",
            "owner": ref.owner,
            "npc": ref.npc,
            "name": ref.name,
            "value": plan.value,
            "moved": plan.moved,
        }
        if moved
        else None,
    )


def stat_value(doc: Document, owner: str, name: str, npc: str | None = None) -> StatValue | None:
    block = doc.stats.npcs.get(npc or "", {}) if owner == "npc" else getattr(doc.stats, owner)
    return block.get(name)


def _set_flag(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    name = e["flag"]
    if name not in ctx.rules.flags:
        listing = ", ".join(ctx.rules.flags) or "none (this scenario declares no flags)"
        return reject("reference", f"there is no flag '{name}'", f"Flags: {listing}.")
    target, before = f"flag {name}", doc.flags.get(name, ctx.rules.flags[name].initial)
    if before == e["value"]:
        return noop(f"{name} is already {'on' if before else 'off'}", target, before)
    return Verdict(
        "applied",
        f"{name} {'on' if e['value'] else 'off'}",
        target,
        before,
        e["value"],
        change={"op": "set_flag", "name": name, "value": e["value"]},
    )


def _reach_milestone(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    mid = e["milestone"]
    if mid not in ctx.rules.milestones:
        pending = [m for m in ctx.rules.milestones if doc.milestones.get(m) is None]
        listing = "; ".join(f"{m} ({ctx.rules.milestones[m].desc})" for m in pending) or "none"
        return reject(
            "reference", f"there is no milestone '{mid}'", f"Milestones not yet reached: {listing}."
        )
    target, reached = f"milestone {mid}", doc.milestones.get(mid)
    if reached is not None:
        return noop(f"{mid} was already reached at turn {reached}", target, reached)
    return Verdict(
        "applied",
        f"milestone reached: {ctx.rules.milestones[mid].desc or mid}",
        target,
        None,
        ctx.turn,
        change={"op": "reach_milestone", "id": mid},
    )


def _note_event(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    return Verdict(
        "applied",
        f"noted: {e['text']}",
        "recent events",
        None,
        e["text"],
        change={"op": "note_event", "text": e["text"]},
    )


def _record_moment(doc: Document, e: dict[str, Any], ctx: Context) -> Verdict:
    mid = _next_id("m", [m.id for m in doc.moments])
    return Verdict(
        "applied",
        f"moment {mid} (weight {e['weight']}): {e['text']}",
        f"moment {mid}",
        None,
        e["text"],
        change={"op": "record_moment", "id": mid, "text": e["text"], "weight": e["weight"]},
    )


CHECKS = {
    "create_entity": _create_entity,
    "set_status": _set_status,
    "set_attribute": _set_attribute,
    "set_conditions": _set_conditions,
    "set_location": _set_location,
    "set_possession": _set_possession,
    "clear_possession": _clear_possession,
    "add_fact": _add_fact,
    "withdraw_fact": _withdraw_fact,
    "add_relationship": _add_relationship,
    "end_relationship": _end_relationship,
    "open_thread": _open_thread,
    "complete_objective": _complete_objective,
    "resolve_thread": _resolve_thread,
    "set_scene": _set_scene,
    "set_stat": _stat,
    "change_stat": _stat,
    "set_flag": _set_flag,
    "reach_milestone": _reach_milestone,
    "note_event": _note_event,
    "record_moment": _record_moment,
}
assert set(CHECKS) == set(EVENTS), "every allowlisted event needs a check"
