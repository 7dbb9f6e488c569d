"""Story-card keys: plain words and phrases, or `/regex/flags`, and how each one matches.

A key list is comma-separated, as in AI Dungeon and SillyTavern's editor. A key written
`/pattern/flags` (JavaScript style, as SillyTavern stores them) is a regular expression;
it may contain commas. Only a key that looks like `/…/flags` is a regex: SillyTavern
files carry `use_regex: true` on plain words too.

Plain keys match as SillyTavern's do: case-insensitive unless the card is case-sensitive,
anywhere in a word unless the card asks for whole words. Regex keys decide case by their
own `i` flag. A regex runs with the `regex` package's per-call timeout, so a pattern that
would backtrack for ever (`/(a+)+$/` on a long run of a's) is cut off and reported,
instead of hanging the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import regex

REGEX_TIMEOUT = 0.02
"""Seconds one regex key may spend on one piece of text before it is cut off."""

_SPACE = re.compile(r"\s+")


class BadKey(ValueError):
    """A key that cannot be used (an invalid regular expression); the message says why."""


class RegexTimeout(Exception):
    """A regex key ran past REGEX_TIMEOUT on one text."""


@dataclass(frozen=True)
class Key:
    text: str  # as written (for Insights)
    needle: str = ""  # plain key, folded when case-insensitive
    pattern: object | None = None  # compiled; whole-word plain keys and regex keys
    is_regex: bool = False
    folded: bool = True  # whether the text searched must be lower-cased
    head: str = ""  # a plain key's first and last three characters ("" for a regex or a
    tail: str = ""  # key under three): a text without both trigrams cannot contain it

    def find(self, text: str, lowered: str) -> bool:
        """Whether the key occurs in `text` (`lowered` is its lower-case form).
        Raises RegexTimeout when a regex key is cut off."""
        if self.pattern is None:
            return self.needle in (lowered if self.folded else text)
        target = lowered if (self.folded and not self.is_regex) else text
        if not self.is_regex:  # whole words: the plain search first rules out most texts fast
            return self.needle in target and self.pattern.search(target) is not None  # type: ignore[attr-defined]
        try:
            return self.pattern.search(target, timeout=REGEX_TIMEOUT) is not None  # type: ignore[attr-defined]
        except TimeoutError as exc:
            raise RegexTimeout(self.text) from exc


def split_keys(text: str) -> list[str]:
    """`"Maren, /ferry(wo)?man/i, boat"` → the keys, a `/…/flags` key kept whole."""
    keys: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        end = _regex_end(text, i) if text[i] == "/" else None
        if end is None:
            comma = text.find(",", i)
            end = n if comma < 0 else comma
        key = text[i:end].strip()
        if key and key not in keys:
            keys.append(key)
        i = end + 1
    return keys


def _regex_end(text: str, start: int) -> int | None:
    """Where a `/…/flags` key that starts at `start` ends (the index of the comma after it
    or the end), or None when it is not one."""
    i, n = start + 1, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "/":
            j = i + 1
            while j < n and text[j].isalpha():
                j += 1
            k = j
            while k < n and text[k] in " \t\r\n":
                k += 1
            if i > start + 1 and (k == n or text[k] == ","):
                return k
        i += 1
    return None


_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "g": 0, "u": 0, "y": 0, "d": 0, "v": 0}


@lru_cache(maxsize=65536)
def make_key(raw: str, case_sensitive: bool, whole_words: bool) -> Key:
    if len(raw) > 2 and raw.startswith("/"):
        close = raw.rfind("/")
        flags = raw[close + 1 :]
        if close > 0 and all(f in _FLAGS for f in flags):
            body = raw[1:close]
            value = 0
            for f in flags:
                value |= _FLAGS[f]
            try:
                compiled = regex.compile(body, value | regex.VERSION0)
            except regex.error as exc:
                raise BadKey(f"'{raw}' is not a valid regular expression: {exc}") from None
            return Key(raw, pattern=compiled, is_regex=True, folded=False)
    phrase = _SPACE.sub(" ", raw.strip())
    needle = phrase if case_sensitive else phrase.lower()
    if whole_words:
        # A word boundary unless the key itself starts or ends with a non-word character.
        left = r"(?<!\w)" if phrase[:1].isalnum() or phrase[:1] == "_" else ""
        right = r"(?!\w)" if phrase[-1:].isalnum() or phrase[-1:] == "_" else ""
        compiled = re.compile(left + re.escape(needle) + right)
        return Key(phrase, needle, compiled, folded=not case_sensitive, **_ends(needle))
    return Key(phrase, needle, folded=not case_sensitive, **_ends(needle))


def _ends(needle: str) -> dict[str, str]:
    return {"head": needle[:3], "tail": needle[-3:]} if len(needle) >= 3 else {}


@lru_cache(maxsize=16384)
def parse_keys_tuple(text: str, case_sensitive: bool, whole_words: bool) -> tuple[Key, ...]:
    return tuple(make_key(k, case_sensitive, whole_words) for k in split_keys(text))


def parse_keys(text: str, case_sensitive: bool = False, whole_words: bool = False) -> list[Key]:
    """The card's keys, ready to match; raises BadKey for an invalid regex."""
    return list(parse_keys_tuple(text or "", case_sensitive, whole_words))
