"""The adventure bundle: round trip (hypothesis), and refusal of truncated, tampered and
hostile files with nothing written."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.interop.bundle_format import bundle_schema
from talekeeper.interop.bundles import BundleInvalid
from talekeeper.service.app import Talekeeper
from tests import pg
from tests.interop_helpers import (
    assert_same_story,
    build_story,
    export_bytes,
    import_bytes,
    pack,
    records,
    row_counts,
)

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "turn",
                "turn",
                "turn",
                "take",
                "undo",
                "undo",
                "redo",
                "name",
                "save",
                "memory",
                "summary",
                "insight",
            ]
        ),
        st.integers(0, 50),
    ),
    max_size=25,
)


@pytest.fixture(scope="module")
def shared_tk(tmp_path_factory: pytest.TempPathFactory):
    with pg.own_database("bundle_home") as url:  # two installations: two databases
        app = Talekeeper(tmp_path_factory.mktemp("bundle-home"), database_url=url)
        yield app
        app.db.dispose()


@pytest.fixture(scope="module")
def other_tk(tmp_path_factory: pytest.TempPathFactory):
    with pg.own_database("bundle_other") as url:  # two installations: two databases
        app = Talekeeper(tmp_path_factory.mktemp("bundle-other"), database_url=url)
        yield app
        app.db.dispose()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_round_trip_is_equal_up_to_ids(shared_tk: Talekeeper, other_tk: Talekeeper, ops) -> None:
    adventure_id = build_story(shared_tk, ops)
    first = export_bytes(shared_tk, adventure_id)
    # Into the same database (ids all differ) and into another one (its scenario comes along).
    for target in (shared_tk, other_tk):
        result = import_bytes(target, first)
        assert result.adventure_id != adventure_id or target is other_tk
        assert_same_story(export_bytes(target, result.adventure_id), first)


def test_bundle_carries_everything(tk: Talekeeper) -> None:
    ops = [
        ("turn", 1),
        ("turn", 2),
        ("memory", 3),
        ("insight", 4),
        ("take", 5),
        ("save", 6),
        ("undo", 0),
        ("summary", 7),
        ("name", 8),
    ]
    adventure_id = build_story(tk, ops)
    found = records(export_bytes(tk, adventure_id))
    kinds = [r["t"] for r in found]
    assert kinds[0] == "header" and kinds[-1] == "end"
    assert kinds.count("node") == 4 and kinds.count("memory") == 1 and kinds.count("insight") == 1
    assert (
        kinds.count("save_point") == 1 and kinds.count("summary") == 1 and kinds.count("text") == 1
    )
    header = found[0]
    assert header["adventure"]["scenario"]["id"] == "greywater-lantern"
    assert header["adventure"]["rules"]["stats"]["world"]["night"]["max"] == 3
    assert header["adventure"]["plot"]["story_cards"][0]["name"] == "Maren"
    nodes = [r for r in found if r["t"] == "node"]
    assert [n["parent"] for n in nodes] == [None, 1, 2, 2]  # two takes under turn 1
    assert nodes[1]["active_child"] == 4 and nodes[1]["proposal"]["report"] is not None
    assert header["adventure"]["head"] == 2  # undone: the head is on turn 1, Redo goes to the take
    # The schema published for a line accepts every line.
    import jsonschema

    validator = jsonschema.Draft202012Validator(bundle_schema())
    for record in found:
        validator.validate(record)


def test_truncated_bundle_writes_nothing(tk: Talekeeper) -> None:
    data = export_bytes(tk, build_story(tk, [("turn", i) for i in range(6)]))
    before = row_counts(tk)
    raw = gzip.decompress(data)
    cuts = [len(data) // 2, len(data) - 1, len(data) - 9, 10]
    for cut in cuts:
        with pytest.raises(BundleInvalid):
            import_bytes(tk, data[:cut])
    # Whole lines dropped from the end, recompressed: the end record is missing or wrong.
    lines = raw.splitlines(keepends=True)
    for keep in (1, len(lines) - 1, len(lines) - 2):
        with pytest.raises(BundleInvalid, match="end record|records|counts|truncated"):
            import_bytes(tk, gzip.compress(b"".join(lines[:keep])))
    assert row_counts(tk) == before


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(0, 10_000), flip=st.integers(0, 10_000), bit=st.integers(0, 7))
def test_any_damage_is_refused_and_writes_nothing(
    shared_tk: Talekeeper, cut: int, flip: int, bit: int
) -> None:
    data = _small_bundle(shared_tk)
    before = row_counts(shared_tk)
    with pytest.raises(BundleInvalid):
        import_bytes(shared_tk, data[: cut % len(data)])
    assert row_counts(shared_tk) == before
    damaged = bytearray(data)
    damaged[flip % len(data)] ^= 1 << bit
    try:
        result = import_bytes(shared_tk, bytes(damaged))
    except BundleInvalid:
        assert row_counts(shared_tk) == before
    else:  # only gzip's own header flags and timestamp may change without changing the story
        assert flip % len(data) < 10
        assert_same_story(export_bytes(shared_tk, result.adventure_id), data)


_SMALL: dict[int, bytes] = {}


def _small_bundle(tk: Talekeeper) -> bytes:
    if id(tk) not in _SMALL:
        _SMALL[id(tk)] = export_bytes(
            tk,
            build_story(tk, [("turn", 1), ("memory", 1), ("insight", 2), ("turn", 3), ("save", 1)]),
        )
    return _SMALL[id(tk)]


def _tamper(data: bytes, change) -> bytes:
    items = records(data)
    change(items)
    return pack(items)


def _node(items, local_id):
    return next(r for r in items if r["t"] == "node" and r["id"] == local_id)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: _node(r, 3).update(parent=7), "line 5 (node).parent"),
        (lambda r: _node(r, 3).update(parent=None), "line 5 (node).parent"),
        (lambda r: _node(r, 3).update(depth=5), "line 5 (node).depth"),
        (lambda r: _node(r, 2).update(active_child=None), "has children but no active child"),
        (lambda r: _node(r, 1).update(active_child=3), "node 1.active_child"),
        (
            lambda r: _node(r, 3)["state"]["stats"]["world"]["night"].update(value=99),
            "line 5 (node).state",
        ),
        (lambda r: _node(r, 2).update(state={"version": 1, "bogus": True}), "line 4 (node).state"),
        (lambda r: r[0]["adventure"].update(head=9), "adventure.head"),
        (
            lambda r: r[0]["adventure"]["rules"]["stats"]["world"]["night"].update(max=-5),
            "adventure.rules",
        ),
        (lambda r: r[0]["adventure"]["plot"].update(author_note=5), "plot.author_note"),
        (lambda r: r[0]["counts"].update(nodes=5), "counts.nodes"),
        (
            lambda r: next(x for x in r if x["t"] == "save_point").update(node=40),
            "(save_point).node",
        ),
        (lambda r: next(x for x in r if x["t"] == "memory").update(node=40), "(memory).node"),
        (
            lambda r: next(x for x in r if x["t"] == "insight")["data"].update(hist=[40, 1, 1]),
            "data.hist[0]",
        ),
        (lambda r: next(x for x in r if x["t"] == "text").update(text="changed"), "(text).digest"),
        (lambda r: r.insert(3, r.pop(1)), "out of order"),
        (lambda r: _node(r, 2).update(kind=""), "line 4.kind"),
        (lambda r: _node(r, 2).update(surprise=1), "line 4.surprise"),
    ],
)
def test_tampered_bundle_is_refused_with_the_path(tk: Talekeeper, change, path: str) -> None:
    data = _tamper(_small_bundle(tk), change)
    before = row_counts(tk)
    with pytest.raises(BundleInvalid) as refused:
        import_bytes(tk, data)
    assert path in str(refused.value), str(refused.value)
    assert "Nothing was imported" in str(refused.value)
    assert row_counts(tk) == before


def test_checksum_catches_an_unsigned_edit(tk: Talekeeper) -> None:
    items = records(_small_bundle(tk))
    _node(items, 2)["narration"] = "Something else entirely."
    body = b"".join((json.dumps(r) + "\n").encode() for r in items)
    with pytest.raises(BundleInvalid, match="checksum"):
        import_bytes(tk, gzip.compress(body))


def test_hostile_files_are_refused_quickly(tk: Talekeeper) -> None:
    before = row_counts(tk)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"0" * (1024 * 1024)
    bomb = (
        b"".join(compressor.compress(block) for _ in range(512)) + compressor.flush()
    )  # ~0.5 MB → 512 MB
    newline_bomb = gzip.compress(b"\n" * (64 * 1024 * 1024))
    deep = gzip.compress(b'{"t":"header","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    noise = bytes((i * 7919) % 251 for i in range(5 * 1024 * 1024))
    for hostile in (
        bomb,
        newline_bomb,
        deep,
        noise,
        b"",
        b"\x1f\x8b",
        gzip.compress(b"not json\n"),
        gzip.compress(b"[]\n"),
    ):
        with pytest.raises(BundleInvalid):
            import_bytes(tk, hostile)
    assert row_counts(tk) == before


def test_cli_export_and_import(tk: Talekeeper, tmp_path: Path, isolated_home: Path) -> None:
    from typer.testing import CliRunner

    from talekeeper.cli import app

    adventure_id = build_story(tk, [("turn", 1), ("turn", 2)])
    target = tmp_path / "story.gz"
    runner = CliRunner()
    done = runner.invoke(
        app, ["export", str(adventure_id), str(target), "--data-dir", str(isolated_home)]
    )
    assert done.exit_code == 0, done.output
    assert target.exists() and "Exported" in done.output
    before = row_counts(tk)
    done = runner.invoke(app, ["import", str(target), "--data-dir", str(isolated_home)])
    assert done.exit_code == 0, done.output
    assert "Imported" in done.output
    assert row_counts(tk)["nodes"] == before["nodes"] + 3
    target.write_bytes(target.read_bytes()[:-20])
    done = runner.invoke(app, ["import", str(target), "--data-dir", str(isolated_home)])
    assert done.exit_code == 1 and "Nothing was imported" in done.output


def test_snapshots_orjson_cannot_write_are_kept_as_they_were(tk: Talekeeper) -> None:
    """An import writes snapshots with orjson, which turns NaN into null and refuses integers
    past 64 bits: a snapshot holding either is written the standard library's way, exactly."""
    found = records(export_bytes(tk, build_story(tk, [("turn", 1), ("turn", 2)])))
    nodes = [r for r in found if r["t"] == "node"]
    nodes[1]["state"]["entities"]["player"]["attributes"]["stars"] = 2**70
    nodes[2]["state"]["entities"]["player"]["attributes"]["odds"] = float("nan")
    result = import_bytes(tk, pack(found))
    again = [r for r in records(export_bytes(tk, result.adventure_id)) if r["t"] == "node"]
    assert again[1]["state"]["entities"]["player"]["attributes"]["stars"] == 2**70
    odds = again[2]["state"]["entities"]["player"]["attributes"]["odds"]
    assert odds != odds  # NaN, not null
    assert again[0]["state"] == nodes[0]["state"]  # the others as they were too
