"""Adventures: starting one from a scenario, listing, reading the story at the head."""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session

from talekeeper.errors import Invalid
from talekeeper.service import chips, state_engine
from talekeeper.service.origins import merge, with_origin
from talekeeper.service.scenarios import (
    ScenarioError,
    fill_placeholders,
    get_scenario,
    placeholder_answers,
)
from talekeeper.service.unit_of_work import AdventureNotFound, reading, writing
from talekeeper.state import RulesError, empty_rules, initial_document, load_rules
from talekeeper.state.creation import CreationError, create_character, creation_options
from talekeeper.store import owner
from talekeeper.store.models import Adventure, Node, Scenario
from talekeeper.story import canon_versions, takes, tree
from talekeeper.story.actions import format_action
from talekeeper.views.state import CharacterOptions
from talekeeper.views.story import (
    AdventureSummary,
    LatestAdventure,
    Story,
    StoryTurn,
    TakePosition,
    Turn,
)

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

PLOT_FIELDS = (
    "narrator_instructions",
    "ai_instructions",
    "plot_essentials",
    "story_summary",
    "author_note",
    "persona",
    "story_cards",
)
PAGE_SIZE = 50
FIRST_PAINT = 20  # the play page's first paint: a screenful and more, not the 50 of a page


def start_adventure(
    session: Session,
    scenario_id: str,
    answers: dict[str, str] | None = None,
    title: str | None = None,
    origin_id: str | None = None,
    persona: dict[str, str] | None = None,
    character: dict[str, Any] | None = None,
    rng: random.Random | None = None,
) -> Adventure:
    scenario = get_scenario(session, scenario_id)
    data = with_origin(scenario.data, origin_id)
    given = placeholder_answers(data, answers)
    filled = fill_placeholders(data, given)
    plot = {key: filled.get(key) for key in PLOT_FIELDS if filled.get(key) is not None}
    if persona:  # the player's own character; a field left blank keeps the scenario's
        chosen = {
            k: v.strip() for k, v in fill_placeholders(persona, given).items() if v and v.strip()
        }
        plot["persona"] = {**(plot.get("persona") or {}), **chosen}
    raw_rules = filled.get("rules") or None
    if raw_rules and creation_options(raw_rules) is not None:
        # Character creation within the origin (seed 003 step 2–3): before the log exists.
        build = (filled.get("origin") or {}).get("build")
        try:
            made = create_character(raw_rules, build, character, rng or random.SystemRandom())
        except CreationError as exc:
            raise ScenarioError(f"The character cannot be made: {exc}") from exc
        raw_rules = merge(raw_rules, made.rules_overlay())
        plot["persona"] = {**(plot.get("persona") or {}), "name": made.name}
    elif character:
        raise ScenarioError(
            "This scenario has no character creation; start it without a character."
        )
    try:
        rules = load_rules(raw_rules) if raw_rules else empty_rules()
    except RulesError as exc:
        # New-game construction fails loudly before play starts (docs/architecture.md
        # "Worlds, origins and scenarios").
        raise ScenarioError(f"This scenario's rules have mistakes: {exc}") from exc
    adventure = Adventure(
        scenario_id=scenario.id,
        title=(title or scenario.title)[:200],
        plot=plot,
        rules=raw_rules,
        turn_count=0,
        owner_id=owner.current(),
    )
    session.add(adventure)
    session.flush()
    tree.create_root(
        session, adventure, filled.get("opening", ""), initial_document(rules).to_json()
    )
    return adventure


MAX_TITLE = 200
BLANK_NARRATOR = (
    "You are the narrator of an interactive story. Write in second person, present tense, "
    'addressing the player as "you". Continue from the story so far in two to four vivid '
    "sentences, then stop and let the player act. Never act or speak for the player. Keep "
    "the world consistent with what has been established."
)
MAX_OPENING = 4000


class BlankStart(BaseModel):
    """A story from nothing but its first lines: no scenario, no rules, no state."""

    model_config = ConfigDict(extra="forbid")

    opening: str = Field(
        min_length=1, max_length=MAX_OPENING, description="How the story begins, in your words."
    )
    title: str | None = Field(None, max_length=MAX_TITLE, description="Default: its first words.")


def start_blank(session: Session, start: BlankStart) -> Adventure:
    """A blank adventure: the player's opening, a plain narrator, no rules (the State panel
    stays empty and the model is asked for no changes); plot and story cards are added later
    as in any adventure."""
    opening = start.opening.strip()
    if not opening:
        raise ScenarioError("Write how your story begins.")
    words = " ".join(opening.split())
    title = " ".join((start.title or "").split()) or (
        words if len(words) <= 60 else words[:60].rsplit(" ", 1)[0] + "…"
    )
    adventure = Adventure(
        scenario_id=None,
        title=title[:MAX_TITLE],
        plot={"narrator_instructions": BLANK_NARRATOR},
        rules=None,
        turn_count=0,
        owner_id=owner.current(),
    )
    session.add(adventure)
    session.flush()
    tree.create_root(session, adventure, opening, initial_document(empty_rules()).to_json())
    return adventure


def get_turn(session: Session, adventure: Adventure, node_id: int) -> Node:
    node = tree.find_node(session, adventure, node_id)
    if node is None:
        raise AdventureNotFound(f"No turn {node_id} in this adventure.")
    return node


def list_adventures(session: Session) -> list[Adventure]:
    return list(
        session.scalars(
            owner.where_visible(select(Adventure), Adventure).order_by(
                Adventure.last_played_at.desc()
            )
        )
    )


class AdventureTitleInvalid(Invalid):
    pass


def rename_adventure(session: Session, adventure: Adventure, title: str) -> Adventure:
    """Give an adventure the player's own title (two of one scenario need telling apart)."""
    title = " ".join((title or "").split())
    if not title:
        raise AdventureTitleInvalid("An adventure needs a title; type one, or keep the old one.")
    if len(title) > MAX_TITLE:
        raise AdventureTitleInvalid(
            f"A title can be at most {MAX_TITLE} characters (this one has {len(title)})."
        )
    adventure.title = title
    return adventure


def delete_adventure(session: Session, adventure: Adventure) -> None:
    # Save Points restrict node deletion; an adventure's deletion takes everything with it.
    from sqlalchemy import delete

    from talekeeper.store.models import SavePoint, Setting

    session.execute(delete(SavePoint).where(SavePoint.adventure_id == adventure.id))
    session.execute(
        Node.__table__.update().where(Node.adventure_id == adventure.id).values(parent_id=None)
    )
    session.execute(delete(Node).where(Node.adventure_id == adventure.id))
    session.execute(  # its samplers, its connection and its hand's calls (service/…)
        delete(Setting).where(
            Setting.key.in_(
                [
                    f"adventure_samplers:{adventure.id}",
                    f"adventure_connection:{adventure.id}",
                    f"adventure_hand:{adventure.id}",  # service/hand: its latest calls
                ]
            )
        )
    )
    session.delete(adventure)


def node_view(node: Node, pending: bool = False) -> Turn:
    """One turn; `pending`: its adventure names it, its step 7 (later) still running."""
    # The state engine's verdicts on this turn: the change chips under it. A correction's
    # line is their words (one an older release wrote kept paths in its stored text).
    changes = state_engine.changes_of(node)
    return Turn(
        id=node.id,
        parent_id=node.parent_id,
        depth=node.depth,
        kind=node.action_kind,
        action=node.action_text,
        action_line=(
            f"({chips.correction_text(changes)})"
            if node.action_kind == "correction"
            else f"({node.action_text})"
            if node.action_kind == canon_versions.UPDATE
            else format_action(node.action_kind, node.action_text)
        ),
        narration=node.narration,
        remark=state_engine.remark_of(node),  # a companion's aside it ends with: theirs
        update=canon_versions.update_of(node),  # an update from the scenario: what it did
        reasoning=node.reasoning,
        model=node.model,
        created_at=node.created_at.isoformat() if node.created_at else None,
        changes=changes,
        # What its narration said that the state does not (service/reading).
        contradictions=state_engine.contradictions_of(node),
        # A correction that accepted the turn before's warning ("It's right").
        answers=bool(state_engine.ProposalRecord.of(node.proposal).answers),
        pending=pending,
    )


_SCENARIO_TITLE = select(Scenario.title, Scenario.owner_id, Scenario.builtin).where(
    Scenario.id == bindparam("scenario")
)


def adventure_summary(session: Session, adventure: Adventure) -> AdventureSummary:
    # The title alone: loading the scenario row would parse its whole document.
    row = (
        session.execute(_SCENARIO_TITLE, {"scenario": adventure.scenario_id}).first()
        if adventure.scenario_id
        else None
    )
    visible = row is not None and owner.visible(row)
    return AdventureSummary(
        id=adventure.id,
        title=adventure.title,
        scenario_id=adventure.scenario_id,
        scenario_title=row.title if visible else None,
        turns=adventure.turn_count,
        last_played_at=adventure.last_played_at.isoformat(),
        created_at=adventure.created_at.isoformat(),
    )


# --- reading the story: a page of turns, and what changed since the page was drawn ----------
#
# A turn's view is a function of its node alone (nodes are immutable; `active_child_id` and
# `branch_name`, which do change, are not in it), so views are kept between requests, keyed
# like `story.paths` by the database, the node's id and its creation time (SQLite may reuse
# a deleted node's id). The one node that may still change is an opening nothing follows
# yet (`tree.rewrite_opening`): it is never kept. A page then reads one narrow row per turn
# (the path, with what the keys and the takes need) and loads whole nodes only for the
# views not kept yet.

TurnKey = tuple[str, int, str]
"""What names a turn's view for as long as its node exists (`turn_key`)."""

KEPT_VIEWS = 4096  # a few adventures' recent pages
_views: OrderedDict[TurnKey, Turn] = OrderedDict()
_views_lock = threading.Lock()

_PATH_ROWS = text(
    """
    WITH RECURSIVE path(id, parent_id, created_at, action_kind, active_child_id, n) AS (
        SELECT id, parent_id, created_at, action_kind, active_child_id, 0
        FROM nodes WHERE id = :start
        UNION ALL
        SELECT nodes.id, nodes.parent_id, nodes.created_at, nodes.action_kind,
               nodes.active_child_id, path.n + 1
        FROM nodes JOIN path ON nodes.id = path.parent_id
        WHERE path.n + 1 < :limit
    )
    SELECT id, parent_id, created_at, action_kind, active_child_id FROM path ORDER BY n DESC
    """
)


@dataclass(frozen=True)
class Shown:
    """What the page shows: the turns from `first` down to `head` (its last turn); None:
    nothing it can patch (it is drawn afresh)."""

    head: int | None = None
    first: int | None = None
    stale: int | None = None  # a turn it drew pending (service/settling): drawn again once settled


def _path_rows(session: Session, node_id: int, limit: int) -> list[Any]:
    """From the `limit`th ancestor of `node_id` down to it, in story order: one narrow row
    each (id, parent_id, created_at, action_kind, active_child_id)."""
    return list(session.execute(_PATH_ROWS, {"start": node_id, "limit": limit}))


def turn_key(session: Session, row: Any) -> TurnKey:
    """What names a turn's view (and anything rendered from it alone) for as long as it exists."""
    return (str(session.get_bind().url), row.id, str(row.created_at))


def turn_views(
    session: Session, adventure: Adventure, rows: Sequence[Any]
) -> list[tuple[TurnKey, StoryTurn]]:
    """(key, view with `takes`) for each of `rows` (`_path_rows`), oldest first."""
    if not rows:
        return []
    url = str(session.get_bind().url)
    keys = [(url, row.id, str(row.created_at)) for row in rows]
    with _views_lock:
        found = {key: _views.get(key) for key in keys}
    missing = [row.id for row, key in zip(rows, keys, strict=True) if found[key] is None]
    if missing:
        loaded = {n.id: n for n in session.scalars(select(Node).where(Node.id.in_(missing)))}
        with _views_lock:
            for row, key in zip(rows, keys, strict=True):
                if found[key] is None:
                    pending = row.id == adventure.pending_turn_id
                    found[key] = node_view(loaded[row.id], pending)
                    # a pending turn is settled once more (service/settling): kept after
                    if not pending and (
                        row.parent_id is not None or row.active_child_id is not None
                    ):
                        _views[key] = found[key]
            while len(_views) > KEPT_VIEWS:
                _views.popitem(last=False)
    positions = takes.take_positions(session, rows, adventure.id)
    return [
        (key, StoryTurn(**dict(found[key]), takes=TakePosition(**positions[row.id].as_dict())))
        for row, key in zip(rows, keys, strict=True)
    ]


def _story(
    session: Session,
    adventure: Adventure,
    head: Node,
    turns_shown: list[StoryTurn],
    has_more: bool,
) -> Story:
    """The story with its controls, as read at `head`."""
    return Story(
        **dict(adventure_summary(session, adventure)),
        head_id=head.id,
        can_undo=tree.can_undo(head),
        can_redo=tree.can_redo(head),
        can_retry=head.parent_id is not None,
        # Until the first turn is played, the opening's text may still change (tree.rewrite_opening).
        opening_editable=head.parent_id is None and head.active_child_id is None,
        # The name of the line being read, when the head is at its end (Redo has nowhere to go).
        line_name=head.branch_name,
        has_more=has_more,
        turns_shown=turns_shown,
        persona=adventure.plot.get("persona"),
    )


def story_page(
    session: Session, adventure: Adventure, limit: int = PAGE_SIZE, before: int | None = None
) -> tuple[Story, list[TurnKey]]:
    """`story_view`, and each shown turn's key (`turn_key`)."""
    head = tree.head(session, adventure)
    end = head
    if before is not None:
        path_node = get_turn(session, adventure, before)
        parent = session.get(Node, path_node.parent_id) if path_node.parent_id else None
        if parent is None:
            summary = adventure_summary(session, adventure)
            return Story(**dict(summary), turns_shown=[], has_more=False), []
        end = parent
    shown = turn_views(session, adventure, _path_rows(session, end.id, limit))
    has_more = bool(shown) and shown[0][1].parent_id is not None
    return _story(session, adventure, head, [v for _, v in shown], has_more), [k for k, _ in shown]


def story_view(
    session: Session, adventure: Adventure, limit: int = PAGE_SIZE, before: int | None = None
) -> Story:
    """The story at the head (or a page of it ending before node `before`)."""
    return story_page(session, adventure, limit, before)[0]


@dataclass(frozen=True)
class StoryChange:
    """What changed for a page: the turn both lines share (`keep`: everything down to it
    stays on the page), the shown turns below it (`removed`) and the turns that follow it
    now (`added`, each with its key), with the story's controls (`story`, no turns shown)
    and the kind of the head's action."""

    story: Story
    head_kind: str
    keep: int
    removed: list[int]
    added: list[StoryTurn]
    added_keys: list[TurnKey]


_nodes = Node.__table__.c
_SHOWN_DEPTHS = select(_nodes.id, _nodes.depth).where(
    _nodes.adventure_id == bindparam("adventure"), _nodes.id.in_(bindparam("ids", expanding=True))
)


@dataclass(frozen=True)
class _Shown:
    """A turn the page shows: its id and depth (what `story_change` needs of it)."""

    id: int
    depth: int


def story_change(
    session: Session, adventure: Adventure, shown: Shown, limit: int = PAGE_SIZE
) -> StoryChange | None:
    """What changed for a page showing `shown`, now that the head is where it is (at most
    `limit` turns added). None when the page must be drawn afresh: what it shows is gone,
    or the two lines part above its first turn.

    Reads at most `limit` turns up from the head and as many up from the page's last turn
    as it shows below the parting: an undo, a redo or a take step costs the same at any
    length of story."""
    if shown.head is None or shown.first is None:
        return None
    head = tree.head(session, adventure)
    ids = [shown.head, shown.first]
    depths = {
        r.id: r.depth
        for r in session.execute(_SHOWN_DEPTHS, {"adventure": adventure.id, "ids": ids})
    }
    if shown.head not in depths or shown.first not in depths:
        return None
    page_head = _Shown(shown.head, depths[shown.head])
    page_first = _Shown(shown.first, depths[shown.first])
    if page_first.depth > page_head.depth:
        return None
    lowest = max(page_first.depth, head.depth - limit)
    if lowest > min(page_head.depth, head.depth):
        return None
    new = _path_rows(session, head.id, head.depth - lowest + 1)
    old = tree.path_ids(session, page_head, limit=page_head.depth - lowest + 1)
    if not new or not old or new[0].id != old[0]:
        return None  # the page's first turn is not on the line now read
    same = 0
    while same < min(len(new), len(old)) and new[same].id == old[same]:
        same += 1
    if shown.stale is not None and shown.stale != adventure.pending_turn_id:
        settled = next((i for i in range(same) if new[i].id == shown.stale), None)
        if settled == 0:
            return None  # the page's first turn: drawn afresh
        same = same if settled is None else settled  # it and what follows, drawn again
    added = turn_views(session, adventure, new[same:])
    return StoryChange(
        story=_story(session, adventure, head, [], has_more=False),
        head_kind=head.action_kind,
        keep=old[same - 1],
        removed=old[same:],
        added=[v for _, v in added],
        added_keys=[k for k, _ in added],
    )


@dataclass(frozen=True)
class PageAnswer:
    """What the play page is answered after a change: `change` (`story_change`) when the
    page can patch itself, else `story` and its turns' keys (`story_page`) to draw anew."""

    change: StoryChange | None = None
    story: Story | None = None
    keys: list[TurnKey] | None = None


def page_answer(session: Session, adventure: Adventure, shown: Shown | None) -> PageAnswer:
    change = story_change(session, adventure, shown) if shown is not None else None
    if change is not None:
        return PageAnswer(change=change)
    story, keys = story_page(session, adventure, limit=FIRST_PAINT)
    return PageAnswer(story=story, keys=keys)


# --- the entry points the web and the terminal call (their transactions: unit_of_work) ------


def start(
    tk: Talekeeper,
    scenario_id: str,
    answers: dict[str, str] | None = None,
    title: str | None = None,
    origin_id: str | None = None,
    persona: dict[str, str] | None = None,
    character: dict[str, Any] | None = None,
) -> Story:
    """A new adventure from a scenario; the story as it opens."""
    with tk.db.session() as session:
        adventure = start_adventure(
            session, scenario_id, answers, title, origin_id, persona, character=character
        )
        return story_view(session, adventure)


def start_from_blank(tk: Talekeeper, start: BlankStart) -> Story:
    """A new adventure from nothing but its opening; the story as it opens."""
    with tk.db.session() as session:
        return story_view(session, start_blank(session, start))


def story(
    tk: Talekeeper, adventure_id: int, limit: int = PAGE_SIZE, before: int | None = None
) -> Story:
    with reading(tk, adventure_id) as (session, adventure):
        return story_view(session, adventure, limit=limit, before=before)


def story_for_page(
    tk: Talekeeper,
    adventure_id: int,
    shown: Shown | None = None,
    before: int | None = None,
) -> PageAnswer:
    """The play page's story: what changed since it showed `shown`, or (without, or when it
    cannot patch itself) its first paint; with `before`, the page of turns before that one."""
    with reading(tk, adventure_id) as (session, adventure):
        if before is not None:
            story, keys = story_page(session, adventure, before=before)
            return PageAnswer(story=story, keys=keys)
        return page_answer(session, adventure, shown)


def summaries(tk: Talekeeper) -> list[AdventureSummary]:
    """Every adventure, the most recently played first."""
    with tk.db.session() as session:
        return [adventure_summary(session, a) for a in list_adventures(session)]


def latest(tk: Talekeeper) -> LatestAdventure | None:
    """The most recently played adventure with its last turn (the home page's "Continue")."""
    with tk.db.session() as session:
        rows = list_adventures(session)
        if not rows:
            return None
        view = story_view(session, rows[0], limit=1)
        return LatestAdventure(
            **dict(adventure_summary(session, rows[0])),
            last=view.turns_shown[-1] if view.turns_shown else None,
        )


def rename(tk: Talekeeper, adventure_id: int, title: str) -> AdventureSummary:
    """Rename an adventure; its summary (as in the list)."""
    with writing(tk, adventure_id) as (session, adventure):
        rename_adventure(session, adventure, title)
        return adventure_summary(session, adventure)


def summary(tk: Talekeeper, adventure_id: int) -> AdventureSummary:
    with reading(tk, adventure_id) as (session, adventure):
        return adventure_summary(session, adventure)


def delete(tk: Talekeeper, adventure_id: int) -> None:
    """Delete an adventure and everything in it (under its lock: never mid-turn)."""
    with writing(tk, adventure_id) as (session, adventure):
        delete_adventure(session, adventure)


def title_of(tk: Talekeeper, adventure_id: int) -> str:
    with reading(tk, adventure_id) as (_session, adventure):
        return adventure.title


def turn(tk: Talekeeper, adventure_id: int, node_id: int) -> Turn:
    """One turn as the story shows it (the edit form starts from it)."""
    with reading(tk, adventure_id) as (session, adventure):
        node = get_turn(session, adventure, node_id)
        return node_view(node, node.id == adventure.pending_turn_id)


def character_options(
    tk: Talekeeper, scenario_id: str, origin_id: str | None = None
) -> CharacterOptions:
    """What character creation offers in this scenario and origin; `creation` None when
    the scenario has none."""
    with tk.db.session() as session:
        data = with_origin(get_scenario(session, scenario_id).data, origin_id)
    return CharacterOptions(
        creation=creation_options(data.get("rules"), (data.get("origin") or {}).get("build"))
    )
