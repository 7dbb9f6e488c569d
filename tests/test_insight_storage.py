"""Insights records on disk (store/models.InsightJSON): each keeps the version of the
dictionary it was compressed with, every version stays readable, and the dictionaries never
change under stored records."""

from __future__ import annotations

import hashlib
import json
import zlib

from hypothesis import given
from hypothesis import strategies as st

from talekeeper.store import models
from talekeeper.store.models import InsightJSON

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(record=st.dictionaries(st.text(), JSON, max_size=6))
def test_any_record_reads_back_as_it_was_written(record) -> None:
    stored = InsightJSON().process_bind_param(record, None)
    assert stored[:1] == b"\x02"
    assert InsightJSON().process_result_value(stored, None) == record


def test_records_of_every_earlier_version_still_read() -> None:
    record = {"v": 1, "sections": [{"n": "narrator", "src": "plot: narrator instructions"}]}
    raw = json.dumps(record, separators=(",", ":"), sort_keys=True).encode()
    one = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, models._INSIGHT_ZDICT)
    for stored in (b"\x01" + one.compress(raw) + one.flush(), zlib.compress(raw)):
        assert InsightJSON().process_result_value(stored, None) == record


def test_the_dictionaries_are_frozen() -> None:
    """A stored record needs exactly the dictionary it was written with: a change is a new
    version (a new byte and a new dictionary), never an edit of an old one."""
    digests = {v: hashlib.sha256(d).hexdigest() for v, d in models._INSIGHT_ZDICTS.items()}
    assert digests == {
        1: "a864cabe3bd1d5519682e0454e88f975dd0be81895f4ddbc975d7a29a028456a",
        2: "fab99587ae6f6bfec282f097012b07ab07e31843a41c6528cf8b79781a549035",
    }
