"""The ``msgpack`` namespace of Polars expressions and Series: msgpack-numpy blobs <-> typed columns.

Importing :mod:`msgpack_arrow` registers it::

    import polars as pl, msgpack_arrow

    df.with_columns(pl.col("blob").msgpack.decode(pl.Array(pl.Float32, 768)))
    df.select(pl.col("emb").msgpack.encode())          # one msgpack_numpy blob per row
    df["blob"].msgpack.decode()                          # Series: the dtype is inferred

Two implementations:

- ``pl.Expr.msgpack`` is a Polars expression plugin (pyo3-polars, compiled against the polars
  crate 0.55): it runs inside Polars in ``select``, ``with_columns``, ``group_by().agg`` and the
  streaming engine. It works with the Polars versions in :data:`TESTED_POLARS` only (the plugin
  interface has no version check of its own), and ``decode`` needs its ``dtype``: Polars plans a
  query before it sees any data, and a plugin must state its output type from the input types
  alone (a plugin cannot return an "unknown" type).
- ``pl.Series.msgpack`` decodes and encodes eagerly through the Arrow C stream interface (like
  ``read_msgpack``), works with any Polars version, and infers the dtype of ``decode()`` from all
  rows. ``s.msgpack.infer_dtype()`` gives that dtype without decoding, to pass to the expression.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from polars.plugins import register_plugin_function

from . import _internal
from ._export import pieces

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

__all__ = ["TESTED_POLARS", "MsgpackExprNamespace", "MsgpackSeriesNamespace"]

#: The Polars versions (``>=lo,<hi``) the expression plugin is built and tested for; the same
#: range as the ``polars`` requirement in pyproject.toml. The plugin is compiled against the
#: polars crate 0.55 (pyo3-polars 0.28); Python Polars 2.0.0 and 2.1.0 both load it and pass every
#: test (CI runs python/tests with each). 1.44 loads it too, but reports IO-source errors differently.
TESTED_POLARS = ((2, 0), (2, 2))

#: Set this environment variable to ``1`` to use the expressions with an untested Polars anyway.
ALLOW_ENV = "MSGPACK_ARROW_ANY_POLARS"

_PLUGIN = Path(_internal.__file__)


def _polars_version_ok(version: str) -> bool:
    m = re.match(r"(\d+)\.(\d+)", version)
    lo, hi = TESTED_POLARS
    return bool(m) and lo <= (int(m[1]), int(m[2])) < hi


#: How to get the plugin when this build left it out (it needs the polars crates, most of a cold build).
PLUGIN_INSTALL = 'MATURIN_PEP517_ARGS="--features plugin" pip install ./python'


def _check_plugin_polars(version: str | None = None) -> None:
    """Raise unless this build has the expression plugin and the installed Polars can load it (or
    the user opted in to an untested Polars)."""
    if not _internal.HAS_PLUGIN:
        raise RuntimeError(
            "pl.col(...).msgpack expressions need the expression plugin, which this build of "
            f"msgpack_arrow leaves out. Rebuild with it ({PLUGIN_INSTALL}), or use the Series "
            "methods (s.msgpack.decode(), s.msgpack.encode()), which need no plugin."
        )
    version = pl.__version__ if version is None else version
    if _polars_version_ok(version) or os.environ.get(ALLOW_ENV) == "1":
        return
    lo, hi = TESTED_POLARS
    raise RuntimeError(
        f"the .msgpack expressions of msgpack_arrow {_internal.__version__} are a Polars plugin "
        f"built for polars >={lo[0]}.{lo[1]},<{hi[0]}.{hi[1]}; polars {version} is installed. "
        f"Install a polars in that range, or use the Series methods (s.msgpack.decode(), "
        f"s.msgpack.encode()) and read_msgpack/write_msgpack, which work with any version. "
        f"Set {ALLOW_ENV}=1 to try the plugin anyway."
    )


#: What ``decode`` can produce: numpy's types as Polars holds them (SPEC 3), nested.
_DECODABLE = (
    pl.Boolean, pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64,
    pl.Float16, pl.Float32, pl.Float64, pl.String, pl.Binary, pl.Date, pl.Datetime, pl.Duration,
    pl.Null, pl.List, pl.Array, pl.Struct,
)


def _check_decodable(dtype: Any, top: Any = None) -> None:
    top = dtype if top is None else top
    base = dtype if isinstance(dtype, type) else type(dtype)
    if not issubclass(base, pl.DataType):
        return  # not a dtype at all: _dtype_token says so
    if not issubclass(base, _DECODABLE):
        raise TypeError(
            f"msgpack.decode cannot produce {top!r}: {dtype!r} holds no msgpack-numpy value "
            "(decode to pl.String / pl.Int64 / pl.Float64 ... and cast afterwards)"
        )
    if isinstance(dtype, (pl.List, pl.Array)):
        _check_decodable(dtype.inner, top)
    elif isinstance(dtype, pl.Struct):
        for f in dtype.fields:
            _check_decodable(f.dtype, top)


def _dtype_token(dtype: PolarsDataType) -> str:
    """The target dtype as the plugin reads it: Polars' own Arrow type for it, as text."""
    _check_decodable(dtype)
    try:
        holder = pl.DataFrame(schema={"value": dtype})
    except Exception as e:  # noqa: BLE001 - a clear message for any invalid dtype
        raise TypeError(f"dtype must be a polars data type, got {dtype!r}") from e
    return _internal.dtype_token(holder)


def _is_null(dt: Any) -> bool:
    """Polars' Null dtype, its class or an instance (without Polars' `==`, slow in a loop)."""
    return dt is pl.Null or type(dt) is pl.Null


def _no_null(dt: Any) -> Any:
    # Polars exports its Null dtype with a buffer, which arrow-rs refuses; all-null Boolean
    # values encode the same way (nil). `dt` itself where it holds no Null: nothing is built for
    # the nested columns every write looks at (building them cost more than a small frame's write)
    if _is_null(dt):
        return pl.Boolean
    if isinstance(dt, pl.List):
        # items of no type (a msgpack [] read as List(Null)) as String: a list of them is
        # written as a msgpack list, as read; a list of Booleans may be an ndarray ('|b1')
        if _is_null(dt.inner):
            return pl.List(pl.String)
        inner = _no_null(dt.inner)
        return dt if inner is dt.inner else pl.List(inner)
    if isinstance(dt, pl.Array):
        inner = _no_null(dt.inner)
        return dt if inner is dt.inner else pl.Array(inner, dt.size)
    if isinstance(dt, pl.Struct):
        kids = [(f, _no_null(f.dtype)) for f in dt.fields]
        return dt if all(u is f.dtype for f, u in kids) else pl.Struct({f.name: u for f, u in kids})
    return dt


def _frame(s: pl.Series) -> list[pl.DataFrame]:
    dt = _no_null(s.dtype)
    return pieces((s.cast(dt) if dt != s.dtype else s).to_frame())


def _blob_frame(s: pl.Series) -> list[pl.DataFrame]:
    # an all-null Series of dtype Null (pl.Series([None, None])) holds no blob: Binary nulls
    return pieces((s.cast(pl.Binary) if s.dtype == pl.Null else s).to_frame())


@pl.api.register_expr_namespace("msgpack")
class MsgpackExprNamespace:
    """``pl.col(c).msgpack``: msgpack-numpy blobs (Binary, one object per row) <-> typed values."""

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def decode(self, dtype: PolarsDataType | None = None) -> pl.Expr:
        """Decode a Binary column of msgpack-numpy blobs (one msgpack object per row: an ndarray,
        a numpy scalar, a map, a list, a plain value) into values of ``dtype``.

        ``dtype`` is required in an expression (Polars needs the output type before it sees the
        data): take it from ``df["col"].msgpack.infer_dtype()``, or use
        ``df["col"].msgpack.decode()`` to infer it. Values are converted to ``dtype`` as
        ``schema_overrides`` does for ``read_msgpack``: a value that does not fit is an error;
        struct fields are matched by name (a map key missing from ``dtype`` is an error, a field
        missing from a map is null). Null rows stay null. A malformed blob raises
        ``polars.exceptions.ComputeError`` naming the row and byte.

        >>> import msgpack_numpy as mn, numpy as np
        >>> df = pl.DataFrame({"b": [mn.packb(np.array([1.5, 2.5], dtype="<f4")), None]})
        >>> df.select(pl.col("b").msgpack.decode(pl.Array(pl.Float32, 2)))["b"].to_list()
        [[1.5, 2.5], None]
        """
        if dtype is None:
            raise TypeError(
                "pl.col(...).msgpack.decode() needs dtype=...: Polars must know the output type "
                "before it runs the query. Get it from the data with "
                'df["col"].msgpack.infer_dtype(), or decode a Series eagerly with '
                'df["col"].msgpack.decode(), which infers it.'
            )
        _check_plugin_polars()
        return register_plugin_function(
            plugin_path=_PLUGIN,
            function_name="msgpack_decode",
            args=[self._expr],
            kwargs={"dtype": _dtype_token(dtype)},
            is_elementwise=True,
        )

    def encode(self) -> pl.Expr:
        """Encode each value as one msgpack-numpy blob (Binary), as ``msgpack_numpy.packb``
        writes it, so ``msgpack_numpy.unpackb(blob)`` gives it back: numeric ``Array`` and
        ``List`` values become ndarrays of their dtype, ``Struct`` values maps, strings str.
        Null rows stay null.

        The plugin is built without Polars' Categorical/Enum, Decimal, 128-bit integer and
        Object types, and numpy has no Time type: such a column is an error naming it when the
        query is planned. Cast it first (``.cast(pl.String)``), or use
        ``Series.msgpack.encode()``, which writes Categorical/Enum as strings.

        >>> import msgpack_numpy as mn
        >>> df = pl.DataFrame({"x": [[1.0, 2.0]]}, schema={"x": pl.Array(pl.Float32, 2)})
        >>> mn.unpackb(df.select(pl.col("x").msgpack.encode()).item())
        array([1., 2.], dtype=float32)
        """
        _check_plugin_polars()
        return register_plugin_function(
            plugin_path=_PLUGIN,
            function_name="msgpack_encode",
            args=[self._expr],
            is_elementwise=True,
        )


@pl.api.register_series_namespace("msgpack")
class MsgpackSeriesNamespace:
    """``series.msgpack``: the eager counterparts of the expressions (any Polars version).

    Errors are :class:`msgpack_arrow.DecodeError` / :class:`msgpack_arrow.EncodeError`, with the
    row in ``e.record`` and the byte offset inside that row's blob in ``e.offset``.
    """

    def __init__(self, s: pl.Series) -> None:
        self._s = s

    def decode(self, dtype: PolarsDataType | None = None) -> pl.Series:
        """Decode a Binary Series of msgpack-numpy blobs; ``dtype=None`` infers it from all rows
        (as ``read_msgpack(..., layout="values")`` would for the concatenated blobs).

        >>> import msgpack_numpy as mn, numpy as np
        >>> s = pl.Series("b", [mn.packb(np.arange(3, dtype=">i2")), mn.packb(np.arange(3, dtype=">i2"))])
        >>> s.msgpack.decode()
        shape: (2,)
        Series: 'b' [array[i16, 3]]
        [
        	[0, 1, 2]
        	[0, 1, 2]
        ]
        """
        token = None if dtype is None else _dtype_token(dtype)
        out = pl.DataFrame(_internal.decode_blobs(_blob_frame(self._s), token)).to_series(0)
        if dtype is not None and out.dtype != dtype:
            out = out.cast(dtype)
        return out

    def infer_dtype(self) -> pl.DataType:
        """The dtype ``decode()`` gives, without decoding (``Null`` when every row is null).

        >>> import msgpack_numpy as mn
        >>> pl.Series([mn.packb({"a": 1, "b": "x"})]).msgpack.infer_dtype()
        Struct({'a': Int64, 'b': String})
        """
        return pl.DataFrame(_internal.infer_blobs(_blob_frame(self._s))).dtypes[0]

    def encode(self) -> pl.Series:
        """Encode each value as one msgpack-numpy blob (Binary; null rows stay null)."""
        if self._s.dtype == pl.Object:
            raise TypeError(
                "msgpack.encode: an Object column holds Python objects, not values msgpack-numpy "
                "can write (convert them first)"
            )
        from ._write import _check_writable  # (the writer imports this module)

        _check_writable(self._s.to_frame())
        out = pl.DataFrame(_internal.encode_blobs(_frame(self._s))).to_series(0)
        return out.cast(pl.Binary) if out.dtype != pl.Binary else out
