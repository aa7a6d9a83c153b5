"""Shared fixtures: the golden corpus (tests/data/generate.py at the repository root).

`make test-python` passes it in $MSGPACK_ARROW_GOLDEN; without that variable it is generated
once per session into a temporary directory (it takes about a second).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# scan_msgpack saves the schemas it infers (msgpack_arrow._saved_schema_path): the tests keep
# theirs in a directory of this session's own (child processes inherit it), not in ~/.cache
if "MSGPACK_ARROW_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["MSGPACK_ARROW_CACHE_DIR"] = tempfile.mkdtemp(prefix="msgpack-arrow-cache-")


def _golden_dir(tmp_root: Path) -> Path:
    env = os.environ.get("MSGPACK_ARROW_GOLDEN")
    if env:
        d = Path(env)
        assert (d / "manifest.json").exists(), f"MSGPACK_ARROW_GOLDEN={env} has no manifest.json: run `make golden`"
        return d
    d = tmp_root / "golden"
    subprocess.run([sys.executable, str(REPO / "tests" / "data" / "generate.py"), str(d)], check=True, capture_output=True)
    return d


_GOLDEN: Path | None = None


def golden_dir(tmp_path_factory=None) -> Path:
    global _GOLDEN
    if _GOLDEN is None:
        import tempfile

        root = Path(tmp_path_factory.mktemp("corpus")) if tmp_path_factory else Path(tempfile.mkdtemp())
        _GOLDEN = _golden_dir(root)
    return _GOLDEN


def manifest() -> dict:
    return json.loads((golden_dir() / "manifest.json").read_text())


@pytest.fixture(scope="session")
def golden(tmp_path_factory) -> Path:
    return golden_dir(tmp_path_factory)


# ---- files for the Dask, Daft and Ray readers (one task per file) --------------------------------

#: rows [lo, hi) of each part file
PART_BOUNDS = [(0, 40), (40, 100), (100, 130)]


def write_parts(directory: Path, record) -> list[Path]:
    """``part-000.msgpack``... in ``directory``, each the msgpack_numpy records ``record(i)`` of
    its rows (:data:`PART_BOUNDS`)."""
    import msgpack_numpy as mn

    paths = []
    for k, (lo, hi) in enumerate(PART_BOUNDS):
        p = directory / f"part-{k:03d}.msgpack"
        p.write_bytes(b"".join(mn.packb(record(i)) for i in range(lo, hi)))
        paths.append(p)
    return paths


# ---- local stand-ins for remote stores (remote_servers.py; test_remote.py) ------------------------


@pytest.fixture()
def http_server():
    """An :class:`remote_servers.ObjectServer` on 127.0.0.1, empty, stopped after the test."""
    from remote_servers import ObjectServer

    with ObjectServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 on 127.0.0.1 for the session (:class:`remote_servers.S3Server`); tests make
    their own buckets with ``s3_server.new_bucket()``."""
    from remote_servers import S3Server

    with S3Server() as server:
        yield server
