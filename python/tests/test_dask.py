"""msgpack_arrow.dask: Dask DataFrames from msgpack-numpy files, checked on a real LocalCluster
(two worker processes) against the single-machine reader."""

from __future__ import annotations

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import msgpack_arrow as ma  # noqa: E402
from conftest import PART_BOUNDS, write_parts  # noqa: E402
import msgpack_arrow.dask as mad  # noqa: E402

BOUNDS = PART_BOUNDS


def record(i: int) -> dict:
    return {
        "id": i,
        "label": f"item-{i % 5}" if i % 11 else "",
        "emb": (np.sin(np.arange(8) + i) * 3).astype("<f4"),
        "frame": np.arange(6, dtype="<u2").reshape(2, 3) + i,
        "score": None if i % 7 == 0 else float(i) / 3,
        "tags": [f"t{j}" for j in range(i % 3)],
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    return d, write_parts(d, record)


def single_machine(paths, **kw) -> pl.DataFrame:
    return pl.concat([ma.read_msgpack(p, **kw) for p in paths])


def to_polars(pdf) -> pl.DataFrame:
    return pl.from_arrow(pa.Table.from_pandas(pdf, preserve_index=False))


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster, Client(cluster) as c:
        yield c


def test_local_cluster_equals_single_machine(files, client):
    from distributed import get_task_stream

    d, paths = files
    df = mad.read_msgpack(str(d / "part-*.msgpack"))
    assert df.npartitions == len(paths)
    # tensors keep shape and element type as pyarrow-backed pandas dtypes
    assert df.dtypes["emb"] == pd.ArrowDtype(pa.list_(pa.float32(), 8))
    assert df.dtypes["frame"] == pd.ArrowDtype(pa.list_(pa.list_(pa.uint16(), 3), 2))
    assert df.dtypes["label"] == pd.ArrowDtype(pa.string())
    with get_task_stream(client) as ts:
        got = df.compute()
    workers = {t["worker"] for t in ts.data}
    assert workers and workers <= set(client.scheduler_info()["workers"])
    want = single_machine(paths)
    assert_frame_equal(to_polars(got), want)
    # every dtype came through: Array(Float32, 8), Array(UInt16, (2, 3)), String, List(String)
    assert to_polars(got).schema == want.schema

    # projection is pushed into the reader; a filter and an aggregation run on the workers
    sub = df[df["id"] >= 35][["label", "emb"]].compute()
    assert_frame_equal(to_polars(sub), want.filter(pl.col("id") >= 35).select("label", "emb"))
    assert len(df) == want.height
    assert df["score"].sum().compute() == pytest.approx(want["score"].sum())
    # tensors back as one ndarray per partition, on the workers
    shapes = df["frame"].map_partitions(lambda s: mad.tensor_to_numpy(s).shape, meta=("x", object)).compute()
    assert [tuple(s) for s in shapes] == [(hi - lo, 2, 3) for lo, hi in BOUNDS]


def test_columns_and_path_column(files):
    d, paths = files
    df = mad.read_msgpack(paths, columns=["emb", "id"], include_path_column="file")
    assert list(df.columns) == ["emb", "id", "file"]
    got = df.compute(scheduler="sync")
    want = single_machine(paths, columns=["emb", "id"])
    assert_frame_equal(to_polars(got.drop(columns="file")), want)
    assert got["file"].tolist() == [str(p) for p, (lo, hi) in zip(paths, BOUNDS) for _ in range(hi - lo)]
    # Dask's own projection reaches the reader too
    only = df[["id"]].compute(scheduler="sync")
    assert list(only.columns) == ["id"]
    with pytest.raises(KeyError, match="nope"):
        mad.read_msgpack(paths, columns=["nope"])


def test_first_file_schema_rules(tmp_path):
    # later files: a missing key is null, an empty file an empty partition
    (tmp_path / "a.msgpack").write_bytes(
        b"".join(mn.packb({"x": i, "v": np.full(3, i, "<f4")}) for i in range(3))
    )
    (tmp_path / "b.msgpack").write_bytes(b"")
    (tmp_path / "c.msgpack").write_bytes(mn.packb({"x": 9}))
    df = mad.read_msgpack(tmp_path)
    assert df.npartitions == 3
    parts = [df.get_partition(k).compute(scheduler="sync") for k in range(3)]
    assert [len(p) for p in parts] == [3, 0, 1]
    assert all(list(p.dtypes) == list(df.dtypes) for p in parts)
    got = to_polars(df.compute(scheduler="sync"))
    assert got["x"].to_list() == [0, 1, 2, 9]
    assert got["v"].to_list()[-1] is None
    assert got.schema["v"] == pl.Array(pl.Float32, 3)


def test_schema_overrides_and_extension_tensors(files):
    d, paths = files
    df = mad.read_msgpack(paths, schema_overrides={"id": pa.int32(), "emb": pa.list_(pa.float64(), 8)})
    assert df.dtypes["id"] == pd.ArrowDtype(pa.int32())
    got = df.compute(scheduler="sync")
    assert got["id"].tolist() == list(range(BOUNDS[-1][1]))
    assert mad.tensor_to_numpy(got["emb"]).dtype == np.float64
    # polars dtypes work too
    df = mad.read_msgpack(paths, schema_overrides={"id": pl.Int32})
    assert df.dtypes["id"] == pd.ArrowDtype(pa.int32())
    # canonical tensor extension type for pyarrow users
    ext = mad.read_msgpack(paths, tensor="extension", columns=["frame"]).compute(scheduler="sync")
    t = pa.Table.from_pandas(ext, preserve_index=False)
    assert isinstance(t.schema.field("frame").type, pa.FixedShapeTensorType)
    assert t.column("frame").combine_chunks().to_numpy_ndarray().shape == (BOUNDS[-1][1], 2, 3)


def test_urls_through_fsspec(files):
    fsspec = pytest.importorskip("fsspec")
    d, paths = files
    mem = fsspec.filesystem("memory")
    for p in paths:
        mem.pipe(f"/mad-test/{p.name}", p.read_bytes())
    try:
        df = mad.read_msgpack("memory://mad-test/*.msgpack")
        assert df.npartitions == 3
        assert_frame_equal(to_polars(df.compute(scheduler="sync")), single_machine(paths))
    finally:
        mem.rm("/mad-test", recursive=True)
    # file:// URLs are plain local paths (memory-mapped)
    df = mad.read_msgpack(f"file://{d}/part-*.msgpack", columns="id")
    assert df.compute(scheduler="sync")["id"].tolist() == list(range(BOUNDS[-1][1]))


def test_bad_sources(files, tmp_path):
    with pytest.raises(TypeError, match="paths"):
        mad.read_msgpack(b"\x80")
    with pytest.raises(FileNotFoundError):
        mad.read_msgpack(str(tmp_path / "nothing-*.msgpack"))
    with pytest.raises(ValueError, match="path"):
        mad.read_msgpack([files[1][0]], include_path_column="id")


def test_tensor_to_numpy():
    s = pd.Series(
        pa.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], pa.list_(pa.list_(pa.int8(), 2), 2)),
        dtype=pd.ArrowDtype(pa.list_(pa.list_(pa.int8(), 2), 2)),
    )
    a = mad.tensor_to_numpy(s)
    assert a.dtype == np.int8 and a.shape == (2, 2, 2)
    assert a.tolist() == [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]
    # a slice of a column
    assert mad.tensor_to_numpy(s.iloc[1:]).tolist() == [[[5, 6], [7, 8]]]
    with pytest.raises(ValueError, match="nulls"):
        mad.tensor_to_numpy(pa.array([[1, 2], None], pa.list_(pa.int8(), 2)))
    with pytest.raises(TypeError, match="FixedSizeList"):
        mad.tensor_to_numpy(pa.array([1, 2]))


def test_docstring_examples():
    import doctest

    result = doctest.testmod(mad, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 1 and result.failed == 0
