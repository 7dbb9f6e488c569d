"""How deeply a JSON text nests (and whether it holds half a character), read as a
stream, without parsing it.

Python's JSON reader and everything that walks the result recurse once per level, so a
body like `[[[[…]]]]` 100,000 levels deep ends in RecursionError (a 500) wherever it goes.
Nothing talekeeper reads legitimately nests more than a few dozen levels, so the web
guard refuses deeper bodies before anything parses them, and the scenario import and the
pages' JSON fields check their text the same way.

Width too, for request bodies: every member of an object or list that a schema refuses
(80,000 unknown keys in 1 MB) becomes one validation error, built on the event loop before
any handler runs (about a second of a worker's time per MB). No request talekeeper takes
has anywhere near `MAX_MEMBERS` members in one object or list.

And half characters: `"\\ud800"` is valid JSON, and Python's reader also decodes the UTF-8
bytes of a surrogate, but the lone surrogate it gives is no text: no JSON writer and no
database can encode it, so wherever it went (an error answer echoing it, a stored field)
it was a 500. Such a text is refused before anything parses it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from talekeeper.errors import Invalid

MAX_DEPTH = 64
MAX_MEMBERS = 10_000


class TooDeep(Invalid):
    def __init__(self, limit: int = MAX_DEPTH):
        super().__init__(
            f"The JSON is nested too deeply: at most {limit} levels. Nothing was changed."
        )


class TooWide(Invalid):
    def __init__(self, limit: int = MAX_MEMBERS):
        super().__init__(
            f"The JSON has too many members in one object or list: at most {limit:,}. "
            "Nothing was changed."
        )


class HalfCharacter(Invalid):
    def __init__(self) -> None:
        super().__init__(
            "The JSON holds half of a character (a lone surrogate such as \\ud800, or its "
            "bytes), which is no text and cannot be stored. Nothing was changed."
        )


# What the scanner looks at: quotes, backslashes, brackets, commas, and the first two bytes
# of a surrogate written in UTF-8 (ED A0–BF), which Python's JSON reader lets through.
_SIGNIFICANT = re.compile(rb'["\\\[\]{},]|\xed[\xa0-\xbf]')
_HEX4 = re.compile(rb"[0-9a-fA-F]{4}")


def _prefixes(*parts: bytes) -> re.Pattern[bytes]:
    """A pattern matching every prefix of the sequence of byte classes `parts`."""
    pattern = b""
    for part in reversed(parts):
        pattern = part + (b"(?:" + pattern + b")?" if pattern else b"")
    return re.compile(pattern)


_HEX = b"[0-9a-fA-F]"
# The start of an escape that may still turn out to be a surrogate (with its pair):
# while a chunk ends inside one, the scanner waits for the next chunk to judge it.
_SURROGATE_SO_FAR = _prefixes(
    rb"\\", b"u", b"[dD]", b"[89a-fA-F]", _HEX, _HEX, rb"\\", b"u", b"[dD]", b"[c-fC-F]", _HEX
)


def _surrogate(data: bytes, at: int) -> int | None:
    """The code unit `\\uXXXX` at `at` writes, when it is a surrogate."""
    if data[at + 1 : at + 2] != b"u" or not _HEX4.fullmatch(data, at + 2, at + 6):
        return None
    unit = int(data[at + 2 : at + 6], 16)
    return unit if 0xD800 <= unit <= 0xDFFF else None


class DepthScanner:
    """Feed bytes (or text) in chunks, then `finish`; raises TooDeep once nesting passes
    `limit`, and (unless `whole_characters` is false) HalfCharacter for a lone surrogate (a
    `\\ud800` escape without its pair, or one written in UTF-8), which the parser would take
    for text nothing can store.

    With `max_members`, also raises TooWide once one object or list passes that many
    members (counted by its commas). Brackets and commas inside strings do not count;
    anything that is not JSON at all is left for the parser to refuse. Only quotes,
    backslashes, brackets and commas are looked at (a regex finds them), so a large body
    costs little; the last few bytes of a chunk wait for the next when an escape or a
    character may run on into it."""

    def __init__(
        self, limit: int = MAX_DEPTH, max_members: int | None = None, whole_characters: bool = True
    ) -> None:
        self.limit = limit
        self.max_members = max_members  # None: any width (TooWide past it)
        self.whole_characters = whole_characters  # False: half characters are let through
        self._members: list[int] = []  # commas seen in each open container
        self.depth = 0
        self._in_string = False
        self._held = b""  # the end of the last chunk, read with the next

    def feed(self, chunk: bytes | str, final: bool = False) -> None:
        data = chunk.encode("utf-8", "surrogatepass") if isinstance(chunk, str) else chunk
        data = self._held + data if self._held else data
        self._held = b""
        skip = 0  # the next byte a match may start at (what an escape covers is skipped)
        for match in _SIGNIFICANT.finditer(data):
            at = match.start()
            if at < skip:
                continue
            byte = data[at]
            if byte == 0xED:
                if self.whole_characters:
                    raise HalfCharacter()
                continue
            if self._in_string:
                if byte == 0x5C:  # backslash: an escape
                    if not final and _SURROGATE_SO_FAR.fullmatch(data, at):
                        self._held = data[at:]  # judged with what comes next
                        return
                    unit = _surrogate(data, at)
                    if unit is None:
                        skip = at + 2
                    elif unit <= 0xDBFF and (_surrogate(data, at + 6) or 0) >= 0xDC00:
                        skip = at + 12  # a pair: one character
                    elif self.whole_characters:
                        raise HalfCharacter()
                    else:
                        skip = at + 2
                elif byte == 0x22:
                    self._in_string = False
            elif byte == 0x22:
                self._in_string = True
            elif byte in (0x5B, 0x7B):  # [ {
                self.depth += 1
                if self.depth > self.limit:
                    raise TooDeep(self.limit)
                self._members.append(1)
            elif byte in (0x5D, 0x7D) and self.depth:  # ] }
                self.depth -= 1
                self._members.pop()
            elif byte == 0x2C and self._members and self.max_members is not None:  # ,
                self._members[-1] += 1
                if self._members[-1] > self.max_members:
                    raise TooWide(self.max_members)
        if not final and data[-1:] == b"\xed":
            self._held = data[-1:]  # may begin a surrogate's bytes

    def finish(self) -> None:
        """The text has ended: judge what was held for the next chunk."""
        if self._held:
            self.feed(b"", final=True)


def check(text: bytes | str, limit: int = MAX_DEPTH, max_members: int | None = None) -> None:
    """Raise TooDeep if `text` nests JSON more than `limit` levels, HalfCharacter if it
    holds a lone surrogate (TooWide past `max_members` in one object or list)."""
    DepthScanner(limit, max_members).feed(text, final=True)


_LONG_NUMBER = re.compile(r"[0-9]{4301}")


def loads(text: str | bytes) -> Any:
    """`json.loads` for text from outside, whose every failure is a JSONDecodeError.

    Python refuses to read an integer of more than 4,300 digits (int() of one that long is
    slow enough to stall a process) with a bare ValueError, which callers expecting the
    JSON error let through as a 500."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        found = _LONG_NUMBER.search(doc)
        raise json.JSONDecodeError(
            "a number has more than 4,300 digits", doc, found.start() if found else 0
        ) from None
