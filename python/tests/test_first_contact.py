"""A new user's first contact: no silent wrong answers, Polars' reader conventions (issue: first
contact). Every expectation comes from msgpack_numpy/numpy or from what Polars' own readers do."""

from __future__ import annotations

import datetime
import decimal
import io

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma

ROWS = [{"id": i, "v": np.full(2, i, dtype="<f4")} for i in range(6)]
DATA = b"".join(mn.packb(r) for r in ROWS)


@pytest.mark.parametrize(
    "series, column",
    [
        (pl.Series("c", [object(), object()], dtype=pl.Object), "c"),
        (pl.Series("c", [decimal.Decimal("1.25")], dtype=pl.Decimal(10, 2)), "c"),
        (pl.Series("c", [2**100], dtype=pl.Int128), "c"),
        (pl.Series("c", [2**100], dtype=pl.UInt128), "c"),
        (pl.Series("c", [datetime.time(1, 2, 3)], dtype=pl.Time), "c"),
        (pl.Series("c", [[2**70]], dtype=pl.List(pl.Int128)), "c"),
        (pl.DataFrame({"t": [datetime.time(1, 2, 3)]}).to_struct("c"), "c.t"),
    ],
)
def test_unwritable_dtypes_are_refused_and_leave_no_file(tmp_path, series, column):
    p = tmp_path / "w.msgpack"
    p.write_bytes(b"previous")
    with pytest.raises(ma.EncodeError) as e:
        ma.write_msgpack(series.to_frame("c"), p)
    assert e.value.column == column and repr(column) in str(e.value)
    assert p.read_bytes() == b"previous"
    with pytest.raises(ma.EncodeError):
        ma.write_msgpack(series.to_frame("c"), None)


def test_categorical_enum_null_are_written_as_msgpack_numpy_reads_them():
    df = pl.DataFrame(
        {
            "cat": pl.Series(["a", "b"], dtype=pl.Categorical),
            "enum": pl.Series(["x", "y"], dtype=pl.Enum(["x", "y"])),
            "null": pl.Series([None, None], dtype=pl.Null),
        }
    )
    rows = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(df, None)), raw=False))
    assert rows == [{"cat": "a", "enum": "x", "null": None}, {"cat": "b", "enum": "y", "null": None}]
    # Null inside a list or a struct (which Polars exports with a buffer too), among many columns
    # of one dtype
    wide = pl.DataFrame({f"c{i}": [1.5, 2.5] for i in range(50)}).with_columns(
        ln=pl.Series([[None], []], dtype=pl.List(pl.Null)),
        st=pl.Series([{"a": None}, {"a": None}], dtype=pl.Struct({"a": pl.Null})),
    )
    rows = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(wide, None)), raw=False))
    assert [(r["c49"], r["ln"], r["st"]) for r in rows] == [(1.5, [None], {"a": None}), (2.5, [], {"a": None})]
    # a Null column named "" (a map's empty key read back)
    blank = pl.DataFrame({"": pl.Series([None, None], dtype=pl.Null), "x": [1, 2]})
    rows = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(blank, None)), raw=False))
    assert rows == [{"": None, "x": 1}, {"": None, "x": 2}]


def test_a_directory_reads_only_its_msgpack_files(tmp_path):
    (tmp_path / "a.msgpack").write_bytes(DATA)
    (tmp_path / "b.mpk").write_bytes(DATA)
    (tmp_path / "notes.txt").write_text("these are my dumps\n")
    df = ma.scan_msgpack(tmp_path).collect()
    assert df.height == 12 and df.columns == ["id", "v"]
    assert ma.read_msgpack(tmp_path).equals(df)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match="holds no"):
        ma.scan_msgpack(empty)


def test_an_error_in_a_multi_file_read_names_the_file(tmp_path):
    good, bad = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    good.write_bytes(DATA)
    bad.write_bytes(DATA + b"\x81\xa2id\xc1")  # 0xc1 is never valid msgpack
    for read in (lambda s: ma.read_msgpack(s), lambda s: ma.scan_msgpack(s).collect()):
        with pytest.raises(ma.DecodeError) as e:
            read([good, bad])
        assert e.value.path == str(bad) and str(bad) in str(e.value)
        assert e.value.offset == len(DATA) + 4
    with pytest.raises(ma.DecodeError) as e:
        ma.read_msgpack(bad)
    assert e.value.path == str(bad)


def test_read_msgpack_takes_globs_and_lists_as_read_parquet(tmp_path):
    for n in ("a", "b"):
        (tmp_path / f"{n}.msgpack").write_bytes(DATA)
    want = pl.concat([ma.read_msgpack(DATA)] * 2)
    assert ma.read_msgpack(str(tmp_path / "*.msgpack")).equals(want)
    assert ma.read_msgpack([tmp_path / "a.msgpack", tmp_path / "b.msgpack"]).equals(want)


def test_text_mode_file_objects_and_bad_infer_rows(tmp_path):
    p = tmp_path / "d.msgpack"
    p.write_bytes(DATA)
    with open(p) as f:  # text mode
        with pytest.raises(TypeError, match="binary mode"):
            ma.read_msgpack(f)
        assert f.tell() == 0  # refused before reading
    with pytest.raises(ValueError, match="infer_rows"):
        ma.read_msgpack(p, infer_rows=0)
    with pytest.raises(ValueError, match="infer_rows"):
        ma.scan_msgpack(p, infer_rows=0)


def test_row_index_and_file_paths_as_polars_readers(tmp_path):
    a, b = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    a.write_bytes(DATA)
    b.write_bytes(DATA)
    # Polars' own reader gives the reference layout: index first, path last
    pq = tmp_path / "a.parquet"
    ma.read_msgpack(a).write_parquet(pq)
    ref = pl.read_parquet([pq, pq], row_index_name="i", row_index_offset=10, include_file_paths="f")
    got = ma.read_msgpack([a, b], row_index_name="i", row_index_offset=10, include_file_paths="f")
    assert got.columns == ref.columns and got.schema["i"] == ref.schema["i"]
    assert got["i"].to_list() == ref["i"].to_list()
    assert got["f"].to_list() == [str(a)] * 6 + [str(b)] * 6
    # the row index counts rows before a filter, as Polars' scanners do
    lf = ma.scan_msgpack([a, b], row_index_name="i")
    got = lf.filter(pl.col("id") == 2).select("i").collect()["i"].to_list()
    assert got == pl.scan_parquet([pq, pq], row_index_name="i").filter(pl.col("id") == 2).select("i").collect()["i"].to_list()
    with pytest.raises(ValueError, match="path"):
        ma.read_msgpack(DATA, include_file_paths="f")


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
@pytest.mark.parametrize("batch_size", [65536, 7])
def test_many_small_files_read_as_msgpack_numpy_decodes_each(tmp_path, engine, batch_size):
    # the frames of small files reach Polars merged (up to a batch): rows, their order, the row
    # index and each row's file stay those of the files one by one
    rng = np.random.default_rng(5)
    files, want = [], []
    for k in range(40):
        p = tmp_path / f"part{k:03d}.msgpack"
        rows = [{"id": 100 * k + i, "v": rng.random(3).astype("<f4")} for i in range(k % 4 + 1)]
        p.write_bytes(b"".join(mn.packb(r) for r in rows))
        files.append(p)
        for r in mn.Unpacker(io.BytesIO(p.read_bytes()), raw=False):
            want.append((r["id"], r["v"].tolist(), str(p)))
    ids, vs, paths = (list(c) for c in zip(*want))
    lf = ma.scan_msgpack(str(tmp_path / "*.msgpack"), row_index_name="i", include_file_paths="f", batch_size=batch_size)
    got = lf.collect(engine=engine)
    assert got.columns == ["i", "id", "v", "f"]
    assert got["i"].to_list() == list(range(len(want)))
    assert got["id"].to_list() == ids and got["f"].to_list() == paths
    assert got["v"].to_list() == vs
    # a filter and a head across file boundaries
    got = lf.filter(pl.col("id") % 3 == 0).head(9).collect(engine=engine)
    keep = [j for j, x in enumerate(ids) if x % 3 == 0][:9]
    assert got["i"].to_list() == keep and got["f"].to_list() == [paths[j] for j in keep]
    assert ma.read_msgpack(files, n_rows=11)["id"].to_list() == ids[:11]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_polars_hazards_sort_head_and_mixed_predicates(engine):
    data = b"".join(mn.packb({"id": i, "g": i % 3, "s": str(i)}) for i in range(100))
    ref = pl.DataFrame([{"id": i, "g": i % 3, "s": str(i)} for i in range(100)]).lazy()
    lf = ma.scan_msgpack(data)
    # Polars issue 28629: sort().head() hands IO sources a dynamic predicate
    for q in (lambda f: f.sort("id", descending=True).head(5), lambda f: f.sort("s").head(3)):
        assert q(lf).collect(engine=engine).equals(q(ref).collect(engine=engine))
    # a predicate on a pushed column and one on a computed column
    q = lambda f: f.with_columns(d=pl.col("id") * 2).filter((pl.col("g") == 1) & (pl.col("d") > 50)).select("id", "d")
    assert q(lf).collect(engine=engine).equals(q(ref).collect(engine=engine))


@pytest.mark.skipif(ma._internal.HAS_PLUGIN, reason="this build has the expression plugin")
def test_without_the_plugin_expressions_say_how_to_get_it_and_series_methods_work():
    with pytest.raises(RuntimeError, match="--features plugin"):
        pl.col("b").msgpack.decode(pl.Int64)
    s = pl.Series("b", [mn.packb(np.arange(3, dtype="<i2")), mn.packb(np.arange(3, dtype="<i2"))])
    assert s.msgpack.decode().to_list() == [[0, 1, 2]] * 2
    assert [mn.unpackb(b).tolist() for b in s.msgpack.decode().msgpack.encode()] == [[0, 1, 2]] * 2


def test_write_without_a_target_returns_the_bytes_msgpack_numpy_writes():
    # as Polars' write_csv()/write_json() with no file: the output comes back
    df = ma.read_msgpack(DATA)
    assert ma.write_msgpack(df) == DATA
    assert ma.write_msgpack(df.lazy(), layout="records") == DATA


def test_n_rows_types_columns_chunks_past_an_empty_first_one():
    # the rows asked for are in the second chunk: its types, not the empty first one's
    chunks = [{"x": []}, {"x": [1.5, 2.5, 3.5]}]
    data = b"".join(mn.packb(c) for c in chunks)
    values = [v for c in chunks for v in c["x"]]
    for n in (1, 2, 10):
        assert ma.read_msgpack(data, layout="columns", n_rows=n)["x"].to_list() == values[:n]


def test_a_row_window_of_columns_chunks_is_typed_by_the_chunks_it_reads():
    # ints then floats, one length of ndarray then another: head(n) reads (and types) the first
    # chunk alone, a window further on the chunks up to its end, as msgpack_numpy reads them
    chunks = [{"x": [1, 2], "v": [np.arange(3, dtype="<u2")] * 2}, {"x": [1.5], "v": [np.arange(2, dtype="<u2")]}]
    data = b"".join(mn.packb(c) for c in chunks)
    ref = [mn.unpackb(mn.packb(c), raw=False) for c in chunks]
    xs = [v for c in ref for v in c["x"]]
    vs = [v.tolist() for c in ref for v in c["v"]]
    head = ma.read_msgpack(data, layout="columns", n_rows=1)
    assert head.schema == pl.Schema({"x": pl.Int64, "v": pl.Array(pl.UInt16, 3)})
    assert head.to_dict(as_series=False) == {"x": xs[:1], "v": vs[:1]}
    assert ma.scan_msgpack(data, layout="columns").head(2).collect()["v"].to_list() == vs[:2]
    for a, b in ((2, 3), (1, 3), (0, 3)):
        got = ma.read_msgpack(data, layout="columns", rows=slice(a, b))
        assert got.schema == pl.Schema({"x": pl.Float64, "v": pl.List(pl.UInt16)})
        assert got.to_dict(as_series=False) == {"x": xs[a:b], "v": vs[a:b]}


def test_dir_of_the_package_offers_its_api_not_its_imports():
    # tab completion after `ma.` lists what a user calls, not `os`, `re` or `pl`
    import msgpack_arrow as ma

    names = dir(ma)
    assert set(ma.__all__) <= set(names)
    assert not {"os", "re", "pl", "inspect", "hashlib", "contextlib", "Any", "Literal"} & set(names)
    assert all(hasattr(ma, n) for n in names)
