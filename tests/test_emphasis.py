"""Markdown-style emphasis in narration: *italics* and **bold**, and never anything else."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.web.emphasis import emphasis

TAGS = re.compile(r"</?(?:em|strong)>")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("She *whispers* it.", "She <em>whispers</em> it."),
        ("**Stop!** he cries.", "<strong>Stop!</strong> he cries."),
        ("A **bold** and *soft* word.", "A <strong>bold</strong> and <em>soft</em> word."),
        ("5 * 3 = 15, and 2 * 2 = 4", "5 * 3 = 15, and 2 * 2 = 4"),
        ("* a list item", "* a list item"),
        ("an *unclosed mark", "an *unclosed mark"),
        ("<b>*x*</b>", "&lt;b&gt;<em>x</em>&lt;/b&gt;"),
        (
            '*<img src=x onerror="alert(1)">*',
            "<em>&lt;img src=x onerror=&#34;alert(1)&#34;&gt;</em>",
        ),
    ],
)
def test_emphasis_is_rendered_after_escaping(text: str, shown: str) -> None:
    assert str(emphasis(text)) == shown


@given(st.text(alphabet=st.sampled_from(list("ab *<>&\"'\n_")), max_size=60))
def test_only_em_and_strong_can_reach_the_page_and_no_word_is_lost(text: str) -> None:
    out = str(emphasis(text))
    assert "<" not in TAGS.sub("", out)  # every other "<" was escaped
    assert html.unescape(TAGS.sub("", out)).replace("*", "") == text.replace("*", "")


def test_the_play_page_shows_emphasis_in_stored_narration(
    client, adventure_id: int, scripted
) -> None:
    scripted.queue("Maren *whispers*: **run**. <i>not this</i>")
    assert (
        client.post(
            f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "listen"}
        ).status_code
        == 200
    )
    page = client.get(f"/adventures/{adventure_id}").text
    assert "Maren <em>whispers</em>: <strong>run</strong>. &lt;i&gt;not this&lt;/i&gt;" in page
