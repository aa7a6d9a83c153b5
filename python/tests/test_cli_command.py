"""The `msgpack-arrow` command that `pip install` puts on the PATH: the Rust CLI inside the
extension module, with its exit codes and messages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pytest


def _command() -> list[str]:
    # the console script beside this interpreter (the venv's bin), else the module
    exe = Path(sys.executable).with_name("msgpack-arrow")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("msgpack-arrow")
    return [found] if found else [sys.executable, "-m", "msgpack_arrow._cli"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_command(), *args], capture_output=True, text=True, timeout=120)


def test_the_command_is_installed_with_the_package():
    assert Path(sys.executable).with_name("msgpack-arrow").exists(), "pip install gives the console script"
    r = run("--help")
    assert r.returncode == 0 and "convert" in r.stdout and "schema" in r.stdout


def test_schema_head_convert(tmp_path):
    p = tmp_path / "d.msgpack"
    p.write_bytes(b"".join(mn.packb({"id": i, "emb": np.full(3, i, dtype="<f4")}) for i in range(4)))
    r = run("schema", str(p))
    assert r.returncode == 0, r.stderr
    assert "emb: f32[3]" in r.stdout and "rows: 4" in r.stdout
    r = run("head", "-n", "2", str(p))
    assert r.returncode == 0 and "(2 rows shown)" in r.stdout, r.stdout
    r = run("head", "-n", "10", str(p))
    assert r.returncode == 0 and "(4 of 4 rows)" in r.stdout, r.stdout
    out = tmp_path / "d.parquet"
    r = run("convert", str(p), "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = pl.read_parquet(out)
    assert got["id"].to_list() == [0, 1, 2, 3]
    assert got["emb"].dtype == pl.Array(pl.Float32, 3)


def test_errors_are_one_line_and_leave_no_output(tmp_path):
    t = tmp_path / "notes.csv"
    t.write_text("id,name\n1,alpha\n2,beta\n")
    out = tmp_path / "n.parquet"
    r = run("convert", str(t), "-o", str(out))
    assert r.returncode == 1
    assert r.stderr.startswith(f"error: {t}: input looks like text (CSV?), not MessagePack"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()
    r = run("schema", str(tmp_path / "missing.msgpack"))
    assert r.returncode == 1 and "missing.msgpack" in r.stderr
    assert r.stderr.count("missing.msgpack") == 1, r.stderr
    r = run("convert", "--bogus")
    assert r.returncode == 2
