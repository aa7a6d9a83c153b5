"""``npy_ext=CODE``: ndarrays stored as ``np.save`` bytes in a msgpack ext value, as msgpack and
msgspec users write them. Files are made with the real producers (``msgpack.ExtType``,
``msgspec.msgpack.Ext``, numpy's ``np.save`` / ``np.lib.format.write_array``) and every value is
compared with what ``np.load`` gives back for the same bytes."""

from __future__ import annotations

import io

import msgpack
import msgspec
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma
from test_cli_command import run as cli

CODE = 42


def npy(a: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a, allow_pickle=False)
    else:
        np.lib.format.write_array(buf, a, version=version, allow_pickle=False)
    return buf.getvalue()


def pack(obj) -> bytes:
    def default(o):
        if isinstance(o, np.ndarray):
            return msgpack.ExtType(CODE, npy(o))
        raise TypeError(type(o))

    return msgpack.packb(obj, default=default)


def loaded(ext_bytes: bytes) -> np.ndarray:
    return np.load(io.BytesIO(ext_bytes), allow_pickle=False)


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<i2", "|u1", ">f8", ">i4", "|b1", "<u8"])
def test_records_of_npy_tensors_equal_np_load(dtype):
    rng = np.random.default_rng(7)
    arrays = [(rng.random((3, 4)) * 100).astype(dtype) for _ in range(6)]
    data = b"".join(pack({"id": i, "x": a}) for i, a in enumerate(arrays))
    df = ma.read_msgpack(data, npy_ext=CODE)
    assert df["id"].to_list() == list(range(6))
    want = np.stack([loaded(npy(a)) for a in arrays])
    got = df["x"].to_numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(want.dtype.newbyteorder("=")))


def test_fortran_order_and_format_versions():
    a = np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4))
    b = np.arange(12, dtype="<i8").reshape(3, 4)
    assert npy(a)[8:].startswith(b"v\x00") and b"'fortran_order': True" in npy(a)
    rows = [{"t": a, "k": 0}, {"t": np.ascontiguousarray(a) + 1, "k": 1}]
    df = ma.read_msgpack(b"".join(pack(r) for r in rows), npy_ext=CODE)
    np.testing.assert_array_equal(df["t"].to_numpy(), np.stack([a, np.ascontiguousarray(a) + 1]))
    for version in [(1, 0), (2, 0), (3, 0)]:
        data = b"".join(msgpack.packb({"v": msgpack.ExtType(CODE, npy(b + i, version))}) for i in range(3))
        got = ma.read_msgpack(data, npy_ext=CODE)["v"].to_numpy()
        np.testing.assert_array_equal(got, np.stack([b + i for i in range(3)]))


def test_ragged_shapes_become_lists():
    arrays = [np.arange(n, dtype="<f4") for n in (2, 5, 1)]
    df = ma.read_msgpack(b"".join(pack({"x": a}) for a in arrays), npy_ext=CODE)
    assert df.schema["x"] == pl.List(pl.Float32)
    assert df["x"].to_list() == [a.tolist() for a in arrays]


def test_msgspec_ext_producer():
    def enc_hook(o):
        if isinstance(o, np.ndarray):
            return msgspec.msgpack.Ext(CODE, npy(o))
        raise NotImplementedError

    enc = msgspec.msgpack.Encoder(enc_hook=enc_hook)
    embs = np.random.default_rng(1).random((5, 8)).astype("<f4")
    data = b"".join(enc.encode({"id": i, "emb": e}) for i, e in enumerate(embs))
    df = ma.read_msgpack(data, npy_ext=CODE)
    assert df.schema["emb"] == pl.Array(pl.Float32, 8)
    np.testing.assert_array_equal(df["emb"].to_numpy(), embs)


def test_one_bare_npy_value_gives_its_rows():
    a = np.arange(10, dtype="<i4").reshape(5, 2)
    df = ma.read_msgpack(pack(a), npy_ext=CODE)
    assert df["value"].to_list() == a.tolist()


def test_without_the_option_or_with_another_code_the_ext_values_are_kept_as_msgpack_gives_them():
    data = pack({"x": np.zeros(3, dtype="<f4")})
    want = msgpack.unpackb(data)["x"]
    for kw in ({}, {"npy_ext": 7}):
        df = ma.read_msgpack(data, **kw)
        assert df.schema["x"] == pl.Struct({"code": pl.Int8, "data": pl.Binary})
        assert df["x"].to_list() == [{"code": want.code, "data": want.data}] == [{"code": CODE, "data": npy(np.zeros(3, dtype="<f4"))}]


@pytest.mark.parametrize(
    "payload, says",
    [
        (b"not npy at all", "magic"),
        (b"\x93NUMPY\x01\x00\x40\x00{'descr': '<f4'", "header runs past"),
        (b"\x93NUMPY\x01\x00\x0f\x00{'shape': (2,)}", "descr"),
        (npy(np.zeros(4, dtype="<f4"))[:-3], "data has 13 bytes"),
        (npy(np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])), "structured"),
    ],
)
def test_bad_npy_bytes_are_a_positioned_error(payload, says):
    data = msgpack.packb({"id": 1}) + msgpack.packb({"id": 2, "x": msgpack.ExtType(CODE, payload)})
    with pytest.raises(ma.DecodeError, match=says) as ei:
        ma.read_msgpack(data, npy_ext=CODE)
    assert ei.value.offset is not None and ei.value.offset >= len(msgpack.packb({"id": 1}))


def test_cli_npy_ext(tmp_path):
    p = tmp_path / "e.msgpack"
    p.write_bytes(b"".join(pack({"id": i, "x": np.full(3, i, dtype="<i2")}) for i in range(3)))
    r = cli("schema", "--npy-ext", str(CODE), str(p))
    assert r.returncode == 0, r.stderr
    assert "x: i16[3]" in r.stdout, r.stdout
    out = tmp_path / "e.parquet"
    assert cli("convert", str(p), "-o", str(out), "--npy-ext", str(CODE)).returncode == 0
    assert pl.read_parquet(out)["x"].to_list() == [[i] * 3 for i in range(3)]


def test_a_header_key_given_twice_takes_its_last_value_as_numpy_does():
    # a Python dict literal keeps the last value of a repeated key
    body = np.arange(3, dtype="<i8").tobytes()
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'descr': '<i8', }"
    header = header + " " * (63 - (10 + len(header)) % 64) + "\n"
    raw = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + body
    ref = np.load(io.BytesIO(raw))
    assert ref.dtype == np.dtype("<i8")
    got = ma.read_msgpack(msgpack.packb({"a": msgpack.ExtType(CODE, raw)}), npy_ext=CODE)  # a columns map
    assert got.schema["a"] == pl.Int64 and got["a"].to_list() == ref.tolist()
