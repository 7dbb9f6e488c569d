"""Separate a model's `<think>…</think>` spans from its narration while it streams.

Reasoning models (DeepSeek-R1 distills, Qwen3, …) served without a reasoning parser put
their thinking inline in the text. The player should see it apart from the story, and
it must never be stored as narration. Tags arrive cut anywhere across chunks
(`"<thi"` + `"nk>"`), so the splitter holds back any tail that could be the start of a
tag until the next chunk decides it.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["text", "reasoning"]

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Feed chunks in, get (kind, text) pieces out; call `flush()` at the end."""

    def __init__(self) -> None:
        self._inside = False
        self._pending = ""

    def feed(self, chunk: str) -> list[tuple[Kind, str]]:
        out: list[tuple[Kind, str]] = []
        buffer = self._pending + chunk
        self._pending = ""
        while buffer:
            tag = CLOSE_TAG if self._inside else OPEN_TAG
            kind: Kind = "reasoning" if self._inside else "text"
            index = buffer.find(tag)
            if index >= 0:
                if index:
                    out.append((kind, buffer[:index]))
                buffer = buffer[index + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_tag_suffix(buffer, tag)
            if len(buffer) > keep:
                out.append((kind, buffer[: len(buffer) - keep]))
            self._pending = buffer[len(buffer) - keep :]
            break
        return out

    def flush(self) -> list[tuple[Kind, str]]:
        """Whatever was held back: a tag cut off by the end of the stream is just text."""
        pending, self._pending = self._pending, ""
        if not pending:
            return []
        return [("reasoning" if self._inside else "text", pending)]
