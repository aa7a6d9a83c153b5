"""Maps keyed by integers (msgpack allows any key; datadings and model files use int keys) are
Arrow Map columns (Polars: a list of {key, value} structs), written back byte for byte."""

from __future__ import annotations

import io

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma


def _data() -> tuple[bytes, list[dict]]:
    recs = [
        {"id": 0, "counts": {1: 0.5, -3: 1.5}},
        {"id": 1, "counts": {7: 2.0}},
        {"id": 2, "counts": {}},
        {"id": 3, "counts": None},
    ]
    return b"".join(mn.packb(r) for r in recs), recs


def test_int_keyed_maps_read_as_python_decodes_them():
    data, recs = _data()
    df = ma.read_msgpack(data)
    # Polars with a Map dtype shows it as one; older ones as a list of {key, value} structs
    kv = pl.List(pl.Struct({"key": pl.Int64, "value": pl.Float64}))
    want_dtype = pl.Map(pl.Int64, pl.Float64) if hasattr(pl, "Map") else kv
    assert df.schema["counts"] == want_dtype
    py = list(msgpack.Unpacker(io.BytesIO(data), object_hook=mn.decode, raw=False, strict_map_key=False))
    for row, want in zip(df["counts"].to_list(), py):
        got = row if row is None or isinstance(row, dict) else {e["key"]: e["value"] for e in row}
        assert got == want["counts"]


def test_written_back_byte_for_byte_and_mixed_keys_refused():
    data, _ = _data()
    assert ma.write_msgpack(ma.read_arrow(data), None, layout="auto") == data
    bad = mn.packb({"m": {1: 1, "k": 2}})
    with pytest.raises(ma.DecodeError, match="mixes integer keys") as e:
        ma.read_msgpack(bad)
    assert e.value.offset is not None
