"""Scale paths, small and fast for CI: scans over globs of files in the Polars streaming engine,
parallel decoding equal to the sequential path. (benches/scale.py measures memory and
throughput on gigabytes; the Dask cluster test is tests/test_dask.py.)"""

from __future__ import annotations

import os

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import msgpack_arrow as ma

BOUNDS = [(0, 700), (700, 1500), (1500, 2100)]


def rows(lo: int, hi: int) -> bytes:
    return b"".join(
        mn.packb(
            {
                "id": i,
                "name": f"n{i % 13}",
                "x": float(np.cos(i)),
                "emb": (np.arange(16) * 0.5 + i).astype("<f4"),
            }
        )
        for i in range(lo, hi)
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("scale")
    paths = []
    for k, (lo, hi) in enumerate(BOUNDS):
        p = d / f"shard-{k}.msgpack"
        p.write_bytes(rows(lo, hi))
        paths.append(p)
    return d, paths


def concatenated(paths) -> pl.DataFrame:
    return pl.concat([ma.read_msgpack(p) for p in paths])


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_glob_scan_equals_concatenated_reads(dataset, engine):
    d, paths = dataset
    got = ma.scan_msgpack(str(d / "shard-*.msgpack"), batch_size=256).collect(engine=engine)
    assert_frame_equal(got, concatenated(paths))
    assert got.schema["emb"] == pl.Array(pl.Float32, 16)


def test_streaming_predicate_and_head(dataset):
    d, paths = dataset
    want = concatenated(paths)
    lf = ma.scan_msgpack(str(d / "shard-*.msgpack"), batch_size=100)
    q = lambda f: f.filter((pl.col("x") > 0.25) & (pl.col("name") != "n3")).select("id", "emb").head(500)  # noqa: E731
    got = q(lf).collect(engine="streaming")
    assert_frame_equal(got, q(want.lazy()).collect())
    # the head ends inside the second file: rows come from the first two files, in order
    assert got.height == 500 and got["id"].max() < BOUNDS[1][1] and got["id"].max() >= BOUNDS[1][0]


def test_head_stops_reading_files(dataset, tmp_path):
    # a head that the first files satisfy never opens the broken last one
    d, paths = dataset
    bad = tmp_path / "z-broken.msgpack"
    bad.write_bytes(rows(0, 5)[:-3])
    lf = ma.scan_msgpack([*paths[:2], bad], batch_size=128)
    got = lf.filter(pl.col("id") >= 650).head(20).collect(engine="streaming")
    assert got["id"].to_list() == list(range(650, 670))
    with pytest.raises(ma.DecodeError):
        lf.collect(engine="streaming")


def test_streaming_sink_parquet(dataset, tmp_path):
    d, paths = dataset
    out = tmp_path / "out.parquet"
    ma.scan_msgpack(d, batch_size=300).filter(pl.col("id") % 2 == 1).select("emb", "id").sink_parquet(out)
    want = concatenated(paths).filter(pl.col("id") % 2 == 1).select("emb", "id")
    assert_frame_equal(pl.read_parquet(out), want)


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs to compare the parallel and the sequential decode",
)
@pytest.mark.parametrize("batch_size", [1, 97, 1000])
def test_parallel_decode_equals_sequential(dataset, batch_size):
    # the reader decodes batches of one file on all cores the thread may run on; pinned to one
    # CPU it takes the sequential path
    _, paths = dataset
    data = b"".join(p.read_bytes() for p in paths)
    parallel = ma.read_msgpack(data, batch_size=batch_size)
    cpus = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(cpus)})
        sequential = ma.read_msgpack(data, batch_size=batch_size)
    finally:
        os.sched_setaffinity(0, cpus)
    assert_frame_equal(parallel, sequential)
    assert parallel.n_chunks() == sequential.n_chunks()
    assert_frame_equal(parallel, concatenated(paths))
