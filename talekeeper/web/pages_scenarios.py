"""The scenario editor (plain forms; they work without JavaScript).

One page per part of a scenario — story texts and placeholders, story cards, the world
(cast, places, items), stats and rules, the raw JSON — each a form that saves that part.
A save builds the whole new document and checks it (`scenarios.check_scenario`, which
runs the state engine's `check_rules` on the rules); mistakes are shown next to the
field they concern, by path, the form keeps what was typed, and nothing is saved.
Built-in scenarios are shown read-only, with "Duplicate to edit".
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from talekeeper.context.cardspec import StoryCard, rules_in_words
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.service import json_depth, scenarios
from talekeeper.service.app import Talekeeper
from talekeeper.state.stats import typed_number
from talekeeper.web import flash
from talekeeper.web.card_form import card_from_form
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(prefix="/scenarios", include_in_schema=False)
SECTIONS = {
    "story": "Story",
    "cards": "Story cards",
    "world": "World",
    "rules": "Stats and rules",
    "origins": "Origins",
    "json": "Raw JSON",
}
ENTITY_TYPES = ("person", "place", "item", "group", "creature", "other")
STAT_FIELDS = ("kind", "min", "max", "initial", "max_change_per_turn", "cooldown", "desc")


# --- reading forms into a document ------------------------------------------------------------


def _rows(
    form: Any, prefix: str, fields: tuple[str, ...], choices: tuple[str, ...] = ()
) -> list[dict[str, str]]:
    """Repeated form rows (`<prefix>_<field>` lists), minus blank ones and those marked removed.
    `choices` are select boxes: always sent, so they do not make a row non-blank."""
    columns = {f: [str(v) for v in form.getlist(f"{prefix}_{f}")] for f in fields}
    count = max((len(v) for v in columns.values()), default=0)
    removed = {str(v) for v in form.getlist(f"{prefix}_remove")}
    rows = []
    for i in range(count):
        row = {f: (columns[f][i] if i < len(columns[f]) else "").strip() for f in fields}
        if str(i) in removed or not any(v for f, v in row.items() if f not in choices):
            continue
        rows.append(row)
    return rows


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _number(text: str) -> Any:
    """A typed number as a number; anything else as typed (the check names the field)."""
    value = typed_number(text)
    return text if value is None else value


def _bands(text: str) -> list[Any]:
    """One band a line: `lo hi label` (e.g. `-10 -4 hostile`)."""
    bands = []
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if not parts:
            continue
        bands.append([_number(p) for p in parts[:2]] + parts[2:])
    return bands


def apply_story(data: dict[str, Any], form: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    for key in scenarios.TEXT_LIMITS:
        data[key] = str(form.get(key, ""))
    data["title"] = data["title"].strip()
    data["tags"] = _list(str(form.get("tags", "")))
    data["placeholders"] = _rows(form, "ph", ("key", "question", "default"))
    persona = {
        k: str(form.get(f"persona_{k}", "")).strip() for k in ("name", "pronouns", "description")
    }
    if any(persona.values()):
        data["persona"] = persona
    else:
        data.pop("persona", None)
    return data


def apply_cards(data: dict[str, Any], form: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    removed = {str(v) for v in form.getlist("card_remove")}
    try:
        count = min(int(str(form.get("card_count") or 0)), MAX_CARDS + 1)
    except ValueError:
        count = 0
    cards = []
    for i in range(count):
        card = card_from_form(form, f"card-{i}-")
        if str(i) in removed or not (
            card.get("name")
            or card.get("entry", "").strip()
            or card.get("triggers")
            or card.get("gates")
        ):
            continue
        card["type"] = card.get("type") or "other"
        try:  # stored in its compact form; a card with mistakes is kept as typed so the check names them
            card = StoryCard.model_validate(card).dump()
        except ValidationError:
            pass
        cards.append(card)
    data["story_cards"] = cards
    return data


def apply_world(data: dict[str, Any], form: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    rules = dict(data.get("rules") or {"version": 1})
    player = {
        "name": str(form.get("player_name", "")).strip(),
        "aliases": _list(str(form.get("player_aliases", ""))),
        "description": str(form.get("player_description", "")).strip(),
        "location": str(form.get("player_location", "")).strip(),
    }
    player = {k: v for k, v in player.items() if v}
    if player:
        rules["player"] = {
            **{
                k: v
                for k, v in (rules.get("player") or {}).items()
                if k not in ("name", "aliases", "description", "location")
            },
            **player,
        }
    else:
        rules.pop("player", None)
    old = {e.get("id"): e for e in rules.get("entities", []) if isinstance(e, dict)}
    entities, possessions = [], {}
    for row in _rows(
        form,
        "ent",
        ("id", "name", "type", "aliases", "description", "status", "location", "holder"),
    ):
        # Fields the form does not show survive a save: an NPC's persona, private knowledge
        # and moves are edited in the JSON tab.
        shown_elsewhere = ("conditions", "attributes", "persona", "knowledge", "moves", "companion")
        kept = {k: v for k, v in old.get(row["id"], {}).items() if k in shown_elsewhere}
        entity = {
            "id": row["id"],
            "name": row["name"],
            "type": row["type"],
            "aliases": _list(row["aliases"]),
            "description": row["description"],
            "status": row["status"],
            "location": row["location"],
            **kept,
        }
        entities.append(
            {k: v for k, v in entity.items() if v not in ("", [], None) or k in ("id", "name")}
        )
        if row["holder"]:
            possessions[row["id"]] = row["holder"]
    rules["entities"] = entities
    rules["possessions"] = possessions
    scene = {
        "location": str(form.get("scene_location", "")).strip(),
        "present": _list(str(form.get("scene_present", ""))),
        "time": str(form.get("scene_time", "")).strip(),
        "summary": str((rules.get("scene") or {}).get("summary", "")),
    }
    scene = {k: v for k, v in scene.items() if v}
    if scene:
        rules["scene"] = scene
    else:
        rules.pop("scene", None)
    data["rules"] = _tidy_rules(rules)
    return data


def apply_rules(data: dict[str, Any], form: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    rules = dict(data.get("rules") or {"version": 1})
    old = {row["path"]: row["extra"] for row in stat_rows(rules)}  # fields the form does not show
    stats: dict[str, Any] = {}
    for row in _rows(
        form, "stat", ("owner", "name", *STAT_FIELDS, "bands", "hidden"), choices=("kind", "hidden")
    ):
        owner = row["owner"] or "world"
        npc = owner.removeprefix("npc:").removeprefix("npc.")
        path = (
            f"rules.stats.{owner}.{row['name']}"
            if owner in ("world", "player")
            else f"rules.stats.npcs.{npc}.{row['name']}"
        )
        stat: dict[str, Any] = dict(old.get(path, {}))
        kind = row["kind"] or "number"
        if kind != "number":
            stat["kind"] = kind
        for field in ("min", "max", "max_change_per_turn", "cooldown"):
            if row[field]:
                stat[field] = _number(row[field])
        if row["initial"]:
            stat["initial"] = row["initial"] if kind == "text" else _number(row["initial"])
        if row["bands"]:
            stat["bands"] = _bands(row["bands"])
        if row["hidden"] in ("1", "on", "true"):
            stat["hidden"] = True
        if row["desc"]:
            stat["desc"] = row["desc"]
        if owner in ("world", "player"):
            stats.setdefault(owner, {})[row["name"]] = stat
        else:
            stats.setdefault("npcs", {}).setdefault(npc, {})[row["name"]] = stat
    rules["stats"] = stats
    rules["flags"] = {
        row["name"]: {
            "initial": row["initial"] in ("1", "on", "true"),
            **({"desc": row["desc"]} if row["desc"] else {}),
        }
        for row in _rows(form, "flag", ("name", "desc", "initial"), choices=("initial",))
        if row["name"] or row["desc"]
    }
    rules["milestones"] = {
        row["id"]: {"desc": row["desc"]} for row in _rows(form, "ms", ("id", "desc"))
    }
    canon = dict(rules.get("canon") or {})
    canon["rules"] = [
        line.strip() for line in str(form.get("canon_rules", "")).splitlines() if line.strip()
    ]
    rules["canon"] = canon
    data["rules"] = _tidy_rules(rules)
    return data


def apply_origins(data: dict[str, Any], form: Any) -> tuple[dict[str, Any], list[str]]:
    """Origins from the form; an overlay that is not JSON is reported by its path."""
    data = copy.deepcopy(data)
    origins, problems = [], []
    before = {o.get("id"): o for o in data.get("origins") or [] if isinstance(o, dict)}
    for i, row in enumerate(
        _rows(form, "origin", ("id", "title", "description", "opening", "rules"))
    ):
        # What the form does not show (quests, items, facts, build, other texts) is kept.
        kept = {
            k: v
            for k, v in before.get(row["id"], {}).items()
            if k not in ("id", "title", "description", "opening", "rules")
        }
        origin: dict[str, Any] = {
            **{k: row[k] for k in ("id", "title", "description", "opening") if row[k]},
            **kept,
        }
        if row["rules"]:
            try:
                origin["rules"] = json_depth.loads(row["rules"])
            except json.JSONDecodeError as exc:
                problems.append(
                    f"origins[{i}].rules: not valid JSON — line {exc.lineno}, column {exc.colno}: {exc.msg}"
                )
                origin["rules"] = row["rules"]
        origins.append(origin)
    if origins:
        data["origins"] = origins
    else:
        data.pop("origins", None)
    return data, problems


def _tidy_rules(rules: dict[str, Any]) -> dict[str, Any] | None:
    """Drop empty sections; None when nothing is left but the version (a narrative-only scenario)."""
    tidy = {k: v for k, v in rules.items() if v not in ({}, [], None, "")}
    if isinstance(tidy.get("canon"), dict):
        tidy["canon"] = {k: v for k, v in tidy["canon"].items() if v}
        if not tidy["canon"]:
            del tidy["canon"]
    tidy.setdefault("version", 1)
    return tidy if set(tidy) - {"version"} else None


APPLY = {"story": apply_story, "cards": apply_cards, "world": apply_world, "rules": apply_rules}


# --- showing a document as forms ---------------------------------------------------------------


def stat_rows(rules: dict[str, Any]) -> list[dict[str, Any]]:
    stats = rules.get("stats") or {}
    rows = []

    def add(owner: str, path: str, name: str, stat: Any) -> None:
        stat = stat if isinstance(stat, dict) else {}
        bands = "\n".join(
            " ".join(str(x) for x in b) if isinstance(b, list) else str(b)
            for b in stat.get("bands", []) or []
        )
        shown = {*STAT_FIELDS, "bands", "hidden"}
        rows.append(
            {
                "owner": owner,
                "path": path,
                "name": name,
                "bands": bands,
                "hidden": bool(stat.get("hidden")),
                "extra": {k: v for k, v in stat.items() if k not in shown},
                **{f: stat.get(f, "") for f in STAT_FIELDS},
            }
        )

    for owner in ("world", "player"):
        for name, stat in (stats.get(owner) or {}).items():
            add(owner, f"rules.stats.{owner}.{name}", name, stat)
    for npc, block in (stats.get("npcs") or {}).items():
        for name, stat in (block or {}).items():
            add(f"npc:{npc}", f"rules.stats.npcs.{npc}.{name}", name, stat)
    return rows


def errors_at(errors: list[str], path: str) -> list[str]:
    """The errors about `path` or anything inside it."""
    return [
        e for e in errors if e.startswith(path) and e[len(path) : len(path) + 1] in (".", "[", ":")
    ]


def _card_context(cards: Any) -> dict[str, Any]:
    """Each card with every field filled in (for the form) and its rules in words."""
    views, words = [], []
    for card in cards if isinstance(cards, list) else []:
        try:
            model = StoryCard.model_validate(card)
        except ValidationError:
            views.append(card if isinstance(card, dict) else {})
            words.append([])
            continue
        views.append(model.view())
        words.append(rules_in_words(model))
    return {"card_views": views, "card_words": words, "blank_card": StoryCard().view()}


def editor_context(
    row_id: str, data: dict[str, Any], builtin: bool, section: str, errors: list[str]
) -> dict[str, Any]:
    rules = data.get("rules") or {}
    entities = [e for e in rules.get("entities", []) if isinstance(e, dict)]
    return {
        "section": "scenarios",
        "part": section,
        "parts": SECTIONS,
        "scenario_id": row_id,
        "data": data,
        "builtin": builtin,
        "readonly": builtin,
        "rules": rules,
        "entities": entities,
        "possessions": rules.get("possessions") or {},
        "entity_types": ENTITY_TYPES,
        "stats": stat_rows(rules),
        "errors": errors,
        "errors_at": lambda path: errors_at(errors, path),
        "json_text": json.dumps(data, indent=2, ensure_ascii=False),
        **_card_context(data.get("story_cards")),
        "origins": [
            {
                **o,
                "rules_text": o["rules"]
                if isinstance(o.get("rules"), str)
                else json.dumps(o["rules"], indent=2, ensure_ascii=False)
                if o.get("rules")
                else "",
            }
            for o in (data.get("origins") or [])
            if isinstance(o, dict)
        ],
    }


# --- pages --------------------------------------------------------------------------------------


def _list_page(
    request: Request, tk: Talekeeper, status_code: int = 200, **extra: Any
) -> HTMLResponse:
    rows = scenarios.library(tk)
    return render(
        request,
        "scenarios.html",
        status_code=status_code,
        section="scenarios",
        scenarios=rows,
        **extra,
    )


@router.get("", response_class=HTMLResponse)
def list_page(
    request: Request, message: str | None = None, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    return _list_page(request, tk, message=message)


@router.post("/new")
async def create(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    title = str(form.get("title", "")).strip()
    if not title:
        return _list_page(request, tk, 422, new_error="Give your scenario a title.")
    try:
        scenario_id = scenarios.create_titled(tk, title).id
    except scenarios.ScenarioError as exc:
        return _list_page(request, tk, 422, new_error=str(exc))
    return flash.redirect(
        f"/scenarios/{scenario_id}",
        "Created. Fill in the story, then start an adventure from the home page.",
    )


@router.post("/import")
async def import_file(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    upload = form.get("file")
    if upload is None or isinstance(upload, str) or not upload.filename:
        return _list_page(
            request, tk, 422, import_error="Choose a scenario file (.json) to import."
        )
    raw = await upload.read(scenarios.MAX_SCENARIO_BYTES + 1)
    try:
        imported = await run_in_threadpool(scenarios.import_file, tk, raw)  # off the loop
        scenario_id, notes = imported.id, imported.notes
    except scenarios.ScenarioInvalid as exc:
        return _list_page(request, tk, 422, import_error=exc.intro, import_errors=exc.errors)
    except scenarios.ScenarioError as exc:
        return _list_page(request, tk, 422, import_error=str(exc))
    message = " ".join(["Imported.", *notes])
    return flash.redirect(f"/scenarios/{scenario_id}", message)


@router.get("/{scenario_id}", response_class=HTMLResponse)
def editor(
    request: Request,
    scenario_id: str,
    part: str = "story",
    message: str | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    part = part if part in SECTIONS else "story"
    try:
        data, builtin = scenarios.document(tk, scenario_id)
        context = editor_context(scenario_id, data, builtin, part, [])
    except scenarios.ScenarioNotFound as exc:
        return _list_page(request, tk, 404, message=str(exc))
    start = next((s for s in scenarios.summaries(tk) if s.id == scenario_id), None)
    return render(request, "scenario_editor.html", message=message, start=start, **context)


@router.post("/{scenario_id}/save/{part}", response_class=HTMLResponse)
async def save(
    request: Request, scenario_id: str, part: str, tk: Talekeeper = Depends(get_tk)
) -> Response:
    """Save one part: the whole document is checked; with mistakes nothing is saved."""
    form = await request.form()
    if part not in SECTIONS:
        return RedirectResponse(f"/scenarios/{quote(scenario_id)}", status_code=303)
    try:
        current, builtin = scenarios.document(tk, scenario_id)
    except scenarios.ScenarioNotFound as exc:
        return _list_page(request, tk, 404, message=str(exc))
    json_text, problems = None, []
    if part == "json":
        json_text = str(form.get("document", ""))
        try:
            candidate = json_depth.loads(json_text)
        except json.JSONDecodeError as exc:
            context = editor_context(
                scenario_id,
                current,
                builtin,
                part,
                [f"(JSON): not valid JSON — line {exc.lineno}, column {exc.colno}: {exc.msg}"],
            )
            context["json_text"] = json_text
            return render(request, "scenario_editor.html", status_code=422, **context)
    elif part == "origins":
        candidate, problems = apply_origins(current, form)
    else:
        candidate = APPLY[part](current, form)
        if candidate.get("rules") is None:
            candidate.pop("rules", None)
    try:
        if part == "origins" and problems:
            raise scenarios.ScenarioInvalid(problems)
        scenarios.update(tk, scenario_id, candidate)
    except scenarios.ScenarioError as exc:
        errors = (
            exc.errors if isinstance(exc, scenarios.ScenarioInvalid) else [f"(scenario): {exc}"]
        )
        shown = candidate if isinstance(candidate, dict) else current
        context = editor_context(scenario_id, shown, builtin, part, errors)
        if json_text is not None:
            context["json_text"] = json_text
        return render(request, "scenario_editor.html", status_code=422, **context)
    return flash.redirect(f"/scenarios/{quote(scenario_id)}?part={part}", "Saved.")


@router.post("/{scenario_id}/duplicate")
def duplicate(request: Request, scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    try:
        copy_id = scenarios.duplicate(tk, scenario_id).id
    except scenarios.ScenarioNotFound as exc:
        return _list_page(request, tk, 404, message=str(exc))
    except scenarios.ScenarioError as exc:
        return _list_page(request, tk, 422, message=str(exc))
    return flash.redirect(f"/scenarios/{copy_id}", "This is your own copy: edit away.")


@router.post("/{scenario_id}/delete")
def delete(request: Request, scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    try:
        scenarios.delete(tk, scenario_id)
    except scenarios.ScenarioNotFound as exc:
        return _list_page(request, tk, 404, message=str(exc))
    except scenarios.ScenarioError as exc:
        return _list_page(request, tk, 422, message=str(exc))
    return flash.redirect("/scenarios", "Deleted. Adventures started from it play on.")
