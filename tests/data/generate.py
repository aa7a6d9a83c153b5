#!/usr/bin/env python3
"""Golden corpus for msgpack-arrow.

    python tests/data/generate.py OUTDIR

writes

    OUTDIR/good/<case>.msgpack   written by the real msgpack_numpy 0.4.8 (Packer / packb)
    OUTDIR/good/<case>.arrow     the expected decode, an Arrow IPC file
    OUTDIR/bad/<case>.msgpack    malformed or hostile input
    OUTDIR/manifest.json         {"good": [...], "bad": [...]}

The expected tables are not written by hand: every good file is decoded again with
msgpack_numpy's own Unpacker, and *that* Python value is converted to Arrow by the mapping of
SPEC section 3 (see `column` / `ndarray_column` / `leaf` below).  So "read = Python" (SPEC 4.1)
is checked against Python itself.  Floats go through numpy buffers, never through Python
arithmetic, so NaN payloads survive bit for bit.

Deterministic (one RNG per case, seeded from its name) and fast (about a second).
"""

import json
import os
import pickle
import struct
import sys
import zlib
from dataclasses import dataclass
from typing import Callable, Optional

import msgpack
import msgpack_numpy as mn
import numpy as np
import pyarrow as pa
import pyarrow.ipc

assert sys.byteorder == "little", "the leaf conversion below assumes a little-endian host"
assert mn.__name__ and msgpack.version >= (1, 0, 0)

I64_MIN = np.iinfo(np.int64).min
I64_MAX = np.iinfo(np.int64).max

# --------------------------------------------------------------------------------------------
# Writing helpers: everything "good" goes through msgpack_numpy's encoder.
# --------------------------------------------------------------------------------------------


def pack(obj, **kw) -> bytes:
    """One object, written by msgpack_numpy.packb (use_bin_type=True is its default)."""
    return mn.packb(obj, **kw)


def stream(*objs, **kw) -> bytes:
    """A stream: msgpack_numpy.Packer().pack(o) for each object, concatenated."""
    packer = mn.Packer(**kw)
    return b"".join(packer.pack(o) for o in objs)


def writable(arr: np.ndarray) -> np.ndarray:
    """A view msgpack_numpy can encode even for datetime64/timedelta64.

    msgpack_numpy sends C-contiguous arrays as `arr.data` (a buffer export), which numpy refuses
    for 'M'/'m' dtypes ("cannot include dtype 'M' in a buffer").  Non-contiguous arrays go
    through `arr.tobytes()` instead (on macOS every array does), which works for every dtype.
    So we hand the encoder a strided view with the same values: the bytes written are exactly
    what msgpack_numpy writes for that array on macOS.  (Last axis must be longer than 1, else
    numpy calls the view contiguous.)
    """
    view = np.stack([arr, arr], axis=-1)[..., 0]
    assert not view.flags["C_CONTIGUOUS"] and view.shape == arr.shape
    return view


def case_rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def sample(rng, dtype, shape) -> np.ndarray:
    """Random values of any numeric/bool dtype (either byte order)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt.newbyteorder("="), endpoint=True).astype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    raise ValueError(dt)


NUMERIC_LE = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16"]
NUMERIC_BE = [">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16"]


def colname(dtype: str) -> str:
    """'<f4' -> 'f4_le', '>f4' -> 'f4_be', '|u1' -> 'u1'."""
    order = {"<": "_le", ">": "_be", "|": ""}[dtype[0]]
    return dtype[1:] + order


def bits(values, dtype) -> np.ndarray:
    """Floats from raw bit patterns, e.g. bits([0x7fc00001], '<f4')."""
    dt = np.dtype(dtype)
    return np.array(values, dtype="<u%d" % dt.itemsize).view(dt.newbyteorder("<")).astype(dt)


# NaN payloads (quiet and signalling), +-0, +-inf, subnormals, extremes.
F8_SPECIALS = bits([0x7FF8000000000001, 0xFFF0000000000ABC, 0x0000000000000000, 0x8000000000000000,
                    0x7FF0000000000000, 0xFFF0000000000000, 0x0000000000000001, 0x800FFFFFFFFFFFFF,
                    0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000], "<f8")
F4_SPECIALS = bits([0x7FC00001, 0xFF800ABC, 0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
                    0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0x3F800000], "<f4")
F2_SPECIALS = bits([0x7E01, 0xFC0A, 0x0000, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x7BFF, 0x3C00], "<f2")

# --------------------------------------------------------------------------------------------
# Python decode -> Arrow (the mapping of SPEC section 3, as restated in the generator brief).
# --------------------------------------------------------------------------------------------


def validity_buffer(valid: Optional[np.ndarray]):
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid.astype(bool), bitorder="little").tobytes())


def to_native(a: np.ndarray) -> np.ndarray:
    """Big-endian -> little-endian by swapping bytes, never by converting values (bit-exact)."""
    if a.dtype.byteorder == ">":
        return a.byteswap().view(a.dtype.newbyteorder("<"))
    return a


def fixed_width(typ: pa.DataType, a: np.ndarray, valid=None) -> pa.Array:
    """A primitive Arrow array straight from the numpy buffer (keeps NaN payloads)."""
    a = np.ascontiguousarray(to_native(a))
    return pa.Array.from_buffers(typ, len(a), [validity_buffer(valid), pa.py_buffer(a.tobytes())])


def fsl(child: pa.Array, size: int, length: int, valid=None) -> pa.Array:
    """FixedSizeList via from_buffers: from_arrays cannot build list_size 0 (empty arrays)."""
    assert len(child) == size * length
    return pa.Array.from_buffers(pa.list_(child.type, size), length, [validity_buffer(valid)], children=[child])


def wrap_fixed(leaf: pa.Array, n: int, shape, valid=None) -> pa.Array:
    """Per-row shape (3, 4) -> FSL(FSL(T, 4), 3); the outermost list is the first axis."""
    arr = leaf
    for axis in range(len(shape) - 1, -1, -1):
        arr = fsl(arr, shape[axis], n * int(np.prod(shape[:axis], dtype=np.int64)),
                  valid if axis == 0 else None)
    return arr


def is_padding(dt: np.dtype) -> bool:
    """msgpack_numpy writes padding as ['', '|V4'] in the descr; numpy then names it 'f1' etc."""
    return dt.kind == "V" and dt.names is None and dt.subdtype is None


DATETIME_UNITS = {"s", "ms", "us", "ns"}
SECONDS_PER = {"m": 60, "h": 3600, "D": 86400, "W": 7 * 86400}


def leaf(a: np.ndarray, valid=None) -> pa.Array:
    """A flat numpy array of one dtype -> Arrow array of the mapped type."""
    assert a.ndim == 1
    dt = a.dtype
    k = dt.kind
    if k == "b":
        return pa.array(a.astype(bool), pa.bool_(), mask=None if valid is None else ~valid)
    if k in "iuf":
        return fixed_width(pa.from_numpy_dtype(dt.newbyteorder("=")), a, valid)
    if k == "c":
        # [real, imag] pairs: a c8 array is a float32 array twice as long.
        part = np.dtype("<f%d" % (dt.itemsize // 2))
        floats = np.ascontiguousarray(to_native(a)).view(part)
        return fsl(fixed_width(pa.from_numpy_dtype(part), floats), 2, len(a), valid)
    if k in "US":
        # numpy's own tolist() strips trailing NULs (embedded ones stay): exactly the mapping.
        values = a.tolist()
        if valid is not None:
            values = [v if ok else None for v, ok in zip(values, valid)]
        return pa.array(values, pa.string() if k == "U" else pa.binary())
    if k in "Mm":
        unit, count = np.datetime_data(dt)
        assert count == 1, dt
        ints = np.ascontiguousarray(to_native(a)).view("<i8").copy()
        ok = ints != I64_MIN  # NaT -> null
        if valid is not None:
            ok &= valid
        ints[~ok] = 0
        if k == "M" and unit in DATETIME_UNITS:
            return fixed_width(pa.timestamp(unit), ints, ok)
        if k == "M" and unit in ("D", "W"):
            days = ints * (7 if unit == "W" else 1)
            return fixed_width(pa.date32(), days.astype("<i4"), ok)
        if k == "M" and unit in ("h", "m"):
            return fixed_width(pa.timestamp("s"), ints * SECONDS_PER[unit], ok)
        if k == "m" and unit in DATETIME_UNITS:
            return fixed_width(pa.duration(unit), ints, ok)
        if k == "m" and unit in SECONDS_PER:
            return fixed_width(pa.duration("s"), ints * SECONDS_PER[unit], ok)
        raise ValueError("unmapped datetime unit %s" % dt)
    if k == "V" and dt.names:
        names, children = [], []
        for name in dt.names:
            fdt = dt.fields[name][0]
            if is_padding(fdt):
                continue
            sub = np.ascontiguousarray(a[name])
            if fdt.subdtype is not None:  # sub-array field: shape (k,) -> FSL(T, k)
                base, shape = fdt.subdtype
                child = wrap_fixed(leaf(sub.reshape(-1)), len(a), shape)
            else:
                child = leaf(sub)
            names.append(name)
            children.append(child)
        mask = None if valid is None or valid.all() else pa.array(~valid)
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    raise ValueError("no Arrow mapping for dtype %r" % dt)


def kind_of(v) -> str:
    if isinstance(v, np.ndarray):
        return "ndarray" if v.ndim >= 1 else "npscalar"  # a 0-d array is a plain value
    if isinstance(v, np.generic):
        return "npscalar"
    for typ, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (bytes, "bytes"),
                      (complex, "complex"), (msgpack.Timestamp, "timestamp"), (msgpack.ExtType, "ext"),
                      (list, "list"), (dict, "dict")):
        if isinstance(v, typ):  # bool before int: bool is an int subclass
            return name
    raise TypeError("unexpected decoded value %r" % (v,))


def ndarray_column(vals) -> pa.Array:
    """One ndarray (ndim >= 1) per row, or None.  Same shape everywhere -> FSL per axis;
    shapes differ -> List on every axis."""
    present = [v for v in vals if v is not None]
    dt, ndim = present[0].dtype, present[0].ndim
    # U/S arrays of other widths share a column (numpy sizes each array to its longest string)
    same = lambda v: v.dtype == dt or (v.dtype.kind == dt.kind and dt.kind in "US")  # noqa: E731
    assert all(same(v) and v.ndim == ndim for v in present), "type conflict"
    valid = np.array([v is not None for v in vals])
    shapes = {v.shape for v in present}
    if len(shapes) == 1:
        shape = present[0].shape
        filler = np.zeros(shape, dt)  # null rows still take list_size slots in an FSL
        flat = np.concatenate([np.ascontiguousarray(v if v is not None else filler).reshape(-1) for v in vals])
        return wrap_fixed(leaf(flat), len(vals), shape, valid)
    # Ragged: counts per level; level j has one entry per element of the first j axes.
    counts = [[] for _ in range(ndim)]
    for v in vals:
        if v is None:
            counts[0].append(0)
            continue
        for axis in range(ndim):
            counts[axis].extend([v.shape[axis]] * int(np.prod(v.shape[:axis], dtype=np.int64)))
    arr = leaf(np.concatenate([np.ascontiguousarray(v).reshape(-1) for v in present]))
    for axis in range(ndim - 1, -1, -1):
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts[axis])]).astype(np.int32))
        mask = pa.array(~valid) if axis == 0 and not valid.all() else None
        arr = pa.ListArray.from_arrays(offsets, arr, mask=mask)
    return arr


def column(vals) -> pa.Array:
    """A list of decoded Python values (None = null / missing key) -> one Arrow column."""
    n = len(vals)
    present = [v for v in vals if v is not None]
    if not present:
        return pa.nulls(n)  # an all-None column has the null type
    valid = np.array([v is not None for v in vals])
    kinds = {kind_of(v) for v in present}
    if kinds == {"int", "float"}:
        kinds = {"float"}  # int and float in one column widen to float64
    assert len(kinds) == 1, "type conflict in a good case: %s" % kinds
    kind = kinds.pop()
    if kind == "ndarray":
        return ndarray_column(vals)
    if kind == "npscalar":
        dt = np.asarray(present[0]).dtype
        assert all(np.asarray(v).dtype == dt for v in present), "type conflict"
        flat = np.concatenate([np.asarray(v if v is not None else np.zeros((), dt)).reshape(1) for v in vals])
        return leaf(flat, valid)
    if kind == "bool":
        return pa.array(vals, pa.bool_())
    if kind == "int":
        big = any(v > I64_MAX for v in present)
        return pa.array(vals, pa.uint64() if big else pa.int64())
    if kind == "float":
        return leaf(np.array([0.0 if v is None else float(v) for v in vals], dtype="<f8"), valid)
    if kind == "str":
        return pa.array(vals, pa.string())
    if kind == "bytes":
        return pa.array(vals, pa.binary())
    if kind == "complex":
        return leaf(np.array([0j if v is None else v for v in vals], dtype="<c16"), valid)
    if kind == "timestamp":
        return pa.array([None if v is None else v.to_unix_nano() for v in vals], pa.timestamp("ns", tz="UTC"))
    if kind == "ext":  # any other ext type: its code and bytes (msgpack's ExtType)
        codes = pa.array([0 if v is None else v.code for v in vals], pa.int8())
        data = pa.array([b"" if v is None else v.data for v in vals], pa.binary())
        fields = [pa.field("code", pa.int8(), nullable=False), pa.field("data", pa.binary(), nullable=False)]
        return pa.StructArray.from_arrays([codes, data], fields=fields, mask=None if valid.all() else pa.array(~valid))
    if kind == "list":
        flat = [x for v in present for x in v]
        lengths = [0 if v is None else len(v) for v in vals]
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        mask = None if valid.all() else pa.array(~valid)
        return pa.ListArray.from_arrays(offsets, column(flat), mask=mask)
    if kind == "dict":
        names = first_seen_keys(present)
        children = [column([None if v is None else v.get(k) for v in vals]) for k in names]
        mask = None if valid.all() else pa.array(~valid)
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    raise AssertionError(kind)


def axis0_column(v) -> pa.Array:
    """A `columns`-layout value: ndarray of shape (N, *s) or a list of length N."""
    if isinstance(v, np.ndarray):
        assert v.ndim >= 1
        flat = np.ascontiguousarray(v).reshape(-1)
        return wrap_fixed(leaf(flat), v.shape[0], v.shape[1:])
    return column(v)


def first_seen_keys(maps):
    names = {}
    for m in maps:
        for k in m:
            assert isinstance(k, str), "non-str key %r in a good case" % (k,)
            names.setdefault(k, None)
    return list(names)


def python_decode(data: bytes, raw: bool):
    """Python's own decode: msgpack_numpy.Unpacker (object_hook = msgpack_numpy.decode)."""
    unpacker = mn.Unpacker(raw=raw)
    unpacker.feed(data)
    # bytes keys (legacy raw files; bytes keys in Python) are str to us (SPEC section 2)
    return [str_keys(o) for o in unpacker]


# openpi (openpi_client.msgpack_numpy) is not on PyPI; its wire format is two maps, written and
# read here by its rules: ndarrays {__ndarray__: True, data, dtype, shape}, numpy scalars
# {__npgeneric__: True, data: obj.item(), dtype}, read back as np.dtype(dtype).type(data).
def openpi_encode(obj):
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    return obj


def openpi_hook(m):
    if b"__ndarray__" in m:
        return np.ndarray(buffer=m[b"data"], dtype=np.dtype(m[b"dtype"]), shape=m[b"shape"])
    if b"__npgeneric__" in m:
        return np.dtype(m[b"dtype"]).type(m[b"data"])
    return m


def openpi_decode(data: bytes):
    unpacker = msgpack.Unpacker(object_hook=openpi_hook)
    unpacker.feed(data)
    return list(unpacker)


def str_keys(o):
    if isinstance(o, dict):
        return {(k.decode() if isinstance(k, bytes) else k): str_keys(v) for k, v in o.items()}
    if isinstance(o, list):
        return [str_keys(x) for x in o]
    return o


def is_columnar(v) -> bool:
    return (isinstance(v, np.ndarray) and v.ndim >= 1) or isinstance(v, list)


def auto_layout(objs) -> str:
    """SPEC section 2 `auto`, plus: one top-level array whose first element is a map -> records."""
    if len(objs) == 1 and isinstance(objs[0], dict) and objs[0]:
        values = list(objs[0].values())
        if all(is_columnar(v) for v in values) and len({len(v) for v in values}) == 1:
            return "columns"
    if objs and isinstance(objs[0], dict):
        return "records"
    if len(objs) == 1 and isinstance(objs[0], list) and objs[0] and isinstance(objs[0][0], dict):
        return "records"
    return "values"


def to_table(objs, layout: str) -> pa.Table:
    if not objs or (len(objs) == 1 and isinstance(objs[0], list) and not objs[0]):
        return pa.table({})  # empty file / top-level [] -> no rows, no columns
    if layout == "records":
        rows = objs[0] if len(objs) == 1 and isinstance(objs[0], list) else objs
        assert all(isinstance(r, dict) for r in rows)
        names = first_seen_keys(rows)
        return pa.table({k: column([r.get(k) for r in rows]) for k in names})
    if layout == "columns":
        # Several maps = chunks: rows are concatenated, column by column.
        names = list(objs[0])
        assert all(list(o) == names for o in objs), "chunks must have the same columns"
        merged = {}
        for k in names:
            parts = [o[k] for o in objs]
            merged[k] = (np.concatenate(parts) if isinstance(parts[0], np.ndarray)
                         else [x for p in parts for x in p])
        assert len({len(v) for v in merged.values()}) == 1
        return pa.table({k: axis0_column(v) for k, v in merged.items()})
    if layout == "values":
        if len(objs) == 1 and isinstance(objs[0], np.ndarray) and objs[0].ndim >= 1:
            return pa.table({"value": axis0_column(objs[0])})  # bare ndarray: its axis 0
        rows = objs[0] if len(objs) == 1 and isinstance(objs[0], list) else objs
        return pa.table({"value": column(rows)})
    raise ValueError(layout)


def as_float32(col: pa.Array) -> pa.Array:
    """Floats written with use_single_float=True come back from Python as float (double);
    the wire type was float32, so the expected column is float32 (exact: they came from f4)."""
    assert col.offset == 0
    f8 = np.frombuffer(col.buffers()[1], dtype="<f8", count=len(col))
    return pa.Array.from_buffers(pa.float32(), len(col), [col.buffers()[0], pa.py_buffer(f8.astype("<f4").tobytes())])


# --------------------------------------------------------------------------------------------
# Good cases.  Each builder returns the msgpack bytes; the expected table is derived above.
# layout: what the test passes ("auto" when auto already picks the intended layout).
# auto_layout: what auto must choose.  byte_exact: SPEC 4.2 promises read -> write == input.
# --------------------------------------------------------------------------------------------


@dataclass
class Good:
    name: str
    layout: str
    auto_layout: str
    byte_exact: bool
    build: Callable[[np.random.Generator], bytes]
    raw: bool = False            # decode with raw=True (legacy files without bin type)
    openpi: bool = False         # written in openpi's dialect: decode with its rules
    float32_columns: tuple = ()  # columns written with use_single_float=True
    note: str = ""


GOOD = []


def good(name, layout, auto, byte_exact, raw=False, float32_columns=(), openpi=False):
    def register(fn):
        GOOD.append(Good(name, layout, auto, byte_exact, fn, raw, openpi, float32_columns,
                         (fn.__doc__ or "").strip()))
        return fn
    return register


# --- records: ndarrays of every dtype --------------------------------------------------------

@good("rec_dtypes_le_shape3", "auto", "records", True)
def _(rng):
    """Every numeric dtype, little-endian (or '|'), shape (3,) in each of 4 records -> FSL(T, 3)."""
    return stream(*[{colname(d): sample(rng, d, (3,)) for d in NUMERIC_LE} for _ in range(4)])


@good("rec_dtypes_be_shape3", "auto", "records", True)
def _(rng):
    """Every multi-byte numeric dtype big-endian, shape (3,): same numbers as little-endian."""
    return stream(*[{colname(d): sample(rng, d, (3,)) for d in NUMERIC_BE} for _ in range(4)])


@good("rec_dtypes_shape2x3", "auto", "records", True)
def _(rng):
    """Shape (2, 3) in every record -> FSL(FSL(T, 3), 2); both byte orders."""
    dts = NUMERIC_LE + [">i4", ">f8", ">c8"]
    return stream(*[{colname(d): sample(rng, d, (2, 3)) for d in dts} for _ in range(3)])


@good("rec_ragged_1d", "auto", "records", True)
def _(rng):
    """1-d arrays whose lengths differ between records (including 0) -> List(T)."""
    lens = [3, 0, 5, 1]
    return stream(*[{"f4": sample(rng, "<f4", (n,)), "i8_be": sample(rng, ">i8", (n + 1,)),
                     "b1": sample(rng, "|b1", (max(n - 1, 0),))} for n in lens])


@good("rec_ragged_2d", "auto", "records", True)
def _(rng):
    """2-d arrays, shapes differ (one or both axes, with empty ones) -> List(List(T))."""
    a = [(2, 3), (1, 3), (0, 3), (4, 3)]
    b = [(2, 2), (1, 4), (2, 0), (0, 5)]
    return stream(*[{"rows3": sample(rng, "<f8", sa), "both": sample(rng, ">i2", sb),
                     "c8": sample(rng, "<c8", sb)} for sa, sb in zip(a, b)])


@good("rec_empty_arrays", "auto", "records", True)
def _(rng):
    """Empty arrays of the same shape in every record: (0,) -> FSL(T, 0); (2, 0); (0, 3)."""
    return stream(*[{"e0": np.zeros(0, "<f8"), "e20": np.zeros((2, 0), "<i4"),
                     "e03": np.zeros((0, 3), ">f4"), "u0": np.zeros(0, "<U3")} for _ in range(3)])


@good("rec_0d_arrays", "auto", "records", True)
def _(rng):
    """0-d arrays (shape []) -> plain columns of their dtype, both byte orders."""
    sdt = np.dtype([("a", "<i2"), ("b", ">f4")])
    return stream(*[{"f4": np.array(rng.standard_normal(), "<f4"), "f8_be": np.array(rng.standard_normal(), ">f8"),
                     "i2": np.array(-3 * i, "<i2"), "u8": np.array(2**64 - 1 - i, "<u8"),
                     "b1": np.array(i % 2 == 0), "c8": np.array(complex(i, -i), "<c8"),
                     "f2_be": np.array(0.5 * i, ">f2"), "u": np.array("héllo"[: i + 1], "<U5"),
                     "s": np.array(b"ab\x00"[: i + 1], "S4"), "rec": np.array((i, 1.5 * i), sdt)}
                    for i in range(3)])


@good("rec_numpy_scalars", "auto", "records", True)
def _(rng):
    """numpy scalars: {nd: False} maps, always native byte order.  np.float64 is a float
    subclass, so msgpack packs it as a plain float64 (no ndarray map at all)."""
    return stream(*[{"f4": np.float32(1.5 * i), "i2": np.int16(-3 * i), "b": np.bool_(i % 2 == 0),
                     "u8": np.uint64(2**64 - 1 - i), "f2": np.float16(0.25 * i), "i1": np.int8(-i),
                     "c8": np.complex64(complex(i, 2)), "c16": np.complex128(complex(-i, 0.5)),
                     "f8": np.float64(2.5 * i), "i8": np.int64(-(2**63) + i), "u1": np.uint8(200 + i)}
                    for i in range(3)])


@good("rec_openpi", "auto", "records", False, openpi=True)
def _(rng):
    """openpi's dialect (read under auto): ndarrays of both byte orders, fixed and ragged, and
    numpy scalars as {__npgeneric__: True, data: obj.item(), dtype}; np.float64 is a plain float."""
    rows = [{"obs": sample(rng, "<f4", (2, 3)), "ids": sample(rng, ">i8", (i + 1,)),
             "step": np.int32(i - 1), "u8": np.uint64(2**64 - 1 - i), "reward": np.float32(0.5 * i),
             "h": np.float16(-1.5 * i), "done": np.bool_(i == 2), "gain": np.float64(1.25 * i),
             "tiny": np.int8(-128 + i), "name": "ep%d" % i} for i in range(3)]
    return b"".join(msgpack.packb(r, default=openpi_encode, use_bin_type=True) for r in rows)


@good("rec_bin_keys", "auto", "records", True)
def _(rng):
    """Python bytes keys (msgpack bin): read as str column names, written back as bin."""
    return stream(*[{b"id": i, b"emb": sample(rng, "<f4", (3,)), "name": "r%d" % i, b"tags": [b"x"] * i}
                    for i in range(3)])


@good("rec_nested_bin_keys", "auto", "records", True)
def _(rng):
    """Bytes keys inside nested maps, as msgpack_numpy's own tests write them
    ({'x': {b'foo': ...}}): written back as bin, where another map's same-named str key (y.foo),
    a map nested under a bin key and a list of maps keep theirs; a structured ndarray's field of
    the same name is no key at all."""
    st = np.dtype([("foo", "<i4"), ("w", "<f8")])
    return stream(*[{"id": i, "x": {b"foo": 1.0 * i, b"bar": sample(rng, "<f4", (2,)), "baz": {"foo": i}},
                     "y": {"foo": -i}, "items": [{b"k": j, "foo": j} for j in range(i)],
                     "arr": np.zeros(2, st)} for i in range(3)])


@good("col_bin_keys", "auto", "columns", True)
def _(rng):
    """A columns map with bytes keys."""
    return pack({b"x": sample(rng, "<i2", (4, 2)), b"y": ["a", "b", "c", "d"]})


@good("rec_datetime", "auto", "records", True)
def _(rng):
    """datetime64/timedelta64 of every unit, with NaT (written through the strided-view path)."""
    rows = []
    for i in range(3):
        row = {}
        for unit in ["s", "ms", "us", "ns", "D", "W", "h", "m"]:
            ints = np.array([10_000 + i, -5 * i - 1, I64_MIN if i != 1 else 7], "<i8")
            row["M8_" + unit] = writable(ints.view("<M8[%s]" % unit))
            row["m8_" + unit] = writable(ints.view("<m8[%s]" % unit))
        row["M8_ns_be"] = writable(np.array([1_600_000_000_000_000_000 + i, I64_MIN], "<i8").view("<M8[ns]").astype(">M8[ns]"))
        row["m8_us_2d"] = writable(np.arange(6, dtype="<i8").reshape(2, 3).view("<m8[us]") * (i + 1))
        rows.append(row)
    return stream(*rows)


@good("rec_structured_empty_subarrays", "auto", "records", True)
def _(rng):
    """Structured dtypes whose sub-array fields have a zero-length axis ((0,), (2, 0)) next to
    ordinary fields: valid numpy, no bytes for those fields."""
    dt = np.dtype([("e", "<i4", (0,)), ("b", "<i2"), ("m", ">f4", (2, 0))])
    return stream(*[{"x": np.array([((), i, ()), ((), -i, ())], dt), "k": i} for i in range(3)])


@good("rec_structured", "auto", "records", True)
def _(rng):
    """Structured dtypes: padding (descr has ['', '|V4']), big-endian fields, sub-array fields
    of shape (3,) and (2, 2), a nested struct; aligned dtype (padding '|V7')."""
    padded = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f8"], "offsets": [0, 8], "itemsize": 16})
    be = np.dtype([("x", ">i4"), ("y", ">f8"), ("z", ">c8")])
    sub = np.dtype([("id", "<u2"), ("v", "<f4", (3,)), ("m", "|i1", (2, 2))])
    nested = np.dtype([("a", "<i2"), ("inner", [("p", ">u4"), ("q", "<f2", (2,))])])
    aligned = np.dtype([("a", "|u1"), ("b", "<f8")], align=True)
    rows = []
    for i in range(3):
        row = {}
        for name, dt in [("pad", padded), ("be", be), ("sub", sub), ("nested", nested), ("aligned", aligned)]:
            arr = np.zeros(2, dt)  # zeros: the padding bytes stay 0, so a writer can restore them
            for f in dt.names:
                fdt = dt.fields[f][0]
                if fdt.names:
                    for g in fdt.names:
                        arr[f][g] = sample(rng, fdt.fields[g][0].base.str, arr[f][g].shape)
                else:
                    arr[f] = sample(rng, fdt.base.str, arr[f].shape)
            row[name] = arr
        rows.append(row)
    return stream(*rows)


@good("rec_fortran_order", "auto", "records", True)
def _(rng):
    """A Fortran-ordered array: msgpack_numpy writes tobytes(), i.e. C order."""
    return stream(*[{"m": np.asfortranarray(sample(rng, "<i4", (2, 3)))} for _ in range(3)])


# --- records: special values -----------------------------------------------------------------

@good("rec_float_specials", "auto", "records", True)
def _(rng):
    """NaN payloads (quiet and signalling), +-0, +-inf, subnormals, max: in f8/f4/f2 arrays of
    both byte orders, and as plain msgpack float64 (one per record)."""
    return stream(*[{"f8": F8_SPECIALS, "f8_be": F8_SPECIALS.astype(">f8"), "f4": F4_SPECIALS,
                     "f4_be": F4_SPECIALS.byteswap().view(">f4"), "f2": F2_SPECIALS,
                     "f2_be": F2_SPECIALS.byteswap().view(">f2"), "py": float(F8_SPECIALS[i])}
                    for i in range(len(F8_SPECIALS))])


@good("rec_int_extremes", "auto", "records", True)
def _(rng):
    """min/max of every int dtype in both byte orders; plain ints from -2**63 to 2**63-1."""
    dts = ["|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", ">i2", ">i4", ">i8", ">u2", ">u4", ">u8"]
    py = [-(2**63), 2**63 - 1, 0, -1, 127, 128, -32, -33, 2**32, -(2**31) - 1]
    return stream(*[{**{colname(d): np.array([np.iinfo(d).min, np.iinfo(d).max, 0, 1], d) for d in dts},
                     "py": v} for v in py])


@good("rec_uint64", "auto", "records", True)
def _(rng):
    """A plain-int column with a value above i64 max -> UInt64."""
    return stream(*[{"u": v} for v in [2**64 - 1, 2**63, 0, 5, 2**63 - 1]])


@good("rec_unicode", "auto", "records", True)
def _(rng):
    """U arrays (both byte orders) with non-ASCII, astral chars and embedded (not trailing) NULs;
    plain str likewise."""
    u = np.array(["héllo", "a\x00b", "日本語", "🎉x", ""], "<U5")
    strs = ["naïve ☃ 🎉", "emb\x00nul", "", "日本"]
    return stream(*[{"u": np.roll(u, i), "u_be": np.roll(u, i).astype(">U5"), "s": s} for i, s in enumerate(strs)])


@good("rec_text_widths", "auto", "records", True)
def _(rng):
    """U and S arrays whose width changes from record to record (np.array of strings takes the
    longest one's), fixed shape and ragged, empty arrays and arrays of empty strings (U1/S1)."""
    words = ["a", "héllo", "日本語", "🎉", "", "longer words here"]
    recs = []
    for i in range(6):
        recs.append({
            "fixed": np.array([words[i], words[(i + 1) % 6]]),
            "ragged": np.array(words[:i], dtype=str),
            "b": np.array([w.encode()[: i + 1] for w in words[i:]]),
            "be": np.array([words[i]]).astype(np.dtype(f">U{max(1, len(words[i]))}")),
        })
    return stream(*recs)


@good("rec_bytes", "auto", "records", True)
def _(rng):
    """S arrays with trailing NULs (stripped, as numpy does), leading/embedded NULs (kept); bin."""
    s = np.array([b"ab\x00\x00", b"\x00x", b"abcd", b"", b"a\x00b"], "S4")
    bins = [b"\x00\x01\xff", b"", b"plain", b"\x00"]
    return stream(*[{"s": np.roll(s, i), "b": b} for i, b in enumerate(bins)])


# --- records: native msgpack values ----------------------------------------------------------

@good("rec_native", "auto", "records", True)
def _(rng):
    """int, float64, str, bin, bool, nil (an all-nil column and a sometimes-nil one), a list of
    ints and a map, with the same keys in every record."""
    return stream(*[{"i": -7 * i, "f": 0.5 + i, "s": "row%d" % i, "b": bytes([i, 255]), "t": i % 2 == 1,
                     "n": None, "maybe": None if i % 2 else i * 100, "li": list(range(i)),
                     "m": {"x": i, "y": "y%d" % i}} for i in range(4)])


@good("rec_lists", "auto", "records", True)
def _(rng):
    """Lists: of ints (some empty), of str, of lists of ints -> List(Int64), List(Utf8), List(List)."""
    return stream({"li": [1, 2, 3], "ls": ["a", "b"], "ll": [[1, 2], [3]]},
                  {"li": [], "ls": [], "ll": [[]]},
                  {"li": [-5], "ls": ["ç"], "ll": []},
                  {"li": [2**40, 0], "ls": ["x", "y", "z"], "ll": [[4], [5, 6], [7]]})


@good("rec_nested_struct_missing", "auto", "records", False)
def _(rng):
    """Nested maps -> Struct (first-seen field order); keys missing inside the map, the map
    missing or nil in some records -> nulls."""
    return stream({"id": 0, "meta": {"a": 1, "b": "x"}},
                  {"id": 1, "meta": {"a": 2}},
                  {"id": 2},
                  {"id": 3, "meta": {"b": "y", "c": {"deep": 1.5}}},
                  {"id": 4, "meta": None})


@good("rec_missing_keys", "auto", "records", False)
def _(rng):
    """Keys missing in some records and keys first seen late (column order = first seen)."""
    return stream({"a": 1, "v": np.arange(3, dtype="<f4")},
                  {"b": "only-b"},
                  {"a": 3, "c": True},
                  {"v": np.arange(3, 6, dtype="<f4"), "a": None})


@good("rec_int_float_mixed", "auto", "records", False)
def _(rng):
    """int and float in one column -> Float64 (also inside a list)."""
    return stream({"x": 1, "lx": [1, 2.5]}, {"x": 2.5, "lx": [3]}, {"x": -3, "lx": []}, {"x": None, "lx": [0.5]})


@good("rec_python_complex", "auto", "records", True)
def _(rng):
    """Python complex -> {complex: True, data: '(1+2j)'} -> FixedSizeList(Float64, 2)."""
    return stream(*[{"z": z} for z in [1 + 2j, complex(-0.0, float("inf")), complex(float("nan"), 1), 3j, None]])


@good("rec_timestamps", "auto", "records", True)
def _(rng):
    """msgpack Timestamp (ext -1) in its 32-, 64- and 96-bit forms -> Timestamp(ns, UTC).
    (The 96-bit form for s >= 2**34 is past year 2262, outside Timestamp(ns): not a good case.)"""
    ts = [msgpack.Timestamp(1_700_000_000, 0),            # 32-bit: ns == 0, s < 2**32
          msgpack.Timestamp(1_700_000_000, 123_456_789),  # 64-bit: s < 2**34
          msgpack.Timestamp(9_000_000_000, 0),            # 64-bit: s >= 2**32 (year 2255)
          msgpack.Timestamp(-1000, 5),                    # 96-bit: pre-1970
          msgpack.Timestamp(-1, 999_999_999),             # 96-bit: 1969-12-31T23:59:59.999999999
          None]
    return stream(*[{"t": t} for t in ts])


@good("rec_ext", "auto", "records", True)
def _(rng):
    """msgpack ExtType values of other types than the timestamp, in every ext form (fixext 1, 2,
    4, 8, 16; ext 8, 16, 32), alone, in lists and in maps -> Struct{code: Int8, data: Binary}."""
    sizes = [1, 2, 4, 8, 16, 0, 3, 255, 256, 70_000]
    ext = [msgpack.ExtType(int(rng.integers(0, 128)), rng.bytes(n)) for n in sizes]
    return stream(*[{"e": e, "l": [e, None] if i % 2 else [], "m": {"x": e if i % 3 else None}, "i": i}
                    for i, e in enumerate(ext)], {"e": None, "l": None, "m": None, "i": -1})


@good("val_ext", "auto", "values", True)
def _(rng):
    """A stream of ext values and nils -> one Struct{code, data} column."""
    return stream(*[msgpack.ExtType(c, rng.bytes(n)) if n >= 0 else None
                    for c, n in [(1, 0), (127, 5), (0, -1), (64, 16), (9, 300)]])


@good("rec_single_float", "auto", "records", True, float32_columns=("f",))
def _(rng):
    """Floats written with use_single_float=True -> msgpack float32 -> Float32."""
    vals = [1.5, 0.1, float(F4_SPECIALS[0]), float("-inf"), -0.0]
    return stream(*[{"f": v, "i": i} for i, v in enumerate(vals)], use_single_float=True)


@good("rec_user_nd_map", "auto", "records", True)
def _(rng):
    """User maps that merely have an 'nd' key (str keys, no full key set) stay Structs."""
    return stream(*[{"id": i, "meta": {"nd": i, "x": 2 * i}, "flag": {"nd": True, "type": "<f4"}} for i in range(3)])


@good("rec_user_nd_toplevel", "auto", "records", True)
def _(rng):
    """Records that are themselves {"nd": 1, "x": 2}: columns nd and x."""
    return stream({"nd": 1, "x": 2}, {"nd": 3, "x": 4})


@good("rec_embedding_100", "auto", "records", True)
def _(rng):
    """The embedding-like table: {id, label, score, emb: float32[16]} x 100 records."""
    return stream(*[{"id": i, "label": "item-%d" % i, "score": float(rng.random()),
                     "emb": rng.standard_normal(16).astype("<f4")} for i in range(100)])


@good("rec_single_record", "auto", "records", True)
def _(rng):
    """Exactly one record (it has a scalar value, so auto does not take it for columns)."""
    return pack({"id": 7, "v": np.arange(3, dtype="<f4"), "name": "solo"})


@good("rec_single_map_forced", "records", "columns", True)
def _(rng):
    """One map of equal-length ndarrays: auto says columns, read explicitly as 1 record."""
    return pack({"a": np.arange(3, dtype="<i4"), "b": np.ones(3, "<f8")})


@good("rec_toplevel_list", "auto", "records", True)
def _(rng):
    """One top-level array of maps -> records."""
    return pack([{"id": i, "v": sample(rng, "<f8", (2,))} for i in range(3)])


# --- records: legacy writers (the only hand-assembled ndarray maps) --------------------------

def legacy_ndarray(arr: np.ndarray, with_kind=True, str_keys=True) -> dict:
    keys = ["nd", "type", "kind", "shape", "data"] if with_kind else ["nd", "type", "shape", "data"]
    vals = {"nd": True, "type": arr.dtype.str, "kind": b"", "shape": list(arr.shape), "data": arr.tobytes()}
    return {(k if str_keys else k.encode()): vals[k] for k in keys}


@good("legacy_str_keys", "auto", "records", False, raw=True)
def _(rng):
    """ndarray maps with str keys ('nd', 'type', ...) and bin data.  Python's decode only
    recognises them with raw=True (as old msgpack returned everything), so that is the reference."""
    return msgpack.packb([{"id": i, "x": legacy_ndarray(sample(rng, "<f4", (3,))),
                           "y": legacy_ndarray(sample(rng, ">i2", (2, 2)))} for i in range(2)], use_bin_type=True)


@good("legacy_raw_strings", "auto", "records", False, raw=True)
def _(rng):
    """Pre-bin-type writer (use_bin_type=False): keys, type and data are all msgpack str (raw),
    data holding arbitrary bytes (not UTF-8)."""
    return b"".join(msgpack.packb({"id": i, "x": legacy_ndarray(sample(rng, "<f8", (3,)))}, use_bin_type=False)
                    for i in range(2))


@good("legacy_no_kind", "auto", "records", False)
def _(rng):
    """Pre-0.3.9 ndarray maps: bin keys, no b'kind' key."""
    return b"".join(msgpack.packb({"id": i, "x": legacy_ndarray(sample(rng, "<i4", (3,)), with_kind=False, str_keys=False)},
                                  use_bin_type=True) for i in range(2))


# --- columns ---------------------------------------------------------------------------------

@good("col_1d", "auto", "columns", True)
def _(rng):
    """One map of 1-d ndarrays (every numeric dtype, both byte orders, U, S), 5 rows."""
    cols = {colname(d): sample(rng, d, (5,)) for d in NUMERIC_LE + NUMERIC_BE}
    cols["U"] = np.array(["a", "bé", "", "日本", "x\x00y"], "<U4")
    cols["S"] = np.array([b"a", b"b\x00", b"", b"\x00\x01", b"zz"], "S2")
    return pack(cols)


@good("col_2d", "auto", "columns", True)
def _(rng):
    """ndarrays of shape (N, *s): per-row shape (3,), (2, 2), complex (2,), empty (0,)."""
    n = 6
    return pack({"v3": sample(rng, "<f4", (n, 3)), "m22": sample(rng, ">i8", (n, 2, 2)),
                 "c": sample(rng, "<c8", (n, 2)), "e": np.zeros((n, 0), "<f8")})


@good("col_structured_datetime", "auto", "columns", True)
def _(rng):
    """Columns of a structured array and datetime64 / timedelta64 (2-d) arrays with NaT."""
    dt = np.dtype([("a", ">i4"), ("b", "<f8", (2,))])
    s = np.zeros(4, dt)
    s["a"] = [1, -2, 3, -4]
    s["b"] = [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5], [6.5, 7.5]]
    ts = np.array([0, 1_700_000_000_000_000, I64_MIN, -1], "<i8").view("<M8[us]")
    td = np.array([[1, 2], [I64_MIN, 4], [5, 6], [7, -8]], "<i8").view("<m8[ms]")
    return pack({"s": s, "ts": writable(ts), "td": writable(td)})


@good("col_mixed_list_str", "auto", "columns", True)
def _(rng):
    """A columns map mixing an ndarray column and a list-of-str column."""
    return pack({"x": np.arange(4, dtype="<f8"), "names": ["a", "b", "ç", "d"]})


@good("col_lists_only", "auto", "columns", True)
def _(rng):
    """A columns map of plain lists only (ints, str, lists)."""
    return pack({"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [[1], [2, 3], []]})


@good("col_list_of_ndarrays", "auto", "columns", True)
def _(rng):
    """A columns map whose value is a list of same-shape ndarrays (one per row), beside an ndarray."""
    return pack({"frames": [sample(rng, "<f4", (2, 3)) for _ in range(4)], "t": np.arange(4, dtype="<i8"),
                 "masks": [sample(rng, "|b1", (3,)) for _ in range(4)]})


@good("col_chunks", "columns", "records", True)
def _(rng):
    """A stream of 2 column maps = 2 chunks (auto sees 2 objects -> records)."""
    return stream({"a": np.arange(3, dtype="<i4"), "s": np.array(["x", "yy", "z"], "<U2"), "v": sample(rng, "<f4", (3, 2))},
                  {"a": np.arange(3, 5, dtype="<i4"), "s": np.array(["p", "q"], "<U2"), "v": sample(rng, "<f4", (2, 2))})


@good("col_embedding_100", "auto", "columns", True)
def _(rng):
    """The embedding-like table as one columns map: id, label (list of str), score, emb (100, 16)."""
    n = 100
    return pack({"id": np.arange(n, dtype="<i8"), "label": ["item-%d" % i for i in range(n)],
                 "score": rng.random(n), "emb": rng.standard_normal((n, 16)).astype("<f4")})


# --- values ----------------------------------------------------------------------------------

@good("val_ndarray_stream", "auto", "values", True)
def _(rng):
    """A stream of ndarrays of shape (3,): one row each -> FSL(Float32, 3)."""
    return stream(*[sample(rng, "<f4", (3,)) for _ in range(4)])


@good("val_ndarray_stream_ragged", "auto", "values", True)
def _(rng):
    """A stream of ndarrays of differing lengths -> List(Int16)."""
    return stream(*[sample(rng, ">i2", (n,)) for n in [2, 0, 5]])


@good("val_big_arrays", "auto", "values", True)
def _(rng):
    """A stream of five float16 arrays of (1024, 520), 1 MiB each: a batch per array, its values
    a slice of the input where the payload is aligned (payload offsets alternate here)."""
    return stream(*[sample(rng, "<f2", (1024, 520)) for _ in range(5)])


@good("rec_big_arrays", "auto", "records", True)
def _(rng):
    """Records holding arrays over 1 MiB (<f4, >f8, and an id): a batch per record."""
    return stream(*[{"id": i, "f4": sample(rng, "<f4", (512, 600)),
                     "f8_be": sample(rng, ">f8", (140, 1000))} for i in range(4)])


@good("val_bare_2d", "auto", "values", True)
def _(rng):
    """One bare 2-d ndarray (5, 3): its axis 0 are the rows -> FSL(Float64, 3)."""
    return pack(np.arange(15, dtype=">f8").reshape(5, 3) / 4)


@good("val_bare_empty_2d", "auto", "values", True)
def _(rng):
    """One bare ndarray of shape (0, 2, 3): no rows, but written back with its shape."""
    return pack(np.zeros((0, 2, 3), ">i2"))


@good("val_bare_0d", "auto", "values", True)
def _(rng):
    """One bare 0-d ndarray: one row, written back bare (no array around it)."""
    return pack(np.array(1.5, "<f8"))


@good("val_bare_0d_complex", "auto", "values", True)
def _(rng):
    """One bare 0-d complex ndarray (np.array(1+2j)): one row of FixedSizeList(Float64, 2),
    written back bare, not as a one-element array."""
    return pack(np.array(1 - 2.5j, "<c16"))


@good("val_bare_1d", "auto", "values", True)
def _(rng):
    """One bare 1-d ndarray -> a plain UInt16 column."""
    return pack(np.array([0, 1, 65535, 7], "<u2"))


@good("val_list_of_ints", "auto", "values", True)
def _(rng):
    """One top-level list of ints -> Int64."""
    return pack([1, -2, 3, 2**40, -(2**63)])


@good("val_str_stream", "auto", "values", True)
def _(rng):
    """A stream of str."""
    return stream("a", "bé", "", "🎉")


@good("val_int_float_stream", "auto", "values", False)
def _(rng):
    """A stream of ints and floats -> Float64; nil -> null."""
    return stream(1, 2.5, None, -3)


@good("val_nested_lists", "auto", "values", True)
def _(rng):
    """One top-level list of lists -> List(Int64)."""
    return pack([[1, 2], [3], []])


# --- empty -----------------------------------------------------------------------------------

@good("empty_file", "auto", "values", True)
def _(rng):
    """0 bytes -> empty table, no columns."""
    return b""


@good("empty_toplevel_list", "auto", "values", False)
def _(rng):
    """A top-level [] -> empty table, no columns."""
    return pack([])


# --------------------------------------------------------------------------------------------
# Bad cases: (name, layout, error category, offset or None, bytes, note).
# Offsets: truncation -> the file length (where input ran out); a bad byte / str / key -> the
# offset of that msgpack object's first byte; semantic errors (shapes, dtypes, conflicts) -> None.
# --------------------------------------------------------------------------------------------

TRUNC = "truncated input"
BAD_ND = "invalid ndarray"
BAD_DTYPE = "unsupported numpy dtype"
OBJECT = "object array"
CONFLICT = "type conflict"
BAD_KEY = "bad key"
DEEP = "nesting deeper than"
BAD_MSGPACK = "invalid msgpack"

PWNED_PATH = "/tmp/msgpack_arrow_pwned"


class _Pwn:
    """Pickles to posix.system('touch /tmp/msgpack_arrow_pwned').  Never unpickled here."""

    def __reduce__(self):
        return (os.system, ("touch " + PWNED_PATH,))


def nd_map(type_, shape, data, kind=b""):
    """A hand-assembled ndarray map (bad cases only)."""
    return {b"nd": True, b"type": type_, b"kind": kind, b"shape": shape, b"data": data}


def in_record(v) -> bytes:
    return msgpack.packb({"id": 0, "x": v}, use_bin_type=True)


def bad_cases():
    cases = []

    def add(name, layout, error, offset, data, note):
        cases.append((name, layout, error, offset, data, note))

    # truncated input
    full = pack({"x": np.arange(64, dtype="<f8")})
    cut = full[: len(full) - 100]
    add("bad_trunc_ndarray_data", "auto", TRUNC, len(cut), cut, "cut inside the data bytes of a 64 x f8 ndarray")
    full = pack({"x": np.arange(4, dtype="<f4")})
    cut = full[: full.index(b"\xc4\x04type") + 6]
    add("bad_trunc_ndarray_header", "auto", TRUNC, len(cut), cut, "cut after the b'type' key of an ndarray map")
    full = pack({"name": "hello world, this is a long enough string"})
    cut = full[:-10]
    add("bad_trunc_string", "auto", TRUNC, len(cut), cut, "cut inside a str value")
    full = stream({"a": 1, "v": np.arange(3, dtype="<i2")}, {"a": 2, "v": np.arange(3, dtype="<i2")})
    cut = full[:-3]
    add("bad_trunc_second_record", "auto", TRUNC, len(cut), cut, "second record of a stream cut short")
    data = b"\xc6\xff\xff\xff\xff" + bytes(range(10))
    add("bad_trunc_bin32_huge", "auto", TRUNC, len(data), data, "bin32 declaring 0xffffffff bytes, 10 present")
    data = b"\x81\xa1a\xdb\xff\xff\xff\xff" + b"abc"
    add("bad_trunc_str32_huge", "auto", TRUNC, len(data), data, "str32 declaring 0xffffffff bytes, 3 present")
    data = b"\xdd" + struct.pack(">I", 4_000_000_000) + b"\x01\x02\x03"
    add("bad_trunc_array32_huge", "auto", TRUNC, len(data), data, "array32 declaring 4e9 elements, 3 present")
    data = b"\xdf" + struct.pack(">I", 4_000_000_000) + b"\xa1a\x01"
    add("bad_trunc_map32_huge", "auto", TRUNC, len(data), data, "map32 declaring 4e9 entries, 1 present")
    # An ndarray whose data field (bin8 of 16 bytes) is rewritten as bin32 declaring ~4 GiB.
    head = in_record(nd_map("<f8", [2], b"\x00" * 16))
    data = head[: head.index(b"\xc4\x10")] + b"\xc6\xff\xff\xff\xf0" + b"\x00" * 16
    add("bad_trunc_ndarray_data_huge", "auto", TRUNC, len(data), data, "ndarray data bin32 declaring ~4 GiB, 16 bytes present")

    # invalid ndarray
    f4 = np.arange(3, dtype="<f4")
    add("bad_nd_data_short", "auto", BAD_ND, None, in_record(nd_map("<f4", [3], f4.tobytes()[:8])), "shape [3] <f4 with 8 data bytes")
    add("bad_nd_data_long", "auto", BAD_ND, None, in_record(nd_map("<f4", [3], f4.tobytes() + b"\0" * 4)), "shape [3] <f4 with 16 data bytes")
    add("bad_nd_negative_shape", "auto", BAD_ND, None, in_record(nd_map("<f4", [-1], b"")), "shape [-1]")
    add("bad_nd_negative_shape_2d", "auto", BAD_ND, None, in_record(nd_map("<f4", [-2, -3], b"\0" * 24)), "shape [-2, -3]: product positive, entries negative")
    add("bad_nd_shape_overflow", "auto", BAD_ND, None, in_record(nd_map("<f8", [2**32, 2**32, 4], b"\0" * 16)), "shape product 2**66 overflows 64 bits")
    add("bad_nd_nbytes_overflow", "auto", BAD_ND, None, in_record(nd_map("<f8", [2**62], b"\0" * 16)), "prod(shape) fits, x itemsize 8 overflows 64 bits")
    # shapes whose structure no data backs: a zero axis after huge ones, zero-size elements
    add("bad_nd_empty_rows_huge", "auto", BAD_ND, None, in_record(nd_map("<i4", [2**62, 0], b"")), "shape (2**62, 0): 2**62 empty rows in 0 bytes")
    add("bad_nd_empty_2d_huge", "records", BAD_ND, None, in_record(nd_map("<i4", [2**30, 2**30, 0], b"")) * 2, "shape (2**30, 2**30, 0) in records")
    add("bad_nd_zero_size_elems_huge", "auto", BAD_ND, None, msgpack.packb({"x": nd_map("|S0", [2**62], b"")}, use_bin_type=True), "2**62 elements of S0 as a columns map")
    add("bad_nd_struct_empty_field_huge", "auto", BAD_ND, None, in_record(nd_map([["a", "<i4", [0]]], [2**62], b"", b"V")), "structured, field of shape (0,), 2**62 elements")
    add("bad_nd_bare_empty_huge", "auto", BAD_ND, None, msgpack.packb(nd_map("<f8", [2**62, 0], b""), use_bin_type=True), "one bare ndarray of shape (2**62, 0)")
    # (an int shape is 1-d to numpy, and so to msgpack_numpy and to us; a float is no shape)
    add("bad_nd_shape_not_array", "auto", BAD_ND, None, in_record(nd_map("<f4", 3.0, f4.tobytes())), "shape is the float 3.0")
    add("bad_nd_type_int", "auto", BAD_ND, None, in_record(nd_map(7, [3], f4.tobytes())), "nd true but type is the int 7")
    add("bad_nd_data_not_bin", "auto", BAD_ND, None, in_record(nd_map("<f4", [1], 5)), "data is the int 5")

    # unsupported numpy dtype
    add("bad_dtype_f3", "auto", BAD_DTYPE, None, in_record(nd_map("<f3", [2], b"\0" * 6)), "type '<f3'")
    add("bad_dtype_c32", "auto", BAD_DTYPE, None, in_record(nd_map("<c32", [1], b"\0" * 32)), "type '<c32' (complex256)")
    add("bad_dtype_M8Y", "auto", BAD_DTYPE, None, in_record(nd_map("<M8[Y]", [2], b"\0" * 16)), "type '<M8[Y]'")
    add("bad_dtype_garbage", "auto", BAD_DTYPE, None, in_record(nd_map("zz", [1], b"\0")), "type 'zz'")
    dup = in_record(nd_map([["a", "<i4"], ["a", "<i4"]], [1], b"\0" * 8, kind=b"V"))
    try:
        mn.unpackb(dup)
        raise AssertionError("numpy took a repeated field name")
    except ValueError:
        pass  # numpy refuses it too
    add("bad_dtype_struct_duplicate_name", "auto", BAD_DTYPE, None, dup,
        "structured descr [['a', '<i4'], ['a', '<i4']]: a repeated field name")
    # np.longdouble(1.5) would carry 6 uninitialised padding bytes (the file would differ run to
    # run); a scalar taken from a zero-padded buffer of the x87 80-bit 1.5 is deterministic.
    # (On x86-64 long double is 16 bytes: 80-bit value + 6 padding; elsewhere the bytes stay the
    # same and only the value differs, which does not matter for a bad case.)
    ld = np.frombuffer(bytes(7) + b"\xc0\xff\x3f" + bytes(6), np.longdouble)[0]
    add("bad_dtype_longdouble_scalar", "auto", BAD_DTYPE, None, pack({"id": 0, "x": ld}),
        "np.longdouble scalar as msgpack_numpy writes it: {nd: False, type: '<f16'}")

    # openpi scalars whose value the dtype cannot hold (numpy would raise or wrap)
    data = msgpack.packb({"id": 0, "x": {b"__npgeneric__": True, b"data": 300, b"dtype": "|i1"}},
                         use_bin_type=True)
    add("bad_openpi_scalar_range", "auto", BAD_ND, data.index(b"\xcd\x01\x2c"), data,
        "openpi scalar {__npgeneric__: True, data: 300, dtype: '|i1'}: 300 does not fit int8")

    # object arrays: never unpickled
    add("bad_object_array", "auto", OBJECT, None, pack({"id": 0, "x": np.array([{"a": 1}, None], dtype=object)}),
        "np.array([{'a': 1}, None], dtype=object) written by msgpack_numpy: data is a pickle")
    hostile = pickle.dumps(_Pwn(), protocol=2)
    assert b"system" in hostile
    add("bad_object_pickle_hostile", "auto", OBJECT, None,
        in_record(nd_map([["", "|O"]], [1], hostile, kind=b"O")),
        "kind O map whose pickle runs os.system('touch %s') when loaded; the file must not appear" % PWNED_PATH)

    # type conflicts (all written by msgpack_numpy)
    add("bad_conflict_str_int", "auto", CONFLICT, None, stream({"a": "x"}, {"a": 1}), "column a: str in record 0, int in record 1")
    add("bad_conflict_f4_i8", "auto", CONFLICT, None, stream({"a": np.zeros(3, "<f4")}, {"a": np.zeros(3, "<i8")}),
        "column a: ndarray <f4 in record 0, <i8 in record 1")
    add("bad_conflict_ndim", "auto", CONFLICT, None, stream({"a": np.zeros(4, "<f4")}, {"a": np.zeros((2, 2), "<f4")}),
        "column a: ndim 1 in record 0, ndim 2 in record 1")

    # bad keys (raw bytes: msgpack would not let us write a duplicate)
    add("bad_key_int", "auto", BAD_KEY, 4, bytes.fromhex("82 a1 61 01 02 a1 62"), "{'a': 1, 2: 'b'}: int key at 4")
    add("bad_key_duplicate", "auto", BAD_KEY, 4, bytes.fromhex("82 a1 61 01 a1 61 02"), "{'a': 1, 'a': 2}: second 'a' at 4")
    # a nested map keyed by ints is a Map column; keys of mixed types in one map are an error
    add("bad_key_nested_mixed", "auto", BAD_KEY, 6, bytes.fromhex("81 a1 6d 82 01 02 a1 6b 03"), "{'m': {1: 2, 'k': 3}}: a str key after an int key, at 6")
    add("bad_key_bin_not_utf8", "auto", BAD_KEY, 1, bytes.fromhex("81 c4 02 ff fe 01"), "bin key b'\\xff\\xfe' is not UTF-8")

    # nesting
    add("bad_nesting_100k", "auto", DEEP, None, b"\x91" * 100_000 + b"\xc0", "[[[...nil...]]] 100,000 deep")
    add("bad_nesting_maps_100k", "auto", DEEP, None, b"\x81\xa1a" * 100_000 + b"\xc0", "{'a': {'a': ...}} 100,000 deep")

    # invalid msgpack
    add("bad_reserved_c1", "auto", BAD_MSGPACK, 3, bytes.fromhex("81 a1 61 c1"), "reserved byte 0xc1 as a value at 3")
    first = pack({"a": 1})
    add("bad_reserved_c1_second_object", "auto", BAD_MSGPACK, len(first), first + b"\xc1", "0xc1 where the second object starts")
    add("bad_utf8_value", "auto", BAD_MSGPACK, 3, bytes.fromhex("81 a1 61 a2 ff fe"), "str value 0xff 0xfe (not UTF-8) at 3")
    add("bad_utf8_key", "auto", BAD_KEY, 1, bytes.fromhex("81 a2 ff fe 01"), "str key 0xff 0xfe (not UTF-8) at 1")
    return cases


# --------------------------------------------------------------------------------------------


def write_ipc(path, table: pa.Table):
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)


def main(outdir: str):
    os.makedirs(os.path.join(outdir, "good"), exist_ok=True)
    os.makedirs(os.path.join(outdir, "bad"), exist_ok=True)
    manifest = {"good": [], "bad": []}
    names = set()

    for case in GOOD:
        assert case.name not in names, case.name
        names.add(case.name)
        data = case.build(case_rng(case.name))
        objs = openpi_decode(data) if case.openpi else python_decode(data, case.raw)
        auto = auto_layout(objs)
        assert auto == case.auto_layout, (case.name, auto)
        intended = case.auto_layout if case.layout == "auto" else case.layout
        table = to_table(objs, intended)
        for col in case.float32_columns:
            table = table.set_column(table.schema.get_field_index(col), col, as_float32(table[col].combine_chunks()))
        table.validate(full=True)
        base = os.path.join(outdir, "good", case.name)
        with open(base + ".msgpack", "wb") as f:
            f.write(data)
        write_ipc(base + ".arrow", table)
        manifest["good"].append({"name": case.name, "layout": case.layout, "auto_layout": case.auto_layout,
                                 "byte_exact": case.byte_exact, "rows": table.num_rows, "note": case.note})

    for name, layout, error, offset, data, note in bad_cases():
        assert name not in names, name
        names.add(name)
        assert offset is None or 0 <= offset <= len(data)
        with open(os.path.join(outdir, "bad", name + ".msgpack"), "wb") as f:
            f.write(data)
        manifest["bad"].append({"name": name, "layout": layout, "error": error, "offset": offset, "note": note})

    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    self_check(outdir)
    print("wrote %d good and %d bad cases to %s" % (len(manifest["good"]), len(manifest["bad"]), outdir))


def self_check(outdir: str):
    """Spot checks that the expected tables kept what matters (NaN payloads above all)."""
    t = pa.ipc.open_file(os.path.join(outdir, "good", "rec_float_specials.arrow")).read_all()
    f8 = t["f8"].combine_chunks().flatten()
    got = np.frombuffer(f8.buffers()[1], "<u8")[f8.offset: f8.offset + len(F8_SPECIALS)]
    assert got[0] == 0x7FF8000000000001 and got[1] == 0xFFF0000000000ABC, [hex(x) for x in got[:2]]
    py = t["py"].combine_chunks()
    assert np.frombuffer(py.buffers()[1], "<u8")[1] == 0xFFF0000000000ABC
    f4 = t["f4_be"].combine_chunks().flatten()
    assert np.frombuffer(f4.buffers()[1], "<u4")[0] == 0x7FC00001
    assert not os.path.exists(PWNED_PATH), "something unpickled the hostile pickle"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: generate.py OUTDIR")
    main(sys.argv[1])
