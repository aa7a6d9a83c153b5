"""Peak memory of reading (issue: read_msgpack within 1.3x the DataFrame; a scan that projects
away the tensors never holds them). Each measurement runs in a fresh interpreter and reads its
own peak RSS, VmHWM (not ru_maxrss, which Linux carries over from the forking parent)."""

from __future__ import annotations

import json
import subprocess
import sys

import msgpack
import msgpack_numpy as mn
import numpy as np
import pytest

ROWS = 64_000
WIDTH = 768  # float32: 3 KiB per row, 188 MiB of tensor bytes in all

MEASURE = r"""
import json, sys
import polars as pl, msgpack_arrow as ma
path, mode = sys.argv[1], sys.argv[2]
def kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
base = kib("VmRSS") * 1024
if mode == "read":
    df = ma.read_msgpack(path)
else:
    df = ma.scan_msgpack(path).select("id").collect(engine=mode)
peak = kib("VmHWM") * 1024
print(json.dumps({"grew": peak - base, "df": df.estimated_size(), "rows": df.height,
                  "ids": df["id"].sum()}))
"""


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory):
    path = tmp_path_factory.mktemp("mem") / "emb.msgpack"
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((256, WIDTH)).astype(np.float32)
    packer = msgpack.Packer(default=mn.encode)
    with open(path, "wb") as f:
        for i in range(ROWS):
            f.write(packer.pack({"id": i, "label": f"doc-{i}", "score": 0.5, "emb": emb[i % 256]}))
    return path


def measure(path, mode):
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path), mode], check=True,
                         capture_output=True, text=True)
    r = json.loads(out.stdout)
    assert r["rows"] == ROWS and r["ids"] == ROWS * (ROWS - 1) // 2
    return r


def test_read_msgpack_peak_is_near_the_dataframe(embeddings):
    r = measure(embeddings, "read")
    tensors = ROWS * WIDTH * 4
    assert r["df"] >= tensors
    # the file's pages are dropped as they are decoded: the DataFrame is most of the peak
    assert r["grew"] <= 1.3 * r["df"], f"peak grew {r['grew'] / 2**20:.0f} MiB for a {r['df'] / 2**20:.0f} MiB frame"


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_scan_without_the_tensors_never_holds_them(embeddings, engine):
    r = measure(embeddings, engine)
    tensors = ROWS * WIDTH * 4
    # the id column is 0.5 MiB; what is left is the engine and a few MiB of mapped pages
    assert r["grew"] < 0.25 * tensors, f"peak grew {r['grew'] / 2**20:.0f} MiB; tensors are {tensors / 2**20:.0f} MiB"
