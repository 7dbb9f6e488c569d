"""Every text a model writes for the story passes the same guards, here: the narrator's,
an NPC's in dialogue, a companion's remark (every generated text passes the same guards
before anyone reads it: docs/architecture.md "Reading the narration").

`for_call` makes the guards one model call's reply is read through, from that call's own
prompt and the state it read: the repeat guard (context/repeats: a reply ends where it
begins to say a sentence again) and the echo guard (context/echo: no line repeating the
prompt's notes, and no protocol — a stat path, an `(id)` tag, JSON, a stat readout). The
turn shows its stream through `ProseGuard.stream` and keeps `finish`'s text; a
companion's remark, which arrives whole, goes through `finish` alone. A guard added here
applies to every role at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from talekeeper.context import echo, endings
from talekeeper.context.prose_guard import ProseGuard
from talekeeper.context.repeats import RepeatGuard
from talekeeper.service.context import PreparedContext
from talekeeper.state import Document


def for_call(prepared: PreparedContext, document: Document) -> ProseGuard:
    """The guards for the reply to `prepared`'s prompt; `document` is the state it read
    (its entity ids are what an `(id)` tag would name)."""
    sections = [(s.name, s.text) for s in prepared.assembly.sections]
    return ProseGuard(echo.EchoGuard.for_sections(sections, document.entities), RepeatGuard())


@dataclass(frozen=True)
class Guarded:
    """A finished text as it may be stored, and what the guards took out of it."""

    text: str
    removed: list[echo.Removed] = field(default_factory=list)
    unfinished: str = ""  # a cut-off last sentence, not kept (context/endings)


def finish(guard: ProseGuard, text: str, cut: bool = False) -> Guarded:
    """`text` through every guard; `cut`: the model's length limit ended it mid-way, so an
    unfinished last sentence is not kept either."""
    kept, removed = guard.clean(text)
    unfinished = ""
    if cut:
        kept, unfinished = endings.unfinished_end(kept)
    return Guarded(kept, removed, unfinished)
