"""Several files read as one: the columns and types their rows would have in one concatenated file.

Why: a glob is read with its first file's columns and types, as Polars' readers do; shards of one
dump often differ only in what a single file would have merged (a column all nil in one shard,
ints in one and floats in the next, a key that first appears in a later shard, ndarrays whose
length differs from shard to shard). The eager readers then type the files together instead of
failing on the second one, by the core's rules (the CLI's ``convert`` types its inputs alike).
"""

from __future__ import annotations

from typing import Any

from ._internal import unify_schemas

__all__ = ["Inferred", "unify_schemas"]


class Inferred:
    """A schema unified from the files' own, read with as types inferred from other rows, not as
    the caller's types: a value of another kind is an error, as is an int no Float64 holds exactly
    in a column of ints and floats (as in one file), where a schema given converts values."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema

    def __arrow_c_schema__(self) -> object:
        return self.schema.__arrow_c_schema__()
