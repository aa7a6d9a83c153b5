"""Daft DataFrames from msgpack-numpy files: a Daft ``DataSource``, one task per file.

Needs the ``daft`` extra (``pip install 'msgpack-arrow[daft]'``). Fixed-shape ndarray columns are
Daft tensors (``Tensor[Float32; [2, 3]]``): they are read as Arrow's ``arrow.fixed_shape_tensor``
extension type, which Daft maps to its own. Daft pushes the columns a query needs and its
``limit`` down into each task.

>>> import msgpack_arrow.daft as madf                                       # doctest: +SKIP
>>> df = madf.read_msgpack("dumps/*.msgpack", columns=["id", "emb"])       # doctest: +SKIP
>>> df.where(df["id"] > 10).limit(5).to_pydict()                            # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

try:
    import daft
    import pyarrow as pa
    from daft.io.source import DataSource, DataSourceTask
    from daft.recordbatch import RecordBatch
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"msgpack_arrow.daft needs daft and pyarrow ({e}); install them with: pip install 'msgpack-arrow[daft]'"
    ) from e

from . import Layout
from ._files import Plan, plan

__all__ = ["MsgpackSource", "read_msgpack"]


class _FileTask(DataSourceTask):
    """One file: its rows, decoded batch by batch, with the columns and row limit Daft pushed."""

    def __init__(self, plan: Plan, path: str, columns: list[str] | None, limit: int | None) -> None:
        self._plan, self._path, self._columns, self._limit = plan, path, columns, limit
        self._arrow = plan.part_schema(columns)

    @property
    def schema(self) -> daft.Schema:
        return daft.Schema.from_pyarrow_schema(self._arrow)

    async def read(self) -> AsyncIterator[RecordBatch]:
        for batch in self._plan.batches(self._path, self._columns, n_rows=self._limit):
            yield RecordBatch.from_arrow_record_batches([batch], self._arrow)


class MsgpackSource(DataSource):
    """msgpack-numpy files as a Daft source (``MsgpackSource(plan).read()`` is the DataFrame)."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    @property
    def name(self) -> str:
        return "msgpack-arrow"

    @property
    def schema(self) -> daft.Schema:
        return daft.Schema.from_pyarrow_schema(self._plan.part_schema(self._plan.columns))

    async def get_tasks(self, pushdowns: Any) -> AsyncIterator[DataSourceTask]:
        columns = self._plan.columns
        if pushdowns.columns is not None:
            # the pushed projection leaves out the columns only the pushed filter reads; Daft
            # filters the task's rows, so the task gives both
            need = set(pushdowns.columns) | pushdowns.filter_required_column_names()
            names = self._plan.part_schema(columns).names
            # no column (a count): one is still read, for the row count
            columns = [c for c in names if c in need] or names[:1]
        # Daft filters a task's rows after the read and only then applies the limit: the limit
        # is a row count to stop at only when there is no filter
        limit = pushdowns.limit if pushdowns.filters is None else None
        for path in self._plan.paths:
            yield _FileTask(self._plan, path, columns, limit)


def read_msgpack(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    columns: str | Sequence[str] | None = None,
    layout: Layout = "auto",
    schema_overrides: Mapping[str, Any] | pa.Schema | None = None,
    tensor: Literal["array", "extension"] = "extension",
    object_arrays: Literal["error", "raw"] = "error",
    dialect: Literal["auto", "msgpack-numpy", "openpi", "js", "flax"] = "auto",
    batch_size: int = 65536,
    batch_bytes: int = 16 << 20,
    infer_rows: int | None = None,
    include_path_column: bool | str = False,
    storage_options: Mapping[str, Any] | None = None,
) -> daft.DataFrame:
    """Read msgpack-numpy files as a Daft DataFrame, one scan task per file.

    Parameters
    ----------
    source
        A path, a glob (matches in sorted order), a directory (its files, sorted), a list of
        these, or URLs (``s3://``, ``gs://``, ``az://``, ``http[s]://`` streamed by the reader;
        other fsspec URLs read whole), as :func:`msgpack_arrow.dask.read_msgpack` takes them.
    columns
        Only these columns, in this order (Daft also pushes down the columns a query uses).
    tensor
        ``"extension"`` (default here): fixed-shape ndarray columns as Daft tensors.
        ``"array"``: nested fixed-size lists, as :func:`msgpack_arrow.read_msgpack` gives.
    include_path_column
        Add a string column with each row's file path (named ``"path"``, or the name given).
    layout, schema_overrides, object_arrays, dialect, batch_size, batch_bytes, infer_rows, storage_options
        As in :func:`msgpack_arrow.dask.read_msgpack`.

    Notes
    -----
    The schema is inferred from the first file, on the client, and every file is read with it
    (keys the first file lacks are not read; keys missing later are nulls). Each task decodes
    one batch at a time, so a worker's memory follows ``batch_size``/``batch_bytes``, not the
    file size.
    """
    p = plan(who="msgpack_arrow.daft.read_msgpack", **locals())
    return MsgpackSource(p).read()
