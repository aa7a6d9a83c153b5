"""What a source is: a path, a URL of a remote store, bytes or a binary file object, and the
options that name columns, types and store settings, as the Rust reader takes them."""

from __future__ import annotations

import io
import os
import re as _re
import stat
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Literal, Union

import polars as pl

from ._internal import FileRange

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

Layout = Literal["auto", "records", "columns", "values"]
PathLike = Union[str, "os.PathLike[str]"]
Source = Union[PathLike, bytes, bytearray, memoryview, IO[bytes]]
SchemaOverrides = Union[Mapping[str, "PolarsDataType"], Any]

#: URLs of remote stores, read and written through object_store (``storage_options``)
_URL = _re.compile(r"^(s3|s3a|gs|gcs|az|azure|abfs|abfss|adl|http|https)://", _re.IGNORECASE)


def _is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def _path(x: PathLike) -> str:
    p = os.fsdecode(os.fspath(x))
    return p if _is_url(p) else os.path.expanduser(p)


def _one_source(source: Source) -> str | bytes | bytearray | memoryview | FileRange:
    """A path (str) or bytes-like object the Rust reader takes."""
    if _is_path(source):
        return _path(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source
    read = getattr(source, "read", None)
    if callable(read):
        mode = getattr(source, "mode", "b")  # (gzip.GzipFile's is an int)
        if isinstance(source, io.TextIOBase) or (isinstance(mode, str) and "b" not in mode):
            raise TypeError("source is a text file object; open it in binary mode ('rb')")
        mapped = _map_rest(source)
        if mapped is not None:
            return mapped
        data = read()
        if isinstance(data, str):
            raise TypeError("source is a text file object; open it in binary mode ('rb')")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"source.read() returned {type(data).__name__}, expected bytes")
        return data
    try:
        memoryview(source)  # any other object with the buffer protocol (a numpy uint8 array, ...)
    except TypeError:
        raise TypeError(
            f"source must be a path, bytes-like object or binary file object, got {type(source).__name__}"
        ) from None
    return source


#: Below this many bytes a file object is read (a map costs more than a copy of a small file).
_MAP_MIN_BYTES = 1 << 20


def _map_rest(f: Any) -> FileRange | None:
    """The rest of a plain file opened with ``open(path, "rb")`` (from its position to its end),
    which the reader maps as it maps a path, the file object left after it as ``f.read()`` leaves
    it; ``None`` for any other file object. Why: ``f.read()`` copies the whole file into fresh
    memory before decoding starts (a 316 MB file read 3.4x slower than from its path); mapped, it
    is read as its path is (a table may then keep pointing into the file, as one read from its
    path does, and the pages read are handed back as the read goes).
    Only the builtin read-only file types, exactly: a wrapper's ``fileno()`` (gzip, tar members)
    is the file under it, not the bytes its ``read()`` returns, and a file opened for writing
    too may change under what was read from it."""
    raw = f if type(f) is io.FileIO else getattr(f, "raw", None)
    if type(f) not in (io.FileIO, io.BufferedReader) or type(raw) is not io.FileIO or f.writable():
        return None
    try:
        fd = f.fileno()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not f.seekable():
            return None
        pos = f.tell()
        if st.st_size - pos < _MAP_MIN_BYTES:
            return None
        rest = FileRange(fd, pos)
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    f.seek(st.st_size)
    return rest


def _columns(columns: str | Sequence[str | int] | None, names: Sequence[str] | None = None) -> list[str] | None:
    """`columns` as names; ints (as Polars' readers take) are positions in `names`, the input's
    columns (where those are not known yet, the caller resolves them later)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    out = list(columns)
    for i, c in enumerate(out):
        if isinstance(c, int) and not isinstance(c, bool) and names is not None:
            if not -len(names) <= c < len(names):
                raise IndexError(f"column index {c} is out of range: the input has {len(names)} columns")
            out[i] = names[c]
        elif not isinstance(c, str):
            raise TypeError(f"columns must be column names (str) or indices (int), got {type(c).__name__}")
    return out


def _has_indices(columns: Any) -> bool:
    return not isinstance(columns, (str, type(None))) and any(isinstance(c, int) for c in columns)


def _overrides(schema_overrides: SchemaOverrides | None, name: str = "schema_overrides") -> Any:
    """An object with the override types in its Arrow schema (an empty Polars DataFrame);
    `name`: the argument's, for the error."""
    if schema_overrides is None:
        return None
    if isinstance(schema_overrides, Mapping):
        if not schema_overrides:
            return None
        return pl.DataFrame(schema=dict(schema_overrides))
    if hasattr(schema_overrides, "__arrow_c_schema__") or hasattr(schema_overrides, "__arrow_c_stream__"):
        return schema_overrides  # a pyarrow Schema, an empty DataFrame, ...
    raise TypeError(f"{name} must be a dict of column name -> polars dtype (or a pyarrow schema)")


def _polars_casts(schema_overrides: Any, schema: Any) -> tuple[Any, Any, dict[str, Any]]:
    """``schema_overrides`` and ``schema`` (dicts) as the reader takes them, Categorical and Enum
    read as String, and the casts Polars then makes (as its readers, a value not in an Enum's
    categories is an error)."""
    casts: dict[str, Any] = {}

    def split(types: Any) -> Any:
        if not isinstance(types, Mapping):
            return types
        mine = {
            k: v() if isinstance(v, type) else v  # (pl.Categorical, the class: its instance)
            for k, v in types.items()
            if getattr(v, "base_type", lambda: None)() in (pl.Categorical, pl.Enum)
        }
        casts.update(mine)
        return {k: pl.String if k in mine else v for k, v in types.items()} if mine else types

    return split(schema_overrides), split(schema), casts


def _cast(df: pl.DataFrame, casts: dict[str, Any]) -> pl.DataFrame:
    todo = [pl.col(k).cast(v) for k, v in casts.items() if k in df.columns]
    return df.with_columns(todo) if todo else df


def _storage(storage_options: dict[str, Any] | None) -> list[tuple[str, str]] | None:
    """Polars-style ``storage_options`` as the (key, value) strings object_store takes."""
    if storage_options is None:
        return None
    return [(str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in storage_options.items()]


def _is_url(p: Any) -> bool:
    return isinstance(p, str) and _URL.match(p) is not None
