"""Type stubs of the Rust extension module (python/src/*.rs)."""

from collections.abc import Iterator
from typing import Any, Literal

__version__: str
DEFAULT_HOLD_DECOMPRESSED: int

class HeldInput:
    """A compressed file's decompressed bytes, for the reads of one scan (types, then rows)."""

    def last_read(self) -> None: ...
    def __len__(self) -> int: ...

def decompress_whole(path: str, most: int) -> HeldInput | None: ...

class FileRange:
    """A plain file from a byte offset (a file object's rest), mapped by the reader."""

    def __init__(self, fd: int, offset: int) -> None: ...

class ArrowStream:
    """Record batches exported through the Arrow PyCapsule interface (reusable)."""

    @property
    def num_rows(self) -> int: ...
    @property
    def num_batches(self) -> int: ...
    @property
    def columns(self) -> list[str]: ...
    @property
    def layout(self) -> str | None: ...
    def __len__(self) -> int: ...
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    @staticmethod
    def concat(
        streams: list[ArrowStream], names: list[str], offset: int = 0, length: int | None = None
    ) -> ArrowStream: ...

class Reader:
    """The core reader: iterating yields one ArrowStream per batch (the GIL is released while
    each batch is decoded)."""

    def __init__(
        self,
        source: str | bytes | bytearray | memoryview | Any,
        *,
        layout: Literal["auto", "records", "columns", "values"] = "auto",
        columns: list[str] | None = None,
        schema: Any | None = None,
        schema_inferred: bool = True,
        schema_overrides: Any | None = None,
        tensor: Literal["array", "extension"] = "array",
        object_arrays: Literal["error", "raw"] = "error",
        dialect: Literal["auto", "msgpack-numpy", "openpi", "js", "flax"] = "auto",
        batch_size: int = 65536,
        batch_bytes: int = 16777216,
        infer_rows: int | None = None,
        n_rows: int | None = None,
        skip_rows: int = 0,
        for_polars: bool = False,
        strict_schema: bool = False,
        on_truncated: Literal["error", "keep"] = "error",
        conflicts: Literal["error", "binary"] = "error",
        lists: Literal["list", "array"] = "list",
        npy_ext: int | None = None,
        numpy_extension: bool = False,
        storage_options: list[tuple[str, str]] | None = None,
        eager: bool = False,
        whole_chunks: bool = False,
        hold_decompressed: int | None = None,
    ) -> None: ...
    @property
    def layout(self) -> str: ...
    @property
    def truncation(self) -> tuple[int, int] | None: ...
    @property
    def layout_reason(self) -> str: ...
    @property
    def columns(self) -> list[str]: ...
    def __arrow_c_schema__(self) -> object: ...
    def empty(self) -> ArrowStream: ...
    def decoded_schema(self) -> ArrowStream: ...
    def __iter__(self) -> Iterator[ArrowStream]: ...
    def __next__(self) -> ArrowStream: ...
    def read_all(self) -> ArrowStream: ...

def unify_schemas(schemas: list[tuple[str, Any]]) -> ArrowStream | None: ...
def cli_main(argv: list[str]) -> int: ...
def write(
    data: Any,
    path: str | None = None,
    *,
    layout: Literal["auto", "records", "columns", "values"] | None = None,
    aligned: bool = False,
    whole_table: bool = False,
    missing: Literal["auto", "nil", "omit"] = "auto",
    dialect: Literal["auto", "msgpack-numpy", "openpi"] = "auto",
    storage_options: list[tuple[str, str]] | None = None,
    fsync: bool = True,
    target: Any | None = None,
    index: bool = False,
    in_memory: bool = False,
) -> bytes | None: ...
def write_iter(
    schema: Any,
    batches: Any,
    path: str | None = None,
    target: Any | None = None,
    *,
    layout: Literal["auto", "records", "columns", "values"] | None = None,
    aligned: bool = False,
    missing: Literal["auto", "nil", "omit"] = "auto",
    dialect: Literal["auto", "msgpack-numpy", "openpi"] = "auto",
    storage_options: list[tuple[str, str]] | None = None,
    fsync: bool = True,
    index: bool = False,
) -> None: ...

# the `msgpack` namespace (msgpack_arrow/expressions.py; python/src/series.rs)
def decode_blobs(data: Any, dtype: str | None = None) -> ArrowStream: ...
def encode_blobs(data: Any) -> ArrowStream: ...
def infer_blobs(data: Any) -> ArrowStream: ...
def dtype_token(schema: Any) -> str: ...

#: URLs of remote stores (s3://, gs://, az://, http(s)://) are read and written.
REMOTE: bool

def expand_url(url: str, storage_options: list[tuple[str, str]] | None = None) -> list[str]: ...
