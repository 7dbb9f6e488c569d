"""How deeply a JSON text nests, read as a stream, without parsing it.

Python's JSON reader and everything that walks the result recurse once per level, so a
body like `[[[[…]]]]` 100,000 levels deep ends in RecursionError (a 500) wherever it goes.
Nothing talekeeper reads legitimately nests more than a few dozen levels, so the web
guard refuses deeper bodies before anything parses them, and the scenario import and the
pages' JSON fields check their text the same way.
"""

from __future__ import annotations

import re

from talekeeper.errors import Invalid

MAX_DEPTH = 64


class TooDeep(Invalid):
    def __init__(self, limit: int = MAX_DEPTH):
        super().__init__(
            f"The JSON is nested too deeply: at most {limit} levels. Nothing was changed."
        )


_SIGNIFICANT = re.compile(rb'["\\\[\]{}]')


class DepthScanner:
    """Feed bytes (or text) in chunks; `feed` raises TooDeep once nesting passes `limit`.

    Brackets inside strings do not count; anything that is not JSON at all is left for the
    parser to refuse. Only quotes, backslashes and brackets are looked at (a regex finds
    them), so a large body costs little."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        self.limit = limit
        self.depth = 0
        self._in_string = False
        self._escaped_at: int | None = None  # in the current chunk: the byte a backslash escapes

    def feed(self, chunk: bytes | str) -> None:
        data = chunk.encode("utf-8", "surrogatepass") if isinstance(chunk, str) else chunk
        for match in _SIGNIFICANT.finditer(data):
            at, byte = match.start(), data[match.start()]
            if self._in_string:
                if at == self._escaped_at:
                    self._escaped_at = None
                    continue
                if byte == 0x5C:  # backslash: the next byte is escaped
                    self._escaped_at = at + 1
                elif byte == 0x22:
                    self._in_string = False
            elif byte == 0x22:
                self._in_string = True
            elif byte in (0x5B, 0x7B):  # [ {
                self.depth += 1
                if self.depth > self.limit:
                    raise TooDeep(self.limit)
            elif byte in (0x5D, 0x7D) and self.depth:  # ] }
                self.depth -= 1
        # a backslash ending the chunk escapes the first byte of the next one
        self._escaped_at = 0 if self._escaped_at == len(data) else None


def check(text: bytes | str, limit: int = MAX_DEPTH) -> None:
    """Raise TooDeep if `text` nests JSON more than `limit` levels."""
    DepthScanner(limit).feed(text)
