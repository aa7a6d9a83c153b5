"""Write a small example dump the way ML pipelines do: a stream of msgpack_numpy records.

    python examples/make_example.py OUT.msgpack [ROWS]
"""
import sys

import msgpack
import msgpack_numpy
import numpy as np

out = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
rng = np.random.default_rng(7)
packer = msgpack_numpy.Packer()
with open(out, "wb") as f:
    for i in range(rows):
        f.write(packer.pack({
            "id": i,
            "label": f"doc-{i:05d}",
            "score": float(rng.random()),
            "emb": rng.standard_normal(16).astype(np.float32),
            "mask": rng.random((2, 3)) > 0.5,
        }))
print(f"wrote {rows} records to {out}")
