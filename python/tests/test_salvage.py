"""Crashed and growing dumps: with on_truncated="keep", a file cut anywhere reads as the complete
records before the cut (exactly what msgpack.Unpacker yields), with a warning saying where; the
default stays a positioned DecodeError."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import time
import warnings

import msgpack
import msgpack_numpy as mn
import numpy as np
import pytest

import msgpack_arrow as ma


def _packed(n: int) -> list[bytes]:
    return [mn.packb({"id": i, "emb": np.arange(i % 4, dtype="<f4") + i, "s": "x" * (i % 5)}) for i in range(n)]


def _records(n: int) -> bytes:
    return b"".join(_packed(n))


def _unpacker_prefix(data: bytes) -> list[dict]:
    return list(msgpack.Unpacker(io.BytesIO(data), object_hook=mn.decode, raw=False))


@pytest.mark.parametrize("source", ["bytes", "file", "gz"])
def test_every_cut_keeps_what_msgpack_unpacker_yields(tmp_path, source):
    data = _records(9)
    ends = set(np.cumsum([len(p) for p in _packed(9)]).tolist())
    step = 1 if source == "bytes" else 7  # files: every 7th offset keeps the test quick
    for cut in range(1, len(data), step):
        want = _unpacker_prefix(data[:cut])
        if source == "bytes":
            src = data[:cut]
        else:
            p = tmp_path / ("c.msgpack.gz" if source == "gz" else "c.msgpack")
            p.write_bytes(data[:cut] if source == "file" else gzip.compress(data[:cut]))
            src = p
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if not want:
                got_ids = ma.read_msgpack(src, on_truncated="keep").to_dict(as_series=False).get("id", [])
            else:
                df = ma.read_msgpack(src, on_truncated="keep")
                got_ids = df["id"].to_list()
                for row, rec in zip(df.iter_rows(named=True), want):
                    np.testing.assert_array_equal(np.asarray(row["emb"], dtype="<f4"), rec["emb"])
                    assert row["s"] == rec["s"]
        assert got_ids == [r["id"] for r in want], f"cut {cut}"
        cut_warnings = [w for w in caught if issubclass(w.category, ma.TruncatedInputWarning)]
        if cut in ends:  # a cut between records leaves a whole file: nothing to say
            assert not cut_warnings, f"cut {cut}"
            continue
        assert len(cut_warnings) == 1, f"cut {cut}: {[str(w.message) for w in caught]}"
        w = cut_warnings[0].message
        assert w.records == len(want) and f"cut at byte {w.offset}" in str(w)
        with pytest.raises(ma.DecodeError, match="truncated"):
            ma.read_msgpack(src)


def test_a_whole_file_gives_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ma.read_msgpack(_records(3), on_truncated="keep").height == 3


WRITER = r"""
import sys, time, numpy as np, msgpack_numpy as mn
with open(sys.argv[1], "ab", buffering=0) as f:
    for i in range(int(sys.argv[2])):
        rec = mn.packb({"id": i, "emb": np.full(2000, i, dtype="<f8")})
        # write each record in two pieces, so readers can see it half written
        f.write(rec[: len(rec) // 2]); time.sleep(0.001); f.write(rec[len(rec) // 2 :])
"""


def test_a_growing_file_reads_as_a_consistent_prefix(tmp_path):
    p = tmp_path / "live.msgpack"
    p.write_bytes(b"")
    w = subprocess.Popen([sys.executable, "-c", WRITER, str(p), "400"])
    try:
        seen = []
        while w.poll() is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ma.TruncatedInputWarning)
                df = ma.read_msgpack(p, on_truncated="keep")
            ids = df["id"].to_list() if df.height else []
            assert ids == list(range(len(ids)))  # a prefix: never a torn or skipped record
            if df.height:
                last = df.tail(1)
                assert np.all(np.asarray(last["emb"][0]) == ids[-1])
            seen.append(len(ids))
            time.sleep(0.01)
    finally:
        w.wait(timeout=60)
    assert ma.read_msgpack(p).height == 400
    assert seen == sorted(seen), "later reads see at least as many records"


@pytest.mark.parametrize("source", ["bytes", "path", "scan"])
def test_one_record_kept_from_a_cut_stream_is_a_record_not_a_columns_map(tmp_path, source):
    # the layout of a stream, not of a file holding that one map (whose ndarrays would be columns)
    full = b"".join(mn.packb({"emb": np.arange(4, dtype="<f4") + i}) for i in range(3))
    cut = full[: len(full) // 3 + 10]
    kept = _unpacked_prefix(cut)
    p = tmp_path / "cut.msgpack"
    p.write_bytes(cut)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if source == "scan":
            df = ma.scan_msgpack(p, on_truncated="keep").collect()
        else:
            df = ma.read_msgpack(cut if source == "bytes" else p, on_truncated="keep")
    assert df.height == len(kept) == 1
    np.testing.assert_array_equal(df["emb"].to_numpy(), np.stack([r["emb"] for r in kept]))


def _unpacked_prefix(data: bytes) -> list:
    # what msgpack_numpy's Unpacker yields before the cut
    u = mn.Unpacker(raw=False)
    u.feed(data)
    return list(u)
