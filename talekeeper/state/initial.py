"""A new adventure's first document, built from the scenario's checked rules.

Construction reads the declaration and writes only the document (seed 003's new-game
construction): the cast and world, starting possessions and canon facts, the opening
threads, scene and situation lines, every stat at its `initial`, every flag at its
`initial`, every milestone unreached. `load_rules` has already proved that every id
resolves, so nothing here can half-build a world.
"""

from __future__ import annotations

from .document import (
    PLAYER_ID,
    Document,
    Entity,
    Fact,
    Objective,
    RecentEvent,
    Relationship,
    Scene,
    Stats,
    StatValue,
    Thread,
    player_entity,
)
from .rules import Rules, StatRule


def _stat_block(block: dict[str, StatRule]) -> dict[str, StatValue]:
    return {name: StatValue(value=rule.initial) for name, rule in block.items()}


def initial_stats(rules: Rules) -> Stats:
    """Every declared stat at its initial value, never yet changed."""
    return Stats(
        world=_stat_block(rules.stats.world),
        player=_stat_block(rules.stats.player),
        npcs={npc: _stat_block(block) for npc, block in rules.stats.npcs.items()},
    )


def initial_document(rules: Rules) -> Document:
    """The state before the first turn (turn 0), with scenario facts as `canon`."""
    raw = rules.raw
    player = raw.get("player", {})
    me = player_entity(
        player.get("name", "You"), player.get("description", ""), player.get("aliases", [])
    )
    me.status = player.get("status", "")
    me.location = player.get("location")
    me.conditions = list(player.get("conditions", []))
    me.attributes = dict(player.get("attributes", {}))
    entities = {PLAYER_ID: me}
    for e in raw.get("entities", []):
        entities[e["id"]] = Entity(
            id=e["id"],
            name=e["name"],
            type=e.get("type", "thing"),
            aliases=list(e.get("aliases", [])),
            description=e.get("description", ""),
            status=e.get("status", ""),
            location=e.get("location"),
            conditions=list(e.get("conditions", [])),
            attributes=dict(e.get("attributes", {})),
        )
    facts = [
        Fact(
            id=f"f{i}",
            subject=f.get("subject", ""),
            predicate=f.get("predicate", ""),
            object=f.get("object", ""),
            value=f.get("value"),
            authority="canon",
            turn=0,
        )
        for i, f in enumerate(raw.get("facts", []), 1)
    ]
    relationships = [
        Relationship(
            id=f"r{i}",
            source=r["source"],
            kind=r["kind"],
            target=r["target"],
            note=r.get("note", ""),
            authority="canon",
            turn=0,
        )
        for i, r in enumerate(raw.get("relationships", []), 1)
    ]
    threads = {
        t["id"]: Thread(
            id=t["id"],
            title=t["title"],
            kind=t.get("kind", "quest" if t.get("objectives") else "thread"),
            objectives=[Objective(id=o["id"], text=o["text"]) for o in t.get("objectives", [])],
        )
        for t in raw.get("threads", [])
    }
    return Document(
        entities=entities,
        possessions=dict(raw.get("possessions", {})),
        facts=facts,
        relationships=relationships,
        threads=threads,
        scene=Scene(**raw.get("scene", {})),
        flags={name: flag.initial for name, flag in rules.flags.items()},
        milestones={mid: None for mid in rules.milestones},
        stats=initial_stats(rules),
        recent_events=[RecentEvent(turn=0, text=line) for line in raw.get("recent_events", [])],
    )
