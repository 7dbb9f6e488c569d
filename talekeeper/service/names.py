"""What the player calls things: the state keys on ids and paths, a player reads names.

The state document says `maren`, `npc.maren.trust`, `ferry_hired`, `keepers_cottage`; the
pages and the terminal say "Maren", "Maren's trust", "Ferry hired", "Keeper's cottage".
`Names` turns the first into the second for every front (chips, correction rows, the
State panel, `/state`), and `find` turns the words a player types back into an id
(`/fix`), so what the terminal accepts is what it prints. Ids and paths stay for Insights.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_PATH = re.compile(r"\b(?:world|player|npcs?)\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
_ID_TAG = re.compile(r"\s*\((?!none\))[a-z][a-z0-9_-]*(?:,\s*[a-z_]+)?\)")
_SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")
_FIELD = re.compile(r"\b[a-z]+(?:_[a-z]+)+(?:\[\d+\])?\.([a-z_]+)\b")  # record_moment.weight
_MID_THE = re.compile(r"^The (?=[a-z])")
_QUOTED = re.compile(r"('[^']*')")
_KINDED = re.compile(r"\b(fact|relationship|thread|flag|milestone|moment) ([\w.-]+)")
_NUMBERED = re.compile(r"\b[fr]\d+\b")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_LEADING = {"the", "a", "an", "my", "your"}


def words_of(name: str) -> str:
    """An id or a stat's name as words: `lamp_oil` → "lamp oil"."""
    return " ".join(name.replace("_", " ").replace("-", " ").split())


class Names:
    """The names in one state document (its raw JSON, as stored on a turn): an entity's
    id → its name, a stat path → its label, a thread → its title. Reads lazily, so a page
    of turns costs only the look-ups its chips make."""

    def __init__(self, state: Mapping[str, Any] | None):
        self._state = state or {}

    def entity(self, eid: Any) -> str:
        """An entity's name; an id the document does not know, as words."""
        if eid is None:
            return "nowhere known"
        found = (self._state.get("entities") or {}).get(str(eid))
        if isinstance(found, Mapping) and found.get("name"):
            return str(found["name"])
        return words_of(str(eid))

    def mid(self, eid: Any) -> str:
        """An entity's name inside a sentence: "The lighthouse" reads "the lighthouse" there
        (a name whose next word is capitalised, "The Drowned Man", keeps its "The")."""
        return _MID_THE.sub("the ", self.entity(eid))

    def thread(self, tid: str) -> tuple[str, str]:
        """(title, kind) of a thread: the quest's title, "quest" or "thread"."""
        found = (self._state.get("threads") or {}).get(tid)
        if isinstance(found, Mapping):
            return str(found.get("title") or words_of(tid)), str(found.get("kind") or "thread")
        return words_of(tid), "thread"

    def objective(self, tid: str, oid: str) -> str:
        found = (self._state.get("threads") or {}).get(tid) or {}
        for objective in found.get("objectives") or []:
            if isinstance(objective, Mapping) and objective.get("id") == oid:
                return str(objective.get("text") or words_of(oid))
        return words_of(oid)

    def relationship(self, rid: str) -> str:
        for rel in self._state.get("relationships") or []:
            if isinstance(rel, Mapping) and rel.get("id") == rid:
                return " ".join(
                    (
                        self.entity(rel.get("source")),
                        str(rel.get("kind")),
                        self.entity(rel.get("target")),
                    )
                )
        return "a relationship"

    def fact(self, fid: str) -> str:
        for fact in self._state.get("facts") or []:
            if isinstance(fact, Mapping) and fact.get("id") == fid:
                subject = self.entity(fact["subject"]) if fact.get("subject") else ""
                text = " ".join(
                    str(x) for x in (subject, fact.get("predicate"), fact.get("object")) if x
                )
                return text + (f": {fact['value']}" if fact.get("value") is not None else "")
        return "a fact"

    def stat(self, path: str | None) -> str:
        """`world.storm` → "Storm", `player.lamp_oil` → "Lamp oil", `npc.maren.trust` →
        "Maren's trust" (the character's name as the story has it)."""
        if not path:
            return "a stat"
        parts = path.split(".")
        if parts[0] in ("npc", "npcs") and len(parts) >= 3:
            who = self.entity(parts[1])
            who = who.title() if who == words_of(parts[1]) else who  # a character not in the story
            return f"{who}'s {words_of('.'.join(parts[2:]))}"
        if parts[0] in ("world", "player") and len(parts) >= 2:
            return words_of(".".join(parts[1:])).capitalize()
        return words_of(path)

    def words(self, text: str) -> str:
        """Text from the validator, for a player: stat paths as their labels, no `(id)`
        tags, an event's field by its name, a fact, relationship or thread by what it says,
        ids as names ("world.night is a counter" → "Night is a counter", "fact f1 was
        established by …" → "“Gwen is captive of the bandits” was established by …").
        What the player asked for, quoted back ('…'), stays as they wrote it."""
        parts = _QUOTED.split(text)
        for i in range(0, len(parts), 2):  # the odd parts are quotes
            parts[i] = self._unquoted_words(parts[i])
        return " ".join("".join(parts).split())

    def _unquoted_words(self, text: str) -> str:
        text = _PATH.sub(lambda m: self.stat(m.group(0)), _ID_TAG.sub("", text))
        text = _FIELD.sub(lambda m: "the " + words_of(m.group(1)), text)
        text = _KINDED.sub(lambda m: self._kinded(m.group(1), m.group(2)), text)
        text = _NUMBERED.sub(
            lambda m: self._kinded("fact" if m.group(0)[0] == "f" else "relationship", m.group(0)),
            text,
        )
        ids = self._ids()
        if ids:
            text = ids.sub(lambda m: self._id_words(m.group(0)), text)
        return _SNAKE.sub(lambda m: self.entity(m.group(0)), text)

    def _kinded(self, kind: str, ref: str) -> str:
        if kind == "fact":
            return f"“{self.fact(ref)}”"
        if kind == "relationship":
            return f"“{self.relationship(ref)}”"
        if kind == "thread":
            return f"“{self.thread(ref.split('.')[0])[0]}”"
        if kind == "flag":
            return words_of(ref)
        return "a moment" if kind == "moment" else words_of(ref)

    def _ids(self) -> re.Pattern[str] | None:
        """Entity and thread ids that are not their own name (`maren` for "Maren")."""
        if not hasattr(self, "_id_pattern"):
            known = [
                i
                for i in [*(self._state.get("entities") or {}), *(self._state.get("threads") or {})]
                if i != "player" and i != self._id_words(i)
            ]
            self._id_pattern = (
                re.compile(
                    r"(?<![\w'’-])(?:"
                    + "|".join(map(re.escape, sorted(known, key=len, reverse=True)))
                    + r")(?![\w'’-])"
                )
                if known
                else None
            )
        return self._id_pattern

    def _id_words(self, ref: str) -> str:
        if ref in (self._state.get("threads") or {}):
            return f"“{self.thread(ref)[0]}”"
        return self.entity(ref)


# --- words a player types → the id they name --------------------------------------------------


def key(text: str) -> tuple[str, ...]:
    """How names are compared: words, case-folded, possessive `'s` and a leading article or
    "my"/"your" dropped ("the Keeper's cottage" ~ "keeper cottage")."""
    tokens = [t.casefold().replace("’", "'") for t in _TOKEN.findall(words_of(text))]
    tokens = [t[:-2] if t.endswith("'s") else t for t in tokens]
    while len(tokens) > 1 and tokens[0] in _LEADING:
        tokens = tokens[1:]
    return tuple(t for t in tokens if t)


def find(said: str, candidates: Mapping[str, Iterable[str]]) -> list[str]:
    """The candidates (id → the names it goes by) that `said` names: those with a name of
    exactly these words, else those with a name holding all of them ("cottage" for
    "Keeper's cottage"). More than one means the words are ambiguous."""
    wanted = key(said)
    if not wanted:
        return []
    keyed = {cid: {key(n) for n in names if n} for cid, names in candidates.items()}
    exact = [cid for cid, names in keyed.items() if wanted in names]
    if exact:
        return exact
    return [cid for cid, names in keyed.items() if any(set(wanted) <= set(n) for n in names)]


def either(options: list[str]) -> str:
    """ "A", "A or B", "A, B or C"."""
    if len(options) <= 1:
        return "".join(options)
    return ", ".join(options[:-1]) + " or " + options[-1]
