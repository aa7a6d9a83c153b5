"""SPEC 4.3 (write then read gives the same DataFrame) and 4.4 (msgpack_numpy reads what we write)."""

from __future__ import annotations

import io
import math

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import msgpack_arrow as ma

# ---- SPEC 4.3: a property test over random DataFrames --------------------------------------------

INTS = {
    pl.Int8: (-(2**7), 2**7 - 1),
    pl.Int16: (-(2**15), 2**15 - 1),
    pl.Int32: (-(2**31), 2**31 - 1),
    pl.Int64: (-(2**63), 2**63 - 1),
    pl.UInt8: (0, 2**8 - 1),
    pl.UInt16: (0, 2**16 - 1),
    pl.UInt32: (0, 2**32 - 1),
    # UInt64 from a DataFrame is written as numpy uint64 scalars, so small values keep the dtype
    pl.UInt64: (0, 2**64 - 1),
}
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)


@st.composite
def column(draw, n: int, nested: bool = True):
    """(dtype, values) with at least one non-null value: msgpack nil carries no type, so an
    all-null column reads back as Null (a limit of the format, not of the reader)."""
    kinds = ["int", "float", "bool", "str", "bin"] + (["array", "list"] if nested else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        dt = draw(st.sampled_from(list(INTS)))
        lo, hi = INTS[dt]
        item = st.integers(lo, hi)
    elif kind == "float":
        dt, width = draw(st.sampled_from([(pl.Float32, 32), (pl.Float64, 64), (pl.Float16, 16)]))
        item = st.floats(width=width)
    elif kind == "bool":
        dt, item = pl.Boolean, st.booleans()
    elif kind == "str":
        dt, item = pl.String, text
    elif kind == "bin":
        dt, item = pl.Binary, st.binary(max_size=8)
    elif kind == "array":
        k = draw(st.integers(1, 4))
        dt = pl.Array(pl.Float32, k)
        # no null *inside* an array: see test_null_inside_array_is_not_zero
        item = st.lists(st.floats(width=32), min_size=k, max_size=k)
    else:
        inner_dt, inner = draw(
            st.sampled_from([(pl.Int64, st.integers(-(2**63), 2**63 - 1)), (pl.Float64, st.floats()), (pl.String, text)])
        )
        dt = pl.List(inner_dt)
        # at least one non-null element somewhere, else the inner type is unknowable (List(Null))
        item = st.lists(st.one_of(st.none(), inner), max_size=3)
        values = draw(st.lists(st.one_of(st.none(), item), min_size=n, max_size=n))
        i = draw(st.integers(0, n - 1))
        values[i] = [draw(inner)]
        return dt, values
    values = draw(st.lists(st.one_of(st.none(), item), min_size=n, max_size=n))
    values[draw(st.integers(0, n - 1))] = draw(item)
    return dt, values


@st.composite
def frames(draw, max_cols: int = 4, nested: bool = True):
    n = draw(st.integers(1, 12))  # zero rows: a records file is then empty and has no columns
    ncols = draw(st.integers(1, max_cols))
    data = {}
    for i in range(ncols):
        dt, values = draw(column(n, nested))
        data[f"c{i}"] = pl.Series(values, dtype=dt)
    return pl.DataFrame(data)


def roundtrip(df: pl.DataFrame, layout: str) -> pl.DataFrame:
    return ma.read_msgpack(ma.write_msgpack(df, None, layout=layout), layout=layout)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=frames(), layout=st.sampled_from(["records", "columns"]))
@example(df=pl.DataFrame({"x": pl.Series([float("nan"), None, -0.0], dtype=pl.Float32)}), layout="records")
@example(df=pl.DataFrame({"x": pl.Series([2**64 - 1], dtype=pl.UInt64)}), layout="columns")
@example(df=pl.DataFrame({"e": pl.Series([[1.0, 2.0], None], dtype=pl.Array(pl.Float32, 2))}), layout="records")
def test_write_then_read_is_identity(df, layout):
    assert_frame_equal(roundtrip(df, layout), df, check_exact=True)


@settings(max_examples=60, deadline=None)
@given(df=frames(max_cols=1))
def test_values_layout_round_trip(df):
    back = roundtrip(df, "values")
    assert back.columns == ["value"]
    assert_frame_equal(back.rename({"value": df.columns[0]}), df, check_exact=True)


def test_uint64_round_trip():
    big = pl.DataFrame({"u": pl.Series([2**64 - 1, 0, None], dtype=pl.UInt64)})
    for layout in ["records", "columns"]:
        assert_frame_equal(roundtrip(big, layout), big, check_exact=True)
    small = pl.DataFrame({"u": pl.Series([1, 2], dtype=pl.UInt64)})
    # written as numpy uint64 scalars: the dtype survives even when the values would fit Int64
    for layout in ["records", "columns"]:
        assert_frame_equal(roundtrip(small, layout), small, check_exact=True)


def test_nested_and_temporal_round_trip():
    df = pl.DataFrame(
        {
            "mat": pl.Series([[[1, 2, 3], [4, 5, 6]]] * 3, dtype=pl.Array(pl.Int16, (2, 3))),
            "lol": pl.Series([[[1], [2, 3]], [], None], dtype=pl.List(pl.List(pl.Int64))),
            "st": pl.Series([{"a": 1, "b": "x"}, None, {"a": None, "b": "y"}]),
            "ts": pl.Series([1, 2, None], dtype=pl.Datetime("us")),
            "d": pl.Series([1, None, 3], dtype=pl.Date),
            "dur": pl.Series([1, 2, None], dtype=pl.Duration("ns")),
            "nul": pl.Series([None, None, None]),
        }
    )
    for layout in ["records", "columns"]:
        assert_frame_equal(roundtrip(df, layout), df, check_exact=True)


@pytest.mark.parametrize("unit", ["s", "m", "h", "D", "ms", "us", "ns"])
@pytest.mark.parametrize("order", ["<", ">"])
def test_nat_and_nil_timedelta_scalars_are_written_back_as_they_were(unit, order):
    # msgpack_numpy writes np.timedelta64('NaT') scalars; a nil beside them is another value.
    # Both read as null; the NaT's marker under its null tells them apart on the way back.
    dt = np.dtype(f"{order}m8[{unit}]")
    values = [np.timedelta64(3, unit), np.timedelta64("NaT", unit), None, np.timedelta64(-7, unit)]
    data = b"".join(mn.packb({"t": None if v is None else np.array(v).astype(dt)[()]}) for v in values)
    t = pa.table(ma.read_arrow(data))
    assert t.column("t").null_count == 2
    assert ma.write_msgpack(t) == data
    back = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(t)), raw=False))
    assert np.isnat(back[1]["t"]) and back[2]["t"] is None


@pytest.mark.parametrize("kind", ["M", "m"])
@pytest.mark.parametrize("order", ["<", ">"])
def test_nat_and_nil_beside_0d_datetime_ndarrays_are_written_back_as_they_were(kind, order):
    # 0-d datetime ndarrays (msgpack_numpy's map with shape [], which its decoder reads and its
    # encoder cannot write): a NaT one and a nil are both null, and each comes back as itself
    dt = np.dtype(f"{order}{kind}8[ms]")

    def nd0(v):
        return {b"nd": True, b"type": dt.str, b"kind": b"", b"shape": [], b"data": np.array(v, dtype=dt).tobytes()}

    values = [nd0(5), nd0("NaT"), None, nd0(-2)]
    data = b"".join(msgpack.packb({"i": i, "t": v}) for i, v in enumerate(values))
    ref = list(mn.Unpacker(io.BytesIO(data), raw=False))
    assert np.isnat(ref[1]["t"]) and ref[2]["t"] is None
    t = pa.table(ma.read_arrow(data))
    assert t.column("t").null_count == 2
    assert ma.write_msgpack(t) == data
    # batch by batch (each row a slice of its own)
    assert ma.write_msgpack(pa.Table.from_batches(t.to_batches(max_chunksize=1))) == data


def test_empty_array_width_round_trips_as_list():
    # Polars 2.1 cannot import Array width 0 (INTEROP.md): such ndarrays read as List
    data = mn.packb({"e": np.zeros((2, 0), dtype="<f4")})
    df = ma.read_msgpack(data)
    assert df.schema["e"] == pl.List(pl.Float32)
    assert df["e"].to_list() == [[], []]


def test_null_inside_array_is_refused_not_written_as_zero():
    # an ndarray cannot hold a null: writing 0.0 would change the data silently
    df = pl.DataFrame({"a": pl.Series([[1.0, None]], dtype=pl.Array(pl.Float32, 2))})
    with pytest.raises(ma.EncodeError, match="ndarrays cannot hold nulls"):
        roundtrip(df, "records")


# ---- SPEC 4.4: Python's msgpack_numpy reads what we write -----------------------------------------


def sample_frame() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    n = 5
    return pl.DataFrame(
        {
            "id": pl.Series(np.arange(n, dtype=np.int64)),
            "label": [f"item {i}" for i in range(n)],
            "score": pl.Series(rng.standard_normal(n).astype(np.float32)),
            "x64": pl.Series(rng.standard_normal(n)),
            "flag": [i % 2 == 0 for i in range(n)],
            "u8": pl.Series(np.arange(n, dtype=np.uint8)),
            "emb": pl.Series(rng.standard_normal((n, 4)).astype(np.float32), dtype=pl.Array(pl.Float32, 4)),
            "mat": pl.Series(np.arange(n * 6, dtype=np.int16).reshape(n, 2, 3), dtype=pl.Array(pl.Int16, (2, 3))),
            "half": pl.Series(np.arange(n * 2, dtype=np.float16).reshape(n, 2), dtype=pl.Array(pl.Float16, 2)),
            "blob": [bytes([i]) * i for i in range(n)],
        }
    )


def test_msgpack_numpy_reads_records():
    df = sample_frame()
    buf = io.BytesIO()
    ma.write_msgpack(df, buf)
    rows = list(msgpack.Unpacker(io.BytesIO(buf.getvalue()), object_hook=mn.decode, raw=False))
    assert len(rows) == df.height
    for i, row in enumerate(rows):
        assert list(row) == df.columns
        assert row["id"] == i and row["label"] == f"item {i}" and row["flag"] == (i % 2 == 0)
        assert row["blob"] == bytes([i]) * i
        assert np.float32(row["score"]) == df["score"][i] and row["x64"] == df["x64"][i]
        assert int(row["u8"]) == i
        for name, dtype, shape in [("emb", "<f4", (4,)), ("mat", "<i2", (2, 3)), ("half", "<f2", (2,))]:
            arr = row[name]
            assert isinstance(arr, np.ndarray), name
            assert arr.dtype == np.dtype(dtype) and arr.shape == shape, (name, arr.dtype, arr.shape)
            np.testing.assert_array_equal(arr, np.asarray(df[name][i].to_list(), dtype=dtype))


def test_msgpack_numpy_reads_columns():
    df = sample_frame()
    obj = mn.unpackb(ma.write_msgpack(df, None, layout="columns"), raw=False)
    assert list(obj) == df.columns
    for name, dtype in [
        ("id", "<i8"), ("score", "<f4"), ("x64", "<f8"), ("flag", "|b1"), ("u8", "|u1"),
        ("emb", "<f4"), ("mat", "<i2"), ("half", "<f2"),
    ]:
        arr = obj[name]
        assert isinstance(arr, np.ndarray) and arr.dtype == np.dtype(dtype), (name, type(arr))
        want = df[name].to_numpy()
        assert arr.shape == want.shape, (name, arr.shape, want.shape)
        np.testing.assert_array_equal(arr, want.astype(dtype))
    assert obj["label"] == df["label"].to_list()


def test_python_written_native_file_is_reproduced_through_polars():
    # SPEC 4.2 through a DataFrame: native-order numerics, bool, str, bin, Array/List of those
    recs = [
        {
            "id": i,
            "name": f"n{i}",
            "ok": bool(i % 2),
            "raw": bytes([i]),
            "x": float(i) / 3,
            "emb": np.arange(4, dtype="<f4") + i,
            "m": np.arange(6, dtype="<u2").reshape(2, 3),
            "tags": [i, i + 1],
        }
        for i in range(20)
    ]
    data = b"".join(mn.packb(r) for r in recs)
    df = ma.read_msgpack(data)
    assert df.schema["emb"] == pl.Array(pl.Float32, 4) and df.schema["m"] == pl.Array(pl.UInt16, (2, 3))
    assert ma.write_msgpack(df, None) == data
    back = list(msgpack.Unpacker(io.BytesIO(ma.write_msgpack(df, None)), object_hook=mn.decode, raw=False))
    for r, b in zip(recs, back):
        assert math.isclose(r["x"], b["x"]) and b["emb"].dtype == np.float32


@pytest.mark.parametrize(
    "tensor_from",
    [
        0,  # ndarrays throughout: the output is counted first, then encoded in place
        None,  # scalars only: encoded once into a buffer sized from the first rows
        3000,  # scalars in the first rows, ndarrays after: that buffer outgrows its estimate
    ],
)
def test_bytes_of_tables_larger_than_the_sample_equal_python(tensor_from):
    """``write_msgpack(df, None)`` chooses how it makes its bytes by counting the first 2,048
    rows; whichever way, the bytes are msgpack_numpy's and the same as written to a file object."""
    rng = np.random.default_rng(7)
    recs = [
        {
            "id": int(rng.integers(-(2**40), 2**40)),
            "name": f"n{i}" * (i % 5),
            "x": float(rng.random()),
            "emb": (rng.random(64).astype("<f4") if tensor_from is not None and i >= tensor_from else None),
        }
        for i in range(5000)
    ]
    data = b"".join(mn.packb(r) for r in recs)
    df = ma.read_msgpack(data)
    assert df.height == 5000
    assert ma.write_msgpack(df, None) == data
    buf = io.BytesIO()
    ma.write_msgpack(df, buf)
    assert buf.getvalue() == data


def test_bytes_of_a_table_whose_first_rows_are_unlike_the_rest_equal_python():
    """The first 2,048 rows (long strings) size the output far beyond the rest (short ones): the
    bytes are still msgpack's, whichever way they were made."""
    recs = [{"id": i, "s": ("x" * 10_000 if i < 2048 else f"s{i}")} for i in range(6000)]
    data = b"".join(msgpack.packb(r) for r in recs)
    df = ma.read_msgpack(data)
    assert ma.write_msgpack(df, None) == data


@pytest.mark.parametrize("source", ["polars", "pyarrow"])
@pytest.mark.parametrize("in_list", [False, True])
@pytest.mark.parametrize("kind", ["tensors", "scalars"])
def test_bytes_of_a_big_table_written_in_parts_equal_python(kind, in_list, source):
    """A table of more than 8 MiB is written to bytes in parts, one per thread, each part from
    where the rows before it end (rows read from one top-level array: the first part writes its
    header): the bytes are still msgpack_numpy's, and aligned output (whose padding depends on
    where each payload lands) is the same as written to a file object."""
    rng = np.random.default_rng(11)
    if kind == "tensors":
        recs = [
            {"id": i, "emb": None if i % 997 == 5 else rng.random(128).astype("<f4")}
            for i in range(20_000)
        ]
    else:
        recs = [
            {"id": int(rng.integers(-(2**40), 2**40)), "name": f"n{i}" * (i % 5), "x": float(rng.random())}
            for i in range(300_000)
        ]
    data = mn.packb(recs) if in_list else b"".join(mn.packb(r) for r in recs)
    if source == "pyarrow":  # a Table in memory, with the reader's schema metadata
        df = pa.table(ma.read_arrow(data))
        assert df.nbytes > 8 << 20
    else:  # a plain Polars frame keeps no schema metadata: with the numpy extension it keeps the array
        df = ma.read_msgpack(data, numpy_types="extension" if in_list else "polars")
        assert df.estimated_size() > 8 << 20
    assert ma.write_msgpack(df, None) == data
    aligned = ma.write_msgpack(df, None, aligned=True)
    buf = io.BytesIO()
    ma.write_msgpack(df, buf, aligned=True)
    assert aligned == buf.getvalue()
    assert (aligned != data) == (kind == "tensors")  # scalars have no payload to pad
    assert_frame_equal(ma.read_msgpack(aligned), ma.read_msgpack(data))


def test_array_strings_with_trailing_nuls_keep_them():
    """numpy's U/S types drop trailing NULs: such values are written as lists of str/bytes
    instead (values exact; the column reads back as a List), never silently cut."""
    import io

    import msgpack
    import msgpack_numpy as mn

    df = pl.DataFrame({"s": pl.Series([["a", "b\x00"], ["c", "d"]], dtype=pl.Array(pl.String, 2)),
                       "b": pl.Series([[b"x\x00", b""], [b"y", b"z"]], dtype=pl.Array(pl.Binary, 2))})
    data = ma.write_msgpack(df, None)
    back = ma.read_msgpack(data)
    assert back["s"].to_list() == df["s"].to_list() and back["b"].to_list() == df["b"].to_list()
    rows = list(msgpack.Unpacker(io.BytesIO(data), object_hook=mn.decode, raw=False))
    assert rows[0] == {"s": ["a", "b\x00"], "b": [b"x\x00", b""]}


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "|i1", "<i2", "<i4", "|u1", "<u2", "<u4"])
def test_ragged_ndarrays_through_polars_are_byte_exact(dtype):
    # SPEC 4.2: a Polars List of a narrow number (no plain msgpack value reads as one) was an
    # ndarray per row; 1-d and 2-d, with an empty row and a null row
    rng = np.random.default_rng(7)
    rows = [{"x": rng.integers(0, 100, size=shape).astype(dtype)} for shape in [(3,), (0,), (5,)]]
    rows2 = [{"m": rng.integers(0, 100, size=shape).astype(dtype)} for shape in [(2, 3), (1, 3), (4, 3)]]
    for rs in (rows, rows2, rows + [{"x": None}]):
        data = b"".join(mn.packb(r) for r in rs)
        df = ma.read_msgpack(data)
        assert ma.write_msgpack(df, None) == data, rs



@pytest.mark.parametrize("dtype", ["<f4", "<i4", "|u1"])
def test_lists_of_ragged_ndarrays_through_polars_are_byte_exact(dtype):
    # a record's list of arrays of different lengths (token ids, say): List(List(T)) in Polars,
    # each item an ndarray again (it was written as lists of numpy scalars), 1-d and 2-d, with
    # an empty list and an empty array
    rng = np.random.default_rng(3)
    def arr(shape):
        return rng.integers(0, 100, size=shape).astype(dtype)
    rows = [{"x": [arr((3,)), arr((5,))], "k": 0}, {"x": [], "k": 1}, {"x": [arr((0,)), arr((2,))], "k": 2}]
    rows2 = [{"m": [arr((2, 3)), arr((1, 3))]}, {"m": [arr((4, 2))]}]
    for rs in (rows, rows2):
        data = b"".join(mn.packb(r) for r in rs)
        df = ma.read_msgpack(data)
        out = ma.write_msgpack(df)
        back = list(mn.Unpacker(io.BytesIO(out), raw=False))
        for got, want in zip(back, rs):
            for g, w in zip(*(r.get("x", r.get("m")) for r in (got, want))):
                assert g.dtype == w.dtype and g.shape == w.shape and (g == w).all()
        assert out == data

@pytest.mark.parametrize("dtype", ["<f4", "|u1", "<i2"])
def test_ragged_ndarrays_inside_maps_through_polars_are_byte_exact(dtype):
    # as at top level, a Struct field of a narrow List was one ndarray per row (it was written as
    # lists of numpy scalars / plain floats); also a list of them, and a map inside a map
    rng = np.random.default_rng(5)
    def arr(shape):
        return rng.integers(0, 100, size=shape).astype(dtype)
    rows = [{"s": {"k": arr((2,)), "l": [arr((2,))], "t": {"m": arr((1, 2))}}, "id": 0},
            {"s": {"k": arr((1,)), "l": [arr((1,)), arr((3,))], "t": {"m": arr((3, 2))}}, "id": 1}]
    data = b"".join(mn.packb(r) for r in rows)
    out = ma.write_msgpack(ma.read_msgpack(data), None)
    back = list(mn.Unpacker(io.BytesIO(out), raw=False))
    assert isinstance(back[0]["s"]["k"], np.ndarray) and back[0]["s"]["k"].dtype == np.dtype(dtype)
    assert out == data


def test_a_null_list_inside_a_row_is_not_written_as_part_of_an_ndarray():
    # [[], [], None] would be one (3, 0) ndarray: the None lost, read back as []
    df = pl.DataFrame({"c": [[[]], [[], [], None], [[1, 2], None]]}, schema={"c": pl.List(pl.List(pl.UInt16))})
    out = ma.write_msgpack(df, None)
    back = list(mn.Unpacker(io.BytesIO(out), raw=False))
    assert back[1]["c"][2] is None and back[2]["c"][1] is None
    assert ma.read_msgpack(out)["c"].to_list() == df["c"].to_list()
    # from a file: lists holding empty ndarrays and nils
    data = b"".join(mn.packb(v) for v in [[np.zeros((0, 2), ">i8"), None], [None, np.zeros((0, 2), ">i8")]])
    want = ma.read_msgpack(data)["value"].to_list()
    assert ma.read_msgpack(ma.write_msgpack(ma.read_msgpack(data), None))["value"].to_list() == want


@pytest.mark.parametrize("dtype, leaf_type", [(pl.UInt8, np.uint8), (pl.Int16, np.int16), (pl.Float32, float)])
def test_lists_of_narrow_numbers_of_one_length_stay_lists(dtype, leaf_type):
    # SPEC 4.3: ndarrays of one shape read back as a fixed-shape Array, so a List column whose
    # rows all have one shape is written as lists (of numpy scalars: the dtype survives)
    for rows in ([[1, 2], [3, 4], None], [[[1], [2]], [[3], [4]]]):
        inner = dtype if not isinstance(rows[0][0], list) else pl.List(dtype)
        df = pl.DataFrame({"c": rows}, schema={"c": pl.List(inner)})
        out = ma.write_msgpack(df, None)
        assert_frame_equal(ma.read_msgpack(out), df)
        back = [r["c"] for r in mn.Unpacker(io.BytesIO(out), raw=False)]
        assert back[0] == rows[0]
        leaf = back[0][0][0] if isinstance(rows[0][0], list) else back[0][0]
        assert type(leaf) is leaf_type  # numpy scalars, or msgpack float32


def test_lists_that_cannot_be_ndarrays_stay_lists():
    df = pl.DataFrame(
        {"x": [[[1.0, 2.0], [3.0]], [[1.0]]], "y": [[1, None], [3]]},
        schema={"x": pl.List(pl.List(pl.Float32)), "y": pl.List(pl.Int16)},
    )
    out = list(msgpack.Unpacker(io.BytesIO(ma.write_msgpack(df, None)), object_hook=mn.decode))
    # x's rows are not rectangular, but each item is: a list of float32 ndarrays
    assert [[a.tolist() for a in r["x"]] for r in out] == [[[1.0, 2.0], [3.0]], [[1.0]]]
    assert {a.dtype for r in out for a in r["x"]} == {np.dtype("<f4")}
    # y holds a null: no ndarray can, so a list of numpy scalars (int16 kept) and nil
    assert [r["y"] for r in out] == [[1, None], [3]]
    assert type(out[0]["y"][0]) is np.int16
    # Int64/Float64/Boolean lists are what plain msgpack lists read as: they stay lists
    df = pl.DataFrame({"a": [[1, 2], [3]], "b": [[0.5], []], "c": [[True], [False, True]]})
    raw = list(msgpack.Unpacker(io.BytesIO(ma.write_msgpack(df, None))))
    assert raw == [{"a": [1, 2], "b": [0.5], "c": [True]}, {"a": [3], "b": [], "c": [False, True]}]



ARRAY_OF_STRUCTS = pl.Struct({"x": pl.Int64, "y": pl.Float32, "s": pl.String, "b": pl.Boolean, "v": pl.Array(pl.Int16, 2)})


@pytest.mark.parametrize(
    "series",
    [
        pl.Series([[{"x": 1, "y": 2.5, "s": "ab", "b": True, "v": [1, 2]}, {"x": -3, "y": 4.0, "s": "", "b": False, "v": [3, 4]}], None],
                  dtype=pl.Array(ARRAY_OF_STRUCTS, 2)),
        # a null inside a row: no structured ndarray holds it, so a list of maps (read back as a List)
        pl.Series([[{"x": 1, "y": None, "s": "a", "b": True, "v": [1, 2]}]], dtype=pl.Array(ARRAY_OF_STRUCTS, 1)),
        pl.Series([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]], [], None], dtype=pl.List(pl.Array(pl.Float32, 2))),
        pl.Series([[[1, 2]], [[3, 4], [5, 6]]], dtype=pl.List(pl.Array(pl.UInt8, 2))),
        pl.Series([], dtype=pl.String),
        pl.Series([], dtype=pl.Binary),
    ],
    ids=["array-of-structs", "array-of-structs-with-a-null", "list-of-arrays-f32", "list-of-arrays-u8", "empty-str", "empty-bin"],
)
@pytest.mark.parametrize("layout", ["records", "columns"])
def test_nested_and_empty_columns_come_back_with_their_dtype(series, layout):
    df = pl.DataFrame({"a": series, "k": pl.Series(range(len(series)), dtype=pl.Int64)})
    data = ma.write_msgpack(df, None, layout=layout)
    back = ma.read_msgpack(data)
    if len(df) == 0 and layout == "records":
        assert back.shape == (0, 0)  # an empty stream of records has no keys
        return
    if series.dtype == pl.Array(ARRAY_OF_STRUCTS, 1):
        # (y, nil in every row, is a Null field: types come from the values)
        assert back["a"].to_list() == series.to_list() and isinstance(back.schema["a"], pl.List)
        return
    assert_frame_equal(back, df)
    # what msgpack_numpy makes of the same bytes: the same values
    objs = list(mn.Unpacker(io.BytesIO(data), raw=False))
    got = [o["a"] for o in objs] if layout == "records" else list(objs[0]["a"])
    for g, w in zip(got, series.to_list()):
        if w is None:
            assert g is None
        elif isinstance(g, np.ndarray) and g.dtype.names:
            assert [dict(zip(g.dtype.names, (v.tolist() if hasattr(v, "tolist") else v for v in r))) for r in g] == w
        else:
            assert [np.asarray(r).tolist() for r in g] == w


@pytest.mark.parametrize("unit, tz", [("us", "UTC"), ("ms", "Europe/Paris"), ("ns", "America/New_York")])
def test_a_time_zone_dropped_on_write_is_said(unit, tz):
    # numpy's datetime64 has no zone: the UTC values are written, and a warning names the column
    df = pl.DataFrame({"t": pl.Series([1_700_000_000_123, None], dtype=pl.Datetime("ms"))})
    df = df.with_columns(pl.col("t").cast(pl.Datetime(unit)).dt.replace_time_zone("UTC").dt.convert_time_zone(tz))
    with pytest.warns(ma.TimeZoneWarning, match="'t'") as w:
        data = ma.write_msgpack(df, None)
    assert w[0].message.columns == ["t"]
    back = ma.read_msgpack(data)
    assert back.schema["t"] == pl.Datetime(unit)
    assert back["t"].dt.replace_time_zone("UTC").to_list() == df["t"].dt.convert_time_zone("UTC").to_list()
    # Datetime("ns", "UTC") is written as msgpack timestamps, which keep the zone: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        utc = df.with_columns(pl.col("t").dt.convert_time_zone("UTC").dt.cast_time_unit("ns"))
        assert ma.read_msgpack(ma.write_msgpack(utc, None)).equals(utc)


@pytest.mark.parametrize(
    "data, layout",
    [
        (mn.packb({"a": np.arange(2, dtype="<i4"), "b": [None, None]}), "auto"),  # columns: an all-nil list
        (mn.packb({"b": []}), "auto"),
        (mn.packb({"c0": None}), "records"),  # one record
        (mn.packb([{"c0": []}, {}]), "records"),  # List(Null), a key absent
        (mn.packb({"a": 1, "b": None}) + mn.packb({"a": 2}), "auto"),
    ],
)
def test_an_extension_frame_with_null_columns_is_written_back_byte_for_byte(data, layout):
    # Polars exports Null with a buffer arrow-rs refuses: inside the extension's storage too
    df = ma.read_msgpack(data, layout=layout, numpy_types="extension")
    assert ma.write_msgpack(df) == data


@pytest.mark.parametrize("carrier", ["complex", "f4 scalar", "ndarray"])
def test_plain_lists_of_narrow_numbers_stay_lists_beside_a_numpy_column(carrier):
    # Only the numpy column carries the extension (and with it the file's layout): a plain
    # msgpack list of float32s beside it, its rows of several lengths, is not a ragged ndarray
    other = {"complex": complex(1, 2), "f4 scalar": np.float32(1.5), "ndarray": np.arange(2, dtype="<i2")}[carrier]
    pk = msgpack.Packer(use_single_float=True, default=mn.encode)
    recs = [{"emb": [], "x": other}, {"emb": [0.5, 1.5, 2.5], "x": other}, {"emb": [3.5], "x": other}]
    data = b"".join(pk.pack(r) for r in recs)
    df = ma.read_msgpack(data, numpy_types="extension")
    out = ma.write_msgpack(df)
    assert out == data
    back = [r["emb"] for r in mn.Unpacker(io.BytesIO(out), raw=False)]
    assert back == [r["emb"] for r in recs]


@pytest.mark.parametrize(
    "shape, dtype",
    [((0, 3), "<u2"), ((2, 0), "<u2"), ((0,), "<i8"), ((0,), "<f8"), ((0, 2), "|b1")],
)
def test_empty_ndarrays_keep_their_dtype_through_polars(shape, dtype):
    # rows of no element say their dtype only as ndarrays: `[]` would read back as List(Null)
    data = b"".join(mn.packb({"a": np.zeros(shape, dtype)}) for _ in range(2))
    df = ma.read_msgpack(data)
    out = ma.write_msgpack(df)
    assert out == data
    assert_frame_equal(ma.read_msgpack(out), df)
    back = [r["a"] for r in mn.Unpacker(io.BytesIO(out), raw=False)]
    assert all(a.shape == shape and a.dtype == np.dtype(dtype) for a in back)


def test_a_structured_array_with_nat_in_a_time_field_stays_one_through_polars():
    # msgpack_numpy's own map for a V array (its packb cannot take timedelta fields): NaT is a
    # null in Polars, and an ndarray's NaT again on write, not a list of maps with nil
    arr = np.zeros(2, dtype=[("a", "<i4"), ("t", "<m8[ms]")])
    arr["t"][1] = np.timedelta64("NaT")
    nd = {b"nd": True, b"type": arr.dtype.descr, b"kind": b"V", b"shape": list(arr.shape), b"data": arr.tobytes()}
    data = b"".join(msgpack.packb({"c": nd}, use_bin_type=True) for _ in range(2))
    df = ma.read_msgpack(data)
    out = ma.write_msgpack(df)
    assert out == data
    assert_frame_equal(ma.read_msgpack(out), df)
    back = mn.unpackb(out[: len(out) // 2], raw=False)["c"]
    assert back.dtype == arr.dtype and np.isnat(back["t"][1]) and back["t"][0] == arr["t"][0]


@pytest.mark.parametrize("first, then", [(np.array(["abc"], "<U3"), np.array(["abcde"], "<U5")), (np.array([b"ab"], "S2"), np.array([b"abcd"], "S4"))])
def test_strings_wider_than_the_rows_typed_are_written_at_their_width(first, then):
    # infer_rows=1 types the column <U3 from the first row; the wider row after it is written as
    # it was, not refused ("does not fit numpy dtype <U3")
    data = mn.packb({"x": first}) + mn.packb({"x": then})
    out = ma.write_msgpack(ma.read_arrow(data, infer_rows=1), layout="auto")
    assert out == data
    assert [r["x"].dtype for r in mn.Unpacker(io.BytesIO(out), raw=False)] == [first.dtype, then.dtype]


def test_ragged_empty_ndarrays_keep_their_dtype_through_polars():
    # (2, 0) then (3, 0): List(List(Int64)) whose inner lists are all empty
    data = mn.packb({"a": np.zeros((2, 0), "<i8")}) + mn.packb({"a": np.zeros((3, 0), "<i8")})
    df = ma.read_msgpack(data)
    assert ma.write_msgpack(df) == data


def test_empty_msgpack_lists_are_written_back_as_lists_through_polars():
    # `[]` reads as List(Null); written back it was an empty bool ndarray ('|b1')
    for rows in ([[], []], [[], [None]]):
        orig = b"".join(mn.packb({"x": x, "k": i}) for i, x in enumerate(rows))
        df = ma.read_msgpack(orig)
        assert df.schema["x"] == pl.List(pl.Null)
        out = ma.write_msgpack(df)
        assert list(mn.Unpacker(io.BytesIO(out), raw=False)) == [{"x": x, "k": i} for i, x in enumerate(rows)]
        assert out == orig


@pytest.mark.parametrize("cycle", [[(0,), (2,)], [(2,), (3,), (2,), (0,), (3,)], [(1, 2), (3, 2), (1, 2)]])
def test_columns_of_few_shapes_read_as_msgpack_numpy_reads_them(cycle):
    # a column whose rows come in a few shapes (an optional embedding empty or not, strings of
    # two widths) is decoded by remembered headers: each row's values as msgpack_numpy gives them,
    # in every batch size, and written back byte for byte
    rng = np.random.default_rng(len(cycle))
    words = ["ab", "cde", "f"]
    rows = [
        {"v": rng.random(cycle[i % len(cycle)]).astype("<f4"), "u": np.array(words[: 1 + i % len(words)])}
        for i in range(200)
    ]
    data = b"".join(mn.packb(r) for r in rows)
    ref = [mn.unpackb(mn.packb(r), raw=False) for r in rows]
    for batch_size in (7, 64, 65536):
        t = pa.table(ma.read_arrow(data, batch_size=batch_size))
        got = t.to_pylist()
        for g, r in zip(got, ref, strict=True):
            np.testing.assert_array_equal(np.array(g["v"], dtype="<f4").reshape(r["v"].shape), r["v"])
            assert g["u"] == r["u"].tolist()
    assert ma.write_msgpack(ma.read_arrow(data)) == data
