"""Markdown-style emphasis in narration, rendered safely.

Models write `*italics*` and `**bold**`; shown raw, the asterisks clutter the story. The
text is escaped first — narration is untrusted and may hold markup — and only then are
paired asterisks turned into <em> and <strong>, so nothing but those two tags can ever
reach the page. An unpaired or spaced asterisk (`5 * 3`, `* a list`) stays as written.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

# Paired markers hugging their words: `**a b**`, `*a b*` (not `* a *`, not across lines).
_BOLD = re.compile(r"\*\*(?=\S)([^*\n]*?\S)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![*\w])")


def emphasis(text: str) -> Markup:
    safe = str(escape(text))
    safe = _BOLD.sub(r"<strong>\1</strong>", safe)
    safe = _ITALIC.sub(r"<em>\1</em>", safe)
    return Markup(safe)
