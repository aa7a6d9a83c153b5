"""Files of older eras, spelled as their packers wrote them, read as msgpack_numpy reads them and
written back byte for byte.

* msgpack before 1.0 packed with ``use_bin_type=False`` by default: every ``bytes`` (the map keys
  ``b'nd'``..., ``kind``, the payload) is a raw str, and no str8 is used (a string of 32-255
  bytes takes str16). msgpack_numpy 0.4's own ``encode`` through ``msgpack.packb`` wrote so until
  2020.
* msgpack_numpy before 0.3.9 wrote no ``kind``: ``{nd, type, shape, data}``. Its ``encode`` is
  reproduced below from its source (0.3.8, 2017), as it does not run on numpy 2 (``tostring``).

The reference reader is Python ``msgpack_numpy`` (``raw=True``, which such files need).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import msgpack
import msgpack_numpy as mn
import numpy as np
import pytest

import msgpack_arrow as ma


def encode_0_3_8(obj):
    """msgpack_numpy 0.3.8's ``encode`` (``tostring()`` is ``tobytes()`` under another name)."""
    if isinstance(obj, np.ndarray):
        return {b"nd": True, b"type": obj.dtype.str, b"shape": obj.shape, b"data": obj.tobytes()}
    if isinstance(obj, (np.bool_, np.number)):
        return {b"nd": False, b"type": obj.dtype.str, b"data": obj.tobytes()}
    if isinstance(obj, complex):
        return {b"complex": True, b"data": obj.__repr__()}
    return obj


ENCODERS = {"msgpack_numpy 0.4": mn.encode, "msgpack_numpy 0.3.8": encode_0_3_8}


def records(n: int = 5) -> list[dict]:
    rng = np.random.default_rng(3)
    return [
        {
            "id": i,
            "emb": rng.standard_normal(4).astype("<f4"),
            "img": rng.integers(0, 255, (2, 3), dtype="u1"),
            "ragged": np.arange(i + 1, dtype=">i2"),
            # 40 characters: str16 from a raw packer, str8 from a newer one
            "path": f"/data/shards/{i:04d}/" + "x" * 22,
            "score": np.float32(i / 4),
            "z": complex(i, -1),
            # keys of 32-255 bytes: str16 from a raw packer, at the top and nested
            "a_long_column_name_for_str16_keys": {"a_long_nested_key_for_str16_keys": i},
        }
        for i in range(n)
    ]


def pack(objs, encoder, use_bin_type: bool) -> bytes:
    return b"".join(msgpack.packb(o, default=encoder, use_bin_type=use_bin_type) for o in objs)


CASES = [(name, ubt) for name in ENCODERS for ubt in (False, True)]


@pytest.mark.parametrize("name,use_bin_type", CASES)
def test_records_of_every_era_read_as_python_and_write_back_byte_for_byte(name, use_bin_type):
    recs = records()
    data = pack(recs, ENCODERS[name], use_bin_type)
    ref = list(msgpack.Unpacker(io.BytesIO(data), object_hook=mn.decode, raw=True))
    df = ma.read_msgpack(data)
    np.testing.assert_array_equal(df["emb"].to_numpy(), np.stack([r[b"emb"] for r in ref]))
    np.testing.assert_array_equal(df["img"].to_numpy(), np.stack([r[b"img"] for r in ref]))
    assert [np.array(v).tolist() for v in df["ragged"]] == [r[b"ragged"].tolist() for r in ref]
    assert df["path"].to_list() == [r[b"path"].decode() for r in ref]
    assert df["score"].to_list() == [float(r[b"score"]) for r in ref]
    assert df["z"].to_list() == [[r[b"z"].real, r[b"z"].imag] for r in ref]
    # written back as the era's packer wrote it: through Arrow, and through Polars with the
    # numpy facts kept
    assert ma.write_msgpack(ma.read_arrow(data), None, layout="auto") == data
    assert ma.write_msgpack(ma.read_msgpack(data, numpy_types="extension"), None) == data


@pytest.mark.parametrize("name,use_bin_type", CASES)
def test_columns_values_and_bare_ndarrays_of_every_era(name, use_bin_type):
    enc = ENCODERS[name]
    cols = {"a": np.arange(6, dtype="<f8").reshape(3, 2), "b": np.array([1, 2, 3], dtype="<i4")}
    values = [np.arange(3, dtype="<u2") + k for k in range(4)]
    bare = np.arange(12, dtype="<f4").reshape(4, 3)
    for obj, layout in [([cols], "columns"), (values, "values"), ([bare], "values")]:
        data = pack(obj, enc, use_bin_type)
        got = ma.read_arrow(data, layout=layout)
        assert ma.write_msgpack(got, None, layout="auto") == data, layout
    ref = mn.unpackb(pack([cols], enc, use_bin_type), raw=True)
    df = ma.read_msgpack(pack([cols], enc, use_bin_type))
    np.testing.assert_array_equal(df["a"].to_numpy(), ref[b"a"])


def test_a_file_of_mixed_spellings_is_written_in_todays():
    # old rows then new ones (two writers appending to one file): each fact kept only where
    # every map agrees, so the output is msgpack_numpy 0.4's spelling, and reads the same
    recs = records(4)
    data = pack(recs[:2], encode_0_3_8, False) + pack(recs[2:], mn.encode, True)
    out = ma.write_msgpack(ma.read_arrow(data), None, layout="auto")
    assert out == pack(recs, mn.encode, True)
    a, b = ma.read_msgpack(data), ma.read_msgpack(out)
    assert a.equals(b)


def test_asking_for_msgpack_numpy_writes_todays_spelling():
    recs = records(3)
    old = pack(recs, encode_0_3_8, False)
    out = ma.write_msgpack(ma.read_arrow(old), None, layout="auto", dialect="msgpack-numpy")
    assert out == pack(recs, mn.encode, True)


def test_cli_convert_keeps_the_spelling_through_parquet(tmp_path):
    data = pack(records(), mn.encode, False)
    src = tmp_path / "old.msgpack"
    src.write_bytes(data)
    exe = Path(sys.executable).with_name("msgpack-arrow")
    for mid in ["back.msgpack", "t.parquet", "t.feather"]:
        subprocess.run([str(exe), "convert", str(src), "-o", str(tmp_path / mid), "--quiet"], check=True)
        if mid != "back.msgpack":
            subprocess.run([str(exe), "convert", str(tmp_path / mid), "-o", str(tmp_path / "back.msgpack"), "--quiet"], check=True)
        assert (tmp_path / "back.msgpack").read_bytes() == data, mid
