"""What the Dask, Daft and Ray readers share: the files a source names, what the Rust reader takes
for each, and one plan (the first file's schema, the options) every worker reads its files with.

A plan is pickled to the workers, so it holds only plain values, a pyarrow schema and (for fsspec
URLs the reader does not stream itself) an fsspec filesystem.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from . import REMOTE, Reader, _columns, _expand, _is_path, _is_url, _overrides, _storage


def list_paths(source: Any, storage_options: Mapping[str, Any] | None, who: str) -> tuple[list[str], Any]:
    """The files to read, in order, and the fsspec filesystem for other URLs (None: local paths
    and the URLs the reader streams itself: S3, GCS, Azure, HTTP)."""
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise FileNotFoundError("no input files: the list is empty")
    for x in items:
        if not _is_path(x):
            raise TypeError(
                f"{who} takes paths, globs, directories or URLs (each file is read by a worker), "
                f"got {type(x).__name__}"
            )
    strs = [os.fsdecode(os.fspath(x)) for x in items]
    urls = [s for s in strs if "://" in s]
    if not urls:
        return [p for p in _expand(strs) if isinstance(p, str)], None
    if len(urls) != len(strs):
        raise ValueError("mix of URLs and local paths: give one kind")
    if REMOTE and all(_is_url(u) for u in urls):
        # the reader's own object-store client: globs listed, objects streamed by each worker
        return [p for p in _expand(strs, dict(storage_options or {})) if isinstance(p, str)], None
    try:
        import fsspec
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"{strs[0]!r}: URLs of this kind are read through fsspec; pip install fsspec") from e

    fs, _, paths = fsspec.get_fs_token_paths(strs, mode="rb", storage_options=dict(storage_options or {}))
    if len(strs) == 1 and fs.isdir(paths[0]):
        paths = sorted(p for p in fs.ls(paths[0], detail=False) if not os.path.basename(p).startswith("."))
    paths = [p for p in paths if fs.isfile(p)]
    if not paths:
        raise FileNotFoundError(f"no file matches {source!r}")
    if "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
        return paths, None  # file:// URLs: local paths, memory-mapped by the reader
    return paths, fs


@dataclass
class Plan:
    """How every file is read: with the first file's full schema, so all parts agree."""

    paths: list[str]
    fs: Any
    #: the full (unprojected) schema the first file decodes to
    schema: pa.Schema
    #: what a part holds: the output columns, then the path column if asked for
    out_schema: pa.Schema
    overrides: Any
    opts: dict[str, Any]
    storage: list[tuple[str, str]] | None
    path_column: str | None
    #: the columns asked for (None: all of out_schema)
    columns: list[str] | None = field(default=None)

    def source(self, path: str) -> Any:
        """What the Rust reader takes: a local path (memory-mapped) or a URL it streams, or the
        bytes of a file of another fsspec filesystem."""
        if self.fs is None:
            return path
        with self.fs.open(path, "rb", compression="infer") as f:
            return f.read()

    def part_schema(self, columns: Sequence[str] | None = None) -> pa.Schema:
        """The schema of a part holding ``columns`` (default: every column)."""
        want = self.out_schema.names if columns is None else list(columns)
        return pa.schema([self.out_schema.field(c) for c in want])

    def batches(self, path: str, columns: Sequence[str] | None = None, n_rows: int | None = None) -> Iterator[pa.RecordBatch]:
        """One file's rows as record batches of :meth:`part_schema` (one empty batch for an
        empty file), decoded batch by batch: a worker holds one batch at a time."""
        target = self.part_schema(columns)
        read = [c for c in target.names if c != self.path_column]
        r = Reader(
            self.source(path),
            columns=read,
            schema=self.schema,
            schema_overrides=self.overrides,
            for_polars=False,
            storage_options=self.storage,
            n_rows=n_rows,
            **self.opts,
        )
        seen = False
        for stream in r:
            for batch in pa.RecordBatchReader.from_stream(stream):
                if batch.num_rows:
                    seen = True
                    yield self._with_path(batch, path, target)
        if not seen:
            # an empty file decodes to a table with no columns
            yield pa.RecordBatch.from_pylist([], schema=target)

    def _with_path(self, batch: pa.RecordBatch, path: str, target: pa.Schema) -> pa.RecordBatch:
        if self.path_column is None or self.path_column not in target.names:
            return batch
        cols = {n: batch.column(n) for n in batch.schema.names}
        cols[self.path_column] = pa.array([path] * batch.num_rows, pa.string())
        return pa.RecordBatch.from_arrays([cols[n] for n in target.names], schema=target)

    def table(self, path: str, columns: Sequence[str] | None = None, n_rows: int | None = None) -> pa.Table:
        """One file as one table of :meth:`part_schema`."""
        return pa.Table.from_batches(list(self.batches(path, columns, n_rows)), schema=self.part_schema(columns))


def plan(
    source: Any,
    *,
    who: str,
    columns: str | Sequence[str] | None,
    schema_overrides: Mapping[str, Any] | pa.Schema | None,
    include_path_column: bool | str,
    storage_options: Mapping[str, Any] | None,
    infer_rows: int | None = None,
    **opts: Any,
) -> Plan:
    """List the files and infer the schema from the first one (on the client). The Dask, Daft
    and Ray readers pass their arguments as they are: ``opts`` are the reader's (layout, tensor,
    object_arrays, dialect, batch_size, batch_bytes)."""
    if infer_rows is not None and infer_rows < 1:
        raise ValueError("infer_rows must be >= 1 (None: infer from every row)")
    opts["infer_rows"] = infer_rows
    paths, fs = list_paths(source, storage_options, who)
    if isinstance(schema_overrides, Mapping) and any(isinstance(t, pa.DataType) for t in schema_overrides.values()):
        overrides: Any = pa.schema(list(schema_overrides.items()))
    else:
        overrides = _overrides(schema_overrides)
    storage = _storage(dict(storage_options)) if storage_options and fs is None else None
    p = Plan(paths, fs, pa.schema([]), pa.schema([]), overrides, opts, storage, None)
    first = Reader(
        p.source(paths[0]), schema_overrides=overrides, for_polars=False, storage_options=storage, **opts
    )
    p.schema = pa.schema(first.decoded_schema())
    out_schema = pa.schema(first)
    del first
    if include_path_column:
        p.path_column = "path" if include_path_column is True else str(include_path_column)
        if p.path_column in out_schema.names:
            raise ValueError(f"include_path_column: the files already have a column {p.path_column!r}")
        out_schema = out_schema.append(pa.field(p.path_column, pa.string()))
    p.out_schema = out_schema
    want = _columns(columns)
    if want is not None:
        if p.path_column is not None and p.path_column not in want:
            want.append(p.path_column)
        missing = [c for c in want if c not in out_schema.names]
        if missing:
            names = [n for n in out_schema.names if n != p.path_column]
            raise KeyError(f"columns {missing} not found; the columns are {names}")
        p.columns = want
    return p
