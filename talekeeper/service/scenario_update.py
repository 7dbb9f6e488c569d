"""Update an adventure from its scenario: take the scenario's newer texts, cards and rules.

An adventure copies its scenario's canon when it starts (`adventures.start_adventure`):
the narrator's and AI instructions, the plot essentials, the author's note, the story
cards, and the rules (characters, places, stats, flags, goals, canon). An author who later
fixes a typo or adds a character can bring that into an adventure already under way:

- `preview` says what would change, part by part, in words, and what of the story's state
  no longer fits the newer rules and what would become of it (`state/rebase.py`) — never a
  silent drop;
- `update` takes the parts the player chose as one step of the story: a node of kind
  `update` below the head, carrying the state checked again against the new rules and, in
  its record, the canon before and after and every finding. Undo takes it back like any
  step, the canon included (`story/canon_versions.py`).

The newer scenario is read as the adventure was started from it: the same origin (told by
the adventure's opening, else its starting place), the same answers to its placeholders
(read back from what they filled in), and the character the player made (name, class,
stats — never rolled again). The player's persona and the story summary are the story's
own and never change here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from talekeeper.errors import Conflict, Invalid, NotFound
from talekeeper.service import state_engine
from talekeeper.service.adventures import story_view
from talekeeper.service.origins import merge, origins_of, with_origin
from talekeeper.service.scenarios import fill_placeholders
from talekeeper.service.unit_of_work import get_adventure, writing
from talekeeper.state import RulesError, empty_rules, load_rules
from talekeeper.state.rebase import Rebased, rebase
from talekeeper.store.models import Node, Scenario
from talekeeper.story import canon_versions, tree
from talekeeper.views.state import ScenarioUpdated, ScenarioUpdatePreview, UpdatePart

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper


class ScenarioGone(NotFound):
    pass


class NothingToUpdate(Conflict):
    pass


class ScenarioUpdateInvalid(Invalid):
    pass


def preview(tk: Talekeeper, adventure_id: int) -> ScenarioUpdatePreview:
    """What updating from the scenario would change; writes nothing."""
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        head = tree.head(session, adventure)
        plan = _plan(session, adventure, head)
    return plan.view()


def update(tk: Talekeeper, adventure_id: int, take: list[str] | None = None) -> ScenarioUpdated:
    """Take the scenario's newer parts (`take`: their keys; None: every part that changed)
    into the adventure as one step of its story; the preview's words say what was done."""
    unknown = [part for part in take or [] if part not in canon_versions.PARTS]
    if unknown:
        raise ScenarioUpdateInvalid(
            f"Not a part an update can take: {', '.join(map(repr, unknown))}; "
            f"choose from: {', '.join(canon_versions.PARTS)}."
        )
    with writing(tk, adventure_id) as (session, adventure):
        head = tree.head(session, adventure)
        plan = _plan(session, adventure, head)
        chosen = [p for p in (take if take is not None else plan.changed) if p in plan.changed]
        if not chosen:
            raise NothingToUpdate(
                "Nothing to update: the chosen parts are as the scenario has them."
                if take
                else "Nothing to update: this adventure already plays by its scenario as it is now."
            )
        before = canon_versions.canon_of(adventure)
        after = {
            "plot": {
                **before["plot"],
                **{k: plan.plot[k] for k in chosen if k != "rules" and k in plan.plot},
            },
            "rules": plan.rules if "rules" in chosen else adventure.rules,
        }
        for key in chosen:  # a part the scenario no longer has is cleared
            if key != "rules" and key not in plan.plot:
                after["plot"].pop(key, None)
        state = plan.rebased.document.to_json() if "rules" in chosen else head.state
        findings = plan.rebased.findings if "rules" in chosen else []
        record = {
            "source": "scenario",
            "update": {
                "scenario": plan.title,
                "took": chosen,
                "changes": {k: plan.changes[k] for k in chosen},
                "findings": findings,
                "repairs": plan.repairs if "rules" in chosen else [],
                "before": before,
                "after": after,
            },
        }
        node = tree.append_child(
            session,
            adventure,
            head,
            tree.NewTurn(
                action_kind=canon_versions.UPDATE,
                action_text=f"Updated from the scenario “{plan.title}”",
                narration="",
                state=state,
                proposal=record,
                model="player",
            ),
        )
        canon_versions.start_following(adventure, node, before, after)
        return ScenarioUpdated(
            took=[canon_versions.PARTS[k] for k in chosen],
            findings=findings,
            story=story_view(session, adventure, limit=5),
        )


class _Plan:
    """What the scenario has now, read as the adventure was started from it."""

    def __init__(
        self,
        title: str,
        plot: dict[str, Any],
        rules: dict[str, Any] | None,
        changes: dict[str, list[str]],
        rebased: Rebased,
        repairs: list[str],
    ) -> None:
        self.title, self.plot, self.rules = title, plot, rules
        self.changes, self.rebased, self.repairs = changes, rebased, repairs

    @property
    def changed(self) -> list[str]:
        return [key for key in canon_versions.PARTS if self.changes.get(key)]

    def view(self) -> ScenarioUpdatePreview:
        return ScenarioUpdatePreview(
            scenario=self.title,
            up_to_date=not self.changed,
            parts=[
                UpdatePart(
                    key=key,
                    label=label,
                    changed=bool(self.changes.get(key)),
                    changes=self.changes.get(key) or [],
                )
                for key, label in canon_versions.PARTS.items()
            ],
            findings=self.rebased.findings,
        )


def _plan(session, adventure, head: Node) -> _Plan:  # type: ignore[no-untyped-def]
    scenario = session.get(Scenario, adventure.scenario_id) if adventure.scenario_id else None
    if scenario is None:
        raise ScenarioGone(
            "The scenario this adventure began from is no longer in your library, so there is "
            "nothing to update from."
        )
    data = scenario.data
    answers = _answers(data, adventure)
    root = session.get(Node, adventure.root_node_id) if adventure.root_node_id else None
    origin = _origin(data, adventure, root.narration if root else "", answers)
    filled = fill_placeholders(with_origin(data, origin), answers)
    plot_now = {k: filled[k] for k in canon_versions.UPDATED_PLOT if filled.get(k) is not None}
    rules_now = _with_character(filled.get("rules") or None, adventure.rules)
    try:
        new_rules = load_rules(rules_now) if rules_now else empty_rules()
    except RulesError as exc:
        raise ScenarioUpdateInvalid(
            f"The scenario's rules no longer fit this adventure's character: {exc}"
        ) from exc
    old_rules = state_engine.rules_of(adventure)
    document = state_engine.document_of(head.state, old_rules)
    rebased = rebase(document, old_rules, new_rules)
    repairs = [f for f in rebased.findings if f.startswith("Repaired: ")]
    rebased.findings = [f for f in rebased.findings if not f.startswith("Repaired: ")]
    if repairs:  # a path-worded repair is for the audit, not the player's eyes
        rebased.findings.append(f"{len(repairs)} more small repair(s) to fit the new rules.")
    plot = adventure.plot or {}
    changes: dict[str, list[str]] = {}
    for key in canon_versions.UPDATED_PLOT:
        old, new = plot.get(key), plot_now.get(key)
        if (old or None) == (new or None):
            continue
        changes[key] = (
            _cards_changed(old, new) if key == "story_cards" else [_text_change(old, new)]
        )
    if (adventure.rules or None) != (rules_now or None):
        changes["rules"] = rebased.changes or [
            "The rules changed in details the story does not show."
        ]
    return _Plan(scenario.title, plot_now, rules_now, changes, rebased, repairs)


def _text_change(old: Any, new: Any) -> str:
    if not old:
        return f"Added: “{_short(new)}”"
    if not new:
        return "Removed."
    return f"Now reads: “{_short(new)}”"


def _short(text: Any) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= 160 else text[:159] + "…"


def _cards_changed(old: Any, new: Any) -> list[str]:
    def by_name(cards: Any) -> dict[str, Any]:
        return {
            str(c.get("name") or c.get("entry", "")[:30]): c
            for c in cards or []
            if isinstance(c, dict)
        }

    before, after = by_name(old), by_name(new)
    said = [f"New card: {name}." for name in after if name not in before]
    said += [
        f"Changed card: {name}." for name in after if name in before and before[name] != after[name]
    ]
    said += [f"Card no longer in the scenario: {name}." for name in before if name not in after]
    return said or ["The cards' order or settings changed."]


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _answers(data: dict[str, Any], adventure: Any) -> dict[str, str]:
    """The answers the adventure's placeholders were filled with, read back by matching the
    scenario's texts against the adventure's own; a default where none can be read."""
    found: dict[str, str] = {}
    _match(data.get("rules"), adventure.rules, found)
    for key in ("narrator_instructions", "ai_instructions", "plot_essentials", "author_note"):
        _match(data.get(key), (adventure.plot or {}).get(key), found)
    _match((data.get("persona") or {}), (adventure.plot or {}).get("persona"), found)
    answers = {}
    for placeholder in data.get("placeholders", []):
        key = placeholder.get("key")
        if key:
            answers[key] = found.get(key) or str(placeholder.get("default") or "")
    return answers


def _match(template: Any, filled: Any, found: dict[str, str]) -> None:
    if isinstance(template, str) and isinstance(filled, str) and "${" in template:
        keys: list[str] = []

        def group(key: str) -> str:
            if key in keys:
                return f"(?P={key})"
            keys.append(key)
            return f"(?P<{key}>.+?)"

        parts = _PLACEHOLDER.split(template)  # text, key, text, key, …, text
        pattern = "".join(
            re.escape(part) if i % 2 == 0 else group(part) for i, part in enumerate(parts)
        )
        hit = re.fullmatch(pattern, filled, re.S)
        if hit:
            for key, value in hit.groupdict().items():
                found.setdefault(key, value)
    elif isinstance(template, dict) and isinstance(filled, dict):
        for key, value in template.items():
            _match(value, filled.get(key), found)
    elif isinstance(template, list) and isinstance(filled, list):
        for a, b in zip(template, filled, strict=False):
            _match(a, b, found)


def _origin(
    data: dict[str, Any], adventure: Any, opening: str, answers: dict[str, str]
) -> str | None:
    """The origin the adventure began from: the one whose opening it has, else the one
    whose starting place its rules have, else the first."""
    origins = origins_of(data)
    if not origins:
        return None
    for origin in origins:
        if fill_placeholders(origin.get("opening"), answers) == opening:
            return origin["id"]
    scene = ((adventure.rules or {}).get("scene") or {}).get("location")
    for origin in origins:
        if ((origin.get("rules") or {}).get("scene") or {}).get("location") == scene:
            return origin["id"]
    return origins[0]["id"]


def _with_character(
    rules: dict[str, Any] | None, old: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The scenario's rules with the character the player made at the start, as it was
    made (`state/creation`'s overlay: name, class, the stats made and rolled)."""
    if not rules or not isinstance(rules.get("character"), dict) or not old:
        return rules
    character = rules["character"]
    made = [*character.get("stats", []), *(h.get("stat") for h in character.get("hidden", []))]
    old_player = old.get("player") or {}
    old_stats = ((old.get("stats") or {}).get("player")) or {}
    overlay: dict[str, Any] = {"player": {}}
    if old_player.get("name"):
        overlay["player"]["name"] = old_player["name"]
    if (old_player.get("attributes") or {}).get("class"):
        overlay["player"]["attributes"] = {"class": old_player["attributes"]["class"]}
    stats = {
        name: {"initial": old_stats[name]["initial"]}
        for name in made
        if isinstance(old_stats.get(name), dict)
        and "initial" in old_stats[name]
        and name in ((rules.get("stats") or {}).get("player") or {})
    }
    if stats:
        overlay["stats"] = {"player": stats}
    return merge(rules, overlay)
