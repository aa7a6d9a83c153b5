"""msgpack_arrow.ray: a Ray Data Datasource over msgpack-numpy files, on a local
ray.init(num_cpus=2), checked against the arrays msgpack_numpy wrote."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

import msgpack_arrow as ma  # noqa: E402
from conftest import PART_BOUNDS, write_parts  # noqa: E402
import msgpack_arrow.ray as mar  # noqa: E402

BOUNDS = PART_BOUNDS


def record(i: int) -> dict:
    return {
        "id": i,
        "label": f"item-{i % 5}",
        "emb": (np.cos(np.arange(8) * i)).astype("<f4"),
        "frame": np.arange(6, dtype="<i2").reshape(2, 3) - i,
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ray")
    return d, write_parts(d, record)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def test_tensor_columns_are_fixed_shape_tensors(files):
    d, _ = files
    schema = mar.read_msgpack(str(d / "*.msgpack")).schema().base_schema
    assert isinstance(schema.field("emb").type, pa.FixedShapeTensorType)
    assert schema.field("frame").type.shape == [2, 3]
    assert schema.field("frame").type.value_type == pa.int16()


def test_numpy_batches_hold_the_arrays_msgpack_numpy_wrote(files):
    d, _ = files
    ds = mar.read_msgpack(str(d / "*.msgpack"))
    want = [record(i) for i in range(130)]
    ids, embs, frames = [], [], []
    for b in ds.iter_batches(batch_size=32, batch_format="numpy"):
        assert b["frame"].shape[1:] == (2, 3) and b["frame"].dtype == np.int16
        ids.append(b["id"])
        embs.append(b["emb"])
        frames.append(b["frame"])
    order = np.argsort(np.concatenate(ids))  # blocks may arrive in any order
    np.testing.assert_array_equal(np.concatenate(ids)[order], np.arange(130))
    np.testing.assert_array_equal(np.concatenate(embs)[order], np.stack([r["emb"] for r in want]))
    np.testing.assert_array_equal(np.concatenate(frames)[order], np.stack([r["frame"] for r in want]))


def test_count_select_and_limit(files):
    d, paths = files
    ds = mar.read_msgpack([str(p) for p in paths])
    assert ds.count() == 130
    rows = ds.select_columns(["label", "id"]).take_all()
    assert sorted((r["id"], r["label"]) for r in rows) == [(i, f"item-{i % 5}") for i in range(130)]
    assert set(rows[0]) == {"label", "id"}
    assert len(ds.limit(7).take_all()) == 7


def test_same_rows_as_the_single_machine_reader(files):
    d, paths = files
    got = mar.read_msgpack(str(d), tensor="array", include_path_column=True).to_arrow_refs()
    table = pa.concat_tables(ray.get(got)).sort_by("id")
    want = pa.concat_tables([pa.table(ma.read_arrow(p)) for p in paths])
    assert table.drop_columns(["path"]).to_pylist() == want.to_pylist()
    assert table["path"].to_pylist() == [str(p) for p, (lo, hi) in zip(paths, BOUNDS) for _ in range(lo, hi)]


def test_torch_batches(files):
    torch = pytest.importorskip("torch")
    d, _ = files
    batch = next(iter(mar.read_msgpack(str(d / "*.msgpack"), columns=["emb"]).iter_torch_batches(batch_size=8)))
    assert batch["emb"].shape == (8, 8) and batch["emb"].dtype == torch.float32


def test_projection_keeps_the_order_asked_for(files):
    d, _ = files
    ds = mar.read_msgpack(str(d / "*.msgpack")).select_columns(["label", "id"])
    assert ds.schema().names == ["label", "id"]
    assert list(ds.take(1)[0]) == ["label", "id"]
