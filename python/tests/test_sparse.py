"""Records whose key sets differ (model files, event logs): a null is written as an absent key,
so the file comes back with its key sets (missing="omit"; "auto" after read_arrow)."""

from __future__ import annotations

import io

import msgpack_numpy as mn
import numpy as np
import polars as pl
import pyarrow as pa

import msgpack_arrow as ma

RECS = [
    {"name": "conv", "W": np.arange(6, dtype="<f4").reshape(2, 3), "b": np.zeros(2, dtype="<f4")},
    {"name": "act"},
    {"name": "dense", "W": np.ones((2, 3), dtype="<f4")},
]
DATA = b"".join(mn.packb(r) for r in RECS)


def test_read_arrow_then_write_gives_back_the_key_sets_byte_for_byte():
    assert ma.write_msgpack(ma.read_arrow(DATA), None, layout="auto") == DATA


def test_a_dataframe_written_with_missing_omit():
    df = ma.read_msgpack(DATA)
    assert df["W"].null_count() == 1
    out = ma.write_msgpack(df, None, missing="omit")
    assert out == DATA
    rows = list(mn.Unpacker(io.BytesIO(out), raw=False))
    assert [sorted(r) for r in rows] == [sorted(r) for r in RECS]
    # the default for a DataFrame (no record of absent keys): every key, nil where null
    nil = list(mn.Unpacker(io.BytesIO(ma.write_msgpack(df, None)), raw=False))
    assert nil[1] == {"name": "act", "W": None, "b": None}
    buf = io.BytesIO()
    ma.sink_msgpack(df.lazy(), buf, missing="omit")
    assert buf.getvalue() == DATA


def test_a_key_that_is_only_ever_nil_keeps_its_column():
    # {"note": None} in one record only: a Null column. Omitting nulls would write that key
    # nowhere and the column would vanish on the re-read; its nil is kept in the first record
    # where every column before it has appeared, so the columns come back in their order.
    recs = [{"id": 0, "x": 1}, {"id": 1}, {"id": 2, "note": None}]
    data = b"".join(mn.packb(r) for r in recs)
    table = pa.table(ma.read_arrow(data))
    assert table.column_names == ["id", "x", "note"]
    out = ma.write_msgpack(table, None, layout="auto")
    rows = list(mn.Unpacker(io.BytesIO(out), raw=False))
    assert rows == [{"id": 0, "x": 1, "note": None}, {"id": 1}, {"id": 2}]
    assert pa.table(ma.read_arrow(out)).to_pylist() == table.to_pylist()
    assert ma.read_msgpack(out).columns == ["id", "x", "note"]

    later = [{"a": 0}, {"a": 1, "b": 2}, {"a": 2, "c": None}, {"a": 3, "b": 4}]
    table = pa.table(ma.read_arrow(b"".join(mn.packb(r) for r in later)))
    out = ma.write_msgpack(table, None, layout="auto")
    rows = list(mn.Unpacker(io.BytesIO(out), raw=False))
    assert rows == [{"a": 0}, {"a": 1, "b": 2, "c": None}, {"a": 2}, {"a": 3, "b": 4}]
    assert pa.table(ma.read_arrow(out)).to_pylist() == table.to_pylist()

    # a typed column null in the first records: its key comes (as nil) with the first key that
    # follows it in the schema and is written for the first time, so the order holds
    typed = [{"a": 0, "n": None, "z": 1}, {"a": 1, "n": True}]
    table = pa.table(ma.read_arrow(b"".join(mn.packb(r) for r in typed)))
    assert table.column_names == ["a", "n", "z"]
    out = ma.write_msgpack(table, None, layout="records", missing="omit")
    assert list(mn.Unpacker(io.BytesIO(out), raw=False)) == [{"a": 0, "n": None, "z": 1}, {"a": 1, "n": True}]
    assert pa.table(ma.read_arrow(out)).column_names == ["a", "n", "z"]


def test_omit_never_loses_a_column_null_in_every_row():
    # a typed column with no value (Polars writes pl.Null columns as such too): written once as
    # nil, so the re-read has it, in its place
    df = pl.DataFrame({"id": [1, 2], "note": pl.Series([None, None], dtype=pl.Int64), "z": [None, None]})
    out = ma.write_msgpack(df, None, missing="omit")
    assert list(mn.Unpacker(io.BytesIO(out), raw=False)) == [{"id": 1, "note": None, "z": None}, {"id": 2}]
    assert ma.read_msgpack(out).columns == ["id", "note", "z"]
    # one record whose other values would make auto read it as a columns map: still one record
    one = pl.DataFrame({"a": [[1, 2]], "b": pl.Series([None], dtype=pl.Int64)})
    back = ma.read_msgpack(ma.write_msgpack(one, None, missing="omit"))
    assert back.shape == (1, 2)


def test_random_key_subsets_nested_and_nil_read_as_msgpack_gives_them():
    # every record a random subset of keys, nested maps missing, nil, or with their own missing
    # keys; batches of a few rows so the nulls of absent keys cross batch ends (they are
    # appended when a key is next seen or the batch ends). Reference: Python msgpack's rows.
    import msgpack

    rng = np.random.default_rng(11)
    keys = [f"k{i}" for i in range(40)]
    recs = []
    for r in range(500):
        rec = {"id": r}
        for k in rng.choice(keys, size=int(rng.integers(0, 12)), replace=False):
            rec[str(k)] = int(rng.integers(-5, 5)) if rng.random() < 0.8 else None
        roll = rng.random()
        if roll < 0.3:
            rec["s"] = None
        elif roll < 0.7:
            rec["s"] = {k: f"v{r}" for k in ("a", "b", "c") if rng.random() < 0.6}
        recs.append(rec)
    data = b"".join(msgpack.packb(r) for r in recs)
    want = [msgpack.unpackb(msgpack.packb(r)) for r in recs]
    for batch_size in (1, 7, 65536):
        got = ma.read_msgpack(data, batch_size=batch_size)
        rows = got.to_dicts()
        for w, g in zip(want, rows):
            for k in got.columns:
                if k == "s":
                    ws = w.get("s")
                    gs = g["s"]
                    if ws is None:
                        assert gs is None, (w, g)
                    else:
                        assert {f: ws.get(f) for f in ("a", "b", "c") if f in got.schema["s"].to_schema()} == gs, (w, g)
                else:
                    assert g[k] == w.get(k), (k, w, g)


def _unpack(data: bytes) -> list:
    return list(mn.Unpacker(io.BytesIO(data), raw=False))


def test_maps_inside_records_come_back_with_their_key_sets():
    # as the records' own keys: a nested map's absent key is no nil (msgpack_numpy gives the
    # dicts back as they were), in a map, a map in a map, and maps in a list (a key present as
    # nil and an absent one are told apart only where a field first appears, as for records)
    recs = [
        {"id": 0, "s": {"x": 1, "y": np.arange(2, dtype="<i4")}, "l": [{"a": 1}, {"b": "s"}]},
        {"id": 1, "s": {"x": 3}, "l": [{"a": 2, "b": "t"}]},
        {"id": 2, "s": {"y": np.arange(3, dtype="<i4"), "z": {"p": 1.5}}, "l": []},
        {"id": 3, "s": {"z": {"q": True}}, "l": [{}]},
    ]
    data = b"".join(mn.packb(r) for r in recs)
    out = ma.write_msgpack(ma.read_arrow(data), None, layout="auto")
    assert out == data
    got, want = _unpack(out), _unpack(data)
    assert repr(got) == repr(want)
    # the same rows read back as the same table
    assert pa.table(ma.read_arrow(out)).equals(pa.table(ma.read_arrow(data)))
    # where every nested map had its keys (nil where null), nils are written back
    full = [{"s": {"x": None, "y": 1}}, {"s": {"x": 2, "y": None}}]
    data = b"".join(mn.packb(r) for r in full)
    assert ma.write_msgpack(ma.read_arrow(data), None, layout="auto") == data
    nil = ma.write_msgpack(ma.read_arrow(b"".join(mn.packb(r) for r in recs)), None, missing="nil")
    assert _unpack(nil)[1]["s"] == {"x": 3, "y": None, "z": None}


def test_nested_absent_keys_far_into_a_large_file_are_found():
    # the walk of a large file goes in pieces on every thread: a piece that alone sees the
    # absent key still says so
    recs = [{"id": i, "m": {"a": i, "b": float(i)}, "v": np.full(16, i, dtype="<f4")} for i in range(60_000)]
    recs[45_000]["m"] = {"b": 1.0}
    data = b"".join(mn.packb(r) for r in recs)
    out = ma.write_msgpack(ma.read_arrow(data), None, layout="auto")
    assert out == data


def test_nested_key_sets_hold_across_batches():
    # which nested fields were written carries over from batch to batch (else a later batch's
    # first map would bring, as nil, fields the batches before had already written)
    recs = [{"s": {"x": 1, "y": 2}}, {"s": {"x": 3}}, {"s": {"y": 4}}, {"s": {"y": 5}}, {"s": {"x": 6}}]
    data = b"".join(mn.packb(r) for r in recs)
    out = ma.write_msgpack(ma.read_arrow(data, batch_size=2), None, layout="auto")
    assert _unpack(out) == recs
    assert out == data


def test_a_field_null_wherever_it_is_written_still_comes_back():
    # "no value" counts only the slots that are written: a struct's child may be valid under a
    # null parent (pyarrow keeps the child's own values), and a sliced list of structs (Polars
    # df[1:]) still holds the items sliced away; a field null in every written map is written
    # as nil once, so the schema read back has it
    S = pa.struct([("a", pa.int64()), ("d", pa.int64())])
    child_a = pa.array([None, 5, 2], pa.int64())
    child_d = pa.array([None, 7, None], pa.int64())  # valid only under the null parent
    m = pa.StructArray.from_arrays([child_a, child_d], fields=list(S), mask=pa.array([False, True, False]))
    t = pa.table({"id": [0, 1, 2], "m": m})
    # (a field all nil reads back as Null, as with missing="nil")
    nil = pa.table(ma.read_arrow(ma.write_msgpack(t, None, missing="nil")))
    assert nil.schema.field("m").type == pa.struct([("a", pa.int64()), ("d", pa.null())])
    back = pa.table(ma.read_arrow(ma.write_msgpack(t, None, missing="omit")))
    assert back.schema == nil.schema
    assert back.column("m").to_pylist() == t.column("m").to_pylist()
    df = pl.DataFrame({"id": [0, 1, 2], "l": [[{"a": 1, "d": 7}], [{"a": 2, "d": None}], [{"a": 3, "d": None}]]})
    part = df[1:]
    nil = ma.read_msgpack(ma.write_msgpack(part, None, missing="nil"))
    assert nil.schema["l"] == pl.List(pl.Struct({"a": pl.Int64, "d": pl.Null}))
    got = ma.read_msgpack(ma.write_msgpack(part, None, missing="omit"))
    assert got.schema == nil.schema
    assert got.to_dicts() == part.to_dicts()
    # the maps as msgpack_numpy reads them: the field is there once, then left out
    rows = _unpack(ma.write_msgpack(part, None, missing="omit"))
    assert rows == [{"id": 1, "l": [{"a": 2, "d": None}]}, {"id": 2, "l": [{"a": 3}]}]


def test_a_key_first_seen_in_a_later_batch_is_written_there():
    # a table written whole: a column with no value in its first batch but one in a later batch
    # gets no nil in the first (each batch deciding alone wrote {"a": 0, "err": nil})
    recs = [{"a": i} for i in range(5)] + [{"a": 5, "err": "boom"}, {"a": 6}]
    data = b"".join(mn.packb(r) for r in recs)
    for batch_size in (2, 3, 65536):
        t = ma.read_arrow(data, batch_size=batch_size)
        out = ma.write_msgpack(t, None, layout="auto")
        assert _unpack(out) == recs, batch_size
        assert out == data
        df = ma.read_msgpack(data, batch_size=batch_size)
        assert ma.write_msgpack(df, None, missing="omit") == data
    # a column with no value anywhere still comes back (nil where every column before it has been)
    recs = [{"a": 1, "n": None}, {"a": 2}]
    data = b"".join(mn.packb(r) for r in recs)
    back = ma.read_msgpack(ma.write_msgpack(ma.read_arrow(data, batch_size=1), None, layout="auto"))
    assert back.columns == ["a", "n"]


def test_nested_key_sets_are_tracked_per_column():
    # one column's maps lack keys, another's hold explicit nils: each is written back as it was
    # (the nils of the second are not left out because of the first)
    recs = [
        {"s": {"x": 1}, "t": {"p": None, "q": 1}},
        {"s": {"x": 2, "y": 2}, "t": {"p": None, "q": 2}},
        {"s": {"y": 3}, "t": {"p": 5, "q": None}},
    ]
    data = b"".join(mn.packb(r) for r in recs)
    table = pa.table(ma.read_arrow(data))
    assert table.schema.metadata[b"msgpack_arrow.missing_nested"] == b'["s"]'
    out = ma.write_msgpack(table, None, layout="auto")
    assert _unpack(out) == recs
    assert out == data
    # the same far into a large file, walked in pieces on every thread
    big = [{"id": i, "m": {"a": i, "b": 1.0}, "n": {"c": None, "d": i}} for i in range(60_000)]
    big[45_000]["m"] = {"b": 1.0}
    data = b"".join(mn.packb(r) for r in big)
    table = pa.table(ma.read_arrow(data))
    assert table.schema.metadata[b"msgpack_arrow.missing_nested"] == b'["m"]'
    assert ma.write_msgpack(table, None, layout="auto") == data


def test_wide_tables_read_in_batches_as_wide_as_they_are():
    # a table of more than 256 columns is read in batches of fewer than 65,536 rows (at most
    # 2**24 values each), on every thread where the walk cut its batches that short; where the
    # columns came only after a long first batch, one batch after another. Reference: msgpack.
    import msgpack

    rng = np.random.default_rng(5)
    sparse = [
        {f"k{j}": int(j * 7 + i) for j in sorted(rng.choice(2000, 40, replace=False))} for i in range(12_000)
    ]
    late = [{"id": i, "x": float(i)} for i in range(66_000)]
    late += [{"id": i, **{f"c{j}": j + i for j in range(300)}} for i in range(66_000, 66_100)]
    for recs in (sparse, late):
        data = b"".join(msgpack.packb(r) for r in recs)
        got = ma.read_msgpack(data)
        assert got.height == len(recs)
        want = pl.from_dicts(recs, schema=got.schema)
        assert got.equals(want)
        arrow = pa.table(ma.read_arrow(data))
        assert max(b.num_rows for b in arrow.to_batches()) * arrow.num_columns <= 1 << 24
        assert arrow.to_pylist()[-1] == {c: recs[-1].get(c) for c in arrow.column_names}
