"""Every encoding MessagePack allows for a value, not only the shortest one Python writes.

Other writers (msgpack-c's fixed-width packers, Java's, hand-rolled C structs) use wider forms
than needed: 1 as ``cd 00 01`` or ``d3 00 .. 01``, a short string as str16, a small map as
map32. The spec says any form is valid; the reference is Python ``msgpack.unpackb`` of the same
bytes. Each form is read alone, as a stream of two, and as a record's field.
"""

from __future__ import annotations

import datetime as dt
import math
import struct

import msgpack
import polars as pl
import pytest

import msgpack_arrow as ma


def _int_forms(v: int) -> list[bytes]:
    out = []
    if 0 <= v <= 0x7F:
        out.append(bytes([v]))
    if -32 <= v < 0:
        out.append(struct.pack(">b", v))
    for tag, fmt, lo, hi in [
        (0xCC, ">B", 0, 2**8 - 1),
        (0xCD, ">H", 0, 2**16 - 1),
        (0xCE, ">I", 0, 2**32 - 1),
        (0xCF, ">Q", 0, 2**64 - 1),
        (0xD0, ">b", -(2**7), 2**7 - 1),
        (0xD1, ">h", -(2**15), 2**15 - 1),
        (0xD2, ">i", -(2**31), 2**31 - 1),
        (0xD3, ">q", -(2**63), 2**63 - 1),
    ]:
        if lo <= v <= hi:
            out.append(bytes([tag]) + struct.pack(fmt, v))
    return out


def _len_forms(n: int, fix: int | None, fix_max: int, tags: tuple[int, int, int | None]) -> list[bytes]:
    """Headers of a str/bin/array/map of length `n` in every form that holds it."""
    out = []
    if fix is not None and n <= fix_max:
        out.append(bytes([fix | n]))
    t8, t16, t32 = tags
    if t8 is not None and n < 2**8:
        out.append(bytes([t8, n]))
    if n < 2**16:
        out.append(bytes([t16]) + struct.pack(">H", n))
    out.append(bytes([t32]) + struct.pack(">I", n))
    return out


INTS = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, -1, -32, -33, -128, -129, -(2**31), -(2**63)]
TEXTS = ["", "a", "x" * 31, "x" * 32, "日本語", "🍺" * 3]
BLOBS = [b"", b"\x00", b"\x00\xff" * 20]

CASES: list[tuple[str, bytes]] = []
for v in INTS:
    CASES += [(f"int {v}", f) for f in _int_forms(v)]
CASES += [(f"uint {2**64 - 1}", _int_forms(2**64 - 1)[0])]
for v in [0.0, -0.0, 1.5, math.inf, -math.inf, math.nan, 1e300]:
    CASES.append((f"f64 {v}", b"\xcb" + struct.pack(">d", v)))
    if v == v and abs(v) < 3e38 or v != v or math.isinf(v):
        CASES.append((f"f32 {v}", b"\xca" + struct.pack(">f", v)))
for s in TEXTS:
    b = s.encode()
    CASES += [(f"str {s!r}", h + b) for h in _len_forms(len(b), 0xA0, 31, (0xD9, 0xDA, 0xDB))]
for b in BLOBS:
    CASES += [(f"bin {b!r}", h + b) for h in _len_forms(len(b), None, 0, (0xC4, 0xC5, 0xC6))]
for items in [[], [1], [1, 2, 3], list(range(16))]:
    body = b"".join(_int_forms(i)[0] for i in items)
    CASES += [(f"array {items}", h + body) for h in _len_forms(len(items), 0x90, 15, (None, 0xDC, 0xDD))]
for m in [{"a": 1}, {"a": 1, "b": "x"}]:
    body = b"".join(b"\xa1" + k.encode() + msgpack.packb(v) for k, v in m.items())
    CASES += [(f"map {m}", h + body) for h in _len_forms(len(m), 0x80, 15, (None, 0xDE, 0xDF))]
# the msgpack timestamp in its three forms (32-bit seconds, 30+34 bits, 12 bytes)
for sec, ns in [(0, 0), (1, 0), (2**32 - 1, 0), (1_700_000_000, 123_456_789), (-1, 999_999_999), (-(2**31), 0)]:
    if ns == 0 and 0 <= sec < 2**32:
        CASES.append((f"timestamp32 {sec}", b"\xd6\xff" + struct.pack(">I", sec)))
    if 0 <= sec < 2**34:
        CASES.append((f"timestamp64 {sec}.{ns}", b"\xd7\xff" + struct.pack(">Q", (ns << 34) | sec)))
    CASES.append((f"timestamp96 {sec}.{ns}", b"\xc7\x0c\xff" + struct.pack(">Iq", ns, sec)))


def _ids(cases):
    return [f"{name} [{raw[:12].hex()}]" for name, raw in cases]


def _expected(raw: bytes):
    v = msgpack.unpackb(raw, timestamp=3)
    return v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v


def _same(got, want) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, float):
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    if isinstance(got, dt.datetime):
        got = got.replace(tzinfo=None)
    return got == want and type(got) is type(want) or (isinstance(want, bytes) and got == want)


@pytest.mark.parametrize(("name", "raw"), CASES, ids=_ids(CASES))
def test_every_form_reads_as_msgpack_reads_it(name, raw):
    want = _expected(raw)
    if isinstance(want, dict):
        df = ma.read_msgpack(raw + raw)  # a stream of two records
        assert df.to_dicts() == [want, want]
        return
    if isinstance(want, list):
        # a stream of two arrays: two rows of a list column (one alone would be a values array)
        got = ma.read_msgpack(raw + raw)["value"].to_list()
        assert got == [want, want]
        return
    for data, rows in [(raw, 1), (raw + raw, 2)]:
        got = ma.read_msgpack(data)["value"].to_list()
        assert len(got) == rows and all(_same(g, want) for g in got), (got, want)
    rec = ma.read_msgpack(b"\x81\xa1k" + raw)
    assert _same(rec["k"][0], want), (rec["k"][0], want)


def test_timestamp_forms_are_utc_nanoseconds():
    raw = b"\xc7\x0c\xff" + struct.pack(">Iq", 5, 1_700_000_000)
    s = ma.read_msgpack(raw)["value"]
    assert s.dtype == pl.Datetime("ns", "UTC")
    assert s.cast(pl.Int64)[0] == 1_700_000_000 * 10**9 + 5


def test_timestamps_at_the_ends_of_the_nanosecond_range_read_as_msgpack_counts_them():
    import msgpack

    # the earliest: its seconds (-9223372037) times 10^9 alone are past the range, plus its
    # nanoseconds are not; one second earlier is past it (a schema with a coarser unit reads it)
    first = msgpack.Timestamp(-9223372037, 145224193)
    last = msgpack.Timestamp(9223372036, 854775807)
    data = b"".join(msgpack.packb(t) for t in (first, last))
    s = ma.read_msgpack(data)["value"]
    assert s.cast(pl.Int64).to_list() == [first.to_unix_nano(), last.to_unix_nano()]
    assert ma.write_msgpack(s.to_frame(), layout="values") == data
    with pytest.raises(ma.DecodeError, match="coarser unit"):
        ma.read_msgpack(msgpack.packb(msgpack.Timestamp(-9223372038, 145224193)))
