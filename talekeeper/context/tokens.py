"""Token counts, cached: the same instructions and history are counted every turn.

The provider decides how to count (exact for the embedded model, which asks its own
tokenizer; a calibrated estimate for servers whose tokenizer we cannot run). A turn counts
the same texts again and again, so counts are remembered per provider by a digest of the
text, bounded, oldest forgotten first.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable

CountFn = Callable[[str], Awaitable[int]]
CACHE_SIZE = 4096


class TokenCounter:
    def __init__(self, count: CountFn, size: int = CACHE_SIZE) -> None:
        self._count = count
        self._size = size
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self.calls = 0  # how many texts were actually sent to the tokenizer

    async def __call__(self, text: str) -> int:
        if not text:
            return 0
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        self.calls += 1
        value = int(await self._count(text))
        self._cache[key] = value
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return value


_counters: weakref.WeakKeyDictionary[object, TokenCounter] = weakref.WeakKeyDictionary()


def counter_for(provider: object) -> TokenCounter:
    """One cached counter per provider object (a new provider starts a fresh cache)."""
    counter = _counters.get(provider)
    if counter is None:
        counter = TokenCounter(provider.count_tokens)  # type: ignore[attr-defined]
        _counters[provider] = counter
    return counter
