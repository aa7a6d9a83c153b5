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

from . import Layout
from ._files import Plan, plan

__all__ = ["read_msgpack", "tensor_to_numpy"]


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    # ArrowDtype keeps every Arrow type (FixedSizeList tensors, nested lists, structs, Float16,
    # timestamps with NaT as null): no conversion to object columns, no copy of the buffers
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _read_partition(path: str, columns: list[str] | None = None, *, plan: Plan) -> pd.DataFrame:
    """One partition: one whole file, decoded (on all the worker's cores) with the first file's
    schema. ``columns`` is set by Dask's optimizer when the query needs only some columns."""
    return _to_pandas(plan.table(path, columns))


def read_msgpack(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    columns: str | Sequence[str] | None = None,
    layout: Layout = "auto",
    schema_overrides: Mapping[str, Any] | pa.Schema | None = None,
    tensor: Literal["array", "extension"] = "array",
    object_arrays: Literal["error", "raw"] = "error",
    dialect: Literal["auto", "msgpack-numpy", "openpi", "js", "flax"] = "auto",
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
    p = plan(who="msgpack_arrow.dask.read_msgpack", **locals())
    meta = _to_pandas(p.part_schema(p.columns).empty_table())
    kwargs: dict[str, Any] = dict(plan=p)
    if p.columns is not None:
        kwargs["columns"] = p.columns
    return dd.from_map(
        _read_partition,
        p.paths,
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
