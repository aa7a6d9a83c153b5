"""SPEC 6 from Python: hostile input is refused (object arrays are never unpickled), errors are
DecodeError (a ValueError) with positions, and no panic reaches Python."""

from __future__ import annotations

import gzip
import io
import pickle
import threading
import time

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import msgpack_arrow as ma
from test_cli_command import run as cli
from msgpack_arrow.exceptions import DecodeError, EncodeError, MsgpackArrowError


class Hostile:
    """Unpickling this creates a file: proof that a pickle was executed."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def hostile_file(path) -> bytes:
    return b"".join(
        mn.packb({"id": i, "obj": np.array([Hostile(str(path)), 1], dtype=object)}) for i in range(3)
    )


def test_hostile_pickle_is_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    data = hostile_file(marker)
    # the payload is real: msgpack_numpy itself would create the file
    mn.unpackb(data[: len(mn.packb({"id": 0, "obj": np.array([Hostile(str(marker)), 1], dtype=object)}))])
    assert marker.exists()
    marker.unlink()

    src = tmp_path / "hostile.msgpack"
    src.write_bytes(data)
    for source in [data, src]:
        with pytest.raises(DecodeError, match="object array") as info:
            ma.read_msgpack(source)
        assert info.value.offset is not None and info.value.record == 0
        with pytest.raises(DecodeError, match="never unpickled"):
            ma.scan_msgpack(source).collect()
    # opt-in: the pickle's bytes as Binary, still not executed
    df = ma.read_msgpack(data, object_arrays="raw")
    assert df.schema["obj"] == pl.Binary
    assert df["obj"][0].startswith(b"\x80")  # a pickle protocol header
    assert not marker.exists()



def test_raw_object_arrays_are_written_back_as_read():
    # the pickles are never loaded: their bytes, and the shape every row had, go back as read
    rows = [{"id": i, "obj": np.array([f"s{i}", i, None], dtype=object)} for i in range(3)]
    data = b"".join(mn.packb(r) for r in rows)
    assert ma.write_msgpack(ma.read_arrow(data, object_arrays="raw")) == data
    # rows of different shapes: each written with shape [] (Python's decoder ignores it)
    data += mn.packb({"id": 3, "obj": np.array([1, 2], dtype=object)})
    out = ma.write_msgpack(ma.read_arrow(data, object_arrays="raw"))
    back = list(mn.Unpacker(io.BytesIO(out), raw=False))
    want = list(mn.Unpacker(io.BytesIO(data), raw=False))
    assert [r["obj"].tolist() for r in back] == [r["obj"].tolist() for r in want]

def test_a_structured_kind_with_a_dtype_string_says_what_type_must_be():
    # kind b"V" promises a descr list in `type`; msgpack_numpy fails on a string there too
    data = msgpack.packb({b"nd": True, b"type": "|V8", b"kind": b"V", b"shape": [1], b"data": bytes(8)})
    with pytest.raises(Exception):
        mn.unpackb(data)
    with pytest.raises(DecodeError, match=r"kind b'V' needs 'type' as a list of \[name, type\] fields, found str"):
        ma.read_msgpack(data)


def test_exception_classes():
    assert issubclass(DecodeError, MsgpackArrowError) and issubclass(DecodeError, ValueError)
    assert issubclass(EncodeError, MsgpackArrowError) and issubclass(EncodeError, ValueError)
    assert ma.DecodeError is DecodeError and ma.MsgpackArrowError is MsgpackArrowError
    e = DecodeError("truncated input at byte 3", 3, 0, "a.b")
    e2 = pickle.loads(pickle.dumps(e))
    assert (str(e2), e2.offset, e2.record, e2.column) == (str(e), 3, 0, "a.b")


def test_error_attributes():
    data = mn.packb({"a": 1}) + mn.packb({"a": {"b": np.zeros(2, "<f4")}}) + mn.packb({"a": 2})[:-1]
    with pytest.raises(ValueError) as info:
        ma.read_msgpack(data)
    e = info.value
    assert isinstance(e, DecodeError)
    assert str(e).startswith("type conflict"), str(e)
    assert e.record == 1 and e.offset == len(mn.packb({"a": 1})) and e.column == "a"
    # truncated: the offset is where the cut value starts
    with pytest.raises(DecodeError) as info:
        ma.read_msgpack(mn.packb({"a": 1}) + mn.packb({"a": "xyz"})[:-1])
    assert info.value.record == 1 and info.value.offset is not None and "truncated" in str(info.value)


@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_truncated_everywhere_is_a_decode_error(n):
    data = mn.packb({"id": 1, "v": np.arange(4, dtype="<f8"), "s": "hello"}) * 2
    for cut in range(1, len(data), n):
        try:
            ma.read_msgpack(data[:-cut])
        except DecodeError as e:
            assert e.offset is not None
        # a cut on an object boundary is a valid shorter file


def test_random_garbage_never_panics():
    rng = np.random.default_rng(1)
    base = mn.packb({"id": 1, "v": np.arange(6, dtype=">i2").reshape(2, 3), "s": ["a", None], "m": {"k": 1.5}}) * 3
    for _ in range(400):
        b = bytearray(base)
        for i in rng.integers(0, len(b), size=rng.integers(1, 6)):
            b[i] = rng.integers(0, 256)
        try:
            ma.read_msgpack(bytes(b))
        except (DecodeError, MsgpackArrowError):
            pass  # anything else (PanicException is a BaseException) fails the test


def test_gil_is_released_while_decoding():
    # a big decode in one thread; another thread keeps running Python meanwhile
    data = b"".join(mn.packb({"v": np.ones(4096, dtype="<f4")}) for _ in range(5000))
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        ma.read_msgpack(data, batch_size=1 << 20)  # one batch: one long call into Rust
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    during = [x for x in ticks if start < x < end]
    # with the GIL held for the whole call, the ticker would not run at all in between
    assert end - start < 0.02 or len(during) >= 3, (end - start, len(during))


def test_a_key_with_a_nul_byte_is_a_decode_error():
    # Python reads these keys; the Arrow C interface (pyarrow, Polars) cannot carry them
    cases = [
        msgpack.packb({"a\x00b": 1}),
        msgpack.packb({"x": {"in\x00ner": 1}}),
        mn.packb({"x": np.zeros(2, [("a\x00", "<i4")])}),
    ]
    for data in cases:
        assert "\\x00" in repr(mn.unpackb(data))  # Python reads it
        for read in (ma.read_msgpack, lambda d: pa.table(ma.read_arrow(d))):
            with pytest.raises(ma.DecodeError, match="NUL byte") as info:
                read(data)
            assert info.value.column is not None
    s = pl.Series("b", [msgpack.packb({"k\x00": 1})], dtype=pl.Binary)
    with pytest.raises(ma.DecodeError, match="NUL byte"):
        s.msgpack.decode()


def _seconds(dtype: str, values) -> bytes:
    # msgpack_numpy cannot write datetime64 arrays (numpy refuses their buffer); its decoder
    # reads them: the map as msgpack_numpy.encode would make it
    return msgpack.packb({"t": {b"nd": True, b"type": dtype, b"kind": b"", b"shape": [len(values)],
                                b"data": np.array(values, "<i8").tobytes()}})


@pytest.mark.parametrize("dtype", ["<M8[s]", "<m8[s]"])
def test_seconds_beyond_the_millisecond_range_are_a_decode_error(dtype):
    # Polars has no seconds unit: they become milliseconds, checked (Polars' own import wraps)
    ok = [0, 1_700_000_000, -5, np.iinfo("<i8").min]  # the last is NaT: null
    want = mn.unpackb(_seconds(dtype, ok))["t"]
    got = ma.read_msgpack(_seconds(dtype, ok))["t"]
    assert got.null_count() == 1
    assert got.to_physical().to_list()[:3] == [v * 1000 for v in want[:3].astype("<i8").tolist()]
    for big in [10**17, 2**62, np.iinfo("<i8").min + 1]:
        with pytest.raises(ma.DecodeError) as info:
            ma.read_msgpack(_seconds(dtype, [1, big]))
        assert info.value.column == "t"


@pytest.mark.parametrize(
    "value",
    [np.zeros(3, dtype="V0"), np.zeros(2, dtype=[("a", "<i4"), ("z", "V0")])],
    ids=["V0", "struct-with-V0"],
)
def test_a_void_of_no_bytes_is_a_decode_error_not_a_panic(value, tmp_path):
    # msgpack_numpy writes it; Arrow has no binary of width 0
    data = mn.packb({"x": value}) * 2
    assert len(mn.unpackb(data[: len(data) // 2])["x"]) == len(value)
    for layout in ["auto", "records"]:
        with pytest.raises(ma.DecodeError, match=r"V0 .*no Arrow equivalent"):
            ma.read_msgpack(data, layout=layout)
    p = tmp_path / "v0.msgpack"
    p.write_bytes(data)
    r = cli("schema", str(p))
    assert r.returncode == 1 and "no Arrow equivalent" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("bad", ["\ud800", "ok", "big"])
def test_a_u_array_holding_no_character_is_an_error_naming_its_row(bad):
    # numpy's U holds any 32-bit unit: a lone surrogate (from Python) or a value past 0x10FFFF
    rows = [{"k": i, "s": np.array(["a", "bc"])} for i in range(3)]
    if bad == "big":
        raw = np.array(["ab", "cd"]).view("<u4").copy()
        raw[1] = 0x110000
        rows.append({"k": 3, "s": raw.view("<U2")})
    elif bad != "ok":
        rows.append({"k": 3, "s": np.array(["x", bad])})
    data = b"".join(mn.packb(r) for r in rows)
    if bad == "ok":
        assert ma.read_msgpack(data)["s"].to_list() == [["a", "bc"]] * 3
        return
    start = len(b"".join(mn.packb(r) for r in rows[:3]))
    for kw in ({}, {"infer_rows": 1}):
        with pytest.raises(ma.DecodeError, match="not a Unicode code point") as e:
            ma.read_msgpack(data, **kw)
        assert e.value.record == 3 and e.value.column == "s" and e.value.offset > start


def _nd(dtype, data: bytes, shape=(1,)):
    # the map msgpack_numpy writes for a non-contiguous array of a dtype it packs this way
    return {b"nd": True, b"type": dtype, b"kind": b"V" if isinstance(dtype, list) else b"", b"shape": list(shape), b"data": data}


@pytest.mark.parametrize("layout", ["columns", "records"])
@pytest.mark.parametrize("dtype", ["<M8[M]", "<M8[Y]", "<m8[as]", [["o", "|O"], ["i", "<i4"]]])
def test_an_unreadable_dtype_is_named_with_its_place_in_every_layout(dtype, layout):
    arr = _nd(dtype, bytes(8 if isinstance(dtype, str) else 24 // 2))
    obj = {"a": [1], "t": arr} if layout == "columns" else [{"a": 1, "t": arr}]
    data = msgpack.packb(obj, use_bin_type=True)
    with pytest.raises(ma.DecodeError) as e:
        ma.read_msgpack(data)
    assert e.value.column == "t" and e.value.offset is not None


def test_an_object_field_of_a_structured_array_is_not_called_a_pickle():
    # msgpack_numpy copies such records' bytes, pointers included: object_arrays="raw" cannot help
    a = np.zeros(2, dtype=[("o", "O"), ("i", "<i4")])
    data = msgpack.packb({"s": _nd([["o", "|O"], ["i", "<i4"]], bytes(a.nbytes), (2,))}, use_bin_type=True)
    for kw in ({}, {"object_arrays": "raw"}):
        with pytest.raises(ma.DecodeError, match="object field") as e:
            ma.read_msgpack(data, **kw)
        assert "pickle" not in str(e.value) and e.value.column == "s"


def test_an_object_array_written_before_msgpack_numpy_0_4_8_is_not_called_a_pickle():
    # msgpack_numpy <= 0.4.7 (and srsly) wrote an object array's buffer itself with kind b'':
    # object pointers (only the writing process, while the objects live, could follow them)
    a = np.array([1, "a", None], dtype=object)
    assert np.frombuffer(a.tobytes(), np.uintp).tolist() == [id(v) for v in a]
    for kind in (b"", None):
        old = {b"nd": True, b"type": a.dtype.str, b"shape": list(a.shape), b"data": a.tobytes()}
        if kind is not None:
            old[b"kind"] = kind
        data = msgpack.packb({"x": old, "y": 1}, use_bin_type=True)
        for kw in ({}, {"object_arrays": "raw"}):
            with pytest.raises(ma.DecodeError, match="before msgpack_numpy 0.4.8") as e:
                ma.read_msgpack(data, **kw)
            assert "pickle" not in str(e.value) and e.value.column == "x" and e.value.offset is not None
            assert ("with no kind" if kind is None else "with kind ''") in str(e.value)
    with pytest.raises(ma.DecodeError, match="before msgpack_numpy 0.4.8"):
        ma.read_msgpack(msgpack.packb(old, use_bin_type=True))


def test_a_conflict_inside_a_values_row_names_the_value_column():
    # structs written as arrays (Go's UseArrayEncodedStructs, msgpack-c's MSGPACK_DEFINE)
    data = msgpack.packb([1, "x"]) + msgpack.packb([2, "y"])
    with pytest.raises(ma.DecodeError) as e:
        ma.read_msgpack(data)
    assert e.value.column == "value[1]"
    got = ma.read_msgpack(data, schema_overrides={"value": pl.List(pl.String)})
    assert got["value"].to_list() == [[str(v) for v in r] for r in msgpack.Unpacker(__import__("io").BytesIO(data))]


def test_a_corrupt_compressed_file_is_a_decode_error_naming_its_codec(tmp_path):
    raw = b"".join(msgpack.packb({"i": i, "s": "x" * 50}) for i in range(2000))
    good = gzip.compress(raw, mtime=0)
    bad = bytearray(good)
    bad[-6] ^= 1  # the CRC
    cut = good[:2000]
    for data, reference in ((bytes(bad), gzip.BadGzipFile), (cut, EOFError)):
        with pytest.raises(reference):  # Python's gzip refuses it too
            gzip.decompress(data)
        p = tmp_path / "c.msgpack.gz"
        p.write_bytes(data)
        for source in (p, data):
            with pytest.raises(ma.DecodeError, match="gzip input is corrupt or cut short"):
                ma.read_msgpack(source)


@pytest.mark.parametrize("ragged", [False, True])
def test_tiny_arrays_describing_a_million_empty_rows_each_are_refused(ragged):
    # 49 bytes each, a 2**20-long axis over a 0-long one: a few records would make gigabytes of
    # offsets (SPEC 6: no allocation sized by an untrusted length); numpy makes such arrays
    def nd(k):
        return {b"nd": True, b"type": "<f8", b"kind": b"", b"shape": [k, 0], b"data": b""}

    assert mn.unpackb(msgpack.packb(nd(1 << 20))).shape == (1 << 20, 0)
    data = b"".join(msgpack.packb({"a": nd((1 << 20) - (i % 2 if ragged else 0))}) for i in range(8))
    with pytest.raises(ma.DecodeError, match=r"empty \(sub-\)array entries") as e:
        ma.read_msgpack(data)
    assert e.value.column == "a"
    # one such array alone stays readable
    assert ma.read_msgpack(msgpack.packb({"a": nd(1 << 20)})).height == 1 << 20


def test_an_axis_longer_than_arrow_lists_hold_is_named_with_its_place():
    # numpy allows shape (0, 2**31) (no element); no Arrow FixedSizeList holds the axis
    nd = {b"nd": True, b"type": "<f8", b"kind": b"", b"shape": [0, 2**31], b"data": b""}
    assert mn.unpackb(msgpack.packb(nd)).shape == (0, 2**31)
    with pytest.raises(ma.DecodeError, match="longer than a FixedSizeList") as e:
        ma.read_msgpack(msgpack.packb({"id": 1, "a": None}) + msgpack.packb({"id": 2, "a": nd}))
    assert (e.value.record, e.value.column) == (1, "a") and e.value.offset is not None


def test_many_small_empty_arrays_are_not_refused_as_hostile():
    # 60,000 records of a (20, 0) array: 1.2 million empty entries in 3 MB, two a byte at most
    data = mn.packb({"i": 1, "feat": np.zeros((20, 0), "<f4")}) * 60_000
    for batch_size in (None, 1000):
        assert ma.read_msgpack(data, batch_size=batch_size).height == 60_000


@pytest.mark.parametrize("layout", ["records", "columns"])
def test_a_time_value_out_of_range_once_converted_is_named_with_its_record(layout):
    # M8[h] holds 2**62 hours; Arrow's seconds cannot (numpy reads it: the reference)
    ticks = np.array([1, 2**62, 3], "<i8")
    nd = {b"nd": True, b"type": "<M8[h]", b"kind": b"", b"shape": [3], b"data": ticks.tobytes()}
    assert mn.unpackb(msgpack.packb(nd)).view("<i8")[1] == 2**62
    if layout == "records":
        data = msgpack.packb({"t": None}) + msgpack.packb({"t": nd})
    else:
        data = msgpack.packb({"t": nd})
    with pytest.raises(ma.DecodeError, match="element 1 of this <M8\\[h\\] ndarray is out of range") as e:
        ma.read_msgpack(data, layout=layout)
    assert e.value.column == "t" and e.value.offset is not None
    assert e.value.record == (1 if layout == "records" else 0)
