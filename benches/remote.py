#!/usr/bin/env python3
"""Remote reads: msgpack-arrow streaming a URL vs downloading the object and reading the file.

    .venv/bin/python benches/remote.py            # the embedding table T (100,000 rows, ~316 MB)
    .venv/bin/python benches/remote.py --quick    # 2,000 rows, 1 repeat: proves the harness works

The object is served from memory by the tests' HTTP server (python/tests/remote_servers.py:
Range, ETag, a byte counter) on 127.0.0.1, in the driver process. Every measurement runs in a
fresh Python process (best of ``--repeat``), and once more all in one warm process:

* ``read_msgpack(url)``: decoding overlaps the transfer;
* ``download + read_msgpack(file)``: the peer, what a user does today (urllib to a file in
  ``--dir``, page cache hot afterwards, then a local read);
* ``scan_msgpack(url).head(10)``: time and body bytes the server sent (at most 16 MiB wanted);
* ``scan_msgpack(url).select("id")``: the child's anonymous memory at peak over its start
  (``RssAnon`` sampled every 3 ms; at most 96 MiB wanted).

The table goes to stdout and to ``DIR/remote.md`` with ``uptime``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python" / "tests"))
MiB = 1 << 20


def _anon_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(op: str, url: str, scratch: str) -> dict:
    """One operation, timed; returns seconds and the peak anonymous memory it added."""
    import urllib.request

    import msgpack_arrow as ma

    # library and I/O runtime loaded (a tiny object beside it, not counted against this one)
    ma.read_msgpack(url.rsplit("/", 1)[0] + "/warm.msgpack")
    base = _anon_mib()
    peak = [base]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _anon_mib())
            time.sleep(0.003)

    w = threading.Thread(target=watch)
    w.start()
    t = time.perf_counter()
    if op == "remote":
        shape = ma.read_msgpack(url).shape
    elif op == "download":
        with urllib.request.urlopen(url) as r, open(scratch, "wb") as f:
            while chunk := r.read(1 << 20):
                f.write(chunk)
        shape = ma.read_msgpack(scratch).shape
    elif op == "head":
        shape = ma.scan_msgpack(url).head(10).collect().shape
    elif op == "select":
        shape = ma.scan_msgpack(url).select("id").collect().shape
    else:
        raise ValueError(op)
    dt = time.perf_counter() - t
    done.set()
    w.join()
    return {"op": op, "s": dt, "anon_mib": peak[0] - base, "shape": list(shape)}


OPS = ["remote", "download", "head", "select"]


def sent(server) -> int:
    """Body bytes of the table object sent so far."""
    return sum(r.body_bytes for r in server.requests_for("/T.msgpack"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--dir", default="/tmp/msgpack-arrow-bench-remote")
    ap.add_argument("--child", nargs=3, metavar=("OP", "URL", "SCRATCH"), help=argparse.SUPPRESS)
    ap.add_argument("--warm", nargs=2, metavar=("URL", "SCRATCH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(*a.child)))
        return
    if a.warm:
        print(json.dumps([measure(op, *a.warm) for op in OPS for _ in range(2)][1::2]))
        return

    import msgpack_arrow as ma
    import numpy as np
    import polars as pl
    from remote_servers import ObjectServer

    rows, repeat = (2_000, 1) if a.quick else (100_000, a.repeat or 3)
    out = Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    df = pl.DataFrame(
        {
            "id": np.arange(rows),
            "label": [f"item-{i}" for i in range(rows)],
            "score": rng.random(rows),
            "emb": rng.random((rows, 768), dtype=np.float32),
        }
    )
    data = ma.write_msgpack(df, None)
    del df
    scratch = str(out / "download.msgpack")
    lines = []
    with ObjectServer() as server:
        url = server.put("/T.msgpack", data)
        server.put("/warm.msgpack", ma.write_msgpack(pl.DataFrame({"id": [1]}), None))
        best: dict[str, dict] = {}
        for _ in range(repeat):
            for op in OPS:
                before = sent(server)
                r = json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--child", op, url, scratch], check=True, capture_output=True, text=True
                    ).stdout
                )
                server.wait_idle(5)
                r["sent_mib"] = (sent(server) - before) / MiB
                if op not in best or r["s"] < best[op]["s"]:
                    best[op] = r
        warm = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--warm", url, scratch], check=True, capture_output=True, text=True
            ).stdout
        )
    warm_s = {r["op"]: r["s"] for r in warm}
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines += [
        f"# Remote read ({rows:,} rows, {len(data) / MiB:.0f} MiB over HTTP on 127.0.0.1)",
        "",
        f"`uptime`: {uptime}; fresh process: best of {repeat}; warm: the second run in one process.",
        "",
        "| workload | fresh | warm | moved | anon. memory |",
        "|---|---:|---:|---:|---:|",
    ]
    names = {
        "remote": "`read_msgpack(url)`",
        "download": "download + `read_msgpack(file)` (peer)",
        "head": "`scan_msgpack(url).head(10)`",
        "select": '`scan_msgpack(url).select("id")`',
    }
    for op in OPS:
        r = best[op]
        lines.append(
            f"| {names[op]} | {r['s'] * 1000:.0f} ms | {warm_s[op] * 1000:.0f} ms | "
            f"{r['sent_mib']:.1f} MiB | +{r['anon_mib']:.0f} MiB |"
        )
    ratio = best["remote"]["s"] / best["download"]["s"]
    lines += ["", f"remote / (download + local): {ratio:.2f}× fresh, {warm_s['remote'] / warm_s['download']:.2f}× warm"]
    text = "\n".join(lines) + "\n"
    (out / "remote.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
