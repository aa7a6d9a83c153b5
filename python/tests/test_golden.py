"""The golden corpus through the Python API.

SPEC 4.1: every good file reads as msgpack_numpy decodes it (the expected `.arrow` tables are
derived from msgpack_numpy's own decode), floats bit for bit.  SPEC 4.2: byte-exact write back,
through Arrow (`read_arrow`, which keeps the numpy dtypes in field metadata) for every byte_exact
case, and through a Polars DataFrame where the Polars dtype states the numpy dtype.  SPEC 6: bad
files raise DecodeError with the position.
"""

from __future__ import annotations

import io
import re

import polars as pl
import pyarrow as pa
import pyarrow.ipc
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma
from conftest import golden_dir, manifest

GOOD = manifest()["good"]
BAD = manifest()["bad"]
GOOD_IDS = [c["name"] for c in GOOD]
BAD_IDS = [c["name"] for c in BAD]


def good_path(name: str) -> str:
    return str(golden_dir() / "good" / f"{name}.msgpack")


def expected(name: str) -> pa.Table:
    with pa.ipc.open_file(golden_dir() / "good" / f"{name}.arrow") as f:
        return f.read_all()


# ---- normalising (pyarrow names and flags list items its own way; metadata is ours) ----------


def norm_type(t: pa.DataType, bits: bool = False) -> pa.DataType:
    """Every field nullable, list items named `item`, no metadata, extension types as storage;
    with `bits`, floats as unsigned ints of their width (to compare NaN payloads)."""
    if isinstance(t, pa.ExtensionType):
        return norm_type(t.storage_type, bits)
    if bits and pa.types.is_floating(t):
        return {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[t.bit_width]
    if pa.types.is_fixed_size_list(t):
        return pa.list_(pa.field("item", norm_type(t.value_type, bits)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field("item", norm_type(t.value_type, bits)))
    if pa.types.is_list(t):
        return pa.list_(pa.field("item", norm_type(t.value_type, bits)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, norm_type(t.field(i).type, bits)) for i in range(t.num_fields)])
    return t


def as_bits(col: pa.ChunkedArray) -> pa.Array:
    arr = col.combine_chunks()
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    return arr.view(norm_type(arr.type, bits=True))


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    assert got.num_rows == want.num_rows
    assert got.column_names == want.column_names
    for name in want.column_names:
        g, w = got[name], want[name]
        assert norm_type(g.type) == norm_type(w.type), f"{name}: {g.type} != {w.type}"
        assert as_bits(g).equals(as_bits(w)), f"{name}: values differ\n got {g}\nwant {w}"


def polars_safe(t: pa.Table) -> pa.Table:
    """The expected table as read_msgpack hands it to Polars: Array width 0 -> List."""

    def fix(t: pa.DataType) -> pa.DataType:
        if pa.types.is_fixed_size_list(t):
            inner = pa.field("item", fix(t.value_type))
            return pa.list_(inner) if t.list_size == 0 else pa.list_(inner, t.list_size)
        if pa.types.is_list(t):
            return pa.list_(pa.field("item", fix(t.value_type)))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(t.field(i).name, fix(t.field(i).type)) for i in range(t.num_fields)])
        return t

    return t.cast(pa.schema([pa.field(f.name, fix(f.type)) for f in t.schema]))


# ---- SPEC 4.1 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", GOOD, ids=GOOD_IDS)
def test_read_arrow_equals_python_decode(case):
    stream = ma.read_arrow(good_path(case["name"]), layout=case["layout"])
    assert_tables_equal(pa.table(stream), expected(case["name"]))
    if case["layout"] == "auto":
        assert stream.layout == case["auto_layout"]


@pytest.mark.parametrize("case", GOOD, ids=GOOD_IDS)
def test_read_msgpack_equals_python_decode(case):
    df = ma.read_msgpack(good_path(case["name"]), layout=case["layout"])
    want = pl.DataFrame(polars_safe(expected(case["name"])))
    assert_frame_equal(df, want, check_exact=True)


@pytest.mark.parametrize("case", GOOD, ids=GOOD_IDS)
def test_small_batches_same_table(case):
    got = pa.table(ma.read_arrow(good_path(case["name"]), layout=case["layout"], batch_size=3))
    assert_tables_equal(got, expected(case["name"]))


# ---- SPEC 4.2 -----------------------------------------------------------------------------------

BYTE_EXACT = [c for c in GOOD if c["byte_exact"]]


@pytest.mark.parametrize("case", BYTE_EXACT, ids=[c["name"] for c in BYTE_EXACT])
def test_byte_exact_through_arrow(case):
    path = good_path(case["name"])
    stream = ma.read_arrow(path, layout=case["layout"])
    # layout="auto" uses the layout the reader recorded in the schema metadata
    assert ma.write_msgpack(stream, None, layout="auto") == open(path, "rb").read()


_NATIVE = re.compile(r"^[<|=][biuf]\d+$")


def polars_states_dtype(schema: pa.Schema) -> bool:
    """SPEC 4.2: the Polars dtype states the numpy dtype exactly: native-order numerics, bool,
    str, bin, Array/List/Struct of those (no big-endian, <U widths, complex, datetime, numpy
    scalars), and rows that sat in a stream (a top-level array container is not a dtype).
    (The writer's choices where the dtype is silent are tested on their own.)"""
    if (schema.metadata or {}).get(b"msgpack_arrow.container") != b"stream":
        return False
    # a `columns` value that was a plain list of numbers: a DataFrame's numeric column is written
    # as an ndarray (what msgpack_numpy users want), and nothing in its dtype says "list"
    if (schema.metadata or {}).get(b"msgpack_arrow.layout") == b"columns" and any(
        b"msgpack_numpy.kind" not in (f.metadata or {})
        and not (pa.types.is_string(f.type) or pa.types.is_binary(f.type))
        for f in schema
    ):
        return False

    columns = (schema.metadata or {}).get(b"msgpack_arrow.layout") == b"columns"

    def ok(f: pa.Field, top: bool = True) -> bool:
        md = f.metadata or {}
        # a bin key, a list in a columns map: only field metadata says so, which Polars drops
        if b"msgpack_numpy.key" in md or b"msgpack_arrow.column" in md:
            return False
        dt, kind = md.get(b"msgpack_numpy.dtype"), md.get(b"msgpack_numpy.kind")
        if dt is not None and not _NATIVE.match(dt.decode()):
            return False
        if kind not in (None, b"ndarray"):
            return False
        t = f.type
        listlike = pa.types.is_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t)
        # 0-d ndarrays: a plain dtype (rows of a `columns` value are its axis 0, an ndarray again)
        if kind == b"ndarray" and not listlike and not (columns and top):
            return False
        if listlike:
            return ok(t.value_field, False) and not (pa.types.is_fixed_size_list(t) and t.list_size == 0)
        if pa.types.is_struct(t):
            return all(ok(t.field(i), False) for i in range(t.num_fields))
        return True

    return all(ok(f) for f in schema)


# A lone map that auto reads as a `columns` map, read as one record: written back from a
# DataFrame (no container metadata) it is wrapped in a one-element array, so that auto reads it
# as that one record again (test_one_row_frame_reads_back_as_one_record); through Arrow it
# stays byte-exact.
POLARS_EXACT = [
    c
    for c in BYTE_EXACT
    if polars_states_dtype(pa.schema(ma.read_arrow(good_path(c["name"]), layout=c["layout"])))
    and not (c["layout"] == "records" and c["auto_layout"] == "columns")
]


def test_one_row_frame_reads_back_as_one_record():
    for df in [
        pl.DataFrame({"a": pl.Series([[1, 2]], dtype=pl.Array(pl.Int32, 2))}),
        pl.DataFrame({"a": [[1, 2]], "b": [[3, 4]]}),
        pl.DataFrame({"a": [1], "b": ["x"]}),
    ]:
        data = ma.write_msgpack(df, None)
        assert_frame_equal(ma.read_msgpack(data), df)
        assert_frame_equal(ma.read_msgpack(data, layout="records"), df)


def test_polars_exact_cases_exist():
    # the selection above must not silently become empty
    assert len(POLARS_EXACT) >= 5, [c["name"] for c in POLARS_EXACT]


@pytest.mark.parametrize("case", POLARS_EXACT, ids=[c["name"] for c in POLARS_EXACT])
def test_byte_exact_through_polars(case):
    path = good_path(case["name"])
    layout = ma.read_arrow(path, layout=case["layout"]).layout
    df = ma.read_msgpack(path, layout=case["layout"])
    assert ma.write_msgpack(df, None, layout=layout) == open(path, "rb").read()


def _polars_cannot_hold(schema: pa.Schema, path: str) -> str | None:
    """Why a DataFrame cannot give this file back even with the numpy extension, or None."""
    if not len(schema) and open(path, "rb").read():
        return "no columns (a top-level []): a DataFrame without columns has nowhere to keep the layout"

    def width0(t: pa.DataType, in_struct: bool = False) -> bool:
        if pa.types.is_fixed_size_list(t):
            return (in_struct and t.list_size == 0) or width0(t.value_type, in_struct)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return width0(t.value_type, in_struct)
        if pa.types.is_struct(t):
            return any(width0(t.field(i).type, True) for i in range(t.num_fields))
        return False

    if any(width0(f.type) for f in schema):
        return "a zero-length sub-array of a structured dtype: Polars has no width-0 Array"
    return None


EXTENSION_EXACT = [
    c
    for c in BYTE_EXACT
    if _polars_cannot_hold(pa.schema(ma.read_arrow(good_path(c["name"]), layout=c["layout"])), good_path(c["name"]))
    is None
]


def test_extension_exact_covers_more_than_plain_polars():
    names = {c["name"] for c in EXTENSION_EXACT}
    assert {c["name"] for c in POLARS_EXACT} <= names
    assert len(EXTENSION_EXACT) >= len(BYTE_EXACT) - 1, sorted({c["name"] for c in BYTE_EXACT} - names)


@pytest.mark.parametrize("case", EXTENSION_EXACT, ids=[c["name"] for c in EXTENSION_EXACT])
def test_byte_exact_through_polars_with_the_numpy_extension(case):
    """numpy_types="extension": what Polars dtypes cannot state rides in an extension type, and
    write_msgpack's defaults give the file back (its layout too)."""
    path = good_path(case["name"])
    df = ma.read_msgpack(path, layout=case["layout"], numpy_types="extension")
    assert ma.write_msgpack(df, None) == open(path, "rb").read()
    # the storage is the column a plain read gives
    plain = ma.read_msgpack(path, layout=case["layout"])
    storage = df.select(
        pl.col(n).ext.storage() if isinstance(t, pl.Extension) else pl.col(n) for n, t in df.schema.items()
    )
    assert_frame_equal(storage, plain)


def test_numpy_extension_columns_survive_polars_operations():
    import msgpack_numpy as mn
    import numpy as np

    data = b"".join(
        mn.packb({"id": i, "big": (np.arange(3) + i).astype(">i4"), "s": np.array("ab" * i, dtype="<U6")})
        for i in range(4)
    )
    df = ma.read_msgpack(data, numpy_types="extension")
    assert isinstance(df.schema["big"], pl.Extension) and df.schema["big"].ext_name() == "msgpack_arrow.numpy"
    assert df.schema["id"] == pl.Int64  # nothing to keep: a plain column
    picked = df.filter(pl.col("id") % 2 == 1).sort("id", descending=True)
    rows = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(picked, None)), raw=False))
    assert [r["id"] for r in rows] == [3, 1]
    assert rows[0]["big"].dtype == np.dtype(">i4") and rows[0]["s"].dtype == np.dtype("<U6")
    np.testing.assert_array_equal(rows[1]["big"], np.arange(3) + 1)
    # without the extension, the byte order and width are lost (the Polars dtypes cannot say them)
    plain = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(ma.read_msgpack(data), None)), raw=False))
    assert plain[0]["big"].dtype == np.dtype("<i4")
    # a scan keeps them too, and a sink writes them back
    lf = ma.scan_msgpack(data, numpy_types="extension")
    buf = io.BytesIO()
    ma.sink_msgpack(lf.filter(pl.col("id") >= 0), buf)
    assert buf.getvalue() == data
    with pytest.raises(ValueError, match="numpy_types"):
        ma.read_msgpack(data, numpy_types="exact")


# ---- SPEC 6 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", BAD, ids=BAD_IDS)
def test_bad_input_raises_positioned_decode_error(case):
    path = str(golden_dir() / "bad" / f"{case['name']}.msgpack")
    with pytest.raises(ma.DecodeError) as info:
        ma.read_msgpack(path, layout=case["layout"])
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, ma.MsgpackArrowError)
    assert str(e).startswith(case["error"]), str(e)
    assert isinstance(e.offset, int), f"no offset: {e}"
    want = case["offset"]
    if want is not None:
        m = re.match(r"truncated input: need \d+ bytes, (\d+) left", str(e))
        if m:  # reported at the start of the cut value: it plus what is left is the end of input
            assert e.offset + int(m[1]) == want, str(e)
        else:
            assert e.offset == want, str(e)
    # the same from bytes and through scan
    data = open(path, "rb").read()
    with pytest.raises(ma.DecodeError):
        ma.read_msgpack(data, layout=case["layout"])
    with pytest.raises(ma.DecodeError):
        ma.scan_msgpack(data, layout=case["layout"]).collect()


def test_numpy_extension_scan_of_several_files_keeps_one_schema(tmp_path):
    # the file metadata differs between the files (keys absent in the second), and projections
    # leave the wrapped column out or reorder: every batch still has the scan's declared dtypes
    import msgpack_numpy as mn
    import numpy as np

    def rec(i, x=True):
        return {"id": i, **({"x": 1.0} if x else {}), "big": (np.arange(3) + i).astype(">i4")}

    (tmp_path / "a.msgpack").write_bytes(b"".join(mn.packb(rec(i)) for i in range(3)))
    (tmp_path / "b.msgpack").write_bytes(b"".join(mn.packb(rec(i, x=i > 0)) for i in range(3)))
    lf = ma.scan_msgpack(str(tmp_path / "*.msgpack"), numpy_types="extension")
    assert lf.select("big", "id").collect().shape == (6, 2)
    assert lf.select("x", "id").collect()["x"].null_count() == 1
    df = lf.collect()
    assert df.schema == lf.collect_schema()
    back = ma.read_msgpack(ma.write_msgpack(df, None), numpy_types="extension")
    assert back.schema["big"] == df.schema["big"]
