"""Scenarios: the built-in ones shipped with the package, and the player's own."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from anyascii import anyascii
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.context.cardspec import card_errors
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.errors import Invalid, NotFound
from talekeeper.service import json_depth
from talekeeper.service.origins import before_answers, origin_summaries
from talekeeper.service.plot import Persona
from talekeeper.state import check_rules
from talekeeper.state.rules import MAX_UNKNOWN_LISTED
from talekeeper.store import owner
from talekeeper.store.models import Scenario
from talekeeper.views.scenarios import Scenario as ScenarioView
from talekeeper.views.scenarios import (
    ScenarioImported,
    ScenarioInLibrary,
    ScenarioListed,
)

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

_PLACEHOLDER = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# `$${x}` is the text `${x}`, not a placeholder: what an imported card's own template code
# (JavaScript's `${score}`) becomes, so only the placeholders a scenario declares are asked.
_ESCAPED = re.compile(r"\$(\$\{[A-Za-z_][A-Za-z0-9_]*\})")


class ScenarioError(Invalid):
    pass


class ScenarioNotFound(NotFound):
    pass


DEMO_SCENARIO = "greywater-lantern"
"""The README's demo: listed first, so a newcomer following the README finds it at the top."""


def list_scenarios(session: Session) -> list[Scenario]:
    statement = owner.where_visible(select(Scenario), Scenario)
    order = (Scenario.builtin.desc(), (Scenario.id == DEMO_SCENARIO).desc(), Scenario.title)
    return list(session.scalars(statement.order_by(*order)))


def get_scenario(session: Session, scenario_id: str) -> Scenario:
    row = session.get(Scenario, scenario_id)
    if row is None or not owner.visible(row):  # built-ins are everyone's; own ones are private
        raise ScenarioNotFound(f"No scenario with id {scenario_id!r}.")
    return row


def scenario_summary(row: Scenario) -> dict[str, Any]:
    return {
        "id": row.id,
        "title": row.title,
        "description": before_answers(row.description, row.data),
        "builtin": row.builtin,
        "placeholders": row.data.get("placeholders", []),
        "tags": row.data.get("tags", []),
        "origins": origin_summaries(row.data),
    }


def fill_placeholders(value: Any, answers: dict[str, str]) -> Any:
    """Replace `${key}` everywhere in a scenario value; unknown keys are left visible, and
    an escaped `$${key}` becomes the text `${key}`."""
    if isinstance(value, str):
        if "${" not in value:
            return value
        filled = _PLACEHOLDER.sub(lambda m: answers.get(m.group(1), m.group(0)), value)
        return _ESCAPED.sub(r"\1", filled)
    if isinstance(value, list):
        return [fill_placeholders(v, answers) for v in value]
    if isinstance(value, dict):
        return {k: fill_placeholders(v, answers) for k, v in value.items()}
    return value


def placeholder_answers(data: dict[str, Any], given: dict[str, str] | None) -> dict[str, str]:
    given = {k: str(v).strip() for k, v in (given or {}).items()}
    answers = {}
    for placeholder in data.get("placeholders", []):
        key = placeholder["key"]
        answer = given.get(key) or placeholder.get("default", "")
        if not answer:
            raise ScenarioError(f"Please answer: {placeholder.get('question', key)}")
        if len(answer) > 200:
            raise ScenarioError(f"The answer for {key!r} is too long (at most 200 characters).")
        answers[key] = answer
    return answers


# --- authoring: create, update, duplicate, delete, import, export ------------------------
#
# A scenario document is checked whole before anything is written: every mistake is
# reported with its path (`story_cards[2].entry: …`, `rules.stats.world.storm.max: …`),
# and a refused document changes nothing. Built-in scenarios are read-only: duplicate one
# to edit it.

EXPORT_FORMAT = "talekeeper-scenario"
MAX_SCENARIO_BYTES = 1024 * 1024
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,79}$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TEXT_LIMITS = {
    "title": 200,
    "description": 2000,
    "opening": 20000,
    "narrator_instructions": 20000,
    "ai_instructions": 20000,
    "plot_essentials": 20000,
    "story_summary": 20000,
    "author_note": 2000,
}
SCENARIO_KEYS = (
    "id",
    *TEXT_LIMITS,
    "tags",
    "placeholders",
    "persona",
    "story_cards",
    "rules",
    "origins",
)
ORIGIN_KEYS = (
    "id",
    "title",
    "description",
    "opening",
    "narrator_instructions",
    "ai_instructions",
    "plot_essentials",
    "author_note",
    "rules",
    "quests",
    "items",
    "facts",
    "build",
)


class ScenarioInvalid(ScenarioError):
    """A scenario document with mistakes; `errors` lists each with its path."""

    def __init__(
        self, errors: list[str], intro: str = "This scenario has mistakes; nothing was saved."
    ):
        self.errors, self.intro = errors, intro
        super().__init__(
            intro
            + " "
            + "; ".join(errors[:5])
            + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else "")
        )


def check_scenario(data: Any) -> list[str]:
    """Every mistake in a scenario document, each starting with its path; [] when valid."""
    if not isinstance(data, dict):
        return ["(scenario): must be a JSON object"]
    unknown = [key for key in data if key not in SCENARIO_KEYS]
    errors = [
        f"{key}: unknown field (known: {', '.join(SCENARIO_KEYS)})"
        for key in unknown[:MAX_UNKNOWN_LISTED]
    ]
    if len(unknown) > MAX_UNKNOWN_LISTED:
        errors.append(f"(scenario): {len(unknown) - MAX_UNKNOWN_LISTED:,} more unknown fields")
    if not isinstance(data.get("id"), str) or not _ID.match(data["id"]):
        errors.append(
            "id: must be 1–80 lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )
    for key, limit in TEXT_LIMITS.items():
        value = data.get(key, "")
        if not isinstance(value, str):
            errors.append(f"{key}: must be text")
        elif len(value) > limit:
            errors.append(f"{key}: too long ({len(value):,} characters; at most {limit:,})")
    if isinstance(data.get("title"), str) and not data["title"].strip():
        errors.append("title: a scenario needs a title")
    if "title" not in data:
        errors.append("title: a scenario needs a title")
    if isinstance(data.get("opening", ""), str) and not data.get("opening", "").strip():
        errors.append("opening: the story needs an opening — the first thing the player reads")
    tags = data.get("tags", [])
    if (
        not isinstance(tags, list)
        or len(tags) > 20
        or not all(isinstance(t, str) and 0 < len(t) <= 40 for t in tags)
    ):
        errors.append("tags: must be a list of at most 20 short labels")
    declared: set[str] = set()
    placeholders = data.get("placeholders", [])
    if not isinstance(placeholders, list):
        errors.append("placeholders: must be a list")
        placeholders = []
    for i, p in enumerate(placeholders):
        where = f"placeholders[{i}]"
        if not isinstance(p, dict):
            errors.append(f"{where}: must be an object with key, question and default")
            continue
        errors += [
            f"{where}.{k}: unknown field" for k in p if k not in ("key", "question", "default")
        ]
        key = p.get("key")
        if not isinstance(key, str) or not _KEY.match(key):
            errors.append(
                f"{where}.key: must be a name like 'name' or 'home_town' (letters, digits, _)"
            )
        elif key in declared:
            errors.append(f"{where}.key: '{key}' is declared twice")
        else:
            declared.add(key)
        if not isinstance(p.get("question", ""), str) or not str(p.get("question", "")).strip():
            errors.append(f"{where}.question: ask the player something, e.g. 'What is your name?'")
        if not isinstance(p.get("default", ""), str) or len(str(p.get("default", ""))) > 200:
            errors.append(f"{where}.default: must be text of at most 200 characters")
    for section, model in (("persona", Persona),):
        value = data.get(section)
        if value is not None:
            try:
                model.model_validate(value)
            except ValidationError as exc:
                errors += _pydantic_errors(exc, section)
    cards = data.get("story_cards", [])
    if not isinstance(cards, list):
        errors.append("story_cards: must be a list")
        cards = []
    if len(cards) > MAX_CARDS:
        errors.append(f"story_cards: at most {MAX_CARDS} cards")
    rules_raw = data.get("rules") if isinstance(data.get("rules"), dict) else None
    for i, card in enumerate(cards[:MAX_CARDS]):
        errors += [
            f"story_cards[{i}]" + ("" if e.startswith((":", "[")) else ".") + e
            for e in card_errors(card, rules_raw)
        ]
    rules = data.get("rules")
    if rules is not None:
        errors += [
            f"rules.{e}" if not e.startswith("(") else f"rules: {e.split(': ', 1)[-1]}"
            for e in check_rules(rules)
        ]
    errors += _origin_errors(data)
    errors += _published_schema_errors(data, errors)
    used = set(
        _PLACEHOLDER.findall(json.dumps({k: v for k, v in data.items() if k != "placeholders"}))
    )
    for key in sorted(used - declared):
        errors.append(
            f"placeholders: '${{{key}}}' is used but not declared (add a placeholder with key '{key}')"
        )
    return errors


def _published_schema_errors(data: dict[str, Any], reported: list[str]) -> list[str]:
    """`scenario.schema.json` enforced too: whatever it finds at a path the checks above
    have not already named (rules and origins have their own schemas, checked above)."""
    from talekeeper.state.schema import scenario_schema, schema_errors

    paths = {e.split(":", 1)[0].split(" ", 1)[0] for e in reported}
    rest = {k: v for k, v in data.items() if k not in ("rules", "origins")}
    return [m for m in schema_errors(scenario_schema(), rest) if m.split(":", 1)[0] not in paths]


def _origin_errors(data: dict[str, Any]) -> list[str]:
    """Origins: each a thin overlay whose rules, merged into the scenario's, must still be valid."""
    from talekeeper.service.origins import OriginError, with_origin
    from talekeeper.state import check_rules

    origins = data.get("origins")
    if origins is None:
        return []
    if not isinstance(origins, list) or len(origins) > 50:
        return ["origins: must be a list of at most 50 origins"]
    from talekeeper.state.schema import origin_schema, schema_errors

    errors: list[str] = []
    seen: set[str] = set()
    base = (
        set(check_rules(data["rules"])) if isinstance(data.get("rules"), dict) else set()
    )  # reported already
    scenario_rules = data.get("rules") if isinstance(data.get("rules"), dict) else {}
    classes = {
        c.get("id")
        for c in (scenario_rules.get("character") or {}).get("classes", [])
        if isinstance(c, dict)
    }
    for i, origin in enumerate(origins):
        where = f"origins[{i}]"
        if not isinstance(origin, dict):
            errors.append(f"{where}: must be an object with an id and a title")
            continue
        shape = schema_errors(origin_schema(), origin, where)  # origin.schema.json, by path
        errors += shape
        origin_id = origin.get("id")
        if not isinstance(origin_id, str) or not _ID.match(origin_id):
            continue
        if origin_id in seen:
            errors.append(f"{where}.id: '{origin_id}' is used by two origins")
        seen.add(origin_id)
        if shape:
            continue
        for j, class_id in enumerate((origin.get("build") or {}).get("classes", [])):
            if class_id not in classes:
                errors.append(
                    f"{where}.build.classes[{j}]: unknown class {class_id!r} "
                    f"(rules.character.classes: {', '.join(sorted(map(str, classes))) or 'none declared'})"
                )
        if any(key in origin for key in ("rules", "quests", "items", "facts")):
            try:
                merged = with_origin(
                    {k: v for k, v in data.items() if k in ("rules", "origins")}, origin_id
                ).get("rules")
            except OriginError as exc:
                errors.append(str(exc).rstrip("."))
                continue
            except (TypeError, ValueError, AttributeError) as exc:
                errors.append(f"{where}.rules: {exc}")
                continue
            errors += [f"{where}.rules (merged): {e}" for e in check_rules(merged) if e not in base]
    return errors


def _pydantic_errors(exc: Any, prefix: str) -> list[str]:
    found = []
    for error in exc.errors():
        where = prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        found.append(f"{where}: {error['msg']}")
    return found


# --- whose id is it (accounts on) ---------------------------------------------------------
#
# Scenario ids are one namespace shared by every player, so with accounts on the id a new
# scenario gets must not depend on whether another player's scenario holds it: a refusal
# ("already exists") or a renamed id would tell the player that scenario exists. A
# scenario a signed-in player makes is therefore stored (and addressed) as `<id>~<owner>`:
# its document keeps the id its author chose, and only the player's own and the built-in
# scenarios can collide with it. `~` is no character of a document id, so no built-in or
# pre-accounts scenario can hold such an id. With accounts off nothing changes.

OWNER_MARK = "~"
MAX_ID = 80  # the column's length


def row_id(name: str) -> str:
    """The stored id of a new scenario of the current player's whose document says `name`."""
    player = owner.current()
    return name if player is None else f"{name}{OWNER_MARK}{player}"


def name_of(scenario_id: str) -> str:
    """The id a scenario's document uses: its stored id less the owner mark."""
    return scenario_id.split(OWNER_MARK, 1)[0]


def _room() -> int:
    """How long a document id of the current player's may be (the owner mark takes some)."""
    return MAX_ID - len(row_id(""))


def _taken(session: Session, name: str) -> bool:
    """Whether a new scenario named `name` collides with one the current player can see
    (their own, a built-in) — never with one they cannot."""
    row = session.get(Scenario, name)
    if row is not None and owner.visible(row):
        return True
    return owner.current() is not None and session.get(Scenario, row_id(name)) is not None


def fits(session: Session, name: str) -> bool:
    """Whether `name` can be a new scenario's id as it is: well formed, short enough, free."""
    return bool(_ID.match(name)) and len(name) <= _room() and not _taken(session, name)


def _store(session: Session, data: dict[str, Any], row: Scenario | None = None) -> Scenario:
    errors = check_scenario(data)
    if row is None and not errors and len(data["id"]) > _room():
        errors = [f"id: at most {_room()} characters here"]
    if errors:
        raise ScenarioInvalid(errors)
    if row is None:
        row = Scenario(id=row_id(data["id"]), builtin=False, owner_id=owner.current())
        session.add(row)
    row.title, row.description, row.data = data["title"].strip(), data.get("description", ""), data
    session.flush()
    return row


def _own(session: Session, scenario_id: str) -> Scenario:
    row = get_scenario(session, scenario_id)
    if row.builtin:
        raise ScenarioError(
            "Built-in scenarios are read-only. Duplicate it to make your own copy, and edit that."
        )
    return row


def free_id(session: Session, wanted: str) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`… — the first id no scenario the player can see
    has (with accounts on, another player's scenarios make no difference)."""
    # Any script transliterated first: a Chinese title gives `luoqixi`, not `scenario`.
    base = re.sub(r"[^a-z0-9_-]+", "-", anyascii(wanted).lower()).strip("-_")[: _room() - 10]
    base = base or "scenario"
    candidate, n = base, 1
    while _taken(session, candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def new_scenario(title: str, scenario_id: str) -> dict[str, Any]:
    """A small valid document to start from."""
    return {
        "id": scenario_id,
        "title": title,
        "description": "",
        "tags": [],
        "placeholders": [{"key": "name", "question": "What is your name?", "default": "Wren"}],
        "persona": {"name": "${name}", "pronouns": "", "description": ""},
        "opening": "You wake to the sound of rain, ${name}. Somewhere below, someone is calling your name.",
        "narrator_instructions": (
            "You are the narrator of an interactive story. Write in second person, present tense. "
            "Describe what happens in response to the player's action in two to four vivid sentences, "
            "then stop and let the player act. Never act or speak for the player."
        ),
        "ai_instructions": "",
        "plot_essentials": "",
        "author_note": "",
        "story_cards": [],
    }


def create_scenario(session: Session, data: dict[str, Any]) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioInvalid(["(scenario): must be a JSON object"])
    if isinstance(data.get("id"), str) and _taken(session, data["id"]):
        raise ScenarioInvalid([f"id: a scenario with id '{data['id']}' already exists"])
    return _store(session, data)


def update_scenario(session: Session, scenario_id: str, data: dict[str, Any]) -> Scenario:
    """Replace one of the player's scenarios with `data` (its id cannot change)."""
    row = _own(session, scenario_id)
    if not isinstance(data, dict):
        raise ScenarioInvalid(["(scenario): must be a JSON object"])
    name = name_of(row.id)  # the document's id; the stored one may carry the owner mark
    if data.get("id", name) not in (name, row.id):
        raise ScenarioInvalid(
            [f"id: a scenario's id cannot change (it is '{name}'); duplicate it for a new one"]
        )
    return _store(session, {**data, "id": name}, row)


def duplicate_scenario(session: Session, scenario_id: str) -> Scenario:
    source = get_scenario(session, scenario_id)
    data = json.loads(json.dumps(source.data))
    data["id"] = free_id(session, f"{name_of(source.id)}-copy")
    data["title"] = f"{source.title} (copy)"[:200]
    return _store(session, data)


def delete_scenario(session: Session, scenario_id: str) -> None:
    """Adventures started from it keep their own copy of everything and play on."""
    from talekeeper.store.models import Adventure

    row = _own(session, scenario_id)
    session.execute(
        Adventure.__table__.update().where(Adventure.scenario_id == row.id).values(scenario_id=None)
    )
    session.delete(row)


def export_scenario(row: Scenario) -> dict[str, Any]:
    """The document as a file: the scenario itself, marked with its format."""
    return {"format": EXPORT_FORMAT, "version": 1, "scenario": row.data}


def import_scenario(session: Session, raw: bytes) -> tuple[Scenario, list[str]]:
    """Read an exported file (or a bare scenario document) and add it as the player's own.

    Refused whole, with the reason, when it is too large, not JSON, or has mistakes. An id
    already taken gets a fresh one. Returns the scenario and notes on what was adjusted.
    """
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ScenarioError(
            f"That file is too large to be a scenario (at most {MAX_SCENARIO_BYTES // 1024 // 1024} MB). "
            "Nothing was imported."
        )
    try:
        json_depth.check(raw, max_members=json_depth.MAX_MEMBERS)
    except json_depth.TooDeep:
        raise ScenarioError(
            f"That file nests too deeply to be a scenario (at most {json_depth.MAX_DEPTH} levels). Nothing was imported."
        ) from None
    except (json_depth.TooWide, json_depth.HalfCharacter) as exc:
        raise ScenarioError(
            f"That file cannot be read as a scenario: {str(exc).replace('changed', 'imported')}"
        ) from None
    try:
        data = json_depth.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ScenarioError("That file is not text (UTF-8 JSON). Nothing was imported.") from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            f"That file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). Nothing was imported."
        ) from None
    if isinstance(data, dict) and "scenario" in data and "format" in data:
        if data.get("format") != EXPORT_FORMAT:
            raise ScenarioError(
                f"That file is a {data.get('format')!r} export, not a scenario. Nothing was imported."
            )
        data = data["scenario"]
    if not isinstance(data, dict):
        raise ScenarioInvalid(
            ["(scenario): must be a JSON object"],
            "That file is not a scenario; nothing was imported.",
        )
    notes = []
    wanted = data.get("id") if isinstance(data.get("id"), str) and _ID.match(data["id"]) else None
    if wanted is None:
        wanted = free_id(session, str(data.get("title") or "imported"))
    elif _taken(session, wanted):
        fresh = free_id(session, wanted)
        notes.append(
            f"A scenario with id '{wanted}' already exists, so this one was imported as '{fresh}'."
        )
        wanted = fresh
    elif len(wanted) > _room():
        fresh = free_id(session, wanted)
        notes.append(f"The id '{wanted}' is too long here, so this one was imported as '{fresh}'.")
        wanted = fresh
    data = {**data, "id": wanted}
    errors = check_scenario(data)
    if errors:
        raise ScenarioInvalid(errors, "That scenario has mistakes; nothing was imported.")
    return _store(session, data), notes


# --- entry points (each owns its transaction) ------------------------------------------------


def scenario_view(row: Scenario) -> ScenarioView:
    return ScenarioView.model_validate({**scenario_summary(row), "data": row.data})


def creation_offer(data: dict[str, Any]) -> dict[str, Any] | None:
    """Character creation as the start form offers it: the scenario's classes, each with the
    origins that allow it (the server refuses any other pairing, naming the allowed ones)."""
    from talekeeper.state.creation import creation_options

    options = creation_options(data.get("rules"))
    if options is None:
        return None
    origins = origin_summaries(data)
    builds = {
        o["id"]: (o.get("build") or {}).get("classes")
        for o in data.get("origins", [])
        if isinstance(o, dict)
    }
    for klass in options["classes"]:
        allowed = [
            o["title"] for o in origins if not builds.get(o["id"]) or klass["id"] in builds[o["id"]]
        ]
        klass["origins"] = allowed if len(allowed) < len(origins) else []
    return options


def summaries(tk: Talekeeper) -> list[ScenarioListed]:
    """Every scenario, with the persona and character creation it offers (the home page's
    start form)."""
    with tk.db.session() as session:
        return [
            ScenarioListed.model_validate(
                {
                    **scenario_summary(s),
                    "persona": s.data.get("persona") or {},
                    "creation": creation_offer(s.data),
                }
            )
            for s in list_scenarios(session)
        ]


def read(tk: Talekeeper, scenario_id: str) -> ScenarioView:
    """The scenario with its document (and whether it is built in)."""
    with tk.db.session() as session:
        return scenario_view(get_scenario(session, scenario_id))


def create(tk: Talekeeper, data: dict[str, Any]) -> ScenarioView:
    with tk.db.session() as session:
        return scenario_view(create_scenario(session, data))


def create_titled(tk: Talekeeper, title: str) -> ScenarioView:
    """A new, nearly empty scenario named `title`, with an id made from it."""
    with tk.db.session() as session:
        return scenario_view(
            create_scenario(session, new_scenario(title[:200], free_id(session, title)))
        )


def update(tk: Talekeeper, scenario_id: str, data: dict[str, Any]) -> ScenarioView:
    with tk.db.session() as session:
        return scenario_view(update_scenario(session, scenario_id, data))


def duplicate(tk: Talekeeper, scenario_id: str) -> ScenarioView:
    with tk.db.session() as session:
        return scenario_view(duplicate_scenario(session, scenario_id))


def delete(tk: Talekeeper, scenario_id: str) -> None:
    with tk.db.session() as session:
        delete_scenario(session, scenario_id)


def import_file(tk: Talekeeper, raw: bytes) -> ScenarioImported:
    """Import a file (an export or a bare document); `notes` says what was adjusted."""
    with tk.db.session() as session:
        row, notes = import_scenario(session, raw)
        return ScenarioImported.model_validate(
            {**scenario_summary(row), "data": row.data, "notes": notes}
        )


def export(tk: Talekeeper, scenario_id: str) -> tuple[dict[str, Any], str]:
    """The scenario as a file: its document and a file name."""
    with tk.db.session() as session:
        row = get_scenario(session, scenario_id)
        return export_scenario(row), f"{name_of(row.id)}.talekeeper.json"


def library(tk: Talekeeper) -> list[ScenarioInLibrary]:
    """Every scenario with how many story cards it has and whether it has rules (the list page)."""
    with tk.db.session() as session:
        return [
            ScenarioInLibrary(
                **scenario_summary(s),
                cards=len(s.data.get("story_cards") or []),
                has_rules=bool(s.data.get("rules")),
            )
            for s in list_scenarios(session)
        ]


def document(tk: Talekeeper, scenario_id: str) -> tuple[dict[str, Any], bool]:
    """A scenario's document (a copy, safe to edit) and whether it is built in."""
    import copy

    with tk.db.session() as session:
        row = get_scenario(session, scenario_id)
        return copy.deepcopy(row.data), row.builtin
