"""How a player's action reads in the story, the way AI Dungeon writes it.

Do    "open the door"   -> "> You open the door."
Say   "Hello"           -> '> You say "Hello."'
Story "The sky darkens" -> "The sky darkens."   (the player writes the story directly)
Continue                -> ""                    (the narrator simply goes on)
Talk  "Tobin: the key?" -> '> You say to Tobin, "The key?"'  (that character answers, in their own call)
"""

import re
from enum import StrEnum
from functools import lru_cache
from typing import Literal

from talekeeper.errors import Invalid


class ActionKind(StrEnum):
    """The action vocabulary, named once: every front, route and template takes its kinds
    from here (a member is its own word: `ActionKind.DO == "do"`)."""

    DO = "do"
    SAY = "say"
    STORY = "story"
    CONTINUE = "continue"
    TALK = "talk"


ACTION_KINDS: tuple[ActionKind, ...] = tuple(ActionKind)
"""Every kind a player can send."""
WORDED: tuple[ActionKind, ...] = (ActionKind.DO, ActionKind.SAY, ActionKind.STORY, ActionKind.TALK)
"""The kinds that carry the player's words (a line of the story of their own)."""
RETOLD: tuple[ActionKind, ...] = (
    ActionKind.DO,
    ActionKind.SAY,
    ActionKind.STORY,
    ActionKind.CONTINUE,
)
"""The kinds an edited action, the Insights dry run and the terminal's /edit-action take (a
Talk names whom it addresses, so it is only ever sent as itself)."""
DRAFTED: tuple[ActionKind, ...] = (ActionKind.DO, ActionKind.SAY, ActionKind.STORY)
"""The kinds "Write my turn" drafts."""

AnyKind = Literal[ACTION_KINDS]  # type: ignore[valid-type]
RetoldKind = Literal[RETOLD]  # type: ignore[valid-type]
DraftedKind = Literal[DRAFTED]  # type: ignore[valid-type]
"""The same sets as types, for a request's field (its schema lists the words)."""

MAX_ACTION_CHARS = 4000


class ActionError(Invalid):
    pass


def _sentence(text: str) -> str:
    text = text.strip()
    if text and text[-1] not in ".!?\"'…":
        text += "."
    return text


def _capitalise(text: str) -> str:
    """Upper-case the first letter (after any opening quote), leave the rest as written."""
    for i, ch in enumerate(text):
        if ch.isalpha():
            return text[:i] + ch.upper() + text[i + 1 :]
        if ch not in "\"'“‘(*_ ":
            break
    return text


# The player writes "I"; the story says "you". Only whole words outside quoted speech change,
# so `say "I'm fine" to Maren` keeps her own words. Apostrophes may be straight or curly.
_FIRST_TO_SECOND = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "i've": "you've",
    "i'll": "you'll",
    "i'd": "you'd",
}
# After "I", these verbs change with the person ("I am" -> "you are", "I was" -> "you were").
_AFTER_I = {"am": "are", "was": "were"}
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
_QUOTED = re.compile(r'("[^"]*"?|“[^”]*”?)')


def _match_case(original: str, replacement: str) -> str:
    return replacement.capitalize() if original[:1].isupper() and original != "I" else replacement


def _second_person(text: str) -> str:
    """Turn the player's first person into the story's second person, outside quoted speech."""
    out: list[str] = []
    for part in _QUOTED.split(text):
        if part[:1] in '"“':
            out.append(part)  # quoted speech is the player's own words
            continue
        pieces: list[str] = []
        last = 0
        previous = ""
        for match in _WORD.finditer(part):
            word = match.group(0)
            key = word.lower().replace("’", "'")
            new = _FIRST_TO_SECOND.get(key)
            if key == "mine" and not part[: match.start()].strip():
                new = None  # "mine the vein" leads with the verb
            if new is None and previous == "i":
                new = _AFTER_I.get(key)
            if new is not None:
                new = _match_case(word, new)
                if "’" in word:
                    new = new.replace("'", "’")
            pieces.append(part[last : match.start()] + (new if new is not None else word))
            last = match.end()
            previous = key
        pieces.append(part[last:])
        out.append("".join(pieces))
    return "".join(out)


def _lower_first_word(text: str) -> str:
    """`Look around` -> `look around`: a capital only starts the player's sentence. Words in
    capitals (`NPC`) and mixed case (`McGuire`) keep theirs; a name leading an action
    (`Maren, wait`) cannot be told from a verb and is lowered too — a known limit."""
    match = _WORD.match(text)
    if not match:
        return text
    word = match.group(0)
    if len(word) > 1 and word[0].isupper() and word[1:] == word[1:].lower():
        return word.lower() + text[match.end() :]
    return text


def normalise_action(kind: str, text: str) -> tuple[str, str]:
    """Check an action and return (kind, cleaned text); raise ActionError if it's unusable."""
    if kind not in ACTION_KINDS:
        raise ActionError(f"Unknown action kind {kind!r}; use one of: {', '.join(ACTION_KINDS)}.")
    text = (text or "").strip()
    if "\x00" in text:  # never meant, and PostgreSQL cannot store it
        raise ActionError("The action contains a NUL character (\\x00); remove it and try again.")
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(
            f"The action is too long ({len(text)} characters; at most {MAX_ACTION_CHARS})."
        )
    if kind == ActionKind.CONTINUE:
        return kind, ""
    if not text:
        raise ActionError(f"A {kind!r} action needs some text (or use Continue).")
    if kind == ActionKind.TALK:
        who, _, words = text.partition(":")
        if not who.strip() or not words.strip():
            raise ActionError(
                "A 'talk' action names who you talk to and what you say: \"Tobin: what about the key?\""
            )
        text = f"{who.strip()}: {words.strip()}"
    return kind, text


def talk_text(to: str, words: str) -> str:
    """The stored text of a Talk action: "Tobin: what about the key?"."""
    return f"{to.strip()}: {words.strip()}"


def _english_looking(text: str) -> bool:
    """Whether the action is written in the Latin alphabet (its first letter is), the
    only script the "You …" rewrite suits."""
    letter = next((ch for ch in text if ch.isalpha()), "")
    return not letter or letter.isascii() or "\u00c0" <= letter <= "\u024f"


@lru_cache(maxsize=4096)  # a turn formats each action of its window; most, every turn
def format_action(kind: str, text: str) -> str:
    if kind not in WORDED or not text:
        return ""  # continue, and the opening, add no line of their own
    if kind == ActionKind.TALK:
        who, _, words = text.partition(":")
        spoken = words.strip().strip('"“”').strip()
        if spoken and spoken[-1] not in ".!?…":
            spoken += "."
        return f'> You say to {who.strip()}, "{spoken[:1].upper() + spoken[1:]}"'
    if not _english_looking(text):
        # "You", "say" and a full stop are English: a Chinese action (我坐的士…) is the
        # player's own words, kept as written, never "> You 我坐的士…".
        words = text.strip()
        return {"story": words, "say": f'> "{words}"'}.get(kind, f"> {words}")
    if kind == "story":
        return _capitalise(_sentence(text))
    if kind == "say":
        spoken = _capitalise(text.strip().strip('"“”').strip())
        if spoken and spoken[-1] not in ".!?…":
            spoken += "."
        return f'> You say "{spoken}"'
    # do: "You ..." — the player's "I" becomes the story's "you", and a "you" or "I" they
    # already wrote to begin with is not doubled.
    words = _second_person(text.strip())
    lower = words.lower().replace("’", "'")
    if lower.startswith(("you're", "you've", "you'll", "you'd")):
        return f"> {_capitalise(_sentence(words))}"
    if lower.startswith("you ") or lower == "you":
        words = words[4:]
    words = _lower_first_word(words.strip())
    return f"> You {_sentence(words)}" if words else ""
