"""DuckDB queries read_arrow(...) directly (SQL over a dump, through __arrow_c_stream__)."""

from __future__ import annotations

import msgpack_numpy as mn
import numpy as np
import pytest

import msgpack_arrow as ma

duckdb = pytest.importorskip("duckdb", reason="duckdb is pinned in tests/requirements.txt")


def test_sql_over_a_dump(tmp_path):
    rows = [{"id": i, "label": "cat" if i % 3 else "dog", "emb": np.full(4, i, dtype="<f4")} for i in range(30)]
    p = tmp_path / "d.msgpack"
    p.write_bytes(b"".join(mn.packb(r) for r in rows))
    dump = ma.read_arrow(str(p))
    got = duckdb.sql("select label, count(*), sum(id) from dump group by label order by label").fetchall()
    want = sorted(
        (lab, sum(1 for r in rows if r["label"] == lab), sum(r["id"] for r in rows if r["label"] == lab))
        for lab in {"cat", "dog"}
    )
    assert got == want
    emb = duckdb.sql("select emb from dump where id = 7").fetchall()[0][0]
    assert list(emb) == rows[7]["emb"].tolist()
