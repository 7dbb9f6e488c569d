"""How a player's action reads in the story, the way AI Dungeon writes it.

Do    "open the door"   -> "> You open the door."
Say   "Hello"           -> '> You say "Hello."'
Story "The sky darkens" -> "The sky darkens."   (the player writes the story directly)
Continue                -> ""                    (the narrator simply goes on)
"""

from typing import Literal

from talekeeper.errors import Invalid

ActionKind = Literal["do", "say", "story", "continue"]
ACTION_KINDS: tuple[str, ...] = ("do", "say", "story", "continue")
MAX_ACTION_CHARS = 4000


class ActionError(Invalid):
    pass


def _sentence(text: str) -> str:
    text = text.strip()
    if text and text[-1] not in ".!?\"'…":
        text += "."
    return text


def normalise_action(kind: str, text: str) -> tuple[str, str]:
    """Check an action and return (kind, cleaned text); raise ActionError if it's unusable."""
    if kind not in ACTION_KINDS:
        raise ActionError(f"Unknown action kind {kind!r}; use one of: {', '.join(ACTION_KINDS)}.")
    text = (text or "").strip()
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(f"The action is too long ({len(text)} characters; at most {MAX_ACTION_CHARS}).")
    if kind == "continue":
        return kind, ""
    if not text:
        raise ActionError(f"A {kind!r} action needs some text (or use Continue).")
    return kind, text


def format_action(kind: str, text: str) -> str:
    if kind not in ("do", "say", "story") or not text:
        return ""  # continue, and the opening, add no line of their own
    if kind == "story":
        return _sentence(text)
    if kind == "say":
        spoken = text.strip().strip('"“”').strip()
        if spoken and spoken[-1] not in ".!?…":
            spoken += "."
        return f'> You say "{spoken}"'
    # do: "You ..." unless the player already wrote it in the first person of the story.
    words = text.strip()
    lower = words.lower()
    if lower.startswith("you ") or lower == "you":
        words = words[4:]
    elif lower.startswith("i "):
        words = words[2:]
    words = words.strip()
    return f"> You {_sentence(words)}" if words else ""
