"""What of a model's reply is story: the two guards every narration passes, in order.

First the repeat guard (context/repeats: a reply ends where it begins to say a sentence a
second time), then the echo guard (context/echo: no line of the prompt's own notes). Both
are streaming-safe — the shown text only ever grows — and so is their composition, since
each one's shown text is a prefix of what it keeps of any continuation.
"""

from __future__ import annotations

from talekeeper.context.echo import EchoGuard, Removed
from talekeeper.context.repeats import RepeatGuard


class ProseGuard:
    def __init__(self, echoes: EchoGuard, repeats: RepeatGuard) -> None:
        self.echoes = echoes
        self.repeats = repeats

    def shown(self, text: str) -> str:
        """What of a still-streaming prose may be shown now."""
        return self.echoes.shown(self.repeats.shown(text))

    def clean(self, text: str) -> tuple[str, list[Removed]]:
        """The finished prose as it is stored, and every line or sentence removed."""
        text, repeated = self.repeats.clean(text)
        kept, echoed = self.echoes.clean(text)
        return kept, repeated + echoed

    def streamed(self, text: str) -> tuple[str, bool]:
        """What may be shown now, and whether the reply has begun to loop (the turn then
        stops the model): one reading of the prose per streamed piece, not two."""
        kept, loops = self.repeats.streamed(text)
        return self.echoes.shown(kept), loops
