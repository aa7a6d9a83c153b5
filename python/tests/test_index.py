"""Row slices (``read_msgpack(..., rows=slice(a, b))``) and the record index (``FILE.offsets``,
datadings' format: big-endian uint64 record starts plus the end).

References: Python ``msgpack.Unpacker`` (record boundaries from ``tell()`` and the records
themselves), datadings' own ``FileWriter`` and ``MsgpackReader``, and Polars slicing of the full
read (the rows a slice must give)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma
from test_cli_command import run as cli


def records(n: int, dim: int = 4, start: int = 0) -> bytes:
    return b"".join(
        mn.packb({"id": i, "label": f"r{i}", "emb": np.arange(dim, dtype="<f4") + i}) for i in range(start, start + n)
    )


def unpacker_offsets(data: bytes) -> list[int]:
    """Where each top-level object starts, and the end, as Python msgpack sees them."""
    u = msgpack.Unpacker(io.BytesIO(data), raw=False, strict_map_key=False)
    out = [0]
    for _ in u:
        out.append(u.tell())
    return out


def offsets_file(path: Path) -> list[int]:
    return np.fromfile(str(path) + ".offsets", dtype=">u8").tolist()


@pytest.mark.parametrize("rows", [slice(0, 3), slice(7, 12), slice(5, None), slice(None, 4), slice(18, 25), slice(40, 50), range(3, 9)])
@pytest.mark.parametrize("indexed", [False, True])
def test_rows_are_the_slice_of_the_whole_read(tmp_path, rows, indexed):
    p = tmp_path / "d.msgpack"
    p.write_bytes(records(20))
    if indexed:
        ma.write_msgpack(ma.read_arrow(p), p, layout="auto", index=True)
    whole = ma.read_msgpack(p)
    start = rows.start or 0
    stop = 20 if rows.stop is None else min(rows.stop, 20)
    got = ma.read_msgpack(p, rows=rows)
    if start >= 20:
        assert got.height == 0
    else:
        assert_frame_equal(got, whole.slice(start, stop - start))
    # n_rows counts from the slice's first row
    if start < 20:
        assert_frame_equal(ma.read_msgpack(p, rows=rows, n_rows=2), whole.slice(start, min(2, stop - start)))


def test_rows_of_values_and_of_one_top_level_array(tmp_path):
    vals = [np.full(3, i, dtype="<i2") for i in range(10)]
    stream = b"".join(mn.packb(v) for v in vals)
    array = mn.packb([{"x": i} for i in range(10)])
    for data in (stream, array):
        whole = ma.read_msgpack(data)
        assert_frame_equal(ma.read_msgpack(data, rows=slice(3, 6)), whole.slice(3, 3))
    # a columns map and a bare ndarray: their rows are not objects, so they are dropped after decoding
    cols = mn.packb({"a": np.arange(10, dtype="<i8"), "b": np.arange(10, dtype="<f8")})
    assert ma.read_msgpack(cols, rows=slice(4, 7))["a"].to_list() == [4, 5, 6]
    bare = mn.packb(np.arange(12, dtype="<f4").reshape(6, 2))
    assert ma.read_msgpack(bare, rows=slice(2, 4))["value"].to_list() == [[4.0, 5.0], [6.0, 7.0]]


def test_bad_row_slices_are_refused():
    data = records(3)
    with pytest.raises(ValueError, match="step 1"):
        ma.read_msgpack(data, rows=slice(0, 3, 2))
    with pytest.raises(ValueError, match="negative"):
        ma.read_msgpack(data, rows=slice(-2, None))
    with pytest.raises(TypeError, match="slice or a range"):
        ma.read_msgpack(data, rows=[1, 2])


def test_write_index_matches_python_msgpack_and_reads_straight_to_the_row(tmp_path):
    p = tmp_path / "d.msgpack"
    data = records(50, dim=16)
    ma.write_msgpack(ma.read_arrow(data), p, layout="auto", index=True)
    assert p.read_bytes() == data
    assert offsets_file(p) == unpacker_offsets(data)
    # break record 3 (an invalid marker where its map header is): only a read that walks over it
    # meets it; with the index, rows 10.. are reached without touching it
    broken = bytearray(data)
    broken[unpacker_offsets(data)[3]] = 0xC1
    p.write_bytes(bytes(broken))  # same size: the index still ends where the file does
    # the file is newer than its index now: the index is checked against all of it first
    with pytest.raises(ma.DecodeError, match="record 3"):
        ma.read_msgpack(p, rows=slice(10, 15))
    # an index as new as its file is trusted: the read starts at row 10's byte
    index = Path(str(p) + ".offsets")
    os.utime(index, ns=(index.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))
    got = ma.read_msgpack(p, rows=slice(10, 15))
    assert got["id"].to_list() == list(range(10, 15))
    Path(str(p) + ".offsets").unlink()
    with pytest.raises(ma.DecodeError):
        ma.read_msgpack(p, rows=slice(10, 15))


def test_datadings_dataset_rows_through_its_index(tmp_path):
    from datadings.reader import MsgpackReader
    from datadings.writer import FileWriter

    rng = np.random.default_rng(5)
    p = tmp_path / "set.msgpack"
    with FileWriter(str(p), overwrite=True, disable=True) as w:
        for i in range(30):
            w.write({"key": f"k{i}", "x": rng.random(5).astype("<f8"), "label": i % 4})
    with MsgpackReader(str(p)) as r:
        want = list(r.slice(12, 20))
    got = ma.read_msgpack(p, rows=slice(12, 20))
    assert got["key"].to_list() == [s["key"] for s in want]
    np.testing.assert_array_equal(got["x"].to_numpy(), np.stack([s["x"] for s in want]))
    # what we write, datadings' reader reads through our index (its .keys sidecar is kept)
    before = offsets_file(p)
    ma.write_msgpack(ma.read_arrow(p), p, layout="auto")  # had an index: it is written anew
    assert offsets_file(p) == before == unpacker_offsets(p.read_bytes())
    with MsgpackReader(str(p)) as r:
        assert [r.get(i)["key"] for i in range(len(r))] == [f"k{i}" for i in range(30)]


@pytest.mark.parametrize(
    "damage",
    ["shifted", "shorter file", "not uint64s", "decreasing"],
)
def test_an_index_that_does_not_match_is_an_error_never_wrong_rows(tmp_path, damage):
    p = tmp_path / "d.msgpack"
    data = records(20)
    p.write_bytes(data)
    idx = Path(str(p) + ".offsets")
    offs = np.array(unpacker_offsets(data), dtype=">u8")
    if damage == "shifted":
        offs[6] += 1  # record 5 then ends one byte late
        idx.write_bytes(offs.tobytes())
    elif damage == "shorter file":
        idx.write_bytes(offs.tobytes())
        p.write_bytes(records(19))
    elif damage == "not uint64s":
        idx.write_bytes(offs.tobytes()[:-3])
    else:
        offs[4], offs[5] = offs[5], offs[4]
        idx.write_bytes(offs.tobytes())
    with pytest.raises(Exception, match=r"\.offsets: the record index does not match its file") as ei:
        got = ma.read_msgpack(p, rows=slice(4, 8))
        print(got)
    assert not isinstance(ei.value, AssertionError)
    # a read from the start does not need the index
    assert ma.read_msgpack(p).height in (19, 20)


def test_index_needs_a_plain_local_path(tmp_path):
    df = pl.DataFrame({"x": [1, 2]})
    with pytest.raises(ValueError, match="uncompressed msgpack"):
        ma.write_msgpack(df, tmp_path / "d.msgpack.zst", index=True)
    with pytest.raises(ValueError, match="path"):
        ma.write_msgpack(df, None, index=True)
    assert not list(tmp_path.iterdir())


def test_sink_writes_an_index(tmp_path):
    p = tmp_path / "s.msgpack"
    ma.sink_msgpack(pl.LazyFrame({"x": list(range(100)), "y": [str(i) for i in range(100)]}), p, index=True)
    assert offsets_file(p) == unpacker_offsets(p.read_bytes())
    assert ma.read_msgpack(p, rows=slice(90, 95))["x"].to_list() == list(range(90, 95))


def test_cli_index_head_skip_and_convert_index(tmp_path):
    p = tmp_path / "d.msgpack"
    data = records(40)
    p.write_bytes(data)
    r = cli("index", str(p))
    assert r.returncode == 0, r.stderr
    assert "40 records" in r.stdout
    assert offsets_file(p) == unpacker_offsets(data)
    r = cli("head", "--skip", "35", "-n", "3", str(p))
    assert r.returncode == 0, r.stderr
    assert "r35" in r.stdout and "r37" in r.stdout and "r34" not in r.stdout and "r38" not in r.stdout, r.stdout
    out = tmp_path / "o.msgpack"
    r = cli("convert", str(p), "-o", str(out), "--index", "--skip", "10", "--n-rows", "5")
    assert r.returncode == 0, r.stderr
    assert msgpack.Unpacker(io.BytesIO(out.read_bytes()), object_hook=mn.decode) is not None
    assert offsets_file(out) == unpacker_offsets(out.read_bytes())
    assert [rec["id"] for rec in msgpack.Unpacker(io.BytesIO(out.read_bytes()), raw=False)] == list(range(10, 15))
    r = cli("convert", str(p), "-o", str(tmp_path / "o.parquet"), "--index")
    assert r.returncode != 0 and "uncompressed msgpack" in r.stderr
