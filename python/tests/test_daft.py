"""msgpack_arrow.daft: a Daft DataSource over msgpack-numpy files, checked in-process against the
arrays msgpack_numpy wrote and against the single-machine reader."""

from __future__ import annotations

import msgpack_numpy as mn
import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
daft = pytest.importorskip("daft")

import msgpack_arrow as ma  # noqa: E402
from conftest import PART_BOUNDS, write_parts  # noqa: E402
import msgpack_arrow._files as files_mod  # noqa: E402
import msgpack_arrow.daft as madf  # noqa: E402

BOUNDS = PART_BOUNDS


def record(i: int) -> dict:
    return {
        "id": i,
        "label": f"item-{i % 5}",
        "emb": (np.sin(np.arange(8) + i) * 3).astype("<f4"),
        "frame": np.arange(6, dtype="<u2").reshape(2, 3) + i,
        "score": None if i % 7 == 0 else float(i) / 3,
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("daft")
    return d, write_parts(d, record)


@pytest.fixture
def pushed(monkeypatch):
    """The (columns, n_rows) each task read its file with."""
    seen: list[tuple[list[str] | None, int | None]] = []
    batches = files_mod.Plan.batches

    def spy(self, path, columns=None, n_rows=None):
        seen.append((None if columns is None else list(columns), n_rows))
        return batches(self, path, columns, n_rows)

    monkeypatch.setattr(files_mod.Plan, "batches", spy)
    return seen


def test_tensors_are_daft_tensors_with_the_arrays_msgpack_numpy_wrote(files):
    d, _ = files
    df = madf.read_msgpack(str(d / "*.msgpack"))
    schema = df.schema()
    assert schema["emb"].dtype == daft.DataType.tensor(daft.DataType.float32(), (8,))
    assert schema["frame"].dtype == daft.DataType.tensor(daft.DataType.uint16(), (2, 3))
    out = df.to_pydict()
    want = [record(i) for i in range(130)]
    assert out["id"] == [r["id"] for r in want]
    assert out["score"] == [r["score"] for r in want]
    for got, r in zip(out["frame"], want):
        assert got.dtype == np.uint16 and got.shape == (2, 3)
        np.testing.assert_array_equal(got, r["frame"])
    np.testing.assert_array_equal(np.stack(out["emb"]), np.stack([r["emb"] for r in want]))


def test_same_table_as_the_single_machine_reader(files):
    d, paths = files
    got = madf.read_msgpack(str(d), tensor="array").to_arrow()
    want = pa.concat_tables([pa.table(ma.read_arrow(p)) for p in paths])
    assert got.select(want.column_names).to_pylist() == want.to_pylist()


def test_columns_and_limit_are_pushed_into_the_tasks(files, pushed):
    d, _ = files
    df = madf.read_msgpack(str(d / "*.msgpack"))
    assert df.select("id", "label").limit(5).to_pydict() == {
        "id": list(range(5)),
        "label": [f"item-{i % 5}" for i in range(5)],
    }
    assert pushed and all(c == ["id", "label"] and n == 5 for c, n in pushed)


def test_a_filter_on_a_column_not_selected_sees_all_rows_before_the_limit(files, pushed):
    # Daft filters a task's rows after the read, then limits: the task must not stop at the
    # limit, and must read the filter's column although the projection leaves it out
    d, _ = files
    df = madf.read_msgpack(str(d / "*.msgpack"))
    got = df.where(df["id"] >= 37).select("label").limit(6).to_pydict()
    assert got == {"label": [f"item-{i % 5}" for i in range(37, 43)]}
    assert all(n is None and c is not None and "id" in c for c, n in pushed)


def test_columns_and_path_column(files):
    d, paths = files
    df = madf.read_msgpack([str(p) for p in paths], columns=["id"], include_path_column="file")
    out = df.to_pydict()
    assert list(out) == ["id", "file"]
    assert out["file"] == [str(p) for p, (lo, hi) in zip(paths, BOUNDS) for _ in range(lo, hi)]
    with pytest.raises(KeyError, match="nope"):
        madf.read_msgpack(str(d), columns=["nope"])


def test_an_empty_file_gives_no_rows(tmp_path):
    (tmp_path / "a.msgpack").write_bytes(mn.packb({"id": 1, "x": np.ones(2, "<f8")}))
    (tmp_path / "b.msgpack").write_bytes(b"")
    out = madf.read_msgpack(str(tmp_path)).to_pydict()
    assert out["id"] == [1]


def test_count_rows_reads_one_column(files, pushed):
    d, _ = files
    assert madf.read_msgpack(str(d / "*.msgpack")).count_rows() == 130
    assert all(c is not None and len(c) <= 1 for c, _ in pushed)
