"""Read and write msgpack-numpy (NumPy arrays inside MessagePack) as Polars DataFrames and Arrow.

The decoding and encoding run in Rust (the ``msgpack-arrow`` crate) with the GIL released; data
reaches Polars and pyarrow through the Arrow C stream interface, without a copy.

>>> import io, polars as pl, msgpack_arrow as ma
>>> df = pl.DataFrame({"id": [1, 2], "emb": [[0.5, 1.0], [1.5, 2.0]]},
...                   schema={"id": pl.Int64, "emb": pl.Array(pl.Float32, 2)})
>>> buf = io.BytesIO()
>>> ma.write_msgpack(df, buf)
>>> ma.read_msgpack(buf.getvalue()).equals(df)
True
"""

from __future__ import annotations

import contextlib
import glob as _glob
import hashlib
import inspect
import os
import stat as _stat
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import polars as pl

from ._internal import MSGPACK_EXTENSIONS as _EXTS
from ._internal import REMOTE, ArrowStream, Reader, __version__  # noqa: F401 (REMOTE: _files uses it)
from ._internal import DEFAULT_HOLD_DECOMPRESSED as _DEFAULT_HOLD
from ._internal import decompress_whole as _decompress_whole
from ._internal import expand_url as _expand_url
from ._sources import (
    Layout,
    PathLike,
    SchemaOverrides,
    Source,
    _cast,
    _columns,
    _has_indices,
    _polars_casts,
    _is_path,
    _is_url,
    _one_source,
    _overrides,
    _path,
    _storage,
)
from . import _unify
from ._write import sink_msgpack, write_msgpack
from .exceptions import DecodeError, EncodeError, MsgpackArrowError, TimeZoneWarning, TruncatedInputWarning, _Positioned

# registers the `msgpack` namespace of pl.Expr and pl.Series (decode/encode blobs)
from .expressions import TESTED_POLARS, MsgpackExprNamespace, MsgpackSeriesNamespace
from .tensors import to_numpy, to_torch

__all__ = [
    "read_msgpack",
    "read_arrow",
    "scan_msgpack",
    "write_msgpack",
    "sink_msgpack",
    "to_numpy",
    "to_torch",
    "ArrowStream",
    "Reader",
    "MsgpackArrowError",
    "DecodeError",
    "EncodeError",
    "TruncatedInputWarning",
    "TimeZoneWarning",
    "MsgpackExprNamespace",
    "MsgpackSeriesNamespace",
    "TESTED_POLARS",
    "__version__",
]


def __dir__() -> list[str]:
    # what `dir(ma)` and tab completion offer: the API and its public modules, not the modules
    # this one imports to do its work (`os`, `re`, `pl`, ...)
    return sorted({*__all__, "MIN_POLARS", "exceptions", "expressions", "tensors"})


#: The oldest Polars the package is tested with. Reading, scanning and writing use the Arrow C
#: stream interface, which later versions keep: there is no upper bound. Only the optional
#: ``pl.col(c).msgpack`` expression plugin is tied to a range (:data:`TESTED_POLARS`).
MIN_POLARS = (2, 0)


def _check_polars_version(version: str = pl.__version__) -> bool:
    """Warn when Polars is older than :data:`MIN_POLARS`; True when it is recent enough."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m and (int(m[1]), int(m[2])) >= MIN_POLARS:
        return True
    warnings.warn(
        f"msgpack_arrow {__version__} needs polars >={MIN_POLARS[0]}.{MIN_POLARS[1]}; polars "
        f"{version} is installed: upgrade it (pip install -U polars)",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


_check_polars_version()


_GLOB_CHARS = re.compile(r"[*?\[]")

#: The file names a directory source expands to (msgpack files, plain or compressed), as in the CLI.
MSGPACK_EXTENSIONS: tuple[str, ...] = tuple(_EXTS)


def _reader(source, *, columns=None, infer_rows=None, storage_options=None, numpy_types="polars", **kw) -> Reader:
    if infer_rows is not None and infer_rows < 1:
        raise ValueError("infer_rows must be >= 1 (None: infer from every row)")
    if numpy_types not in ("polars", "extension"):
        raise ValueError(f"numpy_types must be 'polars' or 'extension', got {numpy_types!r}")
    return Reader(
        source,
        columns=_columns(columns),
        infer_rows=infer_rows,
        storage_options=_storage(storage_options),
        numpy_extension=numpy_types == "extension",
        **kw,
    )


def _warn_truncation(reader: Reader, source: Any) -> None:
    """With on_truncated="keep": say where an input was cut (once its reader knows)."""
    cut = reader.truncation
    if cut is None:
        return
    offset, records = cut
    name = source if isinstance(source, str) else "input"
    msg = f"{name}: input cut at byte {offset}: kept the {records} complete record(s) before it"
    warnings.warn(TruncatedInputWarning(msg, offset, records), stacklevel=3)


@contextlib.contextmanager
def _naming(source: Any, in_message: bool = False) -> Iterator[None]:
    """Errors raised inside carry the file they came from in ``e.path`` and, when several files
    are read (``in_message``), at the start of the message."""
    try:
        yield
    except _Positioned as e:
        if isinstance(source, str) and e.path is None:
            if in_message:
                raise e.with_path(source) from None
            e.path = source
        raise


@contextlib.contextmanager
def _first_file_types(later: bool) -> Iterator[None]:
    """A later file of a scan whose keys or types the first file's schema lacks: the error says
    where that schema came from (the reader's own message speaks of a schema it was given)."""
    try:
        yield
    except DecodeError as e:
        msg = e.args[0] if e.args else ""
        if not later or not ("type conflict" in msg or "not in the schema the reader was given" in msg):
            raise
        hint = (
            "every file is read with the first one's columns and types; schema= gives others, and "
            "read_msgpack types files that differ as rows of one file may together"
        )
        raise type(e)(f"{msg} ({hint})", e.offset, e.record, e.column, e.path) from None


def _is_multi(source: Any) -> bool:
    """A list of sources, a directory or a glob pattern (several files, read as scan_msgpack does)."""
    if isinstance(source, (list, tuple)):
        return True
    if not _is_path(source):
        return False
    p = _path(source)
    if _is_url(p):
        return bool(_GLOB_CHARS.search(p))
    return os.path.isdir(p) or bool(_GLOB_CHARS.search(p) and not os.path.exists(p))


#: Polars' row index type (UInt32, or UInt64 with the 64-bit runtime)
def _idx_dtype() -> Any:
    return pl.DataFrame({"a": [0]}).with_row_index("i").schema["i"]


def _virtual(
    df: pl.DataFrame, row_index_name: str | None, row0: int, include_file_paths: str | None, path: Any
) -> pl.DataFrame:
    """Add the row index (first) and the file path (last) columns, as Polars' readers do."""
    if row_index_name is not None:
        df = df.with_row_index(row_index_name, offset=row0)
    if include_file_paths is not None:
        df = df.with_columns(pl.lit(path, dtype=pl.String).alias(include_file_paths))
    return df


def read_arrow(
    source: Source,
    *,
    layout: Layout = "auto",
    columns: str | Sequence[str] | None = None,
    n_rows: int | None = None,
    rows: slice | range | None = None,
    schema: SchemaOverrides | None = None,
    schema_overrides: SchemaOverrides | None = None,
    tensor: Literal["array", "extension"] = "array",
    object_arrays: Literal["error", "raw"] = "error",
    dialect: Literal["auto", "msgpack-numpy", "openpi", "js", "flax"] = "auto",
    batch_size: int = 65536,
    batch_bytes: int = 16 << 20,
    infer_rows: int | None = None,
    on_truncated: Literal["error", "keep"] = "error",
    conflicts: Literal["error", "binary"] = "error",
    lists: Literal["list", "array"] = "list",
    npy_ext: int | None = None,
    hold_decompressed: int | None = None,
) -> ArrowStream:
    """Read msgpack-numpy into Arrow record batches.

    Takes the same arguments as :func:`read_msgpack`; several files (a list, a directory, a
    glob) are read one after another, each with the first one's columns and types, or typed
    together as :func:`read_msgpack` types them where they differ (else an error naming the
    file and what differs). The result has ``__arrow_c_stream__``, so
    ``pyarrow.table(obj)``, ``pl.DataFrame(obj)`` and any Arrow PyCapsule consumer take it without
    a copy (as often as needed). Unlike a Polars DataFrame it keeps the Arrow field metadata
    that records the exact numpy dtypes, so ``write_msgpack(read_arrow(f), ..., layout="auto")``
    writes the file back byte for byte. ``tensor="extension"`` gives canonical
    ``arrow.fixed_shape_tensor`` / ``arrow.variable_shape_tensor`` columns for pyarrow.

    >>> import pyarrow as pa, msgpack_numpy as mn, numpy as np
    >>> t = pa.table(read_arrow(mn.packb({"x": np.arange(6, dtype="<i2").reshape(2, 3)})))
    >>> t.schema.field("x").type
    FixedSizeListType(fixed_size_list<item: int16>[3])
    """
    # one message in memory, every option at its default: straight to the reader (as read_msgpack)
    if type(source) in _IN_MEMORY and _all_default(locals(), _ARROW_DEFAULTS):
        return Reader(source, eager=True, **_IN_MEMORY_READ).read_all()
    if _is_multi(source):
        kw = _kw(locals())
        try:
            return _read_arrow_many(source, dict(kw))
        except (MsgpackArrowError, ValueError):
            together = _types_together(source, kw)
            if together is None:
                raise
            return _read_arrow_many(source, {**kw, "schema": together})
    return _read_stream(source, for_polars=False, **_kw(locals()))


def _types_together(source: Any, kw: dict) -> _unify.Inferred | None:
    """After a read of several files failed: the columns and types of all of them as one
    concatenated file would have them (``_unify``), to read them again with; ``None`` where that
    cannot help (a schema given, one file, files of one schema, a file that does not read at
    all): the first error stands. Types no one column holds are an error naming the file."""
    if kw.get("schema") is not None or kw.get("schema_overrides") is not None:
        return None
    sources = [s for s in _expand(source, kw.get("storage_options")) if not _is_empty_file(s)]
    if len(sources) < 2:
        return None
    # each file's schema as a scan of it has it (the same options: remembered schemas are reused)
    takes = inspect.signature(scan_msgpack).parameters
    opts = {k: kw.get(k, takes[k].default) for k in _SCHEMA_OPTIONS}
    try:
        schemas = [
            (s if isinstance(s, str) else f"<{type(s).__name__}>", _first_schema(s, True, None, None, opts)[0][0])
            for s in sources
        ]
    except (MsgpackArrowError, ValueError, OSError, pl.exceptions.PolarsError):
        return None
    together = _unify.unify_schemas(schemas)
    return None if together is None else _unify.Inferred(together)


def _read_arrow_many(source: Any, kw: dict) -> ArrowStream:
    """Several files (a list, a directory, a glob) as one stream, as the CLI's ``convert`` reads
    them: each in turn, with the same columns and types as the first (or an error naming the
    file and what differs; ``schema=`` makes them agree); empty files hold no rows. ``n_rows`` and
    ``rows`` count across the files, and files after the last row asked for are not read."""
    skip, take = _row_range(kw.pop("rows"), kw.pop("n_rows"))
    sources = _expand(source)
    if not sources:
        raise FileNotFoundError(f"no input files in {source!r}")
    sources = [s for s in sources if not _is_empty_file(s)] or sources[:1]
    want = None if take is None else skip + take
    streams, names = [], []
    # runs of small files read at once, as scan_msgpack's (every row wanted, errors fatal)
    together = want is None and kw["on_truncated"] == "error"
    for run in _small_runs(sources, kw["batch_bytes"]) if together else [[s] for s in sources]:
        if len(run) > 1:
            try:
                s, _ = _stream_reader(run[0], for_polars=False, n_rows=None, **kw).read_with(run[1:])
            except (MsgpackArrowError, ValueError, OSError):
                pass  # one by one below: an error is raised naming its file
            else:
                streams.append(s)
                names.append(f"{run[0]} (and {len(run) - 1} more files)")
                continue
        for src in run:
            if want is not None and want <= 0 and streams:
                break
            s = _read_stream(src, for_polars=False, n_rows=want, **kw)
            streams.append(s)
            names.append(src if isinstance(src, str) else f"<{type(src).__name__}>")
            if want is not None:
                want -= s.num_rows
    return ArrowStream.concat(streams, names, skip, take)


def _kw(args: dict) -> dict:
    return {k: v for k, v in args.items() if k != "source"}


def _row_range(rows: slice | range | None, n_rows: int | None) -> tuple[int, int | None]:
    """``rows=slice(a, b)`` (or a range) as (rows to skip, rows to read), within ``n_rows``."""
    n_rows = _n_rows(n_rows)
    if rows is None:
        return 0, n_rows
    if not isinstance(rows, (slice, range)):
        raise TypeError(f"rows must be a slice or a range, not {type(rows).__name__}")
    start, stop, step = rows.start, rows.stop, rows.step
    if step not in (None, 1) or any(v is not None and v < 0 for v in (start, stop)):
        raise ValueError(f"rows={rows!r}: a slice of rows from the start, step 1, without negative bounds")
    start = start or 0
    take = None if stop is None else max(stop - start, 0)
    if n_rows is not None:
        take = n_rows if take is None else min(take, n_rows)
    return start, take


def _read_stream(source, *, for_polars: bool, n_rows, rows=None, **kw) -> ArrowStream:
    src = _one_source(source)
    with _naming(src):
        r = _stream_reader(src, for_polars=for_polars, n_rows=n_rows, rows=rows, **kw)
        out = r.read_all()
    _warn_truncation(r, src)
    return out


def _stream_reader(src, *, for_polars: bool, n_rows, rows=None, schema=None, schema_overrides, **kw) -> Reader:
    """The reader of :func:`_read_stream` (every batch kept)."""
    skip, n_rows = _row_range(rows, n_rows)
    return _reader(
        src,
        schema=_overrides(schema, "schema"),
        schema_inferred=isinstance(schema, _unify.Inferred),
        schema_overrides=_overrides(schema_overrides),
        n_rows=n_rows,
        skip_rows=skip,
        for_polars=for_polars,
        # every batch is kept: decoded while the schema walk goes on
        eager=True,
        **kw,
    )


def _to_polars(stream: Any) -> pl.DataFrame:
    """``pl.DataFrame(stream)``, with a Polars panic (pyo3's PanicException, a BaseException)
    turned into a MsgpackArrowError: the types we hand over are chosen so it should not happen."""
    try:
        return pl.DataFrame(stream)
    except BaseException as e:
        if type(e).__name__ == "PanicException":
            raise MsgpackArrowError(f"polars could not import the decoded Arrow data: {e}") from e
        raise


def _n_rows(n: int | None) -> int | None:
    if n is not None and n < 0:
        raise ValueError("n_rows must be >= 0")
    return n


def read_msgpack(
    source: Source,
    *,
    layout: Layout = "auto",
    columns: str | Sequence[str | int] | None = None,
    n_rows: int | None = None,
    rows: slice | range | None = None,
    schema: SchemaOverrides | None = None,
    schema_overrides: SchemaOverrides | None = None,
    tensor: Literal["array", "extension"] = "array",
    object_arrays: Literal["error", "raw"] = "error",
    dialect: Literal["auto", "msgpack-numpy", "openpi", "js", "flax"] = "auto",
    batch_size: int | None = None,
    batch_bytes: int | None = None,
    infer_rows: int | None = None,
    on_truncated: Literal["error", "keep"] = "error",
    conflicts: Literal["error", "binary"] = "error",
    lists: Literal["list", "array"] = "list",
    npy_ext: int | None = None,
    hold_decompressed: int | None = None,
    numpy_types: Literal["polars", "extension"] = "polars",
    row_index_name: str | None = None,
    row_index_offset: int = 0,
    include_file_paths: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pl.DataFrame:
    """Read a msgpack-numpy file (or bytes) into a Polars DataFrame.

    Parameters
    ----------
    source
        A path (``str`` or ``os.PathLike``; plain files are memory-mapped, ``.zst``, ``.gz`` and
        ``.lz4`` are decompressed on the fly), a bytes-like object (``bytes`` and read-only
        buffers are decoded in place, a ``bytearray`` is copied once), or a binary file object,
        read from its position to its end (``open(path, "rb")`` of a plain file over 1 MiB is
        memory-mapped; other objects are read whole first). The object is left at its end. A list of paths, a glob
        (``"dumps/*.msgpack"``) or a directory (its msgpack files) is read as
        ``scan_msgpack(source, ...).collect()``: rows of every file, in sorted order. Where
        a later file does not fit the first one's columns and types, the files are typed
        together as one concatenated file would be (ints and floats widen to Float64, a column
        nil in one file takes another's type, ndarrays of other shapes become lists, keys first
        seen later are columns null before), unless ``schema``/``schema_overrides`` is given.
    layout
        How the file becomes rows: ``"records"`` (a stream of maps, one row each),
        ``"columns"`` (one map of name -> ndarray/list), ``"values"`` (one column ``value``), or
        ``"auto"`` (decided from the first object).
    columns
        Only these columns, in this order, by name or index (as Polars' readers); the others
        are skipped without being decoded or typed (records: a type conflict in a column left
        out is no error). A name the input lacks raises Polars' ``ColumnNotFoundError``.
    n_rows
        Stop after this many rows.
    rows
        A slice of rows, e.g. ``rows=slice(1_000_000, 1_000_010)``: the rows before it are
        stepped over without being decoded, and a file with a record index (``FILE.offsets``,
        as datadings and ``write_msgpack(..., index=True)`` write it) is not even walked to its
        first row; the index is checked against the records read (a stale one is an error).
    schema
        The whole schema, ``{column: polars dtype}`` (or a pyarrow schema), instead of inferring
        one, as Polars' ``read_ndjson(schema=...)``: the columns are these, in this order; a key
        missing from a record is null, and keys the schema does not name are skipped. Values are
        converted into the types exactly, as with ``schema_overrides`` (a value that does not fit
        is an error naming it). No row is walked to type the columns, so a ``scan_msgpack`` of a
        large file starts at once. ``schema_overrides`` then change some of its types.
    schema_overrides
        ``{column: polars dtype}``: give these columns these types instead of the inferred ones
        (e.g. ``pl.Float32``, ``pl.Array(pl.Float64, 768)``, ``pl.List(pl.Int64)``). In the
        records and values layouts the columns are not inferred but decoded straight into the
        type, so an override also resolves a type conflict: ints and floats, ndarrays of
        different numeric dtypes (converted element by element), any scalar into ``pl.String``
        (as Python's ``str()`` writes it). A value that does not fit the type exactly is an
        error naming it, never a silent null. ``pl.Categorical`` and ``pl.Enum`` columns are
        read as strings, then cast (a value not in an Enum's categories is Polars' error).
        Overridden columns lose the numpy dtype recorded in their Arrow field metadata.
    tensor
        ``"array"`` (default): ndarrays become ``pl.Array`` (fixed shape) or ``pl.List``
        (ragged). ``"extension"``: Arrow's canonical tensor extension types (meant for
        :func:`read_arrow` and pyarrow; Polars shows them as an Extension dtype).
    object_arrays
        ``"error"`` (default): an object (``'O'``) array, whose data is a pickle, is refused with
        a :class:`DecodeError` and never unpickled. ``"raw"``: its pickle bytes as Binary.
    dialect
        Which ndarray encoding to recognise: ``"auto"`` (msgpack-numpy and openpi's maps, and
        Flax's ext values where their payload is exactly Flax's form), ``"msgpack-numpy"``,
        ``"openpi"``, ``"js"`` (msgpack-numpy-js, whose ``<U8`` means uint8; never guessed), or
        ``"flax"`` (only ``flax.serialization.msgpack_serialize``'s ext values; another payload
        of codes 1-3 is an error).
    batch_size
        Rows per internal Arrow batch (the DataFrame has one chunk per batch; default 65536).
    batch_bytes
        A batch also ends after the row that reaches this many bytes of input (default 16 MiB),
        so wide rows (tensors) make smaller batches: a stream's or a scan's memory is a few
        batches whatever the row width. With both left at ``None``, a ``columns`` map, which is
        decoded whole in any case, is one chunk per column (no smaller batches to import).
    infer_rows
        Infer the schema from this many rows (default: all; at least 1). A compressed file or
        compressed bytes are then held in memory decompressed (up to 1 GiB; a larger one is
        decompressed twice, once to see every row's types, once to decode); a number reads them
        once, batch by batch. A later row of another kind than its column's (a bool in an int
        column, an int in a string one, a float64 ndarray in a float32 one) is an error naming
        it, never converted.
    hold_decompressed
        Compressed input (and a URL's object): hold up to this many decompressed bytes in memory
        to type the schema from every row (default ``None``: 1 GiB). Past it, a file is
        decompressed twice and a URL is typed from its first rows; ``0`` never holds, so memory
        stays a few batches (a small file that expands hugely then costs a second pass, not
        memory).
    conflicts
        A column whose values do not unify (ints and strings, ndarrays of different ndim):
        ``"error"`` (default, a :class:`DecodeError` naming the column, both types and the
        record) or ``"binary"``: the column is kept as Binary, each row its value's raw msgpack
        bytes (decode them later, e.g. with ``msgpack_numpy.unpackb`` or
        ``pl.col(c).msgpack.decode(dtype)`` per dtype); written back, they are the same bytes.
    lists
        Nested msgpack lists of numbers (or bools): ``"list"`` (default) reads them as
        ``pl.List``; ``"array"`` reads a column whose lists have one length at each level as
        ``pl.Array`` of that shape (a tensor), e.g. what ormsgpack's ``OPT_SERIALIZE_NUMPY``
        and ``.tolist()`` write; other columns stay lists. Element types unify as for any
        value (ints and floats: Float64). Written back through :func:`read_arrow`, they are
        lists again (field metadata ``msgpack_numpy.kind = list``).
    npy_ext
        An ext type code (-128..127) whose values hold ``np.save`` bytes (the ``.npy`` format:
        ``msgpack.ExtType(code, buf.getvalue())``, as msgpack and msgspec users write ndarrays):
        they are read as ndarrays, tensors like msgpack-numpy's (plain dtypes; Fortran order is
        put in C order). Default ``None``: an ext value other than a timestamp reads as Python's
        msgpack gives it, a struct ``{code: Int8, data: Binary}`` (written back as the same ext).
    numpy_types
        ``"polars"`` (default): plain Polars dtypes; the numpy facts they cannot state (byte
        order, ``<U5``/``S5`` widths, complex, 0-d vs scalar, ragged ndarray vs list, the file's
        layout) are dropped. ``"extension"``: a column that has any is a
        ``pl.Extension("msgpack_arrow.numpy", storage, ...)`` that keeps them, so
        ``write_msgpack(df, None)`` gives the file back byte for byte (layout included);
        ``pl.col(c).ext.storage()`` is the plain column. (Polars marks its extension types
        unstable.)
    on_truncated
        An input cut short (a writer that crashed, a file still being written): ``"error"``
        (default, a :class:`DecodeError` saying where), or ``"keep"``: every complete record
        before the cut (what ``msgpack.Unpacker`` yields), with a :class:`TruncatedInputWarning`
        that says where the cut is. A file another process appends to reads as a consistent
        prefix: never a torn record.
    row_index_name
        Add a row index column of this name, first (as Polars' readers).
    row_index_offset
        The row index of the first row.
    include_file_paths
        Add a String column of this name holding each row's source path (path sources only).
    storage_options
        For URL sources (``s3://``, ``gs://``, ``az://``, ``abfs://``, ``http(s)://``): the store's
        settings, object_store's keys as Polars' ``scan_parquet`` takes them (``endpoint_url``,
        ``aws_access_key_id``, ``aws_secret_access_key``, ``aws_region``, ``allow_http``, ...);
        the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) gives the rest. The object is
        decoded as it arrives; ``n_rows``/``head`` end the transfer early.

    Raises
    ------
    DecodeError
        Malformed, truncated or hostile input (a ``ValueError``); ``e.offset``, ``e.record`` and
        ``e.column`` say where.

    Examples
    --------
    >>> import msgpack_numpy as mn, numpy as np
    >>> data = b"".join(mn.packb({"id": i, "emb": np.full(3, i, dtype="<f4")}) for i in range(2))
    >>> read_msgpack(data)
    shape: (2, 2)
    ┌─────┬─────────────────┐
    │ id  ┆ emb             │
    │ --- ┆ ---             │
    │ i64 ┆ array[f32, 3]   │
    ╞═════╪═════════════════╡
    │ 0   ┆ [0.0, 0.0, 0.0] │
    │ 1   ┆ [1.0, 1.0, 1.0] │
    └─────┴─────────────────┘
    """
    # One message in memory read with every option at its default (a service decoding a message
    # at a time): straight to the reader. The handling of sources, options and row windows below
    # does nothing for it and took as long as the decode (a one-record read 52 -> 32 µs).
    if type(source) in _IN_MEMORY and _all_default(locals(), _READ_DEFAULTS):
        return _to_polars(Reader(source, for_polars=True, eager=True, whole_chunks=True, **_IN_MEMORY_READ).read_all())
    kw = _kw(locals())
    extra = {k: kw.pop(k) for k in ("row_index_name", "row_index_offset", "include_file_paths")}
    whole_chunks = batch_size is None and batch_bytes is None
    kw["batch_size"] = 65536 if batch_size is None else batch_size
    kw["batch_bytes"] = (16 << 20) if batch_bytes is None else batch_bytes
    # (column indices are resolved by the scan, which knows the columns before reading)
    if _is_multi(source) or _has_indices(columns):
        skip, take = _row_range(kw.pop("rows"), kw.pop("n_rows"))

        def collect(kw: dict) -> pl.DataFrame:
            lf = scan_msgpack(source, **kw, **extra)
            return (lf.slice(skip, take) if skip or take is not None else lf).collect()

        try:
            return collect(kw)
        except DecodeError:
            # files whose types differ (a scan takes the first one's): typed together
            together = _types_together(source, kw) if _is_multi(source) else None
            if together is None:
                raise
            return collect({**kw, "schema": together})
    if extra["include_file_paths"] is not None and not _is_path(source):
        raise ValueError("include_file_paths needs a path source (this one is in memory)")
    kw["schema_overrides"], kw["schema"], casts = _polars_casts(schema_overrides, schema)
    try:
        df = _cast(_to_polars(_read_stream(source, for_polars=True, whole_chunks=whole_chunks, **kw)), casts)
    except DecodeError as e:
        # as scan_msgpack and Polars' readers: a column asked for that the input lacks
        if columns is not None and " not found; the columns are" in str(e):
            raise pl.exceptions.ColumnNotFoundError(str(e)) from e
        raise
    path = _path(source) if _is_path(source) else None
    # the row index numbers the input's rows (rows=slice(5, 8) starts at 5, as a scan's slice)
    offset = extra["row_index_offset"] + _row_range(rows, None)[0]
    return _virtual(df, extra["row_index_name"], offset, extra["include_file_paths"], path)


def _defaults(f: Any) -> tuple[tuple[str, Any], ...]:
    """The keyword arguments of `f` and their defaults."""
    return tuple((k, p.default) for k, p in inspect.signature(f).parameters.items() if p.default is not p.empty)


_READ_DEFAULTS = _defaults(read_msgpack)
_ARROW_DEFAULTS = _defaults(read_arrow)
#: sources `read_msgpack` and `read_arrow` hand to the reader as they are (no path, no file object)
_IN_MEMORY = (bytes, bytearray, memoryview)
#: what they pass the reader for default options (as `_read_stream` does): read_arrow's batch bounds
_IN_MEMORY_READ = {k: v for k, v in _ARROW_DEFAULTS if k in ("batch_size", "batch_bytes")} | {"schema_inferred": False}


def _all_default(args: dict[str, Any], defaults: tuple[tuple[str, Any], ...]) -> bool:
    """Whether every keyword argument in `args` (a reader's locals) is its default, of the
    default's type (`row_index_offset=False` is not `0`)."""
    for k, v in defaults:
        a = args[k]
        if a is not v and not (type(a) is type(v) and a == v):
            return False
    return True


def _expand(source: Any, storage_options: dict[str, Any] | None = None) -> list[str | bytes | bytearray | memoryview]:
    """Paths, globs (sorted matches), directories (their files, sorted), URLs and URL globs (the
    objects listed, sorted), lists of these; or one in-memory source."""
    if isinstance(source, (list, tuple)):
        out: list = []
        for s in source:
            out.extend(_expand(s, storage_options))
        return out
    if not _is_path(source):
        return [_one_source(source)]
    p = _path(source)
    if _is_url(p):
        return list(_expand_url(p, _storage(storage_options))) if _GLOB_CHARS.search(p) else [p]
    if _GLOB_CHARS.search(p) and not os.path.exists(p):
        found = sorted(_glob.glob(p, recursive=True))
        if not found:
            raise FileNotFoundError(f"no file matches {p!r}")
        return [f for f in found if os.path.isfile(f)]
    if os.path.isdir(p):
        # as the CLI: only msgpack files (a notes.txt beside the dumps is not one of them)
        found = sorted(
            os.path.join(p, f)
            for f in os.listdir(p)
            if f.lower().endswith(MSGPACK_EXTENSIONS) and os.path.isfile(os.path.join(p, f))
        )
        if not found:
            raise FileNotFoundError(f"directory {p!r} holds no {', '.join(MSGPACK_EXTENSIONS)} files")
        return found
    return [p]


#: Schemas scan_msgpack inferred, by file identity and options (at most _SCHEMAS_KEPT).
_schemas: dict[tuple, tuple[Any, list[str], pl.DataFrame]] = {}
_SCHEMAS_KEPT = 64
#: Schemas saved on disk (the schema cache directory) kept at most.
_SAVED_KEPT = 512
_SAVED_MAGIC = b"msgpack-arrow schema 1\n"
#: How often a scan's schema came from the disk cache, and how often it was saved there.
_schema_cache_stats = {"loaded": 0, "saved": 0}


def _identity(source: Any) -> tuple | None:
    """What identifies a local file's content without decoding it: path, inode, size, times, and
    a hash of its first and last 64 KiB (against a same-size rewrite within the file system's
    time resolution); ``None`` for URLs and bytes, which are not remembered."""
    if not isinstance(source, str) or _is_url(source):
        return None
    try:
        st = os.stat(source)
        if not _stat.S_ISREG(st.st_mode):
            return None  # a pipe or a device: reading its ends would take its data
        with open(source, "rb") as f:
            ends = f.read(1 << 16)
            if st.st_size > 1 << 17:
                f.seek(-(1 << 16), os.SEEK_END)
            ends += f.read(1 << 16)
    except OSError:
        return None
    digest = hashlib.sha256(ends).hexdigest()
    return (os.path.realpath(source), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)


def _build_identity() -> tuple:
    """The extension module's file as installed (its modification time is the wheel's fixed
    1980 one; its change time is the install's): a schema saved by another build of the same
    version (a development build, a reinstall) may have been inferred by other rules."""
    from . import _internal

    try:
        st = os.stat(_internal.__file__)
        return (st.st_ino, st.st_size, st.st_ctime_ns)
    except (OSError, AttributeError, TypeError):
        return ()


_BUILD = _build_identity()


def _saved_schema_path(key: tuple) -> str | None:
    """Where the schema of ``key`` is saved: ``MSGPACK_ARROW_CACHE_DIR`` (default
    ``$XDG_CACHE_HOME/msgpack-arrow``, else ``~/.cache/msgpack-arrow``) / ``schemas``; ``None``
    when ``MSGPACK_ARROW_SCHEMA_CACHE=0``."""
    if os.environ.get("MSGPACK_ARROW_SCHEMA_CACHE", "1") == "0":
        return None
    base = os.environ.get("MSGPACK_ARROW_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "msgpack-arrow"
    )
    name = hashlib.sha256(repr((key, __version__, _BUILD)).encode()).hexdigest()
    return os.path.join(base, "schemas", name + ".arrows")


def _load_schema(path: str | None) -> tuple | None:
    """A saved scan schema, or ``None`` (absent, unreadable or not ours: the walk is done again)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(_SAVED_MAGIC):
            return None
        at = len(_SAVED_MAGIC)
        parts = []
        for _ in range(2):
            n = int.from_bytes(data[at : at + 8], "little")
            parts.append(data[at + 8 : at + 8 + n])
            at += 8 + n
        decoded, out = (ArrowStream.from_schema_ipc(p) for p in parts)
    except (OSError, ValueError):
        return None
    _schema_cache_stats["loaded"] += 1
    return decoded, out.columns, _to_polars(out)


def _save_schema(path: str | None, decoded: Any, out: Any) -> None:
    """Save a scan schema for later processes (written whole, then renamed into place); a cache
    that cannot be written is no error."""
    if path is None:
        return
    d = os.path.dirname(path)
    try:
        os.makedirs(d, exist_ok=True)
        parts = [decoded.schema_ipc(), out.schema_ipc()]
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(_SAVED_MAGIC + b"".join(len(p).to_bytes(8, "little") + p for p in parts))
        os.replace(tmp, path)
        _schema_cache_stats["saved"] += 1
        saved = [e for e in os.scandir(d) if e.name.endswith(".arrows")]
        if len(saved) > _SAVED_KEPT:
            for e in sorted(saved, key=lambda e: e.stat().st_mtime)[: len(saved) - _SAVED_KEPT]:
                os.unlink(e.path)
    except (OSError, ValueError):
        pass


#: The options of a scan that its schema depends on (with the file, the key of a remembered one).
_SCHEMA_OPTIONS = (
    "layout",
    "tensor",
    "object_arrays",
    "dialect",
    "infer_rows",
    "on_truncated",
    "conflicts",
    "lists",
    "npy_ext",
    "numpy_types",
    "storage_options",
    "hold_decompressed",
)


def _first_schema(source: Any, many: bool, overrides: Any, schema_overrides: Any, opts: dict) -> tuple:
    """The full schema the first file decodes to (every file is read with it), its column names,
    and an empty DataFrame of the output types; and, for a compressed file whose types were just
    walked, its decompressed bytes (a ``HeldInput``, else None) for the read of its rows, so it is
    decompressed once. The exact schema takes a walk over the whole file;
    it is remembered for the file as it is (same inode, size, modification times and ends) and the
    same options, in this process and on disk (:func:`_saved_schema_path`), so a later scan of an
    unchanged file, in this process or another, starts at once."""
    ident = _identity(source)
    key = saved = None
    if ident is not None:
        key = (ident, repr(schema_overrides), tuple(sorted((k, repr(v)) for k, v in opts.items())))
        hit = _schemas.get(key)
        if hit is not None:
            return hit, None
        saved = _saved_schema_path(key)
        hit = _load_schema(saved)
        if hit is not None:
            _remember(key, hit)
            return hit, None
    # a URL is not fetched whole for its schema: typed from its first rows, as a stream is
    is_url = isinstance(source, str) and _is_url(source)
    hold = {"hold_decompressed": 0} if is_url else {}
    held = None
    most = opts.get("hold_decompressed")
    if isinstance(source, str) and not is_url and most != 0 and opts.get("infer_rows") is None:
        # a compressed file, decompressed once for both reads (up to the same bound a read holds;
        # with infer_rows its schema takes only its first rows, and it is not held)
        with _naming(source, many):
            held = _decompress_whole(source, _DEFAULT_HOLD if most is None else most)
    with _naming(source, many):
        first = _reader(source if held is None else held, schema_overrides=overrides, batch_size=1, for_polars=True,
                        **{**opts, **hold})
    # take what is needed and drop the reader at once: a URL's transfer goes on until it is dropped
    decoded, names, empty = first.decoded_schema(), first.columns, first.empty()
    del first
    found = (decoded, names, _to_polars(empty))
    if key is not None:
        _remember(key, found)
        _save_schema(saved, decoded, empty)
    return found, held


#: Files this small are read together with their neighbours by a scan (_small_runs), at most
#: this many at once.
_SMALL_FILE = 1 << 20
_SMALL_RUN = 1024
_COMPRESSED = (".zst", ".zstd", ".gz", ".lz4")


def _small_runs(sources: list[Any], most_bytes: int) -> list[list[Any]]:
    """``sources`` in order, cut into runs: local files under ``_SMALL_FILE`` bytes together (up
    to ``most_bytes`` or ``_SMALL_RUN`` files a run), any other source a run of its own."""
    runs: list[list[Any]] = []
    run: list[Any] = []
    size = 0
    for s in sources:
        try:
            # (a compressed file's size says nothing of what it holds)
            plain = isinstance(s, str) and not _is_url(s) and not s.lower().endswith(_COMPRESSED)
            n = os.path.getsize(s) if plain else None
        except OSError:
            n = None
        if n is None or n >= _SMALL_FILE:
            if run:
                runs.append(run)
            runs.append([s])
            run, size = [], 0
            continue
        if run and (size + n > most_bytes or len(run) >= _SMALL_RUN):
            runs.append(run)
            run, size = [], 0
        run.append(s)
        size += n
    if run:
        runs.append(run)
    return runs


def _is_empty_file(source: Any) -> bool:
    try:
        return isinstance(source, str) and not _is_url(source) and os.path.getsize(source) == 0
    except OSError:
        return False


def _remember(key: tuple, found: tuple) -> None:
    """Keep a scan schema in this process (the oldest goes past _SCHEMAS_KEPT)."""
    if len(_schemas) >= _SCHEMAS_KEPT:
        _schemas.pop(next(iter(_schemas)))
    _schemas[key] = found


def scan_msgpack(
    source: Source | Sequence[PathLike],
    *,
    layout: Layout = "auto",
    columns: str | Sequence[str | int] | None = None,
    n_rows: int | None = None,
    schema: SchemaOverrides | None = None,
    schema_overrides: SchemaOverrides | None = None,
    tensor: Literal["array", "extension"] = "array",
    object_arrays: Literal["error", "raw"] = "error",
    dialect: Literal["auto", "msgpack-numpy", "openpi", "js", "flax"] = "auto",
    batch_size: int = 65536,
    batch_bytes: int = 16 << 20,
    infer_rows: int | None = None,
    on_truncated: Literal["error", "keep"] = "error",
    conflicts: Literal["error", "binary"] = "error",
    lists: Literal["list", "array"] = "list",
    npy_ext: int | None = None,
    hold_decompressed: int | None = None,
    numpy_types: Literal["polars", "extension"] = "polars",
    row_index_name: str | None = None,
    row_index_offset: int = 0,
    include_file_paths: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pl.LazyFrame:
    """Lazily read msgpack-numpy files as a Polars LazyFrame (a Polars IO source).

    ``source`` is what :func:`read_msgpack` takes, or a glob (``"data/*.msgpack"``, matches in
    sorted order), a directory (its files, sorted), or a list of paths: their rows are
    concatenated in that order. The schema is inferred from the first file (with
    ``schema_overrides`` applied) and every later file is decoded with it; a key the first file
    does not have is a :class:`DecodeError` (as Polars' ``scan_parquet`` raises on extra columns).
    Keys of the first file missing in a later one are nulls.

    Projection (only the columns the query needs are decoded), the predicate and ``head``/
    ``n_rows`` are applied by the source itself, batch by batch: Polars does not re-apply them.
    The schema is exact (inferred from every row of the first file, as :func:`read_msgpack`
    does): that walk is most of the time ``scan_msgpack(f).head(10)`` takes, so it is remembered
    for an unchanged file (same inode, size and modification times) and the same options, and
    a later scan of it starts at once.
    An error names the file it is in (message and ``e.path``). The file is read when the query
    runs: records appended to it after that are not seen (nor are files a glob matches later).
    A compressed first file is decompressed once for its schema and its first query: that query
    reads the bytes the schema was walked in (up to ``hold_decompressed``, freed as decoded).
    The other arguments are those of :func:`read_msgpack`.

    >>> import msgpack_numpy as mn
    >>> data = b"".join(mn.packb({"id": i, "label": str(i)}) for i in range(5))
    >>> scan_msgpack(data).filter(pl.col("id") > 2).select("label").collect()["label"].to_list()
    ['3', '4']
    """
    sources = _expand(source, storage_options)
    if not sources:
        raise FileNotFoundError(f"no input files in {source!r}")
    if len(sources) > 1:
        # empty files hold no rows (one a writer just created): the schema comes from the others
        sources = [s for s in sources if not _is_empty_file(s)] or sources[:1]
    opts = {k: v for k, v in locals().items() if k in _SCHEMA_OPTIONS}
    # a schema the files' own unified to (read_msgpack of shards that differ): types as inferred
    inferred = isinstance(schema, _unify.Inferred)
    # Categorical and Enum: read as String, cast as each frame is made
    schema_overrides, schema, casts = _polars_casts(schema_overrides, schema)
    overrides = _overrides(schema_overrides)
    given = _overrides(schema, "schema")
    held = None
    if given is None:
        (full_schema, all_columns, empty), held = _first_schema(sources[0], len(sources) > 1, overrides, schema_overrides, opts)
    else:
        # the caller's schema: nothing to walk (the reader reads no row to be built)
        with _naming(sources[0], len(sources) > 1):
            first = _reader(sources[0], schema=given, schema_inferred=inferred, schema_overrides=overrides,
                            batch_size=1, for_polars=True, **opts)
        full_schema, all_columns, empty = first.decoded_schema(), first.columns, _to_polars(first.empty())
        del first
    base = _columns(columns, all_columns) if columns is not None else all_columns
    known = set(all_columns)
    missing = [c for c in base if c not in known]
    if missing:
        raise pl.exceptions.ColumnNotFoundError(f"columns {missing} not found; the columns are {all_columns}")
    if len(set(base)) == len(base):
        # (a select of the empty frame runs a query: a quarter of a millisecond per scan)
        dtypes = empty.schema
        pl_schema = pl.Schema([(c, dtypes[c]) for c in base])
    else:
        pl_schema = empty.select(base).schema  # raises Polars' DuplicateError
    if casts:
        pl_schema = pl.Schema([(c, casts.get(c, t)) for c, t in pl_schema.items()])
    limit = _n_rows(n_rows)
    virtual = [c for c in (row_index_name, include_file_paths) if c is not None]
    if include_file_paths is not None and not all(isinstance(s, str) for s in sources):
        raise ValueError("include_file_paths needs path sources (this one is in memory)")
    for name in virtual:
        if name in all_columns:
            raise pl.exceptions.DuplicateError(f"column {name!r} is in the input already")
    if virtual:
        fields = list(pl_schema.items())
        if row_index_name is not None:
            fields.insert(0, (row_index_name, _idx_dtype()))
        if include_file_paths is not None:
            fields.append((include_file_paths, pl.String))
        pl_schema = pl.Schema(fields)
    order = list(pl_schema.names())
    # the first file's decompressed bytes, if its types were just walked: the first query reads
    # them (and frees them as it decodes); later ones decompress the file again
    first_bytes = [held] if held is not None else []
    del held

    def io_source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        _batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        # the frames of small files go to Polars together, up to a batch's rows or bytes: each
        # frame handed over cost Polars' engine about 0.2 ms (500 files of 20 rows: 127 ms,
        # against 30 ms for reading them)
        held: list[pl.DataFrame] = []
        rows = size = 0
        for df in frames(with_columns, predicate, n_rows):
            if not held and (df.height >= batch_size or len(sources) == 1):
                yield df
                continue
            held.append(df)
            rows += df.height
            size += df.estimated_size()
            if rows >= batch_size or size >= batch_bytes:
                yield pl.concat(held, rechunk=False) if len(held) > 1 else held[0]
                held, rows, size = [], 0, 0
        if held:
            yield pl.concat(held, rechunk=False) if len(held) > 1 else held[0]

    def frames(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
    ) -> Iterator[pl.DataFrame]:
        want = list(with_columns) if with_columns is not None else order
        read = [c for c in want if c not in virtual]
        if predicate is not None:
            read += [c for c in predicate.meta.root_names() if c not in read and c not in virtual]
        if not read:
            # a query needing no column (pl.len()): decode the first column for the row count
            read = all_columns[:1]
        # Polars pushes n_rows down only from a head/slice that comes before any filter
        # (`head(9).filter(p)`; `filter(p).head(9)` passes None): like scan_msgpack's own n_rows,
        # it limits the rows read, and the predicate applies to those
        budgets = [n for n in (limit, n_rows) if n is not None]
        left = min(budgets) if budgets else None
        row0 = row_index_offset  # the row index counts rows read, before the predicate

        def shape(df: pl.DataFrame, src: Any) -> pl.DataFrame:
            """A frame as the query wants it: virtual columns, predicate, columns."""
            if virtual:
                df = _virtual(df, row_index_name, row0, include_file_paths, src)
            if predicate is not None:
                df = df.filter(predicate)
            if df.columns != want:
                # (no column at all keeps the rows' count: select([]) is 0 x 0)
                df = df.select(want) if want else df.drop(df.columns)
            return df

        def open_reader(src: Any, n: int | None) -> Reader:
            return _reader(
                src,
                columns=read,
                schema=full_schema,
                schema_inferred=given is None or inferred,
                strict_schema=given is None or inferred,
                schema_overrides=overrides,
                for_polars=True,
                n_rows=n,
                batch_size=batch_size,
                batch_bytes=batch_bytes,
                **opts,
            )

        # runs of small files are read together (at once on the thread pool, one frame per run)
        # where every row is wanted and no column names the file: a reader and a frame per file
        # cost more than its rows (2,000 files of 12 KB: 213 -> 52 ms)
        together = left is None and on_truncated == "error" and include_file_paths is None
        groups = _small_runs(sources, batch_bytes) if together else [[s] for s in sources]
        for group in groups:
            if len(group) > 1 and not (first_bytes and group[0] is sources[0]):
                try:
                    stream, _ = open_reader(group[0], None).read_with(group[1:])
                except (MsgpackArrowError, ValueError, OSError):
                    pass  # read one by one below: the error is raised naming its file
                else:
                    df = _cast(_to_polars(stream), casts)
                    height = df.height
                    df = shape(df, None)
                    row0 += height
                    yield df
                    continue
            for src in group:
                if left == 0:
                    return
                # every file is read with the first one's schema; a key it lacks is an error (as
                # Polars' scan_parquet: extra columns raise), not a column silently lost. The
                # caller's schema: its types convert values, and other keys are skipped (as
                # Polars' scan_ndjson with a schema)
                bytes_ = None
                if src is sources[0]:
                    try:
                        bytes_ = first_bytes.pop()  # (one query takes them, whichever comes first)
                    except IndexError:
                        pass
                if bytes_ is not None:
                    bytes_.last_read()
                later = src is not sources[0] and given is None
                with _naming(src, len(sources) > 1), _first_file_types(later):
                    r = open_reader(src if bytes_ is None else bytes_, left)
                with _naming(src, len(sources) > 1), _first_file_types(later):
                    for chunk in r:
                        df = _cast(_to_polars(chunk), casts)
                        height = df.height
                        df = shape(df, src)
                        row0 += height
                        if left is not None:
                            left -= height
                        yield df
                        if left == 0:
                            return
                _warn_truncation(r, src)

    # (what `explain()` shows: the files, not a bare PYTHON SCAN)
    first = sources[0] if isinstance(sources[0], str) else f"<{type(sources[0]).__name__}>"
    detail = first if len(sources) == 1 else f"{first} and {len(sources) - 1} more files"
    return pl.io.plugins.register_io_source(
        io_source, schema=pl_schema, explain_name="msgpack_arrow", explain_detail=detail
    )
