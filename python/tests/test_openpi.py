"""openpi's dialect written back: ``{__ndarray__, data, dtype, shape}`` ndarrays and
``{__npgeneric__, data, dtype}`` numpy scalars, as ``openpi_client.msgpack_numpy.packb`` writes
them and its ``unpackb`` loads them.

openpi_client is not on PyPI; its codec (two functions around ``msgpack.packb``/``unpackb``) is
the one in tests/data/generate.py, written by its rules. The golden file ``rec_openpi`` is made
with it; here files are also made with random dtypes, byte orders and shapes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgpack
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from test_cli_command import _command

import msgpack_arrow as ma

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "data"))
from generate import openpi_decode, openpi_encode, sample  # noqa: E402

DTYPES = ["<f4", ">f4", "<f8", "<f2", "<i8", ">i4", "<i2", "|i1", "<u8", ">u2", "|u1", "|b1"]


def openpi_file(rng, rows: int) -> bytes:
    dts = rng.choice(DTYPES, 3)
    recs = []
    for i in range(rows):
        recs.append(
            {
                "obs": sample(rng, dts[0], (2, 3)),
                "ragged": sample(rng, dts[1], (i % 3, 2)),
                "zero_d": sample(rng, dts[2], ()),
                "step": np.int32(i - 2),
                "big": np.uint64(2**64 - 1 - i),
                "tiny": np.int8(-128 + i),
                "reward": np.float32(0.25 * i),
                "half": np.float16(-1.5 * i),
                "done": np.bool_(i % 2 == 0),
                "plain": 1.25 * i,
                "name": f"ep{i}",
            }
        )
    return b"".join(msgpack.packb(r, default=openpi_encode, use_bin_type=True) for r in recs)


def assert_same_objects(got, want):
    assert type(got) is type(want) or (isinstance(got, np.generic) and isinstance(want, np.generic))
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            assert_same_objects(got[k], want[k])
    elif isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True)
    else:
        assert got == want


@pytest.mark.parametrize("seed", range(6))
def test_read_then_write_is_byte_exact(tmp_path, seed):
    data = openpi_file(np.random.default_rng(seed), 5)
    p = tmp_path / "openpi.msgpack"
    p.write_bytes(data)
    table = ma.read_arrow(p)
    assert pa.schema(table).metadata[b"msgpack_arrow.dialect"] == b"openpi"
    out = ma.write_msgpack(table, None, layout="auto")
    assert out == data
    # and openpi's own decoder loads what was written
    for got, want in zip(openpi_decode(out), openpi_decode(data)):
        assert_same_objects(got, want)


def test_golden_rec_openpi_is_byte_exact(golden):
    src = golden / "good" / "rec_openpi.msgpack"
    assert ma.write_msgpack(ma.read_arrow(src), None, layout="auto") == src.read_bytes()


def test_polars_with_dialect_openpi_loads_in_openpi(tmp_path):
    """A DataFrame carries no schema metadata: dialect="openpi" is named. openpi's unpackb loads
    the result with the values of the file read (numbers in native byte order: Polars has no
    other)."""
    data = openpi_file(np.random.default_rng(7), 4)
    p = tmp_path / "openpi.msgpack"
    p.write_bytes(data)
    out = ma.write_msgpack(ma.read_msgpack(p), None, dialect="openpi")
    for got, want in zip(openpi_decode(out), openpi_decode(data)):
        assert list(got) == list(want)
        for k, w in want.items():
            g = got[k]
            if isinstance(w, np.ndarray):
                if w.ndim == 0:
                    # 0-d ndarray vs numpy scalar is Arrow metadata too: the value comes back
                    assert g == w
                    continue
                if w.size == 0:
                    # an empty ragged row's shape (0, 2) lives in Arrow field metadata, which a
                    # DataFrame does not carry (as for msgpack-numpy's form)
                    assert isinstance(g, np.ndarray) and g.size == 0
                    continue
                assert isinstance(g, np.ndarray) and g.shape == w.shape
                assert g.dtype == w.dtype.newbyteorder("=")
                assert np.array_equal(g, w)
            else:
                assert g == w
    # msgpack_numpy's own form stays the default for a DataFrame
    assert b"__ndarray__" not in ma.write_msgpack(ma.read_msgpack(p), None)


def test_explicit_msgpack_numpy_rewrites_an_openpi_file(tmp_path):
    import msgpack_numpy

    data = openpi_file(np.random.default_rng(3), 3)
    p = tmp_path / "openpi.msgpack"
    p.write_bytes(data)
    out = ma.write_msgpack(ma.read_arrow(p), None, layout="auto", dialect="msgpack-numpy")
    assert b"__ndarray__" not in out and b"__npgeneric__" not in out
    unpacker = msgpack_numpy.Unpacker()
    unpacker.feed(out)
    for got, want in zip(unpacker, openpi_decode(data)):
        assert np.array_equal(got["obs"], want[b"obs"] if b"obs" in want else want["obs"])


def test_openpi_refuses_what_openpi_refuses():
    """complex ndarrays: openpi's pack_array raises ValueError, and so does the writer; aligned
    output is msgpack-numpy's only."""
    import msgpack_numpy

    complex_file = msgpack.packb({"c": np.array([1 + 2j], dtype="<c8")}, default=msgpack_numpy.encode)
    with pytest.raises(ma.EncodeError, match="openpi.*complex"):
        ma.write_msgpack(ma.read_arrow(complex_file), None, dialect="openpi")
    t = pa.table({"c": pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2))})
    with pytest.raises(ma.EncodeError, match="aligned"):
        ma.write_msgpack(t, None, dialect="openpi", aligned=True)


def test_cli_convert_keeps_or_changes_the_dialect(tmp_path):
    data = openpi_file(np.random.default_rng(11), 4)
    src = tmp_path / "in.msgpack"
    src.write_bytes(data)
    same, mn = tmp_path / "same.msgpack", tmp_path / "mn.msgpack"
    run = lambda *a: subprocess.run([*_command(), *a], capture_output=True, text=True, timeout=120)  # noqa: E731
    r = run("convert", str(src), "-o", str(same), "-q")
    assert r.returncode == 0, r.stderr
    assert same.read_bytes() == data
    r = run("convert", str(src), "-o", str(mn), "-q", "--output-dialect", "msgpack-numpy")
    assert r.returncode == 0, r.stderr
    assert b"__ndarray__" not in mn.read_bytes()
    assert ma.read_msgpack(mn).equals(ma.read_msgpack(src))
    r = run("convert", str(src), "-o", str(tmp_path / "x.parquet"), "--output-dialect", "openpi")
    assert r.returncode != 0 and "msgpack outputs only" in r.stderr


@pytest.mark.parametrize("seed", range(3))
def test_a_bare_ndarray_or_one_columns_map_is_written_back_in_openpi_too(seed):
    # auto notes the dialect in every container, not only in record streams
    rng = np.random.default_rng(seed)
    dt = rng.choice(DTYPES)
    for obj in (sample(rng, dt, (4, 3)), {"obs": sample(rng, dt, (5, 2)), "act": sample(rng, "<f4", (5,))}):
        data = msgpack.packb(obj, default=openpi_encode, use_bin_type=True)
        assert ma.write_msgpack(ma.read_arrow(data), None, layout="auto") == data


def test_str_and_bytes_scalars_and_a_width_no_numpy_scalar_has():
    # numpy's str_/bytes_ scalars are as wide as their values; a dtype declaring a width far past
    # its value (a 46-byte file asking for 400 GB of padding) is an error, not an allocation
    recs = [{"s": np.str_("héllo"), "b": np.bytes_(b"ab")}, {"s": np.str_(""), "b": np.bytes_(b"")}]
    data = b"".join(msgpack.packb(r, default=openpi_encode, use_bin_type=True) for r in recs)
    want = openpi_decode(data)
    got = ma.read_msgpack(data)
    assert got["s"].to_list() == [str(w["s"]) for w in want]
    assert got["b"].to_list() == [bytes(w["b"]) for w in want]
    for dtype in ("<U99999999999", "|S99999999999", "<U200000000"):
        bad = msgpack.packb({"v": {"__npgeneric__": True, "dtype": dtype, "data": "x"}}, use_bin_type=True)
        with pytest.raises(ma.DecodeError, match="wider than its value") as e:
            ma.read_msgpack(bad)
        assert e.value.column == "v" and e.value.offset is not None
