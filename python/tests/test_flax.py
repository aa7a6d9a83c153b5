"""Flax's ``msgpack_serialize`` (``flax.serialization``: JAX checkpoints, HuggingFace's
``flax_model.msgpack``): ndarrays are ext 1, numpy scalars ext 3, Python complex ext 2. The
reference is Flax's own ``msgpack_restore``.

The files and the reference are made in a child process, once: importing JAX here would make
every later fork of this test process unsafe (JAX is multithreaded).
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma

MAKE = r"""
import pickle, sys
import numpy as np
import flax.serialization as fs
import jax.numpy as jnp

rng = np.random.default_rng(5)
tree = {
    "params": {
        "Dense_0": {"kernel": rng.random((3, 4), dtype=np.float32), "bias": np.zeros(4, np.float32)},
        "Embed": {"embedding": rng.random((5, 2)).astype(np.float16)},
    },
    "step": np.int64(7),
    "lr": np.float32(0.5),
    "c": 1 + 2j,
    "name": "run",
    "mask": np.array([True, False]),
    "t": np.array(["2020-01-01T00:00:00.000000001", "NaT"], dtype="datetime64[ns]"),
    "d": np.array([3, -1], dtype="timedelta64[s]"),
    "z": np.array([1 + 1j, 2 - 3j], dtype=np.complex64),
    "i8": np.arange(6, dtype=np.int8).reshape(2, 3),
    "u2": np.arange(4, dtype=np.uint16),
}
recs = [{"id": i, "x": rng.random(3, dtype=np.float32), "s": np.float64(i) / 3} for i in range(50)]
bf16 = {"layer": {"w": jnp.asarray(rng.standard_normal((4, 3)), dtype=jnp.bfloat16), "b": jnp.zeros(3, jnp.bfloat16)}}
files = {
    "tree": fs.msgpack_serialize(tree),
    "recs": b"".join(fs.msgpack_serialize(r) for r in recs),
    "bf16": fs.msgpack_serialize(bf16),
    "blobs": [fs.msgpack_serialize(r["x"]) for r in recs],
    "columns": fs.msgpack_serialize({"a": np.arange(3, dtype=np.int32)}),
}
w = fs.msgpack_restore(files["bf16"])["layer"]["w"]
ref = {
    "tree": fs.msgpack_restore(files["tree"]),
    "recs": [fs.msgpack_restore(fs.msgpack_serialize(r)) for r in recs],
    "bf16_w": np.asarray(w, dtype=np.float32),
    "bf16_dtype": str(w.dtype),
}
with open(sys.argv[1], "wb") as f:
    pickle.dump({"files": files, "ref": ref}, f)
"""


@pytest.fixture(scope="module")
def flax(tmp_path_factory):
    out = tmp_path_factory.mktemp("flax") / "made.pickle"
    done = subprocess.run([sys.executable, "-c", MAKE, str(out)], capture_output=True, text=True)
    if done.returncode != 0 and "No module named" in done.stderr:
        pytest.skip(f"flax is pinned in tests/requirements.txt: {done.stderr.splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    with open(out, "rb") as f:
        return pickle.load(f)


def _check_leaf(got: pl.Series, want) -> None:
    """One row's value of `got` against Flax's leaf (complex as a trailing (real, imag) axis)."""
    want = np.asarray(want)
    if want.dtype.kind == "c":
        part = pl.Float32 if want.dtype.itemsize == 8 else pl.Float64
        assert got.dtype == pl.Array(part, (*want.shape, 2)) or (want.shape == () and got.dtype == pl.Array(pl.Float64, 2))
        np.testing.assert_array_equal(np.asarray(got.to_list()[0]), np.stack([want.real, want.imag], -1))
        return
    arr = got.to_numpy()
    arr = arr[0] if want.shape else arr
    if want.dtype.kind not in "Mm":
        assert arr.dtype == want.dtype.newbyteorder("="), (arr.dtype, want.dtype)
    np.testing.assert_array_equal(arr, want if want.shape else [want])


def test_a_checkpoint_reads_as_flax_restores_it(flax):
    blob, ref = flax["files"]["tree"], flax["ref"]["tree"]
    df = ma.read_msgpack(blob)
    assert df.height == 1
    assert df.schema["params"] == pl.Struct(
        {
            "Dense_0": pl.Struct({"bias": pl.Array(pl.Float32, 4), "kernel": pl.Array(pl.Float32, (3, 4))}),
            "Embed": pl.Struct({"embedding": pl.Array(pl.Float16, (5, 2))}),
        }
    )
    params = df["params"].struct.unnest()
    dense = params["Dense_0"].struct.unnest()
    _check_leaf(dense["kernel"], ref["params"]["Dense_0"]["kernel"])
    _check_leaf(dense["bias"], ref["params"]["Dense_0"]["bias"])
    _check_leaf(params["Embed"].struct.unnest()["embedding"], ref["params"]["Embed"]["embedding"])
    for k in ["step", "lr", "mask", "i8", "u2", "z", "c", "t", "d"]:
        _check_leaf(df[k], ref[k])
    assert df["name"].to_list() == [ref["name"]]
    assert df.schema["t"] == pl.Array(pl.Datetime("ns"), 2) and df["t"][0].null_count() == 1
    # written back in msgpack-numpy's form, which msgpack_numpy reads as the same arrays
    back = mn.unpackb(ma.write_msgpack(df), raw=False)
    np.testing.assert_array_equal(back["params"]["Dense_0"]["kernel"], ref["params"]["Dense_0"]["kernel"])
    assert back["params"]["Embed"]["embedding"].dtype == np.float16


def test_a_stream_of_records_and_the_flax_dialect(flax):
    data, ref = flax["files"]["recs"], flax["ref"]["recs"]
    for dialect in ["auto", "flax"]:
        df = ma.read_msgpack(data, dialect=dialect)
        assert df.schema == pl.Schema({"id": pl.Int64, "s": pl.Float64, "x": pl.Array(pl.Float32, 3)})
        np.testing.assert_array_equal(df["x"].to_numpy(), np.stack([r["x"] for r in ref]))
        assert df["s"].to_list() == [r["s"] for r in ref]
    # msgpack-numpy alone does not know Flax's ext values: they stay ext values (code, data)
    raw = ma.read_msgpack(data, dialect="msgpack-numpy")
    assert raw.schema["x"] == pl.Struct({"code": pl.Int8, "data": pl.Binary})
    assert raw["x"].struct.field("code").unique().to_list() == [1]
    # and a Binary column of Flax-serialized arrays
    got = pl.Series("b", flax["files"]["blobs"]).msgpack.decode()
    assert got.dtype == pl.Array(pl.Float32, 3)
    np.testing.assert_array_equal(got.to_numpy(), np.stack([r["x"] for r in ref]))


def test_bfloat16_widens_to_float32_exactly(flax):
    assert flax["ref"]["bf16_dtype"] == "bfloat16"
    got = ma.read_msgpack(flax["files"]["bf16"])["layer"].struct.field("w")
    assert got.dtype == pl.Array(pl.Float32, (4, 3))
    np.testing.assert_array_equal(got.to_numpy()[0], flax["ref"]["bf16_w"])


def test_other_ext_1_payloads_stay_ext_values_and_the_flax_dialect_names_them(flax):
    # an ext 1 of another application (not Flax's (shape, name, bytes)): auto keeps it
    other = msgpack.packb({"a": msgpack.ExtType(1, b"\x01\x02\x03")})
    df = ma.read_msgpack(other)
    assert df["a"].to_list() == [{"code": 1, "data": b"\x01\x02\x03"}]
    with pytest.raises(ma.DecodeError, match="Flax ext 1") as e:
        ma.read_msgpack(other, dialect="flax")
    assert e.value.offset is not None
    # Flax's shape but no numpy dtype name: another application's, kept
    lookalike = msgpack.packb({"e": msgpack.ExtType(1, msgpack.packb([[2], "hello", b"ab"]))})
    assert ma.read_msgpack(lookalike)["e"].to_list() == [{"code": 1, "data": msgpack.packb([[2], "hello", b"ab"])}]
    with pytest.raises(ma.DecodeError, match="not a numpy dtype name"):
        ma.read_msgpack(lookalike, dialect="flax")
    # Flax's form with too few bytes for its shape
    short = msgpack.packb({"a": msgpack.ExtType(1, msgpack.packb([[4], "int32", b"\0" * 12]))})
    with pytest.raises(ma.DecodeError, match="12 bytes"):
        ma.read_msgpack(short)
    # one map of ndarrays is a columns map, as it is from msgpack_numpy
    assert ma.read_msgpack(flax["files"]["columns"])["a"].to_list() == [0, 1, 2]
