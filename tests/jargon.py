"""What a player must never read outside Insights: ids, stat paths, JSON, event names.

`jargon_in(text, ids)` lists what it finds, so a failing test says what leaked. `ids` are
the story's own ids (entities, flags, milestones, threads), found when written as ids: with
an underscore, or in lower case where the name they stand for is capitalised.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from talekeeper.state.events import EVENTS

_PATH = re.compile(r"\b(?:world|player|npcs?)\.[a-z_]\w*")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_JSON = re.compile(r"[{}]|\"\w+\"\s*:|\[\s*\{")
_REF = re.compile(r"\b(?:[frm]\d+|moment m\d+|weight \d+)\b")
_ID_TAG = re.compile(r"\(\s*[a-z][a-z0-9]*_[a-z0-9_]*\s*[,)]")
_EVENT = re.compile(r"\b(?:" + "|".join(sorted(EVENTS, key=len, reverse=True)) + r")\b")


def jargon_in(text: str, names: Mapping[str, str] | None = None) -> list[str]:
    """Protocol in `text`; `names` (id → name) adds a story's ids written as ids."""
    found = _PATH.findall(text) + _SNAKE.findall(text) + _JSON.findall(text)
    found += _REF.findall(text) + _ID_TAG.findall(text) + _EVENT.findall(text)
    for eid, name in (names or {}).items():
        if (
            eid != name
            and eid not in name
            and re.search(rf"(?<![\w'’-]){re.escape(eid)}(?![\w'’-])", text)
        ):
            found.append(eid)
    return found


def story_ids(document: Mapping, rules_raw: Mapping | None = None) -> dict[str, str]:
    """id → name for what a story's state and rules name: entities, threads, flags,
    milestones (a flag or milestone stands for its description)."""
    ids = {
        eid: str(e.get("name", ""))
        for eid, e in (document.get("entities") or {}).items()
        if eid != "player"  # a word of its own in any sentence
    }
    ids.update({tid: str(t.get("title", "")) for tid, t in (document.get("threads") or {}).items()})
    for section in ("flags", "milestones"):
        for key, value in ((rules_raw or {}).get(section) or {}).items():
            ids[key] = str((value or {}).get("desc", "")) if isinstance(value, Mapping) else ""
    return ids
