"""Several files read as one: the columns and types their rows would have in one concatenated file.

Why: a glob is read with its first file's columns and types, as Polars' readers do; shards of one
dump often differ only in what a single file would have merged (a column all nil in one shard,
ints in one and floats in the next, a key that first appears in a later shard). The eager readers
then type the files together instead of failing on the second one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

# msgpack ints and floats in one column widen to Float64, as inside one file (Int64 with UInt64
# does not: only a file's values tell whether a negative one is among them; nor Float32, which
# may be numpy float32 scalars, a conflict beside ints in one file)
_NUMBERS = (pl.Int64, pl.Float64)


def unify(a: Any, b: Any, top: bool = True) -> Any | None:
    """The type a column of values of types ``a`` and ``b`` gets in one file; ``None`` when the
    two conflict there too, or where a schema cannot say what one file's rows would (ndarrays of
    other shapes are a List column that reads ndarrays only when inferred)."""
    if a == b:
        return a
    if a == pl.Null:
        return b
    if b == pl.Null:
        return a
    # (at the top only: ints widened there are checked to be exact, `widened_ints`)
    if top and a in _NUMBERS and b in _NUMBERS:
        return pl.Float64
    if isinstance(a, pl.List) and isinstance(b, pl.List):
        inner = unify(a.inner, b.inner, top=False)
        return None if inner is None else pl.List(inner)
    if isinstance(a, pl.Struct) and isinstance(b, pl.Struct):
        try:
            return pl.Struct(unify_columns([dict(a.to_schema()), dict(b.to_schema())], top=False))
        except Conflict:
            return None
    return None


class Conflict(Exception):
    """Column ``column`` is ``here`` in one schema and ``before`` in those before it."""

    def __init__(self, column: str, before: Any, here: Any) -> None:
        super().__init__(column)
        self.column, self.before, self.here = column, before, here


def unify_columns(schemas: Iterable[dict[str, Any]], top: bool = True) -> dict[str, Any]:
    """Every column of ``schemas``, in the order first seen, each of the type all of them unify
    to (:class:`Conflict` where a column's types do not)."""
    out: dict[str, Any] = {}
    for s in schemas:
        for name, t in s.items():
            if name in out:
                u = unify(out[name], t, top)
                if u is None:
                    raise Conflict(name, out[name], t)
                out[name] = u
            else:
                out[name] = t
    return out


def widened_ints(schema: dict[str, Any], together: dict[str, Any]) -> list[str]:
    """The Int64 columns of one file's ``schema`` that ``together`` makes Float64: their values
    must be ones a float64 holds exactly (a file of both refuses the others too)."""
    return [n for n, t in schema.items() if t == pl.Int64 and together.get(n) == pl.Float64]


def inexact_int(values: Iterable[int]) -> int | None:
    """The first of ``values`` that no float64 holds exactly."""
    return next((v for v in values if int(float(v)) != v), None)
