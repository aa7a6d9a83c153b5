"""sink_msgpack (streaming writes of a LazyFrame) and to_numpy/to_torch (tensor columns out)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma


def _unpack_all(b: bytes) -> list:
    return list(mn.Unpacker(io.BytesIO(b), raw=False))


def test_sink_matches_write_and_msgpack_numpy_reads_it(tmp_path):
    df = pl.DataFrame(
        {"id": range(1000), "emb": np.arange(3000, dtype="<f4").reshape(1000, 3), "s": [str(i) for i in range(1000)]}
    )
    p = tmp_path / "s.msgpack"
    ma.sink_msgpack(df.lazy().filter(pl.col("id") % 3 == 0), p, chunk_size=77)
    want = df.filter(pl.col("id") % 3 == 0)
    assert p.read_bytes() == ma.write_msgpack(want, None)
    rows = _unpack_all(p.read_bytes())
    assert len(rows) == want.height
    np.testing.assert_array_equal(np.stack([r["emb"] for r in rows]), want["emb"].to_numpy())
    assert rows[0]["emb"].dtype == np.dtype("<f4")


def test_sink_to_a_file_object_and_an_empty_query():
    buf = io.BytesIO()
    ma.sink_msgpack(pl.LazyFrame({"x": [1, 2, 3]}).filter(pl.col("x") > 1), buf)
    assert _unpack_all(buf.getvalue()) == [{"x": 2}, {"x": 3}]
    buf = io.BytesIO()
    ma.sink_msgpack(pl.LazyFrame({"x": [1, 2, 3]}).filter(pl.col("x") > 5), buf)
    assert buf.getvalue() == b""


def test_sink_failure_keeps_the_previous_file(tmp_path):
    p = tmp_path / "s.msgpack"
    p.write_bytes(b"previous")
    bad = pl.LazyFrame({"x": ["1", "2", "x"]}).select(pl.col("x").cast(pl.Int64, strict=True))
    with pytest.raises(pl.exceptions.PolarsError):
        ma.sink_msgpack(bad, p)
    assert p.read_bytes() == b"previous"
    assert [f.name for f in tmp_path.iterdir()] == ["s.msgpack"]
    with pytest.raises(ma.EncodeError, match="Object"):
        ma.sink_msgpack(pl.LazyFrame({"o": pl.Series([object()], dtype=pl.Object)}), p)
    assert p.read_bytes() == b"previous"


MEASURE = r"""
import json, sys
import polars as pl, msgpack_arrow as ma
def kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
base = kib("VmRSS")
lf = pl.scan_parquet(sys.argv[1])
if sys.argv[3] == "ours":
    ma.sink_msgpack(lf, sys.argv[2], chunk_size=5000)
else:  # the floor: Polars producing the same batches, each dropped at once
    for b in lf.collect_batches(chunk_size=5000):
        del b
print(json.dumps({"peak": (kib("VmHWM") - base) * 1024}))
"""


def _peak(src, out, mode):
    r = subprocess.run([sys.executable, "-c", MEASURE, str(src), str(out), mode], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["peak"]


def test_sink_memory_is_bounded_by_batches_not_the_table(tmp_path):
    """A 400 MB query streams through: peak RSS (fresh interpreters) is what Polars itself needs to
    produce the batches, plus a constant, never a share of the table."""
    src, out = tmp_path / "big.parquet", tmp_path / "big.msgpack"
    n = 400_000
    pl.LazyFrame().select(pl.int_range(0, n, dtype=pl.Int64).alias("id")).with_columns(
        pl.col("id").cast(pl.String).str.pad_start(1000, "x").alias("s")
    ).sink_parquet(src, row_group_size=10_000, compression="uncompressed")
    floor = _peak(src, out, "polars")
    peak = _peak(src, out, "ours")
    size = out.stat().st_size
    assert size > 390e6
    # Polars' streaming engine buffers more morsels for a slower consumer than for `del b`:
    # the margin allows for that; holding the table (~390 MiB) would exceed both bounds
    assert peak < floor + 128 * 2**20, f"peak {peak / 2**20:.0f} MiB; Polars alone {floor / 2**20:.0f} MiB"
    assert peak < 0.75 * size, f"peak {peak / 2**20:.0f} MiB for a {size / 2**20:.0f} MiB output"
    rows = mn.Unpacker(open(out, "rb"), raw=False)
    first = next(rows)
    assert first == {"id": 0, "s": "0".rjust(1000, "x")}


def test_to_numpy_is_a_zero_copy_view():
    a = np.arange(24, dtype="<f4").reshape(2, 3, 4)
    df = ma.read_msgpack(mn.packb({"t": a}))  # a columns map: axis 0 is rows
    s = df["t"]
    out = ma.to_numpy(s)
    np.testing.assert_array_equal(out, a)
    assert out.dtype == a.dtype and not out.flags.writeable
    assert np.shares_memory(out, ma.to_numpy(s))  # both views of the Series' one buffer
    w = ma.to_numpy(s, writable=True)
    w[0, 0, 0] = 99
    assert ma.to_numpy(s)[0, 0, 0] == 0


def test_to_numpy_from_records_and_chunks():
    recs = b"".join(mn.packb({"e": np.full((2, 2), i, dtype="<i2")}) for i in range(10))
    df = ma.read_msgpack(recs, batch_size=3)
    assert df["e"].n_chunks() > 1
    out = ma.to_numpy(df["e"])
    np.testing.assert_array_equal(out, np.stack([np.full((2, 2), i, dtype="<i2") for i in range(10)]))


def test_to_numpy_nulls_error_or_fill():
    s = pl.Series("e", [[1.0, None], None, [3.0, 4.0]], dtype=pl.Array(pl.Float64, 2))
    with pytest.raises(ValueError, match="nulls"):
        ma.to_numpy(s)
    np.testing.assert_array_equal(ma.to_numpy(s, fill_value=-1.0), [[1.0, -1.0], [-1.0, -1.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="not an Array"):
        ma.to_numpy(pl.Series("l", [[1], [2, 3]]))


def test_to_torch():
    torch = pytest.importorskip("torch", reason="torch is an optional dependency, not installed")
    a = np.arange(6, dtype="<f4").reshape(3, 2)
    s = pl.Series("e", a)
    t = ma.to_torch(s)
    assert t.shape == (3, 2) and t.dtype == torch.float32
    np.testing.assert_array_equal(t.numpy(), a)
    # a view of the column's memory (the zero-copy numpy view's), unless a copy is asked for
    assert t.data_ptr() == ma.to_numpy(s).ctypes.data
    c = ma.to_torch(s, writable=True)
    assert c.data_ptr() != t.data_ptr()
    c[0, 0] = 9.0
    assert s[0].to_list() == [0.0, 1.0]
    # nulls: an error, or the fill value
    n = pl.Series("n", [[1.0, 2.0], None], dtype=pl.Array(pl.Float64, 2))
    with pytest.raises(ValueError):
        ma.to_torch(n)
    assert ma.to_torch(n, fill_value=0.0).tolist() == [[1.0, 2.0], [0.0, 0.0]]
