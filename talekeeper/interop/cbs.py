"""RisuAI's curly-braced syntax (CBS) in card text: found, named, and — where it means
alternatives — split.

CBS is a small template language (`{{#if cond}}…{{:else}}…{{/if}}`, `{{? 1+2}}`,
`{{getvar::x}}`, `{{random::a::b}}`, `{{// comment}}`). talekeeper runs none of it: it
stays the author's text, and the import report names it. One shape means alternatives:
a greeting made of conditional blocks, one of which RisuAI shows (a "choose your start"
greeting). `alternatives` splits such a greeting into its branches, which the importer
offers as starting points.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPEN = re.compile(r"^\s*#(if|if_pure|when|each|unless)\b", re.I)
_CLOSE = re.compile(r"^\s*/(if|if_pure|when|each|unless)?\s*$", re.I)
_ELSE = re.compile(r"^\s*(:else|else)\s*$", re.I)
_NAMED = re.compile(r"^\s*(//|[#/:?])?\s*([A-Za-z_][A-Za-z0-9_]*)?")
_COMMENT = re.compile(r"^\s*//")


def spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, inside) of each outermost `{{…}}`, nested braces counted."""
    found = []
    depth, start, i, n = 0, 0, 0, len(text)
    while i < n - 1:
        pair = text[i : i + 2]
        if pair == "{{":
            if depth == 0:
                start = i
            depth += 1
            i += 2
        elif pair == "}}" and depth:
            depth -= 1
            i += 2
            if depth == 0:
                found.append((start, i, text[start + 2 : i - 2]))
        else:
            i += 1
    return found


def constructs(text: str) -> list[str]:
    """The CBS constructs in `text`, as written at their start (`{{#if`, `{{?`, …)."""
    found: list[str] = []
    for _, _, inside in spans(text):
        stripped = inside.strip()
        if stripped.startswith(("#", "/", ":", "?")):
            head = _NAMED.match(stripped)
            label = "{{" + (head.group(0).strip() if head else stripped[:8]) + "}}"
            if label not in found:
                found.append(label)
        found += [c for c in constructs(inside) if c not in found]
    return found


@dataclass
class _Block:
    condition: str
    branches: list[str] = field(default_factory=lambda: [""])


def alternatives(text: str) -> list[tuple[str, str]] | None:
    """The branches of a greeting written as conditional blocks, each with the text
    outside the blocks around it: [(condition, greeting), …], or None when the text is
    not such a greeting (no block, or a single block without `{{:else}}`: optional text)."""
    parts: list[str | _Block] = []
    stack: list[_Block] = []
    last = 0
    for start, end, inside in spans(text):
        if _OPEN.match(inside):
            if not stack:
                parts.append(text[last:start])
                stack.append(_Block(inside.strip()))
            else:
                stack[-1].branches[-1] += text[last:end]
                stack.append(_Block(inside.strip()))  # nested: kept as text of the outer
            last = end
        elif _CLOSE.match(inside) and stack:
            block = stack.pop()
            if not stack:
                block.branches[-1] += text[last:start]
                parts.append(block)
            else:
                stack[-1].branches[-1] += text[last:end]
            last = end
        elif _ELSE.match(inside) and len(stack) == 1:
            stack[0].branches[-1] += text[last:start]
            stack[0].branches.append("")
            last = end
        elif stack:
            continue
    if stack:
        return None  # a block never closed: leave the text as it is
    parts.append(text[last:])
    # The text around the blocks, without CBS comments (RisuAI never shows them).
    parts = [p if isinstance(p, _Block) else _uncomment(p) for p in parts]
    blocks = [p for p in parts if isinstance(p, _Block)]
    branches = sum(len(b.branches) for b in blocks)
    if branches < 2:
        return None
    found = []
    for block in blocks:
        for number, branch in enumerate(block.branches):
            pieces = [(branch if p is block else "") if isinstance(p, _Block) else p for p in parts]
            if not _uncomment(branch).strip():
                continue  # an empty branch shows nothing: no starting point
            greeting = re.sub(r"\n\s*\n(\s*\n)+", "\n\n", "".join(pieces)).strip()
            condition = block.condition if number == 0 else f"not ({block.condition})"
            if greeting:
                found.append((condition, greeting))
    return found if len(found) >= 2 else None


def _uncomment(text: str) -> str:
    """`text` without its `{{// comments}}`."""
    for start, end, inside in reversed(spans(text)):
        if _COMMENT.match(inside):
            text = text[:start] + text[end:]
    return text
