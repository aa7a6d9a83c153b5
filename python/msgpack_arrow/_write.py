"""write_msgpack and sink_msgpack: a DataFrame, LazyFrame or Arrow stream as msgpack-numpy, to a
path, a URL, a binary file object or bytes."""

from __future__ import annotations

import warnings
from typing import IO, Any, Literal

import polars as pl

from ._export import pieces as _pieces
from ._internal import ArrowStream
from ._internal import write as _write
from ._internal import write_iter as _write_iter
from ._sources import Layout, PathLike, _is_path, _path, _storage
from .exceptions import EncodeError, TimeZoneWarning
from .expressions import _no_null

#: Polars dtypes with no msgpack-numpy form, and what to do instead (README: "Polars dtypes on write").
_UNWRITABLE = {
    "Object": "Python objects have no msgpack-numpy form (msgpack_numpy would pickle them); "
    "convert them to a supported type first",
    "Int128": "numpy has no 128-bit integers: cast to pl.Int64 if the values fit, or to pl.String",
    "UInt128": "numpy has no 128-bit integers: cast to pl.UInt64 if the values fit, or to pl.String",
    "Decimal": "numpy has no decimal dtype: cast to pl.Float64 (rounds) or pl.String (exact)",
    "Time": "numpy has no time-of-day dtype: cast to pl.Duration (time since midnight) or pl.String",
}


def _unwritable(name: str, dtype: Any) -> tuple[str, Any, str] | None:
    """The first (column path, dtype, hint) inside ``dtype`` that has no msgpack-numpy form."""
    base = dtype.base_type().__name__ if hasattr(dtype, "base_type") else type(dtype).__name__
    if base in _UNWRITABLE:
        return name, dtype, _UNWRITABLE[base]
    if isinstance(dtype, (pl.List, pl.Array)):
        return _unwritable(name, dtype.inner)
    if isinstance(dtype, pl.Struct):
        for f in dtype.fields:
            found = _unwritable(f"{name}.{f.name}", f.dtype)
            if found:
                return found
    return None


_NESTED = (pl.List, pl.Array, pl.Struct)


def _dtypes(df: pl.DataFrame) -> tuple[list[str], list[Any]]:
    """The names and dtypes of the columns: ``df.dtypes`` is a list made at once, where
    ``df.schema`` builds a Schema (7 ms for 10,000 columns); the checks below look at the set of
    dtype classes (a Polars dtype hashes in Python, its class in C) and at nested columns only."""
    return df.columns, _uninterrupted(lambda: df.dtypes)


def _uninterrupted(make: Any) -> Any:
    """``make()``, which has Polars build dtypes: it makes nested ones through their Python
    classes, from its Rust, and a Ctrl-C landing in one of those calls panics there (Polars
    unwraps the KeyboardInterrupt). Raised here as the KeyboardInterrupt it was."""
    try:
        return make()
    except BaseException as e:  # pyo3's PanicException is a BaseException
        if type(e).__name__ == "PanicException" and "KeyboardInterrupt" in str(e):
            raise KeyboardInterrupt from None
        raise


def _distinct(dtypes: Any) -> Any:
    """The distinct dtypes (the thousands of nested columns of a state dict share a few: each is
    looked into once, 4,000 columns 7 -> 2 ms), or all of them if one does not hash."""
    dtypes = list(dtypes)
    try:
        return set(dtypes)
    except TypeError:
        return dtypes


def _holds_null(t: Any) -> bool:
    """Whether ``t`` (in an extension, its storage) holds a Null dtype the write must replace."""
    if isinstance(t, pl.Extension):
        return _no_null(t.ext_storage()) != t.ext_storage()
    return _no_null(t) is not t


def _check_writable(df: pl.DataFrame, columns: tuple[list[str], list[Any]] | None = None) -> None:
    """Refuse (EncodeError, before anything is written) a column no msgpack-numpy value can hold,
    instead of writing something else: Polars exports an Object column as pointers."""
    names, dtypes = columns if columns is not None else _dtypes(df)
    classes = set(map(type, dtypes))
    bad = {c for c in classes if c.__name__ in _UNWRITABLE or issubclass(c, _NESTED)}
    if bad and not any(_unwritable("", t) for t in _distinct(t for t in dtypes if type(t) in bad)):
        return
    for name, dtype in zip(names, dtypes):
        if type(dtype) in bad:
            found = _unwritable(name, dtype)
            if found:
                path, t, hint = found
                raise EncodeError(f"cannot write column {path!r} of dtype {t}: {hint}", column=path)


def _warn_time_zones(columns: tuple[list[str], list[Any]]) -> None:
    """Say so when a zone is dropped (numpy's datetime64 has none: the values are written as UTC
    and read back naive), rather than letting wall-clock times change without a word."""
    if not any(issubclass(c, pl.Datetime) for c in set(map(type, columns[1]))):
        return  # the common case, without a Python test per column (10,000 columns: 2 ms)
    zoned = [
        (n, t.time_zone)
        for n, t in zip(*columns)
        if isinstance(t, pl.Datetime) and t.time_zone is not None and not (t.time_unit == "ns" and t.time_zone == "UTC")
    ]
    if zoned:
        names = ", ".join(f"{n!r} ({z})" for n, z in zoned)
        warnings.warn(
            TimeZoneWarning(
                f"datetime64 has no time zone: column(s) {names} are written as UTC values and read "
                "back without a zone (dt.replace_time_zone('UTC').dt.convert_time_zone(...) restores "
                "it; a Datetime('ns', 'UTC') column is written as msgpack timestamps, read back with it)",
                [n for n, _ in zoned],
            ),
            stacklevel=3,
        )


def _without_null_dtype(df: pl.DataFrame, columns: tuple[list[str], list[Any]] | None = None) -> pl.DataFrame:
    """Polars exports its Null dtype with a buffer, which arrow-rs refuses ("The datatype Null
    doesn't expect buffer"): give such columns an all-null Boolean type, written the same way
    (every value nil)."""
    names, dtypes = columns if columns is not None else _dtypes(df)
    classes = set(map(type, dtypes))
    if pl.Null not in classes and pl.Extension not in classes and not any(issubclass(c, _NESTED) for c in classes):
        return df
    if not any(_holds_null(t) for t in _distinct(dtypes)):
        return df
    casts = {n: u for n, t in zip(names, dtypes) if not isinstance(t, pl.Extension) and (u := _no_null(t)) is not t}
    # (not `df.cast(casts)`: Polars 1.x-2.1 skips a column named "" in a cast's mapping)
    df = df.with_columns(pl.col(n).cast(u) for n, u in casts.items()) if casts else df
    # a frame read with numpy_types="extension": the same inside the extension's storage
    wrapped = [
        df[n].ext.storage().cast(u).ext.to(pl.Extension(t.ext_name(), u, t.ext_metadata()))
        for n, t in zip(names, dtypes)
        if isinstance(t, pl.Extension) and (u := _no_null(t.ext_storage())) != t.ext_storage()
    ]
    return df.with_columns(wrapped) if wrapped else df


def write_msgpack(
    df: pl.DataFrame | pl.LazyFrame | ArrowStream | Any,
    target: PathLike | IO[bytes] | None = None,
    *,
    layout: Layout | None = None,
    aligned: bool = False,
    missing: Literal["auto", "nil", "omit"] = "auto",
    dialect: Literal["auto", "msgpack-numpy", "openpi"] = "auto",
    storage_options: dict[str, Any] | None = None,
    fsync: bool = True,
    index: bool = False,
) -> bytes | None:
    """Write a DataFrame (or any Arrow data) as msgpack-numpy, readable by ``msgpack_numpy``.

    Parameters
    ----------
    df
        A Polars DataFrame (a LazyFrame is collected), or anything with ``__arrow_c_stream__``
        (a pyarrow Table, :func:`read_arrow`'s result, ...).
    target
        A path: written to a temporary file beside it and renamed over it when complete, so a
        failed write leaves the previous file untouched. A URL (``s3://``, ``gs://``, ``az://``,
        ...; see ``storage_options`` in :func:`read_msgpack`): a multipart upload, completed only
        when the output is whole, else aborted (the previous object stays as it was). A binary
        file object: the bytes are written to it. ``None`` (default, as Polars' ``write_csv``): the
        bytes are returned (records or values of more than 8 MiB are encoded in parts, one per
        thread, then joined: the same bytes one writer makes).
    layout
        ``"records"`` (one map per row), ``"columns"`` (one map of name -> ndarray/list),
        ``"values"`` (one column), or ``"auto"``: the layout recorded in the Arrow schema by
        :func:`read_arrow` (else ``"records"``). Default ``None``: ``"records"``, except for a
        frame read with ``numpy_types="extension"``, which is written in the layout it was read
        in (``"auto"``).
    aligned
        Place every ndarray payload at an offset that is a multiple of 64, using only wider
        (still valid) msgpack encodings, so readers can view it in place. Default ``False``:
        byte-identical to what Python ``msgpack_numpy`` writes.
    missing
        A null in a record: ``"nil"`` writes the key with nil, ``"omit"`` leaves the key out
        (sparse records, as producers whose records have different key sets expect back), and
        ``"auto"`` (default) omits where :func:`read_arrow` found absent keys in the file read
        (the records' own keys, and apart from them the keys of maps nested in records), else
        writes nil. ``"omit"`` leaves out null fields of nested maps too. A key present as nil and an absent one cannot be told apart. So that a
        re-read finds every column in its order, a key written for the first time brings the
        keys before it that were never written (as nil), and a column null everywhere
        (``pl.Null``) is written as nil once.
    dialect
        The form of ndarrays and numpy scalars: ``"msgpack-numpy"`` (``{nd, type, kind, shape,
        data}``), ``"openpi"`` (openpi_client's ``{__ndarray__, data, dtype, shape}`` and
        ``{__npgeneric__, data, dtype}``, what its ``unpackb`` loads; complex, structured and
        object dtypes have no form there and are an error), or ``"auto"`` (default): the dialect
        :func:`read_arrow` recorded for the file read (schema metadata
        ``msgpack_arrow.dialect``), else msgpack-numpy (also when ``aligned``). A Polars
        DataFrame carries no schema metadata: name the dialect.
    storage_options
        For a URL target, as in :func:`read_msgpack`.
    fsync
        A path target: flush the file to the disk before renaming it into place (default
        ``True``), so it survives a power loss once the call returns. ``False`` skips that (a
        316 MB write: 0.37 s instead of 1.09 s on a virtual disk); other processes still see the
        old file or the whole new one, never a part, but a power loss soon after may leave the
        new file empty or partial on some file systems.
    index
        A path target of plain msgpack: also write ``TARGET.offsets``, the byte offset of every
        record as big-endian uint64s (datadings' record index: one more for the end), so that
        ``read_msgpack(TARGET, rows=slice(a, b))`` goes straight to row ``a``. A file that had
        an index gets a new one whatever this says (the old one would describe the old file).

    Notes
    -----
    Numpy dtypes: a Polars dtype that names a numpy dtype (native-order numerics, bool, str,
    bytes, and Array/List/Struct of those) is written as that dtype, so
    ``msgpack_numpy.unpackb`` gives it back. What only Arrow field metadata records (big-endian
    data, ``<U5`` widths, complex numbers, ...) is lost in a Polars DataFrame: use
    :func:`read_arrow` to keep it. A List column of narrow numbers (int8..uint32, float16/32),
    which no plain msgpack value reads as, is written as one ndarray per row (ragged tensors)
    when every row can be one; a List of such Lists, as a list of ndarrays per row when every
    item can be one (a record's token arrays of different lengths).
    """
    if isinstance(df, pl.LazyFrame):
        df = df.collect()
    elif isinstance(df, pl.Series):
        df = df.to_frame()
    # a DataFrame is in memory: the writer looks at all of it first, so List columns that held
    # ndarrays (narrow numbers, every row rectangular) are written as ndarrays again
    whole = isinstance(df, pl.DataFrame)
    if whole:
        columns = _dtypes(df)  # once: thousands of columns cost milliseconds
        _check_writable(df, columns)
        _warn_time_zones(columns)
        df = _pieces(_without_null_dtype(df, columns))
    # index=True without a path target: a ValueError from the writer, before anything is written
    opts = dict(layout=layout, aligned=aligned, whole_table=whole, missing=missing, dialect=dialect, index=index)
    if target is None and not whole and _in_memory(df):
        # its batches are held anyway: the bytes are made as a DataFrame's are (in parts)
        opts["in_memory"] = True
    if storage_options is not None:
        opts["storage_options"] = _storage(storage_options)
    if target is None:
        return _write(df, None, **opts)
    if _is_path(target):
        _write(df, _path(target), fsync=fsync, **opts)
        return None
    if not callable(getattr(target, "write", None)):
        raise TypeError(f"target must be a path or a binary file object, got {type(target).__name__}")
    # written in chunks as encoded: the whole output is never held twice
    _write(df, None, target=target, **opts)
    return None


def _in_memory(data: Any) -> bool:
    """A pyarrow Table or RecordBatch, or a stream :func:`read_arrow` made: batches already in
    memory (a stream from elsewhere may be produced as it is read)."""
    t = type(data)
    return isinstance(data, ArrowStream) or (
        t.__module__.split(".")[0] == "pyarrow" and t.__name__ in ("Table", "RecordBatch")
    )


def sink_msgpack(
    lf: pl.LazyFrame,
    target: PathLike | IO[bytes],
    *,
    layout: Layout | None = None,
    aligned: bool = False,
    chunk_size: int | None = None,
    missing: Literal["auto", "nil", "omit"] = "auto",
    dialect: Literal["auto", "msgpack-numpy", "openpi"] = "auto",
    storage_options: dict[str, Any] | None = None,
    fsync: bool = True,
    index: bool = False,
) -> None:
    """Write a LazyFrame as msgpack-numpy in batches, without collecting it: a query larger than
    memory streams through, one batch (Polars' ``collect_batches()``) in memory at a time.

    Parameters
    ----------
    lf
        The query (a DataFrame is written as its lazy form).
    target
        A path (written atomically, as :func:`write_msgpack`: a temporary file beside it, renamed
        over it when complete; on any error, Ctrl-C included, the previous file stays) or a binary
        file object (written in chunks as the batches are encoded).
    layout
        ``"records"`` (default) or ``"values"``, streamed; ``"columns"`` is one map, built whole
        by the writer (bounded by the table, not the batch).
    aligned
        As :func:`write_msgpack`.
    chunk_size
        Rows per batch (Polars' default when None).
    missing, dialect, fsync, index
        As :func:`write_msgpack`.

    Unlike :func:`write_msgpack`, which sees the whole table, a List column of narrow numbers is
    written as lists (a stream cannot know that every later row would fit an ndarray).

    >>> import io, polars as pl, msgpack_numpy as mn
    >>> buf = io.BytesIO()
    >>> sink_msgpack(pl.LazyFrame({"x": [1, 2, 3]}).filter(pl.col("x") > 1), buf)
    >>> list(mn.Unpacker(io.BytesIO(buf.getvalue()), raw=False))
    [{'x': 2}, {'x': 3}]
    """
    if isinstance(lf, pl.DataFrame):
        lf = lf.lazy()
    if not isinstance(lf, pl.LazyFrame):
        raise TypeError(f"sink_msgpack takes a LazyFrame, got {type(lf).__name__}")
    schema = _uninterrupted(lf.collect_schema)
    empty = _without_null_dtype(pl.DataFrame(schema=schema))
    _check_writable(empty)
    batches = (_without_null_dtype(b) for b in lf.collect_batches(chunk_size=chunk_size))
    opts = dict(layout=layout, aligned=aligned, missing=missing, dialect=dialect, index=index)
    if storage_options is not None:
        opts["storage_options"] = _storage(storage_options)
    if _is_path(target):
        _write_iter(empty, batches, _path(target), fsync=fsync, **opts)
        return
    if not callable(getattr(target, "write", None)):
        raise TypeError(f"target must be a path or a binary file object, got {type(target).__name__}")
    _write_iter(empty, batches, None, target, **opts)
