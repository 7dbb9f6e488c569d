"""The streaming filter's held-back tail of backticks is found by a scan in linear time,
and finds exactly what the regex it replaced found (that regex, with a nested quantifier,
backtracked exponentially: atheris found a 65-character reply that took minutes). The scan
checked here is the one tests/state/oracle_visible.py keeps; the streaming filter agrees
with that oracle piece by piece (test_streaming_filter.py), and costs in step with the
reply however long its runs of backticks (tests/test_reply_cost.py)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.state import visible_prefix
from tests.state.oracle_visible import _opening_tail

OLD = re.compile(
    r"(?:`+[ \t]*)*(?:`{3,}[ \t]*(?:s(?:t(?:a(?:t(?:e)?)?)?)?)?|`+[ \t]*)\Z", re.IGNORECASE
)


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="` \tsStTaAeEx\nſ", max_size=14))
def test_the_scan_finds_what_the_old_pattern_found(text: str) -> None:
    match = OLD.search(text)  # short inputs: the old pattern is still quick here
    assert _opening_tail(text) == (match.start() if match else None), text


def test_a_run_of_backticks_before_other_text_is_shown_and_a_partial_fence_is_not() -> None:
    found = 't+{"even4s":.\x00\x00\x00\x00\x00\x00\x00\x0c""""""""""' + "`" * 30 + " \x00}"
    assert visible_prefix(found).startswith("t+")
    assert visible_prefix("A" + "`" * 50_000 + "x") == "A" + "`" * 50_000 + "x"
    assert visible_prefix("The door. ```sta") == "The door. "
