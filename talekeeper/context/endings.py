"""A reply cut off by its length limit ends at its last whole sentence.

A small model rarely stops on its own: most of its replies run into the token limit and
end mid-word ("he looks at you; he is not your"). When the server says the reply stopped
for its length, the unfinished last sentence is not kept (as other story apps' "trim
incomplete sentences" does), so the story reads as whole sentences and Continue picks up
from one. A reply the model ended itself is kept as it is, however it ends.
"""

from __future__ import annotations

import re

# A sentence ends in . ! ? or … (perhaps several), then any closing quotes or brackets,
# then the end of the text or a space before anything but a small letter ("Why?" he asks).
_SENTENCE_END = re.compile(r"""[.!?…]+["'”’)\]]*(?=$|\s+(?![a-z]))""")


def unfinished_end(text: str) -> tuple[str, str]:
    """(`text` up to the end of its last whole sentence, the unfinished rest). Nothing is
    cut when the text ends a sentence, or when it has no whole sentence at all: better a
    fragment than no story."""
    stripped = text.rstrip()
    end = max((m.end() for m in _SENTENCE_END.finditer(stripped)), default=None)
    if end is None or not stripped[end:].strip():
        return text, ""
    return stripped[:end], stripped[end:].strip()
