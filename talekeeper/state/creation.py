"""Character creation within an origin (seed 003, steps 2–3 of new-game construction).

A scenario's rules may declare `character`: the classes on offer, which player stats the
player makes and how (`roll`: each is the sum of `dice` rolls of a `sides`-sided die,
clamped to the stat's range; `point_buy`: the player spends `points`, each stat from its
min), and hidden stats rolled at creation. An origin narrows the classes
(`build.classes`) and shifts the hidden rolls (`build.luck_modifier`).

A hidden stat is the average of `rolls` rolls across its range, plus the modifier,
clamped — the player can neither choose nor see it during creation, and the model only
ever sees its band word (the stat is `hidden`, so the state engine shows its label).

Pure: the dice are injected (a `random.Random`), so tests are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_DICE, DEFAULT_SIDES, DEFAULT_HIDDEN_ROLLS = 3, 6, 5


class Dice(Protocol):
    """What creation rolls with: `random.Random` (or a seeded one, in tests)."""

    def randint(self, a: int, b: int) -> int: ...


class CreationError(ValueError):
    """The player's choices do not fit the scenario and origin; `errors` names each."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


@dataclass
class Character:
    name: str
    class_id: str | None
    class_name: str | None
    stats: dict[str, int] = field(default_factory=dict)
    hidden: dict[str, int] = field(default_factory=dict)

    def rules_overlay(self) -> dict[str, Any]:
        """What creation adds to the adventure's rules (merged like an origin's)."""
        player: dict[str, Any] = {"name": self.name}
        if self.class_name:
            player["attributes"] = {"class": self.class_name}
        stats = {name: {"initial": value} for name, value in {**self.stats, **self.hidden}.items()}
        return {"player": player, **({"stats": {"player": stats}} if stats else {})}


def creation_options(
    rules: dict[str, Any] | None, build: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """What the creation form offers for this scenario and origin; None when the scenario
    declares no character creation. Hidden stats are named nowhere here."""
    character = (rules or {}).get("character")
    if not isinstance(character, dict):
        return None
    player_stats = ((rules or {}).get("stats") or {}).get("player") or {}
    allowed = (build or {}).get("classes")
    classes = [c for c in character.get("classes", []) if not allowed or c["id"] in allowed]
    return {
        "classes": classes,
        "method": character.get("method"),
        "points": character.get("points"),
        "dice": character.get("dice", DEFAULT_DICE),
        "sides": character.get("sides", DEFAULT_SIDES),
        "stats": [
            {
                "name": name,
                "min": player_stats[name].get("min"),
                "max": player_stats[name].get("max"),
                "desc": player_stats[name].get("desc", ""),
            }
            for name in character.get("stats", [])
            if name in player_stats
        ],
        "default_name": ((rules or {}).get("player") or {}).get("name", ""),
    }


def create_character(
    rules: dict[str, Any], build: dict[str, Any] | None, choice: dict[str, Any] | None, rng: Dice
) -> Character:
    """Check the player's choices against the scenario and origin and roll what is rolled.

    `choice`: `name`, `class` (an allowed class id; default the first), and for point-buy
    `stats` (name → value). Raises `CreationError` naming every mistake.
    """
    choice = choice or {}
    options = creation_options(rules, build)
    if options is None:
        raise CreationError(["This scenario has no character creation."])
    character = rules["character"]
    player_stats = (rules.get("stats") or {}).get("player") or {}
    errors: list[str] = []
    name = str(choice.get("name") or options["default_name"] or "").strip()
    if not name:
        errors.append("name: your character needs a name")
    elif len(name) > 80:
        errors.append("name: at most 80 characters")
    classes = options["classes"]
    klass = None
    if classes:
        wanted = choice.get("class") or classes[0]["id"]
        klass = next((c for c in classes if c["id"] == wanted), None)
        if klass is None:
            errors.append(
                f"class: {wanted!r} is not open to this origin; choose one of: "
                + ", ".join(c["id"] for c in classes)
            )
    elif choice.get("class"):
        errors.append("class: this scenario has no classes to choose from")
    stats: dict[str, int] = {}
    given = choice.get("stats") or {}
    if not isinstance(given, dict):
        errors.append("stats: must map each stat's name to a value")
        given = {}
    if options["method"] == "roll":
        if given:
            errors.append("stats: this scenario rolls its stats; they cannot be chosen")
        for spec in options["stats"]:
            total = sum(rng.randint(1, options["sides"]) for _ in range(options["dice"]))
            stats[spec["name"]] = _clamp(total, spec["min"], spec["max"])
    elif options["method"] == "point_buy":
        errors += _point_buy(options, given, stats)
    hidden: dict[str, int] = {}
    modifier = int((build or {}).get("luck_modifier", 0))
    for entry in character.get("hidden", []):
        rule = player_stats[entry["stat"]]
        lo, hi = int(rule["min"]), int(rule["max"])
        rolls = [rng.randint(lo, hi) for _ in range(entry.get("rolls", DEFAULT_HIDDEN_ROLLS))]
        hidden[entry["stat"]] = _clamp(round(sum(rolls) / len(rolls)) + modifier, lo, hi)
    if errors:
        raise CreationError(errors)
    return Character(
        name, klass["id"] if klass else None, klass["name"] if klass else None, stats, hidden
    )


def _point_buy(options: dict[str, Any], given: dict[str, Any], stats: dict[str, int]) -> list[str]:
    errors: list[str] = []
    specs = {s["name"]: s for s in options["stats"]}
    for key in given:
        if key not in specs:
            errors.append(f"stats.{key}: not a stat you make here (these are: {', '.join(specs)})")
    spent = 0
    for name, spec in specs.items():
        value = given.get(name, spec["min"])
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"stats.{name}: must be a whole number")
            continue
        if not spec["min"] <= value <= spec["max"]:
            errors.append(f"stats.{name}: must be between {spec['min']:g} and {spec['max']:g}")
            continue
        stats[name] = value
        spent += value - int(spec["min"])
    if spent > (options["points"] or 0):
        errors.append(f"stats: {spent} points spent; you have {options['points']}")
    return errors


def _clamp(value: float, lo: float | None, hi: float | None) -> int:
    if lo is not None:
        value = max(value, lo)
    if hi is not None:
        value = min(value, hi)
    return int(value)
