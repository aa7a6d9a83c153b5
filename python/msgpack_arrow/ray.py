"""Ray Datasets from msgpack-numpy files: a Ray Data ``Datasource``, one read task per file.

Needs the ``ray`` extra (``pip install 'msgpack-arrow[ray]'``). Fixed-shape ndarray columns are
read as Arrow's ``arrow.fixed_shape_tensor`` extension type (``pa.FixedShapeTensorType``), so
``iter_batches(batch_format="numpy")`` and ``iter_torch_batches()`` give ``(rows, *shape)``
arrays and tensors. Ray pushes the columns a query selects (``select_columns``) and its
``limit`` down into each task.

>>> import ray, msgpack_arrow.ray as mar                                  # doctest: +SKIP
>>> ds = mar.read_msgpack("s3://bucket/dumps/*.msgpack")                  # doctest: +SKIP
>>> for batch in ds.iter_torch_batches(batch_size=256): ...               # doctest: +SKIP
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

try:
    import pyarrow as pa
    import ray.data
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"msgpack_arrow.ray needs ray[data] and pyarrow ({e}); install them with: pip install 'msgpack-arrow[ray]'"
    ) from e

from . import Layout
from ._files import Plan, plan

__all__ = ["MsgpackDatasource", "read_msgpack"]


class MsgpackDatasource(Datasource):
    """msgpack-numpy files as a Ray Data source (``ray.data.read_datasource(MsgpackDatasource(plan))``)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self._plan = plan
        # what Ray's projection API reads back (get_projection_map); None: every column
        self._projection_map = None

    def get_name(self) -> str:
        return "ReadMsgpack"

    def supports_projection_pushdown(self) -> bool:
        return True

    def apply_projection(self, projection_map: dict[str, str] | None) -> MsgpackDatasource:
        # the read stage only prunes (Ray keeps renames in a Project above it): the columns are
        # the map's keys, in its order
        clone = copy.copy(self)
        clone._projection_map = self._combine_projection_map(
            self._projection_map, None if projection_map is None else {k: k for k in projection_map}
        )
        if clone._projection_map is not None:
            names = self._plan.part_schema(self._plan.columns).names
            # no column (a count): Ray loses the row count of a block without columns, so one
            # column is still read
            cols = [c for c in clone._projection_map if c in names] or names[:1]
            clone._plan = copy.copy(self._plan)
            clone._plan.columns = cols
        return clone

    def estimate_inmemory_data_size(self) -> int | None:
        if self._plan.fs is not None or any("://" in p for p in self._plan.paths):
            return None
        # decoded tables are about the size of their msgpack-numpy files
        return sum(os.path.getsize(p) for p in self._plan.paths)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        p = self._plan
        schema = p.part_schema(p.columns)
        local = p.fs is None and not any("://" in x for x in p.paths)

        def read(path: str) -> Iterable[pa.Table]:
            for batch in p.batches(path, p.columns, n_rows=per_task_row_limit):
                yield pa.Table.from_batches([batch])

        tasks = []
        for path in p.paths:
            meta = BlockMetadata(
                num_rows=None,
                size_bytes=os.path.getsize(path) if local else None,
                input_files=[path],
                exec_stats=None,
            )
            tasks.append(
                ReadTask(lambda path=path: read(path), meta, schema=schema, per_task_row_limit=per_task_row_limit)
            )
        return tasks


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
    **read_args: Any,
) -> ray.data.Dataset:
    """Read msgpack-numpy files as a Ray Dataset, one read task per file (each yields one block
    per decoded batch, so a task's memory follows ``batch_size``/``batch_bytes``).

    Parameters
    ----------
    tensor
        ``"extension"`` (default here): fixed-shape ndarray columns as ``pa.FixedShapeTensorType``,
        which Ray turns into ``(rows, *shape)`` ndarrays and torch tensors. ``"array"``: nested
        fixed-size lists.
    read_args
        Passed to ``ray.data.read_datasource`` (e.g. ``ray_remote_args``, ``concurrency``).
    source, columns, layout, schema_overrides, object_arrays, dialect, batch_size, batch_bytes, infer_rows, include_path_column, storage_options
        As in :func:`msgpack_arrow.dask.read_msgpack` (the schema comes from the first file).
    """
    args = dict(locals())
    del args["read_args"]
    p = plan(who="msgpack_arrow.ray.read_msgpack", **args)
    return ray.data.read_datasource(MsgpackDatasource(p), **read_args)
