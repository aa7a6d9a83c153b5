"""Files written by real producers from PyPI, read as they are, checked against the producer's own
reader (the reference), and written back where SPEC promises byte-exactness.

* srsly (spaCy/thinc's serialisation: a bundled msgpack with msgpack-numpy's hooks):
  ``srsly.msgpack_dumps`` records and a thinc-style model dict (layers of weight arrays of
  different shapes).
* datadings: ``FileWriter`` datasets (msgpack-numpy records plus ``.offsets``/``.keys`` sidecar
  files), read back with ``datadings.reader.MsgpackReader``.
* msgspec: plain msgpack with arrays as nested lists (``.tolist()``), read with ``lists="array"``.
"""

from __future__ import annotations

import msgpack_numpy as mn
import msgspec
import numpy as np
import polars as pl
import pytest
import srsly

import msgpack_arrow as ma


def test_srsly_records_read_and_write_back_byte_exact():
    rng = np.random.default_rng(0)
    recs = [
        {"id": i, "w": rng.random((2, 3)).astype("<f4"), "mask": rng.random(4) > 0.5, "name": f"x{i}", "s": np.float32(i)}
        for i in range(6)
    ]
    data = b"".join(srsly.msgpack_dumps(r) for r in recs)
    df = ma.read_msgpack(data)
    assert df.schema == pl.Schema(
        {"id": pl.Int64, "w": pl.Array(pl.Float32, (2, 3)), "mask": pl.Array(pl.Boolean, 4), "name": pl.String, "s": pl.Float32}
    )
    np.testing.assert_array_equal(df["w"].to_numpy(), np.stack([r["w"] for r in recs]))
    np.testing.assert_array_equal(df["mask"].to_numpy(), np.stack([r["mask"] for r in recs]))
    out = ma.write_msgpack(ma.read_arrow(data), None, layout="auto")
    assert out == data
    # and srsly loads what was written
    first = srsly.msgpack_loads(out[: len(srsly.msgpack_dumps(recs[0]))])
    np.testing.assert_array_equal(first["w"], recs[0]["w"])


def test_srsly_model_with_layers_of_different_shapes():
    """A thinc-style model: one map whose layers hold weights of different shapes (2-D W and
    1-D b per layer): ragged tensors, written back byte for byte."""
    rng = np.random.default_rng(1)
    model = {
        "nodes": [
            {"W": rng.random((3, 4)).astype("<f4"), "b": np.zeros(3, "<f4")},
            {"W": rng.random((2, 3)).astype("<f4"), "b": np.ones(2, "<f4")},
        ],
        "cfg": {"nO": 2, "dropout": 0.1},
    }
    blob = srsly.msgpack_dumps(model)
    df = ma.read_msgpack(blob)
    assert df.height == 1
    nodes = df["nodes"][0]
    for got, want in zip(nodes, model["nodes"]):
        assert np.array_equal(np.array(got["W"], dtype="<f4"), want["W"])
        assert np.array_equal(np.array(got["b"], dtype="<f4"), want["b"])
    assert ma.write_msgpack(ma.read_arrow(blob), None, layout="auto") == blob


def test_datadings_dataset_equals_its_own_reader(tmp_path):
    from datadings.reader import MsgpackReader
    from datadings.writer import FileWriter

    rng = np.random.default_rng(2)
    p = tmp_path / "set.msgpack"
    with FileWriter(str(p), overwrite=True, disable=True) as w:
        for i in range(40):
            w.write({"key": f"k{i}", "image": rng.integers(0, 255, (4, 4, 3), dtype=np.uint8), "label": i % 3})
    assert (tmp_path / "set.msgpack.offsets").exists()
    df = ma.read_msgpack(p)
    assert df.schema == pl.Schema({"key": pl.String, "image": pl.Array(pl.UInt8, (4, 4, 3)), "label": pl.Int64})
    with MsgpackReader(str(p)) as r:
        want = [r.get(i) for i in range(len(r))]
    assert df["key"].to_list() == [s["key"] for s in want]
    assert df["label"].to_list() == [s["label"] for s in want]
    np.testing.assert_array_equal(df["image"].to_numpy(), np.stack([s["image"] for s in want]))
    # the record boundaries datadings indexed are where our records start
    offsets = np.fromfile(tmp_path / "set.msgpack.offsets", dtype=">u8")
    sizes = np.diff(offsets)
    assert len(sizes) >= len(want) - 1
    one = ma.read_msgpack(p.read_bytes()[offsets[1] : offsets[2]])
    assert one["key"].to_list() == [want[1]["key"]]


def test_msgspec_tolist_arrays_as_tensors():
    rng = np.random.default_rng(3)
    embs = rng.random((10, 8))
    data = b"".join(msgspec.msgpack.encode({"id": i, "emb": e.tolist()}) for i, e in enumerate(embs))
    df = ma.read_msgpack(data, lists="array")
    assert df.schema["emb"] == pl.Array(pl.Float64, 8)
    np.testing.assert_array_equal(df["emb"].to_numpy(), embs)
    assert ma.write_msgpack(ma.read_arrow(data, lists="array"), None, layout="auto") == data


@pytest.mark.parametrize("n", [1, 3])
def test_msgspec_structs_read_as_records(n):
    class Point(msgspec.Struct):
        x: float
        y: float
        tags: list[str]

    data = b"".join(msgspec.msgpack.encode(Point(i, -i, ["a"] * i)) for i in range(n))
    df = ma.read_msgpack(data)
    assert df.to_dicts() == [{"x": float(i), "y": float(-i), "tags": ["a"] * i} for i in range(n)]


# numpy reads any dtype spelling: one-letter type codes (`b` is int8, only `b1` is bool) and
# names, which writers other than msgpack_numpy (msgpack-numpy-js sends `<b` for an Int8Array)
# put in `type`. Each is read as msgpack_numpy reads it.
CODES = ["b", "<b", "|b", "b1", "B", "h", ">H", "i", "I", "l", "q", "Q", "e", "f", ">d", "F", "D", "?",
         "int8", "uint8", "int16", "float32", "float64", "bool", "complex64", "int", "float", "complex", "long",
         "intp", "f4", "i8", "=u2"]


@pytest.mark.parametrize("code", CODES)
def test_every_spelling_of_a_dtype_reads_as_numpy_reads_it(code):
    import msgpack
    import msgpack_numpy as mn

    want = np.arange(-2, 4).astype(np.dtype(code))
    data = msgpack.packb({b"nd": True, b"type": code, b"kind": b"", b"shape": [6], b"data": want.tobytes()})
    ref = mn.unpackb(data)
    assert ref.dtype == want.dtype and ref.tolist() == want.tolist()
    got = ma.read_msgpack(data)["value"]
    if want.dtype.kind == "c":
        assert got.dtype == pl.Array(pl.Float32 if want.dtype.itemsize == 8 else pl.Float64, 2)
    else:
        assert got.to_numpy().dtype == want.dtype.newbyteorder("=")
    assert got.to_list() == ([[z.real, z.imag] for z in want.tolist()] if want.dtype.kind == "c" else want.tolist())


def test_bytes_an_old_writer_packed_as_raw_strings_name_the_override_that_reads_them():
    # msgpack before 1.0 packed bytes as raw str (use_bin_type=False): not UTF-8, so not text
    import msgpack

    recs = [{"key": b"\xff\x00", "v": 1}, {"key": b"ok", "v": 2}]
    data = b"".join(msgpack.packb(r, use_bin_type=False) for r in recs)
    with pytest.raises(ma.DecodeError, match="Binary") as e:
        ma.read_msgpack(data)
    assert e.value.record == 0 and e.value.column == "key"
    got = ma.read_msgpack(data, schema_overrides={"key": pl.Binary})
    ref = [r[b"key"] for r in msgpack.Unpacker(__import__("io").BytesIO(data), raw=True)]
    assert got["key"].to_list() == ref


def test_user_maps_with_str_keys_nd_type_data_are_records_as_msgpack_numpy_reads_them():
    # msgpack_numpy (raw=False) takes only bin keys b"nd"... for an ndarray: a table with columns
    # named nd, type and data (ours written back, or a log of events) is a table
    import msgpack

    df = pl.DataFrame({"type": [np.arange(2, dtype="<u8") * k for k in range(3)], "nd": [False, True, False], "data": [1.5, 2.5, 3.5]})
    out = ma.write_msgpack(df)
    ref = list(mn.Unpacker(__import__("io").BytesIO(out), raw=False))
    assert [r["nd"] for r in ref] == df["nd"].to_list()
    back = ma.read_msgpack(out)
    assert back.columns == df.columns and back["data"].to_list() == [r["data"] for r in ref]
    np.testing.assert_array_equal(back["type"].to_numpy(), np.stack([r["type"] for r in ref]))
    events = [{"nd": False, "type": "click", "data": "a"}, {"nd": True, "type": "view", "shape": [1], "data": "b"}]
    got = ma.read_msgpack(b"".join(msgpack.packb(e) for e in events))
    assert got.to_dicts() == [{**e, "shape": e.get("shape")} for e in events]
    # an old packer's numpy scalar (str keys, use_bin_type=False) is still one
    old = msgpack.packb({b"nd": False, b"type": "<i4", b"data": np.int32(7).tobytes()}, use_bin_type=False)
    assert mn.unpackb(old, raw=True) == 7
    assert ma.read_msgpack(old)["value"].to_list() == [7]


def test_numpy_masked_arrays_read_as_msgpack_numpy_reads_them():
    # netCDF4 and others hand out np.ma.MaskedArray; msgpack_numpy packs its `.data` (an ndarray)
    # as a nested ndarray map, and reads the buffer back without the mask
    rows = [{"id": i, "x": np.ma.masked_array(np.arange(6, dtype="<f4").reshape(2, 3) * i, mask=[[0, 1, 0], [0, 0, 1]])} for i in range(3)]
    data = b"".join(mn.packb(r) for r in rows)
    ref = [mn.unpackb(mn.packb(r), raw=False) for r in rows]
    got = ma.read_msgpack(data)
    assert got.schema["x"] == pl.Array(pl.Float32, (2, 3))
    np.testing.assert_array_equal(got["x"].to_numpy(), np.stack([r["x"] for r in ref]))
    cols = {"x": np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0]), "y": np.arange(4)}
    ref = mn.unpackb(mn.packb(cols), raw=False)
    got = ma.read_msgpack(mn.packb(cols))
    np.testing.assert_array_equal(got["x"].to_numpy(), ref["x"])


def test_msgpack_numpy_js_2d_arrays_with_shape_given_twice():
    # emerald-geomodelling's msgpack-numpy-js `packBinary` keys a JS Map by two distinct
    # buffers for a 2-D array: `shape` is written twice, the flat length first, then the dims.
    # Python's msgpack_numpy (a dict: the last value wins) reads it, as does the JS reader.
    import msgpack

    def kv(k, v):
        return msgpack.packb(k.encode()) + msgpack.packb(v, use_bin_type=True)

    a = np.arange(6, dtype="<f4").reshape(3, 2)
    blob = bytes([0x85]) + kv("nd", True) + kv("type", "<f4") + kv("shape", [6]) + kv("data", a.tobytes()) + kv("shape", [3, 2])
    np.testing.assert_array_equal(mn.unpackb(blob), a)
    df = ma.read_msgpack(blob, dialect="js")
    np.testing.assert_array_equal(df["value"].to_numpy(), a)
    # without the dialect a key given twice is an error that names it, as for any map
    with pytest.raises(ma.DecodeError, match="duplicate key \"shape\""):
        ma.read_msgpack(blob)


@pytest.mark.parametrize("text", ["(1+2j)", "j", "-j", "1+j", "1-J", " ( 1_0+2.5e-3J ) ", "-Infinity", "nAn", ".5j", "1.", "1_0.5_5e1_0j"])
def test_complex_strings_read_as_python_complex_reads_them(text):
    # msgpack_numpy writes repr(complex) and reads back with complex(), which other writers' strings
    # also meet: a bare j, spaces, any case of inf/nan, _ between digits
    import msgpack

    blob = msgpack.packb({"id": 1, "z": {b"complex": True, b"data": text}})
    ref = mn.unpackb(blob, raw=False)["z"]
    got = ma.read_msgpack(blob)["z"].to_list()[0]
    np.testing.assert_array_equal(got, [ref.real, ref.imag])


@pytest.mark.parametrize("text", ["1__0", "_1", "1 + 2j", "(1+2j", "1e", "1j+1", "0x1"])
def test_complex_strings_python_refuses_are_errors(text):
    import msgpack

    blob = msgpack.packb({"id": 1, "z": {b"complex": True, b"data": text}})
    with pytest.raises(ValueError):
        mn.unpackb(blob, raw=False)
    with pytest.raises(ma.DecodeError, match="complex data"):
        ma.read_msgpack(blob)


def test_complex_key_and_str_kind_as_msgpack_numpy_reads_them():
    # msgpack_numpy tests `b"complex" in obj` (not its value) and compares `kind` with b"V": a
    # str "V" beside bin keys is no structured array's kind
    import msgpack

    for flag in [1, False, "yes"]:
        blob = msgpack.packb({"z": {b"complex": flag, b"data": "3-4j"}})
        assert mn.unpackb(blob, raw=False)["z"] == 3 - 4j
        assert ma.read_msgpack(blob)["z"].to_list() == [[3.0, -4.0]]
    # str keys: a user's map for msgpack_numpy, and here
    blob = msgpack.packb({"z": {"complex": 1, "data": "3-4j"}})
    assert mn.unpackb(blob, raw=False)["z"] == {"complex": 1, "data": "3-4j"}
    assert ma.read_msgpack(blob)["z"].to_list() == [{"complex": 1, "data": "3-4j"}]
    blob = msgpack.packb({"h": {b"nd": True, b"type": "b", b"kind": "V", b"shape": [2], b"data": b"3\xfe"}, "i": 0})
    ref = mn.unpackb(blob, raw=False)["h"]
    got = ma.read_msgpack(blob)
    assert got.schema["h"] == pl.Array(pl.Int8, 2)
    np.testing.assert_array_equal(got["h"].to_numpy()[0], ref)


def test_an_nd_flag_that_is_not_true_is_a_numpy_scalar_as_msgpack_numpy_reads_it():
    # msgpack_numpy tests `obj[b"nd"] is True` for an ndarray and takes anything else for a numpy
    # scalar (other writers put 0/1 there)
    import msgpack

    for flag in [0, 1, "no"]:
        blob = msgpack.packb({"id": 1, "x": {b"nd": flag, b"type": "<i4", b"data": np.int32(-7).tobytes()}})
        ref = mn.unpackb(blob, raw=False)["x"]
        assert ref == -7 and ref.dtype == np.int32
        got = ma.read_msgpack(blob)
        assert got.schema["x"] == pl.Int32 and got["x"].to_list() == [-7]


@pytest.mark.parametrize("layout", ["records", "values", "columns"])
def test_a_1d_shape_written_as_an_int_reads_as_msgpack_numpy_reads_it(layout):
    # numpy takes an int for a 1-d shape (`np.ndarray(shape=3)`), so msgpack_numpy reads a
    # writer's `shape: 3` as (3,); other rows spell it as a list
    import io

    import msgpack

    def nd(arr, int_shape):
        shape = int(arr.shape[0]) if int_shape else list(arr.shape)
        return {b"nd": True, b"type": arr.dtype.str, b"kind": b"", b"shape": shape, b"data": arr.tobytes()}

    arrays = [np.arange(3, dtype="<f4") + i for i in range(4)]
    if layout == "records":
        blob = b"".join(msgpack.packb({"id": i, "v": nd(a, i % 2 == 0)}) for i, a in enumerate(arrays))
        ref = np.stack([r["v"] for r in mn.Unpacker(io.BytesIO(blob), raw=False)])
        got = ma.read_msgpack(blob)["v"]
    elif layout == "values":
        blob = msgpack.packb(nd(arrays[1], True))
        ref = mn.unpackb(blob, raw=False)
        got = ma.read_msgpack(blob)["value"]
    else:
        blob = msgpack.packb({"a": nd(arrays[0], True), "b": nd(arrays[1].astype("<i8"), False)})
        ref = mn.unpackb(blob, raw=False)["a"]
        got = ma.read_msgpack(blob)["a"]
    assert ref.dtype == np.float32
    np.testing.assert_array_equal(got.to_numpy(), ref)
    assert got.dtype == (pl.Array(pl.Float32, 3) if layout == "records" else pl.Float32)
