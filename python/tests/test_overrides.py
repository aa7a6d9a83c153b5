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


@pytest.mark.parametrize("shape", [(5,), (5, 2)])
def test_a_bare_ndarray_takes_a_number_override_exactly_and_refuses_a_string(shape):
    arr = (np.arange(np.prod(shape), dtype=np.int16) * 50).reshape(shape)
    data = mn.packb(arr)
    wide = pl.Array(pl.Int64, shape[1:]) if len(shape) > 1 else pl.Int64
    got = ma.read_msgpack(data, schema_overrides={"value": wide})
    assert got.schema["value"] == wide and got["value"].to_list() == arr.astype(np.int64).tolist()
    lists = ma.read_msgpack(data, schema_overrides={"value": pl.List(pl.Float32)}) if len(shape) > 1 else None
    if lists is not None:
        assert lists["value"].to_list() == arr.astype(np.float32).tolist()
    # 250 does not fit an int8: an error naming it, never a wrapped value
    narrow = pl.Array(pl.Int8, shape[1:]) if len(shape) > 1 else pl.Int8
    with pytest.raises(ma.DecodeError, match="does not fit"):
        ma.read_msgpack(data, schema_overrides={"value": narrow})
    with pytest.raises(ma.DecodeError, match="bare ndarray of .* cannot be read as Utf8"):
        ma.read_msgpack(data, schema_overrides={"value": pl.String})


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


# A schema inferred from other rows (infer_rows) or another file (a scan's first) is not the
# caller's: a value of another kind is the conflict a read of every row would report, never
# converted into the type the first rows happened to give.
LATER = [
    ([{"x": 1}, {"x": True}], "Int64, found bool"),
    ([{"x": "a"}, {"x": 5}], "str, found int"),
    ([{"x": np.array([0.5], "f4")}, {"x": np.array([1e300])}], "<f8 in a column of <f4"),
    ([{"x": np.array([0.5], "f4")}, {"x": np.array([True])}], "|b1 in a column of <f4"),
    ([{"x": b"a"}, {"x": "a"}], "bin, found str"),
]


@pytest.mark.parametrize("rows, says", LATER)
def test_rows_past_infer_rows_are_never_converted(rows, says):
    data = dump(rows)
    with pytest.raises(ma.DecodeError):
        ma.read_msgpack(data)  # what a read of every row says
    with pytest.raises(ma.DecodeError, match=says) as e:
        ma.read_msgpack(data, infer_rows=1)
    assert e.value.record == 1 and e.value.column == "x"


@pytest.mark.parametrize("big", [2**53, 2**53 + 1, -(2**63), 2**63 - 1, 2**64 - 1, 10**17 + 3, 123])
@pytest.mark.parametrize("typed", [None, pl.Float64, pl.Float32])
def test_ints_become_floats_only_where_a_float_holds_them_exactly(big, typed):
    # ints beside floats widen to Float64: an int no float64 holds (2**53 + 1, 2**64 - 1) is an
    # error naming the way out, never rounded silently; a float type the caller gives rounds them
    # as numpy does
    import io
    import msgpack

    rows = [{"x": 0.5}, {"x": big}]
    data = b"".join(msgpack.packb(r) for r in rows)
    as_float = np.float64(big) if typed in (None, pl.Float64) else np.float32(big)
    kw = {} if typed is None else {"schema_overrides": {"x": typed}}
    if typed is not None:
        assert ma.read_msgpack(data, **kw)["x"].to_list() == [0.5, float(as_float)]
    elif int(as_float) == big:
        assert ma.read_msgpack(data, **kw)["x"].to_list() == [0.5, float(as_float)]
    else:
        with pytest.raises(ma.DecodeError, match="no float holds exactly") as e:
            ma.read_msgpack(data, **kw)
        assert e.value.column == "x" and e.value.record == 1
        # both ways out are named
        assert "String" in str(e.value) and "Float64 rounds" in str(e.value)
    got = ma.read_msgpack(data, schema_overrides={"x": pl.String})["x"].to_list()
    assert got == [str(r["x"]) for r in msgpack.Unpacker(io.BytesIO(data))]


def test_rows_past_infer_rows_take_only_what_their_column_holds_exactly():
    # a read of every row widens ints and floats to Float64; the first row's Int64 cannot hold 2.5
    data = dump([{"x": 1}, {"x": 2.5}])
    assert ma.read_msgpack(data)["x"].to_list() == [1.0, 2.5]
    with pytest.raises(ma.DecodeError, match="Int64, found f64"):
        ma.read_msgpack(data, infer_rows=1)
    # the other way round, the first row's Float64 holds an int as a read of every row does
    data = dump([{"x": 0.5}, {"x": 2}])
    assert ma.read_msgpack(data, infer_rows=1).equals(ma.read_msgpack(data))


@pytest.mark.parametrize("rows, says", LATER)
def test_a_scans_later_files_are_never_converted(tmp_path, rows, says):
    (tmp_path / "a.msgpack").write_bytes(dump(rows[:1]))
    (tmp_path / "b.msgpack").write_bytes(dump(rows[1:]))
    with pytest.raises(ma.DecodeError, match=says) as e:
        ma.scan_msgpack(str(tmp_path / "*.msgpack")).collect()
    assert "b.msgpack" in str(e.value)


def test_a_number_an_override_cannot_hold_is_an_error_not_infinity():
    with pytest.raises(ma.DecodeError, match="Float32"):
        ma.read_msgpack(dump([{"x": 1e300}]), schema_overrides={"x": pl.Float32})
    with pytest.raises(ma.DecodeError, match="Float16"):
        ma.read_msgpack(dump([{"x": 70000}]), schema_overrides={"x": pl.Float16})
    with pytest.raises(ma.DecodeError, match="does not fit <f4"):
        ma.read_msgpack(dump([{"x": np.array([1e300])}] * 2), schema_overrides={"x": pl.Array(pl.Float32, 1)})
    # a columns map: decoded as inferred, then cast
    with pytest.raises(ma.DecodeError, match="infinite"):
        ma.read_msgpack(mn.packb({"x": np.array([1e300, 1.0])}), schema_overrides={"x": pl.Float32})
    # rounding is not overflowing, and infinities stay
    got = ma.read_msgpack(dump([{"x": 0.1}, {"x": float("inf")}]), schema_overrides={"x": pl.Float32})
    assert got["x"].to_list() == [np.float32(0.1).item(), float("inf")]


def test_a_timestamp_an_override_would_cut_is_an_error():
    import msgpack

    ts = msgpack.Timestamp(1_700_000_000, 123_456_789)
    data = msgpack.packb({"t": ts}) + msgpack.packb({"t": msgpack.Timestamp(1_700_000_000, 5_000_000)})
    with pytest.raises(ma.DecodeError, match="123456789 ns .* exactly") as e:
        ma.read_msgpack(data, schema_overrides={"t": pl.Datetime("ms", "UTC")})
    assert e.value.record == 0
    got = ma.read_msgpack(data, schema_overrides={"t": pl.Datetime("ns", "UTC")})
    assert got["t"].dt.epoch("ns").to_list() == [ts.to_unix_nano(), 1_700_000_000_005_000_000]


@pytest.mark.parametrize("kind", ["U", "S"])
def test_wider_strings_past_the_rows_typed_widen_the_column(tmp_path, kind):
    # strings are one column at the widest width a read of every row sees: rows past infer_rows
    # and later files of a scan widen it the same way (they were refused)
    def arr(words):
        a = np.array(words, dtype=kind)
        return a if kind == "U" else np.array([w.encode() for w in words], dtype=kind)

    rows = [{"x": arr(["ab", "c"]), "k": 0}, {"x": None, "k": 1}, {"x": arr(["hello", "wörld!"] if kind == "U" else ["hello", "world!"]), "k": 2}, {"x": arr(["z", ""]), "k": 3}]
    data = dump(rows)
    want = [None if r["x"] is None else [mn.unpackb(mn.packb(r["x"]))[i].item() for i in range(2)] for r in rows]
    full = ma.read_msgpack(data)
    assert full["x"].to_list() == want
    assert ma.read_msgpack(data, infer_rows=1).equals(full)
    assert ma.read_msgpack(data, infer_rows=1, batch_size=1).equals(full)
    for i, r in enumerate(rows):
        (tmp_path / f"{i}.msgpack").write_bytes(dump([r]))
    assert ma.scan_msgpack(str(tmp_path / "*.msgpack")).collect().equals(full)


@pytest.mark.parametrize(
    "values, dtype, unified",
    [
        ([np.int64(3), 4, np.int64(-5), None], pl.Int64, True),
        ([np.float64(0.5), 0.25, 7, np.float32(1.5).item()], pl.Float64, True),
        ([np.bool_(True), False], pl.Boolean, True),
        ([np.array(2.5), 1.5], pl.Float64, True),
        ([np.float32(0.5), 0.25, 7], pl.Float64, False),
        ([np.float32(0.5), 0.25], pl.Float32, False),
        ([np.uint8(200), 3], pl.Int16, False),
    ],
    ids=["np.int64-int", "np.float64-float-int", "np.bool_-bool", "0d-float", "np.float32-float", "np.float32-float-f32", "np.uint8-int"],
)
def test_numpy_scalars_beside_plain_values(values, dtype, unified):
    # what labels from np.argmax next to plain ints look like. Where the numpy dtype's column is
    # the plain values' (np.int64 and int: Int64) they are one column; otherwise a conflict that
    # an override resolves, each plain value converted exactly
    data = dump([{"x": v} for v in values])
    want = [None if o["x"] is None else np.asarray(o["x"]).item() for o in mn.Unpacker(__import__("io").BytesIO(data), raw=False)]
    if unified:
        got = ma.read_msgpack(data)
        assert got.schema["x"] == dtype and got["x"].to_list() == want
        assert ma.read_msgpack(data, infer_rows=1).equals(got)
        # written back, every row as the numpy dtype: msgpack_numpy reads the same values
        out = mn.Unpacker(__import__("io").BytesIO(ma.write_msgpack(ma.read_arrow(data), None, layout="auto")), raw=False)
        assert [None if o["x"] is None else np.asarray(o["x"]).item() for o in out] == want
    else:
        with pytest.raises(ma.DecodeError, match="numpy .* and|and numpy"):
            ma.read_msgpack(data)
    got = ma.read_msgpack(data, schema_overrides={"x": dtype})
    assert got.schema["x"] == dtype and got["x"].to_list() == want
    with pytest.raises(ma.DecodeError, match="does not fit"):
        ma.read_msgpack(dump([{"x": np.int64(3)}, {"x": 2**40}]), schema_overrides={"x": pl.Int32})


def test_categorical_and_enum_as_polars_readers_take_them():
    import msgpack

    values = ["a", "b", "a", None, "c"]
    data = b"".join(msgpack.packb({"s": v, "n": i}) for i, v in enumerate(values))
    want = pl.Series("s", values)
    enum = pl.Enum(["a", "b", "c"])
    for types in ({"s": pl.Categorical}, {"s": enum}):
        dtype = types["s"]() if isinstance(types["s"], type) else types["s"]
        for got in (
            ma.read_msgpack(data, schema_overrides=types),
            ma.scan_msgpack(data, schema_overrides=types).collect(),
            ma.read_msgpack([data, data], schema_overrides=types).head(5),
        ):
            assert got.schema["s"] == dtype
            assert got["s"].cast(pl.String).to_list() == want.to_list()
        lf = ma.scan_msgpack(data, schema={"s": dtype, "n": pl.Int32})
        assert lf.collect_schema() == pl.Schema({"s": dtype, "n": pl.Int32})
        assert lf.filter(pl.col("s") == "a").collect()["n"].to_list() == [0, 2]
    # as pl.read_ndjson: a value outside an Enum's categories is an error
    with pytest.raises(pl.exceptions.InvalidOperationError):
        ma.read_msgpack(data, schema_overrides={"s": pl.Enum(["a", "b"])})


def test_a_struct_override_lacking_a_field_says_so():
    data = b"".join(mn.packb({"id": i, "nested": {"a": i, "b": str(i)}}) for i in range(3))
    with pytest.raises(ma.DecodeError, match="schema_overrides") as e:
        ma.read_msgpack(data, schema_overrides={"nested": pl.Struct({"a": pl.Int32})})
    assert e.value.column == "nested" and '"b"' in str(e.value)
    full = pl.Struct({"a": pl.Int32, "b": pl.String})
    assert ma.read_msgpack(data, schema_overrides={"nested": full}).schema["nested"] == full
