"""``lists="array"``: nested msgpack lists of numbers with one length at each level, as
ormsgpack's ``OPT_SERIALIZE_NUMPY`` (and ``.tolist()`` producers) write ndarrays, read as
``pl.Array`` tensors and written back as the same lists. Files are made by ormsgpack from PyPI;
the reference values are the numpy arrays given to it."""

from __future__ import annotations

import subprocess

import msgpack
import numpy as np
import ormsgpack
import polars as pl
import pyarrow as pa
import pytest
from test_cli_command import _command

import msgpack_arrow as ma

OPT = ormsgpack.OPT_SERIALIZE_NUMPY


def ormsgpack_records(rng, n: int, shape=(2, 3), dtype=np.float32) -> tuple[bytes, list[dict]]:
    rows = [
        {
            "id": i,
            "emb": rng.random(shape).astype(dtype),
            "ids": rng.integers(-1000, 1000, 4).astype(np.int16),
            "ragged": rng.random(i % 3).astype(np.float64),
        }
        for i in range(n)
    ]
    return b"".join(ormsgpack.packb(r, option=OPT) for r in rows), rows


@pytest.mark.parametrize(("shape", "dtype"), [((2, 3), np.float32), ((4,), np.float64), ((2, 2, 2), np.float32)])
def test_ormsgpack_tensors_read_as_arrays(shape, dtype):
    data, rows = ormsgpack_records(np.random.default_rng(0), 50, shape, dtype)
    df = ma.read_msgpack(data, lists="array")
    # ormsgpack writes float32 elements as msgpack float32, float64 as float64
    elem = pl.Float32 if dtype == np.float32 else pl.Float64
    assert df.schema["emb"] == pl.Array(elem, shape)
    assert df.schema["ids"] == pl.Array(pl.Int64, 4)
    # lengths differ between rows: a List, as without the option
    assert df.schema["ragged"] == pl.List(pl.Float64)
    np.testing.assert_array_equal(df["emb"].to_numpy(), np.stack([r["emb"] for r in rows]))
    np.testing.assert_array_equal(df["ids"].to_numpy(), np.stack([r["ids"] for r in rows]).astype(np.int64))
    # the default keeps them lists
    want = elem
    for _ in shape:
        want = pl.List(want)
    assert ma.read_msgpack(data).schema["emb"] == want


def test_written_back_byte_for_byte():
    data, _ = ormsgpack_records(np.random.default_rng(1), 20)
    table = ma.read_arrow(data, lists="array")
    assert pa.schema(table).field("emb").metadata[b"msgpack_numpy.kind"] == b"list"
    assert ma.write_msgpack(table, None, layout="auto") == data


def test_nulls_and_a_length_change_after_inference():
    a = [1.0, 2.0]
    data = b"".join(msgpack.packb({"v": v}) for v in (a, None, a))
    df = ma.read_msgpack(data, lists="array")
    assert df.schema["v"] == pl.Array(pl.Float64, 2)
    assert df["v"].to_list() == [a, None, a]
    # a later row of another length, past the rows the schema was inferred from: a positioned error
    bad = data + msgpack.packb({"v": [1.0, 2.0, 3.0]})
    with pytest.raises(ma.DecodeError, match=r'list of 2 items.*found 3.*record 3'):
        ma.read_msgpack(bad, lists="array", infer_rows=2)
    # inferred from every row: the column is a List
    assert ma.read_msgpack(bad, lists="array").schema["v"] == pl.List(pl.Float64)


def test_mixed_ints_and_floats_unify_to_float64():
    data = b"".join(msgpack.packb({"v": v}) for v in ([1, 2], [1.5, 3]))
    df = ma.read_msgpack(data, lists="array")
    assert df.schema["v"] == pl.Array(pl.Float64, 2)
    assert df["v"].to_list() == [[1.0, 2.0], [1.5, 3.0]]


def test_schema_override_to_array_reads_lists():
    data, rows = ormsgpack_records(np.random.default_rng(2), 10)
    df = ma.read_msgpack(data, schema_overrides={"emb": pl.Array(pl.Float64, (2, 3))})
    assert df.schema["emb"] == pl.Array(pl.Float64, (2, 3))
    np.testing.assert_array_equal(df["emb"].to_numpy(), np.stack([r["emb"] for r in rows]).astype(np.float64))


def test_cli_lists_array(tmp_path):
    data, _ = ormsgpack_records(np.random.default_rng(3), 5)
    p = tmp_path / "o.msgpack"
    p.write_bytes(data)
    r = subprocess.run([*_command(), "schema", str(p), "--lists", "array"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "emb: f32[2, 3]" in r.stdout or "emb: f32[2,3]" in r.stdout, r.stdout
