#!/usr/bin/env python3
"""Scale: memory of streaming scans over a dataset larger than a memory budget, and throughput
with 1 and 2 cores.

    .venv/bin/python benches/scale.py                    # ~3 GB in 8 files, everything
    .venv/bin/python benches/scale.py --quick            # ~80 MB: proves the harness works
    .venv/bin/python benches/scale.py --only rss --cgroup  # also under a hard memory limit

Data: record files ``{id: int64, label: str, score: float64, emb: float32[128]}`` (about 680
bytes a row) written by ``msgpack_arrow.write_msgpack``, kept in ``--dir`` between runs; plus
``--big``: the same rows as one file (to show how the peak depends on the largest file).

Every measurement runs in a fresh process. Memory: the driver samples the child's
``/proc/PID/status`` every 10 ms (``RssAnon``: heap, i.e. batches and Polars buffers;
``RssFile``: pages of the memory-mapped inputs) and the child reports its own ``VmHWM`` (the
kernel's peak RSS) at exit. Mapped input pages are clean page cache, dropped first under
pressure; ``--cgroup`` also runs the sinks (and the big file) under a hard limit (a cgroup-v1
memory cgroup of ``--budget-mb``, inputs evicted from the page cache first so that their pages
are charged to it). Throughput: the child is pinned with ``taskset -c 0``
(the reader then sees one CPU and decodes sequentially) or ``-c 0,1``; best of ``--repeat``,
page cache hot.

The results table goes to stdout and to ``DIR/scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DIM = 128
MB = 1 << 20


# ---------------------------------------------------------------------------------------------
# child side


def _status(pid: int | str = "self") -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[k] = int(v.split()[0]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def child(mode: str, args: list[str]) -> None:
    import polars as pl

    import msgpack_arrow as ma

    base = _status()
    t0 = time.perf_counter()
    info: dict = {k: base.get(v, 0) for k, v in [("base_rss", "VmRSS"), ("base_anon", "RssAnon"), ("base_file", "RssFile")]}
    if mode == "collect":
        glob, = args
        lf = ma.scan_msgpack(glob)
        df = lf.select("id", "score", "emb").filter(pl.col("score") > 0.99).collect(engine="streaming")
        info.update(rows_out=df.height, bytes_out=df.estimated_size())
    elif mode == "count":
        glob, = args
        df = ma.scan_msgpack(glob).select(pl.len(), pl.col("score").sum()).collect(engine="streaming")
        info.update(rows=df.item(0, 0))
    elif mode == "sink":
        glob, out, *rest = args  # [row_group_size [batch_size]]
        kw = {"row_group_size": int(rest[0])} if rest else {}
        bs = {"batch_size": int(rest[1])} if len(rest) > 1 else {}
        ma.scan_msgpack(glob, **bs).select("id", "label", "emb").sink_parquet(out, **kw)
        info.update(bytes_out=os.path.getsize(out))
    elif mode == "read":
        path, repeat = args[0], int(args[1])
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            df = ma.read_msgpack(path)
            times.append(time.perf_counter() - t)
            rows = df.height
            del df
        info.update(times=times, rows=rows)
    elif mode == "plan":
        # the sequential first pass alone: Reader() walks the file (inferring, or only counting
        # rows and noting batch starts when the schema is given) before any batch is decoded
        path, repeat = args[0], int(args[1])
        schema = ma.Reader(path).decoded_schema()
        infer, count = [], []
        for _ in range(repeat):
            t = time.perf_counter()
            ma.Reader(path)
            infer.append(time.perf_counter() - t)
            t = time.perf_counter()
            ma.Reader(path, schema=schema)
            count.append(time.perf_counter() - t)
        info.update(infer=infer, count=count)
    else:
        raise SystemExit(f"unknown mode {mode}")
    info["seconds"] = time.perf_counter() - t0
    info["hwm"] = _status().get("VmHWM", 0)
    print("RESULT " + json.dumps(info), flush=True)


# ---------------------------------------------------------------------------------------------
# driver side


def generate(d: Path, files: int, rows_per_file: int) -> list[Path]:
    import numpy as np
    import polars as pl

    import msgpack_arrow as ma

    d.mkdir(parents=True, exist_ok=True)
    paths = [d / f"part-{k:03d}.msgpack" for k in range(files)]
    stamp = d / f".complete-{files}x{rows_per_file}"
    if stamp.exists() and all(p.exists() for p in paths):
        return paths
    for p in d.glob("part-*.msgpack"):
        p.unlink()
    for k, p in enumerate(paths):
        rng = np.random.default_rng(k)
        lo = k * rows_per_file
        df = pl.DataFrame(
            {
                "id": np.arange(lo, lo + rows_per_file, dtype=np.int64),
                "label": pl.Series(rng.integers(0, 1000, rows_per_file)).cast(pl.String).str.pad_start(6, "x"),
                "score": rng.random(rows_per_file),
                "emb": pl.Series(rng.standard_normal((rows_per_file, DIM), dtype=np.float32)),
            }
        )
        ma.write_msgpack(df, p)
        print(f"  wrote {p} ({p.stat().st_size / MB:.0f} MiB)", file=sys.stderr, flush=True)
        del df
    for s in d.glob(".complete-*"):
        s.unlink()
    stamp.touch()
    return paths


def big_file(d: Path, paths: list[Path]) -> Path:
    big = d / "big" / "all.msgpack"
    want = sum(p.stat().st_size for p in paths)
    if big.exists() and big.stat().st_size == want:
        return big
    big.parent.mkdir(exist_ok=True)
    with open(big, "wb") as out:
        for p in paths:
            with open(p, "rb") as f:
                shutil.copyfileobj(f, out, 16 * MB)
    return big


def warm(paths: list[Path]) -> None:
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.read(16 * MB):
                pass


def evict(paths: list[Path]) -> None:
    """Drop the files' pages from the page cache, so a child's reads are charged to its cgroup
    (pages cached earlier stay charged to whoever read them first)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Cgroup:
    """A cgroup-v1 memory cgroup with a hard limit (None where that is not possible here)."""

    ROOT = Path("/sys/fs/cgroup/memory")

    def __init__(self, limit: int):
        self.path = self.ROOT / f"msgpack-arrow-scale-{os.getpid()}"
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(str(limit))
        sw = self.path / "memory.memsw.limit_in_bytes"
        if sw.exists():
            try:
                sw.write_text(str(limit))
            except OSError:
                pass

    @classmethod
    def make(cls, limit: int) -> "Cgroup | None":
        try:
            return cls(limit) if cls.ROOT.is_dir() else None
        except OSError as e:
            print(f"  (no cgroup: {e})", file=sys.stderr)
            return None

    def enter(self) -> None:  # in the child, before exec
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def stat(self) -> dict[str, int]:
        def num(name: str) -> int:
            try:
                return int((self.path / name).read_text())
            except (OSError, ValueError):
                return -1

        return {"cg_max_usage": num("memory.max_usage_in_bytes"), "cg_failcnt": num("memory.failcnt")}

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def run(cmd: list[str], *, cpus: str | None = None, cgroup: Cgroup | None = None, sample: bool = True) -> dict:
    """Run a child, sampling its memory; returns its RESULT (if any), peaks and wall time."""
    if cpus is not None:
        cmd = ["taskset", "-c", cpus, *cmd]
    import resource

    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=cgroup.enter if cgroup else None,
    )
    peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            s = _status(p.pid)
            for k in peak:
                peak[k] = max(peak[k], s.get(k, 0))
            stop.wait(0.01)

    th = threading.Thread(target=sampler, daemon=True)
    if sample:
        th.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    if sample:
        th.join()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    res: dict = {"wall": wall, "cpu": cpu, "returncode": p.returncode}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res.update(json.loads(line[7:]))
    res.update({f"peak_{k}": v for k, v in peak.items()})
    if p.returncode != 0:
        res["stderr"] = err[-2000:]
    return res


def py(mode: str, *args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", mode, *args]


def mib(n: float) -> str:
    return f"{n / MB:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/msgpack-arrow/target"))
    ap.add_argument("--dir", type=Path, default=target / "scale", help="data directory (kept)")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows-per-file", type=int, default=600_000, help="600k rows = ~340 MiB")
    ap.add_argument("--budget-mb", type=int, default=512, help="the memory budget the data exceeds")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cli", type=Path, default=target / "release/msgpack-arrow")
    ap.add_argument("--only", default="rss,threads,dataset", help="comma-separated: rss, threads, dataset")
    ap.add_argument("--big", action="store_true", help="rss: also the whole dataset as one file")
    ap.add_argument("--cgroup", action="store_true", help="rss: also sink under a hard limit of --budget-mb")
    ap.add_argument("--quick", action="store_true", help="4 files of 30k rows, 1 repeat")
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], a.child[1:])
    if a.quick:
        a.files, a.rows_per_file, a.repeat = 4, 30_000, 1
        a.dir = a.dir.with_name(a.dir.name + "-quick")
    only = set(a.only.split(","))
    ncpu = len(os.sched_getaffinity(0))

    print(f"generating {a.files} x {a.rows_per_file:,} rows in {a.dir}", file=sys.stderr)
    paths = generate(a.dir, a.files, a.rows_per_file)
    total = sum(p.stat().st_size for p in paths)
    glob = str(a.dir / "part-*.msgpack")
    budget = a.budget_mb * MB
    lines = [
        f"# msgpack-arrow scale bench ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"Data: {a.files} files x {a.rows_per_file:,} rows = {mib(total)} MiB "
        f"({total / budget:.1f}x the {a.budget_mb} MiB budget); {ncpu} CPUs; "
        f"load average before: {os.getloadavg()[0]:.2f}.",
        "",
    ]
    results: dict = {"total_bytes": total, "files": a.files, "rows_per_file": a.rows_per_file}

    if "rss" in only:
        warm(paths)
        out = a.dir / "out.parquet"
        rg = "65536"  # rows per Parquet row group = the scan's batch size
        cases = [
            ("streaming collect: select(id, score, emb).filter(score > 0.99)", py("collect", glob), None),
            ("streaming collect: select(len, sum(score))", py("count", glob), None),
            ("sink_parquet: select(id, label, emb)", py("sink", glob, str(out)), None),
            (f"sink_parquet(row_group_size={rg}): select(id, label, emb)", py("sink", glob, str(out), rg), None),
            (
                "scan_msgpack(batch_size=16384), sink_parquet(row_group_size=16384)",
                py("sink", glob, str(out), "16384", "16384"),
                None,
            ),
        ]
        big = None
        if a.big:
            big = big_file(a.dir, paths)
            warm([big])
            cases.append(("one big file: streaming select(len, sum(score))", py("count", str(big)), None))
        if a.cgroup:
            lim = f"under a {a.budget_mb} MiB cgroup limit"
            cases.append((f"sink_parquet(row_group_size={rg}) {lim}", py("sink", glob, str(out), rg), paths))
            cases.append((f"sink_parquet (default row groups) {lim}", py("sink", glob, str(out)), paths))
            if big is not None:
                cases.append((f"one big file: select(len, sum(score)) {lim}", py("count", str(big)), [big]))
        lines += [
            "## Peak memory, streaming engine",
            "",
            "RSS after imports (polars, msgpack_arrow) is the baseline: anon = heap (batches, Polars "
            "buffers), file = mapped pages (shared libraries and the memory-mapped inputs).",
            "",
            "| query | wall s | peak RSS MiB (VmHWM) | peak anon MiB | peak file MiB | baseline anon / file MiB | notes |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for name, cmd, cg in cases:
            if cg is not None:  # the inputs of a run under a cgroup limit
                evict(cg)
                cg = Cgroup.make(budget)
                if cg is None:
                    continue
            r = run(cmd, cgroup=cg)
            note = []
            if "rows_out" in r:
                note.append(f"{r['rows_out']:,} rows out ({mib(r['bytes_out'])} MiB)")
            if "bytes_out" in r and "rows_out" not in r:
                note.append(f"{mib(r['bytes_out'])} MiB parquet")
            if cg is not None:
                r.update(cg.stat())
                cg.remove()
                note.append(f"cgroup peak {mib(r['cg_max_usage'])} MiB (page cache included), failcnt {r['cg_failcnt']}")
            if r["returncode"] == -9:
                note.append("killed by the OOM killer")
            elif r["returncode"] != 0:
                note.append(f"FAILED rc={r['returncode']}: {r.get('stderr', '')[-300:]!r}")
            lines.append(
                f"| {name} | {r['wall']:.1f} | {mib(r.get('hwm') or r['peak_VmRSS'])} | {mib(r['peak_RssAnon'])} | "
                f"{mib(r['peak_RssFile'])} | {mib(r.get('base_anon', 0))} / {mib(r.get('base_file', 0))} | {'; '.join(note)} |"
            )
            results.setdefault("rss", {})[name] = r
            print(lines[-1], file=sys.stderr, flush=True)
        if out.exists():
            out.unlink()
        lines.append("")

    cpu_sets = [("1 core", "0"), ("2 cores", "0,1")] if ncpu >= 2 else [("1 core", "0")]
    if "threads" in only:
        f0 = paths[0]
        warm([f0])
        lines += [
            f"## One file ({mib(f0.stat().st_size)} MiB, {a.rows_per_file:,} rows), 1 vs 2 cores",
            "",
            "| what | " + " | ".join(n for n, _ in cpu_sets) + " | speed-up |",
            "|---|" + "---:|" * (len(cpu_sets) + 1),
        ]
        row = [float("inf")] * len(cpu_sets)
        for _ in range(2):  # alternate the CPU sets (load from other processes hits both alike)
            for k, (_, cpus) in enumerate(cpu_sets):
                r = run(py("read", str(f0), str(a.repeat)), cpus=cpus, sample=False)
                row[k] = min(row[k], min(r.get("times", [float("nan")])))
        results["read_msgpack"] = row
        lines.append(_speed_row("Python `read_msgpack` (best s)", row, f0.stat().st_size))
        r = run(py("plan", str(f0), str(a.repeat)), cpus="0", sample=False)
        if "infer" in r:
            results["plan"] = r
            infer, count = min(r["infer"]), min(r["count"])
            lines.append(_speed_row("of which the sequential first pass: infer schema (best s)", [infer], f0.stat().st_size))
            lines.append(_speed_row("first pass with the schema given: count rows (best s)", [count], f0.stat().st_size))
            seq = row[0]
            f = infer / seq
            lines.append(
                f"| Amdahl bound, the inferring pass being {f:.0%} of the 1-core time | "
                f"2 cores: {1 / (f + (1 - f) / 2):.2f}x | 8 cores: {1 / (f + (1 - f) / 8):.2f}x | "
                f"limit {1 / f:.1f}x |"
            )
        if a.cli.exists():
            row = [float("inf")] * len(cpu_sets)
            used = [0.0] * len(cpu_sets)
            tmp = a.dir / "one.arrow"
            for _ in range(a.repeat):
                for k, (_, cpus) in enumerate(cpu_sets):
                    r = run([str(a.cli), "convert", str(f0), "-o", str(tmp), "-q"], cpus=cpus, sample=False)
                    if r["wall"] < row[k]:
                        row[k], used[k] = r["wall"], r["cpu"] / r["wall"]
            tmp.unlink(missing_ok=True)
            results["cli_convert"] = row
            lines.append(_speed_row("CLI `convert x.msgpack -o x.arrow` (best s)", row, f0.stat().st_size, used=used))
        lines.append("")
        print("\n".join(lines[-8:]), file=sys.stderr, flush=True)

    if "dataset" in only and a.cli.exists():
        warm(paths)
        lines += [
            f"## CLI `convert --dataset` of {a.files} files ({mib(total)} MiB), 1 vs 2 cores",
            "",
            "| output | " + " | ".join(n for n, _ in cpu_sets) + " | speed-up |",
            "|---|" + "---:|" * (len(cpu_sets) + 1),
        ]
        for fmt in ("arrow", "parquet"):
            row = [float("inf")] * len(cpu_sets)
            cpus_used = [0.0] * len(cpu_sets)
            outdir = a.dir / f"dataset-{fmt}"
            # alternate the CPU sets, so that load from other processes hits both alike
            for _ in range(max(1, min(a.repeat, 2))):
                for k, (_, cpus) in enumerate(cpu_sets):
                    shutil.rmtree(outdir, ignore_errors=True)
                    r = run(
                        [str(a.cli), "convert", glob, "-o", str(outdir), "--dataset", "--format", fmt, "-q"],
                        cpus=cpus,
                        sample=False,
                    )
                    if r["returncode"] != 0:
                        print(r.get("stderr"), file=sys.stderr)
                    if r["wall"] < row[k]:
                        row[k], cpus_used[k] = r["wall"], r["cpu"] / r["wall"]
            shutil.rmtree(outdir, ignore_errors=True)
            results[f"dataset_{fmt}"] = {"wall": row, "cpus_used": cpus_used}
            lines.append(_speed_row(f"{fmt} (s)", row, total, used=cpus_used))
            print(lines[-1], file=sys.stderr, flush=True)
        lines.append("")

    lines.append(f"Load average after: {os.getloadavg()[0]:.2f}.")
    text = "\n".join(lines) + "\n"
    print(text)
    (a.dir / "scale.md").write_text(text)
    (a.dir / "scale.json").write_text(json.dumps(results, indent=1, default=str))


def _speed_row(name: str, secs: list[float], nbytes: int, ncols: int = 2, used: list[float] | None = None) -> str:
    cells = [f"{s:.2f} ({nbytes / MB / s:,.0f} MiB/s)" for s in secs]
    if used:
        cells = [f"{c}, {u:.2f} CPUs busy" for c, u in zip(cells, used)]
    cells += [""] * (ncols - len(secs))
    speed = f"{secs[0] / secs[-1]:.2f}x" if len(secs) > 1 else ""
    return f"| {name} | " + " | ".join(cells) + f" | {speed} |"


if __name__ == "__main__":
    main()
