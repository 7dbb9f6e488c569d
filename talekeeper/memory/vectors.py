"""Embedding vectors: packed float32, compared by cosine, ranked top-K with numpy.

A vector is stored as little-endian float32 bytes (4 bytes a dimension: a 768-dimension
vector is 3 KB, where JSON text would be ~16 KB). A vector whose dimension differs from the
query's (the embedding model was changed) scores 0 and is re-embedded by the bank.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pack(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


def normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class VectorIndex:
    """The vectors of one adventure's memories, stacked and normalised once.

    Memories with no vector, or of another dimension than the index's, are kept aside and
    score 0 against every query.
    """

    def __init__(self, ids: Sequence[int], blobs: Sequence[bytes | None]) -> None:
        dims: dict[int, int] = {}
        for blob in blobs:
            if blob:
                dims[len(blob) // 4] = dims.get(len(blob) // 4, 0) + 1
        self.dim = max(dims, key=lambda d: dims[d]) if dims else 0
        keep = [(i, b) for i, b in zip(ids, blobs, strict=True) if b and len(b) // 4 == self.dim]
        self.ids = np.array([i for i, _ in keep], dtype=np.int64)
        self.matrix = (
            normalise(
                np.frombuffer(b"".join(b for _, b in keep), dtype="<f4")
                .reshape(len(keep), self.dim)
                .astype(np.float32)
            )
            if keep
            else np.zeros((0, self.dim), dtype=np.float32)
        )

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: Sequence[float]) -> dict[int, float]:
        """Cosine similarity of every indexed memory to the query (empty on a dimension mismatch)."""
        q = np.asarray(query, dtype=np.float32)
        if q.shape[-1] != self.dim or not len(self.ids):
            return {}
        sims = np.einsum(
            "ij,j->i", self.matrix, normalise(q)
        )  # not BLAS gemv: its thread pool stalls ~20 ms on 2 cores
        return dict(zip(self.ids.tolist(), sims.tolist(), strict=True))

    def top_k(
        self, query: Sequence[float], k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The k best (id, score), best first; `allowed` is a boolean mask over the index."""
        q = np.asarray(query, dtype=np.float32)
        if k <= 0 or q.shape[-1] != self.dim or not len(self.ids):
            return []
        sims = np.einsum(
            "ij,j->i", self.matrix, normalise(q)
        )  # not BLAS gemv: its thread pool stalls ~20 ms on 2 cores
        if allowed is not None:
            sims = np.where(allowed, sims, -np.inf)
        k = min(k, len(sims))
        best = np.argpartition(-sims, k - 1)[:k]
        best = best[np.argsort(-sims[best])]
        return [(int(self.ids[i]), float(sims[i])) for i in best if np.isfinite(sims[i])]
