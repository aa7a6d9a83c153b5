"""Every Python snippet of the README runs as written, against small dumps with the names it uses
(the Dask cluster snippet, which needs a scheduler, is run by test_dask.py's equivalent instead;
the remote-data snippet, which needs a store, by test_remote.py's)."""

from __future__ import annotations

import re
from pathlib import Path

import msgpack_numpy as mn
import numpy as np
import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks() -> list[str]:
    text = README.read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "Client(" not in b and "s3://" not in b]


def _dump(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    path.write_bytes(
        b"".join(
            mn.packb({"id": i, "label": f"l{i % 3}", "score": float(rng.random()), "emb": rng.random(768, dtype=np.float32)})
            for i in range(n)
        )
    )


@pytest.mark.parametrize("i", range(len(_blocks())))
def test_readme_python_snippet_runs(i, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _dump(tmp_path / "dump.msgpack", 20, 0)
    (tmp_path / "dumps").mkdir()
    for k in range(2):
        _dump(tmp_path / "dumps" / f"part{k}.msgpack", 10, k + 1)
    code = _blocks()[i]
    exec(compile(code, f"README.md python block {i}", "exec"), {})


def test_the_readme_has_python_snippets():
    assert len(_blocks()) >= 2
