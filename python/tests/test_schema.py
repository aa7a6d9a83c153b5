"""``schema=``: the caller's whole schema instead of an inferred one, as Polars' ``read_ndjson``
and ``scan_ndjson`` take it. Polars' own NDJSON reader, given the same rows and schema, is the
reference for plain values; numpy (a cast of what msgpack_numpy decodes) for ndarrays."""

from __future__ import annotations

import json

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma

ROWS = [
    {"id": 1, "name": "a", "x": 0.5, "extra": [1, 2]},
    {"id": 2, "x": 3, "name": "b"},
    {"name": "c", "id": 3, "x": None, "other": {"k": 1}},
]
SCHEMAS = [
    {"id": pl.Int64, "name": pl.String, "x": pl.Float64},
    {"x": pl.Float64, "id": pl.Float64},  # its order, not the file's; other keys skipped
    {"id": pl.Int32, "missing": pl.String, "name": pl.String},  # a column no record has
    {"id": pl.UInt32, "x": pl.Float32},
]


def ndjson(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_plain_values_read_as_polars_read_ndjson_reads_them(schema, tmp_path):
    data = b"".join(mn.packb(r) for r in ROWS)
    want = pl.read_ndjson(ndjson(ROWS), schema=schema)
    assert_frame_equal(ma.read_msgpack(data, schema=schema), want)
    assert_frame_equal(ma.scan_msgpack(data, schema=schema).collect(), want)
    # several files: each read with the schema (a later file's other keys skipped too)
    (tmp_path / "a.msgpack").write_bytes(data)
    (tmp_path / "b.msgpack").write_bytes(b"".join(mn.packb({**r, "late": 1}) for r in ROWS))
    both = pl.concat([want, want])
    assert_frame_equal(ma.scan_msgpack(tmp_path / "*.msgpack", schema=schema).collect(), both)
    assert_frame_equal(ma.read_msgpack([tmp_path / "a.msgpack", tmp_path / "b.msgpack"], schema=schema), both)


def test_a_value_that_does_not_fit_is_an_error_naming_it():
    data = b"".join(mn.packb(r) for r in ROWS)
    with pytest.raises(Exception) as ref:
        pl.read_ndjson(ndjson(ROWS), schema={"x": pl.Int64})
    assert "0.5" in str(ref.value)  # Polars refuses it too
    with pytest.raises(ma.DecodeError) as e:
        ma.read_msgpack(data, schema={"x": pl.Int64})
    assert e.value.record == 0 and e.value.column == "x"


def test_ndarrays_are_converted_as_numpy_casts_them():
    rows = [{"v": np.arange(6, dtype="<i2").reshape(2, 3) * (i + 1), "t": np.float32(i)} for i in range(4)]
    data = b"".join(mn.packb(r) for r in rows)
    ref = [mn.unpackb(mn.packb(r), raw=False) for r in rows]
    got = ma.read_msgpack(data, schema={"v": pl.Array(pl.Float64, (2, 3)), "t": pl.Float64})
    assert got.schema == pl.Schema({"v": pl.Array(pl.Float64, (2, 3)), "t": pl.Float64})
    np.testing.assert_array_equal(got["v"].to_numpy(), np.stack([r["v"].astype("f8") for r in ref]))
    assert got["t"].to_list() == [float(r["t"]) for r in ref]


def test_a_scan_with_a_schema_reads_no_row_before_its_query():
    # a late row that inference (a walk of every row) calls a conflict: with a schema given and
    # the first rows asked for, it is never reached
    rows = [{"id": i, "v": np.full(4, i, dtype="<f4")} for i in range(100)] + [{"id": "late", "v": None}]
    data = b"".join(mn.packb(r) for r in rows)
    with pytest.raises(ma.DecodeError, match="record 100"):
        ma.scan_msgpack(data).head(3).collect()
    got = ma.scan_msgpack(data, schema={"id": pl.Int64, "v": pl.Array(pl.Float32, 4)}).head(3).collect()
    assert got["id"].to_list() == [0, 1, 2]
    np.testing.assert_array_equal(got["v"].to_numpy(), np.stack([r["v"] for r in rows[:3]]))


def test_read_arrow_takes_a_pyarrow_schema():
    pa = pytest.importorskip("pyarrow")
    data = b"".join(mn.packb(r) for r in ROWS)
    t = pa.table(ma.read_arrow(data, schema=pa.schema([("x", pa.float32()), ("id", pa.int16())])))
    assert t.schema.names == ["x", "id"]
    assert t.column("x").to_pylist() == [0.5, 3.0, None] and t.column("id").type == pa.int16()


def test_a_columns_map_is_converted_into_the_schema_as_numpy_casts_it():
    cols = {"a": np.arange(4, dtype=">i4"), "b": np.arange(8, dtype="<f4").reshape(4, 2), "l": [1, 2, None, 4]}
    ref = mn.unpackb(mn.packb(cols), raw=False)
    schema = {"b": pl.Array(pl.Float64, 2), "a": pl.Int64, "l": pl.Float32, "none": pl.String}
    got = ma.read_msgpack(mn.packb(cols), schema=schema)
    assert got.schema == pl.Schema(schema)
    np.testing.assert_array_equal(got["b"].to_numpy(), ref["b"].astype("f8"))
    np.testing.assert_array_equal(got["a"].to_numpy(), ref["a"].astype("i8"))
    assert got["l"].to_list() == ref["l"] and got["none"].null_count() == 4
    # a value that does not fit: an error naming the element, never a truncated number
    with pytest.raises(ma.DecodeError, match="element 1 of this <f8 ndarray does not fit") as e:
        ma.read_msgpack(mn.packb({"a": np.array([1.0, 1.5])}), schema={"a": pl.Int64})
    assert e.value.column == "a"


def test_overrides_on_a_schema_or_a_columns_map_convert_exactly_too():
    # a value the type cannot hold is an error whichever way the type was given, never 2.5 -> 2
    data = b"".join(mn.packb({"i": 3, "f": 2.5}) for _ in range(2))
    with pytest.raises(ma.DecodeError, match="exactly"):
        ma.read_msgpack(data, schema={"i": pl.Int64, "f": pl.Float64}, schema_overrides={"f": pl.Int64})
    with pytest.raises(ma.DecodeError, match="exactly"):
        ma.read_msgpack(data, schema={"i": pl.Int64, "f": pl.Float64}, schema_overrides={"i": pl.Boolean})
    with pytest.raises(ma.DecodeError, match="exactly"):
        ma.read_msgpack(mn.packb({"y": np.array([1.5, 2.0])}), schema_overrides={"y": pl.Int64})
    fits = np.array([1.0, 2.0])
    assert ma.read_msgpack(mn.packb({"y": fits}), schema_overrides={"y": pl.Int64})["y"].to_list() == fits.astype("i8").tolist()


def test_read_arrow_s_own_schema_given_back_reads_the_file_again():
    pa = pytest.importorskip("pyarrow")
    data = b"".join(mn.packb({"id": i, "c": np.complex64(1 + 2j), "p": 1 + 2j}) for i in range(3))
    t = pa.table(ma.read_arrow(data))
    assert pa.table(ma.read_arrow(data, schema=t.schema)).equals(t)


def test_a_schema_of_another_kind_is_a_type_error_naming_the_argument():
    for call in (ma.read_msgpack, ma.scan_msgpack, ma.read_arrow):
        with pytest.raises(TypeError, match="^schema must be a dict"):
            call(b"\x80", schema=[("a", pl.Int64)])
