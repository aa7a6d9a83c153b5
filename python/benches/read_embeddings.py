#!/usr/bin/env python3
"""read_msgpack vs the idiomatic Python path, on one embeddings file, in one run.

    python python/benches/read_embeddings.py [ROWS] [DIR]

Writes DIR/embeddings.msgpack (ROWS records {id, label, score, emb float32[768]}, written by
msgpack_numpy) unless it exists, then times, 5 times each, interleaved, and prints the minimum:
  python:   msgpack.Unpacker(object_hook=msgpack_numpy.decode) + np.stack + pl.DataFrame
  ours:     msgpack_arrow.read_msgpack(path)
Absolute times drift a lot between days on shared machines (INTEROP.md): compare the ratio.
"""

import os
import sys
import tempfile
import time

import msgpack
import msgpack_numpy as mn
import numpy as np
import polars as pl

import msgpack_arrow as ma

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
DIR = sys.argv[2] if len(sys.argv) > 2 else tempfile.gettempdir()
DIM = 768
PATH = os.path.join(DIR, f"embeddings-{ROWS}.msgpack")


def write():
    rng = np.random.default_rng(0)
    packer = mn.Packer()
    with open(PATH + ".tmp", "wb") as f:
        for i in range(ROWS):
            f.write(packer.pack({"id": i, "label": f"label {i % 100}", "score": float(rng.random()),
                                 "emb": rng.standard_normal(DIM, dtype=np.float32)}))
    os.replace(PATH + ".tmp", PATH)


def python_path():
    with open(PATH, "rb") as f:
        rows = list(msgpack.Unpacker(f, object_hook=mn.decode, raw=False, max_buffer_size=0))
    return pl.DataFrame({
        "id": [r["id"] for r in rows],
        "label": [r["label"] for r in rows],
        "score": [r["score"] for r in rows],
        "emb": pl.Series(np.stack([r["emb"] for r in rows])),
    })


def ours():
    return ma.read_msgpack(PATH)


def main():
    if not os.path.exists(PATH):
        write()
    a, b = python_path(), ours()
    assert a.schema == b.schema, (a.schema, b.schema)
    assert a.equals(b)
    del a, b
    times = {"python": [], "ours": []}
    for _ in range(5):
        for name, fn in [("python", python_path), ("ours", ours)]:
            t = time.perf_counter()
            df = fn()
            times[name].append(time.perf_counter() - t)
            del df
    size = os.path.getsize(PATH) / 1e6
    py, us = min(times["python"]), min(times["ours"])
    print(f"{ROWS} records, {size:.0f} MB, min of 5")
    print(f"  msgpack_numpy + np.stack + pl.DataFrame: {py * 1000:8.1f} ms")
    print(f"  msgpack_arrow.read_msgpack:              {us * 1000:8.1f} ms   ({py / us:.1f}x faster)")


if __name__ == "__main__":
    main()
