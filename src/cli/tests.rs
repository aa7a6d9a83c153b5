use super::show::cut;
use super::*;
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray,
};
use clap::CommandFactory;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{Field, Schema};

use crate::types::meta;
use crate::Layout;

#[test]
fn cli_definition_is_valid() {
    Cli::command().debug_assert();
}

#[test]
fn cut_cells() {
    assert_eq!(cut("abcdef", 4), "abc…");
    assert_eq!(cut("abc", 4), "abc");
}

fn cli(args: &[&str]) -> CliResult<()> {
    let mut v = vec!["msgpack-arrow"];
    v.extend_from_slice(args);
    run(Cli::try_parse_from(v).map_err(|e| e.to_string())?)
}

#[test]
fn overrides_infer_rows_and_n_rows() {
    let d = tempfile::tempdir().unwrap();
    // {"label": 1} {"label": "two"} {"label": 3}: an int/str conflict
    let mut data = Vec::new();
    for v in [&b"\x01"[..], b"\xa3two", b"\x03"] {
        data.extend_from_slice(b"\x81\xa5label");
        data.extend_from_slice(v);
    }
    let input = d.path().join("c.msgpack");
    std::fs::write(&input, &data).unwrap();
    let out = d.path().join("c.parquet");
    let e = cli(&["convert", s(&input), "-o", s(&out)]).unwrap_err();
    assert!(
        e.contains("type conflict") && e.contains("--schema-overrides"),
        "{e}"
    );
    assert!(e.contains("record 1"), "{e}");
    cli(&[
        "convert",
        s(&input),
        "-o",
        s(&out),
        "--schema-overrides",
        "label=str",
        "-q",
    ])
    .unwrap();
    let t = crate::io::open_table(&out, &ReadOptions::default()).unwrap();
    let b = t.batches.map(|b| b.unwrap()).next().unwrap();
    let labels: Vec<_> = b.column(0).as_string::<i32>().iter().flatten().collect();
    assert_eq!(labels, ["1", "two", "3"]);
    // the first row alone decides the type; the second is then an error of the decoder
    let e = cli(&["convert", s(&input), "-o", s(&out), "--infer-rows", "1"]).unwrap_err();
    assert!(e.contains("record 1"), "{e}");
    // two rows read: none of the conflict's rows beyond them is touched
    std::fs::remove_file(&out).ok();
    let text = head_text(s(&input), 5, 20, &parse_read(&["--n-rows", "1"])).unwrap();
    assert!(text.contains("(1 row shown)"), "{text}");
    let e = cli(&[
        "schema",
        s(&input),
        "--schema-overrides",
        "label=complex256",
    ])
    .unwrap_err();
    assert!(e.contains("unknown type"), "{e}");
}

fn parse_read(extra: &[&str]) -> ReadArgs {
    let mut args = vec!["m", "schema", "x"];
    args.extend_from_slice(extra);
    match Cli::try_parse_from(args).unwrap().cmd {
        Cmd::Schema { read, .. } => read,
        _ => unreachable!(),
    }
}

#[test]
fn head_of_an_empty_table_prints_its_header_and_0_rows() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("e.msgpack");
    std::fs::write(&empty, b"").unwrap();
    let text = head_text(s(&empty), 5, 20, &parse_read(&[])).unwrap();
    assert!(text.ends_with("(0 rows)\n"), "{text}");
    // a table whose rows are all filtered out still shows its columns
    let rec = d.path().join("r.msgpack");
    std::fs::write(&rec, b"\x81\xa2id\x01").unwrap();
    let text = head_text(s(&rec), 0, 20, &parse_read(&[])).unwrap();
    assert!(
        text.contains("| id ") && text.ends_with("(0 rows)\n"),
        "{text}"
    );
}

#[test]
fn text_is_refused_and_no_output_is_written() {
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("t.csv");
    std::fs::write(&csv, "id,name\n1,alpha\n2,beta\n").unwrap();
    let out = d.path().join("t.parquet");
    let e = cli(&["convert", s(&csv), "-o", s(&out)]).unwrap_err();
    assert!(
        e.starts_with(&format!("{}: input looks like text (CSV?)", csv.display())),
        "{e}"
    );
    assert!(!out.exists());
    let e = cli(&["schema", s(&csv)]).unwrap_err();
    assert!(e.contains("looks like text"), "{e}");
    // asked for explicitly, it reads
    cli(&[
        "convert",
        s(&csv),
        "-o",
        s(&out),
        "--layout",
        "values",
        "-q",
    ])
    .unwrap();
    assert!(out.exists());
}

/// A records msgpack file: id (int), emb (2x3 float32 ndarrays, big-endian), name (str), x (nullable int).
fn sample(dir: &Path, nulls: bool) -> PathBuf {
    let item = Arc::new(Field::new("item", arrow_schema::DataType::Float32, true));
    let inner = FixedSizeListArray::try_new(
        item,
        3,
        Arc::new(Float32Array::from_iter_values((0..24).map(|i| i as f32))),
        None,
    )
    .unwrap();
    let inner_field = Arc::new(Field::new("item", inner.data_type().clone(), true));
    let emb = FixedSizeListArray::try_new(inner_field, 2, Arc::new(inner), None).unwrap();
    let md = HashMap::from([
        (meta::DTYPE.to_string(), ">f4".to_string()),
        (meta::KIND.to_string(), "ndarray".to_string()),
    ]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", arrow_schema::DataType::Int64, true),
        Field::new("emb", emb.data_type().clone(), true).with_metadata(md),
        Field::new("name", arrow_schema::DataType::Utf8, true),
        Field::new("x", arrow_schema::DataType::Int64, true),
    ]));
    let x = if nulls {
        vec![Some(1), None, Some(3), Some(4)]
    } else {
        vec![Some(1), Some(2), Some(3), Some(4)]
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![10, 20, 30, 40])),
        Arc::new(emb),
        Arc::new(StringArray::from(vec!["a", "bb", "", "dddd"])),
        Arc::new(Int64Array::from(x)),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let mut w = crate::WriterBuilder::new()
        .with_layout(Layout::Records)
        .build(Vec::new(), schema)
        .unwrap();
    w.write(&batch).unwrap();
    let p = dir.join(if nulls { "nulls.msgpack" } else { "s.msgpack" });
    std::fs::write(&p, w.finish().unwrap()).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn round_trips_are_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = sample(d, false);
    let original = std::fs::read(&input).unwrap();
    for (mid, extra) in [
        ("t.parquet", &[][..]),
        ("t.feather", &["--compression", "zstd"][..]),
        ("t.arrow", &["--compression", "lz4"][..]),
        ("t.msgpack.zst", &[][..]),
        ("t.msgpack.gz", &[][..]),
        ("t.mpk.lz4", &[][..]),
    ] {
        let mid = d.join(mid);
        let mut args = vec!["convert", s(&input), "-o", s(&mid), "-q"];
        args.extend_from_slice(extra);
        cli(&args).unwrap();
        let back = d.join("back.msgpack");
        cli(&["convert", s(&mid), "-o", s(&back)]).unwrap();
        assert_eq!(
            std::fs::read(&back).unwrap(),
            original,
            "via {}",
            mid.display()
        );
    }
    // Several inputs (a directory, a glob) into one output.
    let many = d.join("many.parquet");
    cli(&[
        "convert",
        s(d),
        &format!("{}/*.msgpack", s(d)),
        "-o",
        s(&many),
    ])
    .unwrap();
    let text = head_text(s(&many), 100, 60, &read_args()).unwrap();
    // The directory: s, back, and t.msgpack.zst/.gz, t.mpk.lz4 (5 files); the glob: s and back.
    assert!(
        text.contains("(28 rows shown)") || text.contains("(28 of 28 rows)"),
        "{text}"
    );
}

fn read_args() -> ReadArgs {
    match Cli::try_parse_from(["m", "schema", "x"]).unwrap().cmd {
        Cmd::Schema { read, .. } => read,
        _ => unreachable!(),
    }
}

#[test]
fn schema_and_head_text() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample(dir.path(), true);
    let text = schema_text(s(&input), &read_args()).unwrap();
    assert!(text.starts_with("layout: records (auto"), "{text}");
    assert!(
        text.contains("rows: 4\ncolumns: 4\n  id: i64\n  emb: f32[2, 3]  msgpack_numpy.dtype=>f4"),
        "{text}"
    );
    let text = head_text(s(&input), 2, 12, &read_args()).unwrap();
    assert!(
        text.contains("| 10 ") && text.contains("| null") && !text.contains("| 30 "),
        "{text}"
    );
    assert!(text.contains("[[0.0, 1.0,…"), "{text}");
    assert!(text.ends_with("(2 rows shown)\n"), "{text}");
    let pq = dir.path().join("n.parquet");
    cli(&["convert", s(&input), "-o", s(&pq)]).unwrap();
    let text = schema_text(s(&pq), &read_args()).unwrap();
    assert!(
        text.starts_with("format: parquet\nlayout: records (recorded"),
        "{text}"
    );
}

#[test]
fn failures_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = sample(d, true);
    let out = d.join("o.npz");
    std::fs::write(&out, b"previous").unwrap();
    let e = cli(&["convert", s(&input), "-o", s(&out)]).unwrap_err();
    assert!(
        e.contains("\"x\"") && e.contains("row 1 is null") && e.contains("cannot hold nulls"),
        "{e}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
    // --columns without the nullable column works
    cli(&["convert", s(&input), "-o", s(&out), "--columns", "emb,id"]).unwrap();
    assert_ne!(std::fs::read(&out).unwrap(), b"previous");

    let trunc = d.join("trunc.msgpack");
    let bytes = std::fs::read(&input).unwrap();
    std::fs::write(&trunc, &bytes[..bytes.len() - 5]).unwrap();
    let pq = d.join("t.parquet");
    let e = cli(&["convert", s(&trunc), "-o", s(&pq)]).unwrap_err();
    assert!(
        e.starts_with(&format!("{}: ", trunc.display())) && e.contains("truncated"),
        "{e}"
    );
    assert!(!pq.exists());
    let names: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
        "{names:?}"
    );
    // asked to, it keeps the complete records before the cut (the sample has 4)
    cli(&[
        "convert",
        s(&trunc),
        "-o",
        s(&pq),
        "--on-truncated",
        "keep",
        "-q",
    ])
    .unwrap();
    let kept = crate::io::open_table(&pq, &ReadOptions::default()).unwrap();
    let rows: usize = kept.batches.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 3);
    std::fs::remove_file(&pq).unwrap();

    let other = d.join("other.parquet");
    cli(&["convert", s(&input), "-o", s(&other), "--columns", "id"]).unwrap();
    let e = cli(&["convert", s(&input), s(&other), "-o", s(&pq)]).unwrap_err();
    assert!(
        e.starts_with(&format!(
            "{}: schema differs from the first input",
            other.display()
        )),
        "{e}"
    );

    let e = cli(&["convert", s(&input), "-o", s(&d.join("x.csv"))]).unwrap_err();
    assert!(e.contains("--format"), "{e}");
    let e = cli(&[
        "convert",
        s(&input),
        "-o",
        s(&d.join("x.npz")),
        "--compression",
        "zstd",
    ])
    .unwrap_err();
    assert!(e.contains("--compression applies"), "{e}");
    let e = cli(&[
        "convert",
        s(&input),
        "-o",
        s(&d.join("x.feather")),
        "--compression",
        "snappy",
    ])
    .unwrap_err();
    assert!(e.contains("snappy"), "{e}");
    let e = cli(&[
        "convert",
        s(&input),
        "-o",
        s(&pq),
        "--compression",
        "brotli",
    ])
    .unwrap_err();
    assert!(e.contains("brotli"), "{e}");
}

#[test]
fn hold_decompressed_takes_a_byte_count_and_zero_still_types_every_row() {
    assert_eq!(
        parse_read(&["--hold-decompressed", "64M"]).hold_decompressed,
        Some(64 << 20)
    );
    assert_eq!(
        parse_read(&["--hold-decompressed", "0"]).hold_decompressed,
        Some(0)
    );
    assert_eq!(parse_read(&[]).hold_decompressed, None);
    // a batch of 0 bytes is still refused
    let convert =
        |b: &str| Cli::try_parse_from(["m", "convert", "x", "-o", "y.parquet", "--batch-bytes", b]);
    assert!(convert("0").is_err());
    assert!(convert("1K").is_ok());

    // ints for 2,000 rows, then a float: past the first 1,000 rows the column widens
    let d = tempfile::tempdir().unwrap();
    let mut raw = Vec::new();
    for i in 0..3000u32 {
        rmp::encode::write_map_len(&mut raw, 1).unwrap();
        rmp::encode::write_str(&mut raw, "n").unwrap();
        if i == 2000 {
            rmp::encode::write_f64(&mut raw, 2000.5).unwrap();
        } else {
            rmp::encode::write_uint(&mut raw, i.into()).unwrap();
        }
    }
    let plain = d.path().join("late.msgpack");
    std::fs::write(&plain, &raw).unwrap();
    let gz = d.path().join("late.msgpack.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut enc, &raw).unwrap();
    enc.finish().unwrap();
    let want = schema_text(s(&plain), &parse_read(&[])).unwrap();
    assert!(want.contains("n: f64"), "{want}");
    // held whole, held in part (then decompressed again), never held (two passes)
    for hold in ["1G", "1K", "0"] {
        let got = schema_text(s(&gz), &parse_read(&["--hold-decompressed", hold])).unwrap();
        assert_eq!(got, want, "--hold-decompressed {hold}");
    }
    // typed from the first rows only, the float is a conflict
    let sampled = schema_text(s(&gz), &parse_read(&["--infer-rows", "1000"])).unwrap();
    assert_ne!(sampled, want);
}
