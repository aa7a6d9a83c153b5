"""The Python side of `make demo`: read the example dump with msgpack_arrow and Polars.

    python examples/python_demo.py OUT.msgpack
"""
import sys

import msgpack_numpy
import polars as pl

import msgpack_arrow as ma

path = sys.argv[1]

# eager: a DataFrame, tensors as Array columns (emb: Array(Float32, 16), mask: Array(Boolean, (2, 3)))
df = ma.read_msgpack(path)
print(df.head(3))

# lazy: only `id` and `score` are decoded; the filter runs as the file is read
top = ma.scan_msgpack(path).filter(pl.col("score") > 0.99).select("id", "score").collect()
print(f"{top.height} rows with score > 0.99:", top["id"].to_list())

# blobs: one msgpack_numpy.packb per row (as stored in a database column) and back, with the
# Series methods (the pl.col(...).msgpack expressions are an optional plugin)
blobs = df.select("id").with_columns(df["emb"].msgpack.encode())
back = blobs.with_columns(blobs["emb"].msgpack.decode())
assert back.equals(df.select("id", "emb"))
first = msgpack_numpy.unpackb(blobs["emb"][0])
print("a blob, as msgpack_numpy reads it:", first.dtype, first.shape)

# and back to a msgpack_numpy file, byte-exact with the input
ma.write_msgpack(df, path + ".copy")
same = open(path, "rb").read() == open(path + ".copy", "rb").read()
print("write_msgpack(read_msgpack(f)) byte-identical to f:", same)
