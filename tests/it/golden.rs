//! SPEC §4.1: every golden file reads as Python's msgpack_numpy decodes it (bit-exact floats).

use std::fs::File;

use arrow_array::RecordBatch;
use msgpack_arrow::{Layout, ReaderBuilder};

use crate::common::*;

fn expected(name: &str) -> Vec<RecordBatch> {
    let f = File::open(golden_dir().join("good").join(format!("{name}.arrow"))).unwrap();
    arrow_ipc::reader::FileReader::try_new(f, None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn read(
    name: &str,
    layout: &str,
    batch_size: usize,
) -> msgpack_arrow::Result<(Vec<RecordBatch>, Layout)> {
    let r = ReaderBuilder::new()
        .with_layout(layout.parse().unwrap())
        .with_batch_size(batch_size)
        .build_from_path(golden_dir().join("good").join(format!("{name}.msgpack")))?;
    let l = r.layout();
    Ok((r.collect::<msgpack_arrow::Result<Vec<_>>>()?, l))
}

fn compare(name: &str, got: &[RecordBatch], want: &[RecordBatch]) -> Result<(), String> {
    let rows: usize = got.iter().map(|b| b.num_rows()).sum();
    let want_rows: usize = want.iter().map(|b| b.num_rows()).sum();
    if rows != want_rows {
        return Err(format!("{name}: {rows} rows, expected {want_rows}"));
    }
    let (Some(g), Some(w)) = (concat(got), concat(want)) else {
        return Ok(());
    };
    let gn: Vec<_> = g
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let wn: Vec<_> = w
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if gn != wn {
        return Err(format!("{name}: columns {gn:?}, expected {wn:?}"));
    }
    for (i, n) in gn.iter().enumerate() {
        let (a, b) = (norm_array(g.column(i)), norm_array(w.column(i)));
        if a.data_type() != b.data_type() {
            return Err(format!(
                "{name}.{n}: type {}, expected {}",
                a.data_type(),
                b.data_type()
            ));
        }
        if a.to_data() != b.to_data() {
            return Err(format!(
                "{name}.{n}: values differ\n got: {a:?}\nwant: {b:?}"
            ));
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn golden_files_read_as_python_decodes_them() {
    let m = manifest();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in m["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let layout = case["layout"].as_str().unwrap();
        n += 1;
        match read(name, layout, 65536) {
            Err(e) => failures.push(format!("{name}: error {e}")),
            Ok((got, l)) => {
                if let Err(e) = compare(name, &got, &expected(name)) {
                    failures.push(e);
                }
                let want = case["auto_layout"].as_str().unwrap();
                if layout == "auto" && l.to_string() != want {
                    failures.push(format!("{name}: auto chose {l}, expected {want}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} golden cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn small_batches_give_the_same_table() {
    let m = manifest();
    let mut failures = Vec::new();
    for case in m["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if let Ok((got, _)) = read(name, case["layout"].as_str().unwrap(), 3) {
            if let Err(e) = compare(name, &got, &expected(name)) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn bad_inputs_give_positioned_errors() {
    let m = manifest();
    let mut failures = Vec::new();
    for case in m["bad"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let want = case["error"].as_str().unwrap();
        let path = golden_dir().join("bad").join(format!("{name}.msgpack"));
        let r = ReaderBuilder::new()
            .with_layout(case["layout"].as_str().unwrap().parse().unwrap())
            .build_from_path(&path)
            .and_then(|r| r.collect::<msgpack_arrow::Result<Vec<_>>>());
        match r {
            Ok(_) => failures.push(format!("{name}: no error, expected {want:?}")),
            Err(e) => {
                let s = e.to_string();
                if !s.starts_with(want) {
                    failures.push(format!("{name}: {s:?} does not start with {want:?}"));
                }
                if let (Some(off), msgpack_arrow::ErrorKind::Truncated { have, .. }) =
                    (case["offset"].as_u64(), e.kind())
                {
                    // reported from the start of the cut value: it plus what is left is where the input ends
                    if e.offset().map(|o| o + have) != Some(off) {
                        failures.push(format!(
                            "{name}: offset {:?} + {have} left != {off} ({s})",
                            e.offset()
                        ));
                    }
                } else if let Some(off) = case["offset"].as_u64() {
                    if e.offset() != Some(off) {
                        failures.push(format!(
                            "{name}: offset {:?}, expected {off} ({s})",
                            e.offset()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} bad cases wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn streaming_read_equals_in_memory_read() {
    // a `Read` source decodes batch by batch from a bounded buffer
    every_good_case_reads_as_expected(|layout, data| {
        ReaderBuilder::new()
            .with_layout(layout)
            .with_batch_size(4)
            .with_infer_rows(None)
            .build(std::io::BufReader::with_capacity(
                3,
                std::io::Cursor::new(data),
            ))
    });
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn compressed_read_equals_what_msgpack_numpy_decoded() {
    // zstd in memory: held decompressed and read as bytes, or typed by a first pass over every
    // row and decoded batch by batch, as a .zst file larger than what is held
    use msgpack_arrow::io::compress::{open_buffer, Codec, CompressedWriter};
    use std::io::Write;
    for hold in [usize::MAX, 0] {
        every_good_case_reads_as_expected(|layout, data| {
            let mut w = CompressedWriter::new(Vec::new(), Some(Codec::Zstd)).unwrap();
            w.write_all(&data).unwrap();
            let buf = arrow_buffer::Buffer::from_vec(w.finish().unwrap());
            let reopen = || open_buffer(buf.clone());
            ReaderBuilder::new()
                .with_layout(layout)
                .with_batch_size(4)
                .with_hold_decompressed(hold)
                .build_from_reopenable(reopen()?, reopen)
        });
    }
}

/// Read each good case's bytes with `read` (given its layout) and compare with what Python's
/// msgpack_numpy decoded.
fn every_good_case_reads_as_expected(
    read: impl Fn(msgpack_arrow::Layout, Vec<u8>) -> msgpack_arrow::Result<msgpack_arrow::Reader>,
) {
    let m = manifest();
    let mut failures = Vec::new();
    for case in m["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let layout = case["layout"].as_str().unwrap().parse().unwrap();
        let data =
            std::fs::read(golden_dir().join("good").join(format!("{name}.msgpack"))).unwrap();
        match read(layout, data).and_then(|r| r.collect::<msgpack_arrow::Result<Vec<_>>>()) {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(got) => {
                if let Err(e) = compare(name, &got, &expected(name)) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn projection_returns_only_the_asked_columns_in_order() {
    let path = golden_dir().join("good/rec_embedding_100.msgpack");
    let all = ReaderBuilder::new()
        .build_from_path(&path)
        .unwrap()
        .collect_batches()
        .unwrap();
    let all = concat(&all).unwrap();
    let r = ReaderBuilder::new()
        .with_projection(Some(vec!["score".into(), "id".into()]))
        .build_from_path(&path)
        .unwrap();
    let got = concat(&r.collect_batches().unwrap()).unwrap();
    let names: Vec<_> = got
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["score", "id"]);
    assert_eq!(got.column(0), all.column_by_name("score").unwrap());
    assert_eq!(got.column(1), all.column_by_name("id").unwrap());
    let e = ReaderBuilder::new()
        .with_projection(Some(vec!["nope".into()]))
        .build_from_path(&path)
        .err()
        .unwrap();
    assert!(e.to_string().contains("\"nope\" not found"), "{e}");
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn parallel_decode_equals_sequential() {
    let m = manifest();
    let mut n = 0;
    for case in m["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let layout: msgpack_arrow::Layout = case["layout"].as_str().unwrap().parse().unwrap();
        let path = golden_dir().join("good").join(format!("{name}.msgpack"));
        let read = |threads| {
            ReaderBuilder::new()
                .with_layout(layout)
                .with_batch_size(3)
                .with_threads(Some(threads))
                .build_from_path(&path)
                .and_then(|r| r.collect_batches())
        };
        let (Ok(seq), Ok(par)) = (read(1), read(4)) else {
            continue;
        };
        assert_eq!(seq.len(), par.len(), "{name}: batch count");
        for (a, b) in seq.iter().zip(&par) {
            assert_eq!(a, b, "{name}");
        }
        n += 1;
    }
    assert!(n > 40, "{n}");
}

#[test]
fn a_given_schema_is_used_without_inference_and_values_layout_keeps_one_column() {
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    // a conflict inference would refuse (int then str) reads under a schema that says Utf8? no:
    // the schema decides the decoder; values that do not fit it are errors naming the row
    let mut bytes = Vec::new();
    for v in [1i64, 2, 3] {
        bytes.push(0x81);
        bytes.extend_from_slice(b"\xa1a");
        rmp::encode::write_sint(&mut bytes, v).unwrap();
    }
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Float64, true)]));
    let b = ReaderBuilder::new()
        .with_schema(schema.clone())
        .build_from_slice(&bytes)
        .unwrap()
        .collect_batches()
        .unwrap();
    assert_eq!(b[0].schema().field(0).data_type(), &DataType::Float64);
    assert_eq!(b[0].num_rows(), 3);

    // values layout: maps are one Struct column, all-nil one Null column
    let r = ReaderBuilder::new()
        .with_layout(Layout::Values)
        .build_from_slice(&bytes)
        .unwrap();
    assert_eq!(r.schema().fields().len(), 1);
    assert!(matches!(
        r.schema().field(0).data_type(),
        DataType::Struct(_)
    ));
    let nils = [0xc0u8, 0xc0, 0xc0];
    let r = ReaderBuilder::new().build_from_slice(&nils).unwrap();
    assert_eq!(r.schema().field(0).data_type(), &DataType::Null);
    assert_eq!(r.collect_batches().unwrap()[0].num_rows(), 3);
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn walking_in_pieces_equals_walking_whole() {
    // the schema walk of a large stream is cut into a piece per thread: made to happen here on
    // every file, good and bad, it gives the same schema, batches and errors as one walk
    let m = manifest();
    let mut n = 0;
    for (kind, case) in ["good", "bad"]
        .iter()
        .flat_map(|k| m[*k].as_array().unwrap().iter().map(move |c| (*k, c)))
    {
        let name = case["name"].as_str().unwrap();
        let layout: msgpack_arrow::Layout = case["layout"].as_str().unwrap().parse().unwrap();
        let path = golden_dir().join(kind).join(format!("{name}.msgpack"));
        let read = |pieces: usize| {
            let r = ReaderBuilder::new()
                .with_layout(layout)
                .with_batch_size(3)
                .with_threads(Some(pieces))
                .with_walk_piece_bytes(if pieces > 1 { 64 } else { usize::MAX })
                .build_from_path(&path)
                .and_then(|r| Ok((r.schema(), r.collect_batches()?)));
            match r {
                Ok((schema, batches)) => format!("{schema:?}\n{batches:?}"),
                Err(e) => format!("{e} at {:?} record {:?}", e.offset(), e.record()),
            }
        };
        let whole = read(1);
        for pieces in [2, 4] {
            assert_eq!(read(pieces), whole, "{kind}/{name}, {pieces} pieces");
        }
        n += 1;
    }
    assert!(n > 90, "{n}");
}
