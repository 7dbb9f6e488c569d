"""The echo guard: lines of a reply that repeat the prompt's own notes are not story.

A small model often copies its instructions, its state notes or a story card into the
narration — verbatim, in part, or reworded (11 of 14 turns of a played demo). Such a line
is removed before anything is shown or stored, and the removal is said in Insights.

A line is judged by its first words only, so a stream can decide as soon as they have
arrived and the shown text only ever grows: a held line is released once it is judged
story, and never retracted. A line whose first few words plainly share nothing with the
sources is story at once; otherwise its opening (`OPENING_WORDS` words, or the whole line
if shorter) decides, and it is an echo when that opening

- is a run of a source line (`verbatim`);
- is mostly made of three-word runs found in the sources (`partial`);
- uses mostly the content words of one source line or clause, and covers most of them
  (`paraphrase`) — so prose that merely shares a few names with the state stays;
- or writes protocol: a stat path (`player.health`), an `(id, kind)` tag, a JSON event,
  or opens with one of the prompt's own labels ("World lore:", "With you:", "[Author's
  note:", `LABELS`, taken from the modules that write them) or a second-person form to fill
  in ("You are now:", "Your location:") — whatever follows, for a small model copies the
  form with content of its own (`protocol`). A speaker's label ("Maren:") is not one.

A line that retells the story itself (its opening is a run of, or mostly made of runs
from, the history, memories or summary) is kept even when the state says the same: the
story may repeat what happened.

Pure: the sources are texts; the turn and the memory writer say which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from talekeeper.context import budget
from talekeeper.context import prompt as sections
from talekeeper.state import notes
from talekeeper.state import prompt as state_prompt

OPENING_WORDS = 16
"""Words a line's verdict rests on: enough to know an echo, few enough to stream soon."""
EARLY_WORDS = 4
"""From this many words on, a line that plainly shares nothing with the sources is story."""
PARTIAL_SHARE = 0.6
PARAPHRASE_SHARE = 0.75
COVER_SHARE = 0.5
MIN_CONTENT = 4

ECHO_SOURCES = (
    "narrator",
    "length",
    "persona",
    "canon",
    "event_vocabulary",
    "stat_guide",
    "ai_instructions",
    "plot_essentials",
    "story_cards",
    "story_cards_after",
    "author_note",
    "current_state",
    "refusals",
    "emit_reminder",
)
"""The prompt's sections that are not story: a reply repeating them is echoing the
prompt. History, memories and the summary are the story itself, so prose may retell them."""
STORY_SOURCES = ("history", "memories", "story_summary")
"""The prompt's sections that are the story (see `ECHO_SOURCES`)."""

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_PROTOCOL = re.compile(
    r"\b(?:world|player)\.[a-z][a-z0-9_]*|\bnpc\.[a-z0-9_-]+\.[a-z]|\{\s*[\"']?(?:type|events)[\"']?\s*:",
    re.IGNORECASE,
)
_READOUT = re.compile(r"\b\d+\s*(?:of|/|out of)\s*\d+\b", re.IGNORECASE)
_NUMBER = r"[-+−]?\d+(?:\.\d+)?"
_LABELLED_FIGURE = (
    r"^[ \t>*_#-]*"  # list or emphasis markup
    r"[A-Za-z][A-Za-z'’.-]*(?:[ \t]+[A-Za-z][A-Za-z'’.-]*){0,2}"  # a label of 1-3 words
    r"[ \t]*[*_]*[ \t]*[:=][ \t]*[*_]*[ \t]*"
    r"(?:[A-Za-z][A-Za-z -]{0,24}\([ \t]*)?"  # a band word before the figures: "hale (10 of 10)"
)
_MAY_READ_OUT = re.compile(_LABELLED_FIGURE + r"[-+−]?\d", re.IGNORECASE)
MAY_READ_OUT_WORDS = 8
"""A line that opens with a label and a figure ("Night: 1 out of …") is not judged story
from its first words while it has at most this many: it may yet be a stat line."""
_STAT_LINE = re.compile(
    _LABELLED_FIGURE + rf"{_NUMBER}[ \t]*(?:/|of|out[ \t]+of)[ \t]*{_NUMBER}[ \t]*\)?"
    r"(?:[ \t]*\([^()\n]{0,40}\))?"  # or a band after them: "2/5 (wary)"
    r"[ \t.,;*_]*$",
    re.IGNORECASE | re.MULTILINE,
)
"""A line that is nothing but a stat read out ("Maren: 1 of 3", "Health: 2/5", "- Lamp
oil: 2 of 3", "Your health: hale (10 of 10)"): the state notes' form, garbled by a small
model into its prose. One figure inside a sentence is prose ("you count 3 of 4 coins")."""
LABELS = tuple(
    dict.fromkeys((*sections.LABELS, *budget.LABELS, *notes.LABELS, *state_prompt.LABELS))
)
"""The labels the prompt's non-story lines open with, from the modules that write them."""
_FORMS = (
    r"you(?:[ \t]+are|'re)(?:[ \t]+(?:now|currently|still|here|there|at|in))*",
    r"your[ \t]+(?:location|position|place|surroundings|situation|status|state|condition"
    r"|inventory|items|goals?|quests?|tasks?|objectives?|companions|party|role|character|scene)",
)
"""Second-person forms to fill in ("You are now: …", "Your location: …"): a colon right
after them is a form, never prose ("You are now in the cottage." stays)."""
_MARKUP = r"[ \t>*_#\[-]*(?:\d+[.)][ \t]+)?[ \t*_]*"  # list, emphasis, "[", "1."
_LABEL_LINE = re.compile(
    _MARKUP
    + "(?:"
    + "|".join(
        [
            r"[ \t]+".join(re.escape(w).replace("'", "['’]") for w in label.split())
            for label in LABELS
        ]
        + [f.replace("'", "['’]") for f in _FORMS]
    )
    + r")[ \t]*(?:\([^()\n]{0,40}\))?[ \t]*[*_]*[ \t]*:",
    re.IGNORECASE,
)
"""A line opening with one of the prompt's own labels (`LABELS`, `_FORMS`), in any markup:
"World lore: …", "**World lore:** …", "- With you: …", "Goals (mark with …): …"."""


_STAT_LABEL = re.compile(
    r"^[ \t-]*((?:[^:;\n]{1,40}['’]s|Your)[ \t]+[a-z][^:;\n()]{0,30}?)[ \t]*:", re.MULTILINE
)
"""A stat line's label in the state notes, named for this story: "Maren's trust: wary …",
"Your health: hale …" (see `EchoGuard.for_sections`)."""


def state_labels(notes: str) -> list[str]:
    """The labels this story's state notes open their stat lines with. They are the
    prompt's own as much as "With you:", but made from the scenario's names and stats, so
    they are read from the notes rather than listed ("Maren's trust: 'I'm sorry,' she
    said" was kept until then, and fed back)."""
    return list(dict.fromkeys(m.group(1).replace("’", "'") for m in _STAT_LABEL.finditer(notes)))


def _label_line(labels: Iterable[str]) -> re.Pattern[str] | None:
    words = [
        r"[ \t]+".join(re.escape(w).replace("'", "['’]") for w in label.split()) for label in labels
    ]
    if not words:
        return None
    return re.compile(_MARKUP + "(?:" + "|".join(words) + r")[ \t]*[*_]*[ \t]*:", re.IGNORECASE)


def _labelled(text: str, more: re.Pattern[str] | None = None) -> bool:
    """Whether a line (or the opening of one) begins with a prompt's label (or one of
    `more`, this story's state labels)."""
    text = text.replace("’", "'")
    return _LABEL_LINE.match(text) is not None or (
        more is not None and more.match(text) is not None
    )


def _may_be_labelled(prefix: str, more: re.Pattern[str] | None = None) -> bool:
    """Whether a streamed line's first words may still become a label ("Memories of earlier
    events" before its colon, "Goals (mark them with" before its bracket closes): such a
    line is not yet story."""
    return any(_labelled(prefix + end, more) for end in ("", ":", "):"))


_STOP = frozenset(
    """a an the and or but of to in on at by for from with without into onto over under as is are was were be been
    being am it its it's this that these those there here now then still so very you your yours you're i me my we
    our he him his she her hers they them their not no yes do does did has have had will would can could may
    might must shall should one all any some each""".split()
)


def _tokens(text: str) -> list[str]:
    """The words of a text; a number is `#`, so a stat readout echoed with numbers of the
    model's own ("night: 5 of 8" for "night: 1 of 3") still matches its source."""
    return [
        "#" if word.isdigit() else word for word in _WORD.findall(text.casefold().replace("’", "'"))
    ]


def _readout(text: str) -> bool:
    """Whether a text reads out stats ("night: 5 of 8; storm: 7 of 8", "10/5"): two or
    more of them is the state notes' form, not a story's."""
    return len(_READOUT.findall(text)) >= 2


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content(tokens: Sequence[str]) -> frozenset[str]:
    return frozenset(_stem(t) for t in tokens if t not in _STOP and t != "#")


# A turn's guard is built from its prompt, most of which (instructions, cards, the story
# so far) the turn before sent too: each line is analysed once, not once a turn.
@lru_cache(maxsize=8192)
def _story_line(line: str) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    tokens = _tokens(line)
    if not tokens:
        return "", ()
    return f" {' '.join(tokens)} ", tuple(zip(tokens, tokens[1:], tokens[2:], strict=False))


@lru_cache(maxsize=8192)
def _source_line(
    line: str,
) -> tuple[tuple[tuple[str, frozenset[str], bool], ...], tuple[tuple[str, str, str], ...]]:
    """A source line's units (the whole line, and each clause of a longer one) and its
    three-word runs."""
    tokens = _tokens(line)
    if not tokens:
        return (), ()
    units = [(f" {' '.join(tokens)} ", _content(tokens), True)]
    for clause in re.split(r"[;:—]| - ", line):  # a long note line holds several facts
        words = _tokens(clause)
        if words and len(words) < len(tokens):
            units.append((f" {' '.join(words)} ", _content(words), False))
    return tuple(units), tuple(zip(tokens, tokens[1:], tokens[2:], strict=False))


def opening(line: str) -> str | None:
    """The part of a line its verdict rests on, or None while a streamed line is still
    too short to judge (see `EchoGuard.shown`)."""
    words = line.split()
    if len(words) <= OPENING_WORDS:
        return line
    return " ".join(words[:OPENING_WORDS])


@dataclass(frozen=True)
class Removed:
    """One removed line: what it said, how it echoed, and which section it echoed."""

    line: str
    kind: str  # verbatim · partial · paraphrase · protocol (· loop, run: context/repeats)
    section: str

    def describe(self) -> str:
        text = shorten(self.line)
        where = f", {self.section.replace('_', ' ')}" if self.section else ""
        return f"“{text}” ({self.kind}{where})"


@dataclass(frozen=True)
class _Unit:
    section: str
    joined: str  # the tokens, space-joined, padded for whole-word search
    content: frozenset[str]
    whole: bool = True  # a whole source line (False: one clause of a longer line)


@lru_cache(maxsize=256)
def _source_section(
    section: str, text: str
) -> tuple[tuple[_Unit, ...], dict[tuple[str, str, str], str]]:
    """A source section's units and three-word runs (first section named): most sections
    (instructions, cards, the notes that did not change) are the turn before's, word for
    word. Shared between guards: read, never changed."""
    units: list[_Unit] = []
    shingles: dict[tuple[str, str, str], str] = {}
    for line in text.splitlines():
        line_units, runs = _source_line(line)
        units.extend(
            _Unit(section, joined, content, whole) for joined, content, whole in line_units
        )
        for run in runs:
            shingles.setdefault(run, section)
    return tuple(units), shingles


class EchoGuard:
    """Judges lines against a set of named source texts (see the module docstring)."""

    def __init__(
        self,
        sources: Iterable[tuple[str, str]],
        protocol_terms: Iterable[str] = (),
        story: Iterable[str] = (),
        labels: Iterable[str] = (),
    ) -> None:
        self._labels = _label_line(labels)  # this story's own state labels: `state_labels`
        self._units: list[_Unit] = []
        self._verdicts: dict[str, Removed | None] = {}
        self._plain: dict[str, bool] = {}
        self._openings: dict[str, tuple[str, str] | None] = {}
        self._shingles: dict[tuple[str, str, str], str] = {}
        self._story_texts = story  # read (once) only when a line looks like an echo: `_story`
        parts = [_source_section(section, text or "") for section, text in sources]
        for units, _ in parts:
            self._units.extend(units)
        for _, shingles in reversed(parts):  # a run both sections have is the first's
            self._shingles.update(shingles)
        terms = sorted({t for t in protocol_terms if t}, key=len, reverse=True)
        self._terms = (
            re.compile(
                r"\(\s*(?:" + "|".join(re.escape(t) for t in terms) + r")\s*[,)]", re.IGNORECASE
            )
            if terms
            else None
        )

    @classmethod
    def for_sections(
        cls, sections: Iterable[tuple[str, str]], ids: Iterable[str] = ()
    ) -> EchoGuard:
        """A guard over the prompt's non-story sections (`ECHO_SOURCES`), with its story
        sections (`STORY_SOURCES`) as what may be retold; `ids` are the entity ids an
        `(id, kind)` tag would name. Lines placed inside the history that are not story
        (the author's note, cards at a depth) are not counted as story."""
        sections = [(name, text or "") for name, text in sections]
        sources = [(name, text) for name, text in sections if name in ECHO_SOURCES]
        placed = {
            line.strip()
            for name, text in sources
            if name in ("author_note", "story_cards", "story_cards_after")
            for line in text.splitlines()
        }
        story = (  # lazily: see `_story`
            "\n".join(
                line
                for line in text.splitlines()
                if line.strip() not in placed
                and not line.lstrip().startswith(("[Author's note:", "World lore:"))
            )
            for name, text in sections
            if name in STORY_SOURCES
        )
        labels = state_labels(dict(sections).get("current_state", ""))
        return cls(sources, ids, story, labels)

    def judge(self, line: str) -> Removed | None:
        """Why `line` is an echo of the sources, or None when it is story.

        A line whose first few words (from `EARLY_WORDS` on) already share no three-word
        run and at most one content word with any source is story at once — so a stream
        need not hold it; otherwise its opening decides.
        """
        if line in self._verdicts:
            return self._verdicts[line]
        words = line.split()
        verdict = None
        if not self._story_from(words, len(words)):
            verdict = self._judge_opening(line)
        if len(self._verdicts) < 4096:
            self._verdicts[line] = verdict
        return verdict

    def _story_from(self, words: list[str], complete: int) -> bool:
        """Whether some prefix of the first `complete` words is plainly story."""
        return any(
            self._plainly_story(" ".join(words[:k]))
            for k in range(EARLY_WORDS, min(complete, OPENING_WORDS) + 1)
        )

    def _plainly_story(self, prefix: str) -> bool:
        known = self._plain.get(prefix)
        if known is None:
            known = self._plain[prefix] = self._judge_plainly(prefix)
            if len(self._plain) > 8192:  # a stream asks of each growing prefix once
                self._plain.clear()
        return known

    def _writes_protocol(self, text: str) -> bool:
        """Stat paths, JSON events, stat readouts, or an `(id` tag of the state's entities."""
        return bool(
            _PROTOCOL.search(text)
            or _readout(text)
            or (self._terms is not None and self._terms.search(text))
        )

    def _judge_plainly(self, prefix: str) -> bool:
        if self._writes_protocol(prefix) or _may_be_labelled(prefix, self._labels):
            return False
        if len(prefix.split()) <= MAY_READ_OUT_WORDS and _MAY_READ_OUT.match(prefix):
            return False  # "Night: 1 out of": it may yet be a stat line
        tokens = _tokens(prefix)
        if len(tokens) < EARLY_WORDS:
            return False
        if any(
            (tokens[i], tokens[i + 1], tokens[i + 2]) in self._shingles
            for i in range(len(tokens) - 2)
        ):
            return False
        content = _content(tokens)
        return all(len(content & unit.content) <= 1 for unit in self._units)

    def _judge_opening(self, line: str) -> Removed | None:
        key = opening(line) or ""
        known = self._openings.get(key, self)
        if known is not self:  # a streamed line asks of the same opening piece after piece
            return None if known is None else Removed(line, *known)
        verdict = self._judge_key(line, key)
        if len(self._openings) > 4096:
            self._openings.clear()
        self._openings[key] = None if verdict is None else (verdict.kind, verdict.section)
        return verdict

    def _judge_key(self, line: str, key: str) -> Removed | None:
        if self._writes_protocol(key) or _labelled(key, self._labels):
            return Removed(line, "protocol", "")
        tokens = _tokens(key)
        if not tokens:
            return None
        joined = f" {' '.join(tokens)} "
        runs = [(tokens[i], tokens[i + 1], tokens[i + 2]) for i in range(len(tokens) - 2)]
        if self._retells(tokens, joined, runs):
            return None
        if _STAT_LINE.match(key):  # "Health: 2/5" alone on its line (not retold)
            return Removed(line, "protocol", "")
        for unit in self._units:
            # a short line is an echo only as a whole source line of two words or more
            # ("With you: Maren"), never for matching a clause ("Elsewhere.")
            short = len(tokens) >= 2 and unit.whole and joined == unit.joined
            if (len(tokens) >= 4 or short) and joined in unit.joined:
                return Removed(line, "verbatim", unit.section)
        if len(runs) >= 3:
            found = [self._shingles[r] for r in runs if r in self._shingles]
            if len(found) >= PARTIAL_SHARE * len(runs):
                return Removed(line, "partial", max(set(found), key=found.count))
        content = _content(tokens)
        if len(content) >= MIN_CONTENT:
            for unit in self._units:
                shared = len(content & unit.content)
                if (
                    shared >= MIN_CONTENT
                    and shared >= PARAPHRASE_SHARE * len(content)
                    and shared >= COVER_SHARE * len(unit.content)
                ):
                    return Removed(line, "paraphrase", unit.section)
        return None

    @cached_property
    def _story(self) -> tuple[list[str], set[tuple[str, str, str]]]:
        """The story sections' lines and three-word runs. Most replies have no line that
        looks like an echo, so most turns never ask: the history alone is hundreds of lines."""
        lines: list[str] = []
        shingles: set[tuple[str, str, str]] = set()
        for text in self._story_texts:
            for line in (text or "").splitlines():
                joined, runs = _story_line(line)
                if joined:
                    lines.append(joined)
                    shingles.update(runs)
        return lines, shingles

    def _retells(self, tokens: list[str], joined: str, runs: list[tuple[str, str, str]]) -> bool:
        """Whether an opening retells the story sections (history, memories, summary)."""
        story_lines, story_shingles = self._story
        if len(tokens) >= 4 and any(joined in line for line in story_lines):
            return True
        if len(tokens) < 4 and joined in story_lines:
            return True
        return len(runs) >= 3 and sum(r in story_shingles for r in runs) >= PARTIAL_SHARE * len(
            runs
        )

    def clean(self, text: str) -> tuple[str, list[Removed]]:
        """The finished text without its echo lines, and what was removed."""
        kept, removed = self._filter(text.split("\n"))
        return "\n".join(kept).strip("\n"), removed

    def shown(self, text: str) -> str:
        """What of a still-streaming text may be shown: every complete line that is story,
        and the unfinished last one once it is known to be story (plainly, from its first
        words, or by its whole opening). A prefix of `clean(final)[0]` for any
        continuation, so the shown text only grows."""
        lines = text.split("\n")
        last = lines.pop()
        words = last.split()
        complete = len(words) if last[-1:].isspace() else len(words) - 1
        if self._story_from(words, complete) or (
            complete >= OPENING_WORDS and self._judge_opening(last) is None
        ):
            lines.append(last)
        kept, _ = self._filter(lines)
        while kept and not kept[-1].strip():  # a blank line is shown with the line after it
            kept.pop()
        return "\n".join(kept)

    def _filter(self, lines: list[str]) -> tuple[list[str], list[Removed]]:
        kept: list[str] = []
        removed: list[Removed] = []
        for line in lines:
            verdict = self.judge(line) if line.strip() else None
            if verdict is not None:
                removed.append(verdict)
                continue
            if not line.strip() and (not kept or not kept[-1].strip()):
                continue  # no blank line at the start or twice in a row (where an echo was)
            kept.append(line)
        return kept, removed


LONG = 1024
"""Characters of an unfinished line judged whole on every streamed piece."""


class EchoStream:
    """`EchoGuard.shown` over a text fed in pieces, each read once.

    Lines that ended are judged once, in order (`EchoGuard._filter`'s rules: an echo is
    dropped, a blank line is kept only after a kept line and once). The unfinished last
    line is judged whole while it is short (`LONG`); once shown it goes on being shown (the
    guard's rule: what was shown is story whatever follows), and a long one not shown is
    held until it ends — never shown sooner than `EchoGuard.shown` would show it.
    """

    def __init__(self, guard: EchoGuard) -> None:
        self.guard = guard
        self.text = ""
        self._line = 0  # where the unfinished line starts
        self._shown = 0  # …how much of it was shown (0: none)
        self._started = False  # a line was shown
        self._kept = False  # a line was kept (shown, or a blank line waiting)
        self._blank: str | None = None  # a kept blank line, shown once a line follows it

    def feed(self, piece: str) -> str:
        """What is newly shown."""
        if not piece:
            return ""
        text = self.text
        self.text = ""
        text += piece
        self.text = text
        out: list[str] = []
        start = len(text) - len(piece)
        newline = text.find("\n", start)
        while newline >= 0:
            self._ended(text[self._line : newline], out)
            self._line, self._shown = newline + 1, 0
            newline = text.find("\n", self._line)
        self._unfinished(text, out)
        return "".join(out)

    def _show(self, line: str, out: list[str]) -> None:
        if self._started:
            out.append("\n")
            if self._blank is not None:
                out.append(self._blank + "\n")
        out.append(line)
        self._started = self._kept = True
        self._blank = None

    def _ended(self, line: str, out: list[str]) -> None:
        if self._shown:  # shown while it streamed: story
            out.append(line[self._shown :])
            return
        if not line.strip():
            if self._kept and self._blank is None:
                self._blank = line
            return
        if self.guard.judge(line) is None:
            self._show(line, out)

    def _unfinished(self, text: str, out: list[str]) -> None:
        size = len(text)
        if self._shown:
            out.append(text[self._line + self._shown : size])
            self._shown = size - self._line
            return
        if size - self._line > LONG:
            return  # held until it ends
        last = text[self._line : size]
        if not last.strip():
            return
        words = last.split()
        complete = len(words) if last[-1:].isspace() else len(words) - 1
        guard = self.guard
        if (
            guard._story_from(words, complete)
            or (complete >= OPENING_WORDS and guard._judge_opening(last) is None)
        ) and guard.judge(last) is None:
            self._show(last, out)
            self._shown = len(last)


RESTATE_SHARE = 0.75
"""A note whose content words are at least this share found in the narration adds nothing."""


def restates(note: str, prose: str) -> bool:
    """Whether a model's note only repeats the narration it came with (so it is no change)."""
    content = _content(_tokens(note))
    if not content:
        return True
    return len(content & _content(_tokens(prose))) >= RESTATE_SHARE * len(content)


def has_protocol(text: str, ids: Iterable[str] = ()) -> bool:
    """Whether a text the player or narrator will read carries protocol: a stat path, a
    JSON event, a stat readout ("night: 5 of 8; storm: 7 of 8"), a line that is one stat
    read out ("Health: 2/5") or an `(id` tag of one of `ids` ("Maren (maren) — alive")."""
    if _PROTOCOL.search(text) or _readout(text) or _STAT_LINE.search(text):
        return True
    terms = [re.escape(t) for t in ids if t]
    return (
        bool(terms)
        and re.search(r"\(\s*(?:" + "|".join(terms) + r")\s*[,)]", text, re.I) is not None
    )


REPEAT_KINDS = ("loop", "run")
"""Removals made by the repeat guard (context/repeats), described apart from echoes."""


def summary(removed: Sequence[Removed]) -> str:
    """The Insights note for a turn's removed lines (and repeated sentences)."""
    echoes = [r for r in removed if r.kind not in REPEAT_KINDS]
    loops = [r for r in removed if r.kind == "loop"]
    runs = [r for r in removed if r.kind == "run"]
    notes = []
    if echoes:
        lines = "line" if len(echoes) == 1 else "lines"
        notes.append(
            f"The echo guard removed {len(echoes)} {lines} of the reply that repeated the "
            "prompt instead of telling the story: " + "; ".join(r.describe() for r in echoes) + "."
        )
    if loops:
        notes.append(
            f"The reply began to say “{shorten(loops[0].line)}” a second time, so it ended "
            "there (the model was stopped; the rest would only have repeated it)."
        )
    if runs:
        notes.append(
            f"The reply began to say “{shorten(runs[0].line)}” over and over inside a sentence, "
            "so it ended after the first (the model was stopped)."
        )
    return " ".join(notes)


def shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 80 else text[:79] + "…"
