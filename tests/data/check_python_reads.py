#!/usr/bin/env python3
"""What does Python's msgpack_numpy make of these files?  (Helper for SPEC 4.4 tests.)

    python tests/data/check_python_reads.py FILE...

Reads each file as a stream with msgpack.Unpacker(object_hook=msgpack_numpy.decode, raw=False)
and prints one JSON document: [{"file", "objects": [summary, ...]} or {"file", "error"}].
A summary gives the Python type, numpy dtype and shape, and the exact bytes (hex for scalars,
sha256 of the C-order buffer for arrays), so a test can compare values bit for bit.

Object arrays (kind 'O') are refused, never unpickled: their data is a pickle.
"""

import hashlib
import json
import struct
import sys

import msgpack
import msgpack_numpy
import numpy as np


def safe_decode(obj):
    kind = obj.get(b"kind", obj.get("kind"))
    if kind in (b"O", "O"):
        raise ValueError("object array (pickle) refused")
    return msgpack_numpy.decode(obj)


def dtype_of(dt: np.dtype):
    # Structured dtypes as their descr (what msgpack_numpy writes), others as e.g. '<f4'.
    return [list(d) for d in dt.descr] if dt.names else dt.str


def summary(v):
    if isinstance(v, np.ndarray):
        return {"type": "ndarray", "dtype": dtype_of(v.dtype), "shape": list(v.shape),
                "sha256": hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}
    if isinstance(v, np.generic):
        return {"type": "numpy_scalar", "dtype": dtype_of(v.dtype), "hex": v.tobytes().hex()}
    if isinstance(v, dict):
        return {"type": "map", "items": {str(k): summary(x) for k, x in v.items()}}
    if isinstance(v, list):
        return {"type": "list", "items": [summary(x) for x in v]}
    if isinstance(v, float):  # bits, so NaN payloads and -0.0 show
        return {"type": "float", "hex": struct.pack(">d", v).hex()}
    if isinstance(v, complex):
        return {"type": "complex", "hex": struct.pack(">dd", v.real, v.imag).hex()}
    if isinstance(v, bytes):
        return {"type": "bytes", "hex": v.hex()}
    if isinstance(v, msgpack.Timestamp):
        return {"type": "timestamp", "ns": v.to_unix_nano()}
    if v is None or isinstance(v, (bool, int, str)):
        return {"type": type(v).__name__, "value": v}
    return {"type": type(v).__name__, "repr": repr(v)}


def read(path):
    try:
        unpacker = msgpack.Unpacker(object_hook=safe_decode, raw=False)
        with open(path, "rb") as f:
            unpacker.feed(f.read())
        return {"file": path, "objects": [summary(o) for o in unpacker]}
    except Exception as e:  # report, don't stop: later files still get checked
        return {"file": path, "error": "%s: %s" % (type(e).__name__, e)}


if __name__ == "__main__":
    json.dump([read(p) for p in sys.argv[1:]], sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
