"""What of a model's reply is story: the two guards every narration passes, in order.

First the repeat guard (context/repeats: a reply ends where it begins to say a sentence a
second time), then the echo guard (context/echo: no line of the prompt's own notes). Both
are streaming-safe — the shown text only ever grows — and so is their composition, since
each one's shown text is a prefix of what it keeps of any continuation. `stream` reads a
streaming reply piece by piece, each piece once.
"""

from __future__ import annotations

from talekeeper.context.echo import EchoGuard, EchoStream, Removed
from talekeeper.context.repeats import RepeatGuard, RepeatStream


class ProseGuard:
    def __init__(self, echoes: EchoGuard, repeats: RepeatGuard) -> None:
        self.echoes = echoes
        self.repeats = repeats

    def clean(self, text: str) -> tuple[str, list[Removed]]:
        """The finished prose as it is stored, and every line or sentence removed."""
        text, repeated = self.repeats.clean(text)
        kept, echoed = self.echoes.clean(text)
        return kept, repeated + echoed

    def stream(self) -> ProseStream:
        """The guards over a streaming reply's prose, fed piece by piece."""
        return ProseStream(self)


class ProseStream:
    """Both guards over prose fed in pieces: feed one, get what is newly shown (what
    `RepeatGuard.streamed` then `EchoGuard.shown` show of the whole) and whether the reply
    has begun to loop; each piece is read once."""

    def __init__(self, guard: ProseGuard) -> None:
        self.repeats = RepeatStream()
        self.echoes = EchoStream(guard.echoes)

    def feed(self, piece: str) -> tuple[str, bool]:
        kept, loops = self.repeats.feed(piece)
        return self.echoes.feed(kept), loops
