"""SPEC §4.4 check: Python's msgpack_numpy reads what msgpack-arrow wrote as it read the original.

    python compare_python.py ORIGINAL OURS [ORIGINAL OURS ...]

Both files are decoded with the real msgpack_numpy (openpi's maps by openpi's rules); the decoded objects must match: same numpy
dtypes and shapes, bit-identical data, same plain values. Allowed differences, since Arrow has one
type per column: an int where the original had an int in a float column, and a nil written for a
key missing from the original record. Prints one line per mismatch; exits 1 if any.
"""
import math
import sys

import msgpack
import msgpack_numpy
import numpy as np

from generate import openpi_hook


def hook(m):
    # an original in openpi's dialect (golden case rec_openpi) is read by openpi's rules
    m = openpi_hook(m)
    return msgpack_numpy.decode(m) if isinstance(m, dict) else m


def load(path):
    u = msgpack.Unpacker(object_hook=hook, raw=False, strict_map_key=False)
    with open(path, "rb") as f:
        u.feed(f.read())
    return list(u)


def same(a, b, where):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: ndarray {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype.kind in "OV" and a.dtype.names:
            return None if a.tobytes() == b.tobytes() or a.tolist() == b.tolist() else f"{where}: structured data differs"
        return None if np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes() else f"{where}: data differs"
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        if type(a) is not type(b) or np.asarray(a).tobytes() != np.asarray(b).tobytes():
            return f"{where}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            va, vb = a.get(k), b.get(k)
            r = same(va, vb, f"{where}.{k}")
            if r:
                return r
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = same(x, y, f"{where}[{i}]")
            if r:
                return r
        return None
    if isinstance(a, complex) and isinstance(b, complex):
        return same(a.real, b.real, where + ".real") or same(a.imag, b.imag, where + ".imag")
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool):
            return f"{where}: {a!r} vs {b!r}"
        fa, fb = float(a), float(b)
        if math.isnan(fa) and math.isnan(fb):
            return None
        return None if fa == fb and math.copysign(1, fa) == math.copysign(1, fb) else f"{where}: {a!r} vs {b!r}"
    if type(a) is not type(b) or a != b:
        return f"{where}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"
    return None


def main(args):
    bad = 0
    for orig, ours in zip(args[::2], args[1::2]):
        r = same(load(orig), load(ours), orig.rsplit("/", 1)[-1])
        if r:
            print(r)
            bad += 1
    print(f"{len(args) // 2 - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
