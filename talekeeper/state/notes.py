"""The canon in words: the one renderer of the story's state for every role a model plays.

A model that only reads the state — the narrator in `structured` and `off` modes, an NPC
in dialogue, a companion's remark — needs no id, so it is given none: a small model given
`Maren (maren, person) — alive` or `player.health 10/10` copies it into the story (11 of
14 narrations in a played demo). Here every fact that matters to the scene is kept, said
the way a story would: names, places, who is in the scene and what they look like, who
holds what and how many, the stat guide and the stats as band words (a number only where
the scenario lets the player see it; hidden stats only as their band word), facts as
sentences, and the moments heavy enough not to be forgotten. Each role takes what it
needs (`service/context`): the NPC adds its private knowledge, the companion the moment it
raises. Only where a model must write ids — the inline block's vocabulary and the
structured state pass — does the id-ful text of `prompt.py` go.
"""

from __future__ import annotations

import re
from typing import Any

from .canon import narrator_moments
from .document import PLAYER_ID, Document
from .report import LOST, Report
from .rules import Rules, StatRule
from .stats import band_label, num


def words(name: str) -> str:
    """An id or key as words: `lamp_oil` → "lamp oil"."""
    return name.replace("_", " ").replace("-", " ").strip()


def _name(doc: Document, ref: Any) -> str:
    """An entity's name for an id (or a name the model wrote), never a bare id."""
    if not isinstance(ref, str) or not ref:
        return "someone"
    entity = doc.entities.get(ref)
    if entity is not None:
        return "you" if ref == PLAYER_ID else entity.name
    return _plain(ref) or "someone"


def _stat(rule: StatRule, value: Any) -> str:
    """A stat's value as the narrator may see it: band words, and the number only when
    the stat is not hidden."""
    if isinstance(value, str):
        return f'"{value}"'
    label = band_label(rule, value)
    if rule.hidden:
        return label or "unknown"
    amount = f"{num(value)} of {num(rule.max)}" if rule.max is not None else num(value)
    return f"{label} ({amount})" if label else amount


def _stats(doc: Document, rules: Rules, owner: str, npc: str | None = None) -> list[str]:
    if owner == "npc":
        declared, live = rules.stats.npcs.get(npc or "", {}), doc.stats.npcs.get(npc or "", {})
    else:
        declared, live = getattr(rules.stats, owner), getattr(doc.stats, owner)
    out = []
    for name, rule in declared.items():
        current = live.get(name)
        out.append(f"{words(name)}: {_stat(rule, current.value if current else rule.initial)}")
    return out


def _item(doc: Document, eid: str) -> str:
    """A thing's name with its quantity when it is more (or less) than one: "coin (3)"."""
    name = _name(doc, eid)
    entity = doc.entities.get(eid)
    quantity = entity.attributes.get("quantity") if entity is not None else None
    if isinstance(quantity, int | float) and not isinstance(quantity, bool) and quantity != 1:
        return f"{name} ({num(quantity)})"
    return name


def _holds(doc: Document, holder: str) -> list[str]:
    return [_item(doc, item) for item, who in doc.possessions.items() if who == holder]


def _description(doc: Document, eid: str) -> str:
    """What anyone could see of someone in the scene, as a clause ("a sellsword in…")."""
    text = " ".join(doc.entities[eid].description.split()).rstrip(".")
    first, _, rest = text.partition(" ")
    if first in ("A", "An", "The") and rest:
        text = f"{first.lower()} {rest}"
    return text


def _person(doc: Document, eid: str, described: bool = False) -> str:
    """One line about someone or something in view: name, status, conditions, what they
    hold, their attributes — in words; with what they look like when `described`."""
    e = doc.entities[eid]
    bits = [e.name]
    if e.status:
        bits.append(e.status)
    if e.conditions:
        bits.append(", ".join(e.conditions))
    attributes = {k: v for k, v in e.attributes.items() if k != "quantity"}
    if attributes:
        bits.append(", ".join(f"{words(k)} {v}" for k, v in attributes.items()))
    held = _holds(doc, eid)
    if held:
        bits.append("holding " + ", ".join(held))
    line = ", ".join([_item(doc, eid), *bits[1:]])
    about = _description(doc, eid) if described else ""
    return f"{line} — {about}" if about else line


def _in_view(doc: Document, present: list[str]) -> list[str]:
    """What is shown in full: who is present, what they hold, what lies in the place."""
    ids = list(present)
    holders = {PLAYER_ID, *present}
    ids += [item for item, holder in doc.possessions.items() if holder in holders]
    ids += [
        i
        for i, e in doc.entities.items()
        if doc.scene.location and e.location == doc.scene.location
    ]
    return [
        i
        for i in dict.fromkeys(ids)
        if i in doc.entities and i not in (PLAYER_ID, doc.scene.location)
    ]


_THE_PLAYER = re.compile(r"\bthe player(['’]s)?\b", re.I)


def _you(text: str) -> str:
    """A scenario's "the player" as the story says it: "you", "your"."""
    return _THE_PLAYER.sub(lambda m: "your" if m.group(1) else "you", text)


def _fact(doc: Document, fact: Any) -> str:
    """A fact as a sentence: "Oda Fenn is the harbourmaster"; a fact about the world (no
    subject) is its own sentence ("The eastern bridge is washed out")."""
    obj = _name(doc, fact.object) if fact.object in doc.entities else fact.object
    subject = _name(doc, fact.subject) if fact.subject else ""
    text = " ".join(x for x in (subject, words(fact.predicate), obj) if x)
    if fact.value is not None:
        text += f": {fact.value}"
    text = _you(" ".join(text.split())).rstrip(".")
    return text[0].upper() + text[1:] if text else text


def stat_guide_words(rules: Rules) -> str:
    """What each stat means and its band words, from low to high — the fixed legend,
    byte-identical every turn of an adventure (it sits in the prompt's cached front).
    Hidden stats show only their words in order, never a number."""
    lines = []
    for owner, name, rule, npc in _declared(rules):
        whose = {
            "player": "Your",
            "world": "The world's",
            "npc": f"{_cast_name(rules, npc)}'s",
        }[owner]
        about = f" ({_lower_first(rule.desc.rstrip('.'))})" if rule.desc else ""
        lines.append(f"- {whose} {words(name)}{about}: {_guide_words(rule)}.")
    return "What the stats mean:\n" + "\n".join(lines) if lines else ""


def _declared(rules: Rules) -> list[tuple[str, str, StatRule, str | None]]:
    out: list[tuple[str, str, StatRule, str | None]] = []
    out += [("world", n, r, None) for n, r in rules.stats.world.items()]
    out += [("player", n, r, None) for n, r in rules.stats.player.items()]
    for npc, block in rules.stats.npcs.items():
        out += [("npc", n, r, npc) for n, r in block.items()]
    return out


def _cast_name(rules: Rules, eid: str | None) -> str:
    member = rules.cast.get(eid or "")
    if member is not None:
        return member.name
    for entity in rules.raw.get("entities") or []:
        if isinstance(entity, dict) and entity.get("id") == eid and entity.get("name"):
            return str(entity["name"])
    return words(eid or "") or "someone"


_COMMON_OPENERS = frozenset(
    "a an the how what who whom whose when where which whether your his her their its our "
    "my this that these those one some any every each".split()
)


def _lower_first(text: str) -> str:
    """A description's capital lowered where it only starts the sentence ("How fierce…"),
    kept where it starts a name ("Maren's trust…")."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in _COMMON_OPENERS else text


def _guide_words(rule: StatRule) -> str:
    if rule.kind == "text":
        return "a few words"
    if rule.hidden:
        return (
            "from low to high, " + ", ".join(b.label for b in rule.bands)
            if rule.bands
            else "hidden"
        )
    parts = []
    if rule.bands:
        parts.append(", ".join(f"{b.label} ({num(b.lo)} to {num(b.hi)})" for b in rule.bands))
    elif rule.min is not None and rule.max is not None:
        parts.append(f"{num(rule.min)} to {num(rule.max)}")
    if rule.kind == "counter":
        parts.append("it only rises")
    return "; ".join(parts) or "a number"


LABELS = (
    "What the stats mean",
    "With you",
    "Now",
    "The world",
    "Here too",
    "Elsewhere",
    "True now",
    "Still to do",
    "Already done",
    "Quest",
    "Open matter",
    "Known",
    "No longer true",
    "Between people",
    "Not forgotten",
)
"""The labels these notes open their lines with ("With you: Maren."): a reply line that
opens with one copies the notes' form, whatever follows (context/echo)."""


def state_notes(
    document: Document,
    rules: Rules,
    in_scene_ids: list[str] | None = None,
    turn: int | None = None,
) -> str:
    """The current state as a few lines of notes (see the module doc).

    `in_scene_ids` are the characters the recent window puts in scene (default: the
    scene's `present`); only their stats and looks are given. `turn` is the turn being
    written (moments fade with the turns since; default: the newest in the document).
    """
    doc = document
    present = [i for i in doc.scene.present if i in doc.entities and i != PLAYER_ID]
    in_scene = [
        i for i in (in_scene_ids if in_scene_ids is not None else present) if i in doc.entities
    ]
    seen = set(present) | set(in_scene)
    scene = doc.scene
    lines: list[str] = []
    where = _name(doc, scene.location) if scene.location else ""
    head = f"You are at {where}" if where else "Where you are is not yet known"
    if scene.time:
        head += f", {scene.time}"
    lines.append(head + ".")
    if present:
        lines.append("With you: " + "; ".join(_person(doc, i, True) for i in present) + ".")
    if scene.summary:
        lines.append(f"Now: {scene.summary}")
    you = doc.entities.get(PLAYER_ID)
    if you is not None:
        about = [b for b in (you.status, ", ".join(you.conditions)) if b]
        about += [f"{words(k)} {v}" for k, v in you.attributes.items()]
        held = _holds(doc, PLAYER_ID)
        if about:
            lines.append("You are " + ", ".join(about) + ".")
        if held:
            lines.append("You carry " + ", ".join(held) + ".")
    if rules.stats.player:
        lines.append("Your " + "; ".join(_stats(doc, rules, "player")) + ".")
    if rules.stats.world:
        lines.append("The world: " + "; ".join(_stats(doc, rules, "world")) + ".")
    for npc in in_scene:
        if npc in rules.stats.npcs and rules.stats.npcs[npc]:
            lines.append(f"{_name(doc, npc)}'s " + "; ".join(_stats(doc, rules, "npc", npc)) + ".")
    # Someone the recent window names is "here too" only if the state does not put them
    # elsewhere: "Here too: Tobin" while Tobin is at his cottage told the narrator to bring
    # him in, and the guard then flagged what the notes had said.
    in_view = [*present, *(i for i in in_scene if doc.may_be_here(i))]
    nearby = [i for i in _in_view(doc, list(dict.fromkeys(in_view))) if i not in present]
    loose = [i for i in nearby if i not in doc.possessions]
    if loose:
        lines.append("Here too: " + "; ".join(_person(doc, i, i in seen) for i in loose) + ".")
    shown = {PLAYER_ID, scene.location, *present, *nearby}
    elsewhere = []
    for eid, e in doc.entities.items():
        if eid in shown or eid in doc.possessions:  # a held thing is named with its holder
            continue
        bits = [e.name] + ([e.status] if e.status else [])
        if e.location and e.location in doc.entities and e.location != eid:
            bits.append(f"at {_name(doc, e.location)}")
        held = _holds(doc, eid)
        if held:
            bits.append("holding " + ", ".join(held))
        line = ", ".join(bits)
        if eid in seen and _description(doc, eid):
            line += f" — {_description(doc, eid)}"
        elsewhere.append(line)
    if elsewhere:
        lines.append("Elsewhere: " + "; ".join(elsewhere) + ".")
    flags = [f.desc or words(n) for n, f in rules.flags.items() if doc.flags.get(n, f.initial)]
    if flags:
        lines.append("True now: " + "; ".join(flags) + ".")
    pending = [
        m.desc or words(mid)
        for mid, m in rules.milestones.items()
        if doc.milestones.get(mid) is None
    ]
    reached = [
        m.desc or words(mid)
        for mid, m in rules.milestones.items()
        if doc.milestones.get(mid) is not None
    ]
    if pending:
        lines.append("Still to do: " + "; ".join(pending) + ".")
    if reached:
        lines.append("Already done: " + "; ".join(reached) + ".")
    for t in (t for t in doc.threads.values() if t.status == "open"):
        todo = [o.text for o in t.objectives if not o.done]
        line = f"{'Quest' if t.kind == 'quest' else 'Open matter'}: {t.title}"
        if todo:
            line += " — next: " + "; ".join(todo)
        lines.append(line + ".")
    active = list(dict.fromkeys(_fact(doc, f) for f in doc.facts if f.status == "active"))
    if active:
        lines.append("Known: " + "; ".join(active) + ".")
    withdrawn = list(dict.fromkeys(_fact(doc, f) for f in doc.facts if f.status == "withdrawn"))
    if withdrawn:
        lines.append("No longer true: " + "; ".join(withdrawn) + ".")
    rels = [
        f"{_name(doc, r.source)} {words(r.kind)} {_name(doc, r.target)}"
        for r in doc.relationships
        if r.status == "active"
    ]
    if rels:
        lines.append("Between people: " + "; ".join(rels) + ".")
    now = turn if turn is not None else max([0, *(m.turn for m in doc.moments)])
    moments = [m.rstrip(".") for m in narrator_moments(doc, now)]
    if moments:
        lines.append("Not forgotten: " + "; ".join(moments) + ".")
    # No "recent events" here: they are sentences of the last turns' own prose, which the
    # history right above already holds; said twice, a small model copied them into each
    # new turn (the 14-turn demo test). The canon log keeps them for the roles without history.
    return "\n".join(lines)


# --- last turn's refusals, in words -------------------------------------------------------


def refusal_notes(
    report: Report | None, document: Document, rules: Rules, unreadable: bool = False
) -> str:
    """What the story said last turn that the state did not take, in words: so the
    narrator does not build on it. `unreadable`: last turn's state block could not be
    read (inline mode). Empty when nothing was lost."""
    lost = (
        [o for o in report.outcomes if o.status in LOST and o.index is not None] if report else []
    )
    if not lost and not unreadable:
        return ""
    lines = ["Last turn, these did not happen (the notes above are what is true):"]
    if unreadable:
        lines.append("- the changes written after the story: they could not be read")
    for o in lost:
        what = _event_words(o.event, document, rules)
        lines.append(f"- {what}" + (" (it is at its limit)" if o.status == "unchanged" else ""))
    return "\n".join(dict.fromkeys(lines))


def _event_words(event: Any, doc: Document, rules: Rules) -> str:
    if not isinstance(event, dict):
        return "a change to the story's state"
    kind = event.get("type")
    name = lambda key: _name(doc, event.get(key))  # noqa: E731 - a local shorthand
    if kind in ("change_stat", "set_stat"):
        return f"{stat_words(event.get('stat'), doc)} did not change"
    if kind == "set_possession":
        return f"{name('item')} did not pass to {name('holder')}"
    if kind == "clear_possession":
        return f"{name('item')} was not let go"
    if kind == "set_location":
        return f"{name('entity')} did not move"
    if kind == "set_status":
        return f"{name('entity')} did not become {_plain(event.get('status')) or 'something else'}"
    if kind == "reach_milestone":
        rule = rules.milestones.get(str(event.get("milestone") or ""))
        return f"'{rule.desc}' was not reached" if rule and rule.desc else "a goal was not reached"
    if kind == "set_flag":
        rule = rules.flags.get(str(event.get("flag") or ""))
        return f"'{rule.desc}' did not change" if rule and rule.desc else "a switch did not change"
    if kind == "create_entity":
        return f"{_plain(event.get('name')) or 'someone new'} was not added"
    return f"a {words(_plain(kind) or 'change')} did not happen"


def _plain(value: Any) -> str:
    """A model-written value quoted back only when it is plain words (it may be anything)."""
    return (
        value
        if isinstance(value, str) and re.fullmatch(r"[A-Za-z][A-Za-z' -]{0,39}", value)
        else ""
    )


def stat_words(path: Any, doc: Document) -> str:
    """`npc.maren.trust` → "Maren's trust", `player.lamp_oil` → "your lamp oil"."""
    parts = str(path or "").split(".")
    if parts[0] == "npc" and len(parts) >= 3:
        return f"{_name(doc, parts[1])}'s {words(parts[2])}"
    if parts[0] == "player" and len(parts) >= 2:
        return f"your {words(parts[1])}"
    if parts[0] == "world" and len(parts) >= 2:
        return f"the {words(parts[1])}"
    return "a stat"
