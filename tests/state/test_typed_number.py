"""`state.stats.typed_number`: what every form (the State panel, the scenario editor, the
terminal's /fix) reads as a number the player typed."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from talekeeper.state.stats import typed_number


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_a_whole_number_is_an_int_however_written(n: int) -> None:
    for text in (str(n), f"{n}.0", f" {n} ", f"{n}e0"):
        value = typed_number(text)
        assert value == n and isinstance(value, int), text


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()))
def test_a_fraction_stays_a_float(x: float) -> None:
    assert typed_number(repr(x)) == x


def test_words_are_not_numbers() -> None:
    for text in ("", "lots", "3 apples", "1,5", "--2"):
        assert typed_number(text) is None, text
    assert math.isinf(typed_number("1e999"))  # a float, for the validator to refuse
