//! The aligned writer: every ndarray payload starts at an aligned file offset, using only wider
//! (valid) msgpack encodings, so every msgpack-numpy decoder still reads it — Python's and the Rust
//! `msgpack-numpy` crate — and our reader takes tensors from such files without a copy.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};
use msgpack_arrow::{Layout, ReaderBuilder, WriterBuilder};

fn table(rows: usize, dim: usize) -> RecordBatch {
    let vals = Float32Array::from((0..rows * dim).map(|v| v as f32 * 0.5).collect::<Vec<_>>());
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let emb = FixedSizeListArray::new(item, dim as i32, Arc::new(vals), None);
    let ids = Int64Array::from((0..rows as i64).collect::<Vec<_>>());
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("emb", emb.data_type().clone(), true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(ids) as ArrayRef, Arc::new(emb)],
    )
    .unwrap()
}

fn write(b: &RecordBatch, layout: Layout, aligned: bool) -> Vec<u8> {
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .with_aligned(aligned)
        .build(Vec::new(), b.schema())
        .unwrap();
    w.write(b).unwrap();
    w.finish().unwrap()
}

/// Offsets of every ndarray payload: the `data` entries of maps nested in the records.
fn payload_offsets(bytes: &[u8]) -> Vec<usize> {
    use msgpack_arrow::wire::cursor::{Cursor, Kind};
    fn walk(c: &mut Cursor<'_>, out: &mut Vec<usize>) {
        match c.peek_kind().unwrap() {
            Kind::Map => {
                let n = c.read_map_len().unwrap();
                for _ in 0..n {
                    let (k, _) = c.read_str_or_bin().unwrap();
                    if k == b"data" && c.peek_kind().unwrap() == Kind::Bin {
                        out.push(c.read_str_or_bin().unwrap().1);
                    } else {
                        walk(c, out);
                    }
                }
            }
            _ => c.skip(64).unwrap(),
        }
    }
    let mut c = Cursor::new(bytes, 0);
    let mut out = Vec::new();
    while !c.is_empty() {
        walk(&mut c, &mut out);
    }
    out
}

#[test]
fn payloads_are_aligned_and_the_rust_crate_reads_them_zero_copy() {
    let b = table(50, 7);
    let plain = write(&b, Layout::Records, false);
    let aligned = write(&b, Layout::Records, true);
    // the plain writer is what Python writes: its payloads are not aligned
    assert!(payload_offsets(&plain).iter().any(|o| o % 8 != 0));
    let offs = payload_offsets(&aligned);
    assert_eq!(offs.len(), 50);
    assert!(offs.iter().all(|o| o % 64 == 0), "{offs:?}");

    // the Rust msgpack-numpy crate: records as maps of {id, emb}; with an aligned base its
    // CowNDArray borrows the payload instead of copying
    #[derive(serde::Deserialize)]
    struct Rec<'a> {
        id: i64,
        #[serde(borrow)]
        emb: msgpack_numpy::CowNDArray<'a>,
    }
    let base = Buffer::from(aligned.as_slice()); // 64-byte aligned copy of the file
    let mut de = rmp_serde::Deserializer::from_read_ref(base.as_slice());
    for row in 0..50 {
        let r: Rec = serde::Deserialize::deserialize(&mut de).unwrap();
        assert_eq!(r.id, row);
        let a = r.emb.into_f32_array().unwrap();
        assert!(a.is_view(), "row {row} was copied");
        assert_eq!(a[[6]], (row as usize * 7 + 6) as f32 * 0.5);
    }
}

#[test]
fn our_reader_takes_aligned_columns_zero_copy() {
    let b = table(1000, 16);
    for aligned in [false, true] {
        let bytes = Buffer::from(write(&b, Layout::Columns, aligned).as_slice());
        let range = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
        let r = ReaderBuilder::new()
            .with_layout(Layout::Columns)
            .build_from_buffer(bytes.clone())
            .unwrap();
        let got = r.collect_batches().unwrap();
        let emb = got[0]
            .column(1)
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .unwrap();
        let ptr = emb.values().to_data().buffers()[0].as_ptr() as usize;
        assert_eq!(
            range.contains(&ptr),
            aligned,
            "aligned={aligned}: zero-copy only when aligned"
        );
        assert_eq!(got[0], b.clone().with_schema(got[0].schema()).unwrap());
    }
}
