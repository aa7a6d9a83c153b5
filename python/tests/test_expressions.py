"""The `msgpack` namespace: pl.col(c).msgpack.decode/encode (the Polars expression plugin) and
pl.Series.msgpack (eager, through the Arrow C stream), against the real msgpack_numpy."""

from __future__ import annotations

import datetime as dt
import doctest
import math
import os

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal, assert_series_equal

import msgpack_arrow as ma
from msgpack_arrow import _internal, expressions

# The expression plugin is the extension's optional `plugin` feature: `make test` builds it and
# sets MSGPACK_ARROW_REQUIRE_PLUGIN=1, so there these tests run (and fail if it is missing).
pytestmark = pytest.mark.skipif(
    not _internal.HAS_PLUGIN and os.environ.get("MSGPACK_ARROW_REQUIRE_PLUGIN") != "1",
    reason="this build has no expression plugin (cargo feature 'plugin'); make test builds it",
)

# ---- values as msgpack_numpy.packb writes them -----------------------------------------------------

rng = np.random.default_rng(7)

CASES = {
    "f4": [np.arange(6, dtype="<f4") + i for i in range(4)],
    "f8_big_endian": [np.linspace(0, 1, 5).astype(">f8") * i for i in range(4)],
    "i2_big_endian": [np.arange(3, dtype=">i2") - i for i in range(4)],
    "u1": [rng.integers(0, 255, size=8, dtype=np.uint8) for _ in range(4)],
    "i8_2d": [np.arange(6, dtype="<i8").reshape(2, 3) * i for i in range(3)],
    "bool": [np.array([True, False, i % 2 == 0]) for i in range(3)],
    "f2": [np.array([0.5, -2.0], dtype="<f2") for _ in range(3)],
    "ragged": [np.arange(n, dtype="<f4") for n in (3, 1, 0, 5)],
    "ragged_2d": [np.zeros((n, 2), dtype=">i4") for n in (1, 3, 2)],
    "scalar_f4": [np.float32(1.5), np.float32(-2.25), np.float32(3)],
    "scalar_u8": [np.uint64(2**64 - 1), np.uint64(5)],
    "scalar_i2": [np.int16(-7), np.int16(300)],
    "int": [1, -2, 2**40],
    "float": [1.5, -0.0, math.inf],
    "str": ["a", "", "ünï"],
    "bytes": [b"\x00\x01", b"", b"xyz"],
    "bool_scalar": [True, False],
    "list": [[1, 2], [], [3]],
    "map": [{"a": 1, "b": "x"}, {"a": 2, "b": "y", "c": 1.5}, {"b": "z"}],
    "map_of_ndarrays": [{"emb": np.arange(4, dtype="<f4") * i, "id": i} for i in range(3)],
}


def packed(values, nulls=()) -> pl.Series:
    return pl.Series("b", [None if i in nulls else mn.packb(v) for i, v in enumerate(values)], dtype=pl.Binary)


def with_nulls(s: pl.Series, nulls) -> pl.Series:
    return pl.Series(s.name, [None if i in nulls else v for i, v in enumerate(s.to_list())], dtype=s.dtype)


def reference(values) -> pl.Series:
    """What read_msgpack gives for the same values: the blobs concatenated, layout values."""
    data = b"".join(mn.packb(v) for v in values)
    return ma.read_msgpack(data, layout="values")["value"].alias("b")


@pytest.mark.parametrize("case", list(CASES))
def test_decode_equals_read_msgpack(case):
    values = CASES[case]
    s = packed(values)
    want = reference(values)
    got = s.msgpack.decode()
    assert_series_equal(got, want)
    assert s.msgpack.infer_dtype() == want.dtype
    # the expression (dtype given), in every context
    df = s.to_frame()
    assert_series_equal(df.select(pl.col("b").msgpack.decode(want.dtype)).to_series(), want)
    lazy = df.lazy().with_columns(pl.col("b").msgpack.decode(want.dtype))
    assert_series_equal(lazy.collect(engine="streaming").to_series(), want)


@pytest.mark.parametrize("case", ["f4", "i8_2d", "list", "map", "str"])
def test_a_single_row_is_one_value(case):
    """One blob holding an ndarray or a list is one row (not its axis 0 / its items)."""
    values = CASES[case][:1]
    want = reference(CASES[case][:1] * 2).head(1)
    assert_series_equal(packed(values).msgpack.decode(), want)
    df = packed(values).to_frame()
    assert_series_equal(df.select(pl.col("b").msgpack.decode(want.dtype)).to_series(), want)


def test_width_zero_arrays_are_lists():
    """Polars cannot hold Array(..., 0): shape (0,) ndarrays decode as empty lists."""
    values = [np.zeros(0, dtype="<f4")] * 2
    want = reference(values)
    assert want.dtype == pl.List(pl.Float32)
    assert_series_equal(packed(values).msgpack.decode(), want)
    got = packed(values).to_frame().select(pl.col("b").msgpack.decode(pl.List(pl.Float32))).to_series()
    assert_series_equal(got, want)


def test_nulls_are_kept():
    values = CASES["f8_big_endian"]
    s = packed(values, nulls={0, 2})
    want = with_nulls(reference(values), {0, 2})
    assert_series_equal(s.msgpack.decode(), want)
    got = s.to_frame().select(pl.col("b").msgpack.decode(want.dtype)).to_series()
    assert_series_equal(got, want)
    # all null: nothing to infer from
    none = pl.Series("b", [None, None], dtype=pl.Binary)
    assert none.msgpack.decode().dtype == pl.Null
    got = none.to_frame().select(pl.col("b").msgpack.decode(pl.Array(pl.Float32, 3))).to_series()
    assert got.dtype == pl.Array(pl.Float32, 3) and got.null_count() == 2
    assert pl.Series("b", [None, None]).msgpack.decode().null_count() == 2
    # a msgpack nil blob is a null value too
    nil = pl.Series("b", [mn.packb(None), mn.packb(1)])
    assert nil.msgpack.decode().to_list() == [None, 1]


def test_decode_converts_to_the_dtype():
    s = packed([np.arange(3, dtype="<i8"), np.arange(3, dtype="<i8")])
    got = s.to_frame().select(pl.col("b").msgpack.decode(pl.Array(pl.Float32, 3))).to_series()
    assert got.dtype == pl.Array(pl.Float32, 3)
    assert got.to_list() == [[0.0, 1.0, 2.0]] * 2
    # ragged rows to a fixed width: they must all have it
    ragged = packed([np.arange(2, dtype="<f4"), np.arange(2, dtype="<f4")])
    # (inferred as an Array(2) already; a List dtype works too)
    got = ragged.to_frame().select(pl.col("b").msgpack.decode(pl.List(pl.Float64))).to_series()
    assert got.to_list() == [[0.0, 1.0]] * 2
    # struct fields by name, whatever the key order; missing keys are null
    maps = packed([{"b": "x", "a": 1}, {"a": 2}])
    dtype = pl.Struct({"a": pl.Int64, "b": pl.String, "c": pl.Float64})
    got = maps.to_frame().select(pl.col("b").msgpack.decode(dtype)).to_series()
    assert got.to_list() == [{"a": 1, "b": "x", "c": None}, {"a": 2, "b": None, "c": None}]
    assert_series_equal(maps.msgpack.decode(dtype), got)
    # a value that does not fit is an error, never a silent null
    with pytest.raises(pl.exceptions.ComputeError, match="Int8"):
        packed([300, 1]).to_frame().select(pl.col("b").msgpack.decode(pl.Int8))
    with pytest.raises(ma.DecodeError, match="Int8"):
        packed([300, 1]).msgpack.decode(pl.Int8)
    # a key the struct dtype lacks
    with pytest.raises(pl.exceptions.ComputeError, match='key "b"'):
        maps.to_frame().select(pl.col("b").msgpack.decode(pl.Struct({"a": pl.Int64})))


# ---- encode ------------------------------------------------------------------------------------------

ENCODE = pl.DataFrame(
    {
        "i64": [1, None, -(2**40)],
        "i8": [1, 2, -3],
        "u8": [0, 255, None],
        "f32": [1.5, None, -0.25],
        "f64": [1.5, math.nan, 2.0],
        "bool": [True, False, None],
        "str": ["a", None, "ünï"],
        "bin": [b"\x00", b"", None],
        "arr": [[1.0, 2.0, 3.0], None, [4.0, 5.0, 6.0]],
        "arr2d": [[[1, 2], [3, 4]], [[5, 6], [7, 8]], None],
        "list": [[1.0], [], None],
        "struct": [{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}],
        "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1)],
        "dur": [dt.timedelta(seconds=5), None, dt.timedelta(microseconds=-1)],
        "date": [dt.date(2024, 1, 2), None, dt.date(1900, 1, 1)],
    },
    schema_overrides={
        "i8": pl.Int8,
        "u8": pl.UInt8,
        "f32": pl.Float32,
        "arr": pl.Array(pl.Float32, 3),
        "arr2d": pl.Array(pl.Int16, (2, 2)),
    },
)


def records(df: pl.DataFrame) -> list[dict]:
    """What msgpack_numpy reads back from write_msgpack (records): one dict per row."""
    return list(msgpack.Unpacker(__import__("io").BytesIO(ma.write_msgpack(df, None)), object_hook=mn.decode, raw=False))


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("col", ENCODE.columns)
@pytest.mark.parametrize("path", ["expr", "series"])
def test_encode_is_what_msgpack_numpy_reads(col, path):
    df = ENCODE.select(col)
    if path == "expr":
        blobs = df.select(pl.col(col).msgpack.encode()).to_series()
    else:
        blobs = df[col].msgpack.encode()
    assert blobs.dtype == pl.Binary and blobs.name == col
    assert blobs.is_null().to_list() == df[col].is_null().to_list()
    want = records(df)
    for i, blob in enumerate(blobs):
        if blob is None:
            continue
        got = mn.unpackb(blob, raw=False)
        assert same(got, want[i][col]), (i, got, want[i][col])


def test_encode_numpy_dtypes():
    blobs = ENCODE.select(pl.all().msgpack.encode()).row(0, named=True)
    arr = mn.unpackb(blobs["arr"])
    assert arr.dtype == np.dtype("<f4") and arr.shape == (3,)
    arr2d = mn.unpackb(blobs["arr2d"])
    assert arr2d.dtype == np.dtype("<i2") and arr2d.shape == (2, 2)
    assert arr2d.tolist() == [[1, 2], [3, 4]]
    # Float32/Float64 are msgpack float 32/64 (as msgpack_numpy writes Python floats)
    assert blobs["f32"] == b"\xca" + np.array(1.5, dtype=">f4").tobytes()
    assert blobs["f64"] == b"\xcb" + np.array(1.5, dtype=">f8").tobytes()
    # other sized numbers are numpy scalars of their dtype
    u8 = mn.unpackb(blobs["u8"])
    assert isinstance(u8, np.uint8) and u8 == 0
    i8 = mn.unpackb(blobs["i8"])
    assert isinstance(i8, np.int8) and i8 == 1
    assert mn.unpackb(blobs["i64"]) == 1
    assert mn.unpackb(blobs["str"], raw=False) == "a"
    assert mn.unpackb(blobs["struct"], raw=False) == {"a": 1, "b": "x"}
    ts = mn.unpackb(blobs["ts"])
    assert ts.dtype == np.dtype("<M8[us]") and ts.shape == ()
    assert ts == np.datetime64("2024-01-02T03:04:05.123456", "us")


ROUND_TRIP = pl.DataFrame(
    {
        "i64": [1, None, -(2**62), 7],
        "f32": [1.5, None, math.inf, -0.0],
        "str": ["a", None, "", "ünï"],
        "arr": [[1.0, 2.0], None, [3.0, 4.0], [0.0, -1.0]],
        "arr2d": [[[1.0], [2.0]], None, [[3.0], [4.0]], [[5.0], [6.0]]],
        "list": [[1, 2], [], None, [3]],
        "list_f": [[1.5], [], None, [2.5, 3.5]],
        "struct": [{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}, {"a": 3, "b": None}],
        "nested": [{"v": [1.0, 2.0], "s": "x"}, {"v": None, "s": None}, None, {"v": [], "s": "y"}],
        "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1), dt.datetime(1900, 1, 1)],
        "u8": [0, 255, None, 7],
        "bool": [True, None, False, True],
    },
    schema_overrides={
        "f32": pl.Float32,
        "arr": pl.Array(pl.Float32, 2),
        "arr2d": pl.Array(pl.Float64, (2, 1)),
        "u8": pl.UInt8,
    },
)


@pytest.mark.parametrize("col", ROUND_TRIP.columns)
def test_decode_encode_round_trip(col):
    df = ROUND_TRIP.select(col)
    dtype = df[col].dtype
    out = df.select(pl.col(col).msgpack.encode().msgpack.decode(dtype))
    assert_frame_equal(out, df)
    # eager, inferring the dtype (nulls aside, the values carry their type)
    back = df[col].msgpack.encode().msgpack.decode()
    assert_series_equal(back, df[col], check_dtypes=col not in ("list", "nested"))


def test_contexts():
    n = 1000
    emb = np.arange(n * 4, dtype="<f4").reshape(n, 4)
    df = pl.DataFrame(
        {
            "g": [i % 3 for i in range(n)],
            "b": [None if i % 7 == 0 else mn.packb(emb[i]) for i in range(n)],
        }
    )
    dtype = pl.Array(pl.Float32, 4)
    want = pl.Series("b", [None if i % 7 == 0 else emb[i].tolist() for i in range(n)], dtype=dtype)
    dec = pl.col("b").msgpack.decode(dtype)
    assert_series_equal(df.select(dec).to_series(), want)
    assert_series_equal(df.with_columns(dec)["b"], want)
    assert_series_equal(df.lazy().select(dec).collect(engine="streaming").to_series(), want)
    assert_series_equal(df.lazy().filter(pl.col("g") == 1).select(dec).collect(engine="streaming").to_series(), want.filter(df["g"] == 1))
    agg = df.group_by("g", maintain_order=True).agg(dec).sort("g")
    for g, vals in agg.iter_rows():
        assert vals == want.filter(df["g"] == g).to_list()
    # an expression on the result, and encode in a group_by
    sums = df.group_by("g").agg(dec.arr.sum().sum()).sort("g")
    assert sums["b"].to_list() == pytest.approx([float(emb[[i for i in range(n) if i % 3 == g and i % 7]].sum()) for g in range(3)])
    enc = df.with_columns(dec).group_by("g", maintain_order=True).agg(pl.col("b").msgpack.encode()).sort("g")
    for g, blobs in enc.iter_rows():
        assert [None if b is None else mn.unpackb(b).tolist() for b in blobs] == want.filter(df["g"] == g).to_list()
    # both ways in one streaming query, over several morsels
    big = pl.DataFrame({"x": np.arange(300_000, dtype=np.int64)}).lazy()
    out = big.select(pl.col("x").msgpack.encode().msgpack.decode(pl.Int64).alias("y"), "x").collect(engine="streaming")
    assert out["y"].to_list() == out["x"].to_list()


def test_big_columns_over_many_buffers():
    """Polars keeps a Binary column's blobs in several buffers (of doubling sizes) and inlines
    blobs of up to 12 bytes in the views: runs of blobs are decoded in place, group by group,
    the others copied; nulls anywhere."""
    n = 6000
    nulls = {i for i in range(n) if i % 11 == 3} | {0, n - 1}
    # strings: short ones inlined, long ones in the data buffers
    words = ["x" * (i % 3) if i % 4 else "y" * (200 + i % 50) for i in range(n)]
    s = packed(words, nulls)
    want = with_nulls(reference(words), nulls)
    assert_series_equal(s.msgpack.decode(), want)
    got = s.to_frame().select(pl.col("b").msgpack.decode(pl.String)).to_series()
    assert_series_equal(got, want)
    # ndarrays whose shape changes half way: the groups infer different Array widths, decoded
    # together they are one List column, as read_msgpack reads them
    arrays = [np.arange(3 if i < n // 2 else 5, dtype="<f4") + i for i in range(n)]
    s = packed(arrays, nulls)
    want = with_nulls(reference(arrays), nulls)
    assert want.dtype == pl.List(pl.Float32)
    assert s.msgpack.infer_dtype() == want.dtype
    assert_series_equal(s.msgpack.decode(), want)
    got = s.to_frame().select(pl.col("b").msgpack.decode(want.dtype)).to_series()
    assert_series_equal(got, want)
    got = s.to_frame().lazy().select(pl.col("b").msgpack.decode(want.dtype)).collect(engine="streaming")
    assert_series_equal(got.to_series(), want)
    # a bad blob far down is reported at its row: malformed msgpack (found checking each blob)
    # or a bad ndarray inside a run of blobs decoded in place (found by the reader)
    bad_dtype = mn.packb({b"nd": True, b"type": "<q9", b"kind": b"", b"shape": [3], b"data": b"x" * 24})
    for blob, msg in [(b"\x93\x01", "truncated"), (bad_dtype, "dtype")]:
        blobs = [None if i in nulls else mn.packb(a) for i, a in enumerate(arrays)]
        blobs[4321] = blob
        bad = pl.Series("b", blobs, dtype=pl.Binary)
        with pytest.raises(ma.DecodeError, match=msg) as e:
            bad.msgpack.decode()
        assert e.value.record == 4321, e.value
        with pytest.raises(pl.exceptions.ComputeError, match="row 4321"):
            bad.to_frame().select(pl.col("b").msgpack.decode(want.dtype))


def test_chunked_input():
    a = packed(CASES["f4"][:2])
    b = packed(CASES["f4"][2:], nulls={1})
    s = pl.concat([a, b], rechunk=False)
    assert s.n_chunks() == 2
    want = pl.concat([reference(CASES["f4"][:2]), with_nulls(reference(CASES["f4"][2:]), {1})])
    assert_series_equal(s.msgpack.decode(), want)
    assert_series_equal(s.to_frame().select(pl.col("b").msgpack.decode(want.dtype)).to_series(), want)
    enc = pl.concat([want.head(2), want.tail(2)], rechunk=False)
    assert_series_equal(enc.msgpack.encode().msgpack.decode(), want)


def test_big_chunks_are_decoded_as_they_are():
    # chunks big enough to go to the extension one by one (not copied into one first): the values
    # and the row an error names are those of the whole column
    arrays = [np.arange(4, dtype="<f4") + i for i in range(4500)]
    s = pl.concat([pl.Series("b", [mn.packb(a) for a in arrays[i : i + 1500]]) for i in (0, 1500, 3000)], rechunk=False)
    assert s.n_chunks() == 3
    want = pl.Series("b", np.stack(arrays), dtype=pl.Array(pl.Float32, 4))
    assert_series_equal(s.msgpack.decode(), want)
    assert s.msgpack.infer_dtype() == pl.Array(pl.Float32, 4)
    enc = pl.concat([want.slice(i, 1500) for i in (0, 1500, 3000)], rechunk=False)
    assert enc.msgpack.encode().to_list() == [mn.packb(a) for a in arrays]
    bad = pl.concat([s.slice(0, 3000), pl.Series("b", [mn.packb("x")] * 1500)], rechunk=False)
    with pytest.raises(ma.DecodeError) as e:
        bad.msgpack.decode()
    assert e.value.record == 3000


# ---- errors ------------------------------------------------------------------------------------------


BAD = {
    "reserved_marker": (b"\xc1", "invalid msgpack"),
    "truncated_ndarray": (mn.packb(np.arange(4, dtype="<f8"))[:-3], "truncated"),
    "two_objects": (mn.packb(1) + mn.packb(2), "exactly one object"),
    "empty": (b"", "empty blob"),
    "object_array": (mn.packb(np.array([1, "a"], dtype=object)), "pickle"),
    "bad_dtype": (mn.packb({b"nd": True, b"type": "<q9", b"kind": b"", b"shape": [1], b"data": b"12345678"}), "dtype"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_blob_is_a_clear_error(case):
    blob, msg = BAD[case]
    s = pl.Series("b", [mn.packb(1.5), None, blob], dtype=pl.Binary)
    with pytest.raises(pl.exceptions.ComputeError, match=msg) as e:
        s.to_frame().select(pl.col("b").msgpack.decode(pl.Float64))
    assert "row 2" in str(e.value)
    with pytest.raises(ma.DecodeError, match=msg) as e:
        s.msgpack.decode()
    assert e.value.record == 2
    assert "row 2" in str(e.value)
    with pytest.raises(pl.exceptions.ComputeError, match=msg):
        s.to_frame().lazy().select(pl.col("b").msgpack.decode(pl.Float64)).collect(engine="streaming")


def test_type_conflict_names_the_row():
    s = packed([1, 2, "x"], nulls={1})
    with pytest.raises(ma.DecodeError, match="row 2") as e:
        s.msgpack.decode()
    assert e.value.record == 2
    with pytest.raises(pl.exceptions.ComputeError, match="type conflict"):
        s.to_frame().select(pl.col("b").msgpack.decode(pl.Int64))


def test_bad_arguments():
    df = pl.DataFrame({"b": [mn.packb(1)], "s": ["x"]})
    with pytest.raises(TypeError, match="needs dtype"):
        pl.col("b").msgpack.decode()
    with pytest.raises(TypeError, match="polars data type"):
        pl.col("b").msgpack.decode("int")
    # not a Binary column: an error when the query is planned
    with pytest.raises(pl.exceptions.ComputeError, match="expected binary"):
        df.lazy().select(pl.col("s").msgpack.decode(pl.Int64)).collect_schema()
    with pytest.raises(ma.DecodeError, match="Binary"):
        df["s"].msgpack.decode()


def test_encode_errors_are_not_crashes():
    # a null inside an ndarray value cannot be written as numpy
    df = pl.DataFrame({"a": [[1.0, None]]}, schema={"a": pl.Array(pl.Float32, 2)})
    with pytest.raises(pl.exceptions.ComputeError, match="null"):
        df.select(pl.col("a").msgpack.encode())
    with pytest.raises(ma.EncodeError, match="null") as e:
        df["a"].msgpack.encode()
    assert e.value.record == 0
    # dtypes the plugin is not built for: an error naming the column and its type when the query
    # is planned (not "the plugin panicked"), and Object columns are not written as their
    # pointers
    cat = pl.DataFrame({"c": ["x", "y"]}, schema={"c": pl.Categorical})
    with pytest.raises(pl.exceptions.ComputeError, match='column "c" is Categorical'):
        cat.select(pl.col("c").msgpack.encode())
    odd = {
        "Enum": pl.Series(["a"], dtype=pl.Enum(["a", "b"])),
        r"Decimal\(10, 2\)": pl.Series([1], dtype=pl.Decimal(10, 2)),
        "Int128": pl.Series([1], dtype=pl.Int128),
        "List of Int128": pl.Series([[1]], dtype=pl.List(pl.Int128)),
        'Struct whose field "a" is Categorical': pl.Series([{"a": "x"}], dtype=pl.Struct({"a": pl.Categorical})),
        "Object": pl.Series([object()], dtype=pl.Object),
    }
    for what, s in odd.items():
        frame = s.alias("c").to_frame()
        with pytest.raises(pl.exceptions.ComputeError, match=f'msgpack.encode: column "c" is {what}'):
            frame.select(pl.col("c").msgpack.encode())
        with pytest.raises(pl.exceptions.ComputeError, match=f'column "c" is {what}.*expected binary'):
            frame.lazy().select(pl.col("c").msgpack.decode(pl.Int64)).collect_schema()
    for s in (pl.Series("c", [1], dtype=pl.Int128), pl.Series("c", [1], dtype=pl.Decimal(10, 2))):
        with pytest.raises(ma.EncodeError, match="cannot write column 'c'"):
            s.msgpack.encode()
    assert mn.unpackb(cat.select(pl.col("c").cast(pl.String).msgpack.encode()).item(0, 0), raw=False) == "x"
    assert [mn.unpackb(b, raw=False) for b in cat["c"].msgpack.encode()] == ["x", "y"]


def test_polars_version_gate(monkeypatch):
    expressions._check_plugin_polars("2.0.0")
    expressions._check_plugin_polars("2.1.9")
    for v in ["1.44.2", "2.2.0", "3.0.0"]:
        with pytest.raises(RuntimeError, match=r"polars >=2.0,<2.2"):
            expressions._check_plugin_polars(v)
    monkeypatch.setenv(expressions.ALLOW_ENV, "1")
    expressions._check_plugin_polars("2.2.0")
    monkeypatch.delenv(expressions.ALLOW_ENV)
    monkeypatch.setattr(pl, "__version__", "2.2.0")
    with pytest.raises(RuntimeError, match="Series methods"):
        pl.col("b").msgpack.encode()
    # the Series methods do not depend on the plugin
    assert pl.Series([mn.packb(1)]).msgpack.decode().to_list() == [1]


def test_docstring_examples():
    result = doctest.testmod(expressions, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5
    assert result.failed == 0


# ---- property: decode(encode(x)) == x over random columns ---------------------------------------------

DTYPES = [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64, pl.Float32, pl.Float64, pl.Boolean, pl.String, pl.Binary]


@st.composite
def series(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 30))
    if dtype in (pl.Float32, pl.Float64):
        item = st.floats(width=32 if dtype == pl.Float32 else 64, allow_nan=False)
    elif dtype == pl.Boolean:
        item = st.booleans()
    elif dtype == pl.String:
        item = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
    elif dtype == pl.Binary:
        item = st.binary(max_size=6)
    else:
        info = np.iinfo(str(dtype).lower())
        item = st.integers(int(info.min), int(info.max))
    shape = draw(st.sampled_from(["scalar", "array", "list"]))
    if shape != "scalar" and dtype in (pl.Boolean, pl.String, pl.Binary):
        shape = "scalar"
    if shape == "array":
        k = draw(st.integers(1, 3))
        item, dtype = st.lists(item, min_size=k, max_size=k), pl.Array(dtype, k)
    elif shape == "list":
        item, dtype = st.lists(item, max_size=3), pl.List(dtype)
    values = draw(st.lists(st.one_of(st.none(), item), min_size=n, max_size=n))
    return pl.Series("x", values, dtype=dtype)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(series())
def test_round_trip_property(s):
    df = s.to_frame()
    out = df.select(pl.col("x").msgpack.encode().msgpack.decode(s.dtype))
    assert_frame_equal(out, df)
    assert_series_equal(s.msgpack.encode().msgpack.decode(s.dtype), s)


def test_dtypes_numpy_has_no_value_for_are_refused_clearly():
    """Categorical/Enum/Decimal targets and Time/Object sources: a TypeError or a Polars error
    with a message, never a crash or made-up bytes."""
    df = pl.DataFrame({"b": [mn.packb("a")]})
    for dtype in [pl.Categorical, pl.Enum(["a"]), pl.Decimal(10, 2), pl.List(pl.Categorical), pl.Object]:
        with pytest.raises(TypeError, match="cannot produce"):
            df.select(pl.col("b").msgpack.decode(dtype))
        with pytest.raises(TypeError, match="cannot produce"):
            df["b"].msgpack.decode(dtype)
    times = pl.DataFrame({"t": [dt.time(1, 2)]})
    with pytest.raises(pl.exceptions.PolarsError, match="numpy has no dtype"):
        times.select(pl.col("t").msgpack.encode())
    with pytest.raises(TypeError, match="Object column"):
        pl.Series("x", [object()], dtype=pl.Object).msgpack.encode()


@pytest.mark.parametrize("tz", ["UTC", "Asia/Tokyo"])
def test_zoned_datetimes_decode_to_their_zone(tz):
    """datetime64 holds UTC instants: decoding into a zoned Datetime only labels them."""
    s = pl.Series("t", [dt.datetime(2024, 5, 1, 12, 30), None], dtype=pl.Datetime("us", tz))
    blobs = s.to_frame().select(pl.col("t").msgpack.encode())
    utc = s.dt.convert_time_zone("UTC").dt.replace_time_zone(None)[0]
    assert mn.unpackb(blobs.item(0, 0)) == np.datetime64(utc, "us")
    back = blobs.select(pl.col("t").msgpack.decode(pl.Datetime("us", tz))).to_series()
    assert_series_equal(back, s)
    assert_series_equal(blobs["t"].msgpack.decode(pl.Datetime("us", tz)), s)


def test_a_given_dtype_resolves_conflicts_whatever_the_chunks():
    """Rows of several dtypes that the target holds decode the same in one chunk or several, in
    the Series method and the expression (SPEC 3: an override resolves a conflict)."""
    a, b = mn.packb(np.arange(2, dtype="<i4")), mn.packb(np.arange(2, dtype=">i8") * 3)
    dtype = pl.Array(pl.Int64, 2)
    want = pl.Series("b", [[0, 1], [0, 1], [0, 3], None, [0, 3]], dtype=dtype)
    one = pl.Series("b", [a, a, b, None, b])
    two = pl.concat([pl.Series("b", [a, a]), pl.Series("b", [b, None, b])], rechunk=False)
    assert two.n_chunks() == 2
    for s in (one, two):
        assert_series_equal(s.msgpack.decode(dtype), want)
        assert_series_equal(s.to_frame().select(pl.col("b").msgpack.decode(dtype)).to_series(), want)
    mixed = pl.Series("b", [mn.packb(1), mn.packb("x"), mn.packb(2.5)])
    assert mixed.msgpack.decode(pl.String).to_list() == ["1", "x", "2.5"]
    with pytest.raises(ma.DecodeError, match="type conflict"):
        mixed.msgpack.decode()


def test_seconds_past_the_range_of_milliseconds_are_an_error_on_every_path():
    # Polars has no seconds: a <M8[s] value is given as milliseconds, and one whose milliseconds
    # overflow is an error on every path, never a null
    import struct

    ok = {"nd": True, "type": "<M8[s]", "kind": b"", "shape": [1], "data": struct.pack("<q", 1_700_000_000)}
    bad = dict(ok, data=struct.pack("<q", -(2**63) + 1))
    good = msgpack.packb({"v": ok}, use_bin_type=True)
    data = msgpack.packb({"v": bad}, use_bin_type=True)
    assert ma.read_msgpack(good * 2)["v"].dtype == pl.Array(pl.Datetime("ms"), 1)
    assert ma.read_msgpack(good * 2)["v"].to_list() == [[dt.datetime(2023, 11, 14, 22, 13, 20)]] * 2
    with pytest.raises(ma.DecodeError) as e:
        ma.read_msgpack(good + data)
    assert e.value.column == "v"
    with pytest.raises(ma.DecodeError) as e:
        pl.Series("x", [good, data]).msgpack.decode()
    assert e.value.record == 1
