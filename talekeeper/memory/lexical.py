"""Lexical retrieval (BM25) for when no embedding model is configured.

Measured on the labelled set in `benchmarks/memory.py`, BM25 over lightly stemmed words
finds the memory a scene turns on about as well as the small embedded model's embeddings,
with no model, no download and no extra seconds per turn. Names, places and objects are
what a later scene turns on, and those are exactly the words BM25 weighs.

`Index` is an inverted index kept between turns (memories are added one at a time), so a
query touches only the memories sharing a word with it: top-5 over 10,000 memories takes
about a millisecond, where rebuilding an index per query took 200. IDF is Lucene's
`log(1 + (N - n + 0.5) / (n + 0.5))`, always positive, computed over the memories a
query may return (those on the path to the head), so a branch's memories do not weigh
another's words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her hers him his
    i if in into is it its me my no nor not of on or our she so than that the their them then
    there these they this those to too up us was we were what when where which while who whom
    why will with would you your yours yourself s t just very can could should into onto over
    under again about after before out off down once here all any both each few more most other
    some such only own same says say said asks ask asked""".split()
)


@lru_cache(maxsize=16384)  # each turn's query is mostly the turn before's words
def stem(word: str) -> str:
    """A light suffix stripper: enough to meet `boats`/`boat`, `locked`/`lock`."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    return word


def tokens(text: str) -> list[str]:
    words = _WORD.findall(text.lower().replace("’", "'"))
    return [stem(w.split("'")[0]) for w in words if w not in STOPWORDS and len(w) > 1]


K1 = 1.5
B = 0.75


class Index:
    """BM25 over documents added and removed by id."""

    def __init__(self) -> None:
        self.lengths: dict[int, int] = {}
        self.terms: dict[int, Counter[str]] = {}
        self.postings: dict[str, dict[int, int]] = {}
        self.total = 0  # the lengths summed, kept as documents come and go

    def __len__(self) -> int:
        return len(self.lengths)

    def put(self, doc_id: int, text: str) -> None:
        self.remove(doc_id)
        words = Counter(tokens(text))
        self.lengths[doc_id] = sum(words.values())
        self.total += self.lengths[doc_id]
        self.terms[doc_id] = words
        for word, tf in words.items():
            self.postings.setdefault(word, {})[doc_id] = tf

    def remove(self, doc_id: int) -> None:
        words = self.terms.pop(doc_id, None)
        if words is None:
            return
        self.total -= self.lengths.pop(doc_id)
        for word in words:
            posting = self.postings[word]
            del posting[doc_id]
            if not posting:
                del self.postings[word]

    def scores(self, query: str, among: Collection[int] | None = None) -> dict[int, float]:
        """BM25 score of every document in `among` (all when None) that shares a word with
        the query; the others score 0 and are left out."""
        if among is None:
            return self.scores_in(query, None, self.total)
        pool = among if isinstance(among, set | frozenset | dict) else set(among)
        return self.scores_in(query, pool, sum(self.lengths[i] for i in pool))

    def scores_in(
        self, query: str, pool: set[int] | frozenset[int] | dict[int, object] | None, total: int
    ) -> dict[int, float]:
        """`scores` over `pool` (None: every document) whose lengths sum to `total`: a caller
        that keeps the pool and its total as its documents change (`recall.Pool`) pays for
        the postings the query reads, never for the pool."""
        count = len(self.lengths) if pool is None else len(pool)
        if not count:
            return {}
        lengths = self.lengths
        average = max(total / count, 1e-9)
        result: dict[int, float] = {}
        for word, repeats in Counter(tokens(query)).items():
            posting = self.postings.get(word)
            if not posting:
                continue
            hits = (
                posting.items()
                if pool is None
                else [(i, tf) for i, tf in posting.items() if i in pool]
            )
            if not hits:
                continue
            idf = math.log(1.0 + (count - len(hits) + 0.5) / (len(hits) + 0.5))
            for doc_id, tf in hits:
                norm = tf + K1 * (1.0 - B + B * lengths[doc_id] / average)
                result[doc_id] = result.get(doc_id, 0.0) + repeats * idf * tf * (K1 + 1.0) / norm
        return result


def rank(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of each document for the query (0 when nothing matches)."""
    index = Index()
    for n, document in enumerate(documents):
        index.put(n, document)
    scores = index.scores(query)
    return [scores.get(n, 0.0) for n in range(len(documents))]
