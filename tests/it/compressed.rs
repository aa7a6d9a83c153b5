//! Compressed inputs read as the same file uncompressed: the types come from every row (a first
//! pass walks them all), not from the first thousand.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use msgpack_arrow::io::compress::{open_buffer, Codec, CompressedWriter};
use msgpack_arrow::ReaderBuilder;

/// An ndarray of float32 as msgpack_numpy writes it (bin keys, `kind` empty).
fn ndarray_f4(out: &mut Vec<u8>, vals: &[f32]) {
    rmp::encode::write_map_len(out, 5).unwrap();
    rmp::encode::write_bin(out, b"nd").unwrap();
    rmp::encode::write_bool(out, true).unwrap();
    rmp::encode::write_bin(out, b"type").unwrap();
    rmp::encode::write_str(out, "<f4").unwrap();
    rmp::encode::write_bin(out, b"kind").unwrap();
    rmp::encode::write_bin(out, b"").unwrap();
    rmp::encode::write_bin(out, b"shape").unwrap();
    rmp::encode::write_array_len(out, 1).unwrap();
    rmp::encode::write_uint(out, vals.len() as u64).unwrap();
    rmp::encode::write_bin(out, b"data").unwrap();
    let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    rmp::encode::write_bin(out, &data).unwrap();
}

/// 3,000 records whose types settle late: `x` int then float (row 2,500), `z` nil then str
/// (2,900), `t` float32[2] then float32[3] (2,950), and a key only the last row has.
fn late_types() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..3000u32 {
        let last = i == 2999;
        rmp::encode::write_map_len(&mut out, 3 + u32::from(last)).unwrap();
        rmp::encode::write_str(&mut out, "x").unwrap();
        if i < 2500 {
            rmp::encode::write_sint(&mut out, i as i64 - 7).unwrap();
        } else {
            rmp::encode::write_f64(&mut out, i as f64 + 0.5).unwrap();
        }
        rmp::encode::write_str(&mut out, "z").unwrap();
        if i < 2900 {
            rmp::encode::write_nil(&mut out).unwrap();
        } else {
            rmp::encode::write_str(&mut out, &format!("late {i}")).unwrap();
        }
        rmp::encode::write_str(&mut out, "t").unwrap();
        let n = if i < 2950 { 2 } else { 3 };
        ndarray_f4(&mut out, &vec![i as f32 * 0.25; n]);
        if last {
            rmp::encode::write_str(&mut out, "only_last").unwrap();
            rmp::encode::write_bool(&mut out, true).unwrap();
        }
    }
    out
}

fn compress(data: &[u8], codec: Codec) -> Vec<u8> {
    let mut w = CompressedWriter::new(Vec::new(), Some(codec)).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

fn table(r: msgpack_arrow::Reader) -> RecordBatch {
    let schema = r.schema();
    let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// [`late_types`] as a plain file in a new directory, and its table (the one every compressed
/// read must give).
fn plain_file() -> (tempfile::TempDir, std::path::PathBuf, RecordBatch) {
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("late.msgpack");
    std::fs::write(&plain, late_types()).unwrap();
    let want = table(ReaderBuilder::new().build_from_path(&plain).unwrap());
    (d, plain, want)
}

#[test]
fn a_compressed_file_or_buffer_reads_as_the_plain_file_whatever_its_later_rows_hold() {
    let (d, plain, want) = plain_file();
    let data = late_types();
    assert_eq!(want.num_rows(), 3000);
    assert_eq!(want.num_columns(), 4, "{:?}", want.schema());
    for (codec, ext) in [
        (Codec::Zstd, "zst"),
        (Codec::Gzip, "gz"),
        (Codec::Lz4, "lz4"),
    ] {
        let packed = compress(&data, codec);
        let p = d.path().join(format!("late.msgpack.{ext}"));
        std::fs::write(&p, &packed).unwrap();
        // held in memory whole (default); held in part, then walked and read again; never held
        for hold in [None, Some(50_000), Some(0)] {
            let b = || match hold {
                Some(n) => ReaderBuilder::new().with_hold_decompressed(n),
                None => ReaderBuilder::new(),
            };
            // small batches: the first ones decoded before the rows that widen the types
            let r = b().with_batch_size(100).build_from_path(&p).unwrap();
            // the rows were counted, whether held or walked by a first pass
            assert_eq!(r.num_rows(), Some(3000), "{ext} {hold:?}");
            let got = table(r);
            assert_eq!(got.schema(), want.schema(), "{ext} {hold:?}");
            assert_eq!(got, want, "{ext} {hold:?}");
            let buf = Buffer::from_vec(packed.clone());
            let reopen = || open_buffer(buf.clone());
            let got = table(
                b().build_from_reopenable(reopen().unwrap(), reopen)
                    .unwrap(),
            );
            assert_eq!(got, want, "{ext} {hold:?} in memory");
        }
        // inferring from the first rows is still one pass, and a later row then a clear error
        let e = ReaderBuilder::new()
            .with_infer_rows(Some(1000))
            .build_from_path(&p)
            .unwrap()
            .find_map(|b| b.err())
            .expect("x holds a float at row 2,500");
        assert_eq!(e.record(), Some(2500), "{e}");
        assert!(e.to_string().contains("\"x\""), "{e}");
        // a head is inferred from its own rows, in one pass, as the plain file's head
        let head = |p: &std::path::Path| {
            table(
                ReaderBuilder::new()
                    .with_n_rows(Some(10))
                    .build_from_path(p)
                    .unwrap(),
            )
        };
        assert_eq!(head(&p), head(&plain), "{ext} head");
    }
}

#[test]
fn a_compressed_file_cut_short_gives_its_rows_then_the_decompressor_s_error() {
    let (d, _, want) = plain_file();
    let data = late_types();
    let packed = compress(&data, Codec::Gzip);
    let p = d.path().join("cut.msgpack.gz");
    std::fs::write(&p, &packed[..packed.len() * 3 / 5]).unwrap();
    for hold in [usize::MAX, 0] {
        let mut rows = 0;
        let mut err = None;
        let r = ReaderBuilder::new()
            .with_batch_size(100)
            .with_hold_decompressed(hold)
            .build_from_path(&p)
            .unwrap();
        // the rows are not known: the read keeps or refuses what the cut leaves
        assert_eq!(r.num_rows(), None, "{hold}");
        for b in r {
            match b {
                Ok(b) => {
                    // the rows before the cut, as the whole file has them (typed from them)
                    let w = want.slice(rows, b.num_rows());
                    for (i, f) in b.schema().fields().iter().enumerate() {
                        let wc = w.column_by_name(f.name()).unwrap();
                        if f.data_type() == wc.data_type() {
                            assert_eq!(b.column(i), wc, "{hold} {}", f.name());
                        }
                    }
                    rows += b.num_rows();
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let e = err.expect("the cut is an error");
        assert!(rows > 0 && rows < 3000, "{hold}: {rows} rows");
        assert!(e.to_string().contains("incomplete"), "{hold}: {e}");
    }
}

#[test]
fn rows_skipped_in_a_compressed_file_are_not_typed_when_it_is_held() {
    let (d, plain, _) = plain_file();
    let p = d.path().join("late.msgpack.zst");
    std::fs::write(&p, compress(&late_types(), Codec::Zstd)).unwrap();
    let read = |p: &std::path::Path, hold: usize| {
        ReaderBuilder::new()
            .with_skip_rows(2600)
            .with_hold_decompressed(hold)
            .build_from_path(p)
            .map(table)
    };
    let want = read(&plain, usize::MAX).unwrap();
    assert_eq!(want.num_rows(), 400);
    assert_eq!(read(&p, usize::MAX).unwrap(), want);
    // too big to hold: skipped rows are decoded by a stream read before they are dropped, so the
    // types come from the first rows, skipped ones included, and a row that does not fit them is
    // an error that names it
    let e = ReaderBuilder::new()
        .with_skip_rows(2600)
        .with_hold_decompressed(0)
        .build_from_path(&p)
        .unwrap()
        .find_map(|b| b.err())
        .expect("x holds a float at row 2,500, past the first rows");
    assert_eq!(e.record(), Some(2500), "{e}");
}

#[test]
fn a_stream_fetched_once_is_held_and_typed_from_every_row_up_to_the_bound() {
    use msgpack_arrow::io::Input;
    let (_d, _, want) = plain_file();
    let stream = |data: Vec<u8>| Input::Stream(Box::new(std::io::Cursor::new(data)));
    let got = table(
        ReaderBuilder::new()
            .build_from_held(stream(late_types()))
            .unwrap(),
    );
    assert_eq!(got, want);
    // past the bound: what was held, then the rest, read once and typed from the first rows
    let e = ReaderBuilder::new()
        .with_hold_decompressed(50_000)
        .build_from_held(stream(late_types()))
        .unwrap()
        .find_map(|b| b.err())
        .expect("x holds a float at row 2,500, past the first rows");
    assert_eq!(e.record(), Some(2500), "{e}");
    // rows whose types settle early read whole through the held bytes and the rest
    let mut settled = Vec::new();
    for i in 0..3000u32 {
        rmp::encode::write_map_len(&mut settled, 2).unwrap();
        rmp::encode::write_str(&mut settled, "x").unwrap();
        rmp::encode::write_sint(&mut settled, i as i64).unwrap();
        rmp::encode::write_str(&mut settled, "t").unwrap();
        ndarray_f4(&mut settled, &[i as f32, 0.5]);
    }
    let whole = table(ReaderBuilder::new().build_from_slice(&settled).unwrap());
    let got = table(
        ReaderBuilder::new()
            .with_hold_decompressed(50_000)
            .build_from_held(stream(settled))
            .unwrap(),
    );
    assert_eq!(got, whole);
}

#[test]
fn held_bytes_freed_behind_the_decode_give_the_plain_file_s_table() {
    // 24 MB of rows: past the step at which decoded pages are freed, on one thread and on two
    let mut data = Vec::new();
    for i in 0..12_000u32 {
        rmp::encode::write_map_len(&mut data, 2).unwrap();
        rmp::encode::write_str(&mut data, "i").unwrap();
        rmp::encode::write_uint(&mut data, u64::from(i)).unwrap();
        rmp::encode::write_str(&mut data, "t").unwrap();
        let v: Vec<f32> = (0..500).map(|k| (i * 500 + k) as f32 * 0.5).collect();
        ndarray_f4(&mut data, &v);
    }
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("big.msgpack");
    std::fs::write(&plain, &data).unwrap();
    let p = d.path().join("big.msgpack.zst");
    std::fs::write(&p, compress(&data, Codec::Zstd)).unwrap();
    let want = table(ReaderBuilder::new().build_from_path(&plain).unwrap());
    for threads in [1, 2] {
        for batch in [1000, 65_536] {
            let got = table(
                ReaderBuilder::new()
                    .with_threads(Some(threads))
                    .with_batch_size(batch)
                    .build_from_path(&p)
                    .unwrap(),
            );
            assert!(
                got == want,
                "{threads} threads, batches of {batch}: not the plain table"
            );
        }
    }
}

#[test]
fn a_gz_whose_trailer_is_cut_knows_no_row_count_and_fails() {
    // every row decompresses, then the trailer (CRC and size) is missing: an error, after all
    // the rows, held or not; the row count is not promised for an input that fails
    let (d, _, _) = plain_file();
    let packed = compress(&late_types(), Codec::Gzip);
    let p = d.path().join("trailer.msgpack.gz");
    std::fs::write(&p, &packed[..packed.len() - 4]).unwrap();
    for hold in [usize::MAX, 0] {
        let mut r = ReaderBuilder::new()
            .with_hold_decompressed(hold)
            .build_from_path(&p)
            .unwrap();
        assert_eq!(r.num_rows(), None, "{hold}");
        let e = r
            .find_map(|b| b.err())
            .expect("the cut trailer is an error");
        assert!(!e.to_string().is_empty(), "{hold}");
    }
}
