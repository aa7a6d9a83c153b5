"""Exceptions raised by msgpack_arrow (also raised from its Rust extension)."""

from __future__ import annotations

__all__ = ["MsgpackArrowError", "DecodeError", "EncodeError", "TruncatedInputWarning", "TimeZoneWarning"]


class MsgpackArrowError(Exception):
    """Base class of every msgpack_arrow error."""


class _Positioned(MsgpackArrowError):
    def __init__(
        self,
        message: str,
        offset: int | None = None,
        record: int | None = None,
        column: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        #: Byte offset in the (decompressed) input where the problem was found, or None.
        self.offset = offset
        #: Index of the record (row) being read, counted from 0 over the input, or None.
        self.record = record
        #: Column path such as ``"frames.depth"``, or None.
        self.column = column
        #: The file the error is in (set when a path was read), or None.
        self.path = path

    def with_path(self, path: str) -> _Positioned:
        """The same error, naming ``path`` (a read of several files says which one failed)."""
        msg = self.args[0] if self.args else ""
        return type(self)(f"{path}: {msg}", self.offset, self.record, self.column, path)

    def __reduce__(self):  # keep the attributes through pickle (multiprocessing)
        msg = self.args[0] if self.args else ""
        return (type(self), (msg, self.offset, self.record, self.column, self.path))


class DecodeError(_Positioned, ValueError):
    """Malformed, truncated, hostile or unsupported msgpack-numpy input.

    ``str(e)`` says what and where; the position is also in ``e.offset`` (byte offset),
    ``e.record`` (row index) and ``e.column`` (column path), each None when unknown.
    """


class EncodeError(_Positioned, ValueError):
    """Data that cannot be written as msgpack-numpy (an unsupported Arrow type, ...)."""


class TruncatedInputWarning(UserWarning):
    """An input cut short (``on_truncated="keep"``) whose complete records were read: the message
    says where the cut is; ``offset`` and ``records`` hold it too."""

    def __init__(self, message: str, offset: int, records: int) -> None:
        super().__init__(message)
        self.offset = offset
        self.records = records


class TimeZoneWarning(UserWarning):
    """A Datetime column with a time zone was written: numpy's datetime64 has none, so the values
    are written as UTC datetime64 (Datetime("ns", "UTC"): msgpack timestamps) and read back
    without the zone. ``columns`` names the columns."""

    def __init__(self, message: str, columns: list[str]):
        super().__init__(message)
        self.columns = columns
