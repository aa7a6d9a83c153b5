"""schema_overrides (SPEC 3: type conflicts are errors "unless a schema override resolves them"):
the overridden column is decoded straight into the given type, each value converted exactly,
on files written by the real msgpack_numpy."""

from __future__ import annotations

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma


def dump(rows) -> bytes:
    return b"".join(mn.packb(r) for r in rows)


def test_a_conflict_is_an_error_naming_column_types_and_record():
    data = dump([{"x": 1, "y": 0}, {"x": "a", "y": 1}])
    with pytest.raises(ma.DecodeError, match=r"int and str.*record 1.*column \"x\"") as e:
        ma.read_msgpack(data)
    assert e.value.record == 1 and e.value.column == "x"


def test_string_override_takes_any_scalar_as_python_str_writes_it():
    values = [1, "a", 2.5, True, 1e20, None, -0.0, 2**64 - 1, np.float32(0.1).item()]
    got = ma.read_msgpack(dump([{"x": v} for v in values]), schema_overrides={"x": pl.String})
    assert got["x"].to_list() == [None if v is None else str(v) for v in values]


def test_numeric_override_takes_ints_floats_and_bools():
    got = ma.read_msgpack(dump([{"x": 1}, {"x": 2.5}, {"x": True}]), schema_overrides={"x": pl.Float32})
    assert got.schema["x"] == pl.Float32 and got["x"].to_list() == [1.0, 2.5, 1.0]
    with pytest.raises(ma.DecodeError, match="does not fit"):
        ma.read_msgpack(dump([{"x": 1}, {"x": 2.5}]), schema_overrides={"x": pl.Int64})


def test_ndarrays_of_other_dtypes_are_converted_element_by_element():
    rows = [
        {"x": np.arange(4, dtype="<i4").reshape(2, 2), "k": 0},
        {"x": np.arange(4, dtype=">i8").reshape(2, 2) * 7, "k": 1},
        {"x": None, "k": 2},
        {"x": np.array([[True, False], [False, True]]), "k": 3},
    ]
    want = [None if r["x"] is None else r["x"].astype(np.int64).tolist() for r in rows]
    got = ma.read_msgpack(dump(rows), schema_overrides={"x": pl.Array(pl.Int64, (2, 2))})
    assert got.schema["x"] == pl.Array(pl.Int64, (2, 2)) and got["x"].to_list() == want
    # ragged, float widths mixed, into a List
    ragged = [{"x": np.linspace(0, 1, n).astype(dt)} for n, dt in [(3, "<f4"), (1, ">f8"), (0, "<f2")]]
    got = ma.read_msgpack(dump(ragged), schema_overrides={"x": pl.List(pl.Float64)})
    assert got["x"].to_list() == [r["x"].astype(np.float64).tolist() for r in ragged]
    # a value that does not fit: an error naming the element and the record
    bad = [{"x": np.array([1, 2], "<i8")}, {"x": np.array([1, 300], "<i8")}]
    with pytest.raises(ma.DecodeError, match=r"element 1 .* does not fit") as e:
        ma.read_msgpack(dump(bad), schema_overrides={"x": pl.Array(pl.Int8, 2)})
    assert e.value.record == 1


def test_other_columns_are_still_inferred_and_checked():
    rows = [{"x": 1, "y": np.zeros(3, "<f4")}, {"x": "a", "y": np.ones(3, "<f4")}]
    got = ma.read_msgpack(dump(rows), schema_overrides={"x": pl.String})
    assert got.schema == pl.Schema({"x": pl.String, "y": pl.Array(pl.Float32, 3)})
    with pytest.raises(ma.DecodeError, match='column "y"'):
        ma.read_msgpack(dump([{"x": 1, "y": 1}, {"x": "a", "y": "b"}]), schema_overrides={"x": pl.String})


def test_scan_and_eager_agree_with_overrides(tmp_path):
    path = tmp_path / "c.msgpack"
    path.write_bytes(dump([{"x": i if i % 2 else str(i), "v": np.full(2, i, "<i2")} for i in range(10)]))
    over = {"x": pl.String, "v": pl.Array(pl.Int32, 2)}
    eager = ma.read_msgpack(path, schema_overrides=over)
    lazy = ma.scan_msgpack(path, schema_overrides=over).filter(pl.col("v").arr.first() > 3).collect()
    assert_frame_equal(lazy, eager.filter(pl.col("v").arr.first() > 3))
    assert eager["x"].to_list() == [str(i) for i in range(10)]
