//! Interop checks against the real readers and writers: pyarrow, polars and numpy read what we
//! write (Parquet, Feather, NPZ), and we read what they write.
//!
//! Python comes from `MSGPACK_ARROW_PYTHON` (the Makefile points it at the project venv, which has
//! numpy, pyarrow and polars). Unset, these tests fail with a message rather than skip silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float16Array, Float32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use super::{open_table, AtomicFile, Compression, ReadOptions};
use crate::error::Result;

fn python() -> PathBuf {
    match std::env::var_os("MSGPACK_ARROW_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "MSGPACK_ARROW_PYTHON is not set: run the tests via `make test`, which points it at the \
             project venv (a Python with numpy, pyarrow and polars)"
        ),
    }
}

/// Run `script` with `args`; panic with its output unless it exits 0.
fn run_python(script: &str, args: &[&Path]) {
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python().display()));
    assert!(
        out.status.success(),
        "python failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// int64, float32 FixedSizeList(3), utf8, bool, float16, timestamp[us]; 4 rows.
fn sample() -> RecordBatch {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let emb = FixedSizeListArray::try_new(
        item,
        3,
        Arc::new(Float32Array::from_iter_values(
            (0..12).map(|i| i as f32 * 0.5),
        )),
        None,
    )
    .unwrap();
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("emb", emb.data_type().clone(), true),
        Field::new("name", DataType::Utf8, true),
        Field::new("ok", DataType::Boolean, true),
        Field::new("half", DataType::Float16, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1, -2, 3, 1 << 40])),
        Arc::new(emb),
        Arc::new(StringArray::from(vec!["a", "héllo", "", "zz"])),
        Arc::new(BooleanArray::from(vec![true, false, false, true])),
        Arc::new(Float16Array::from_iter_values(
            [0.5, -1.0, 65504.0, 0.0].map(half::f16::from_f32),
        )),
        Arc::new(TimestampMicrosecondArray::from(vec![
            0,
            1,
            -1,
            1_700_000_000_123_456,
        ])),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).unwrap()
}

/// The Python expression for the sample's values, shared by the checks.
const EXPECT: &str = r#"
import datetime as dt
ids = [1, -2, 3, 1 << 40]
emb = [[i * 0.5 for i in range(r * 3, r * 3 + 3)] for r in range(4)]
names = ["a", "héllo", "", "zz"]
oks = [True, False, False, True]
halves = [0.5, -1.0, 65504.0, 0.0]
ts_us = [0, 1, -1, 1_700_000_000_123_456]
"#;

fn write_all(batch: &RecordBatch, dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let pq = dir.join("t.parquet");
    let mut f = AtomicFile::create(&pq).unwrap();
    let mut w =
        super::parquet::parquet_writer(&mut f, batch.schema(), Compression::default()).unwrap();
    w.write(&batch.slice(0, 2)).unwrap();
    w.write(&batch.slice(2, 2)).unwrap();
    w.close().unwrap();
    f.commit().unwrap();

    let feather = dir.join("t.feather");
    let mut f = AtomicFile::create(&feather).unwrap();
    let mut w = super::ipc::ipc_writer(&mut f, &batch.schema(), Compression::Lz4).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
    drop(w);
    f.commit().unwrap();

    let npz = dir.join("t.npz");
    let f = AtomicFile::create(&npz).unwrap();
    let mut w = super::npz::NpzWriter::try_new(f, batch.schema()).unwrap();
    w.write(&batch.slice(0, 3)).unwrap();
    w.write(&batch.slice(3, 1)).unwrap();
    w.finish().unwrap().commit().unwrap();
    (pq, feather, npz)
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn pyarrow_and_polars_read_our_parquet_and_feather() {
    let dir = tempfile::tempdir().unwrap();
    let (pq, feather, _) = write_all(&sample(), dir.path());
    let script = format!(
        r#"{EXPECT}
import sys, pyarrow as pa, pyarrow.parquet as papq, pyarrow.feather as paf, polars as pl
for path, t, df in [
    (sys.argv[1], papq.read_table(sys.argv[1]), pl.read_parquet(sys.argv[1])),
    (sys.argv[2], paf.read_table(sys.argv[2]), pl.read_ipc(sys.argv[2])),
]:
    s = t.schema
    assert s.field("id").type == pa.int64(), (path, s)
    assert s.field("emb").type == pa.list_(pa.float32(), 3), (path, s.field("emb").type)
    assert s.field("name").type == pa.string(), (path, s)
    assert s.field("ok").type == pa.bool_(), (path, s)
    assert s.field("half").type == pa.float16(), (path, s)
    assert s.field("ts").type == pa.timestamp("us"), (path, s)
    assert t.column("id").to_pylist() == ids
    assert t.column("emb").to_pylist() == emb, t.column("emb").to_pylist()
    assert t.column("name").to_pylist() == names
    assert t.column("ok").to_pylist() == oks
    assert [float(x) for x in t.column("half").to_pylist()] == halves
    assert t.column("ts").cast(pa.int64()).to_pylist() == ts_us
    assert df.schema["emb"] == pl.Array(pl.Float32, 3), (path, df.schema)
    assert df.schema["half"] == pl.Float16, (path, df.schema)
    assert df.schema["ts"] == pl.Datetime("us"), (path, df.schema)
    assert df["emb"].to_list() == emb
    assert df["id"].to_list() == ids and df["name"].to_list() == names and df["ok"].to_list() == oks
print("ok")
"#
    );
    run_python(&script, &[&pq, &feather]);
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn numpy_reads_our_npz_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, npz) = write_all(&sample(), dir.path());
    let script = format!(
        r#"{EXPECT}
import sys, io, zipfile, numpy as np
z = np.load(sys.argv[1])
assert list(z.keys()) == ["id", "emb", "name", "ok", "half", "ts"], list(z.keys())
want = {{
    "id": ("<i8", (4,)), "emb": ("<f4", (4, 3)), "name": ("<U5", (4,)),
    "ok": ("|b1", (4,)), "half": ("<f2", (4,)), "ts": ("<M8[us]", (4,)),
}}
for k, (d, shape) in want.items():
    a = z[k]
    assert a.dtype.str == d and a.shape == shape, (k, a.dtype.str, a.shape)
assert z["id"].tolist() == ids
assert z["emb"].tolist() == emb
assert z["name"].tolist() == names
assert z["ok"].tolist() == oks
assert z["half"].astype(float).tolist() == halves
assert z["ts"].astype(np.int64).tolist() == ts_us
# Each member is exactly what np.save writes for the same array (header, padding, data).
with zipfile.ZipFile(sys.argv[1]) as zf:
    for info in zf.infolist():
        assert info.compress_type == zipfile.ZIP_STORED, info
        ours = zf.read(info.filename)
        b = io.BytesIO()
        np.save(b, z[info.filename[:-4]])
        assert ours == b.getvalue(), (info.filename, ours[:128], b.getvalue()[:128])
print("ok")
"#
    );
    run_python(&script, &[&npz]);
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn we_read_what_numpy_pyarrow_and_polars_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (npz, npzc, pq_pa, pq_pl, feather) = (
        d.join("np.npz"),
        d.join("npc.npz"),
        d.join("pa.parquet"),
        d.join("pl.parquet"),
        d.join("pl.feather"),
    );
    let script = r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as papq, polars as pl
arrays = dict(
    f=np.arange(6, dtype=">f4"),
    m=np.asfortranarray(np.arange(24, dtype="<i2").reshape(6, 2, 2)),
    u=np.array(["a", "bb", "", "dddd", "e", "ü"]),
    s=np.array([b"x", b"", b"yz", b"\x00a", b"q", b"r"]),
    c=np.arange(6) + 1j * np.arange(6)[::-1],
    t=np.array([0, 1, 2, "NaT", 4, 5], dtype="M8[h]"),
    b=np.array([True, False] * 3),
)
np.savez(sys.argv[1], **arrays)
np.savez_compressed(sys.argv[2], **arrays)
t = pa.table({"emb": pa.array([[1.0, 2.0], [3.0, 4.0]], type=pa.list_(pa.float32(), 2)), "h": pa.array(np.array([1, 2], np.float16))})
papq.write_table(t, sys.argv[3])
df = pl.DataFrame({"a": pl.Series([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], dtype=pl.Array(pl.Int32, (2, 2))), "h": pl.Series([1.0, 2.0], dtype=pl.Float16)})
df.write_parquet(sys.argv[4])
df.write_ipc(sys.argv[5])
"#;
    run_python(script, &[&npz, &npzc, &pq_pa, &pq_pl, &feather]);

    let read = |p: &Path| -> (Arc<Schema>, RecordBatch) {
        let t = open_table(p, &ReadOptions::default()).unwrap();
        let batches: Vec<_> = t.batches.collect::<Result<_>>().unwrap();
        let b = arrow_select::concat::concat_batches(&t.schema, &batches).unwrap();
        (t.schema, b)
    };
    for p in [&npz, &npzc] {
        let (schema, b) = read(p);
        assert_eq!(schema.metadata()["msgpack_arrow.layout"], "columns");
        let md =
            |c: &str| schema.field_with_name(c).unwrap().metadata()["msgpack_numpy.dtype"].clone();
        assert_eq!(md("f"), ">f4");
        assert_eq!(md("u"), "<U4");
        assert_eq!(md("c"), "<c16");
        assert_eq!(md("t"), "<M8[h]");
        let f = b
            .column_by_name("f")
            .unwrap()
            .as_primitive::<arrow_array::types::Float32Type>();
        assert_eq!(f.values().to_vec(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        // C-order values of the Fortran array
        let m = b.column_by_name("m").unwrap();
        assert_eq!(
            m.data_type().to_string(),
            "FixedSizeList(2 x FixedSizeList(2 x Int16))"
        );
        let flat = m
            .as_fixed_size_list()
            .values()
            .as_fixed_size_list()
            .values()
            .clone();
        let flat = flat
            .as_primitive::<arrow_array::types::Int16Type>()
            .values()
            .to_vec();
        assert_eq!(flat, (0..24).collect::<Vec<i16>>());
        let u = b.column_by_name("u").unwrap().as_string::<i32>();
        assert_eq!(
            u.iter().flatten().collect::<Vec<_>>(),
            ["a", "bb", "", "dddd", "e", "ü"]
        );
        let s = b.column_by_name("s").unwrap().as_binary::<i32>();
        assert_eq!(s.value(3), b"\x00a");
        let c = b.column_by_name("c").unwrap().as_fixed_size_list();
        let parts = c
            .values()
            .as_primitive::<arrow_array::types::Float64Type>()
            .values()
            .to_vec();
        assert_eq!(&parts[..4], [0.0, 5.0, 1.0, 4.0]);
        let t = b.column_by_name("t").unwrap();
        assert_eq!(t.data_type(), &DataType::Timestamp(TimeUnit::Second, None));
        assert!(t.is_null(3) && !t.is_null(2));
        let t = t.as_primitive::<arrow_array::types::TimestampSecondType>();
        assert_eq!(t.value(4), 4 * 3600);
        let bools = b.column_by_name("b").unwrap().as_boolean();
        assert_eq!(bools.true_count(), 3);
    }
    let (schema, b) = read(&pq_pa);
    assert!(
        matches!(schema.field(0).data_type(), DataType::FixedSizeList(f, 2) if f.data_type() == &DataType::Float32)
    );
    assert_eq!(schema.field(1).data_type(), &DataType::Float16);
    assert_eq!(b.num_rows(), 2);
    for p in [&pq_pl, &feather] {
        let (schema, b) = read(p);
        let a = schema.field_with_name("a").unwrap().data_type().to_string();
        assert!(
            a.starts_with("FixedSizeList(2 x FixedSizeList(2 x Int32"),
            "{}: {a}",
            p.display()
        );
        assert_eq!(
            schema.field_with_name("h").unwrap().data_type(),
            &DataType::Float16
        );
        assert_eq!(b.num_rows(), 2);
    }

    // NPZ written back from what we read reproduces numpy's own bytes, for every member numpy
    // would write the same way (the Fortran one becomes C order, so it differs).
    let (schema, b) = read(&npz);
    let back = d.join("back.npz");
    let f = AtomicFile::create(&back).unwrap();
    let mut w = super::npz::NpzWriter::try_new(f, schema).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap().commit().unwrap();
    run_python(
        r#"
import sys, zipfile
a, b = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2])
for name in a.namelist():
    if name == "m.npy":
        continue
    assert a.read(name) == b.read(name), (name, a.read(name)[:140], b.read(name)[:140])
print("ok")
"#,
        &[&npz, &back],
    );
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn npz_tensors_as_fixed_shape_tensor_extension() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (src, pq, back) = (d.join("src.npz"), d.join("ext.parquet"), d.join("back.npz"));
    run_python(
        "import sys, numpy as np\nnp.savez(sys.argv[1], t=np.arange(24, dtype='<f4').reshape(2, 3, 4))",
        &[&src],
    );
    let opts = ReadOptions {
        reader: crate::ReaderBuilder::new().with_tensor(crate::options::TensorMode::Extension),
        ..ReadOptions::default()
    };
    let t = open_table(&src, &opts).unwrap();
    let batches: Vec<_> = t.batches.collect::<Result<_>>().unwrap();
    let f = t.schema.field(0);
    assert_eq!(
        f.metadata()["ARROW:extension:name"],
        "arrow.fixed_shape_tensor"
    );

    let mut file = AtomicFile::create(&pq).unwrap();
    let mut w = super::parquet::parquet_writer(&mut file, t.schema.clone(), Compression::default())
        .unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    file.commit().unwrap();

    let file = AtomicFile::create(&back).unwrap();
    let mut w = super::npz::NpzWriter::try_new(file, t.schema.clone()).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap().commit().unwrap();

    run_python(
        r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as papq
t = papq.read_table(sys.argv[1])
ty = t.schema.field("t").type
assert isinstance(ty, pa.FixedShapeTensorType), ty
assert ty.shape == [3, 4] and ty.value_type == pa.float32(), ty
arr = t.column("t").combine_chunks().to_numpy_ndarray()
assert arr.shape == (2, 3, 4) and (arr == np.arange(24, dtype="<f4").reshape(2, 3, 4)).all()
z = np.load(sys.argv[2])
assert z["t"].shape == (2, 3, 4) and z["t"].dtype.str == "<f4"
assert open(sys.argv[2], "rb").read() == open(sys.argv[3], "rb").read() or (z["t"] == np.load(sys.argv[3])["t"]).all()
print("ok")
"#,
        &[&pq, &back, &src],
    );
}
