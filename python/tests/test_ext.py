"""msgpack ext values of types other than the timestamp (ext -1): a struct of their ``code`` and
``data``, as Python's msgpack gives them (``ExtType(code, data)``), written back byte for byte.
Files are packed by the real ``msgpack``; negative codes, which it reserves, are built by hand and
checked against its ``ext_hook``."""

from __future__ import annotations

import io

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma
from test_cli_command import run as cli

E = msgpack.ExtType
EXT = pl.Struct({"code": pl.Int8, "data": pl.Binary})
# every ext form: fixext 1/2/4/8/16, ext8 (0, 3, 255), ext16 (256, 65535), ext32 (65536)
SIZES = [0, 1, 2, 3, 4, 8, 16, 17, 255, 256, 65535, 65536]


def as_row(v):
    """A value as msgpack gives it, with each ExtType as the struct it reads as."""
    if isinstance(v, E):
        return {"code": v.code, "data": v.data}
    if isinstance(v, list):
        return [as_row(x) for x in v]
    if isinstance(v, dict):
        return {k: as_row(x) for k, x in v.items()}
    return v


def records() -> bytes:
    recs = []
    for i, n in enumerate(SIZES):
        recs.append({
            "e": E(i * 11 % 128, bytes((i + j) % 256 for j in range(n))),
            "many": [E(1, b""), E(127, b"ab")] if i % 2 else [None],
            "inner": {"x": E(5, b"\x00" * 16) if i % 3 else None},
            "id": i,
        })
    recs.append({"e": None, "many": [], "inner": {"x": None}, "id": -1})
    return b"".join(msgpack.packb(r) for r in recs)


def test_ext_values_read_as_msgpack_unpacks_them():
    data = records()
    df = ma.read_msgpack(data)
    assert df.schema["e"] == EXT
    assert df.schema["many"] == pl.List(EXT)
    assert df.schema["inner"] == pl.Struct({"x": EXT})
    want = [as_row(r) for r in msgpack.Unpacker(io.BytesIO(data))]
    assert df.to_dicts() == want


def test_a_stream_of_ext_values_and_negative_codes():
    # msgpack's ExtType refuses codes below 0 (reserved), but files hold them: built by hand
    vals = [msgpack.packb(E(c, bytes(i % 256 for i in range(n)))) for c, n in [(0, 0), (3, 1), (127, 9), (64, 300)]]
    vals += [b"\xd4\xfb\x07", b"\xc7\x03\x80abc", b"\xc0"]  # codes -5 and -128, then nil
    data = b"".join(vals)
    got = ma.read_msgpack(data)["value"].to_list()
    want = list(msgpack.Unpacker(io.BytesIO(data), ext_hook=lambda c, d: {"code": c, "data": d}))
    assert got == want
    assert [w["code"] for w in want if w] == [0, 3, 127, 64, -5, -128]


@pytest.mark.parametrize("make", ["records", "values"])
def test_written_back_byte_for_byte(tmp_path, make):
    data = records() if make == "records" else b"".join(msgpack.packb(E(7, b"x" * n)) for n in SIZES)
    assert ma.write_msgpack(ma.read_arrow(data), None, layout="auto") == data
    src, out = tmp_path / "in.msgpack", tmp_path / "out.msgpack"
    src.write_bytes(data)
    def convert(a, b):
        r = cli("convert", str(a), "-o", str(b))
        assert r.returncode == 0, r.stderr

    for via in ["", ".parquet", ".feather"]:
        out.unlink(missing_ok=True)
        if via:
            mid = tmp_path / f"mid{via}"
            convert(src, mid)
            convert(mid, out)
        else:
            convert(src, out)
        assert out.read_bytes() == data, via


def test_msgpack_numpy_reads_what_is_written_from_polars():
    # through Polars the field metadata is gone: the struct is written as the map it shows
    df = ma.read_msgpack(records())
    back = list(msgpack.Unpacker(io.BytesIO(ma.write_msgpack(df, None)), object_hook=mn.decode, raw=False))
    assert [r["e"] for r in back] == df["e"].to_list()
    assert type(back[0]["e"]["code"]) is np.int8


def test_an_ext_beside_another_type_is_a_conflict_and_a_bad_timestamp_an_error():
    data = msgpack.packb({"x": E(3, b"a")}) + msgpack.packb({"x": 1})
    with pytest.raises(ma.DecodeError, match=r"ext and int") as e:
        ma.read_msgpack(data)
    assert e.value.record == 1
    raw = ma.read_msgpack(data, conflicts="binary")["x"].to_list()
    assert raw == [msgpack.packb(E(3, b"a")), msgpack.packb(1)]
    # ext -1 is the timestamp, which has 4, 8 or 12 bytes
    with pytest.raises(ma.DecodeError, match="timestamp .*5 bytes") as e:
        ma.read_msgpack(b"\xc7\x05\xff12345")
    assert e.value.offset == 0


def test_past_infer_rows_a_timestamp_in_an_ext_column_is_an_error():
    data = msgpack.packb({"x": E(3, b"a")}) + msgpack.packb({"x": msgpack.Timestamp(1, 0)})
    with pytest.raises(ma.DecodeError, match="ext and timestamp"):
        ma.read_msgpack(data)
    with pytest.raises(ma.DecodeError, match="not a timestamp") as e:
        ma.read_msgpack(data, infer_rows=1)
    assert e.value.record == 1
