"""write_msgpack and sink_msgpack compress by the target's extension, as the CLI does, and
read_msgpack reads the result back (the codec is recognised by its magic bytes, whatever the name)."""

from __future__ import annotations

import gzip
import io

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma


@pytest.mark.parametrize("ext", [".gz", ".zst", ".lz4"])
def test_write_compresses_by_extension(tmp_path, ext):
    df = pl.DataFrame({"id": [1, 2, 3], "emb": np.arange(9, dtype="<f4").reshape(3, 3)})
    p = tmp_path / f"w.msgpack{ext}"
    ma.write_msgpack(df, p)
    raw = p.read_bytes()
    assert raw[:4] != ma.write_msgpack(df, None)[:4], "compressed, not plain msgpack"
    assert ma.read_msgpack(p).equals(df)
    if ext == ".gz":
        rows = list(mn.Unpacker(io.BytesIO(gzip.decompress(raw)), raw=False))
        assert [r["id"] for r in rows] == [1, 2, 3]
    q = tmp_path / f"s.msgpack{ext}"
    ma.sink_msgpack(df.lazy(), q)
    assert ma.read_msgpack(q).equals(df)


def test_compressed_bytes_read_whatever_the_name(tmp_path):
    data = mn.packb({"id": 1}) + mn.packb({"id": 2})
    p = tmp_path / "looks-plain.msgpack"
    p.write_bytes(gzip.compress(data))
    assert ma.read_msgpack(p)["id"].to_list() == [1, 2]
    assert ma.read_msgpack(gzip.compress(data))["id"].to_list() == [1, 2]
