"""Tensor columns out of Polars: an ``Array`` column as one n-d numpy array or torch tensor.

A column read from ndarrays of one shape ``s`` is ``pl.Array(T, s)``: its values are one
contiguous buffer of ``rows * prod(s)`` elements, so ``to_numpy`` can return a
``(rows, *s)`` view of it without copying (no nulls, one chunk). ``to_torch`` shares that
memory with torch through numpy (``torch.from_numpy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    import numpy as np

__all__ = ["to_numpy", "to_torch"]


def _shape(dtype: Any, name: str) -> tuple[list[int], Any]:
    """The fixed shape of an ``Array`` dtype (outermost axis first) and its element dtype."""
    shape: list[int] = []
    inner = dtype
    while isinstance(inner, pl.Array):
        shape.append(inner.size)
        inner = inner.inner
    if not shape:
        hint = " (ragged rows: shapes differ, use .to_list())" if isinstance(dtype, pl.List) else ""
        raise TypeError(f"column {name!r} is {dtype}, not an Array (fixed-shape tensor) column{hint}")
    if not inner.is_numeric() and inner != pl.Boolean:
        raise TypeError(f"column {name!r} holds {inner}, not numbers: numpy/torch need a numeric Array")
    return shape, inner


def _has_nulls(s: pl.Series) -> bool:
    """Nulls at any level: whole rows, sub-arrays, or elements."""
    if s.null_count():
        return True
    while isinstance(s.dtype, pl.Array):
        s = s.explode()
        if s.null_count():
            return True
    return False


def to_numpy(series: pl.Series, *, writable: bool = False, fill_value: Any = None) -> np.ndarray:
    """An ``Array`` column as one numpy array of shape ``(rows, *shape)``.

    Zero-copy (a read-only view of the column's memory, valid while the Series lives) when the
    column has no nulls and one chunk; otherwise, or with ``writable=True``, a copy.

    Parameters
    ----------
    series
        A ``pl.Array`` column of numbers (``read_msgpack`` gives one for ndarrays of one shape).
    writable
        Return a writable copy instead of a read-only view.
    fill_value
        Put this value where a row or an element is null. Without it, nulls are a ``ValueError``
        (numpy has no null; a silent NaN would hide them).

    >>> import polars as pl, numpy as np, msgpack_arrow as ma
    >>> s = pl.Series("emb", np.arange(6, dtype="<f4").reshape(3, 2))
    >>> a = ma.to_numpy(s)
    >>> a.shape, a.dtype, a.flags.writeable
    ((3, 2), dtype('float32'), False)
    >>> ma.to_numpy(pl.Series("e", [[1.0, 2.0], None], dtype=pl.Array(pl.Float64, 2)), fill_value=0.0)
    array([[1., 2.],
           [0., 0.]])
    """
    import numpy as np

    if not isinstance(series, pl.Series):
        raise TypeError(f"to_numpy takes a polars Series, got {type(series).__name__}")
    shape, inner = _shape(series.dtype, series.name)
    if _has_nulls(series):
        if fill_value is None:
            raise ValueError(
                f"column {series.name!r} has nulls, which numpy cannot hold: pass fill_value=... "
                "or drop them first (series.drop_nulls())"
            )
        return _filled(series, shape, inner, fill_value)
    if series.n_chunks() > 1:
        series = series.rechunk()  # one copy, inevitable: the chunks are separate buffers
    out = series.to_numpy(allow_copy=True)
    if out.shape != (series.len(), *shape):  # Polars gives (rows, *shape) for Array; be sure
        out = out.reshape((series.len(), *shape))
    if writable:
        out = np.array(out, copy=True)
    return out


def _filled(series: pl.Series, shape: list[int], inner: Any, fill_value: Any) -> np.ndarray:
    """A copy with nulls (whole rows, sub-arrays, elements) replaced by ``fill_value``. Goes
    through Python lists: only this path, which copies anyway, pays for it."""
    import numpy as np

    def fill(v: Any, depth: int) -> Any:
        if v is None:
            return np.full(shape[depth:], fill_value).tolist() if depth < len(shape) else fill_value
        if depth == len(shape):
            return v
        return [fill(x, depth + 1) for x in v]

    np_dtype = pl.Series([], dtype=inner).to_numpy().dtype
    rows = [fill(r, 0) for r in series.to_list()]
    return np.array(rows, dtype=np_dtype).reshape((series.len(), *shape))


def to_torch(series: pl.Series, *, writable: bool = False, fill_value: Any = None) -> Any:
    """An ``Array`` column as one torch tensor of shape ``(rows, *shape)``, sharing memory with the
    column where :func:`to_numpy` can (torch is an optional dependency: ``pip install torch``).

    torch tensors have no read-only flag: do not write into a shared tensor (or pass
    ``writable=True`` for a copy of its own). Nulls: as :func:`to_numpy`.
    """
    try:
        import torch
    except ImportError as e:
        raise ImportError("to_torch needs torch: pip install torch") from e
    import warnings

    a = to_numpy(series, writable=writable, fill_value=fill_value)
    try:
        # DLPack: the tensor views the column's memory (numpy 2 exports read-only arrays too)
        return torch.from_dlpack(a)
    except (BufferError, TypeError, RuntimeError):
        with warnings.catch_warnings():
            # torch warns that the array is read-only: documented above
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(a)
