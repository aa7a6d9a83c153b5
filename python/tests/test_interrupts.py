"""Ctrl-C (SIGINT) during long reads, scans and writes: KeyboardInterrupt within a second, no
partial output, and the interpreter still works afterwards. Each case runs in a fresh interpreter
that loops over the operation until the signal arrives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import polars as pl
import pytest

import msgpack_arrow as ma

CHILD = r"""
import os, signal, sys, time
import polars as pl, msgpack_arrow as ma
path, out, op = sys.argv[1], sys.argv[2], sys.argv[3]
df = ma.read_msgpack(path) if op in ("write", "sink") else None
# the LazyFrame is made once: Ctrl-C during its construction lands in Polars' own conversion of
# the schema (a Python callback inside Polars, which turns the KeyboardInterrupt into a
# TypeError); what is ours to interrupt is the collect
lf = ma.scan_msgpack(path)
ops = {
    "read": lambda: ma.read_msgpack(path),
    "scan": lambda: lf.collect(),
    "scan-streaming": lambda: lf.collect(engine="streaming"),
    "write": lambda: ma.write_msgpack(df, out),
    # batches of 8192 rows: what Polars does to produce one is not ours to interrupt
    "sink": lambda: ma.sink_msgpack(pl.concat([df] * 4, rechunk=False).lazy(), out, chunk_size=8192),
}
# Ctrl-C as Python's default handler raises it, but only once: Polars' streaming engine may hand
# the same interrupt on a second time while the first KeyboardInterrupt is being handled
hits = []
def on_sigint(signum, frame):
    hits.append(time.monotonic())
    if len(hits) == 1:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_sigint)
print("ready", flush=True)
try:
    while True:
        ops[op]()
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
# still usable: a small read works, and no temporary file was left beside the output
small = ma.read_msgpack(ma.write_msgpack(pl.DataFrame({"x": [1, 2]}), None))
assert small["x"].to_list() == [1, 2]
print("usable", sorted(os.listdir(os.path.dirname(out))), flush=True)
"""


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    d = tmp_path_factory.mktemp("sigint")
    p = d / "in.msgpack"
    n = 60_000
    df = pl.DataFrame({"id": np.arange(n), "emb": np.random.default_rng(1).random((n, 768), dtype=np.float32)})
    ma.write_msgpack(df, p)
    return p


@pytest.mark.parametrize("op", ["read", "scan", "scan-streaming", "write", "sink"])
def test_sigint_is_a_prompt_keyboard_interrupt(dump, tmp_path, op):
    out = tmp_path / "out" / "o.msgpack"
    out.parent.mkdir()
    out.write_bytes(b"previous")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(dump), str(out), op], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "ready"
    time.sleep(1.5)  # well inside the loop
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    stdout, _ = child.communicate(timeout=60)
    assert child.returncode == 0, stdout
    lines = dict(line.split(" ", 1) for line in stdout.splitlines())
    took = float(lines["interrupted"]) - sent
    assert took < 1.0, f"KeyboardInterrupt {took:.2f} s after SIGINT"
    assert lines["usable"] == "['o.msgpack']"
    # the previous file, or a complete new one: never a partial write
    data = out.read_bytes()
    if data != b"previous":
        want = ma.read_msgpack(dump)
        if op == "sink":
            want = pl.concat([want] * 4)
        assert ma.read_msgpack(data).equals(want)


def test_ctrl_c_inside_polars_dtype_conversion_is_a_keyboard_interrupt(tmp_path, monkeypatch):
    """Polars builds an Array dtype through its Python class; a KeyboardInterrupt raised there
    (a Ctrl-C's handler running in that call) panics inside Polars. A write or a sink raises it
    as the KeyboardInterrupt it was, and leaves the previous file."""
    df = pl.DataFrame({"id": [1, 2], "emb": np.zeros((2, 3), dtype=np.float32)})
    out = tmp_path / "o.msgpack"
    out.write_bytes(b"previous")

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pl.Array, "__init__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ma.write_msgpack(df, out)
    with pytest.raises(KeyboardInterrupt):
        ma.sink_msgpack(df.lazy(), out)
    monkeypatch.undo()
    assert out.read_bytes() == b"previous"
    assert ma.read_msgpack(ma.write_msgpack(df)).equals(df)
