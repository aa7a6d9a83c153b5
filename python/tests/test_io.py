"""Sources and targets: paths, bytes-likes, file objects, compression, atomic writes; options."""

from __future__ import annotations

import gzip
import io
import os
import pathlib

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma

DATA = b"".join(mn.packb({"id": i, "v": np.full(3, i, dtype="<f8"), "s": str(i)}) for i in range(50))


@pytest.fixture()
def want():
    return pl.DataFrame(
        {"id": range(50), "v": [[float(i)] * 3 for i in range(50)], "s": [str(i) for i in range(50)]},
        schema={"id": pl.Int64, "v": pl.Array(pl.Float64, 3), "s": pl.String},
    )


def test_sources(tmp_path, want):
    p = tmp_path / "d.msgpack"
    p.write_bytes(DATA)
    sources = [
        str(p),
        p,
        DATA,
        bytearray(DATA),
        memoryview(DATA),
        memoryview(DATA)[0:],
        io.BytesIO(DATA),
        np.frombuffer(DATA, dtype=np.uint8),
    ]
    for s in sources:
        assert_frame_equal(ma.read_msgpack(s), want)
    with open(p, "rb") as f:
        assert_frame_equal(ma.read_msgpack(f), want)
    with open(p, "rb", buffering=0) as f:
        assert_frame_equal(ma.read_msgpack(f), want)


def test_non_byte_buffers_are_copied(want):
    # a memoryview of another item format, and a non-contiguous one
    as_u4 = np.frombuffer(DATA + b"\0" * (-len(DATA) % 4), dtype="<u4")
    got = ma.read_msgpack(memoryview(as_u4).cast("B")[: len(DATA)])
    assert_frame_equal(got, want)


def test_bytearray_is_copied(want):
    buf = bytearray(DATA)
    df = ma.read_msgpack(buf, layout="records")
    buf[:] = b"\0" * len(buf)  # the DataFrame must not see this
    assert_frame_equal(df, want)


def test_bytes_source_outlives_the_caller(want):
    def make():
        return ma.read_arrow(bytes(DATA))  # the only reference to the bytes is inside the stream

    stream = make()
    import gc

    gc.collect()
    assert_frame_equal(pl.DataFrame(stream), want)


def test_compressed_path(tmp_path, want):
    p = tmp_path / "d.msgpack.gz"
    p.write_bytes(gzip.compress(DATA))
    assert_frame_equal(ma.read_msgpack(p), want)
    assert_frame_equal(ma.scan_msgpack(p).collect(), want)


def test_compressed_rows_are_typed_from_every_row_as_the_plain_file(tmp_path):
    # msgpack_numpy records whose types settle past the first 1,000 rows: an optional field nil
    # until row 1,500, an int column with a float at row 2,000, arrays whose shape changes at 2,500
    rows = [
        {
            "n": i if i != 2000 else 2000.5,
            "opt": None if i < 1500 else f"s{i}",
            "a": np.arange(2 if i < 2500 else 3, dtype="<f4") + i,
        }
        for i in range(3000)
    ]
    data = b"".join(mn.packb(r) for r in rows)
    plain = tmp_path / "rows.msgpack"
    plain.write_bytes(data)
    packed = tmp_path / "rows.msgpack.gz"
    packed.write_bytes(gzip.compress(data))
    want = ma.read_msgpack(plain)
    assert want.schema == {"n": pl.Float64, "opt": pl.String, "a": pl.List(pl.Float32)}
    decoded = [mn.unpackb(mn.packb(r)) for r in rows]
    assert want["n"].to_list() == [float(r["n"]) for r in decoded]
    assert want["opt"].to_list() == [r["opt"] for r in decoded]
    assert all(np.array_equal(np.array(g, dtype="<f4"), r["a"]) for g, r in zip(want["a"].to_list(), decoded))
    for source in (packed, gzip.compress(data)):
        assert_frame_equal(ma.read_msgpack(source), want)
        assert_frame_equal(ma.read_msgpack(source, batch_size=100), want)
        # held in part, or never (decompressed twice: once for the types, once for the rows)
        for hold in (len(data) // 3, 0):
            assert_frame_equal(ma.read_msgpack(source, hold_decompressed=hold, batch_size=500), want)
    assert_frame_equal(ma.scan_msgpack(packed).collect(), want)
    assert_frame_equal(ma.scan_msgpack(packed, hold_decompressed=0).collect(), want)
    # one pass from the first rows: the str at row 1,500 is then an error that names it
    with pytest.raises(ma.DecodeError, match='record 1500, column "opt"'):
        ma.read_msgpack(packed, infer_rows=1000)


def test_bad_sources(tmp_path):
    with pytest.raises(FileNotFoundError):
        ma.read_msgpack(tmp_path / "missing.msgpack")
    with pytest.raises(TypeError, match="binary mode"):
        ma.read_msgpack(io.StringIO("x"))
    with pytest.raises(TypeError):
        ma.read_msgpack(12)
    with pytest.raises(ValueError, match="layout"):
        ma.read_msgpack(DATA, layout="rows")
    with pytest.raises(ValueError, match="tensor"):
        ma.read_msgpack(DATA, tensor="nope")


def test_options(want):
    assert_frame_equal(ma.read_msgpack(DATA, columns=["s", "id"]), want.select("s", "id"))
    assert_frame_equal(ma.read_msgpack(DATA, columns="s"), want.select("s"))
    assert_frame_equal(ma.read_msgpack(DATA, n_rows=7, batch_size=3), want.head(7))
    assert ma.read_msgpack(DATA, n_rows=0).schema == want.schema
    df = ma.read_msgpack(DATA, batch_size=8)
    assert df.n_chunks() == 7
    assert_frame_equal(df, want)
    df = ma.read_msgpack(DATA, schema_overrides={"id": pl.Int16, "v": pl.Array(pl.Float32, 3)})
    assert df.schema == pl.Schema({"id": pl.Int16, "v": pl.Array(pl.Float32, 3), "s": pl.String})
    assert_frame_equal(df, want.cast({"id": pl.Int16, "v": pl.Array(pl.Float32, 3)}))
    with pytest.raises(ma.DecodeError, match="not in the input"):
        ma.read_msgpack(DATA, schema_overrides={"nope": pl.Int8})
    with pytest.raises(ma.DecodeError, match="column .x.") as info:
        ma.read_msgpack(mn.packb({"x": 300}), schema_overrides={"x": pl.Int8})  # never a silent null
    assert info.value.column == "x"
    # a column the input lacks: Polars' error, as scan_msgpack and pl.read_parquet raise
    for source in (DATA, [DATA]):
        with pytest.raises(pl.exceptions.ColumnNotFoundError, match="nope"):
            ma.read_msgpack(source, columns=["nope"])
    # columns by index, as Polars' readers take them
    assert_frame_equal(ma.read_msgpack(DATA, columns=[2, 0]), want.select("s", "id"))
    assert_frame_equal(ma.scan_msgpack(DATA, columns=[-1]).collect(), want.select("s"))
    with pytest.raises(IndexError):
        ma.read_msgpack(DATA, columns=[3])
    # the row index numbers the input's rows, for one source as for a list (and a scan's slice)
    for source in (DATA, [DATA]):
        got = ma.read_msgpack(source, rows=slice(5, 8), row_index_name="i")
        assert got["i"].to_list() == [5, 6, 7] and got["id"].to_list() == [5, 6, 7]


def test_an_empty_file_among_many_holds_no_rows(tmp_path):
    # a writer that just created its file: the schema comes from the other files
    (tmp_path / "a.msgpack").write_bytes(b"")
    (tmp_path / "b.msgpack").write_bytes(DATA)
    want = ma.read_msgpack(DATA)
    assert_frame_equal(ma.scan_msgpack(str(tmp_path / "*.msgpack")).collect(), want)
    assert_frame_equal(ma.read_msgpack(tmp_path), want)


def test_fixed_shape_tensor_extension():
    data = mn.packb({"emb": np.arange(24, dtype="<f4").reshape(4, 2, 3)})
    t = pa.table(ma.read_arrow(data, tensor="extension"))
    typ = t.schema.field("emb").type
    assert isinstance(typ, pa.FixedShapeTensorType)
    assert typ.shape == [2, 3] and typ.value_type == pa.float32()
    np.testing.assert_array_equal(t["emb"].combine_chunks().to_numpy_ndarray(), np.arange(24, dtype="<f4").reshape(4, 2, 3))


def _unpack_all(b: bytes) -> list:
    import msgpack

    return list(msgpack.Unpacker(io.BytesIO(b), object_hook=mn.decode, raw=False))


@pytest.mark.parametrize("dtype", ["<f4", ">i2", "<c8"])
def test_tensor_extensions_write_back_as_the_ndarrays_read(dtype):
    """Canonical tensor extension columns (tensor="extension") write back as ndarrays of their
    shapes, byte for byte what msgpack_numpy wrote: fixed shapes, ragged ones with empty rows
    (a (0, 5) row keeps its 5), top-level and inside a map, and a columns-layout file. Complex
    elements are not fixed-width numbers: they stay nested lists, and write back the same."""
    rng = np.random.default_rng(3)

    def arr(*shape):
        return (rng.random(shape) * 100).astype(dtype)

    fixed = [{"t": arr(2, 3)} for _ in range(4)]
    ragged = [{"t": arr(2, 3)}, {"t": arr(2, 0)}, {"t": arr(0, 5)}, {"t": arr(1, 4)}]
    # inside a map the (0, 5) row is left out: a nested column has no per-row shape record, so
    # an empty row's later axes are only kept at the top level
    nested = [{"m": {"t": a["t"], "k": i}} for i, a in enumerate(ragged) if a["t"].shape != (0, 5)]
    zero_axis = [{"t": arr(2, 0)} for _ in range(3)]  # a fixed shape holding no element
    for records in (fixed, ragged, nested, zero_axis):
        data = b"".join(mn.packb(r) for r in records)
        t = pa.table(ma.read_arrow(data, tensor="extension"))
        out = ma.write_msgpack(t, None)
        assert out == data
        for got, want_row in zip(_unpack_all(out), records):
            g = got["m"]["t"] if "m" in got else got["t"]
            w = want_row["m"]["t"] if "m" in want_row else want_row["t"]
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    # as nested lists (tensor="array"), the (0, 5) row inside a map keeps its 5 too: the shape is
    # recorded in the nested field's metadata; likewise in a values-layout stream of maps
    nested_all = b"".join(mn.packb({"m": {"t": a["t"], "k": i}}) for i, a in enumerate(ragged))
    assert ma.write_msgpack(pa.table(ma.read_arrow(nested_all)), None) == nested_all
    values = b"".join(mn.packb({"t": a["t"]}) for a in ragged)
    got = ma.read_arrow(values, layout="values")
    assert ma.write_msgpack(pa.table(got), None, layout="values") == values
    columns = mn.packb({"t": arr(4, 2, 3), "id": np.arange(4)})
    assert ma.write_msgpack(pa.table(ma.read_arrow(columns, tensor="extension")), None, layout="columns") == columns


def test_pyarrow_fixed_shape_tensor_writes_ndarrays_of_its_shape():
    """A table pyarrow made (no msgpack metadata) writes each row as an ndarray of the tensor's
    shape; a permuted tensor is refused rather than written transposed."""
    want = np.arange(24, dtype="<f8").reshape(4, 2, 3)
    t = pa.table({"x": pa.FixedShapeTensorArray.from_numpy_ndarray(want)})
    rows = _unpack_all(ma.write_msgpack(t, None))
    assert len(rows) == 4
    for i, r in enumerate(rows):
        assert r["x"].dtype == np.dtype("<f8") and r["x"].shape == (2, 3)
        np.testing.assert_array_equal(r["x"], want[i])
    perm = pa.fixed_shape_tensor(pa.float64(), [2, 3], permutation=[1, 0])
    storage = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype="<f8")), 6)
    with pytest.raises(Exception, match="permutation"):
        ma.write_msgpack(pa.table({"x": pa.ExtensionArray.from_storage(perm, storage)}), None)


def test_read_arrow_is_reusable(want):
    s = ma.read_arrow(DATA)
    assert s.num_rows == 50 and len(s) == 50 and s.columns == ["id", "v", "s"] and s.layout == "records"
    assert pa.table(s).num_rows == 50
    assert_frame_equal(pl.DataFrame(s), want)  # a second export works
    assert pa.schema(s).field("v").metadata[b"msgpack_numpy.dtype"] == b"<f8"
    assert "ArrowStream(50 rows" in repr(s)


# ---- writing -----------------------------------------------------------------------------------


def test_write_targets(tmp_path, want):
    p = tmp_path / "out.msgpack"
    ma.write_msgpack(want, p)
    assert p.read_bytes() == DATA
    ma.write_msgpack(want, str(p))
    assert p.read_bytes() == DATA
    buf = io.BytesIO()
    assert ma.write_msgpack(want, buf) is None
    assert buf.getvalue() == DATA
    assert ma.write_msgpack(want, None) == DATA
    assert ma.write_msgpack(want.lazy(), None) == DATA
    assert ma.write_msgpack(pa.table(want), None) == DATA  # anything with __arrow_c_stream__
    assert ma.write_msgpack(want["id"], None) == b"".join(mn.packb({"id": i}) for i in range(50))


def test_write_of_a_frame_in_chunks_is_msgpack_numpys_and_leaves_the_chunks(tmp_path):
    # columns chunked differently (id in 3 chunks, v in 2, s in 1): the frame is written in pieces
    # cut at every boundary, and the caller's frame keeps its chunks (Polars' own export rechunks it)
    n = 6000
    ids = pl.concat([pl.Series("id", range(a, a + 2000)) for a in range(0, n, 2000)], rechunk=False)
    v = pl.concat(
        [pl.Series("v", [[float(i)] * 3 for i in range(a, a + 3000)], dtype=pl.Array(pl.Float64, 3)) for a in (0, 3000)],
        rechunk=False,
    )
    df = pl.DataFrame([ids, v, pl.Series("s", [str(i) for i in range(n)])])
    chunks = df.n_chunks("all")
    assert chunks == [3, 2, 1]
    ref = b"".join(mn.packb({"id": i, "v": np.full(3, i, dtype="<f8"), "s": str(i)}) for i in range(n))
    assert ma.write_msgpack(df, None) == ref
    buf = io.BytesIO()
    ma.write_msgpack(df, buf)
    assert buf.getvalue() == ref
    ma.write_msgpack(df, tmp_path / "out.msgpack")
    assert (tmp_path / "out.msgpack").read_bytes() == ref
    assert ma.write_msgpack(df, None, layout="columns") == mn.packb(
        {"id": np.arange(n), "v": np.repeat(np.arange(n, dtype="<f8"), 3).reshape(n, 3), "s": [str(i) for i in range(n)]}
    )
    assert df.n_chunks("all") == chunks


def test_write_layouts_and_alignment(want):
    for layout in ["records", "columns"]:
        assert_frame_equal(ma.read_msgpack(ma.write_msgpack(want, None, layout=layout), layout=layout), want)
    aligned = ma.write_msgpack(want, None, aligned=True)
    assert aligned != DATA
    assert_frame_equal(ma.read_msgpack(aligned), want)
    assert list(map(int, (r["id"] for r in _unpack(aligned)))) == list(range(50))


def _unpack(b: bytes):
    import msgpack

    return list(msgpack.Unpacker(io.BytesIO(b), object_hook=mn.decode, raw=False))


def test_failed_write_keeps_previous_file(tmp_path, want):
    p = tmp_path / "out.msgpack"
    p.write_bytes(b"previous")
    bad = pl.DataFrame({"x": [1, 2]}, schema={"x": pl.Decimal(10, 2)})
    with pytest.raises(ma.MsgpackArrowError):
        ma.write_msgpack(bad, p)
    assert p.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["out.msgpack"]  # no temporary file left
    with pytest.raises(FileNotFoundError):
        ma.write_msgpack(want, tmp_path / "no" / "such" / "dir.msgpack")
    with pytest.raises(TypeError):
        ma.write_msgpack(want, 12)
    with pytest.raises(TypeError):
        ma.write_msgpack([1, 2], None)
    with pytest.raises(ValueError, match="layout"):
        ma.write_msgpack(want, None, layout="rows")


def test_pathlib_and_home_expansion(tmp_path, monkeypatch, want):
    monkeypatch.setenv("HOME", str(tmp_path))
    ma.write_msgpack(want, "~/x.msgpack")
    assert (tmp_path / "x.msgpack").read_bytes() == DATA
    assert_frame_equal(ma.read_msgpack(pathlib.Path("~/x.msgpack")), want)


def test_columns_map_reads_as_one_chunk_per_column_unless_batches_are_asked_for():
    """A ``columns`` map is decoded whole: left at their defaults, batches do not cut it, so the
    DataFrame has one chunk per column; an explicit ``batch_size`` still cuts it."""
    rng = np.random.default_rng(3)
    cols = {"a": np.arange(200_000, dtype="<i8"), "b": rng.random((200_000, 4)).astype("<f4")}
    data = mn.packb(cols)
    df = ma.read_msgpack(data)
    assert df.n_chunks("all") == [1, 1]
    np.testing.assert_array_equal(df["a"].to_numpy(), cols["a"])
    np.testing.assert_array_equal(df["b"].to_numpy(), cols["b"])
    cut = ma.read_msgpack(data, batch_size=50_000)
    assert cut.n_chunks("all") == [4, 4]
    assert cut.equals(df)


def test_large_columns_map_from_a_path_equals_numpy(tmp_path):
    """A `columns` map whose columns are larger than the step the copy goes by (4 MiB), read from
    a mapped file (its pages dropped behind the copy): big- and little-endian, an odd length, a
    2-d column; the values are msgpack_numpy's."""
    rng = np.random.default_rng(11)
    n = 1_000_003
    cols = {
        "a": (rng.random(n) * 1e6).astype(">f4"),
        "b": rng.random((n, 3)).astype("<f8"),
        "c": rng.integers(0, 255, n).astype("u1"),
        "d": rng.integers(-(2**40), 2**40, n).astype(">i8"),
    }
    path = tmp_path / "big_columns.msgpack"
    path.write_bytes(mn.packb(cols))
    df = ma.read_msgpack(str(path))
    back = mn.unpackb(path.read_bytes())
    assert df.height == n
    for k, v in back.items():
        got = df[k].to_numpy()
        assert got.shape == v.shape, k
        np.testing.assert_array_equal(got, v, err_msg=k)


def test_big_plain_file_objects_read_from_their_position_to_their_end(tmp_path):
    # over 1 MiB: mapped, not read into memory; the rest from the object's position, which is
    # left at the end as f.read() leaves it. Wrappers whose fileno() is another file's (gzip,
    # tar members) are read through read().
    import tarfile

    rng = np.random.default_rng(5)
    recs = [{"id": i, "v": rng.standard_normal(128).astype("<f4")} for i in range(3000)]
    parts = [mn.packb(r) for r in recs]
    data = b"".join(parts)
    assert len(data) > 1 << 20
    p = tmp_path / "big.msgpack"
    p.write_bytes(data)

    def expect(k):
        got = [mn.unpackb(b) for b in parts[k:]]
        return pl.DataFrame(
            {"id": [r["id"] for r in got], "v": np.stack([r["v"] for r in got])},
            schema={"id": pl.Int64, "v": pl.Array(pl.Float32, 128)},
        )

    k = 700
    start = sum(len(b) for b in parts[:k])
    for mode, buffering in [("rb", -1), ("rb", 0), ("r+b", -1)]:
        with open(p, mode, buffering=buffering) as f:
            f.seek(start)
            df = ma.read_msgpack(f)
            assert f.tell() == len(data), (mode, buffering)
        assert_frame_equal(df, expect(k), check_column_order=False)
    with open(p, "rb") as f:
        f.read(5)  # the rest of a buffered read, from its logical position
        f.seek(start)
        assert_frame_equal(ma.scan_msgpack(f).collect(), expect(k))

    # mapped: a plain file opened read-only; read(): one opened for writing too, and wrappers
    from msgpack_arrow._sources import _map_rest

    with open(p, "rb") as f, open(p, "rb", buffering=0) as g:
        assert _map_rest(f) is not None and _map_rest(g) is not None
    with open(p, "r+b") as f:
        assert _map_rest(f) is None

    gz = tmp_path / "big.msgpack.gz"
    gz.write_bytes(gzip.compress(data, compresslevel=1))
    with gzip.open(gz, "rb") as f:
        assert _map_rest(f) is None
        assert_frame_equal(ma.read_msgpack(f), expect(0))
    tar = tmp_path / "t.tar"
    with tarfile.open(tar, "w") as t:
        t.add(gz, arcname="pad.gz")  # the member is not at the start of the tar file
        t.add(p, arcname="big.msgpack")
    with tarfile.open(tar) as t, t.extractfile("big.msgpack") as f:
        assert _map_rest(f) is None
        assert_frame_equal(ma.read_msgpack(f), expect(0))


@pytest.mark.parametrize(
    "shapes",
    [[(2, 3), (2, 4)], [(3, 2, 5), (1, 2, 6), (2, 2, 5)], [(2, 4, 1), (2, 3, 1)]],
    ids=["1-d rows", "last axis varies", "first axis varies"],
)
def test_columns_chunks_whose_row_shapes_differ_read_as_lists(shapes):
    # a stream of columns maps (a batch each) whose ndarrays' rows change length between maps
    rng = np.random.default_rng(3)
    chunks = [{"a": rng.standard_normal(s).astype("<f4"), "k": np.arange(s[0])} for s in shapes]
    data = b"".join(mn.packb(c) for c in chunks)
    df = ma.read_msgpack(data, layout="columns")
    want = [row.tolist() for m in mn.Unpacker(io.BytesIO(data)) for row in m["a"]]
    depth = len(shapes[0]) - 1
    dtype = pl.Float32
    for _ in range(depth):
        dtype = pl.List(dtype)
    assert df.schema["a"] == dtype
    assert df["a"].to_list() == want
    assert df["k"].to_list() == [i for s in shapes for i in range(s[0])]


def _struct_values(a):
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in zip(a.dtype.names, e)} for e in a.tolist()]


def test_structured_arrays_whose_strings_are_sized_by_their_data_read_as_one_column():
    # np.rec.fromrecords sizes U/S fields by the data, so each record's dtype differs (<U2, <U6);
    # one record in the other byte order: one column, each value as msgpack_numpy reads it
    def rec(i, order="<"):
        a = np.rec.fromrecords([("ab" * i, i, b"x" * i)] * 2, names="name,v,b").view(np.ndarray)
        return a.astype([("name", f"{order}U{2 * i}"), ("v", f"{order}i8"), ("b", f"S{i}")])

    recs = [{"id": i, "s": rec(i)} for i in (1, 3, 2)] + [{"id": 9, "s": rec(2, ">")}]
    data = b"".join(mn.packb(r) for r in recs)
    ref = list(mn.Unpacker(io.BytesIO(data), raw=False))
    want = [_struct_values(r["s"]) for r in ref]
    for kw in ({}, {"infer_rows": 1}, {"batch_size": 1}):
        df = ma.read_msgpack(data, **kw)
        assert df["s"].to_list() == want, kw
    t = pa.table(ma.read_arrow(data))
    assert t.schema.field("s").metadata[b"msgpack_numpy.dtype"] == b'[["name","<U6"],["v","<i8"],["b","|S3"]]'
    back = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(ma.read_msgpack(data))), raw=False))
    assert [_struct_values(r["s"]) for r in back] == want
    # the columns layout: chunks of other string widths, plain and structured
    chunks = [{"t": np.array(["a" * i] * 2), "s": rec(i)} for i in (1, 3)]
    data = b"".join(mn.packb(c) for c in chunks)
    ref = list(mn.Unpacker(io.BytesIO(data), raw=False))
    df = ma.read_msgpack(data, layout="columns")
    assert df["t"].to_list() == [v for c in ref for v in c["t"].tolist()]
    assert df["s"].to_list() == [v for c in ref for v in _struct_values(c["s"])]


def test_a_compressed_file_object_is_decompressed_whatever_its_size(tmp_path):
    # a file object of 1 MiB or more is mapped by the reader (as its path is): compressed bytes
    # there must be decompressed as the path's are, from the object's position
    import gzip

    import msgpack

    rng = np.random.default_rng(4)
    recs = [{"id": i, "x": float(x), "s": rng.bytes(12).hex()} for i, x in enumerate(rng.random(60_000))]
    raw = b"".join(msgpack.packb(r) for r in recs)
    p = tmp_path / "d.msgpack.gz"
    p.write_bytes(gzip.compress(raw, compresslevel=1))
    assert p.stat().st_size > 1 << 20
    want = pl.from_dicts(recs)
    with open(p, "rb") as f:
        got = ma.read_msgpack(f)
        assert f.tell() == p.stat().st_size
    assert got.equals(want)
    # from a position: a plain header then the compressed stream
    q = tmp_path / "framed.bin"
    q.write_bytes(b"HEADER" + p.read_bytes())
    with open(q, "rb") as f:
        f.read(6)
        assert ma.read_msgpack(f).equals(want)


def test_two_zlib_streams_or_trailing_bytes_are_an_error_not_dropped():
    # Python's zlib.compress makes one stream: what follows it is not silently dropped
    import zlib

    recs = [mn.packb({"id": i, "v": np.full(3, i, dtype="<f8"), "s": str(i)}) for i in range(50)]
    first, rest = b"".join(recs[:25]), b"".join(recs[25:])
    assert_frame_equal(ma.read_msgpack(zlib.compress(first + rest)), ma.read_msgpack(DATA))
    for tail in (zlib.compress(rest), b"junk"):
        with pytest.raises(ma.DecodeError, match="zlib"):
            ma.read_msgpack(zlib.compress(first) + tail)


def test_a_file_object_that_takes_part_of_each_write():
    # a raw file (non-blocking pipe, socket) may take part of a buffer and say how much: the rest
    # is written after it; a count that cannot be is an error, never bytes silently lost
    class Partial(io.RawIOBase):
        def __init__(self, take):
            self.buf, self.take = bytearray(), take

        def writable(self):
            return True

        def write(self, b):
            n = self.take(len(b))
            if isinstance(n, int) and n > 0:
                self.buf += bytes(b)[:n]
            return n

    df = ma.read_msgpack(DATA)
    want = ma.write_msgpack(df, None)
    f = Partial(lambda n: min(n, 7))
    ma.write_msgpack(df, f)
    assert bytes(f.buf) == want
    f = Partial(lambda n: min(n, 5))
    ma.sink_msgpack(df.lazy(), f)
    assert bytes(f.buf) == want
    for bad in (lambda n: 0, lambda n: -5, lambda n: n + 1, lambda n: "x"):
        with pytest.raises((ma.EncodeError, OSError, ValueError)):
            ma.write_msgpack(df, Partial(bad))


@pytest.mark.parametrize(
    "data",
    [
        mn.packb({"id": 1, "v": np.arange(3, dtype="<f4")}),  # one record
        b"".join(mn.packb({"id": i, "s": f"x{i}"}) for i in range(5)),  # records
        mn.packb({"a": np.arange(4), "b": [1.5, 2.5, None, 4.5]}),  # a columns map
        mn.packb(np.arange(6, dtype="<i2").reshape(3, 2)),  # a bare ndarray
        b"".join(mn.packb(x) for x in [1, 2.5, None]),  # values
        b"",  # nothing
    ],
)
def test_bytes_read_with_default_options_as_any_source(data):
    # bytes with every option at its default go straight to the reader: the same frame as a file
    # object of the same bytes (which takes the general path) and as explicit default options
    df = ma.read_msgpack(data)
    assert_frame_equal(df, ma.read_msgpack(io.BytesIO(data)))
    assert_frame_equal(df, ma.read_msgpack(memoryview(data), layout="auto", numpy_types="polars", batch_size=65536))
    table = pa.table(ma.read_arrow(data))
    assert table.equals(pa.table(ma.read_arrow(io.BytesIO(data))), check_metadata=True)
    assert table.equals(pa.table(ma.read_arrow(bytearray(data), layout="auto", batch_size=1000)), check_metadata=True)


@pytest.mark.parametrize("data", [b"\x85\xc4\x02nd\xc3", mn.packb({"a": 1}) + b"\xc1", mn.packb({"a": 1}) + mn.packb({"a": "x"})])
def test_bad_bytes_read_with_default_options_name_the_same_place(data):
    # ... and the same error, offset and record
    with pytest.raises(ma.DecodeError) as fast:
        ma.read_msgpack(data)
    with pytest.raises(ma.DecodeError) as general:
        ma.read_msgpack(io.BytesIO(data), row_index_offset=0)
    assert str(fast.value) == str(general.value)
    assert (fast.value.offset, fast.value.record) == (general.value.offset, general.value.record)
    with pytest.raises(ma.DecodeError) as fast_arrow:
        ma.read_arrow(data)
    assert str(fast_arrow.value) == str(general.value)
