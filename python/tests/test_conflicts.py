"""conflicts="binary": a column whose values do not unify (a model's weights of different ndim,
ints and strings) is kept as raw msgpack bytes per row instead of failing the whole file."""

from __future__ import annotations

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import msgpack_arrow as ma


def _layers() -> tuple[bytes, list[dict]]:
    rng = np.random.default_rng(0)
    recs = [
        {"name": "conv", "W": rng.random((4, 3, 3), dtype=np.float32), "tag": 1},
        {"name": "dense", "W": rng.random((8, 4), dtype=np.float32), "tag": "x"},
        {"name": "bias", "W": rng.random(8).astype("<f8"), "tag": None},
    ]
    return b"".join(mn.packb(r) for r in recs), recs


def test_the_default_error_names_column_types_record_and_the_option():
    data, _ = _layers()
    with pytest.raises(ma.DecodeError) as e:
        ma.read_msgpack(data)
    msg = str(e.value)
    assert "type conflict" in msg and 'conflicts="binary"' in msg
    assert e.value.record == 1 and e.value.column == "W"


def test_conflicting_columns_keep_each_value_s_bytes():
    data, recs = _layers()
    df = ma.read_msgpack(data, conflicts="binary")
    assert df.schema["W"] == pl.Binary and df.schema["tag"] == pl.Binary
    assert df["name"].to_list() == [r["name"] for r in recs]
    for raw, r in zip(df["W"].to_list(), recs):
        back = mn.unpackb(raw)
        assert back.dtype == r["W"].dtype and back.shape == r["W"].shape
        np.testing.assert_array_equal(back, r["W"])
    assert [None if t is None else mn.unpackb(t) for t in df["tag"].to_list()] == [1, "x", None]


def test_written_back_through_arrow_byte_for_byte():
    data, _ = _layers()
    t = pa.table(ma.read_arrow(data, conflicts="binary"))
    assert t.schema.field("W").metadata[b"msgpack_numpy.kind"] == b"msgpack"
    assert ma.write_msgpack(ma.read_arrow(data, conflicts="binary"), None, layout="auto") == data


def test_a_conflict_in_a_column_left_out_is_no_error():
    # columns= reads only those: the others are skipped undecoded, so their types are not checked
    data, recs = _layers()
    df = ma.read_msgpack(data, columns=["name"])
    assert df.columns == ["name"] and df["name"].to_list() == [r["name"] for r in recs]
    with pytest.raises(ma.DecodeError, match='column "W"'):
        ma.read_msgpack(data, columns=["name", "W"])
    with pytest.raises(pl.exceptions.ColumnNotFoundError, match="not found"):
        ma.read_msgpack(data, columns=["nope"])


@pytest.mark.parametrize("numpy_value", [np.complex128(3 + 4j), np.array(3 + 4j, "<c16")])
@pytest.mark.parametrize("python_first", [True, False])
def test_python_and_numpy_complex_conflict_however_many_rows_are_typed(numpy_value, python_first):
    # msgpack_numpy gives a complex and a numpy complex back: one column cannot say both, whether
    # the second row was typed (every row) or decoded into the first row's type (infer_rows=1)
    rows = [{"x": 1 + 2j}, {"x": numpy_value}]
    data = b"".join(mn.packb(r) for r in (rows if python_first else rows[::-1]))
    for infer_rows in (None, 1):
        with pytest.raises(ma.DecodeError) as e:
            ma.read_msgpack(data, infer_rows=infer_rows)
        assert e.value.record == 1 and e.value.column == "x"


@pytest.mark.parametrize("rows, switch", [(100, 50), (80_000, 70_000)])
def test_a_structured_dtype_that_changes_is_a_conflict_however_far_in(rows, switch):
    # the fast walk remembers which column dtype a structured header matched: a later header of
    # other field names (same item size) is still told apart, in one walk or in pieces
    a = np.dtype([("x", "<f4"), ("y", "<i4")])
    b = np.dtype([("x", "<f4"), ("z", "<i4")])
    data = b"".join(mn.packb({"id": i, "s": np.full(8, i, a if i < switch else b)}) for i in range(rows))
    with pytest.raises(ma.DecodeError, match="type conflict") as e:
        ma.read_msgpack(data)
    assert e.value.column == "s" and e.value.record == switch
    same = b"".join(mn.packb({"id": i, "s": np.full(8, i, a)}) for i in range(rows))
    got = ma.read_msgpack(same)["s"].to_list()
    want = np.stack([np.full(8, i, a) for i in range(rows)]).tolist()
    assert [[(d["x"], d["y"]) for d in row] for row in got] == want
