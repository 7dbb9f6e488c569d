"""Model-written lines as the story's record keeps them: plain sentences, each said once.

What a model writes into the state — a note for the recent events, a moment, a fact — is
read back by every role's next prompt and shown in the State panel, so the noise a small
model makes must not become canon there: a JSON fragment it left behind (`The gate opens.
}} ] {`), a sentence said twice or looped ("The lighthouse has been dark since last
winter. The lighthouse has been dark…"), a line grown past a short one. `plain_line`
keeps the story in such a text and drops the rest; `same_line` tells whether two lines say
the same thing, so a line already in the record is not added again.
"""

from __future__ import annotations

import re

LINE_CHARS = 160
"""The longest line kept: one short line, as the recent events and moments are."""

_FRAGMENT = re.compile(r'[{}\[\]`<>|\\]|"\s*:')
"""Where protocol begins: a brace, bracket, backtick, angle bracket, pipe or backslash,
or a JSON key's quote-colon (`"text":`)."""
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _loop_cut(text: str) -> str:
    """The text up to where a run of words begins to repeat itself a third time in a row
    ("the sea the sea the sea…" keeps "the sea")."""
    tokens = text.split(" ")
    keys = [" ".join(words_of(t)) for t in tokens]
    for i in range(len(tokens)):
        for n in range(1, 9):
            if i + 3 * n > len(tokens):
                break
            run = keys[i : i + n]
            if any(run) and run == keys[i + n : i + 2 * n] == keys[i + 2 * n : i + 3 * n]:
                return " ".join(tokens[: i + n])
    return text


def clip(text: str, limit: int = LINE_CHARS) -> str:
    """At most `limit` characters, cut at a word with "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(" ,;:—-") + "…"


def plain_line(text: object, limit: int = LINE_CHARS) -> str:
    """`text` as one short line of story: whitespace collapsed, cut where protocol or
    markup begins, a run of words looping cut, each sentence kept once (a sentence that
    only begins one already said is dropped too), at most `limit` characters. "" when
    nothing of it is story."""
    if not isinstance(text, str):
        return ""
    line = " ".join(text.split())
    found = _FRAGMENT.search(line)
    if found:
        line = line[: found.start()]
        if line.count('"') % 2:  # the quote a JSON string opened, left unclosed by the cut
            line = line[: line.rfind('"')]
    line = _loop_cut(line).strip(" ,;:—-")
    kept: list[str] = []
    said: list[list[str]] = []
    for sentence in _SENTENCE_END.split(line):
        key = words_of(sentence)
        if not key:
            continue
        if any(key == old[: len(key)] for old in said):  # said already, or its beginning
            continue
        kept.append(sentence)
        said.append(key)
    line = " ".join(kept)
    return clip(line, limit) if re.search(r"[A-Za-z]", line) else ""


def same_line(a: str, b: str) -> bool:
    """Whether two lines say the same (case, punctuation and a trailing "…" aside): equal
    words, or one the beginning of the other."""
    x, y = words_of(a), words_of(b)
    if not x or not y:
        return False
    short, long = (x, y) if len(x) <= len(y) else (y, x)
    return long[: len(short)] == short and (len(short) >= 4 or short == long)
