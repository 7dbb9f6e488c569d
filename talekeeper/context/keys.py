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
    pattern: object | None = None  # compiled regex keys
    is_regex: bool = False
    folded: bool = True  # whether the text searched must be lower-cased
    head: str = ""  # a plain key's first and last three characters ("" for a regex or a
    tail: str = ""  # key under three): a text without both trigrams cannot contain it
    whole: tuple[bool, bool] | None = None  # whole words: (bounded on the left, on the right)

    def find(self, text: str, lowered: str) -> bool:
        """Whether the key occurs in `text` (`lowered` is its lower-case form).
        Raises RegexTimeout when a regex key is cut off."""
        if not self.is_regex:
            target = lowered if self.folded else text
            if self.whole is None:
                return self.needle in target
            return _whole_word(self.needle, target, *self.whole)
        try:
            return self.pattern.search(text, timeout=REGEX_TIMEOUT) is not None  # type: ignore[attr-defined]
        except TimeoutError as exc:
            raise RegexTimeout(self.text) from exc


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # what `\w` matches in a str pattern


def _whole_word(needle: str, target: str, left: bool, right: bool) -> bool:
    r"""`needle` in `target` with no word character just before (if `left`) or after (if
    `right`) it. str.find and two look-ups per occurrence: a `(?<!\w)…(?!\w)` regex has no
    literal prefix to jump to and steps through every character of a long window."""
    end = len(needle)
    at = target.find(needle)
    while at >= 0:
        if not (left and at > 0 and _is_word(target[at - 1])) and not (
            right and at + end < len(target) and _is_word(target[at + end])
        ):
            return True
        at = target.find(needle, at + 1)
    return False


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


_FLAGS = {
    "i": regex.IGNORECASE,
    "m": regex.MULTILINE,
    "s": regex.DOTALL,
    "g": 0,
    "u": 0,
    "y": 0,
    "d": 0,
    "v": 0,
}


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
        whole = (
            _is_word(phrase[:1]),
            _is_word(phrase[-1:]),
        )  # a key ending in a non-word character is not bounded there
        return Key(phrase, needle, folded=not case_sensitive, whole=whole, **_ends(needle))
    return Key(phrase, needle, folded=not case_sensitive, **_ends(needle))


def _ends(needle: str) -> dict[str, str]:
    return {"head": needle[:3], "tail": needle[-3:]} if len(needle) >= 3 else {}


@lru_cache(maxsize=16384)
def parse_keys_tuple(text: str, case_sensitive: bool, whole_words: bool) -> tuple[Key, ...]:
    return tuple(make_key(k, case_sensitive, whole_words) for k in split_keys(text))


def parse_keys(text: str, case_sensitive: bool = False, whole_words: bool = False) -> list[Key]:
    """The card's keys, ready to match; raises BadKey for an invalid regex."""
    return list(parse_keys_tuple(text or "", case_sensitive, whole_words))


STOP_WORDS = frozenset(
    """a an and are as at be but by do for from had has have he her him his i if in is it its
    me my no not of on or our she so than that the their them then there they this to up us
    was we were what when which who will with you your""".split()
)
"""Words in nearly every English sentence: as a trigger, a card would fire on every turn."""


def _spaced_script(text: str) -> bool:
    """Whether `text` is written in a script that puts spaces between words (Latin, Greek,
    Cyrillic …): there one or two letters are a fragment of many words. In Chinese,
    Japanese, Korean and Thai, one or two characters are a word of their own."""
    return all(
        not ("\u0e00" <= ch <= "\u0e7f" or "\u1100" <= ch <= "\u11ff" or ch >= "\u2e80")
        for ch in text
    )


def weak_key(key: Key, whole_words: bool = False) -> str | None:
    """Why a plain key would fire on nearly every turn (a common word, or one or two letters
    that sit inside many words), or None. A regex says what it matches itself."""
    if key.is_regex:
        return None
    word = key.text.strip().casefold()
    if word in STOP_WORDS:
        return f"'{key.text}' is one of the commonest words, so the card would fire on nearly every turn"
    if len(word) < 3 and not whole_words and _spaced_script(word):
        return (
            f"'{key.text}' is {'one letter' if len(word) == 1 else 'two letters'}, found inside many words "
            "(use a longer word, turn on whole words, or a /regex/ like /\\bHP\\b/)"
        )
    return None
