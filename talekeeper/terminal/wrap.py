"""Streamed text wrapped at word boundaries, as it arrives.

A turn streams in pieces that split words anywhere ("washe", "d out"); printed as they
come, the terminal breaks a line wherever the width runs out, mid-word. `StreamWrap` keeps
the column itself and holds the unfinished last word of each piece until the next piece
shows where it ends, so a line only ever breaks between words (a single word longer than
the line is the one exception: it is cut, as nothing else could fit it).
"""

from __future__ import annotations

import re

_PIECES = re.compile(r"(\s+)")


class StreamWrap:
    def __init__(self, width: int):
        self.width = max(10, width)
        self.column = 0
        self.pending = ""  # the word being streamed: not printed until it is whole

    def feed(self, text: str) -> str:
        """What to print for `text` now: whole words, with a newline where the next one
        would pass the width."""
        self.pending += text
        parts = _PIECES.split(self.pending)
        self.pending = parts.pop()  # after the last space: perhaps not a whole word yet
        return "".join(self._place(p) for p in parts if p)

    def flush(self) -> str:
        """The rest, at the end of the stream."""
        rest, self.pending = self.pending, ""
        return self._place(rest) if rest else ""

    def _place(self, piece: str) -> str:
        if piece.isspace():
            out = []
            for ch in piece:
                if ch == "\n":
                    out.append("\n")
                    self.column = 0
                elif self.column and self.column < self.width:  # a space, not at a line's start
                    out.append(" ")
                    self.column += 1
            return "".join(out)
        out = ""
        if self.column and self.column + len(piece) > self.width:
            out, self.column = "\n", 0
        while len(piece) > self.width:  # one word longer than a line
            out += piece[: self.width] + "\n"
            piece = piece[self.width :]
        self.column += len(piece)
        return out + piece
