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
from conftest import manifest

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
elif mode == "file object":
    with open(path, "rb") as f:
        df = ma.read_msgpack(f)
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


@pytest.mark.parametrize("mode", ["read", "file object"])
def test_read_msgpack_peak_is_near_the_dataframe(embeddings, mode):
    # (a file object is mapped as its path is: its pages were all kept, 1.9x the frame)
    r = measure(embeddings, mode)
    tensors = ROWS * WIDTH * 4
    assert r["df"] >= tensors
    # the file's pages are dropped as they are decoded: the DataFrame is most of the peak
    assert r["grew"] <= 1.3 * r["df"], f"peak grew {r['grew'] / 2**20:.0f} MiB for a {r['df'] / 2**20:.0f} MiB frame"


@pytest.fixture(scope="module")
def embeddings_as_lists(tmp_path_factory):
    # the same rows as a dict of lists (`df.to_dict("list")` packed once): one columns map
    path = tmp_path_factory.mktemp("mem") / "lists.msgpack"
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((256, WIDTH)).astype(np.float32)
    path.write_bytes(mn.packb({"id": list(range(ROWS)), "label": [f"doc-{i}" for i in range(ROWS)],
                               "score": [0.5] * ROWS, "emb": [emb[i % 256] for i in range(ROWS)]}))
    return path


def test_a_dict_of_lists_peaks_near_the_dataframe_too(embeddings_as_lists):
    # the list's ranges drop their pages of the file once decoded (the walk that typed them
    # mapped them all, and they were dropped, then mapped in again by the decode and kept)
    r = measure(embeddings_as_lists, "read")
    assert r["df"] >= ROWS * WIDTH * 4
    assert r["grew"] <= 1.3 * r["df"], f"peak grew {r['grew'] / 2**20:.0f} MiB for a {r['df'] / 2**20:.0f} MiB frame"


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_scan_without_the_tensors_never_holds_them(embeddings, engine):
    r = measure(embeddings, engine)
    tensors = ROWS * WIDTH * 4
    # the id column is 0.5 MiB; what is left is the engine and a few MiB of mapped pages
    assert r["grew"] < 0.25 * tensors, f"peak grew {r['grew'] / 2**20:.0f} MiB; tensors are {tensors / 2**20:.0f} MiB"


HOSTILE = r"""
import json, os, sys
import msgpack_arrow as ma
def kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
peaks = {}
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM starts again from what is resident now
    base = kib("VmRSS")
    outcomes = []
    for source in (path, data):
        for layout in ("auto", "records", "columns", "values"):
            try:
                outcomes.append(ma.read_msgpack(source, layout=layout).height)
            except ma.MsgpackArrowError as e:
                outcomes.append(type(e).__name__)
    peaks[os.path.basename(path)] = {"grew": (kib("VmHWM") - base) * 1024, "outcomes": outcomes}
print(json.dumps(peaks))
"""


def test_hostile_inputs_peak_far_below_a_gib(golden, tmp_path):
    """Every malformed or hostile file of the golden corpus (lengths declaring GiBs, shapes whose
    product overflows, deep nesting, pickles, ...), read as a path and as bytes in every layout: its
    peak memory stays under 1 GiB (each file measured alone: the peak is reset before it)."""
    files = [str(golden / "bad" / f"{c['name']}.msgpack") for c in manifest()["bad"]]
    # and a few built here: an ndarray claiming 2**40 float64 elements behind a short bin, a str32
    # of 4 GiB, and 10,000 nested arrays
    nd = {b"nd": True, b"type": "<f8", b"kind": b"", b"shape": [2**20, 2**20], b"data": b"\0" * 64}
    extra = {
        "claims_8_tib.msgpack": msgpack.packb({"x": nd}),
        "str32_4gib.msgpack": b"\x81\xa1x\xdb\xff\xff\xff\xff" + b"a" * 16,
        "nested_10000.msgpack": b"\x91" * 10_000 + b"\x01",
    }
    for name, data in extra.items():
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    assert len(files) > 30
    out = subprocess.run([sys.executable, "-c", HOSTILE, *files], check=True, capture_output=True, text=True)
    peaks = json.loads(out.stdout)
    assert len(peaks) == len(files)
    worst = max(peaks, key=lambda k: peaks[k]["grew"])
    assert peaks[worst]["grew"] < 2**30, f"{worst}: peak grew {peaks[worst]['grew'] / 2**20:.0f} MiB"
    # the crafted ones are refused in every layout, not read
    for name in extra:
        assert all(isinstance(o, str) for o in peaks[name]["outcomes"]), (name, peaks[name])
    print(f"hostile corpus: {len(files)} files, worst peak +{peaks[worst]['grew'] / 2**20:.1f} MiB ({worst})")


SMALL_BATCHES = r"""
import json, sys
import msgpack, msgpack_arrow as ma
data = b"".join(msgpack.packb({"s": f"v{i % 10}", "t": "x", "b": b"y"}) for i in range(30_000))
def kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
base = kib("VmRSS")
stream = ma.read_arrow(data, batch_size=7)
print(json.dumps({"grew": (kib("VmHWM") - base) * 1024, "rows": stream.num_rows, "batches": stream.num_batches}))
"""


def test_many_small_batches_hold_what_their_rows_need():
    # every batch's string and binary columns kept room for 1,024 values (a builder's default):
    # 4,286 batches of 7 rows of three such columns grew the process by 72 MiB (9 MiB now)
    out = subprocess.run([sys.executable, "-c", SMALL_BATCHES], check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    assert r["rows"] == 30_000 and r["batches"] == 4286
    assert r["grew"] < 32 * 2**20, f"grew {r['grew'] / 2**20:.0f} MiB"
