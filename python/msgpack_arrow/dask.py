"""Dask DataFrames from msgpack-numpy files: one partition per file, for clusters.

Needs the ``dask`` extra (``pip install 'msgpack-arrow[dask]'``: dask[dataframe], distributed,
pandas, pyarrow). Partitions are pandas DataFrames with pyarrow-backed dtypes
(``pd.ArrowDtype``), so tensor columns keep their shape and element type: an ndarray column of
shape ``(2, 3)`` float32 is ``pd.ArrowDtype(pa.list_(pa.list_(pa.float32(), 3), 2))``, the same
nested FixedSizeList the Arrow reader gives (:func:`tensor_to_numpy` turns one back into an
``ndarray``).

>>> import msgpack_arrow.dask as mad                                    # doctest: +SKIP
>>> df = mad.read_msgpack("s3://bucket/dumps/*.msgpack", columns=["id", "emb"])  # doctest: +SKIP
>>> df.map_partitions(len).compute()                                    # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

try:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"msgpack_arrow.dask needs dask[dataframe], pandas and pyarrow ({e}); "
        "install them with: pip install 'msgpack-arrow[dask]'"
    ) from e

import numpy as np

from . import REMOTE, Layout, Reader, _columns, _expand, _is_path, _is_url, _overrides, _storage

__all__ = ["read_msgpack", "tensor_to_numpy"]


def _list_paths(source: Any, storage_options: Mapping[str, Any] | None) -> tuple[list[str], Any]:
    """The files to read, in order, and the fsspec filesystem for other URLs (None: local paths
    and the URLs the reader streams itself: S3, GCS, Azure, HTTP)."""
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise FileNotFoundError("no input files: the list is empty")
    for x in items:
        if not _is_path(x):
            raise TypeError(
                "msgpack_arrow.dask.read_msgpack takes paths, globs, directories or URLs (each "
                f"partition is read by a worker), got {type(x).__name__}"
            )
    strs = [os.fsdecode(os.fspath(x)) for x in items]
    urls = [s for s in strs if "://" in s]
    if not urls:
        return [p for p in _expand(strs) if isinstance(p, str)], None
    if len(urls) != len(strs):
        raise ValueError("mix of URLs and local paths: give one kind")
    if REMOTE and all(_is_url(u) for u in urls):
        # the reader's own object-store client: globs listed, objects streamed by each worker
        return _expand(strs, dict(storage_options or {})), None
    import fsspec  # a dependency of dask

    fs, _, paths = fsspec.get_fs_token_paths(strs, mode="rb", storage_options=dict(storage_options or {}))
    if len(strs) == 1 and fs.isdir(paths[0]):
        paths = sorted(p for p in fs.ls(paths[0], detail=False) if not os.path.basename(p).startswith("."))
    paths = [p for p in paths if fs.isfile(p)]
    if not paths:
        raise FileNotFoundError(f"no file matches {source!r}")
    if "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
        return paths, None  # file:// URLs: local paths, memory-mapped by the reader
    return paths, fs


def _source(path: str, fs: Any) -> Any:
    """What the Rust reader takes: a local path (memory-mapped) or a URL it streams, or the bytes
    of a file of another fsspec filesystem."""
    if fs is None:
        return path
    with fs.open(path, "rb", compression="infer") as f:
        return f.read()


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    # ArrowDtype keeps every Arrow type (FixedSizeList tensors, nested lists, structs, Float16,
    # timestamps with NaT as null): no conversion to object columns, no copy of the buffers
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _read_partition(
    path: str,
    columns: list[str] | None = None,
    *,
    fs: Any,
    schema: pa.Schema,
    meta_schema: pa.Schema,
    overrides: Any,
    opts: dict[str, Any],
    path_column: str | None,
    storage: list[tuple[str, str]] | None = None,
) -> pd.DataFrame:
    """One partition: one whole file, decoded (on all the worker's cores) with the first file's
    schema. ``columns`` is set by Dask's optimizer when the query needs only some columns."""
    want = list(meta_schema.names) if columns is None else list(columns)
    read = [c for c in want if c != path_column]
    r = Reader(
        _source(path, fs),
        columns=read,
        schema=schema,
        schema_overrides=overrides,
        for_polars=False,
        storage_options=storage,
        **opts,
    )
    table = pa.table(r.read_all())
    if table.num_rows == 0 and table.schema.names != read:
        # an empty file decodes to a table with no columns
        table = pa.schema([meta_schema.field(c) for c in read]).empty_table()
    df = _to_pandas(table)
    if path_column is not None and path_column in want:
        df[path_column] = pd.Series([path] * len(df), dtype=pd.ArrowDtype(pa.string()), index=df.index)
        df = df[want]
    return df


def read_msgpack(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    columns: str | Sequence[str] | None = None,
    layout: Layout = "auto",
    schema_overrides: Mapping[str, Any] | pa.Schema | None = None,
    tensor: Literal["array", "extension"] = "array",
    object_arrays: Literal["error", "raw"] = "error",
    dialect: Literal["auto", "msgpack-numpy", "openpi", "js"] = "auto",
    batch_size: int = 65536,
    batch_bytes: int = 16 << 20,
    infer_rows: int | None = None,
    include_path_column: bool | str = False,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """Read msgpack-numpy files as a Dask DataFrame, one partition per file.

    Built with ``dask.dataframe.from_map`` (what Dask recommends for custom sources): the files
    are read by the workers, each on all its cores, and ``df[["a", "b"]]`` reads only those
    columns (Dask's optimizer passes the projection down to the reader).

    Parameters
    ----------
    source
        A path, a glob (``"dumps/*.msgpack"``, matches in sorted order), a directory (its files,
        sorted) or a list of these; or URLs: ``s3://``, ``gs://``, ``az://``/``abfs[s]://``,
        ``http[s]://`` (globs list the prefix; each worker streams its objects, as
        :func:`msgpack_arrow.read_msgpack` does), other fsspec URLs (read whole into the
        worker's memory, then decoded). Local paths must be visible to every worker (a shared
        filesystem) when the cluster spans machines.
    columns
        Only these columns, in this order.
    schema_overrides
        ``{column: dtype}`` with Polars dtypes or pyarrow types (or a ``pa.Schema``): these
        columns get these types (see :func:`msgpack_arrow.read_msgpack`).
    include_path_column
        Add a string column with each row's file path (named ``"path"``, or the name given;
        last, also when ``columns`` are given).
    storage_options
        For URLs: object_store's configuration keys (as :func:`msgpack_arrow.read_msgpack`
        takes them), or fsspec's options for other filesystems.
    layout, tensor, object_arrays, dialect, batch_size, batch_bytes, infer_rows
        As in :func:`msgpack_arrow.read_msgpack`.

    Returns
    -------
    dask.dataframe.DataFrame
        Partitions are pandas DataFrames with ``pd.ArrowDtype`` columns (a fixed-shape tensor
        column is a FixedSizeList per axis, e.g. ``fixed_size_list<float>[768]``); each has its
        own ``RangeIndex`` (the divisions are unknown), as ``dd.read_parquet`` gives.

    Notes
    -----
    The schema is inferred from the first file (with ``schema_overrides`` applied, on the
    client) and every file is decoded with it, so all partitions have the same dtypes; keys that
    the first file lacks are not read from later files, and keys missing in a later file are
    nulls. Pass ``infer_rows`` to infer from the first rows only when the first file is large.
    """
    paths, fs = _list_paths(source, storage_options)
    opts = dict(
        layout=layout,
        tensor=tensor,
        object_arrays=object_arrays,
        dialect=dialect,
        batch_size=batch_size,
        batch_bytes=batch_bytes,
        infer_rows=infer_rows,
    )
    if isinstance(schema_overrides, Mapping) and any(isinstance(t, pa.DataType) for t in schema_overrides.values()):
        overrides: Any = pa.schema(list(schema_overrides.items()))
    else:
        overrides = _overrides(schema_overrides)
    storage = _storage(dict(storage_options)) if storage_options and fs is None else None
    first = Reader(
        _source(paths[0], fs), schema_overrides=overrides, for_polars=False, storage_options=storage, **opts
    )
    # the full (unprojected) schema the first file decodes to: every file is read with it
    schema = pa.schema(first.decoded_schema())
    out_schema = pa.schema(first)
    del first
    path_column = None
    if include_path_column:
        path_column = "path" if include_path_column is True else str(include_path_column)
        if path_column in out_schema.names:
            raise ValueError(f"include_path_column: the files already have a column {path_column!r}")
    names = list(out_schema.names)
    want = _columns(columns)
    if want is not None and path_column is not None and path_column not in want:
        want.append(path_column)
    if want is not None:
        missing = [c for c in want if c not in names and c != path_column]
        if missing:
            raise KeyError(f"columns {missing} not found; the columns are {names}")
    meta_schema = out_schema
    meta = _to_pandas(out_schema.empty_table())
    if path_column is not None:
        meta[path_column] = pd.Series([], dtype=pd.ArrowDtype(pa.string()))
        meta_schema = meta_schema.append(pa.field(path_column, pa.string()))
    kwargs: dict[str, Any] = dict(
        fs=fs,
        schema=schema,
        meta_schema=meta_schema,
        overrides=overrides,
        opts=opts,
        path_column=path_column,
        storage=storage,
    )
    if want is not None:
        kwargs["columns"] = want
        meta = meta[want]
    return dd.from_map(
        _read_partition,
        paths,
        meta=meta,
        label="read-msgpack",
        enforce_metadata=False,
        **kwargs,
    )


def tensor_to_numpy(values: Any) -> np.ndarray:
    """A fixed-shape tensor column (a pandas Series with a FixedSizeList ``pd.ArrowDtype``, or a
    pyarrow array) as one ``ndarray`` of shape ``(rows, *shape)``, without a copy when it has
    one chunk and no nulls.

    >>> import pandas as pd, pyarrow as pa
    >>> s = pd.Series(pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.float32(), 3)),
    ...               dtype=pd.ArrowDtype(pa.list_(pa.float32(), 3)))
    >>> tensor_to_numpy(s)
    array([[1., 2., 3.],
           [4., 5., 6.]], dtype=float32)
    """
    arr = pa.array(values) if isinstance(values, pd.Series) else values
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if arr.null_count:
        raise ValueError("tensor_to_numpy: the column has nulls")
    shape = []
    while pa.types.is_fixed_size_list(arr.type):
        shape.append(arr.type.list_size)
        arr = arr.flatten()
    if not shape:
        raise TypeError(f"tensor_to_numpy needs a FixedSizeList column, got {arr.type}")
    return arr.to_numpy(zero_copy_only=False).reshape(-1, *shape)
