"""One small scenario that exercises every kind of rule: bands, caps, cooldowns, a
counter, a hidden stat, a text stat, per-NPC stats, flags, milestones and canon."""

from __future__ import annotations

DEMO_RULES = {
    "version": 1,
    "player": {"name": "Aldric", "aliases": ["the sellsword"], "location": "camp"},
    "entities": [
        {"id": "camp", "name": "Bandit Camp", "type": "place"},
        {"id": "road", "name": "North Road", "type": "place"},
        {
            "id": "gwen",
            "name": "Gwen",
            "type": "person",
            "aliases": ["the ranger"],
            "status": "alive",
            "location": "camp",
        },
        {
            "id": "brannoc",
            "name": "Brannoc Thane",
            "type": "person",
            "status": "alive",
            "location": "camp",
        },
        {"id": "key", "name": "rusty key", "type": "thing"},
        {"id": "guard_1", "name": "Gate Guard", "type": "person", "aliases": ["guard"]},
        {"id": "guard_2", "name": "Tower Guard", "type": "person", "aliases": ["guard"]},
    ],
    "possessions": {"key": "brannoc"},
    "facts": [{"subject": "gwen", "predicate": "is captive of", "object": "the bandits"}],
    "threads": [
        {
            "id": "rescue",
            "title": "Rescue Gwen",
            "kind": "quest",
            "objectives": [{"id": "o1", "text": "Find the key"}, {"id": "o2", "text": "Free Gwen"}],
        }
    ],
    "scene": {"location": "camp", "present": ["gwen", "brannoc"], "time": "dusk"},
    "recent_events": ["You crept up to the camp at dusk."],
    "stats": {
        "world": {
            "day": {
                "kind": "counter",
                "min": 1,
                "initial": 1,
                "max_change_per_turn": 1,
                "desc": "In-game day",
            }
        },
        "player": {
            "hp": {
                "min": 0,
                "max": 100,
                "initial": 100,
                "max_change_per_turn": 30,
                "desc": "Hit points",
                "bands": [
                    [0, 20, "very weak"],
                    [20, 40, "hurt"],
                    [40, 60, "minor damage"],
                    [60, 90, "healthy"],
                    [90, 100, "full health"],
                ],
            },
            "mana": {"min": 0, "max": 50, "initial": 20, "max_change_per_turn": 15, "cooldown": 2},
            "luck": {
                "min": 0,
                "max": 10,
                "initial": 3,
                "hidden": True,
                "desc": "Fortune's favour",
                "bands": [[0, 3, "cursed"], [3, 7, "ordinary"], [7, 10, "blessed"]],
            },
            "mood": {"kind": "text", "initial": "wary", "max_length": 20},
            "fainted": {"kind": "counter", "min": 0, "initial": 0},
        },
        "npcs": {
            "gwen": {
                "health": {"min": 0, "max": 100, "initial": 80},
                "trust": {
                    "min": -100,
                    "max": 100,
                    "initial": 20,
                    "max_change_per_turn": 20,
                    "bands": [[-100, -30, "hostile"], [-30, 30, "wary"], [30, 100, "ally"]],
                },
            },
            "brannoc": {"trust": {"min": -100, "max": 100, "initial": 0}},
        },
    },
    "flags": {
        "has_key": {"initial": False, "desc": "Player holds the dungeon key"},
        "alarm_raised": {"initial": False, "desc": "The bandits are alerted"},
    },
    "milestones": {
        "rescue_gwen": {"desc": "Rescue Gwen from the bandits"},
        "reach_capital": {"desc": "Arrive at the capital city"},
    },
    "canon": {
        "rules": ["Magic is rare and feared."],
        "forbidden_status_changes": [{"from": "dead", "to": "*"}],
    },
}
