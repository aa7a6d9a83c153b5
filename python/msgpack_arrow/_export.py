"""Handing Polars frames to the extension through the Arrow C stream interface."""

from __future__ import annotations

import polars as pl

#: The least mean rows per piece for which :func:`pieces` cuts a frame.
PIECE_MIN_ROWS = 1024


def pieces(df: pl.DataFrame) -> list[pl.DataFrame]:
    """``df`` cut at every chunk boundary of its columns, each piece one chunk per column.

    Why: Polars' ``DataFrame.__arrow_c_stream__`` first rechunks the frame (in place), a copy of
    the whole table into fresh memory (300 MB and 77,000 page faults for the embedding table read
    back in 19 batches, more than the encoding itself). A slice at chunk boundaries exports its
    chunks as they are. Frames of many small chunks are left whole: their copy is cheap, and a
    piece costs a slice and an export.
    """
    # a frame too short to cut, or of one chunk per column: one call, where the loop below costs
    # ~4 us a column (and n_chunks("all") ~0.7)
    if df.width == 0 or df.height < 2 * PIECE_MIN_ROWS or max(df.n_chunks("all")) == 1:
        return [df]
    cuts: set[int] = set()
    for s in df.get_columns():
        at = 0
        for n in s.chunk_lengths()[:-1]:
            at += n
            cuts.add(at)
    if not cuts or df.height < PIECE_MIN_ROWS * (len(cuts) + 1):
        return [df]
    edges = [0, *sorted(cuts), df.height]
    return [df.slice(a, b - a) for a, b in zip(edges, edges[1:])]
