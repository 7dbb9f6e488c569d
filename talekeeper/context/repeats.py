"""The repeat guard: a reply that says a sentence twice has stopped telling the story.

A small model falls into loops ("The sea is a great and unforgiving enemy. The sea is a
great and unforgiving enemy. …") until its token limit: the story reads broken, and the
player waits for it. A sentence that repeats one said earlier in the same reply is a
**loop**: the reply ends before it, and the turn stops the model there — nothing it would
write after that is new.

"Repeats" means the same words (case, punctuation and spacing aside), or the same first
`PREFIX_WORDS` words; a sentence of fewer than `MIN_WORDS` words ("No." "He waits.") may
recur. A sentence of earlier turns is not judged: a reply may well say again what the story
said (and a scripted or deterministic model says the same thing every turn).

A loop can also stay inside one sentence ("You see Grimbold, Grimbold, Grimbold,
Grimbold, Grimbold…"): a **run** — one word said `RUN_ONE` times in a row, or a phrase of
two to `RUN_PHRASE` words said `RUN_MANY` times — ends the reply after its first saying.
"No, no, no!" and "again and again" are prose, not runs.

Streaming-safe like the echo guard: an unfinished sentence is held only while its words so
far could still turn out to repeat, and released as soon as they cannot, so the shown text
only ever grows; likewise the words that could be a run's repetitions, from the end of its
first saying (`_Runs`, which reads each character once). Pure: text in, text out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from talekeeper.context.echo import Removed, _tokens

MIN_WORDS = 5
PREFIX_WORDS = 8
RUN_ONE = 5
"""One word said this many times in a row, inside a sentence, is a run."""
RUN_PHRASE = 4
RUN_MANY = 4
"""A phrase of 2 to `RUN_PHRASE` words said `RUN_MANY` times in a row is a run."""

_SENTENCE = re.compile(r"[^.!?…\n]*(?:[.!?…]+[\"'”’)\]*_]*|\n|$)")
"""A sentence: up to its end marks (and any closing quotes or emphasis) or a line's end."""
_ENDED = re.compile(r"[.!?…][\"'”’)\]*_]*\s*$")


@dataclass(frozen=True)
class _Sentence:
    text: str  # the sentence itself
    gap: str  # the whitespace after it
    complete: bool  # its end is known (end marks, or a line's end, then whitespace)


def _sentences(text: str, final: bool) -> list[_Sentence]:
    out: list[_Sentence] = []
    pos, size = 0, len(text)
    while pos < size:
        match = _SENTENCE.match(text, pos)
        end = match.end() if match and match.end() > pos else size
        gap_end = end
        while gap_end < size and text[gap_end].isspace():
            gap_end += 1
        body, gap = text[pos:end], text[end:gap_end]
        if body.endswith("\n"):  # a line's end closes a sentence; the newline is its gap
            body, gap = body[:-1], "\n" + gap
        # settled once anything follows its end (more end marks or quotes would extend it)
        out.append(_Sentence(body, gap, final or bool(gap) or gap_end < size))
        pos = gap_end
    return out


def _key(tokens: list[str]) -> tuple[str, ...]:
    return tuple(tokens[:PREFIX_WORDS])


def _needed(n: int) -> int:
    """Words after a run's first saying that make it one: (sayings − 1) × its length."""
    return (RUN_ONE - 1) if n == 1 else (RUN_MANY - 1) * n


class _Runs:
    """The runs inside one sentence, read a character at a time (each once): for every
    phrase length n, how many words in a row so far repeat the word n before them, and
    where that stretch began. Offsets are from the sentence's start."""

    def __init__(self) -> None:
        self.pos = 0  # characters read
        self.recent: list[tuple[str, int, int]] = []  # the last words: (word, start, end)
        self.matched = [0] * (RUN_PHRASE + 1)
        self.since = [0] * (RUN_PHRASE + 1)  # where each stretch's first saying ends
        self.begins = [0] * (RUN_PHRASE + 1)  # …and where it begins
        self.partial = ""
        self.partial_start = 0
        self.closed = False
        self.cut: int | None = None  # the first saying of a run ends here
        self.said = 0  # …and begins here

    def read(self, text: str, stop: int, offset: int = 0) -> None:
        """Read `text[offset + self.pos : offset + stop]` (the sentence's body so far)."""
        for i in range(offset + self.pos, offset + stop):
            c = text[i]
            if c.isalnum() or (self.partial and c in "'’"):
                if not self.partial:
                    self.partial_start = i - offset
                self.partial += c.casefold()
            elif self.partial:
                self._word(i - offset)
            if self.cut is not None:
                self.pos = stop
                return
        self.pos = stop

    def close(self) -> None:
        """The sentence's body has ended: its last word is whole."""
        if self.partial:
            self._word(self.pos)
        self.closed = True

    def _word(self, end: int) -> None:
        word, start = self.partial.rstrip("'’"), self.partial_start
        self.partial = ""
        last = self.recent[-1][2] if self.recent else 0
        for n in range(1, RUN_PHRASE + 1):
            if len(self.recent) >= n and self.recent[-n][0] == word:
                if not self.matched[n]:
                    self.since[n], self.begins[n] = last, self.recent[-n][1]
                self.matched[n] += 1
                if self.matched[n] >= _needed(n) and self.cut is None:
                    self.cut, self.said = self.since[n], self.begins[n]
            else:
                self.matched[n] = 0
        self.recent = [*self.recent[-RUN_PHRASE + 1 :], (word, start, end)]

    def hold(self) -> int | None:
        """Where the shown text must stop for now: before words that may yet be a run's
        repetitions (None: nothing to hold). A closed sentence holds only a run's cut."""
        if self.cut is not None or self.closed or not self.recent:
            return self.cut
        last = self.recent[-1][2]
        stops = []
        for n in range(1, RUN_PHRASE + 1):
            if len(self.recent) < n:
                break
            if self.partial and not self.recent[-n][0].startswith(self.partial):
                continue  # the word being written cannot go on with this one
            stops.append(self.since[n] if self.matched[n] else last)
        return min(stops, default=None)


class RepeatGuard:
    """Judges a reply's sentences against the ones it said before them."""

    def _walk(self, text: str, final: bool) -> tuple[str, Removed | None]:
        """The text kept, and the sentence where the reply began to loop (if it did).
        Streaming (`final` false), an unfinished last sentence is kept only once it cannot
        turn out to be a repeat."""
        said: set[tuple[str, ...]] = set()
        kept: list[str] = []
        sentences = _sentences(text, final)
        for sentence in sentences:
            runs = _runs_of(sentence.text, sentence.complete)
            if runs.cut is not None:
                line = sentence.text[runs.said : runs.cut].strip()
                return "".join(kept) + sentence.text[: runs.cut], Removed(line, "run", "")
            words = _tokens(sentence.text)
            if not sentence.complete:  # only ever the last one, while streaming
                if words and not sentence.text[-1:].isspace():
                    words = words[:-1]  # its last word may still be growing
                if len(words) >= PREFIX_WORDS and _key(words) in said:
                    return "".join(kept), Removed(sentence.text.strip(), "loop", "")
                if len(words) >= PREFIX_WORDS or not _could_become(words, said):
                    hold = runs.hold()
                    kept.append(sentence.text if hold is None else sentence.text[:hold])
                break
            key = _key(words)
            # begun again, and cut short by the token limit — if the reply ends here
            cut_short = (
                sentence is sentences[-1]
                and not _ENDED.search(sentence.text)
                and len(words) >= 3
                and _could_become(words, said)
            )
            if (len(words) >= MIN_WORDS and key in said) or (cut_short and final):
                return "".join(kept), Removed(sentence.text.strip(), "loop", "")
            if cut_short:
                break  # held until the reply goes on (or ends, and it is cut)
            if len(words) >= MIN_WORDS:
                said.add(key)
            kept.append(sentence.text + sentence.gap)
        return "".join(kept), None

    def clean(self, text: str) -> tuple[str, list[Removed]]:
        """The finished prose without its loop (what it said a second time, and after)."""
        kept, loop = self._walk(text, final=True)
        return kept.rstrip(), [loop] if loop else []

    def shown(self, text: str) -> str:
        """What of a still-streaming prose may be shown: a prefix of `clean(final)[0]` for
        any continuation `final` of `text` (trailing whitespace aside)."""
        return self._walk(text, final=False)[0]

    def loops(self, text: str) -> bool:
        """Whether a still-streaming prose has begun to say a sentence a second time."""
        return self.streamed(text)[1]

    def streamed(self, text: str) -> tuple[str, bool]:
        """`shown` and `loops` of a still-streaming prose, from one reading of it."""
        kept, loop = self._walk(text, final=False)
        return kept, loop is not None


def _runs_of(sentence: str, complete: bool) -> _Runs:
    """The runs of a sentence read whole (its body: up to its end marks)."""
    runs = _Runs()
    ended = _TERMINATOR.search(sentence)
    runs.read(sentence, ended.start() if ended else len(sentence))
    if ended or complete:
        runs.close()
    return runs


def _could_become(words: list[str], keys: set[tuple[str, ...]]) -> bool:
    """Whether a sentence begun with `words` may still turn out to repeat one of `keys`."""
    start = tuple(words)
    return any(key[: len(start)] == start for key in keys)


LONG = 1024
"""Characters of an unfinished sentence read whole on every streamed piece."""

_TERMINATOR = re.compile(r"[.!?…\n]")
_MARKS = frozenset(".!?…")
_CLOSERS = frozenset("\"'”’)]*_")


class RepeatStream:
    """`RepeatGuard.streamed` over a reply fed in pieces, each read once.

    Sentences that a later one follows are judged once and remembered (their keys, and
    every prefix of them, so "may this still become a repeat" is one lookup). The last,
    unfinished sentence is read whole while it is short (`LONG`); a longer one that was
    shown goes on being shown, and one that was not is held until it ends — the one place
    this may hold longer than `RepeatGuard.shown`, never less.
    """

    def __init__(self) -> None:
        self.text = ""
        self.kept = 0  # text[:kept] is what the guard keeps so far
        self.looped = False
        self._said: set[tuple[str, ...]] = set()
        self._prefixes: set[tuple[str, ...]] = set()  # every prefix of a said key
        self._start = 0  # the first sentence not yet followed by another
        self._scan = 0  # its words end at a terminator not before here
        self._body_end: int | None = None  # …at this one, once found
        self._words: list[str] = []  # …which are these
        self._end = 0  # the sentence (with its end marks and closers) ends here…
        self._phase = "marks"  # …read so far through its marks, closers, then the gap
        self._runs = _Runs()  # the runs inside it, read as its words come

    def feed(self, piece: str) -> tuple[str, bool]:
        """What the guard newly keeps, and whether the reply has begun to loop."""
        if self.looped or not piece:
            return "", self.looped
        text = self.text
        self.text = ""
        text += piece
        self.text = text
        before = self.kept
        self._walk()
        return self.text[before : self.kept], self.looped

    def _walk(self) -> None:
        text, size = self.text, len(self.text)
        while not self.looped and self._start < size:
            start = self._start
            if self._body_end is None:
                found = _TERMINATOR.search(text, self._scan)
                if found is None:
                    self._scan = size
                    if not self._run_cut(start, size):
                        self._unfinished(start, size)
                    return
                self._body_end = self._end = found.start()
                if self._run_cut(start, self._body_end, close=True):
                    return
                self._words = _tokens(text[start : self._body_end])
                self._phase = "newline" if found.group() == "\n" else "marks"
            gap_end = self._read_end(text, size)
            if gap_end is None:  # ended by marks, nothing after them yet
                self._unfinished(start, size, self._words)
                return
            key = _key(self._words)
            if gap_end < size:  # another sentence follows: this one is settled
                if len(self._words) >= MIN_WORDS and key in self._said:
                    self.looped = True
                    return
                if len(self._words) >= MIN_WORDS:
                    self._said.add(key)
                    self._prefixes.update(key[:i] for i in range(len(key) + 1))
                self.kept = self._start = self._scan = gap_end
                self._body_end = None
                self._runs = _Runs()
                continue
            # complete, and the last: its gap may grow, or the reply end here
            ended = text[self._body_end] in _MARKS
            cut_short = not ended and len(self._words) >= 3 and tuple(self._words) in self._prefixes
            if len(self._words) >= MIN_WORDS and key in self._said:
                self.looped = True
            elif not cut_short:
                self.kept = size
            return

    def _read_end(self, text: str, size: int) -> int | None:
        """Past the current sentence's end marks, closers and the blanks after them:
        where the next sentence starts (`size` if none has yet), or None while the
        sentence has no blank after its marks yet. Each character is read once."""
        i = self._end
        if self._phase == "newline":
            i, self._phase = self._body_end + 1, "gap"  # type: ignore[operator]
        while i < size:
            c = text[i]
            if self._phase == "marks" and c in _MARKS:
                i += 1
            elif self._phase in ("marks", "closers") and c in _CLOSERS:
                self._phase = "closers"
                i += 1
            elif c.isspace():
                self._phase = "gap"
                i += 1
            else:
                break
        if self._phase != "gap":
            self._end = i
            return None if i == size else i  # marks then a letter: the next one begins
        self._end = i
        return i

    def _run_cut(self, start: int, stop: int, close: bool = False) -> bool:
        """Read the current sentence's body on to `stop`; True once it holds a run (the
        reply then ends after the run's first saying)."""
        self._runs.read(self.text, stop - start, start)
        if close:
            self._runs.close()
        if self._runs.cut is None:
            return False
        self.kept, self.looped = start + self._runs.cut, True
        return True

    def _shown_to(self, start: int, size: int) -> int:
        """How far the unfinished sentence may be shown: to the end, but for a run's
        possible repetitions."""
        hold = self._runs.hold()
        return size if hold is None else start + hold

    def _unfinished(self, start: int, size: int, words: list[str] | None = None) -> None:
        """The last sentence, not yet ended: kept once it cannot turn out to repeat."""
        if words is None:
            if size - start > LONG:
                if self.kept > start:
                    self.kept = self._shown_to(start, size)  # shown before: it goes on being shown
                return
            words = _tokens(self.text[start:size])
        if words and not self.text[size - 1].isspace():
            words = words[:-1]  # its last word may still be growing
        if len(words) >= PREFIX_WORDS and _key(words) in self._said:
            self.looped = True
        elif len(words) >= PREFIX_WORDS or tuple(words) not in self._prefixes:
            self.kept = self._shown_to(start, size)
