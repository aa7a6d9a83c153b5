"""scan_msgpack: a Polars IO source that applies projection, predicate and n_rows itself."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma

N = 1000


def records(lo: int, hi: int) -> bytes:
    """Rows lo..hi of one deterministic table (any split into shards concatenates to it)."""
    return b"".join(
        mn.packb(
            {
                "id": i,
                "label": f"l{i % 7}",
                "score": float(np.sin(i) * 2),
                "emb": (np.cos(np.arange(4) + i) * 3).astype("<f4"),
            }
        )
        for i in range(lo, hi)
    )


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("shards")
    bounds = [(0, 300), (300, 650), (650, N)]
    # names chosen so sorted order is the row order
    paths = []
    for k, (lo, hi) in enumerate(bounds):
        p = d / f"part-{k:02d}.msgpack"
        p.write_bytes(records(lo, hi))
        paths.append(p)
    return d, paths


@pytest.fixture(scope="module")
def one_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("one") / "data.msgpack"
    p.write_bytes(records(0, N))
    return p


QUERIES = {
    "all": lambda lf: lf,
    "select": lambda lf: lf.select("emb", "id"),
    "filter": lambda lf: lf.filter(pl.col("score") > 0.5),
    "filter_other_column": lambda lf: lf.filter(pl.col("score") > 0).select("label"),
    "head": lambda lf: lf.head(17),
    "filter_head": lambda lf: lf.filter(pl.col("label") == "l3").head(5),
    # Polars pushes head(n) with the predicate: n rows are read, then filtered
    "head_filter": lambda lf: lf.head(40).filter(pl.col("label") == "l3"),
    "head_filter_select": lambda lf: lf.head(33).filter(pl.col("score") > 0.5).select("id"),
    "slice": lambda lf: lf.slice(250, 100),
    "len": lambda lf: lf.select(pl.len()),
    # queries that need no column of the file (Polars asks the source for none)
    "row_index_only": lambda lf: lf.with_row_index().select("index"),
    "int_range": lambda lf: lf.select(pl.int_range(pl.len())),
    "row_index_filter": lambda lf: lf.with_row_index("i").filter(pl.col("i") > 2).select("i"),
    "cross_join_other_side": lambda lf: lf.join(pl.LazyFrame({"k": [1, 2]}), how="cross").select(pl.col("k").sum(), pl.len()),
    "agg": lambda lf: lf.group_by("label").agg(pl.col("score").sum()).sort("label"),
    "expr": lambda lf: lf.select((pl.col("emb").arr.sum() * 2).alias("s"), "id").filter(pl.col("id") % 3 == 0),
    "tail": lambda lf: lf.tail(3),
}


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
@pytest.mark.parametrize("query", list(QUERIES), ids=list(QUERIES))
def test_scan_equals_read(one_file, query, engine):
    q = QUERIES[query]
    want = q(ma.read_msgpack(one_file).lazy()).collect()
    got = q(ma.scan_msgpack(one_file, batch_size=64)).collect(engine=engine)
    # sums over batches may add in another order
    assert_frame_equal(got, want, check_exact=query != "agg")


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_glob_list_and_directory(shards, engine):
    d, paths = shards
    want = ma.read_msgpack(records(0, N))
    for source in [str(d / "part-*.msgpack"), [str(p) for p in paths], paths, d]:
        got = ma.scan_msgpack(source, batch_size=100).collect(engine=engine)
        assert_frame_equal(got, want, check_exact=True)
    got = ma.scan_msgpack(str(d / "*.msgpack")).filter(pl.col("id").is_between(290, 660)).select("id").collect(engine=engine)
    assert got["id"].to_list() == list(range(290, 661))
    # head spans files and stops early
    got = ma.scan_msgpack(paths, batch_size=50).head(320).collect(engine=engine)
    assert got["id"].to_list() == list(range(320))


def test_scan_arguments(one_file):
    lf = ma.scan_msgpack(one_file, columns=["id", "emb"], n_rows=10, schema_overrides={"id": pl.Int32})
    assert lf.collect_schema() == pl.Schema({"id": pl.Int32, "emb": pl.Array(pl.Float32, 4)})
    df = lf.collect()
    assert df.height == 10 and df["id"].to_list() == list(range(10))
    # n_rows of the scan limits the input, before any filter (as polars' scan_* n_rows)
    assert lf.filter(pl.col("id") > 5).collect()["id"].to_list() == [6, 7, 8, 9]
    assert lf.filter(pl.col("id") > 5).head(2).collect()["id"].to_list() == [6, 7]


def test_schema_is_known_up_front(one_file):
    lf = ma.scan_msgpack(one_file)
    assert lf.collect_schema() == ma.read_msgpack(one_file).schema


def test_scan_from_bytes_and_file_object(one_file):
    want = ma.read_msgpack(one_file)
    data = one_file.read_bytes()
    assert_frame_equal(ma.scan_msgpack(data).collect(), want)
    with open(one_file, "rb") as f:
        lf = ma.scan_msgpack(f)
    # the file object was read when the scan was made: the LazyFrame can be collected twice
    assert_frame_equal(lf.collect(), want)
    assert_frame_equal(lf.collect(), want)


def test_scan_missing_inputs(tmp_path):
    with pytest.raises(FileNotFoundError):
        ma.scan_msgpack(str(tmp_path / "nothing-*.msgpack"))
    with pytest.raises(FileNotFoundError):
        ma.scan_msgpack(tmp_path)  # an empty directory
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        ma.scan_msgpack(records(0, 3), columns=["nope"])


def test_decode_error_during_collect_is_a_decode_error():
    # the schema comes from the first 3 rows; row 10 conflicts with it
    data = records(0, 10) + mn.packb({"id": "ten", "label": "x", "score": 1.0, "emb": np.zeros(4, "<f4")})
    lf = ma.scan_msgpack(data, infer_rows=3, batch_size=4)
    for engine in ["in-memory", "streaming"]:
        with pytest.raises(ma.DecodeError) as info:
            lf.collect(engine=engine)
        assert info.value.record == 10 and info.value.column == "id"


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_key_only_a_later_file_has_is_an_error_not_a_lost_column(tmp_path, engine):
    a, b = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    a.write_bytes(b"".join(mn.packb({"id": i, "emb": np.zeros(2, "<f4")}) for i in range(3)))
    b.write_bytes(b"".join(mn.packb({"id": i, "emb": np.ones(2, "<f4"), "extra": "x"}) for i in range(3)))
    with pytest.raises(ma.DecodeError, match="extra") as info:
        ma.scan_msgpack([a, b]).collect(engine=engine)
    assert info.value.record == 0
    # a key of the first file that a later one lacks: nulls there
    got = ma.scan_msgpack([b, a]).collect(engine=engine)
    assert got["extra"].to_list() == ["x"] * 3 + [None] * 3


def test_a_changed_file_is_scanned_with_its_new_schema(tmp_path):
    # the exact schema of a file is remembered between scans; a change to the file must be seen
    p = tmp_path / "d.msgpack"
    p.write_bytes(b"".join(mn.packb({"id": i, "x": i}) for i in range(50)))
    assert ma.scan_msgpack(p).collect_schema()["x"] == pl.Int64
    assert ma.scan_msgpack(p).collect()["x"].to_list() == list(range(50))
    # same size, other content: a float where the ints were
    before = p.stat()
    p.write_bytes(b"".join(mn.packb({"id": i, "x": i}) for i in range(49)) + mn.packb({"id": 49, "x": 0.5}))
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns + 1000))
    df = ma.scan_msgpack(p).collect()
    assert df.schema["x"] == pl.Float64
    assert df["x"].to_list() == [float(i) for i in range(49)] + [0.5]
    # rows appended: seen too
    with open(p, "ab") as f:
        f.write(mn.packb({"id": 50, "x": "text", "y": 1}))
    with pytest.raises(ma.DecodeError):
        ma.scan_msgpack(p).collect()
    # other options are another schema
    assert ma.scan_msgpack(p, infer_rows=10).collect_schema()["x"] == pl.Int64


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_a_compressed_file_is_decompressed_once_for_its_schema_and_first_query(tmp_path, suffix):
    import gzip

    import pyarrow as pa

    pack = {".gz": gzip.compress, ".zst": lambda b: pa.compress(b, "zstd", asbytes=True)}[suffix]
    rows = [{"id": i, "x": np.full(3, i, "<f4")} for i in range(200)]
    p = tmp_path / f"d.msgpack{suffix}"
    p.write_bytes(pack(b"".join(mn.packb(r) for r in rows)))
    lf = ma.scan_msgpack(p)
    want = ma.read_msgpack(p)
    # the file changes after the scan walked it for its types: the first query reads the bytes
    # that walk decompressed (held for it), so it decoded them once; a later query reads the
    # file again (as every query of a plain file does)
    p.write_bytes(pack(b"".join(mn.packb({**r, "id": -r["id"]}) for r in rows)))
    assert_frame_equal(lf.collect(), want)
    assert lf.collect()["id"].to_list() == [-i for i in range(200)]
    # typed from its first rows (infer_rows), a scan decompresses only those for its schema,
    # and nothing is held: its query reads the file as it is now
    lf3 = ma.scan_msgpack(p, infer_rows=10)
    p.write_bytes(pack(b"".join(mn.packb(r) for r in rows)))
    assert lf3.collect()["id"].to_list() == list(range(200))
    p.write_bytes(pack(b"".join(mn.packb({**r, "id": -r["id"]}) for r in rows)))
    # the held bytes are for one query only: two scans of it in one query read the file
    lf2 = ma.scan_msgpack(p)
    both = lf2.join(lf2, on="id").collect()
    assert both.height == 200


SCAN_IN_A_NEW_PROCESS = r"""
import json, sys
import msgpack_arrow as ma
lf = ma.scan_msgpack(sys.argv[1])
df = lf.head(3).collect()
print(json.dumps({"columns": df.columns, "dtypes": [str(t) for t in df.dtypes], "ids": df["id"].to_list(),
                  **ma._schema_cache_stats}))
"""


def _scan_child(path, cache, **env):
    out = subprocess.run(
        [sys.executable, "-c", SCAN_IN_A_NEW_PROCESS, str(path)],
        env=dict(os.environ, MSGPACK_ARROW_CACHE_DIR=str(cache), **env),
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def test_a_scan_schema_is_saved_for_later_processes_and_never_stale(tmp_path):
    cache = tmp_path / "cache"
    p = tmp_path / "d.msgpack"
    p.write_bytes(b"".join(mn.packb({"id": i, "emb": np.full(3, i, "<f4")}) for i in range(50)))
    first = _scan_child(p, cache)
    assert first["saved"] == 1 and first["loaded"] == 0
    assert first["columns"] == ["id", "emb"] and first["dtypes"] == ["Int64", "Array(Float32, shape=(3,))"]
    assert len(list((cache / "schemas").iterdir())) == 1
    # another process: the schema comes from the cache, the rows from the file
    again = _scan_child(p, cache)
    assert again["loaded"] == 1 and again["saved"] == 0
    assert (again["columns"], again["dtypes"], again["ids"]) == (first["columns"], first["dtypes"], [0, 1, 2])
    # the same size and modification time, other content (rewritten in place): walked again
    st = os.stat(p)
    p.write_bytes(b"".join(mn.packb({"id": i, "emb": np.full(3, i, "<i4")}) for i in range(50)))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(p).st_size == st.st_size
    changed = _scan_child(p, cache)
    assert changed["loaded"] == 0 and changed["dtypes"] == ["Int64", "Array(Int32, shape=(3,))"]
    # a damaged cache file is ignored; MSGPACK_ARROW_SCHEMA_CACHE=0 neither reads nor writes one
    for f in (cache / "schemas").iterdir():
        f.write_bytes(b"msgpack-arrow schema 1\n" + b"\xff" * 20)
    damaged = _scan_child(p, cache)
    assert damaged["loaded"] == 0 and damaged["dtypes"] == changed["dtypes"]
    off = _scan_child(p, tmp_path / "off", MSGPACK_ARROW_SCHEMA_CACHE="0")
    assert off["saved"] == off["loaded"] == 0 and not (tmp_path / "off").exists()


def test_a_scan_pickles_and_explains_itself(one_file):
    # as scan_parquet's: a LazyFrame of the scan survives pickle (Polars pickles the source's
    # schema with it), and explain() names the source and its file
    import pickle

    lf = ma.scan_msgpack(one_file).filter(pl.col("id") > 5).select("id", "emb")
    want = lf.collect()
    assert_frame_equal(pickle.loads(pickle.dumps(lf)).collect(), want)
    plan = lf.explain()
    assert "msgpack_arrow" in plan and str(one_file) in plan
    # read_arrow's stream too, with its batches
    stream = ma.read_arrow(one_file)
    assert pa.table(pickle.loads(pickle.dumps(stream))).equals(pa.table(stream))


def test_read_arrow_takes_several_files_as_one_stream_byte_exact(tmp_path):
    # shards of one table, an empty file among them: read as one stream, written back they are
    # the shards' bytes one after another; rows= and n_rows count across the files
    cuts = [0, 7, 7, 20, 31]
    for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        (tmp_path / f"part{k}.msgpack").write_bytes(records(lo, hi))
    whole = records(0, 31)
    s = ma.read_arrow(str(tmp_path / "part*.msgpack"))
    assert s.num_rows == 31
    assert ma.write_msgpack(s, layout="auto") == whole
    want = list(msgpack.Unpacker(io.BytesIO(whole), object_hook=mn.decode))
    t = pa.table(ma.read_arrow(sorted(tmp_path.glob("part*.msgpack")), rows=slice(5, 23)))
    assert t["id"].to_pylist() == [r["id"] for r in want[5:23]]
    got = np.stack(t["emb"].to_numpy(zero_copy_only=False))
    np.testing.assert_array_equal(got, np.stack([r["emb"] for r in want[5:23]]))
    assert pa.table(ma.read_arrow(tmp_path, n_rows=9))["id"].to_pylist() == list(range(9))
    # a file of other types is named, with what differs
    other = {"id": "x", "label": "l", "score": 1.0, "emb": np.zeros(4, "<f4")}
    (tmp_path / "part9.msgpack").write_bytes(mn.packb(other))
    with pytest.raises(ValueError, match=r'part9\.msgpack: column "id" is str here but i64 in the inputs before it'):
        ma.read_arrow(str(tmp_path / "part*.msgpack"))
    with pytest.raises(FileNotFoundError):
        ma.read_arrow(str(tmp_path / "none*.msgpack"))


def test_a_glob_of_small_files_reads_as_each_file_does(tmp_path):
    # 300 files of 0..8 rows, read together in runs (one reader and frame per run): the rows
    # msgpack_numpy gives, the row index counting across them, a filter; a bad file is named
    lo = 0
    for k in range(300):
        hi = lo + k % 9
        (tmp_path / f"f{k:03d}.msgpack").write_bytes(records(lo, hi))
        lo = hi
    whole = b"".join((tmp_path / f"f{k:03d}.msgpack").read_bytes() for k in range(300))
    want = list(msgpack.Unpacker(io.BytesIO(whole), object_hook=mn.decode))
    glob = str(tmp_path / "f*.msgpack")
    df = ma.scan_msgpack(glob, row_index_name="i").collect()
    assert df["id"].to_list() == [r["id"] for r in want] and df["i"].to_list() == list(range(lo))
    np.testing.assert_array_equal(df["emb"].to_numpy(), np.stack([r["emb"] for r in want]))
    assert df["label"].to_list() == [r["label"] for r in want]
    got = ma.scan_msgpack(glob).filter(pl.col("id") % 3 == 0).select("id").collect()
    assert got["id"].to_list() == [r["id"] for r in want if r["id"] % 3 == 0]
    (tmp_path / "f150.msgpack").write_bytes(records(0, 2)[:-3])
    with pytest.raises(ma.DecodeError, match="f150.msgpack") as e:
        ma.scan_msgpack(glob).collect()
    assert e.value.path.endswith("f150.msgpack")


def test_shards_whose_nested_numbers_differ_read_as_one_file(tmp_path):
    # ints in one shard, floats in the next, at any depth (in a struct, a list of lists), and ints
    # past 2^63-1 in a later shard: typed as one file of all the records types them
    recs = [
        [{"s": {"a": 1}, "l": [[1, 2]], "u": 1, "lu": [3]}],
        [{"s": {"a": 1.5}, "l": [[0.25]], "u": 2**64 - 1, "lu": [2**63]}, {"s": {"a": 2}, "l": [], "u": 5, "lu": []}],
    ]
    for k, rs in enumerate(recs):
        (tmp_path / f"part{k}.msgpack").write_bytes(b"".join(msgpack.packb(r) for r in rs))
    whole = b"".join((tmp_path / f"part{k}.msgpack").read_bytes() for k in range(2))
    want = list(msgpack.Unpacker(io.BytesIO(whole), raw=False))
    df = ma.read_msgpack(str(tmp_path / "part*.msgpack"))
    assert dict(df.schema) == {"s": pl.Struct({"a": pl.Float64}), "l": pl.List(pl.List(pl.Float64)), "u": pl.UInt64, "lu": pl.List(pl.UInt64)}
    assert df.to_dicts() == want
    assert_frame_equal(df, ma.read_msgpack(whole))
    # plain bools and ints in one shard, numpy scalars of those types in the next
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    parts = [[{"c": True, "i": 1}], [{"c": np.False_, "i": np.int64(-2)}, {"c": False, "i": 3}]]
    for k, rs in enumerate(parts):
        (mixed / f"p{k}.msgpack").write_bytes(b"".join(mn.packb(r) for r in rs))
    got = ma.read_msgpack(str(mixed / "*.msgpack"))
    ref = [mn.unpackb(mn.packb(r), raw=False) for rs in parts for r in rs]
    assert got.to_dicts() == [{"c": bool(r["c"]), "i": int(r["i"])} for r in ref]
    assert_frame_equal(got, ma.read_msgpack(b"".join((mixed / f"p{k}.msgpack").read_bytes() for k in range(2))))
    # a negative int beside ints past 2^63-1: refused, as in one file, naming the file
    (tmp_path / "part2.msgpack").write_bytes(msgpack.packb({"u": -1}))
    with pytest.raises(ma.DecodeError, match="part2"):
        ma.read_msgpack(str(tmp_path / "part*.msgpack"))


def test_shards_of_ndarrays_of_other_lengths_read_as_one_ragged_file(tmp_path):
    # one sample a file (as dumps of variable-length clips or token arrays are), each file's
    # ndarrays of one shape: read_msgpack, read_arrow and the CLI give what one file of all the
    # records gives (a List on every axis), each value as msgpack_numpy reads it, and write the
    # files' bytes back
    rng = np.random.default_rng(5)
    files = []
    for k, n in enumerate([3, 5, 5, 1]):
        recs = [{"id": k, "tok": rng.integers(0, 9, size=n).astype(">i2"), "feat": rng.random((2, n)).astype("<f4")}]
        if k == 2:
            recs.append({"id": k, "tok": rng.integers(0, 9, size=n).astype(">i2"), "feat": rng.random((2, 4)).astype("<f4")})
        p = tmp_path / f"clip{k}.msgpack"
        p.write_bytes(b"".join(mn.packb(r) for r in recs))
        files.append(p)
    glob = str(tmp_path / "clip*.msgpack")
    whole = b"".join(p.read_bytes() for p in files)
    want = list(msgpack.Unpacker(io.BytesIO(whole), object_hook=mn.decode, raw=False))
    df = ma.read_msgpack(glob)
    assert dict(df.schema) == {"id": pl.Int64, "tok": pl.List(pl.Int16), "feat": pl.List(pl.List(pl.Float32))}
    assert df["tok"].to_list() == [r["tok"].tolist() for r in want]
    assert df["feat"].to_list() == [r["feat"].tolist() for r in want]
    assert_frame_equal(df, ma.read_msgpack(whole))
    t = pa.table(ma.read_arrow(glob))
    assert t.schema.field("tok").metadata[b"msgpack_numpy.dtype"] == b">i2"
    assert t.schema.field("feat").metadata[b"msgpack_numpy.shape"] == b"[2,null]"
    assert ma.write_msgpack(ma.read_arrow(glob)) == whole
    out = tmp_path / "out.msgpack"
    cli = [sys.executable, "-m", "msgpack_arrow._cli", "convert", "-q", *map(str, files), "-o", str(out)]
    r = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == whole
    # another number of dimensions is no ragged column: the error names the file
    (tmp_path / "clip9.msgpack").write_bytes(mn.packb({"id": 9, "tok": np.zeros((2, 2), ">i2"), "feat": np.zeros((2, 1), "<f4")}))
    with pytest.raises(ma.DecodeError, match=r'clip9\.msgpack: column "tok" is i16\[2, 2\] here but i16\[\*\]') as e:
        ma.read_msgpack(glob)
    assert e.value.path.endswith("clip9.msgpack")


def test_shards_that_differ_as_rows_of_one_file_may_are_typed_together(tmp_path):
    # shard 1: ints, a column only ever nil; shard 2: floats, strings in that column and a key
    # the first lacks. read_msgpack and read_arrow give what one file of
    # both shards' rows gives: each value as msgpack_numpy reads it, in the types the rows unify to
    recs = [
        [{"a": 1, "b": None, "v": np.arange(3, dtype="<f4")} for _ in range(3)],
        [{"a": 2.5, "b": "x", "v": np.arange(3, dtype="<f4") + 1, "c": True} for _ in range(2)],
    ]
    for k, rs in enumerate(recs):
        (tmp_path / f"s{k}.msgpack").write_bytes(b"".join(mn.packb(r) for r in rs))
    glob = str(tmp_path / "s*.msgpack")
    want = [mn.unpackb(mn.packb(r), raw=False) for rs in recs for r in rs]
    schema = {"a": pl.Float64, "b": pl.String, "v": pl.Array(pl.Float32, 3), "c": pl.Boolean}
    for got in (ma.read_msgpack(glob), pl.DataFrame(ma.read_arrow(glob))):
        assert dict(got.schema) == schema
        for w, g in zip(want, got.to_dicts(), strict=True):
            assert g == {"a": float(w["a"]), "b": w["b"], "v": w["v"].tolist(), "c": w.get("c")}
    one = b"".join(mn.packb(r) for rs in recs for r in rs)
    assert_frame_equal(ma.read_msgpack(glob), ma.read_msgpack(one))
    # a scan keeps the first file's schema, and says so
    with pytest.raises(ma.DecodeError, match=r"s1\.msgpack: .*first one's columns and types"):
        ma.scan_msgpack(glob).collect()
    # ints beside floats widen only where a float64 holds them exactly, as in one file
    (tmp_path / "t0.msgpack").write_bytes(mn.packb({"n": 0.5}) * 2)
    (tmp_path / "t1.msgpack").write_bytes(mn.packb({"n": 2**53 + 2}) * 2)
    assert ma.read_msgpack(str(tmp_path / "t*.msgpack"))["n"].to_list() == [0.5, 0.5, 2.0**53 + 2, 2.0**53 + 2]
    (tmp_path / "t1.msgpack").write_bytes(mn.packb({"n": 2**53 + 1}) * 2)
    with pytest.raises(ma.DecodeError, match=r"t1\.msgpack: value does not fit Float64 exactly .*record 0, column \"n\""):
        ma.read_msgpack(str(tmp_path / "t*.msgpack"))
    # types one file could not hold either: the error, naming the file
    (tmp_path / "s2.msgpack").write_bytes(mn.packb({"a": "text"}))
    (tmp_path / "s3.msgpack").write_bytes(mn.packb({"a": 1, "v": np.arange(4, dtype="<f4")}))
    with pytest.raises(ma.DecodeError, match=r"s2\.msgpack"):
        ma.read_msgpack(glob)
    with pytest.raises(ValueError, match=r"s2\.msgpack"):
        ma.read_arrow(glob)
