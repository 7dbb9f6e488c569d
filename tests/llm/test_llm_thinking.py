import re

from hypothesis import given
from hypothesis import strategies as st

from talekeeper.llm.thinking import ThinkSplitter


def split_all(chunks: list[str]) -> list[tuple[str, str]]:
    splitter = ThinkSplitter()
    out = []
    for chunk in chunks:
        out += splitter.feed(chunk)
    out += splitter.flush()
    return merge(out)


def merge(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    for kind, text in pieces:
        if merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + text)
        elif text:
            merged.append((kind, text))
    return merged


def reference(text: str) -> list[tuple[str, str]]:
    """Tags are exact; an unclosed <think> runs to the end."""
    out, inside = [], False
    for part in re.split(r"(<think>|</think>)", text):
        if part == ("</think>" if inside else "<think>"):
            inside = not inside
        elif part:
            out.append(("reasoning" if inside else "text", part))
    return merge(out)


def test_separates_think_span_from_text():
    assert split_all(["<think>plan the scene</think>You open the door."]) == [
        ("reasoning", "plan the scene"),
        ("text", "You open the door."),
    ]


def test_tags_cut_at_every_position_across_chunks():
    text = "Before<think>inner thought</think>After"
    expected = [("text", "Before"), ("reasoning", "inner thought"), ("text", "After")]
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            assert split_all([text[:i], text[i:j], text[j:]]) == expected, (i, j)


def test_one_character_chunks():
    text = "<think>a</think>b<think>c</think>d"
    assert split_all(list(text)) == [
        ("reasoning", "a"),
        ("text", "b"),
        ("reasoning", "c"),
        ("text", "d"),
    ]


def test_lookalike_text_is_not_held_back_forever():
    splitter = ThinkSplitter()
    assert splitter.feed("a <thin") == [("text", "a ")]  # "<thin" might become a tag
    assert splitter.feed("g> b") == [("text", "<thing> b")]


def test_unfinished_tag_at_end_is_flushed_as_text():
    assert split_all(["The end <thi"]) == [("text", "The end <thi")]


def test_unclosed_think_stays_reasoning():
    assert split_all(["<think>still thinking"]) == [("reasoning", "still thinking")]


@given(
    st.lists(
        st.sampled_from(["<think>", "</think>", "<", ">", "/", "think", "a", " b", "<th", "k>"]),
        max_size=30,
    ),
    st.lists(st.integers(min_value=0, max_value=200), max_size=10),
)
def test_any_chunking_gives_the_unchunked_result(tokens, cuts):
    text = "".join(tokens)
    points = sorted({min(c, len(text)) for c in cuts})
    chunks, last = [], 0
    for point in points:
        chunks.append(text[last:point])
        last = point
    chunks.append(text[last:])
    assert split_all(chunks) == reference(text)
