"""Lexical retrieval (BM25) for when no embedding model is configured.

Measured on the labelled set in `benchmarks/memory.py`, BM25 over lightly stemmed words
finds the memory a scene turns on about as well as the small embedded model's embeddings,
with no model, no download and no extra seconds per turn. Names, places and objects are
what a later scene turns on, and those are exactly the words BM25 weighs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her hers him his
    i if in into is it its me my no nor not of on or our she so than that the their them then
    there these they this those to too up us was we were what when where which while who whom
    why will with would you your yours yourself s t just very can could should into onto over
    under again about after before out off down once here all any both each few more most other
    some such only own same says say said asks ask asked""".split()
)


def stem(word: str) -> str:
    """A light suffix stripper: enough to meet `boats`/`boat`, `locked`/`lock`."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    return word


def tokens(text: str) -> list[str]:
    words = _WORD.findall(text.lower().replace("’", "'"))
    return [stem(w.split("'")[0]) for w in words if w not in STOPWORDS and len(w) > 1]


def rank(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of each document for the query (0 when nothing matches)."""
    corpus = [tokens(d) or ["\x00"] for d in documents]
    if not corpus:
        return []
    index = BM25Okapi(corpus)
    scores = index.get_scores(tokens(query))
    return [max(0.0, float(s)) for s in scores]
