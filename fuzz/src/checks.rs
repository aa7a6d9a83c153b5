//! What the fuzz targets check. Plain functions that panic on a violation, so the fuzz targets
//! (`fuzz/fuzz_targets/`) and the integration tests (`tests/it/fuzz_regressions.rs`, which include
//! this file by path) run exactly the same checks on an input.
//!
//! The reader's options vary with the input's length, so the fuzzer reaches every combination
//! without a header eating into the msgpack bytes (the golden seeds stay valid files).

use std::io::Read;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, SchemaRef};
use msgpack_arrow::{
    Dialect, Layout, ObjectArrays, OnTruncated, Reader, ReaderBuilder, Result, TensorMode,
    WriterBuilder,
};

/// Every layout, `auto` first.
pub const LAYOUTS: [Layout; 4] = [
    Layout::Auto,
    Layout::Records,
    Layout::Columns,
    Layout::Values,
];

/// The one layout a fuzz execution reads its input in, chosen by the input's length: a replay
/// (`tests/it/fuzz_regressions.rs`) checks every layout, but a fuzz execution doing all four costs
/// four times as much, and the fuzzer reaches every layout anyway by changing lengths.
pub fn one_layout(data: &[u8], from: &'static [Layout]) -> &'static [Layout] {
    let i = data.len() / 2 % from.len();
    &from[i..=i]
}

/// Small batches and a low depth limit: many batch boundaries and depth errors per input.
fn builder(layout: Layout, v: usize, dialects: &[Dialect]) -> ReaderBuilder {
    let parallel = v % 128 == 0;
    ReaderBuilder::new()
        .with_layout(layout)
        // batches of 65-68 rows when parallel: each handful of batches is a round trip to the
        // thread pool, and at 1-4 rows an input of thousands of tiny values spent its time there
        .with_batch_size(1 + v % 4 + if parallel { 64 } else { 0 })
        .with_max_depth(8 + v % 8)
        .with_object_arrays(if v % 2 == 1 {
            ObjectArrays::Raw
        } else {
            ObjectArrays::Error
        })
        .with_tensor(if v % 3 == 0 {
            TensorMode::Extension
        } else {
            TensorMode::Array
        })
        .with_dialect(dialects[v / 5 % dialects.len()])
        // ext values of code 42 as np.save bytes (`wire::npy`) on one length in three
        .with_npy_ext((v % 3 == 1).then_some(42))
        // the parallel decoder on one length in 128; one thread elsewhere: handing batches of
        // 1-4 rows to a thread pool costs a cross-thread round trip each, and with one length in
        // eight (or 32) the pool's threads took 45% (49%) of a fuzz process's time
        .with_threads(Some(if parallel { 2 } else { 1 }))
        // and on half of those, decoding during the schema walk (a whole read's path)
        .with_eager(v % 256 == 0)
}

/// A `Read` that hands out at most 7 bytes per call, so the streaming reader refills at every
/// possible boundary.
pub struct Trickle {
    data: Vec<u8>,
    pos: usize,
}

impl Trickle {
    /// Over a copy of `data` (`build(Read)` wants a `'static` source).
    pub fn new(data: &[u8]) -> Self {
        Trickle {
            data: data.to_vec(),
            pos: 0,
        }
    }
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Everything a read gives, as text: schema and batches, or the error with its position.
fn outcome(r: Result<Reader>) -> String {
    match r.and_then(|r| Ok((r.schema(), r.collect::<Result<Vec<_>>>()?))) {
        Ok((schema, batches)) => format!("{schema:?}\n{batches:?}"),
        Err(e) => format!("{e} at {:?} record {:?}", e.offset(), e.record()),
    }
}

/// Read everything, checking each batch is valid Arrow data of the reader's schema. Returns the
/// batches, or the first error (whose text must render).
fn drain(r: Result<Reader>) -> Option<(SchemaRef, Layout, Vec<RecordBatch>)> {
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            let _ = e.to_string();
            return None;
        }
    };
    let (schema, layout) = (r.schema(), r.layout());
    let _ = r.layout_reason().len();
    let mut out = Vec::new();
    for b in r {
        match b {
            Ok(b) => {
                assert_eq!(
                    b.schema().fields().len(),
                    schema.fields().len(),
                    "batch columns differ from the reader's schema"
                );
                for (f, col) in schema.fields().iter().zip(b.columns()) {
                    assert_eq!(f.data_type(), col.data_type(), "column {}", f.name());
                    if let Err(e) = col.to_data().validate_full() {
                        panic!("column {} is invalid Arrow data: {e}", f.name());
                    }
                }
                out.push(b);
            }
            Err(e) => {
                let _ = e.to_string();
                return None;
            }
        }
    }
    Some((schema, layout, out))
}

/// The reader on arbitrary bytes: never a panic, only valid batches, in every layout, from a slice
/// and from a `Read` that trickles. Where both succeed on at most 1000 rows they agree: a stream
/// infers its schema from its first 1000 rows (`DEFAULT_STREAM_INFER_ROWS`), a slice from all of
/// them, so beyond that the types may differ by design (ints then integral floats: Int64 from a
/// stream, Float64 from a slice).
pub fn decode(data: &[u8]) {
    decode_in(data, &LAYOUTS)
}

/// [`decode`] in the given layouts only.
pub fn decode_in(data: &[u8], layouts: &[Layout]) {
    let v = data.len();
    let dialects = [Dialect::Auto, Dialect::MsgpackNumpy, Dialect::Openpi];
    for &layout in layouts {
        let b = builder(layout, v, &dialects);
        let from_slice = drain(b.clone().build_from_slice(data));
        let from_read = drain(b.clone().build(Trickle::new(data)));
        // one length in 32: the schema walk cut into pieces on 2-4 threads gives what one walk
        // gives, table or error (src/read/split.rs; by default only streams of 4 MiB or more)
        if v % 32 == 3 {
            let pieces = b
                .clone()
                .with_threads(Some(2 + v / 32 % 3))
                .with_walk_piece_bytes(1 + v / 96 % 64);
            assert_eq!(
                outcome(pieces.build_from_slice(data)),
                outcome(b.clone().build_from_slice(data)),
                "{layout}: schema walk in pieces vs in one"
            );
        }
        // a read that starts at row k gives the rows of the whole read from k on (where both
        // infer the same schema: fewer rows may infer narrower types)
        let k = v % 5;
        if let (Some((s1, _, b1)), true) = (&from_slice, k > 0) {
            if let Some((s3, _, b3)) = drain(b.with_skip_rows(k).build_from_slice(data)) {
                let rows: usize = b1.iter().map(|b| b.num_rows()).sum();
                if s3 == *s1 && k < rows {
                    let all = arrow_select::concat::concat_batches(s1, b1).expect("concatenate");
                    let want = [all.slice(k, rows - k)];
                    assert_tables_equal(s1, &want, &s3, &b3, "skip_rows vs the whole read");
                }
            }
        }
        if let (Some((s1, l1, b1)), Some((s2, l2, b2))) = (&from_slice, &from_read) {
            let rows: usize = b1.iter().map(|b| b.num_rows()).sum();
            if rows <= msgpack_arrow::read::DEFAULT_STREAM_INFER_ROWS {
                assert_eq!(l1, l2, "layout differs between slice and Read");
                assert_tables_equal(s1, b1, s2, b2, "slice vs Read");
            }
        }
    }
}

/// Whatever reads without error is written back in the layout the reader used, and must read back
/// as the same table: column names, types (field names and nullability aside) and values, floats
/// compared bit for bit.
pub fn roundtrip(data: &[u8]) {
    roundtrip_in(data, &LAYOUTS)
}

/// [`roundtrip`] in the given layouts only.
pub fn roundtrip_in(data: &[u8], layouts: &[Layout]) {
    let v = data.len();
    // openpi maps are written back as msgpack-numpy maps, which an openpi-only reader would not
    // recognise: round trips use the dialects that read back what the writer writes.
    let dialects = [Dialect::Auto, Dialect::MsgpackNumpy];
    for &layout in layouts {
        let Some((schema, used, batches)) =
            drain(builder(layout, v, &dialects).build_from_slice(data))
        else {
            continue;
        };
        let bytes = match write(&batches, schema.clone(), used) {
            Ok(b) => b,
            Err(e) => panic!("{layout}: read as {used}, but writing it back failed: {e}"),
        };
        let back = match drain(builder(used, v, &dialects).build_from_slice(&bytes)) {
            Some((s, _, b)) => (s, b),
            None => {
                let e = builder(used, v, &dialects)
                    .build_from_slice(&bytes)
                    .and_then(|r| r.collect::<Result<Vec<_>>>())
                    .err();
                panic!("{layout}: read as {used}, written back, re-read failed: {e:?}")
            }
        };
        assert_tables_equal(
            &schema,
            &batches,
            &back.0,
            &back.1,
            &format!("{layout} (read as {used})"),
        );
    }
}

/// Write batches with the library's writer.
pub fn write(batches: &[RecordBatch], schema: SchemaRef, layout: Layout) -> Result<Vec<u8>> {
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .build(Vec::new(), schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

/// The type with every field nullable, named `item` inside lists, and without metadata.
pub fn norm_type(t: &DataType) -> DataType {
    let f = |f: &Field, name: &str| Arc::new(Field::new(name, norm_type(f.data_type()), true));
    match t {
        DataType::List(x) => DataType::List(f(x, "item")),
        DataType::LargeList(x) => DataType::LargeList(f(x, "item")),
        DataType::FixedSizeList(x, n) => DataType::FixedSizeList(f(x, "item"), *n),
        DataType::Struct(fs) => DataType::Struct(Fields::from(
            fs.iter()
                .map(|x| f(x, x.name()).as_ref().clone())
                .collect::<Vec<_>>(),
        )),
        other => other.clone(),
    }
}

fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(schema, batches).expect("batches concatenate")
}

/// Same rows, columns, types (modulo [`norm_type`]) and values (`ArrayData` equality: valid slots
/// only, primitive values compared as bytes, so NaN payloads and -0.0 count).
pub fn assert_tables_equal(
    s1: &SchemaRef,
    b1: &[RecordBatch],
    s2: &SchemaRef,
    b2: &[RecordBatch],
    what: &str,
) {
    let (t1, t2) = (concat(s1, b1), concat(s2, b2));
    assert_eq!(t1.num_rows(), t2.num_rows(), "{what}: row counts differ");
    if t1.num_rows() == 0 {
        // an empty table writes as nothing (or an empty container): its columns need not survive
        return;
    }
    let names = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(s1), names(s2), "{what}: column names differ");
    for i in 0..t1.num_columns() {
        let (a, b): (&ArrayRef, &ArrayRef) = (t1.column(i), t2.column(i));
        let name = s1.field(i).name();
        assert_eq!(
            norm_type(a.data_type()),
            norm_type(b.data_type()),
            "{what}: column {name} type differs"
        );
        let (na, nb) = (norm_array(a), norm_array(b));
        assert!(
            na.to_data() == nb.to_data(),
            "{what}: column {name} values differ:\n{a:?}\nvs\n{b:?}"
        );
    }
}

/// [`norm_type`] applied to an array and all its children.
pub fn norm_array(a: &ArrayRef) -> ArrayRef {
    let data = a.to_data();
    let kids: Vec<_> = match a.data_type() {
        DataType::Struct(_) => a
            .as_any()
            .downcast_ref::<arrow_array::StructArray>()
            .expect("struct")
            .columns()
            .iter()
            .map(|c| norm_array(c).to_data())
            .collect(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => data
            .child_data()
            .iter()
            .map(|c| norm_array(&arrow_array::make_array(c.clone())).to_data())
            .collect(),
        _ => data.child_data().to_vec(),
    };
    let d = data
        .into_builder()
        .data_type(norm_type(a.data_type()))
        .child_data(kids)
        .build()
        .expect("normalised array is valid");
    arrow_array::make_array(d)
}

/// A seed from the input's bytes, so the cut and the index variant follow the content as well as
/// the length.
fn seed(data: &[u8]) -> usize {
    data.iter().fold(data.len(), |h, &b| {
        h.wrapping_mul(31).wrapping_add(b as usize)
    })
}

/// Salvage ([`OnTruncated::Keep`]): the input cut at a byte the input chooses never panics, from a
/// slice and from a trickling `Read`; where the cut input and the whole input read in the same
/// layout and schema, the rows kept are the first rows of the whole read, and the slice and the
/// `Read` agree.
pub fn salvage(data: &[u8]) {
    salvage_in(data, &LAYOUTS)
}

/// [`salvage`] in the given layouts only.
pub fn salvage_in(data: &[u8], layouts: &[Layout]) {
    let v = data.len();
    if v < 2 {
        return;
    }
    let cut = 1 + seed(data) % (v - 1);
    let part = &data[..cut];
    let dialects = [Dialect::Auto, Dialect::MsgpackNumpy, Dialect::Openpi];
    for &layout in layouts {
        let b = builder(layout, v, &dialects).with_on_truncated(OnTruncated::Keep);
        let whole = drain(b.clone().build_from_slice(data));
        let kept = drain(b.clone().build_from_slice(part));
        let kept_read = drain(b.clone().build(Trickle::new(part)));
        if let (Some((s1, l1, b1)), Some((s2, l2, b2))) = (&whole, &kept) {
            let (n1, n2) = (rows(b1), rows(b2));
            if l1 == l2 && s1 == s2 && matches!(l1, Layout::Records | Layout::Values) {
                assert!(n2 <= n1, "{layout}: a cut kept {n2} rows of {n1}");
                if n2 > 0 {
                    let all = concat(s1, b1);
                    let want = [all.slice(0, n2)];
                    assert_tables_equal(s1, &want, s2, b2, "the rows kept vs the whole read");
                }
            }
        }
        if let (Some((s2, l2, b2)), Some((s3, l3, b3))) = (&kept, &kept_read) {
            if rows(b2) <= msgpack_arrow::read::DEFAULT_STREAM_INFER_ROWS {
                assert_eq!(
                    l2, l3,
                    "{layout}: salvage layout differs between slice and Read"
                );
                assert_tables_equal(s2, b2, s3, b3, "salvage: slice vs Read");
            }
        }
    }
}

fn rows(b: &[RecordBatch]) -> usize {
    b.iter().map(|b| b.num_rows()).sum()
}

/// The record index (`data.msgpack.offsets`): the input is written as a file with an index beside
/// it (its true offsets on most lengths, else a damaged or made-up one) and read from row `k`.
/// With the true index the rows are those of the same file read without it; a damaged index is
/// an error or a read, never a panic.
pub fn index(data: &[u8]) {
    index_in(data, &INDEX_LAYOUTS)
}

/// The layouts an index applies to (a stream of top-level values).
pub const INDEX_LAYOUTS: [Layout; 3] = [Layout::Auto, Layout::Records, Layout::Values];

/// [`index`] in the given layouts only.
pub fn index_in(data: &[u8], layouts: &[Layout]) {
    use msgpack_arrow::io::index::{offsets_of, sidecar};
    let v = data.len();
    let dir = scratch();
    let path = dir.join("data.msgpack");
    std::fs::write(&path, data).expect("write the fuzz input");
    let truth = offsets_of(data, 64).ok();
    let s = seed(data);
    let (offsets, true_index) = match (&truth, v % 4) {
        (Some(o), 0..=2) if o.len() > 2 => {
            let mut o = o.clone();
            match v % 4 {
                0 | 1 => (o, true),
                _ => {
                    // one entry off by a little, or one dropped
                    let i = 1 + s % (o.len() - 1);
                    if s % 2 == 0 {
                        o[i] = o[i].wrapping_add(1 + (s as u64 >> 8) % 3);
                    } else {
                        o.remove(i);
                    }
                    (o, false)
                }
            }
        }
        // whatever the input's tail says, as big-endian uint64s
        _ => {
            let tail = &data[v - (v % 64).min(v)..];
            let o = tail
                .chunks(8)
                .map(|c| c.iter().fold(0u64, |a, &b| a << 8 | b as u64))
                .collect();
            (o, false)
        }
    };
    let bytes: Vec<u8> = offsets.iter().flat_map(|o| o.to_be_bytes()).collect();
    std::fs::write(sidecar(&path), bytes).expect("write the fuzz index");
    let k = 1 + s % 4;
    let dialects = [Dialect::Auto, Dialect::MsgpackNumpy];
    for &layout in layouts {
        let b = builder(layout, v, &dialects).with_skip_rows(k);
        let indexed = drain(b.clone().build_from_path(&path));
        if true_index {
            // the same file read the same way without its index (a file whose first bytes are a
            // codec's magic is decompressed either way; a slice would be read as it is)
            let plain = drain(
                msgpack_arrow::io::open_input(&path).and_then(|input| b.build_from_input(input)),
            );
            if let (Some((s1, _, b1)), Some((s2, _, b2))) = (&plain, &indexed) {
                if s1 == s2 {
                    assert_tables_equal(s1, b1, s2, b2, "indexed read vs plain read");
                }
            }
        }
    }
}

/// A directory of this thread's own for the index target's files (tmpfs when there is one): the
/// tests replay on several threads of one process.
fn scratch() -> std::path::PathBuf {
    thread_local! {
        static DIR: std::path::PathBuf = {
            let base = std::path::PathBuf::from("/dev/shm");
            let base = if base.is_dir() { base } else { std::env::temp_dir() };
            let id = format!("{:?}", std::thread::current().id());
            let id: String = id.chars().filter(char::is_ascii_digit).collect();
            base.join(format!("msgpack-arrow-fuzz-{}-{id}", std::process::id()))
        };
    }
    let d = DIR.with(|d| d.clone());
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// Remove [`index`]'s scratch directory (the tests call it when done; a fuzz run leaves it).
pub fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch());
}
