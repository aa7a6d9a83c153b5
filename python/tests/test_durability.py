"""Writes: fsync as a choice (same bytes either way, the previous file kept on failure), and file
objects written in chunks as the output is encoded, never handed the whole output at once."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma


@pytest.fixture()
def table() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    return pl.DataFrame(
        {
            "id": np.arange(3000, dtype=np.int64),
            "emb": rng.random((3000, 256), dtype=np.float32),
        }
    )


def _reference(df: pl.DataFrame) -> bytes:
    # what Python msgpack_numpy writes for the same rows
    ids, embs = df["id"].to_numpy(), df["emb"].to_numpy()
    return b"".join(mn.packb({"id": int(i), "emb": e}) for i, e in zip(ids, embs))


@pytest.mark.parametrize("fsync", [True, False])
def test_write_with_and_without_fsync_gives_msgpack_numpys_bytes(table, tmp_path, fsync):
    p = tmp_path / "t.msgpack"
    ma.write_msgpack(table, p, fsync=fsync)
    assert p.read_bytes() == _reference(table)
    q = tmp_path / "s.msgpack"
    ma.sink_msgpack(table.lazy(), q, fsync=fsync)
    assert q.read_bytes() == _reference(table)


def test_a_failed_write_without_fsync_keeps_the_previous_file(tmp_path):
    p = tmp_path / "t.msgpack"
    p.write_bytes(b"previous")
    # a query that fails mid-stream, after the first batch was written
    lf = pl.LazyFrame({"x": ["1", "2", "x"]}).select(pl.col("x").cast(pl.Int64, strict=True))
    with pytest.raises(Exception):
        ma.sink_msgpack(lf, p, fsync=False)
    assert p.read_bytes() == b"previous"
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


class Recording(io.BytesIO):
    def __init__(self):
        super().__init__()
        self.sizes: list[int] = []

    def write(self, b):
        self.sizes.append(len(b))
        return super().write(b)


def test_a_file_object_is_written_in_chunks(table):
    out = Recording()
    assert ma.write_msgpack(table, out) is None
    assert out.getvalue() == _reference(table)
    # 3 MB of output: several writes of at most a few MiB, not one of the whole output
    assert len(out.sizes) > 1
    assert max(out.sizes) < len(out.getvalue())


def test_cli_convert_no_fsync(table, tmp_path):
    src = tmp_path / "t.msgpack"
    src.write_bytes(_reference(table))
    out = tmp_path / "t.feather"
    r = subprocess.run(
        [sys.executable, "-m", "msgpack_arrow._cli", "convert", str(src), "-o", str(out), "--no-fsync", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    import pyarrow.feather as feather

    t = feather.read_table(out)
    assert t.column("id").to_pylist() == list(range(3000))
    np.testing.assert_array_equal(
        np.stack(t.column("emb").to_numpy(zero_copy_only=False)), table["emb"].to_numpy()
    )


def test_batches_are_bounded_in_bytes(tmp_path):
    rng = np.random.default_rng(3)
    embs = rng.random((500, 1024), dtype=np.float32)
    packed = [mn.packb({"id": i, "emb": e}) for i, e in enumerate(embs)]
    p = tmp_path / "wide.msgpack"
    p.write_bytes(b"".join(packed))
    bound = 64 << 10
    # the batch lengths msgpack_numpy's record sizes give: a batch ends at the row reaching the bound
    want, n, size = [], 0, 0
    for b in packed:
        n, size = n + 1, size + len(b)
        if size >= bound:
            want.append(n)
            n, size = 0, 0
    want += [n] if n else []
    import pyarrow as pa

    t = pa.table(ma.read_arrow(p, batch_bytes=bound))
    assert [b.num_rows for b in t.to_batches()] == want
    np.testing.assert_array_equal(np.stack(t.column("emb").to_numpy(zero_copy_only=False)), embs)
    df = ma.scan_msgpack(p, batch_bytes=bound).collect()
    np.testing.assert_array_equal(df["emb"].to_numpy(), embs)
    assert df["id"].to_list() == list(range(500))
    # the default (16 MiB) puts this 2 MB file in one batch
    assert [b.num_rows for b in pa.table(ma.read_arrow(p)).to_batches()] == [500]
    with pytest.raises(ValueError, match="batch_bytes"):
        ma.read_msgpack(p, batch_bytes=0)
