"""Every shape a user meets, each beside its peers in one run: time to the first rows, a read
repeated in a warm process, wide column maps, small arrays, records of scalars, writes, Parquet
export (of T, float16 tensors, a wide map, scalar records and small arrays), memory of a streamed glob of wide tensor files, and one file decoded on 1 and 2 threads.

Every measurement runs in its own Python process (``fresh``: min of the repeats, each a new
process) and, where it makes sense, repeated inside one process (``warm``: min of the repeats
after the first), because the allocator's state changes the answer. ``uptime`` is recorded.
Writes ``SHAPES.md`` (default: beside this file).

    .venv/bin/python benches/shapes.py            # full sizes (T: 100,000 × f32[768])
    .venv/bin/python benches/shapes.py --quick    # tiny sizes, 1 repeat: proves the harness works
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PRE = (
    "import glob, gzip, io, os, sys, time, numpy as np, polars as pl, pyarrow as pa, pyarrow.feather as feather, "
    "msgpack, msgpack_numpy as mn, msgpack_arrow as ma\n"
)


def py(setup: str, stmt: str, repeats: int, env: dict | None = None) -> list[float]:
    """Run `setup` then time `stmt` `repeats` times in one new process; the times in seconds."""
    body = textwrap.indent(textwrap.dedent(stmt).strip(), "    ")
    prog = PRE + textwrap.dedent(setup) + f"\ndef f():\n{body}\nts = []\n"
    prog += f"for _ in range({repeats}):\n    t0_ = time.perf_counter(); f(); ts.append(time.perf_counter() - t0_)\n"
    prog += "print(' '.join(map(repr, ts)))\n"
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return [float(x) for x in out.stdout.split()]


def fresh(setup: str, stmt: str, repeats: int, env: dict | None = None) -> float:
    return min(py(setup, stmt, 1, env)[0] for _ in range(repeats))


def warm(setup: str, stmt: str, repeats: int) -> float:
    ts = py(setup, stmt, repeats + 1)
    return min(ts[1:]) if len(ts) > 1 else ts[0]


def cmd(argv: list[str], repeats: int, env: dict | None = None) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env, timeout=3600)
        best = min(best, time.perf_counter() - t)
    return best


def ms(s: float | None) -> str:
    if s is None:
        return "–"
    v = s * 1000
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def make_scalars(d: Path, n: int) -> None:
    """`n` records of six scalar-ish fields (what an event log or a metrics dump holds), the same
    records as NDJSON, and the table as Feather: the peers of the scalar-records workload."""
    import json

    import msgpack
    import numpy as np
    import pyarrow.feather as feather

    import msgpack_arrow as ma

    p = d / f"scalars_{n}.msgpack"
    if p.exists():
        return
    rng = np.random.default_rng(1)
    xs = rng.random(n)
    pk = msgpack.Packer()
    recs = ({"id": i, "name": f"user-{i % 5000}", "x": float(xs[i]), "flag": bool(i & 1), "tags": [i % 7, i % 11],
             "ts": 1_700_000_000 + i} for i in range(n))
    with open(p, "wb") as f, open(p.with_suffix(".ndjson"), "w") as j:
        for r in recs:
            f.write(pk.pack(r))
            j.write(json.dumps(r) + "\n")
    feather.write_feather(ma.read_msgpack(p).to_arrow(), str(p.with_suffix(".feather")), compression="uncompressed")


def make_more(d: Path, n: int) -> None:
    """More shapes of `n` (or a fraction of `n`) rows, each with its Feather file: see `made`."""
    import datetime

    import msgpack
    import msgpack_numpy as mn
    import numpy as np
    import pyarrow.feather as feather

    import msgpack_arrow as ma

    rng = np.random.default_rng(2)
    pk = msgpack.Packer()
    texts = [f"{k:04} " + " ".join(f"w{x}" for x in rng.integers(0, 10**6, 200)) for k in range(1000)]
    made = {
        "floats": lambda: b"".join(pk.pack(float(x)) for x in rng.random(n)),
        # Python ints of ±2^40 (msgpack writes the positive ones from 2^32 up as uint64)
        "ints": lambda: b"".join(pk.pack(int(x)) for x in rng.integers(-(2**40), 2**40, n)),
        # lists of Python floats (`.tolist()`, JSON-born data): a List column
        "float_lists": lambda: b"".join(
            pk.pack({"id": i, "v": rng.random(64).tolist()}) for i in range(n // 20)
        ),
        "bools": lambda: b"".join(mn.packb({"b": rng.random(128) < 0.5}) for _ in range(n // 5)),
        "ragged": lambda: b"".join(
            mn.packb({"id": i, "v": rng.random(1 + i % 50, dtype=np.float32)}) for i in range(n // 10)
        ),
        "wide_records": lambda: b"".join(
            pk.pack({f"k{j}": (int(v * 1e6) if j % 2 else float(v)) for j, v in enumerate(rng.random(50))})
            for _ in range(n // 10)
        ),
        # event logs: each record 200 of 2,000 possible keys (the table is 2,000 columns wide)
        "sparse": lambda: b"".join(
            pk.pack({f"k{j}": int(j * 7 + i) for j in sorted(rng.choice(2000, 200, replace=False))})
            for i in range(n // 50)
        ),
        # feature tables: 400 float keys in every record (wider than one batch of 65,536 rows holds)
        "dense_wide": lambda: b"".join(
            pk.pack({f"f{j}": float(v) for j, v in enumerate(rng.random(400))}) for _ in range(n // 50)
        ),
        # 200 int keys a record, in another order in every record (maps built from sets, Go maps)
        "shuffled": lambda: b"".join(
            pk.pack({f"key_{j}": int(i + j) for j in rng.permutation(200)}) for i in range(n // 40)
        ),
        # logs or documents: a 1.5 KB text out of 1,000 distinct ones, and a few ints
        "long_strings": lambda: b"".join(
            pk.pack({"id": i, "a": i % 7, "text": texts[(i * 7919) % 1000]}) for i in range(n // 20)
        ),
        # other kinds of value in records: msgpack timestamps, Python complex, string arrays of
        # two widths, a structured array
        "typed": lambda: b"".join(
            mn.packb({
                "id": i,
                "t": datetime.datetime.fromtimestamp(1.7e9 + i, datetime.timezone.utc),
                "z": complex(i, 1),
                "u": np.array(["ab", "cde"][: 1 + i % 2]),
                "r": np.zeros(2, dtype=[("x", "<f4"), ("n", "S4")]),
            }, datetime=True)
            for i in range(n // 10)
        ),
        # a model's state dict packed once: one map of 4,000 small tensors of several shapes and
        # numpy scalars (a single record of 4,000 columns)
        "state_dict": lambda: mn.packb({
            f"layers.{k}.{name}": v
            for k in range(1000)
            for name, v in (
                ("attn.weight", rng.standard_normal((16, 24), dtype=np.float32)),
                ("attn.bias", rng.standard_normal(24, dtype=np.float32)),
                ("ln.weight", rng.standard_normal(16, dtype=np.float32)),
                ("step", np.int64(k)),
            )
        }),
        # a dict of lists (`df.to_dict("list")`, or lists of arrays gathered in a loop) packed once
        "list_columns": lambda: mn.packb({
            "id": list(range(n // 10)),
            "name": [f"user{i % 5000}" for i in range(n // 10)],
            "x": rng.random(n // 10).tolist(),
            "tags": [["a", "b"][: i % 3] for i in range(n // 10)],
            "emb": list(rng.random((n // 10, 32), dtype=np.float32)),
        }),
    }
    for name, data in made.items():
        p = d / f"{name}.msgpack"
        if not p.exists():
            p.write_bytes(data())
            feather.write_feather(ma.read_msgpack(p).to_arrow(), str(p.with_suffix(".feather")), compression="uncompressed")


def make_many(d: Path, files: int, rows: int) -> None:
    """`files` small files of `rows` records {id, v f32[16]} (one file per episode or shard), and
    each as Parquet: the peer reading the same many-files shape."""
    import msgpack_numpy as mn
    import numpy as np

    import msgpack_arrow as ma

    g = d / "many"
    if g.exists():
        return
    g.mkdir()
    (d / "many_parquet").mkdir(exist_ok=True)
    rng = np.random.default_rng(3)
    for k in range(files):
        p = g / f"part{k:05d}.msgpack"
        p.write_bytes(b"".join(mn.packb({"id": k * rows + i, "v": rng.random(16, dtype=np.float32)}) for i in range(rows)))
        ma.read_msgpack(p).write_parquet(d / "many_parquet" / f"part{k:05d}.parquet")


def make_data(d: Path, n: int, wide: tuple[int, int], small: int, glob: tuple[int, int, int]) -> None:
    import msgpack
    import msgpack_numpy as mn
    import numpy as np
    import polars as pl
    import pyarrow.feather as feather

    import msgpack_arrow as ma

    rng = np.random.default_rng(0)
    t = d / "T.msgpack"
    if not t.exists():
        with open(t, "wb") as f:
            for i in range(n):
                emb = rng.random(768, dtype=np.float32)
                f.write(mn.packb({"id": i, "label": f"item-{i}", "score": float(i) / 7, "emb": emb}))
        feather.write_feather(ma.read_msgpack(t).to_arrow(), str(d / "T.feather"), compression="uncompressed")
    for rows, cols in (wide, (wide[0], wide[1] // 10)):
        p = d / f"wide_{rows}x{cols}.msgpack"
        if not p.exists():
            p.write_bytes(msgpack.packb({f"c{i}": rng.random(rows) for i in range(cols)}, default=mn.encode))
            pl.DataFrame(msgpack.unpackb(p.read_bytes(), object_hook=mn.decode)).write_ipc(p.with_suffix(".feather"))
    p = d / "small.msgpack"
    if not p.exists():
        with open(p, "wb") as f:
            for a in rng.random((small, 100), dtype=np.float32):
                f.write(mn.packb(a))
    # the same arrays as one list, as `msgpack_numpy.packb(list_of_arrays)` writes them
    p = d / "small_list.msgpack"
    if not p.exists():
        p.write_bytes(mn.packb(list(rng.random((small, 100), dtype=np.float32))))
    # T compressed (gzip: Python's peers read it with the standard library)
    p = d / "T.msgpack.gz"
    if not p.exists():
        import gzip

        with open(t, "rb") as src, gzip.open(p, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    # the same bytes written in one go: its page cache in large folios, where the Packer loop's
    # small writes leave 4 KiB pages (a mapped read sets up a page table entry for each)
    p = d / "T_one_write.msgpack"
    if not p.exists():
        p.write_bytes(t.read_bytes())
    # T as a dict of lists (`df.to_dict("list")` of it, its arrays kept): one `columns` map
    p = d / "T_lists.msgpack"
    if not p.exists():
        df = ma.read_msgpack(t)
        p.write_bytes(mn.packb({"id": df["id"].to_list(), "label": df["label"].to_list(),
                                "score": df["score"].to_list(), "emb": list(df["emb"].to_numpy())}))
    p = d / "half.msgpack"
    if not p.exists():
        with open(p, "wb") as f:
            for i in range(n):
                f.write(mn.packb({"id": i, "emb": rng.standard_normal(256).astype(np.float16)}))
    files, rows, dim = glob
    g = d / "glob"
    if not g.exists():
        g.mkdir()
        for k in range(files):
            with open(g / f"part{k}.msgpack", "wb") as f:
                for i in range(rows):
                    f.write(mn.packb({"id": k * rows + i, "emb": rng.random(dim, dtype=np.float32)}))


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def table(self, title: str, note: str, rows: list[tuple[str, float | None, float | None]], ours: str) -> None:
        base = dict((n, (f, w)) for n, f, w in rows)[ours]
        self.lines += [f"## {title}", "", note, "", "| system | fresh ms | ×ours | warm ms | ×ours |", "|---|---:|---:|---:|---:|"]
        for name, f, w in rows:
            rf = f"{f / base[0]:.2f}×" if f and base[0] else "–"
            rw = f"{w / base[1]:.2f}×" if w and base[1] else "–"
            label = f"**{name}**" if name == ours else name
            self.lines.append(f"| {label} | {ms(f)} | {rf} | {ms(w)} | {rw} |")
        self.lines.append("")
        print(f"{title}:", "; ".join(f"{n} {ms(f)}/{ms(w)}" for n, f, w in rows), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--work", default=None, help="data directory (kept between runs)")
    ap.add_argument("--out", default=None, help="default: benches/SHAPES.md (--quick: the work directory)")
    ap.add_argument("--cli", default=None, help="the msgpack-arrow binary (default: the console script beside python)")
    a = ap.parse_args()
    quick = a.quick
    R = 1 if quick else a.repeats
    n = 2000 if quick else 100_000
    wide = (10, 1000) if quick else (100, 10_000)
    small = 2000 if quick else 100_000
    glob = (2, 20, 8192) if quick else (6, 3000, 8192)
    work = Path(a.work or os.path.join(tempfile.gettempdir(), f"msgpack-arrow-shapes-{'quick' if quick else 'full'}"))
    work.mkdir(parents=True, exist_ok=True)
    make_data(work, n, wide, small, glob)
    scalars = 2000 if quick else 1_000_000
    make_scalars(work, scalars)
    make_more(work, scalars)
    cli = [a.cli or str(Path(sys.executable).with_name("msgpack-arrow"))]
    a.out = a.out or str(work / "SHAPES.md" if quick else Path(__file__).with_name("SHAPES.md"))
    T, F = str(work / "T.msgpack"), str(work / "T.feather")
    up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rep = Report()

    # 1. first rows
    s = f"T = {T!r}"
    full = fresh(s, "ma.read_msgpack(T)", R)
    rows = [
        ("msgpack-arrow read_msgpack(T) (full read)", full, warm(s, "ma.read_msgpack(T)", R)),
        ("msgpack-arrow scan_msgpack(T).head(10) (first scan: exact schema walk)",
         fresh(s, "ma.scan_msgpack(T).head(10).collect()", R, dict(os.environ, MSGPACK_ARROW_SCHEMA_CACHE="0")),
         warm(s, "ma.scan_msgpack(T).head(10).collect()", R)),
        ("msgpack-arrow scan_msgpack(T).head(10) (a new process, schema saved by an earlier scan)",
         fresh(s, "ma.scan_msgpack(T).head(10).collect()", R), None),
        ("msgpack-arrow scan_msgpack(T, schema=...).head(10) (types given: no walk)",
         fresh(s + "; S = {'id': pl.Int64, 'label': pl.String, 'score': pl.Float64, 'emb': pl.Array(pl.Float32, 768)}",
               "ma.scan_msgpack(T, schema=S).head(10).collect()", R, dict(os.environ, MSGPACK_ARROW_SCHEMA_CACHE="0")),
         None),
        ("msgpack-arrow read_msgpack(T, n_rows=10)", fresh(s, "ma.read_msgpack(T, n_rows=10)", R), warm(s, "ma.read_msgpack(T, n_rows=10)", R)),
        ("msgpack-arrow CLI head -n 10 (whole process)", cmd(cli + ["head", T, "-n", "10"], R), None),
        # what any lazy query costs in a new process before a source is asked for a row
        ("for scale: polars' own first collect of a 3-row LazyFrame (a new process)",
         fresh("", "pl.LazyFrame({'a': [1, 2, 3]}).head(1).collect()", R), None),
    ]
    rep.table("First rows of T", f"T: {n:,} records {{id, label, score, emb f32[768]}}. ×ours: relative to the full read; "
              "warm scans reuse the schema remembered for the unchanged file; the first scan is measured with the "
              "saved schemas off (MSGPACK_ARROW_SCHEMA_CACHE=0).", rows, rows[0][0])

    # 2. the same read, again and again
    read_rows = [
        ("msgpack-arrow read_msgpack(T)", rows[0][1], rows[0][2]),
        ("msgpack-arrow scan_msgpack(T).collect() (batch by batch, schema remembered)",
         fresh(s, "ma.scan_msgpack(T).collect()", R), warm(s, "ma.scan_msgpack(T).collect()", R)),
        ("msgpack-arrow read_msgpack(open(T, 'rb')) (a file object)",
         fresh(s, "with open(T, 'rb') as f: ma.read_msgpack(f)", R), warm(s, "with open(T, 'rb') as f: ma.read_msgpack(f)", R)),
        ("msgpack-arrow read_msgpack(T), the same bytes written in one go (page cache in large folios)",
         fresh(f"T1 = {str(work / 'T_one_write.msgpack')!r}", "ma.read_msgpack(T1)", R),
         warm(f"T1 = {str(work / 'T_one_write.msgpack')!r}", "ma.read_msgpack(T1)", R)),
        ("pyarrow Feather read (no mmap) → polars", fresh(f"F = {F!r}", "pl.from_arrow(feather.read_table(F, memory_map=False))", R),
         warm(f"F = {F!r}", "pl.from_arrow(feather.read_table(F, memory_map=False))", R)),
        ("floor: mmap + one copy of the file", fresh(s, "np.array(np.memmap(T, mode='r'))", R), warm(s, "np.array(np.memmap(T, mode='r'))", R)),
    ]
    read_rows.append(("Python msgpack_numpy + numpy + polars", fresh(s, """
            rows = list(mn.Unpacker(open(T, 'rb'), raw=False))
            pl.DataFrame({'id': [r['id'] for r in rows], 'label': [r['label'] for r in rows],
                          'score': [r['score'] for r in rows], 'emb': np.stack([r['emb'] for r in rows])})
        """, max(1, R // 2)), None))
    rep.table("Read T into a DataFrame", "T.msgpack is written record by record (100,000 small writes, as a Packer loop "
              "does), which leaves its page cache in 4 KiB pages: a mapped read sets up a page table entry for each "
              "(MAP_POPULATE or MADV_POPULATE_READ cost the same). The same bytes written in one go sit in large "
              "folios.", read_rows, read_rows[0][0])

    # 2b. the same table compressed: decompression on its own thread; typed from every row
    sz = f"Z = {str(work / 'T.msgpack.gz')!r}"
    z_rows = [
        ("msgpack-arrow read_msgpack(T.gz) (types from every row)", fresh(sz, "ma.read_msgpack(Z)", R), warm(sz, "ma.read_msgpack(Z)", R)),
        ("msgpack-arrow read_msgpack(T.gz, infer_rows=1000) (one pass, batch by batch)",
         fresh(sz, "ma.read_msgpack(Z, infer_rows=1000)", R), warm(sz, "ma.read_msgpack(Z, infer_rows=1000)", R)),
        ("floor: gzip.open(T.gz).read() (Python's zlib, one thread)", fresh(sz, "gzip.open(Z).read()", R), warm(sz, "gzip.open(Z).read()", R)),
        ("Python msgpack_numpy over gzip.open + numpy + polars", fresh(sz, """
            rows = list(mn.Unpacker(gzip.open(Z), raw=False))
            pl.DataFrame({'id': [r['id'] for r in rows], 'label': [r['label'] for r in rows],
                          'score': [r['score'] for r in rows], 'emb': np.stack([r['emb'] for r in rows])})
        """, max(1, R // 2)), None),
    ]
    rep.table("Read T from a .gz", f"{(work / 'T.msgpack.gz').stat().st_size / 1e6:.0f} MB of gzip (level 1). "
              "The default holds the decompressed bytes (up to 1 GiB) and reads them as bytes.", z_rows, z_rows[0][0])

    # 2c. the same table as a dict of lists: its lists cut into ranges, decoded on every thread
    sl = f"L = {str(work / 'T_lists.msgpack')!r}; F = {F!r}"
    l_rows = [
        ("msgpack-arrow read_msgpack(T as a dict of lists)", fresh(sl, "ma.read_msgpack(L)", R), warm(sl, "ma.read_msgpack(L)", R)),
        ("msgpack-arrow read_msgpack(T) (the same rows as records)", rows[0][1], rows[0][2]),
        ("pyarrow Feather read (no mmap) → polars", read_rows[4][1], read_rows[4][2]),
        ("msgpack_numpy.unpackb + np.stack + polars", fresh(sl, """
            d = mn.unpackb(open(L, 'rb').read(), raw=False); d['emb'] = np.stack(d['emb']); pl.DataFrame(d)
        """, max(1, R // 2)), None),
    ]
    rep.table("Read T as a dict of lists", f"{(work / 'T_lists.msgpack').stat().st_size / 1e6:.0f} MB: "
              f"{{id: [...], label: [...], score: [...], emb: [{n:,} ndarrays]}}, as msgpack_numpy.packb writes "
              "`df.to_dict('list')`.", l_rows, l_rows[0][0])

    # 3. wide maps: per-column cost should not grow with the column count
    for rr, cc in (wide, (wide[0], wide[1] // 10)):
        p = str(work / f"wide_{rr}x{cc}.msgpack")
        sw = f"b = open({p!r}, 'rb').read(); fb = open({str(Path(p).with_suffix('.feather'))!r}, 'rb').read()"
        w_rows = [
            ("msgpack-arrow", fresh(sw, "ma.read_msgpack(b)", R), warm(sw, "ma.read_msgpack(b)", R)),
            ("msgpack_numpy + polars", fresh(sw, "pl.DataFrame(msgpack.unpackb(b, object_hook=mn.decode))", R),
             warm(sw, "pl.DataFrame(msgpack.unpackb(b, object_hook=mn.decode))", R)),
            ("Feather (bytes in memory) → polars", fresh(sw, "pl.from_arrow(feather.read_table(pa.BufferReader(fb)))", R),
             warm(sw, "pl.from_arrow(feather.read_table(pa.BufferReader(fb)))", R)),
        ]
        rep.table(f"A columns map of {rr} rows × {cc:,} float64 columns", "", w_rows, "msgpack-arrow")
        if cc == wide[1]:
            ww = sw + "\ndf = ma.read_msgpack(b)"
            mn_pack = "mn.packb({c: s.to_numpy() for c, s in zip(df.columns, df.get_columns())})"
            ww_rows = [
                ("msgpack-arrow write_msgpack(df, layout='columns') → bytes",
                 fresh(ww, "ma.write_msgpack(df, None, layout='columns')", R), warm(ww, "ma.write_msgpack(df, None, layout='columns')", R)),
                ("msgpack_numpy.packb of the columns (to_numpy each)", fresh(ww, mn_pack, R), warm(ww, mn_pack, R)),
                ("Feather → BytesIO (polars)", fresh(ww, "df.write_ipc(io.BytesIO())", R), warm(ww, "df.write_ipc(io.BytesIO())", R)),
            ]
            rep.table(f"A columns map of {rr} rows × {cc:,} float64 columns: write", "", ww_rows, ww_rows[0][0])

    # 4. small arrays, as a stream and as one top-level array
    def small_rows(path: str, peer: str, peer_stmt: str) -> list:
        ss = f"P = {path!r}; b = open(P, 'rb').read()"
        both = lambda stmt: (fresh(ss, stmt, R), warm(ss, stmt, R))  # noqa: E731
        return [
            ("msgpack-arrow read_msgpack(path)", *both("ma.read_msgpack(P)")),
            ("msgpack-arrow read_msgpack(bytes)", *both("ma.read_msgpack(b)")),
            ("floor: mmap + one copy of the file", *both("np.array(np.memmap(P, mode='r'))")),
            (peer, *both(peer_stmt)),
        ]

    sm_rows = small_rows(str(work / "small.msgpack"), "msgpack_numpy + np.stack",
                         "np.stack(list(mn.Unpacker(io.BytesIO(b))))")
    rep.table(f"{small:,} float32 arrays of 100 (a bare ndarray stream)", "", sm_rows, sm_rows[0][0])
    sl_rows = small_rows(str(work / "small_list.msgpack"), "msgpack_numpy.unpackb + np.stack", "np.stack(mn.unpackb(b))")
    rep.table(f"{small:,} float32 arrays of 100 in one top-level array (msgpack_numpy.packb of a list)",
              "Where the array ends (and so whether its elements are the rows) is known only at its end: the "
              "walk of its rows finds it.", sl_rows, sl_rows[0][0])

    # 4b. records of scalars: the walk and the decoders on small values, no tensor payload to copy
    p = work / f"scalars_{scalars}.msgpack"
    sc = f"P = {str(p)!r}; J = {str(p.with_suffix('.ndjson'))!r}; F = {str(p.with_suffix('.feather'))!r}"
    sc_rows = [
        ("msgpack-arrow read_msgpack(path)", fresh(sc, "ma.read_msgpack(P)", R), warm(sc, "ma.read_msgpack(P)", R)),
        ("msgpack-arrow read_msgpack(path, schema_overrides=its own schema)",
         fresh(sc + "; S = dict(ma.read_msgpack(P, n_rows=10).schema)", "ma.read_msgpack(P, schema_overrides=S)", R),
         warm(sc + "; S = dict(ma.read_msgpack(P, n_rows=10).schema)", "ma.read_msgpack(P, schema_overrides=S)", R)),
        ("msgpack-arrow scan_msgpack(path).head(10) (first scan)",
         fresh(sc, "ma.scan_msgpack(P).head(10).collect()", R, dict(os.environ, MSGPACK_ARROW_SCHEMA_CACHE="0")), None),
        ("polars read_ndjson of the same records", fresh(sc, "pl.read_ndjson(J)", R), warm(sc, "pl.read_ndjson(J)", R)),
        ("Feather (no mmap) → polars", fresh(sc, "pl.from_arrow(feather.read_table(F, memory_map=False))", R),
         warm(sc, "pl.from_arrow(feather.read_table(F, memory_map=False))", R)),
        ("msgpack Unpacker + pl.from_dicts", fresh(sc, "pl.from_dicts(list(msgpack.Unpacker(open(P, 'rb'))))", max(1, R // 2)), None),
    ]
    rep.table(f"{scalars:,} records of six scalar fields (id, name, x, flag, tags[2], ts)",
              f"{p.stat().st_size / 1e6:.0f} MB of msgpack; the NDJSON of the same records is "
              f"{p.with_suffix('.ndjson').stat().st_size / 1e6:.0f} MB.", sc_rows, sc_rows[0][0])

    # 4c. more shapes: numbers one by one, bool ndarrays, ragged ndarrays, wide records (read, and written to bytes)
    for shape in [
        ("floats", f"a `values` stream of {scalars:,} float64", "pl.DataFrame({'value': list(msgpack.Unpacker(open(P, 'rb')))})"),
        ("ints", f"a `values` stream of {scalars:,} Python ints of ±2^40",
         "pl.DataFrame({'value': list(msgpack.Unpacker(open(P, 'rb')))})"),
        ("float_lists", f"{scalars // 20:,} records {{id, v}} of a list of 64 Python floats",
         "pl.DataFrame(list(msgpack.Unpacker(open(P, 'rb'))))"),
        ("bools", f"{scalars // 5:,} records holding a bool[128] ndarray",
         "pl.DataFrame({'b': np.stack([r['b'] for r in mn.Unpacker(open(P, 'rb'), raw=False)])})"),
        ("ragged", f"{scalars // 10:,} records {{id, v}} of a float32 ndarray of 1 to 50 elements (ragged)",
         "rs = list(mn.Unpacker(open(P, 'rb'), raw=False)); "
         "pl.DataFrame({'id': [r['id'] for r in rs], 'v': pl.Series([r['v'] for r in rs])})"),
        ("typed", f"{scalars // 10:,} records {{id, t: datetime, z: complex, u: U strings of two widths, "
         "r: a structured array}",
         "list(mn.Unpacker(open(P, 'rb'), raw=False, timestamp=3))",
         "msgpack_numpy decode alone (polars takes no complex or structured values)"),
        ("wide_records", f"{scalars // 10:,} records of 50 scalars (25 int, 25 float)",
         "pl.from_dicts(list(msgpack.Unpacker(open(P, 'rb'))))"),
        ("list_columns", f"a dict of 5 lists of {scalars // 10:,} (id, name, x, tags, emb: float32[32] ndarrays)",
         "d = mn.unpackb(open(P, 'rb').read(), raw=False); d['emb'] = np.stack(d['emb']); pl.DataFrame(d)"),
        ("state_dict", "a state dict: one map of 4,000 tensors (16×24, 24, 16 float32) and numpy int64 scalars",
         "mn.unpackb(open(P, 'rb').read(), raw=False)", "msgpack_numpy unpackb alone (a dict of arrays, no DataFrame)"),
        ("sparse", f"{scalars // 50:,} records of 200 int keys out of 2,000 (a 2,000-column table)",
         "pl.from_dicts(list(msgpack.Unpacker(open(P, 'rb'))), infer_schema_length=None)"),
        ("dense_wide", f"{scalars // 50:,} records of 400 float keys (a 400-column table)",
         "pl.from_dicts(list(msgpack.Unpacker(open(P, 'rb'))))"),
        ("shuffled", f"{scalars // 40:,} records of 200 int keys, in another order in each",
         "pl.from_dicts(list(msgpack.Unpacker(open(P, 'rb'))))"),
        ("long_strings", f"{scalars // 20:,} records {{id, a, text}} of a 1.5 KB text (1,000 distinct)",
         "pl.from_dicts(list(msgpack.Unpacker(open(P, 'rb'))))"),
    ]:
        name, title, peer = shape[:3]
        peer_label = shape[3] if len(shape) > 3 else "msgpack / msgpack_numpy + polars"
        p = work / f"{name}.msgpack"
        ms_ = f"P = {str(p)!r}; F = {str(p.with_suffix('.feather'))!r}"
        feather_read = "pl.from_arrow(feather.read_table(F, memory_map=False))"
        rows_ = [
            ("msgpack-arrow read_msgpack(path)", fresh(ms_, "ma.read_msgpack(P)", R), warm(ms_, "ma.read_msgpack(P)", R)),
            (peer_label, fresh(ms_, peer, max(1, R // 2)), None),
            ("Feather (no mmap) → polars", fresh(ms_, feather_read, R), warm(ms_, feather_read, R)),
        ]
        rep.table(f"{title}: read", f"{p.stat().st_size / 1e6:.0f} MB of msgpack.", rows_, rows_[0][0])
    # 4d. many small files: the per-file cost (open, plan, handing a frame to Polars)
    many_files, many_rows = (20, 5) if quick else (500, 20)
    make_many(work, many_files, many_rows)
    mg = f"G = {str(work / 'many' / '*.msgpack')!r}; Q = {str(work / 'many_parquet' / '*.parquet')!r}"
    mn_loop = textwrap.dedent("""
        rs = [r for f in sorted(glob.glob(G)) for r in mn.Unpacker(open(f, 'rb'), raw=False)]
        pl.DataFrame({'id': [r['id'] for r in rs], 'v': np.stack([r['v'] for r in rs])})
    """)
    many_rows_ = [
        ("msgpack-arrow read_msgpack(glob)", fresh(mg, "ma.read_msgpack(G)", R), warm(mg, "ma.read_msgpack(G)", R)),
        ("msgpack-arrow scan_msgpack(glob).collect()", fresh(mg, "ma.scan_msgpack(G).collect()", R),
         warm(mg, "ma.scan_msgpack(G).collect()", R)),
        ("msgpack_numpy per file + np.stack + polars", fresh(mg, mn_loop, R), warm(mg, mn_loop, R)),
        ("polars read_parquet of the same files as Parquet", fresh(mg, "pl.read_parquet(Q)", R), warm(mg, "pl.read_parquet(Q)", R)),
    ]
    rep.table(f"{many_files:,} files of {many_rows} records {{id, v f32[16]}}", "", many_rows_, many_rows_[0][0])

    p = work / "wide_records.msgpack"
    wr = f"P = {str(p)!r}\ndf = ma.read_msgpack(P); recs = list(msgpack.Unpacker(open(P, 'rb')))"
    wr_rows = [
        ("msgpack-arrow write_msgpack(df) → bytes", fresh(wr, "ma.write_msgpack(df, None)", R), warm(wr, "ma.write_msgpack(df, None)", R)),
        ("msgpack Packer loop → bytes", fresh(wr, "pk = msgpack.Packer(); b''.join(pk.pack(r) for r in recs)", R),
         warm(wr, "pk = msgpack.Packer(); b''.join(pk.pack(r) for r in recs)", R)),
        ("Feather → BytesIO", fresh(wr, "df.write_ipc(io.BytesIO())", R), warm(wr, "df.write_ipc(io.BytesIO())", R)),
    ]
    rep.table(f"{scalars // 10:,} records of 50 scalars: write", "", wr_rows, wr_rows[0][0])

    # 5. writes
    # Feather written with pyarrow's IPC file writer (the same file): `feather.write_feather`
    # imports pandas on its first call (0.2-0.4 s of a fresh process, not the write's cost)
    sws = s + "\ndf = ma.read_msgpack(T); t = df.to_arrow()\n" + textwrap.dedent("""
        def feather_write(t, sink):
            with pa.ipc.new_file(sink, t.schema) as w:
                w.write_table(t)
        ids, labels, scores, embs = df['id'].to_list(), df['label'].to_list(), df['score'].to_list(), df['emb'].to_numpy()
        out = os.path.join(os.path.dirname(T), 'w.tmp')
    """)
    made = "\nb = ma.write_msgpack(df)\n"

    def to_path(sync: bool) -> str:
        return "with open(out, 'wb') as f:\n    f.write(b)" + ("\n    f.flush(); os.fsync(f.fileno())" if sync else "")

    wr_rows = [
        ("msgpack-arrow write_msgpack(df, BytesIO)", fresh(sws, "ma.write_msgpack(df, io.BytesIO())", R), warm(sws, "ma.write_msgpack(df, io.BytesIO())", R)),
        ("msgpack-arrow write_msgpack(df) → bytes", fresh(sws, "ma.write_msgpack(df, None)", R), warm(sws, "ma.write_msgpack(df, None)", R)),
        ("msgpack_numpy Packer loop → BytesIO", fresh(sws, """
            buf = io.BytesIO(); p = msgpack.Packer(default=mn.encode)
            for i in range(len(ids)):
                buf.write(p.pack({'id': ids[i], 'label': labels[i], 'score': scores[i], 'emb': embs[i]}))
            """, max(1, R // 2)), None),
        ("Feather → BytesIO (pyarrow)", fresh(sws, "feather_write(t, io.BytesIO())", R), warm(sws, "feather_write(t, io.BytesIO())", R)),
        ("msgpack-arrow to a path, fsync (default)", fresh(sws, "ma.write_msgpack(df, out)", R), warm(sws, "ma.write_msgpack(df, out)", R)),
        ("msgpack-arrow to a path, fsync=False", fresh(sws, "ma.write_msgpack(df, out, fsync=False)", R),
         warm(sws, "ma.write_msgpack(df, out, fsync=False)", R)),
        ("Feather to a path (pyarrow, no fsync)", fresh(sws, "feather_write(t, out)", R), warm(sws, "feather_write(t, out)", R)),
        # the file system's own cost: bytes already made, written by Python's file object
        ("floor: the bytes, already made, written to the path (no fsync)", fresh(sws + made, to_path(False), R), warm(sws + made, to_path(False), R)),
        ("floor: the bytes, already made, written to the path + fsync", fresh(sws + made, to_path(True), R), warm(sws + made, to_path(True), R)),
    ]
    rep.table("Write T", "To a path, ours writes a temporary file beside it and renames it into place; the floors are "
              "the file system's own cost for the same bytes.", wr_rows, wr_rows[0][0])

    # 6. Parquet: T, then other shapes, each beside polars writing the same table from memory
    def parquet_rows(src: str, stem: str) -> tuple[list, str]:
        ours, theirs = str(work / f"{stem}.parquet"), str(work / f"{stem}.polars.parquet")
        conv = cmd(cli + ["convert", src, "-o", ours, "-q", "--no-fsync"], R)
        feat = cmd(cli + ["convert", src, "-o", str(work / f"{stem}.cli.feather"), "-q", "--no-fsync"], R)
        pol = fresh(f"df = ma.read_msgpack({src!r}); P = {theirs!r}", "df.write_parquet(P)", R)
        sizes = f"msgpack-arrow {os.path.getsize(ours) / 1e6:.2f} MB, polars {os.path.getsize(theirs) / 1e6:.2f} MB"
        return [("msgpack-arrow CLI convert (decode + encode)", conv, None),
                ("polars write_parquet (from memory)", pol, None),
                ("for scale: msgpack-arrow CLI convert to Feather (decode + plain write)", feat, None)], sizes

    pq_rows, sizes = parquet_rows(T, "T")
    rep.table("msgpack → Parquet (zstd)", f"Sizes: {sizes}. "
              "Ours is the whole CLI process (decode included); polars writes a table already in memory.",
              pq_rows, pq_rows[0][0])
    for src, stem, what in [
        (str(work / "half.msgpack"), "half", f"{n:,} records of an id and a float16[256] tensor"),
        (str(work / f"wide_{wide[0]}x{wide[1]}.msgpack"), "wide", f"a columns map of {wide[0]} × {wide[1]:,} float64"),
        (str(work / f"scalars_{scalars}.msgpack"), "scalars", f"{scalars:,} records of six scalar fields"),
        (str(work / "small.msgpack"), "small", f"{small:,} float32 arrays of 100"),
        (str(work / "sparse.msgpack"), "sparse", f"{scalars // 50:,} records of 200 of 2,000 int keys"),
        (str(work / "long_strings.msgpack"), "long_strings", f"{scalars // 20:,} records of a 1.5 KB text (1,000 distinct)"),
    ]:
        other, sizes = parquet_rows(src, stem)
        rep.table(f"msgpack → Parquet (zstd): {what}", f"Sizes: {sizes}.", other, other[0][0])

    # 7. memory of a streamed glob of wide tensor files
    g = str(work / "glob" / "*.msgpack")
    mem = textwrap.dedent(f"""
        import threading
        def anon():
            return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('RssAnon')) / 1024
        a0 = anon(); peak = [a0]; stop = []
        def sample():
            while not stop:
                peak[0] = max(peak[0], anon()); time.sleep(0.002)
        th = threading.Thread(target=sample); th.start()
        ma.scan_msgpack({g!r}, batch_bytes=int(sys.argv[1])).select(pl.col('emb').arr.first().sum()).collect(engine='streaming')
        stop.append(1); th.join(); print(peak[0] - a0)
    """)
    peaks = {}
    for bb in (16 << 20, 1 << 40):
        out = subprocess.run([sys.executable, "-c", PRE + mem, str(bb)], capture_output=True, text=True, check=True)
        peaks[bb] = float(out.stdout.split()[-1])
    rep.lines += ["## Streaming a glob of wide tensor files", "",
                  f"{glob[0]} files × {glob[1]:,} rows × f32[{glob[2]}] through `scan_msgpack(...).collect(engine='streaming')`: "
                  f"anonymous memory at peak **+{peaks[16 << 20]:.0f} MiB** with the default 16 MiB batches "
                  f"(+{peaks[1 << 40]:.0f} MiB with batches bounded by rows only).", ""]

    # 8. one file on 1 and 2 threads
    # both measured here, alternately, so that the machine's drift over the run is not the ratio
    env1 = dict(os.environ, RAYON_NUM_THREADS="1")
    pairs = [(py(s, "ma.read_msgpack(T)", 1, env1)[0], py(s, "ma.read_msgpack(T)", 1)[0]) for _ in range(R)]
    t1, t2 = min(p[0] for p in pairs), min(p[1] for p in pairs)
    sw = f"W = {str(work / 'dense_wide.msgpack')!r}"
    pairs = [(py(sw, "ma.read_msgpack(W)", 1, env1)[0], py(sw, "ma.read_msgpack(W)", 1)[0]) for _ in range(R)]
    w1, w2 = min(p[0] for p in pairs), min(p[1] for p in pairs)
    rep.lines += ["## Cores", "", f"`read_msgpack(T)` in a fresh process: 1 thread {ms(t1)} ms, {os.cpu_count()} threads {ms(t2)} ms: "
                  f"**{t1 / t2:.2f}×**.", "",
                  f"The 400-column records (`dense_wide`): 1 thread {ms(w1)} ms, {os.cpu_count()} threads {ms(w2)} ms: "
                  f"**{w1 / w2:.2f}×**.", ""]

    up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    head = ["# Shapes: msgpack-arrow beside its peers", "",
            "Written by `benches/shapes.py` (`make bench`). Each time is the minimum of the repeats; `fresh`: every "
            "repeat in a new process, `warm`: repeats after the first inside one process.", "",
            f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; repeats {R}{' (--quick: tiny sizes)' if quick else ''}",
            f"- uptime before: `{up0}`", f"- uptime after: `{up1}`", ""]
    Path(a.out).write_text("\n".join(head + rep.lines))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
