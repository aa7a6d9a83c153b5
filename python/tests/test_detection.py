"""What is not MessagePack is never read as numbers: text and other formats are refused by name
(an explicit layout="values" still reads text), compressed data is read whatever its name, and
the CLI refuses outputs its own readers could not read back."""

from __future__ import annotations

import bz2
import gzip
import lzma
import pickle
import subprocess
import sys
from pathlib import Path

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma

TEXTS = {
    "t.csv": "id,name,score\n1,alpha,0.5\n2,beta,0.25\n",
    "t.json": '{"records": [{"id": 1, "name": "alpha"}]}\n',
    "notes.txt": "These are my dumps.\nThe big one is from Tuesday.\n",
    "t.py": "import numpy as np\nprint(np.arange(3))\n",
    # JSON without a word of two letters (every byte a small msgpack int)
    "numbers.json": "[1, 2, 3]\n",
    "short.json": '{"a": 1}',
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_text_is_refused_by_every_reader(tmp_path, name):
    p = tmp_path / name
    p.write_text(TEXTS[name])
    for read in (ma.read_msgpack, lambda s: ma.scan_msgpack(s).collect(), lambda s: pl.DataFrame(ma.read_arrow(s))):
        with pytest.raises(ma.DecodeError, match="looks like text"):
            read(p)
    with pytest.raises(ma.DecodeError, match="looks like text"):
        ma.read_msgpack(p.read_bytes())
    # asked for explicitly, it is a column of the small integers the bytes are
    df = ma.read_msgpack(p, layout="values")
    assert df["value"].to_list() == list(p.read_bytes())


def test_other_formats_are_named_and_compression_is_seen_by_magic(tmp_path):
    df = pl.DataFrame({"id": [1, 2], "x": [0.5, 1.5]})
    pq = tmp_path / "x.parquet"
    df.write_parquet(pq)
    with pytest.raises(ma.DecodeError, match="Parquet file, not MessagePack"):
        ma.read_msgpack(pq)
    npz = tmp_path / "x.npz"
    np.savez(npz, a=np.arange(3))
    with pytest.raises(ma.DecodeError, match="zip archive"):
        ma.read_msgpack(npz)
    data = mn.packb({"id": 1}) + mn.packb({"id": 2})
    gz = tmp_path / "plain-name.msgpack"
    gz.write_bytes(gzip.compress(data))
    assert ma.read_msgpack(gz)["id"].to_list() == [1, 2]


def _sqlite(path: Path) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("create table t (id integer, x real)")
    con.executemany("insert into t values (?, ?)", [(i, i / 2) for i in range(10)])
    con.commit()
    con.close()


def _tar(path: Path) -> None:
    import tarfile

    inner = path.with_suffix(".inner.msgpack")
    inner.write_bytes(mn.packb({"id": 1}))
    with tarfile.open(path, "w") as t:
        t.add(inner, arcname="d.msgpack")


def _arrow_stream(path: Path) -> None:
    import pyarrow as pa

    t = pa.table({"id": [1, 2, 3], "x": [0.5, 1.5, 2.5]})
    with pa.ipc.new_stream(str(path), t.schema) as w:
        w.write_table(t)


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _tfrecord(path: Path) -> None:
    """Records as TensorFlow's TFRecordWriter frames them (no TensorFlow here): a u64 length, its
    masked CRC-32C, the bytes, their masked CRC-32C."""

    def masked(data: bytes) -> bytes:
        c = _crc32c(data)
        return (((c >> 15) | (c << 17)) + 0xA282EAD8 & 0xFFFFFFFF).to_bytes(4, "little")

    out = b""
    for rec in (b"\x0a\x0b\x0a\x02id\x12\x05\x1a\x03\x0a\x01\x01", b"\x0a\x00"):
        n = len(rec).to_bytes(8, "little")
        out += n + masked(n) + rec + masked(rec)
    path.write_bytes(out)


# files of other formats, each written by its own producer, and the name the refusal gives
PRODUCED = {
    **{f"pickle{p}": (lambda path, p=p: path.write_bytes(pickle.dumps({"emb": np.ones(3)}, protocol=p)), "Python pickle")
       for p in (2, 3, 4, 5)},
    "arrow stream": (_arrow_stream, "Arrow IPC stream"),
    "sqlite": (_sqlite, "SQLite database"),
    "tfrecord": (_tfrecord, "TFRecord file"),
    "tar": (_tar, "tar archive"),
    "xz": (lambda path: path.write_bytes(lzma.compress(mn.packb({"id": 1}))), "xz-compressed"),
    "bzip2": (lambda path: path.write_bytes(bz2.compress(mn.packb({"id": 1}))), "bzip2-compressed"),
    "utf-16 json": (lambda path: path.write_text('{"a": [1, 2, 3]}', encoding="utf-16"), "looks like text"),
    "utf-8 bom csv": (lambda path: path.write_text("id,x\n1,2\n", encoding="utf-8-sig"), "looks like text"),
}


@pytest.mark.parametrize("name", sorted(PRODUCED))
def test_other_formats_people_keep_beside_dumps_are_refused_by_name(tmp_path, name):
    make, says = PRODUCED[name]
    p = tmp_path / "d.msgpack"
    make(p)
    for read in (ma.read_msgpack, lambda s: ma.scan_msgpack(s).collect()):
        with pytest.raises(ma.DecodeError, match=says):
            read(p)
    with pytest.raises(ma.DecodeError, match=says):
        ma.read_msgpack(p.read_bytes())


def test_infer_rows_and_n_rows_stop_before_a_later_conflict():
    data = mn.packb({"a": 1}) + mn.packb({"a": "two"})
    assert ma.read_msgpack(data, infer_rows=1, n_rows=1)["a"].to_list() == [1]
    assert ma.read_msgpack(data, n_rows=1)["a"].to_list() == [1]
    with pytest.raises(ma.DecodeError, match="type conflict"):
        ma.read_msgpack(data)


def _objects(data: bytes) -> list:
    """The top-level objects msgpack_numpy's reader sees, ndarrays as lists."""
    unpacker = msgpack.Unpacker(object_hook=mn.decode, raw=False)
    unpacker.feed(data)

    def plain(v):
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    return [plain(o) for o in unpacker]


ARRAYS = [np.arange(3, dtype=np.float32) + i for i in range(5)]
CONTAINERS = {
    # one top-level array: its elements are the rows
    "one array of ndarrays": mn.packb(ARRAYS),
    "one array of ints": msgpack.packb(list(range(7))),
    # several: each is one row (its elements walk as rows until the next array is met)
    "arrays of ndarrays": mn.packb(ARRAYS[:3]) + mn.packb(ARRAYS[3:]),
    "arrays of ints": msgpack.packb([1, 2, 3]) + msgpack.packb([4, 5]) + msgpack.packb([6]),
    # elements that could not be rows of one column, in arrays that are rows of one
    "arrays of mixed elements": msgpack.packb([1, [2]]) + msgpack.packb([3, [4]]),
    "an empty array, then another": msgpack.packb([]) + msgpack.packb([1, 2]),
}


@pytest.mark.parametrize("name", sorted(CONTAINERS))
@pytest.mark.parametrize("n_rows", [None, 1, 2])
def test_top_level_arrays_are_rows_unless_one_is_alone(name, n_rows):
    data = CONTAINERS[name]
    objects = _objects(data)
    rows = objects[0] if len(objects) == 1 else objects
    want = rows if n_rows is None else rows[:n_rows]
    if name == "arrays of mixed elements":
        # a column holds one type: an int and a list in one row conflict
        with pytest.raises(ma.DecodeError, match="conflict"):
            ma.read_msgpack(data, n_rows=n_rows)
        return
    readers = {
        "read_msgpack": lambda: ma.read_msgpack(data, n_rows=n_rows),
        "scan_msgpack": lambda: ma.scan_msgpack(data, n_rows=n_rows).collect(),
        "read_arrow": lambda: pl.DataFrame(ma.read_arrow(data, n_rows=n_rows)),
    }
    for how, read in readers.items():
        got = read()["value"].to_list()
        assert got == want, how


def _cli(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("msgpack-arrow")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_outputs_the_tool_could_not_read_back_are_refused(tmp_path):
    src = tmp_path / "d.msgpack"
    src.write_bytes(b"".join(mn.packb({"id": i, "emb": np.full(2, i, dtype="<f4")}) for i in range(4)))
    for args, says in [
        (["--columns", "id,id", "-o", str(tmp_path / "a.parquet")], "selected twice"),
        (["--format", "npz", "-o", str(tmp_path / "b.parquet")], "contradicts the extension"),
        (["--aligned", "-o", str(tmp_path / "c.parquet")], "--aligned applies to msgpack outputs only"),
        (["--dataset", "--partition-by", "emb", "-o", str(tmp_path / "ds")], "not a scalar column"),
    ]:
        r = _cli("convert", str(src), *args)
        assert r.returncode == 1 and says in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not any(p.suffix == ".parquet" for p in tmp_path.iterdir())
    assert not list((tmp_path / "ds").glob("emb=*")) if (tmp_path / "ds").exists() else True
