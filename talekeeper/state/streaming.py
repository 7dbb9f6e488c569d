"""The state block hidden from a reply while it streams, each piece read once.

`extract.visible_prefix(text)` says what of a reply may be shown so far. Asked again of the
whole reply after every streamed piece, its work grew with the square of the reply's length
(a reply of 20,000 backticks took 46 s): `VisibleStream` gives the same answers piece by
piece, with work proportional to each piece.

- The scan for protocol resumes where it stopped. A construct not yet decided (a fence not
  yet closed, a `{` not yet balanced) is watched through what arrives, not read again; each
  pattern's search resumes where a match could still begin.
- Lines before the last are read once, as each one ends (is it a fence line, a line echoing
  the reminder, a line the model wrote as the player's action).
- The last line is judged whole while it is short (`LONG` characters). A longer one of which
  nothing was shown is held until it ends — the one place where the answers may differ from
  `visible_prefix`'s, and only by holding longer; one that was shown goes on being shown
  (what was shown stays shown: the filter's own rule).

Pure: text in, text out.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from . import extract as x
from .extract import search_state_open

LONG = 1024
"""Characters of a last line judged whole on every piece (see the module docstring)."""

_NEWLINE = re.compile(r"\n")
_BLANK_RUN = re.compile(r"[ \t]+")
_TICK_RUN = re.compile(r"`+")
_TAIL_RUN = re.compile(r"[` \t]+")
_NOT_BLANK = re.compile(r"[^ \t]")
_FENCE_LINE_END = re.compile(r"[\n`]")
_STATE_WORD = re.compile(r"state(?![\w-])", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_SIGNIFICANT = re.compile(r"[\\\"'{}\[\]]")
_FENCE_PREFIX = re.compile(r"[ \t]{0,3}`{0,2}")
_CLOSINGS: dict[int, re.Pattern[str]] = {}
_STATE_WORD_TAIL = re.compile(r"s(?:t(?:a(?:t(?:e)?)?)?)?\Z", re.IGNORECASE)
"""Part of the word `state` ending the text: after three backticks, a fence may be opening."""
_MARKUP = " \t-*_#>"
_LABELS = ("state block:", "state update:", "state changes:", "changes:", "events:", "json:")
_EVENT_KEYS = ('"events"', "'events'", "events")


def _label_prefix(line: str) -> bool:
    """Whether an unfinished last line could still become a label line ("State:")."""
    stripped = line.strip().strip("*_#> ").casefold()
    if not stripped:
        return False
    return any(
        label.startswith(stripped) or stripped.rstrip(":") == label.rstrip(":") for label in _LABELS
    )


def _may_be_events(text: str) -> bool:
    """Whether a line-start `{` (what follows it so far: `text`) may yet open an object
    whose first key is `events`."""
    if x._EVENTS_KEY.match(text):
        return True
    rest = text[1:].lstrip()
    return any(
        key.startswith(rest) or (rest.startswith(key) and not rest[len(key) :].strip())
        for key in _EVENT_KEYS
    )


_BLOCK = object()  # a hold's verdict: the construct is protocol (the shown text ends there)


class _Runs:
    """Maximal runs of one class of characters in a growing text, as (start, end) pairs."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, text: str, start: int) -> None:
        for match in self.pattern.finditer(text, start):
            if self.ends and self.ends[-1] == match.start():
                self.ends[-1] = match.end()  # the run goes on from the last piece
            else:
                self.starts.append(match.start())
                self.ends.append(match.end())

    def start_before(self, pos: int) -> int:
        """The start of the run that ends right at `pos`, or `pos` when none does."""
        i = bisect_right(self.starts, pos - 1) - 1
        if i >= 0 and self.starts[i] <= pos - 1 < self.ends[i]:
            return self.starts[i]
        return pos

    def first_in(self, a: int, b: int) -> int | None:
        """The first position in [a, b) inside a run, or None."""
        i = bisect_right(self.ends, a)
        if i < len(self.starts) and self.starts[i] < b:
            return max(a, self.starts[i])
        return None


class _Text:
    """The reply so far, and what is known of it as it grows."""

    def __init__(self) -> None:
        self.value = ""
        self.newlines: list[int] = []
        self.ink = 0  # just past the last character that is not whitespace
        self.blanks = _Runs(_BLANK_RUN)
        self.ticks = _Runs(_TICK_RUN)
        self.tails = _Runs(_TAIL_RUN)
        self._ink_before: dict[int, int] = {}

    def add(self, piece: str) -> int:
        start = len(self.value)
        value = self.value
        self.value = ""  # one reference left, so the string grows in place
        value += piece
        self.value = value
        self.newlines.extend(m.start() for m in _NEWLINE.finditer(value, start))
        kept = len(piece.rstrip())
        if kept:
            self.ink = start + kept
        for runs in (self.blanks, self.ticks, self.tails):
            runs.add(value, start)
        return start

    def line_start(self, pos: int) -> int:
        """Where the line holding the character before `pos` starts: `rfind("\\n", 0, pos) + 1`."""
        i = bisect_left(self.newlines, pos) - 1
        return self.newlines[i] + 1 if i >= 0 else 0

    def line_end(self, start: int) -> int | None:
        """Where the line starting at `start` ends (its newline), or None while it goes on."""
        i = bisect_left(self.newlines, start)
        return self.newlines[i] if i < len(self.newlines) else None

    def ink_before(self, pos: int) -> int:
        """`len(text[:pos].rstrip())`."""
        if pos >= len(self.value):
            return self.ink
        known = self._ink_before.get(pos)
        if known is None:
            value, end = self.value, pos
            while end and value[end - 1].isspace():
                end -= 1
            if len(self._ink_before) > 64:
                self._ink_before.clear()
            known = self._ink_before[pos] = end
        return known


# --- searching a growing text ---------------------------------------------------------


class _Search:
    """The first match of one pattern at or after a position, in a text that only grows.

    A match that ends before the end of the text is kept while the scan has not passed its
    start; a search that found nothing resumes where a match could still begin (`resume`),
    and is not run at all while the text after that point cannot hold one yet (`pending`).
    """

    def __init__(
        self,
        search: Callable[[str, int], re.Match[str] | None],
        resume: Callable[[_Text], int],
        pending: Callable[[_Text, int], bool],
    ) -> None:
        self.search = search
        self.resume = resume
        self.pending = pending
        self.match: re.Match[str] | None = None  # firm: ends before the text's end
        self.after = 0  # no match starts in [the last search's start, after)

    def find(self, text: _Text, pos: int) -> re.Match[str] | None:
        if self.match is not None and self.match.start() >= pos:
            return self.match
        self.match = None
        start = max(pos, self.after)
        if start < len(text.value) and self.after > pos and self.pending(text, self.after):
            return None
        found = self.search(text.value, start)
        if found is None:
            self.after = max(start, self.resume(text))
        elif found.end() < len(text.value):
            self.match = found
        else:  # it may yet grow or fail: search again from its start
            self.after = found.start()
        return found


def _state_resume(text: _Text) -> int:
    """Where a state fence could still begin: the backtick run (with blanks and part of
    the word `state`) at the very end."""
    n = len(text.value)
    word = _STATE_WORD_TAIL.search(text.value, max(0, n - 5))
    blank = text.blanks.start_before(word.start() if word else n)
    run = text.ticks.start_before(blank)
    return run if run < blank else n


def _state_pending(text: _Text, after: int) -> bool:
    """Whether the text from `after` on is still the same unfinished fence opening."""
    if _state_resume(text) != after:
        return False
    n = len(text.value)
    return not (n - after >= 8 and _STATE_WORD.search(text.value, n - 6))


def _fence_resume(text: _Text) -> int:
    """Where a fence could still open: the last line's start, while that line is still
    nothing but a few blanks and backticks."""
    n = len(text.value)
    start = text.line_start(n)
    if n - start <= 5 and _FENCE_PREFIX.fullmatch(text.value, start, n):
        return start
    return n


def _fence_pending(text: _Text, after: int) -> bool:
    """Never: searching again from where a fence could open reads a handful of characters."""
    return False


def _object_resume(text: _Text) -> int:
    """Where a line-start `{` could still come: the last line's start while it is blank."""
    n = len(text.value)
    start = text.line_start(n)
    return start if text.ink <= start else n  # a blank last line may yet open an object


def _object_pending(text: _Text, after: int) -> bool:
    """The last line is still blank (however long): no `{` yet to find."""
    return text.line_start(len(text.value)) == after and text.ink <= after


# --- constructs not yet decided --------------------------------------------------------


class _FenceHold:
    """A fence opened (```` ``` ```` at a line's start) whose block is not decided yet.

    First its opening line may still grow (its backticks, its info string, or `state`
    after them: then it is the state fence); then its content runs until a closing line,
    each line tried once, as it ends."""

    def __init__(self, text: _Text, match: re.Match[str]) -> None:
        self.at = match.start(1)
        self.line = text.line_start(self.at + 1)
        self.opening: re.Match[str] | None = None  # the opening line, once it ended
        self.word_at: int | None = None  # where the info string begins
        self.scanned = 0  # the opening line holds no newline or backtick before here
        self.next_line = 0  # the first line not yet tried as the closing one

    def poll(self, text: _Text) -> Any:
        value, n = text.value, len(text.value)
        if self.opening is None:
            i = bisect_right(text.ticks.starts, self.at) - 1
            run_end = text.ticks.ends[i]
            if run_end >= n:
                return None  # more backticks may come
            if self.word_at is None:
                found = _NOT_BLANK.search(value, run_end)
                if found is None:
                    return None
                self.word_at = self.scanned = found.start()
            state = _STATE_WORD.match(value, self.word_at)
            if state is not None:  # ```state: the state fence (once `state` is a whole word)
                return _BLOCK if state.end() < n else None
            ended = _FENCE_LINE_END.search(value, self.scanned)
            if ended is None:
                self.scanned = n
                return None  # the info string may grow
            self.opening = x._FENCE_OPEN.match(value, self.line)
            assert self.opening is not None and self.opening.start(1) == self.at
            body = self.opening.end() + 1
            if value[body - 1] == "\n":
                self.next_line = body
            else:  # the opening ended at a backtick: the body's first line is no candidate
                self.next_line = -1
        return self._closed(text)

    def _closed(self, text: _Text) -> Any:
        value = text.value
        assert self.opening is not None
        body = self.opening.end() + 1
        if self.next_line < 0:
            end = text.line_end(body)
            if end is None:
                return None
            self.next_line = end + 1
        ticks = len(self.opening.group(1))
        closing = _CLOSINGS.get(ticks)
        if closing is None:
            closing = _CLOSINGS[ticks] = re.compile(rf"[ \t]{{0,3}}`{{{ticks},}}[ \t]*\n")
        i = bisect_left(text.newlines, self.next_line)
        for end in text.newlines[i:]:
            close = closing.match(value, self.next_line, end + 1)
            if close is not None:
                return self._decide(value, body, close)
            self.next_line = end + 1
        return None

    def _decide(self, value: str, body: int, close: re.Match[str]) -> Any:
        assert self.opening is not None
        info = self.opening.group(2).strip().casefold()
        content = value[body : close.start()]
        if info in x._JSON_INFOS and x._proposal_like(content, closed=True):
            return _BLOCK
        if search_state_open(value, self.opening.end(), close.end()) or x._INNER_FENCE.search(
            content
        ):
            return self.opening.end()  # a story's block that may hide one: read inside it
        return close.end()


class _ObjectHold:
    """A `{` at a line's start (after blanks) that may open a bare `{"events": …}`."""

    def __init__(self, match: re.Match[str]) -> None:
        self.at = match.end() - 1
        self.after = match.end()
        self.seen = "{"  # what follows the brace, spaces squeezed: enough to tell `events`
        self.read = self.after
        self.keyed = False
        self.depth = 0
        self.quote: str | None = None
        self.skip = 0  # an escaped character: matches before here are not read

    def poll(self, text: _Text) -> Any:
        value, n = text.value, len(text.value)
        if not self.keyed:
            if len(self.seen) <= _KEY_SEEN:
                self.seen = _SPACE.sub(" ", self.seen + value[self.read : n])[: _KEY_SEEN + 1]
                self.read = n
            if not _may_be_events(self.seen):
                return self.after  # not protocol: the scan goes on after the brace
            if not x._EVENTS_KEY.match(self.seen):
                return None  # `{"ev…`: may still become a proposal
            self.keyed, self.read = True, self.at
        end = self._balanced(value)
        if end is None:
            return None
        if x._as_proposal(x._loads(value[self.at : end])) is not None:
            return _BLOCK
        return self.after if search_state_open(value, self.after, end) else end

    def _balanced(self, value: str) -> int | None:
        """`extract._balanced_end(value, self.at)`, resumed where the last piece ended."""
        for match in _SIGNIFICANT.finditer(value, self.read):
            i, c = match.start(), match.group()
            if i < self.skip:
                continue
            if self.quote:
                if c == "\\":
                    self.skip = i + 2
                elif c == self.quote:
                    self.quote = None
            elif c in "\"'":
                if self.depth > 0:
                    self.quote = c
            elif c in "{[":
                self.depth += 1
            elif c in "}]":
                self.depth -= 1
                if self.depth == 0:
                    return i + 1
        self.read = len(value)
        return None


_KEY_SEEN = 16  # characters (spaces squeezed) after which `{…` is an events key or not


class _Scan:
    """`extract._scan(text, streaming=True)` up to the first block, resumed piece by piece."""

    def __init__(self) -> None:
        self.pos = 0
        self.block: int | None = None
        self.hold: _FenceHold | _ObjectHold | None = None
        self.state = _Search(search_state_open, _state_resume, _state_pending)
        self.fence = _Search(lambda t, p: x._FENCE_OPEN.search(t, p), _fence_resume, _fence_pending)
        self.object = _Search(
            lambda t, p: x._LINE_OBJECT.search(t, p), _object_resume, _object_pending
        )

    def advance(self, text: _Text) -> int:
        """Where the first block or undecided construct begins (the text's end if none)."""
        if self.block is not None:
            return self.block
        n = len(text.value)
        while True:
            if self.hold is not None:
                verdict = self.hold.poll(text)
                if verdict is None:
                    return self.hold.at
                if verdict is _BLOCK:
                    self.block = self.hold.at
                    return self.block
                self.hold, self.pos = None, verdict
            if self.pos >= n:
                return n
            s = self.state.find(text, self.pos)
            f = self.fence.find(text, self.pos)
            o = self.object.find(text, self.pos)
            first = min(
                (m for m in ((s, 0), (f, 1), (o, 2)) if m[0] is not None),
                key=lambda m: (m[0].start(1) if m[1] == 1 else m[0].start(), m[1] != 0),
                default=None,
            )
            if first is None:
                return n
            match, kind = first
            if kind == 0:
                if match.end() == n:
                    return match.start()  # `state` may still go on into a longer word
                self.block = match.start()
                return self.block
            self.hold = _FenceHold(text, match) if kind == 1 else _ObjectHold(match)


class _Lines:
    """What each line is, read once as it ends (its first characters, for a player line)."""

    def __init__(self) -> None:
        self.done = 0  # lines wholly read: the next one starts here
        self.fences: list[int] = []  # starts of lines that are fence lines
        self.first_echo: int | None = None  # start of the first line echoing the reminder
        self.player: tuple[int, int] | None = None  # the first player line: (start, its `>`)
        self._judging = 0  # the line being judged a player line or not
        self._from = 0  # …read up to here (blanks so far)
        self._next = False  # …it is not one: judge the next line once it starts

    def add(self, text: _Text, start: int) -> None:
        value = text.value
        for end in text.newlines[bisect_left(text.newlines, start) :]:
            line = value[self.done : end]
            if x._is_fence(line):
                self.fences.append(self.done)
            if self.first_echo is None and x._norm_line(line) in x._REMINDER_LINES:
                self.first_echo = self.done
            self.done = end + 1
        while self.player is None:
            if self._next:
                end = text.line_end(self._from)
                if end is None:
                    return
                self._judging = self._from = end + 1
                self._next = False
            found = _NOT_BLANK.search(value, self._from)
            if found is None:
                self._from = len(value)
                return
            if found.group() == ">":
                self.player = (self._judging, found.start())
            elif found.group() == "\n":
                self._judging = self._from = found.start() + 1
            else:
                self._from, self._next = found.start(), True

    def fences_before(self, pos: int) -> int:
        return bisect_left(self.fences, pos)


def visible_prefix(streaming_text: str) -> str:
    """What of a reply still streaming is safe to show.

    Everything before the first thing that is, or might still become, protocol: a state
    fence (even a partial ```` `` ```` or ```` ```sta ```` at the very end), a fence or a
    line-start `{` not yet closed, a label line, a line that may be echoing the reminder,
    or a line the model wrote as the player's action (`> You …`). Held text is released
    once it turns out to be prose, so the visible text only ever grows, and it is a prefix
    of the final prose. (The whole text at once; a stream feeds `VisibleStream`.)
    """
    stream = VisibleStream(long=len(streaming_text))
    stream.feed(streaming_text)
    return streaming_text[: stream.shown]


class VisibleStream:
    """Feed a reply's pieces as they stream; each feed returns what newly became visible.

    After every feed, `text[:shown]` is `visible_prefix(text)`, except that a last line
    longer than `long` of which nothing was shown is held until it ends (see the module
    docstring)."""

    def __init__(self, long: int = LONG) -> None:
        self.long = long
        self._text = _Text()
        self._scan = _Scan()
        self._lines = _Lines()
        self.shown = 0
        self._cut: int | None = None
        self._pieces: dict[tuple[str, int, int], bool] = {}

    @property
    def text(self) -> str:
        return self._text.value

    def feed(self, piece: str) -> str:
        if not piece:
            return ""
        text = self._text
        start = text.add(piece)
        self._lines.add(text, start)
        cut = self._scan.advance(text)
        if cut == self._cut and cut < start:
            return ""  # held where it was: what is before it has not changed
        self._cut = cut
        end = self._visible(cut)
        if end <= self.shown:
            return ""
        new = text.value[self.shown : end]
        self.shown = end
        return new

    def _visible(self, cut: int) -> int:
        text, lines = self._text, self._lines
        if lines.player is not None and lines.player[1] < cut:
            cut = min(cut, lines.player[0])
        body = text.ink_before(cut)
        start = text.line_start(body)
        if self._judge("fence", start, body):
            cut = start
        start = text.line_start(cut)
        if lines.first_echo is not None and lines.first_echo < start:
            cut = lines.first_echo
        elif self._judge("echo", start, cut):
            cut = start
        tail = self._opening_tail(cut)
        if tail is not None:
            cut = tail
        body = text.ink_before(cut)
        start = text.line_start(body)
        if self._judge("label", start, body):
            cut = start
        start = text.line_start(cut)
        if self._judge("last", start, cut):
            cut = start
            # The line held may yet be the reminder echoed: a bare fence or a label line
            # just before it goes with it ("State:" then "After the story, …").
            body = text.ink_before(cut)
            start = text.line_start(body)
            if self._judge("fence", start, body) or self._judge("label", start, body):
                cut = start
        return cut

    def _judge(self, kind: str, a: int, b: int) -> bool:
        """Whether the piece `text[a:b]` of one line holds the shown text before it."""
        key = (kind, a, b)
        known = self._pieces.get(key)
        if known is not None:
            return known
        text = self._text
        if b - a > self.long and text.line_end(a) is None:
            # the long last line: held until it ends, unless some of it was shown
            return self.shown <= a
        piece = text.value[a:b]
        if kind == "fence":
            verdict = bool(x._FENCE_ONLY.match(piece)) and bool(
                (self._lines.fences_before(a) + x._is_fence(piece)) % 2
            )
        elif kind == "echo":
            verdict = x._norm_line(piece) in x._REMINDER_LINES
        elif kind == "label":
            verdict = bool(x._LABEL_LINE.match(piece))
        else:
            norm = x._norm_line(piece)
            verdict = (
                not piece.strip(_MARKUP)
                or _label_prefix(piece)
                or any(r.startswith(norm) for r in x._REMINDER_LINES)
            )
        if len(self._pieces) > 64:
            self._pieces.clear()
        self._pieces[key] = verdict
        return verdict

    def _opening_tail(self, cut: int) -> int | None:
        """`extract._opening_tail(text[:cut])`, from the runs known of the text."""
        text = self._text
        word = _STATE_WORD_TAIL.search(text.value, max(0, cut - 5), cut)
        end = cut
        if word:
            blank = text.blanks.start_before(word.start())
            run = text.ticks.start_before(blank)
            if blank - run < 3:
                return None
            end = run
        start = text.tails.start_before(end)
        first = text.ticks.first_in(start, end)
        if first is None:
            return end if word else None
        return first
