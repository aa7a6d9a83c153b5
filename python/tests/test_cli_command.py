"""The `msgpack-arrow` command that `pip install` puts on the PATH: the Rust CLI inside the
extension module, with its exit codes and messages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma


def _command() -> list[str]:
    # the console script beside this interpreter (the venv's bin), else the module
    exe = Path(sys.executable).with_name("msgpack-arrow")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("msgpack-arrow")
    return [found] if found else [sys.executable, "-m", "msgpack_arrow._cli"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_command(), *args], capture_output=True, text=True, timeout=120)


def test_the_command_is_installed_with_the_package():
    assert Path(sys.executable).with_name("msgpack-arrow").exists(), "pip install gives the console script"
    r = run("--help")
    assert r.returncode == 0 and "convert" in r.stdout and "schema" in r.stdout


def test_schema_head_convert(tmp_path):
    p = tmp_path / "d.msgpack"
    p.write_bytes(b"".join(mn.packb({"id": i, "emb": np.full(3, i, dtype="<f4")}) for i in range(4)))
    r = run("schema", str(p))
    assert r.returncode == 0, r.stderr
    assert "emb: f32[3]" in r.stdout and "rows: 4" in r.stdout
    r = run("head", "-n", "2", str(p))
    assert r.returncode == 0 and "(2 rows shown)" in r.stdout, r.stdout
    r = run("head", "-n", "10", str(p))
    assert r.returncode == 0 and "(4 of 4 rows)" in r.stdout, r.stdout
    out = tmp_path / "d.parquet"
    r = run("convert", str(p), "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = pl.read_parquet(out)
    assert got["id"].to_list() == [0, 1, 2, 3]
    assert got["emb"].dtype == pl.Array(pl.Float32, 3)


@pytest.mark.parametrize("with_null_rows", [False, True])
def test_parquet_tensors_read_back_as_numpy_wrote_them(tmp_path, with_null_rows):
    # every tensor dtype and shape the Parquet writer encodes from the Arrow buffer (and, with a
    # missing row, the general path): pyarrow and polars read back numpy's values, bit for bit
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    n = 3000
    cols = {
        "f32": lambda i: rng.standard_normal(768).astype("<f4"),
        "f16": lambda i: rng.standard_normal((2, 3)).astype("<f2"),
        "f64": lambda i: rng.standard_normal((4, 1)),
        "i32": lambda i: rng.integers(-(2**31), 2**31 - 1, 5, dtype="<i4"),
        "i64": lambda i: rng.integers(-(2**62), 2**62, (2, 2, 2), dtype="<i8"),
        "wide": lambda i: rng.random(1100, dtype="<f4"),
    }
    rows = []
    for i in range(n):
        r = {"id": i, **{k: f(i) for k, f in cols.items()}}
        if with_null_rows and i % 7 == 3:
            r = {k: (v if k in ("id", "f64") else None) for k, v in r.items()}
        rows.append(r)
    src = tmp_path / "t.msgpack"
    src.write_bytes(b"".join(mn.packb(r) for r in rows))
    out = tmp_path / "t.parquet"
    r = run("convert", str(src), "-o", str(out), "--batch-size", "700")
    assert r.returncode == 0, r.stderr
    df = pl.read_parquet(out)
    for k in cols:
        want = [r[k] for r in rows]
        nulls = [i for i, w in enumerate(want) if w is None]
        # polars: the same rows missing, the same values as numpy of the same dtype
        assert [i for i, v in enumerate(df[k].is_null()) if v] == nulls, k
        p = df[k].drop_nulls().to_numpy()
        w = np.stack([w for w in want if w is not None])
        assert p.shape == w.shape and p.astype(w.dtype).tobytes() == w.tobytes(), k
        if nulls:
            # pyarrow 25 cannot read a FixedSizeList column with null rows back from Parquet, its
            # own files included ("Expected all lists to be of size=3 but index 4 had size=0",
            # apache/arrow#35692)
            continue
        got = pq.read_table(out, columns=[k]).column(k).to_pylist()
        for i, (w, g) in enumerate(zip(want, got)):
            a = np.array(g, dtype=w.dtype)
            assert a.shape == w.shape and a.tobytes() == w.tobytes(), (k, i)


def test_a_wide_map_to_parquet_is_as_small_as_polars_and_comes_back_byte_for_byte(tmp_path):
    # 2,000 float64 ndarray columns: each field's numpy metadata is in the file once, not 2,000
    # times; the CLI, and pyarrow's read of the file through write_msgpack, give numpy's bytes back
    import pyarrow.parquet as pq

    import msgpack_arrow as ma

    rng = np.random.default_rng(11)
    cols = {f"c{i}": rng.random(50) for i in range(2000)}
    cols["big"] = rng.random(50).astype(">f8")  # metadata of its own
    src = tmp_path / "w.msgpack"
    src.write_bytes(mn.packb(cols))
    out = tmp_path / "w.parquet"
    r = run("convert", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    theirs = tmp_path / "w.polars.parquet"
    pl.read_parquet(out).write_parquet(theirs)
    assert out.stat().st_size <= 1.02 * theirs.stat().st_size, (out.stat().st_size, theirs.stat().st_size)
    back = tmp_path / "back.msgpack"
    r = run("convert", str(out), "-o", str(back))
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == src.read_bytes()
    assert ma.write_msgpack(pq.read_table(out), None, layout="auto") == src.read_bytes()
    assert pq.read_table(out).schema.field("big").metadata[b"msgpack_numpy.dtype"] == b">f8"


def test_errors_are_one_line_and_leave_no_output(tmp_path):
    t = tmp_path / "notes.csv"
    t.write_text("id,name\n1,alpha\n2,beta\n")
    out = tmp_path / "n.parquet"
    r = run("convert", str(t), "-o", str(out))
    assert r.returncode == 1
    assert r.stderr.startswith(f"error: {t}: input looks like text (CSV?), not MessagePack"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()
    r = run("schema", str(tmp_path / "missing.msgpack"))
    assert r.returncode == 1 and "missing.msgpack" in r.stderr
    assert r.stderr.count("missing.msgpack") == 1, r.stderr
    r = run("convert", "--bogus")
    assert r.returncode == 2


@pytest.mark.parametrize("data", [b"", b"\x90"], ids=["empty file", "[]"])
def test_an_empty_input_converts_back_to_itself(tmp_path, data):
    src = tmp_path / "in.msgpack"
    src.write_bytes(data)
    if data:
        assert mn.unpackb(data) == []  # msgpack_numpy's reading of `[]`
    for via in [None, "mid.feather", "mid.parquet"]:
        out = tmp_path / "out.msgpack"
        out.unlink(missing_ok=True)
        steps = [src, out] if via is None else [src, tmp_path / via, out]
        for a, b in zip(steps, steps[1:]):
            r = run("convert", str(a), "-o", str(b))
            assert r.returncode == 0, r.stderr
        assert out.read_bytes() == data, via


def test_a_time_zone_dropped_by_a_msgpack_output_is_warned_of(tmp_path):
    df = pl.DataFrame({"t": pl.Series([1_700_000_000_000], dtype=pl.Datetime("ms")).dt.replace_time_zone("UTC").dt.convert_time_zone("Europe/Paris"),
                       "u": pl.Series([1], dtype=pl.Datetime("ns")).dt.replace_time_zone("UTC")})
    src = tmp_path / "tz.feather"
    df.write_ipc(src)
    r = run("convert", str(src), "-o", str(tmp_path / "tz.msgpack"))
    assert r.returncode == 0 and 'column "t" had time zone Europe/Paris' in r.stderr and '"u"' not in r.stderr
    back = ma.read_msgpack(tmp_path / "tz.msgpack")
    assert back["t"].dt.replace_time_zone("UTC").to_list() == df["t"].dt.convert_time_zone("UTC").to_list()
    r = run("convert", str(src), "-o", str(tmp_path / "tz.parquet"))
    assert r.returncode == 0 and "time zone" not in r.stderr


def test_head_shows_msgpack_timestamps_in_utc(tmp_path):
    # ext -1 reads as Timestamp(ns, "UTC"); showing a named zone needs the time zone database
    import datetime as dt

    import msgpack

    when = [dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(1969, 7, 20, 20, 17, 40, 5, tzinfo=dt.timezone.utc)]
    p = tmp_path / "t.msgpack"
    p.write_bytes(b"".join(msgpack.packb({"t": t}, datetime=True) for t in when))
    r = run("head", str(p))
    assert r.returncode == 0, r.stderr
    cells = [line.strip("| ") for line in r.stdout.splitlines() if line.startswith("| ") and "Z" in line]
    assert [dt.datetime.fromisoformat(c.replace("Z", "+00:00")) for c in cells] == when


def test_inputs_whose_nested_keys_differ_in_kind_convert_together(tmp_path):
    # a's nested keys are bytes (tagged in its schema), b's the same keys as str: the schemas
    # differ in nested field metadata only, so b's rows take a's types (they were refused)
    a, b = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    a.write_bytes(b"".join(mn.packb({"id": i, "x": {b"k": i, "n": [i]}}) for i in range(3)))
    b.write_bytes(b"".join(mn.packb({"id": i, "x": {"k": -i, "n": [i]}}) for i in range(3)))
    for out in ("ab.parquet", "ab.msgpack"):
        r = run("convert", "-q", str(a), str(b), "-o", str(tmp_path / out))
        assert r.returncode == 0, r.stderr
    df = pl.read_parquet(tmp_path / "ab.parquet")
    assert df["x"].struct.field("k").to_list() == [0, 1, 2, 0, -1, -2]
    rows = list(mn.Unpacker(open(tmp_path / "ab.msgpack", "rb"), raw=False))
    # one column, one key kind: the first input's (bytes)
    assert [r["x"] for r in rows] == [{b"k": k, "n": [i % 3]} for i, k in enumerate([0, 1, 2, 0, -1, -2])]
    # a struct of other keys (of the same types) is not relabelled as the first's: the inputs are
    # typed together as one file of both would be, every key a field, null where a map lacks it
    c = tmp_path / "c.msgpack"
    c.write_bytes(mn.packb({"id": 0, "x": {"z": 1, "m": [2]}}))
    r = run("convert", "-q", str(a), str(c), "-o", str(tmp_path / "ac.parquet"))
    assert r.returncode == 0, r.stderr
    got = pl.read_parquet(tmp_path / "ac.parquet")["x"].to_list()
    assert got == [{"k": i, "n": [i], "z": None, "m": None} for i in range(3)] + [{"k": None, "n": None, "z": 1, "m": [2]}]


def test_npz_arrays_with_a_zero_length_axis_keep_their_rows(tmp_path):
    # np.savez of a (5, 0) array beside a (5,) one: 5 rows of empty lists, not 0 rows; a header
    # declaring rows no byte backs (2**40 of them) is refused, as in msgpack
    import numpy as np

    src = tmp_path / "zw.npz"
    np.savez(src, x=np.zeros((5, 0), "<f4"), y=np.arange(5), z=np.zeros((5, 3, 0), "<i2"))
    out = tmp_path / "zw.msgpack"
    r = run("convert", "-q", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = mn.unpackb(out.read_bytes())
    want = np.load(src)
    for k in ("x", "y", "z"):
        assert got[k].shape == want[k].shape and got[k].dtype == want[k].dtype, k
        assert np.array_equal(got[k], want[k])
    assert ma.read_msgpack(out).height == 5
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(bad, "w") as z:
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 0), }"
        header = header + " " * (63 - (10 + len(header)) % 64) + "\n"
        z.writestr("x.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    r = run("convert", "-q", str(bad), "-o", str(tmp_path / "bad.msgpack"))
    assert r.returncode != 0 and "refused" in r.stderr, r.stderr


def test_convert_of_many_small_files_keeps_their_order_and_names_a_bad_one(tmp_path):
    # 120 files of 0..6 rows, decoded in runs at once: the output is every file's rows in order
    import pyarrow.feather as feather

    want = []
    for k in range(120):
        rows = [{"id": len(want) + j, "x": np.full(3, k + j, "<f4"), "s": f"f{k}"} for j in range(k % 7)]
        want.extend(rows)
        (tmp_path / f"f{k:03d}.msgpack").write_bytes(b"".join(mn.packb(r) for r in rows))
    for k in range(0, 120, 7):
        (tmp_path / f"f{k:03d}.msgpack").unlink()  # (empty files are no msgpack input)
    out = tmp_path / "all.feather"
    r = run("convert", "-q", str(tmp_path / "f*.msgpack"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    t = feather.read_table(out)
    # (the inputs' small batches are joined: one record batch, not one per file)
    import pyarrow as pa

    assert pa.ipc.open_file(out).num_record_batches == 1
    assert t["id"].to_pylist() == [w["id"] for w in want]
    assert t["s"].to_pylist() == [w["s"] for w in want]
    np.testing.assert_array_equal(np.stack(t["x"].to_numpy(zero_copy_only=False)), np.stack([w["x"] for w in want]))
    (tmp_path / "f060.msgpack").write_bytes((tmp_path / "f060.msgpack").read_bytes()[:-5])
    out.unlink()
    r = run("convert", "-q", str(tmp_path / "f*.msgpack"), "-o", str(out))
    assert r.returncode == 1 and "f060.msgpack" in r.stderr, r.stderr
    assert not out.exists()


def test_convert_types_shards_together_as_one_file(tmp_path):
    # shards differing as rows of one file may (ints then floats, a column nil in the first, a
    # key first seen later, a key a later shard lacks): one output in the types their rows
    # unify to, each value as msgpack_numpy reads it
    shards = [
        [{"a": 1, "n": None, "v": np.arange(2, dtype="<f4"), "gone": 1} for _ in range(2)],
        [{"a": 0.25, "n": "x", "v": np.ones(2, dtype="<f4"), "new": True}],
    ]
    paths = []
    for k, rs in enumerate(shards):
        p = tmp_path / f"s{k}.msgpack"
        p.write_bytes(b"".join(mn.packb(r) for r in rs))
        paths.append(str(p))
    out = tmp_path / "out.parquet"
    r = run("convert", "-q", *paths, "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = pl.read_parquet(out)
    assert dict(got.schema) == {"a": pl.Float64, "n": pl.String, "v": pl.Array(pl.Float32, 2), "gone": pl.Int64, "new": pl.Boolean}
    rows = [mn.unpackb(mn.packb(r), raw=False) for rs in shards for r in rs]
    for w, g in zip(rows, got.to_dicts(), strict=True):
        assert g == {"a": float(w["a"]), "n": w["n"], "v": w["v"].tolist(), "gone": w.get("gone"), "new": w.get("new")}
    # no one type for a column: an error naming the shard, and no output
    (tmp_path / "s2.msgpack").write_bytes(mn.packb({"a": "text"}))
    out.unlink()
    r = run("convert", "-q", *paths, str(tmp_path / "s2.msgpack"), "-o", str(out))
    assert r.returncode != 0 and "s2.msgpack" in r.stderr and '"a" is str here but f64' in r.stderr, r.stderr
    assert not out.exists()
