"""Errors a user meets on the output side are one line: what, which file, what to do; no
library prefixes ("Io error:", "External error:"), no "(os error N)", no temporary file's path.

A full disk is a real one: a 1 MiB tmpfs mounted for the test (needs root, as the test machines
run; skipped with the reason otherwise).
"""

from __future__ import annotations

import errno
import os
import subprocess

import numpy as np
import polars as pl
import pytest
from test_cli_command import _command

import msgpack_arrow as ma

NOISE = ("Io error", "External error", "os error", ".tmp", "at path")


@pytest.fixture
def full_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def big_frame() -> pl.DataFrame:
    # random floats: no format compresses them under the 1 MiB the disk has
    return pl.DataFrame({"e": np.random.default_rng(0).random((8000, 64), dtype=np.float32)})


@pytest.mark.parametrize("how", ["write", "sink"])
def test_full_disk_python(full_disk, how):
    target = full_disk / "out.msgpack"
    target.write_bytes(b"previous")
    df = big_frame()
    with pytest.raises(OSError) as e:
        if how == "write":
            ma.write_msgpack(df, target)
        else:
            ma.sink_msgpack(df.lazy(), target)
    msg = str(e.value)
    assert e.value.errno == errno.ENOSPC or "No space left" in msg, msg
    assert str(target) in msg and "free some space" in msg, msg
    assert not any(n in msg for n in NOISE), msg
    assert "\n" not in msg
    # nothing the user had is lost, nothing half-written is left
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in full_disk.iterdir()) == ["out.msgpack"]


@pytest.mark.parametrize("ext", ["arrow", "parquet", "msgpack", "npz"])
def test_full_disk_cli(full_disk, tmp_path, ext):
    src = tmp_path / "in.msgpack"
    ma.write_msgpack(big_frame(), src)
    target = full_disk / f"out.{ext}"
    args = ["convert", str(src), "-o", str(target), "-q"]
    if ext == "parquet":
        args += ["--compression", "none"]
    r = subprocess.run([*_command(), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0, "a convert onto a full disk must fail"
    line = r.stderr.strip()
    assert "\n" not in line, line
    assert str(target) in line and "No space left on device" in line and "free some space" in line, line
    assert not any(n in line for n in NOISE), line
    assert list(full_disk.iterdir()) == []


def test_missing_directory_is_one_line(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "out.msgpack"
    with pytest.raises(FileNotFoundError) as e:
        ma.write_msgpack(pl.DataFrame({"x": [1]}), target)
    msg = str(e.value)
    assert str(target) in msg and "does not exist" in msg, msg
    src = tmp_path / "in.msgpack"
    ma.write_msgpack(pl.DataFrame({"x": [1]}), src)
    r = subprocess.run([*_command(), "convert", str(src), "-o", str(target)], capture_output=True, text=True)
    line = r.stderr.strip()
    assert r.returncode != 0 and "\n" not in line and "does not exist" in line, line


def test_a_full_disk_while_writing_the_index_leaves_the_previous_file_and_index(full_disk):
    # the data fits and its index (8 bytes a row beside 12) does not: neither may replace the old
    target = full_disk / "out.msgpack"
    old = pl.DataFrame({"v": np.arange(10, dtype=np.float64)})
    ma.write_msgpack(old, target, index=True)
    before = (target.read_bytes(), (full_disk / "out.msgpack.offsets").read_bytes())
    new = pl.DataFrame({"v": np.arange(55_000, dtype=np.float64) + 0.5})
    with pytest.raises(OSError, match="No space left"):
        ma.write_msgpack(new, target, index=True)
    assert (target.read_bytes(), (full_disk / "out.msgpack.offsets").read_bytes()) == before
    assert sorted(p.name for p in full_disk.iterdir()) == ["out.msgpack", "out.msgpack.offsets"]
    assert ma.read_msgpack(target, rows=slice(5, 8))["v"].to_list() == [5.0, 6.0, 7.0]
