//! SPEC §4.2 (read → write reproduces Python's bytes) and §4.3 (write → read gives the same table),
//! over the golden corpus written by the real msgpack_numpy.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use msgpack_arrow::{Layout, ReaderBuilder, WriterBuilder};

use crate::common::*;

fn good(name: &str) -> PathBuf {
    golden_dir().join("good").join(format!("{name}.msgpack"))
}

fn read_bytes(
    bytes: &[u8],
    layout: Layout,
) -> msgpack_arrow::Result<(Vec<RecordBatch>, arrow_schema::SchemaRef, Layout)> {
    let r = ReaderBuilder::new()
        .with_layout(layout)
        .with_batch_size(7)
        .build_from_slice(bytes)?;
    let (s, l) = (r.schema(), r.layout());
    Ok((r.collect::<msgpack_arrow::Result<Vec<_>>>()?, s, l))
}

fn write(
    batches: &[RecordBatch],
    schema: arrow_schema::SchemaRef,
    layout: Layout,
) -> msgpack_arrow::Result<Vec<u8>> {
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .build(Vec::new(), schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn read_then_write_reproduces_python_bytes() {
    let m = manifest();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in m["good"].as_array().unwrap() {
        if !case["byte_exact"].as_bool().unwrap() {
            continue;
        }
        n += 1;
        let name = case["name"].as_str().unwrap();
        let input = std::fs::read(good(name)).unwrap();
        let layout: Layout = case["layout"].as_str().unwrap().parse().unwrap();
        let r = read_bytes(&input, layout).and_then(|(b, s, l)| write(&b, s, l));
        match r {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(out) if out != input => {
                let at = out
                    .iter()
                    .zip(&input)
                    .position(|(a, b)| a != b)
                    .unwrap_or(out.len().min(input.len()));
                failures.push(format!(
                    "{name}: differs at byte {at} (wrote {} bytes, input {})",
                    out.len(),
                    input.len()
                ))
            }
            Ok(_) => {}
        }
    }
    assert!(n >= 10, "only {n} byte-exact cases in the corpus");
    assert!(
        failures.is_empty(),
        "{} of {n} byte-exact cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn write_then_read_returns_the_same_table_in_every_layout() {
    let m = manifest();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in m["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let input = std::fs::read(good(name)).unwrap();
        let layout: Layout = case["layout"].as_str().unwrap().parse().unwrap();
        let Ok((batches, schema, _)) = read_bytes(&input, layout) else {
            continue;
        };
        let Some(table) = concat(&batches) else {
            continue;
        };
        let mut outs = vec![Layout::Records, Layout::Columns];
        if schema.fields().len() == 1 {
            outs.push(Layout::Values);
        }
        for out in outs {
            n += 1;
            let got =
                write(&batches, schema.clone(), out).and_then(|bytes| read_bytes(&bytes, out));
            match got {
                Err(e) => failures.push(format!("{name} via {out}: {e}")),
                Ok((b, _, _)) => {
                    let Some(back) = concat(&b) else {
                        failures.push(format!("{name} via {out}: no rows back"));
                        continue;
                    };
                    if back.num_rows() != table.num_rows()
                        || back.num_columns() != table.num_columns()
                    {
                        failures.push(format!(
                            "{name} via {out}: shape {}x{} != {}x{}",
                            back.num_rows(),
                            back.num_columns(),
                            table.num_rows(),
                            table.num_columns()
                        ));
                        continue;
                    }
                    for i in 0..table.num_columns() {
                        let (a, b) = (norm_array(table.column(i)), norm_array(back.column(i)));
                        if a.data_type() != b.data_type() || a.to_data() != b.to_data() {
                            failures.push(format!(
                                "{name} via {out}: column {} differs: {} vs {}",
                                table.schema().field(i).name(),
                                a.data_type(),
                                b.data_type()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} round trips failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn column_map_chunks_are_kept_only_while_all_their_rows_are() {
    // col_chunks: two column maps of 3 and 2 rows (byte-exact above); a table holding fewer rows
    // than the file had is written as one map, which reads back as those rows
    let input = std::fs::read(good("col_chunks")).unwrap();
    let (batches, schema, layout) = read_bytes(&input, Layout::Columns).unwrap();
    assert_eq!(
        schema
            .metadata()
            .get("msgpack_arrow.chunks")
            .map(String::as_str),
        Some("3,2")
    );
    let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    let head = all.slice(0, 4);
    let out = write(std::slice::from_ref(&head), schema.clone(), layout).unwrap();
    // auto takes a file of one column map for `columns` (two maps would be records)
    let (back, s2, l2) = read_bytes(&out, Layout::Auto).unwrap();
    assert_eq!(l2, Layout::Columns);
    assert!(!s2.metadata().contains_key("msgpack_arrow.chunks"));
    // ... also when read with the schema of the chunked file: chunks are a fact of one file
    let r = ReaderBuilder::new()
        .with_schema(schema.clone())
        .build_from_slice(&out)
        .unwrap();
    assert!(!r.schema().metadata().contains_key("msgpack_arrow.chunks"));
    let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
    assert_eq!(back.num_rows(), 4);
    for (i, col) in back.columns().iter().enumerate() {
        assert_eq!(col.as_ref(), head.column(i).as_ref(), "column {i}");
    }
}
