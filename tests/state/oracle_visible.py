"""`state/extract.py` as it was before the streaming filter (state/streaming.py) read each
piece once, frozen here: its `visible_prefix`, which read the whole reply again, is the
oracle the streaming filter must agree with piece by piece, and its `_opening_tail` is the
scan checked against the pattern it replaced (tests/state/test_streaming_tail.py)."""

# ruff: noqa
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import json_repair

from talekeeper.state.events import EVENTS, MAX_PROPOSAL_CHARS

FENCE_INFO = "state"

_STATE_OPEN = re.compile(r"(`{3,})[ \t]*state(?![\w-])", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,})[ \t]*([^\n`]*)", re.MULTILINE)
# Any whitespace but a newline may lead (what str.strip() takes off must not hide a block).
_LINE_OBJECT = re.compile(r"^[^\S\n]*\{", re.MULTILINE)
# Right where a removed block ended counts as a line start: once the block is gone, what
# follows it on the same line starts a line of the prose.
_AFTER_BLOCK_OBJECT = re.compile(r"[^\S\n]*\{")
_EVENTS_KEY = re.compile(r"""^\{\s*["']?events["']?\s*:""")
_LABEL_LINE = re.compile(
    r"^[ \t]*[*_#>]*[ \t]*(state|state block|state update|state changes|changes|events|json)[ \t]*[*_]*:?[ \t]*[*_]*[ \t]*$",
    re.IGNORECASE,
)
_JSON_INFOS = {"", "json", "json5", "jsonc", "javascript", "js"}
_INNER_FENCE = re.compile(r"^[ \t]{0,3}`{3,}[ \t]*[^\s`]", re.MULTILINE)
_FENCE_ONLY = re.compile(r"^[ \t]{0,3}`{3,}[^\S\n]*$")

EXAMPLE_BLOCK = '{"events": [ ...one object per change... ]}'


def emit_instructions() -> str:
    """The short reminder placed last in the prompt: how to append the state block."""
    return (
        "After the story, if anything in the state changed this turn, end your reply with one block:\n"
        f"```{FENCE_INFO}\n{EXAMPLE_BLOCK}\n```\n"
        "List only what changed, using only the event types, names, ids and stat paths given above.\n"
        "set_stat takes an absolute value; change_stat takes a signed amount (negative lowers).\n"
        "If nothing changed, write no block at all."
    )


def _norm_line(line: str) -> str:
    return " ".join(line.strip().lstrip("-*> ").split()).casefold()


_REMINDER_LINES = frozenset(
    _norm_line(line) for line in emit_instructions().splitlines() if len(_norm_line(line)) >= 16
)


class Extraction(NamedTuple):
    """`prose`: what the reader sees. `raw_block`: the protocol text as the model wrote it
    (None when there was none). `proposal`: the parsed `{"events": [...]}` for
    `apply_proposal`, or None when there was no block or it could not be read. `error`:
    why a block could not be (wholly) read; it can accompany a salvaged proposal."""

    prose: str
    raw_block: str | None
    proposal: dict[str, Any] | None
    error: str | None


@dataclass
class _Block:
    start: int
    end: int
    content: str
    closed: bool


def _closing_fence(text: str, pos: int, ticks: int) -> re.Match[str] | None:
    return re.compile(f"`{{{ticks},}}").search(text, pos)


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the JSON value starting at `start` (a `{` or `[`), string-aware;
    None when it is never closed."""
    depth, in_string, escaped = 0, None, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == in_string:
                in_string = None
        elif c in "\"'" and depth > 0:
            in_string = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _as_proposal(value: Any) -> dict[str, Any] | None:
    """The value as a proposal if it plainly is one: an object with an `events` list,
    a list of event objects, or one event object."""
    if isinstance(value, dict) and isinstance(value.get("events"), list):
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) and isinstance(v.get("type"), str) for v in value)
    ):
        return {"events": value}
    if isinstance(value, dict) and value.get("type") in EVENTS:
        return {"events": [value]}
    return None


_UNREADABLE = object()


def _loads(content: str) -> Any:
    """Strict JSON first; then json-repair for what small models get wrong (trailing
    commas, `+5`, single quotes, a missing bracket). Returns `_UNREADABLE` unless the
    result is an object or a list."""
    if len(content) > MAX_PROPOSAL_CHARS:
        return _UNREADABLE
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):
        try:
            value = json_repair.repair_json(content, return_objects=True)
        except Exception:  # json-repair is third-party: any failure means unreadable
            return _UNREADABLE
    return _unicode_safe(value) if isinstance(value, dict | list) else _UNREADABLE


def _unicode_safe(value: Any) -> Any:
    """Strings as they can be stored: JSON escapes may decode to surrogate halves (a pair
    split by a repair, or a lone `\\ud800`); join pairs, and a lone half becomes U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_unicode_safe(v) for v in value]
    if isinstance(value, dict):
        return {_unicode_safe(k): _unicode_safe(v) for k, v in value.items()}
    return value


def _scan(text: str, streaming: bool) -> tuple[list[_Block], int | None]:
    """Find protocol blocks. In streaming mode, also return where the first construct
    that *might* be protocol begins (an open fence or object not yet decided)."""
    blocks: list[_Block] = []
    pos = 0
    while pos < len(text):
        after_block = (
            _AFTER_BLOCK_OBJECT.match(text, pos) if blocks and blocks[-1].end == pos else None
        )
        candidates = [
            m
            for m in (
                _STATE_OPEN.search(text, pos),
                _FENCE_OPEN.search(text, pos),
                _LINE_OBJECT.search(text, pos),
                after_block,
            )
            if m
        ]
        if not candidates:
            break
        m = min(
            candidates,
            key=lambda x: (
                x.start(1) if x.re is _FENCE_OPEN else x.start(),
                x.re is not _STATE_OPEN,
            ),
        )
        if m.re is _STATE_OPEN:
            close = _closing_fence(text, m.end(), len(m.group(1)))
            end = close.end() if close else len(text)
            blocks.append(
                _Block(
                    m.start(),
                    end,
                    text[m.end() : close.start() if close else len(text)],
                    close is not None,
                )
            )
            pos = end
        elif m.re is _FENCE_OPEN:
            ticks, info = len(m.group(1)), m.group(2).strip().casefold()
            body_start = m.end() + 1
            # while streaming, a closing fence counts only once its line is complete
            closing = rf"^[ \t]{{0,3}}`{{{ticks},}}[ \t]*" + (r"\n" if streaming else "$")
            close = (
                re.compile(closing, re.MULTILINE).search(text, body_start)
                if body_start <= len(text)
                else None
            )
            content = text[body_start : close.start()] if close else text[body_start:]
            end = close.end() if close else len(text)
            if close is None and streaming:
                return blocks, m.start(1)
            looks = info in _JSON_INFOS and _proposal_like(content, closed=close is not None)
            if looks:
                blocks.append(_Block(m.start(1), end, content, close is not None))
                pos = end
            elif (
                close is None
                or _STATE_OPEN.search(text, m.end(), end)
                or _INNER_FENCE.search(content)
            ):
                # A story's own block stays, but what it may hide is read: a state fence
                # inside it, or — when it is never closed, or holds another fence's opening
                # line, so its "closing" line belonged to that one — a block after it.
                pos = m.end()
            else:
                pos = end
        else:
            brace = m.end() - 1
            if not _could_be_events(text[brace:], final=not streaming):
                pos = m.end()
                continue
            end = _balanced_end(text, brace)
            content = text[brace : end if end else len(text)]
            if end is None:
                if streaming:
                    return blocks, brace
                blocks.append(_Block(brace, len(text), content, False))
                break
            if _as_proposal(_loads(content)) is not None:
                blocks.append(_Block(brace, end, content, True))
                pos = end
            else:
                pos = m.end() if _STATE_OPEN.search(text, m.end(), end) else end
    return blocks, None


_EVENT_KEYS = ('"events"', "'events'", "events")


def _could_be_events(text: str, final: bool) -> bool:
    """Whether a line-start `{` opens (or, while streaming, may yet open) an object whose
    first key is `events`."""
    if _EVENTS_KEY.match(text):
        return True
    if final:
        return False
    rest = text[1:].lstrip()
    return any(
        key.startswith(rest) or (rest.startswith(key) and not rest[len(key) :].strip())
        for key in _EVENT_KEYS
    )


def _proposal_like(content: str, closed: bool) -> bool:
    stripped = content.strip()
    if not closed:  # a fence left open: protocol if it starts like a proposal
        return bool(_EVENTS_KEY.match(stripped)) or stripped.startswith('[{"type"')
    if not stripped.startswith(("{", "[")):
        return False
    return _as_proposal(_loads(stripped)) is not None


def _salvage(content: str) -> tuple[Any, int]:
    """From a cut-off block, the events that were complete: the longest prefix ending
    where an element of the events list closed, with its brackets closed after it."""
    stack: list[str] = []
    in_string, escaped = False, False
    best: tuple[int, list[str]] | None = None
    for i, c in enumerate(content):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c in "{[":
            stack.append(c)
        elif c in "}]" and stack:
            stack.pop()
            if c == "}" and stack in (["{", "["], ["["]):
                best = (i + 1, list(stack))
    if best is None:
        return _UNREADABLE, 0
    end, open_brackets = best
    closing = "".join("]" if b == "[" else "}" for b in reversed(open_brackets))
    value = _loads(content[:end] + closing)
    proposal = _as_proposal(value)
    return (proposal, len(proposal["events"])) if proposal else (_UNREADABLE, 0)


def _read_block(block: _Block) -> tuple[dict[str, Any] | None, str | None]:
    content = block.content.strip()
    if _squash(content) == _squash(EXAMPLE_BLOCK):
        return None, "the block only repeated the reminder's example"
    if len(content) > MAX_PROPOSAL_CHARS:
        return None, f"the state block is too long ({len(content)} characters)"
    if not content:
        return {"events": []}, None
    if not block.closed and _balanced_end(content, 0) != len(content):  # cut off mid-way
        value, count = _salvage(content)
        if value is _UNREADABLE:
            return None, "the state block was cut off before any complete event"
        return value, f"the state block was cut off; read its {count} complete event(s)"
    value = _loads(content)
    if value is _UNREADABLE:
        return None, "the state block could not be read as JSON"
    if value == {}:
        return {"events": []}, None
    proposal = _as_proposal(value)
    if proposal is None:
        # Ours but not a proposal: hand it on so the envelope layer refuses it out loud.
        return value if isinstance(value, dict) else {"events": value}, None
    return proposal, None


def _squash(text: str) -> str:
    return "".join(text.split())


def _drop_label_line(prose: str) -> str:
    """Remove a trailing label line ("State:") left just before a removed block."""
    head, newline, last = prose.rstrip().rpartition("\n")
    return head + newline if _LABEL_LINE.match(last) else prose


def _is_fence(line: str) -> bool:
    return bool(_FENCE_OPEN.fullmatch(line.rstrip()))


def _fences(text: str) -> int:
    return sum(1 for line in text.split("\n") if _is_fence(line))


def _drop_fence_line(piece: str, at_end: bool) -> str:
    """Remove the bare fence lines a model leaves around a removed block: one opening a
    wrapper just before it (an odd fence line: it closes no story block) and strays just
    after it ("```\n```" left at the end)."""
    lines = piece.split("\n")
    if at_end:
        last = len(lines) - 1
        while last > 0 and not lines[last].strip():
            last -= 1
        if _FENCE_ONLY.match(lines[last]) and _fences(piece) % 2:
            return "\n".join(lines[:last]) + "\n"
        return piece
    start = 0
    while start < len(lines) and (not lines[start].strip() or _FENCE_ONLY.match(lines[start])):
        start += 1
    if not any(_FENCE_ONLY.match(line) for line in lines[:start]):
        return piece
    return "\n" + "\n".join(lines[start:])


def _drop_stray_fences(prose: str) -> str:
    """Trailing bare fence lines that close no block of the prose (an odd count) go."""
    lines = prose.rstrip().split("\n")
    fences = _fences(prose)
    while lines and _FENCE_ONLY.match(lines[-1]) and fences % 2:
        lines.pop()
        fences -= 1
        while lines and not lines[-1].strip():
            lines.pop()
    return "\n".join(lines)


def _drop_echoes(prose: str) -> str:
    return "\n".join(line for line in prose.split("\n") if _norm_line(line) not in _REMINDER_LINES)


# A line opening with `>` is the transcript's action line ("> You open the door."): a model
# that writes one has started playing the player's part, so the prose ends before it.
_PLAYER_LINE = re.compile(r"^[ \t]*>", re.MULTILINE)


def _before_player_line(piece: str) -> tuple[str, bool]:
    """The piece up to a line the model wrote as the player's action, and whether it was cut."""
    found = _PLAYER_LINE.search(piece)
    return (piece, False) if found is None else (piece[: found.start()], True)


def extract_reply(text: str) -> Extraction:
    """Split a finished reply into (prose, raw_block, proposal, error)."""
    blocks, _ = _scan(text, streaming=False)
    pieces: list[str] = []
    pos = 0
    for block in blocks:
        piece = text[pos : block.start]
        if pos:  # after a removed block
            piece = _drop_fence_line(piece, at_end=False)
        pieces.append(_drop_fence_line(_drop_label_line(piece), at_end=True))
        pos = block.end
    pieces.append(_drop_fence_line(text[pos:], at_end=False) if blocks else text)
    for i, piece in enumerate(pieces):  # the prose stops at the model's own "> You …" line
        pieces[i], cut = _before_player_line(piece)
        if cut:
            pieces[i + 1 :] = []
            break
    prose = ""
    for i, piece in enumerate(pieces):
        piece = _drop_echoes(piece)
        if not piece.strip():
            continue
        if (
            not prose
        ):  # the reply's own opening is kept as written; a piece after a block is trimmed
            prose = piece if i == 0 else piece.lstrip()
            continue
        inline = not prose.rstrip(" \t").endswith("\n") and not piece.lstrip(" \t").startswith("\n")
        prose = prose.rstrip() + (" " if inline else "\n\n") + piece.lstrip()
    prose = _drop_stray_fences(prose) if blocks else prose.rstrip()
    if not blocks:
        return Extraction(prose, None, None, None)
    raw = "\n".join(text[b.start : b.end] for b in blocks)
    read = [_read_block(block) for block in blocks]
    errors = [error for _, error in read if error]
    parsed = [proposal for proposal, _ in read if proposal is not None]
    if len(parsed) > 1:  # several blocks: their events, in order
        events = [e for p in parsed if isinstance(p.get("events"), list) for e in p["events"]]
        if any(not isinstance(p.get("events"), list) for p in parsed):
            errors.append("a state block held no events list")
        parsed = [{"events": events}]
    return Extraction(prose, raw, parsed[0] if parsed else None, "; ".join(errors) or None)


def visible_prefix(streaming_text: str) -> str:
    """What is safe to show while a reply is still streaming.

    Everything before the first thing that is, or might still become, protocol: a state
    fence (even a partial ```` `` ```` or ```` ```sta ```` at the very end), a fence or a
    line-start `{` not yet closed, a label line, a line that may be echoing the reminder,
    or a line the model wrote as the player's action (`> You …`). Held text is released once it turns out to be prose, so the visible text
    only ever grows, and it is a prefix of the final prose.
    """
    text = streaming_text
    blocks, undecided = _scan(text, streaming=True)
    cut = min(
        [b.start for b in blocks] + ([undecided] if undecided is not None else []) + [len(text)]
    )
    shown, _ = _before_player_line(text[:cut])
    body = shown.rstrip()
    last_start = body.rfind("\n") + 1
    if _FENCE_ONLY.match(body[last_start:]) and _fences(body) % 2:  # may be wrapping a block
        shown = shown[:last_start]
    offset = 0
    for line in shown.split("\n"):  # an echoed reminder line: stop before it
        if _norm_line(line) in _REMINDER_LINES:
            shown = shown[:offset]
            break
        offset += len(line) + 1
    tail = _opening_tail(shown)
    if (
        tail is not None
    ):  # backticks at the very end (runs of them, spaced) may be opening a state fence
        shown = shown[:tail]
    body = shown.rstrip()
    if _LABEL_LINE.match(body[body.rfind("\n") + 1 :]):  # a label line may introduce a block
        shown = shown[: body.rfind("\n") + 1]
    start = shown.rfind("\n") + 1
    last = shown[start:]
    if (
        not last.strip(_MARKUP)
        or _label_prefix(last)
        or any(r.startswith(_norm_line(last)) for r in _REMINDER_LINES)
    ):
        shown = shown[:start]  # the unfinished last line may still become a label or an echo
        body = shown.rstrip()  # …and a bare fence or a label line before it goes with it
        start = body.rfind("\n") + 1
        if (_FENCE_ONLY.match(body[start:]) and _fences(body) % 2) or _LABEL_LINE.match(
            body[start:]
        ):
            shown = shown[:start]
    return shown


_MARKUP = " \t-*_#>"


_STATE_WORD_TAIL = re.compile(r"s(?:t(?:a(?:t(?:e)?)?)?)?\Z", re.IGNORECASE)


def _opening_tail(text: str) -> int | None:
    """Where the backticks at the very end of `text` begin (runs of them, spaced, perhaps
    closing on ```` ```sta ````), or None: they may yet open a state fence.

    A scan, not a regex: the pattern this replaces (a repeated group of backtick runs,
    anchored at the end) backtracked exponentially over a long run of backticks followed by
    anything else (a 65-character reply took minutes; found by atheris)."""
    end = len(text)
    word = _STATE_WORD_TAIL.search(text)
    if word:  # a partial "state" must follow three backticks (and spaces)
        i = word.start()
        while i and text[i - 1] in " \t":
            i -= 1
        run = i
        while run and text[run - 1] == "`":
            run -= 1
        if i - run < 3:
            return None
        end = run
    start = end
    while start and text[start - 1] in "` \t":
        start -= 1
    while start < end and text[start] != "`":  # the tail begins with a backtick
        start += 1
    if start == end:
        return end if word else None
    return start


def _label_prefix(line: str) -> bool:
    """Whether an unfinished last line could still become a label line ("State:")."""
    stripped = line.strip().strip("*_#> ").casefold()
    if not stripped:
        return False
    labels = ("state block:", "state update:", "state changes:", "changes:", "events:", "json:")
    return any(
        label.startswith(stripped) or stripped.rstrip(":") == label.rstrip(":") for label in labels
    )
