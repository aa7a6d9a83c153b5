//! Decode/encode throughput per layout and dtype family, and side by side with the peer Rust crate
//! `msgpack-numpy` (0.1.5) on the cases its README reports, with a plain memcpy of the same bytes
//! into a fresh buffer measured in the same run (so every figure is also a fraction of the
//! machine's copy bandwidth; `memcpy_warm` copies into a buffer already faulted in).
//!
//! ```sh
//! cargo bench --bench peers                 # everything (~6 min)
//! cargo bench --bench peers -- peer/        # only the msgpack-numpy crate comparison
//! cargo bench --bench peers -- --test       # run each bench once (a smoke test)
//! ```
//!
//! Groups:
//! - `family/<dtype>`: `decode_<layout>` (bytes → RecordBatches via `ReaderBuilder` from an
//!   `arrow_buffer::Buffer`), `encode_<layout>` (those RecordBatches → bytes via `WriterBuilder`),
//!   `memcpy_fresh` / `memcpy_warm` (the records bytes copied into a fresh Vec / into a buffer
//!   already faulted in: the copy bandwidth). Throughput is the msgpack size.
//! - `peer/<case>`: the same bytes (written by the crate's own serializer) decoded by the crate into
//!   `Vec<NDArray>` (owned) and `Vec<CowNDArray>` (borrowing aligned payloads), by us into one
//!   RecordBatch of the `values` layout (`ours_decode`; `ours_decode_schema_given` skips schema
//!   inference, which walks every row first); serialized by the crate from `Vec<NDArray>` and by us from
//!   that RecordBatch with `write::write_batches` (`ours_encode`: parts on every thread), which
//!   reproduces the input bytes exactly (checked before timing, with one writer too).
//!
//! All data is deterministic (xorshift), built before timing.

use std::hint::black_box;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use half::f16;
use msgpack_arrow::{Layout, ReaderBuilder, WriterBuilder};
use msgpack_numpy::{CowNDArray, NDArray};

/// Rows of every `family/*` table.
const FAMILY_ROWS: usize = 100_000;
/// Elements per row of the fixed-shape tensor families (f16, f32, f64).
const TENSOR_DIM: usize = 64;
/// Longest row of the ragged family (lengths cycle through 1..=RAGGED_MAX).
const RAGGED_MAX: usize = 128;
/// The msgpack-numpy crate README's cases: (label, dtype, shape of one array, number of arrays).
const PEER_CASES: &[(&str, PeerDtype, &[usize], usize)] = &[
    ("f32_1000x10000", PeerDtype::F32, &[1000], 10_000),
    ("f32_100x100000", PeerDtype::F32, &[100], 100_000),
    ("f16_1000x10000", PeerDtype::F16, &[1000], 10_000),
    ("f16_100x100000", PeerDtype::F16, &[100], 100_000),
    ("f32_1024x2048x10", PeerDtype::F32, &[1024, 2048], 10),
    ("f16_1024x2048x10", PeerDtype::F16, &[1024, 2048], 10),
];

const SAMPLES: usize = 10;
const WARM_UP: Duration = Duration::from_millis(1000);
const MEASURE: Duration = Duration::from_secs(3);

#[derive(Clone, Copy)]
enum PeerDtype {
    F16,
    F32,
}

#[derive(Clone, Copy, Debug)]
enum Family {
    F16,
    F32,
    F64,
    I64,
    Bool,
    Strings,
    Struct,
    Ragged,
}

const FAMILIES: [Family; 8] = [
    Family::F16,
    Family::F32,
    Family::F64,
    Family::I64,
    Family::Bool,
    Family::Strings,
    Family::Struct,
    Family::Ragged,
];

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::F16 => "f16",
            Family::F32 => "f32",
            Family::F64 => "f64",
            Family::I64 => "i64",
            Family::Bool => "bool",
            Family::Strings => "strings",
            Family::Struct => "struct",
            Family::Ragged => "ragged",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// deterministic data

/// xorshift64: deterministic, no RNG crate needed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// uniform in [-0.5, 0.5)
    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

/// An ndarray map exactly as Python msgpack_numpy writes it.
fn write_ndarray(out: &mut Vec<u8>, dtype: &str, shape: &[usize], data: &[u8]) {
    rmp::encode::write_map_len(out, 5).unwrap();
    rmp::encode::write_bin(out, b"nd").unwrap();
    rmp::encode::write_bool(out, true).unwrap();
    rmp::encode::write_bin(out, b"type").unwrap();
    rmp::encode::write_str(out, dtype).unwrap();
    rmp::encode::write_bin(out, b"kind").unwrap();
    rmp::encode::write_bin(out, b"").unwrap();
    rmp::encode::write_bin(out, b"shape").unwrap();
    rmp::encode::write_array_len(out, shape.len() as u32).unwrap();
    for &d in shape {
        rmp::encode::write_uint(out, d as u64).unwrap();
    }
    rmp::encode::write_bin(out, b"data").unwrap();
    rmp::encode::write_bin(out, data).unwrap();
}

/// `n` little-endian elements of a float family.
fn float_bytes(f: Family, n: usize, rng: &mut Rng) -> Vec<u8> {
    let mut v = Vec::with_capacity(n * 8);
    for _ in 0..n {
        let x = rng.f64();
        match f {
            Family::F16 => v.extend(f16::from_f64(x).to_le_bytes()),
            Family::F32 | Family::Ragged => v.extend((x as f32).to_le_bytes()),
            Family::F64 => v.extend(x.to_le_bytes()),
            _ => unreachable!(),
        }
    }
    v
}

fn float_dtype(f: Family) -> &'static str {
    match f {
        Family::F16 => "<f2",
        Family::F32 | Family::Ragged => "<f4",
        Family::F64 => "<f8",
        _ => unreachable!(),
    }
}

fn int_value(i: usize, rng: &mut Rng) -> i64 {
    // all msgpack int widths: shift a random word right by 0..63 bits, alternate signs
    let v = (rng.next() >> (i % 64)) as i64;
    if i % 3 == 0 {
        v.wrapping_neg()
    } else {
        v
    }
}

fn label(i: usize) -> String {
    // 6..~30 bytes, not all ASCII
    let tail = ["", "-x", "-émoji-✓", "-a-longer-suffix-here"][i % 4];
    format!("item-{i}{tail}")
}

/// One row's value of a family.
fn write_row(out: &mut Vec<u8>, f: Family, i: usize, rng: &mut Rng) {
    match f {
        Family::F16 | Family::F32 | Family::F64 => {
            let d = float_bytes(f, TENSOR_DIM, rng);
            write_ndarray(out, float_dtype(f), &[TENSOR_DIM], &d)
        }
        Family::Ragged => {
            let n = 1 + (i * 37) % RAGGED_MAX;
            let d = float_bytes(f, n, rng);
            write_ndarray(out, float_dtype(f), &[n], &d)
        }
        Family::I64 => rmp::encode::write_sint(out, int_value(i, rng))
            .map(|_| ())
            .unwrap(),
        Family::Bool => rmp::encode::write_bool(out, rng.next() & 1 == 1).unwrap(),
        Family::Strings => rmp::encode::write_str(out, &label(i)).unwrap(),
        Family::Struct => {
            // {"id": int, "score": float, "meta": {"tag": str, "ok": bool, "w": float32[4]}}
            rmp::encode::write_map_len(out, 3).unwrap();
            rmp::encode::write_str(out, "id").unwrap();
            rmp::encode::write_uint(out, i as u64).unwrap();
            rmp::encode::write_str(out, "score").unwrap();
            rmp::encode::write_f64(out, rng.f64()).unwrap();
            rmp::encode::write_str(out, "meta").unwrap();
            rmp::encode::write_map_len(out, 3).unwrap();
            rmp::encode::write_str(out, "tag").unwrap();
            rmp::encode::write_str(out, &label(i)).unwrap();
            rmp::encode::write_str(out, "ok").unwrap();
            rmp::encode::write_bool(out, i % 2 == 0).unwrap();
            rmp::encode::write_str(out, "w").unwrap();
            let d = float_bytes(Family::F32, 4, rng);
            write_ndarray(out, "<f4", &[4], &d);
        }
    }
}

/// The file bytes of `n` rows of one family in one layout (column / key name `x`).
fn family_file(f: Family, layout: Layout, n: usize) -> Vec<u8> {
    let mut rng = Rng::new(f as u64 + 1);
    let mut out = Vec::new();
    match layout {
        Layout::Records => {
            for i in 0..n {
                rmp::encode::write_map_len(&mut out, 1).unwrap();
                rmp::encode::write_str(&mut out, "x").unwrap();
                write_row(&mut out, f, i, &mut rng);
            }
        }
        Layout::Values => {
            for i in 0..n {
                write_row(&mut out, f, i, &mut rng);
            }
        }
        Layout::Columns => {
            rmp::encode::write_map_len(&mut out, 1).unwrap();
            rmp::encode::write_str(&mut out, "x").unwrap();
            match f {
                // fixed-width families: one ndarray whose axis 0 are the rows
                Family::F16 | Family::F32 | Family::F64 => {
                    let d = float_bytes(f, n * TENSOR_DIM, &mut rng);
                    write_ndarray(&mut out, float_dtype(f), &[n, TENSOR_DIM], &d);
                }
                Family::I64 => {
                    let d: Vec<u8> = (0..n)
                        .flat_map(|i| int_value(i, &mut rng).to_le_bytes())
                        .collect();
                    write_ndarray(&mut out, "<i8", &[n], &d);
                }
                Family::Bool => {
                    let d: Vec<u8> = (0..n).map(|_| (rng.next() & 1) as u8).collect();
                    write_ndarray(&mut out, "|b1", &[n], &d);
                }
                // the others: a list of n values
                _ => {
                    rmp::encode::write_array_len(&mut out, n as u32).unwrap();
                    for i in 0..n {
                        write_row(&mut out, f, i, &mut rng);
                    }
                }
            }
        }
        Layout::Auto => unreachable!(),
    }
    out
}

// ---------------------------------------------------------------------------------------------
// what is timed

fn decode(buf: &Buffer, layout: Layout, batch_size: Option<usize>) -> Vec<RecordBatch> {
    decode_with(buf, layout, batch_size, None)
}

/// `schema`: given instead of inferred (inference walks every row of an in-memory input first).
fn decode_with(
    buf: &Buffer,
    layout: Layout,
    batch_size: Option<usize>,
    schema: Option<SchemaRef>,
) -> Vec<RecordBatch> {
    let mut b = ReaderBuilder::new().with_layout(layout);
    if let Some(n) = batch_size {
        // one batch of `n` rows, as the crate gives one Vec: a byte bound of the whole input cuts
        // none, yet a row of a 16th of it still goes alone (zero-copy where aligned); `usize::MAX`
        // would make that a 16th of 2^64 and copy every big array
        b = b
            .with_batch_size(n)
            .with_batch_bytes(buf.len().max(1 << 20));
    }
    if let Some(s) = schema {
        b = b.with_schema(s);
    }
    b.build_from_buffer(buf.clone())
        .unwrap()
        .collect::<msgpack_arrow::Result<Vec<_>>>()
        .unwrap()
}

fn encode(batches: &[RecordBatch], layout: Layout, cap: usize) -> Vec<u8> {
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .build(Vec::with_capacity(cap), batches[0].schema())
        .unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap()
}

/// Copy into a freshly allocated Vec. Note glibc: blocks up to 32 MiB are usually recycled heap
/// memory (already faulted in), bigger ones are fresh mappings whose 4 KiB pages fault on first
/// touch, which costs more than the copy on these machines (INTEROP.md).
fn memcpy_fresh(src: &[u8]) -> Vec<u8> {
    let mut v = Vec::<u8>::with_capacity(src.len());
    v.extend_from_slice(src);
    v
}

/// The copy bandwidth proper: the same bytes into a buffer that is already faulted in.
fn memcpy_warm(src: &[u8], dst: &mut [u8]) {
    dst.copy_from_slice(src);
    black_box(dst);
}

fn configure(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(SAMPLES);
    g.warm_up_time(WARM_UP);
    g.measurement_time(MEASURE);
}

fn bench_families(c: &mut Criterion) {
    for f in FAMILIES {
        let mut g = c.benchmark_group(format!("family/{}", f.name()));
        configure(&mut g);
        let mut memcpy_done = false;
        for layout in [Layout::Records, Layout::Columns, Layout::Values] {
            let bytes = family_file(f, layout, FAMILY_ROWS);
            let len = bytes.len();
            let buf = Buffer::from_vec(bytes);
            g.throughput(Throughput::Bytes(len as u64));
            if !memcpy_done {
                g.bench_function("memcpy_fresh", |b| {
                    b.iter(|| black_box(memcpy_fresh(buf.as_slice())))
                });
                let mut warm = vec![1u8; len];
                g.bench_function("memcpy_warm", |b| {
                    b.iter(|| memcpy_warm(buf.as_slice(), &mut warm))
                });
                drop(warm);
                memcpy_done = true;
            }
            let batches = decode(&buf, layout, None);
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(rows, FAMILY_ROWS, "{f:?} {layout}");
            g.bench_function(format!("decode_{layout}"), |b| {
                b.iter(|| black_box(decode(&buf, layout, None)))
            });
            // the writer must reproduce the bytes: it is timed on the same work
            assert!(
                encode(&batches, layout, len) == buf.as_slice(),
                "{f:?} {layout}: the writer does not reproduce the input"
            );
            g.bench_function(format!("encode_{layout}"), |b| {
                b.iter(|| black_box(encode(&batches, layout, len)))
            });
        }
        g.finish();
    }
}

fn peer_array(dt: PeerDtype, shape: &[usize]) -> NDArray {
    // as in the crate's own benchmark: 0, 1, 2, ... (f16 wraps past 2048 exactly representable)
    let n: usize = shape.iter().product();
    let v = ndarray::Array1::from_iter((0..n).map(|i| (i % 2048) as f32))
        .into_shape_with_order(ndarray::IxDyn(shape))
        .unwrap();
    match dt {
        PeerDtype::F32 => NDArray::F32(v),
        PeerDtype::F16 => NDArray::F16(v.mapv(f16::from_f32)),
    }
}

fn bench_peer(c: &mut Criterion) {
    for &(label, dt, shape, count) in PEER_CASES {
        let arrays = vec![peer_array(dt, shape); count];
        // the bytes every contender reads: what the crate itself writes (Python writes the same)
        let bytes = rmp_serde::to_vec_named(&arrays).unwrap();
        let len = bytes.len();
        let buf = Buffer::from_vec(bytes);
        let slice = buf.as_slice();

        let mut g = c.benchmark_group(format!("peer/{label}"));
        configure(&mut g);
        g.throughput(Throughput::Bytes(len as u64));

        g.bench_function("memcpy_fresh", |b| {
            b.iter(|| black_box(memcpy_fresh(slice)))
        });
        let mut warm = vec![1u8; len];
        g.bench_function("memcpy_warm", |b| b.iter(|| memcpy_warm(slice, &mut warm)));
        drop(warm);
        g.bench_function("crate_serialize", |b| {
            b.iter(|| black_box(rmp_serde::to_vec_named(&arrays).unwrap()))
        });
        g.bench_function("crate_deserialize_ndarray", |b| {
            b.iter(|| black_box(rmp_serde::from_slice::<Vec<NDArray>>(slice).unwrap()))
        });
        g.bench_function("crate_deserialize_cow", |b| {
            b.iter(|| black_box(rmp_serde::from_slice::<Vec<CowNDArray<'_>>>(slice).unwrap()))
        });

        // one batch, or one per array where an array fills 1 MiB (its values then a slice of
        // the input where the payload is aligned, as the crate's CowNDArray borrows it)
        let batches = decode(&buf, Layout::Values, Some(count));
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), count);
        g.bench_function("ours_decode", |b| {
            b.iter(|| black_box(decode(&buf, Layout::Values, Some(count))))
        });
        // the same with the schema given: what inference costs (it walks all rows first)
        let schema = batches[0].schema();
        assert_eq!(
            decode_with(&buf, Layout::Values, Some(count), Some(schema.clone())),
            batches
        );
        g.bench_function("ours_decode_schema_given", |b| {
            b.iter(|| {
                black_box(decode_with(
                    &buf,
                    Layout::Values,
                    Some(count),
                    Some(schema.clone()),
                ))
            })
        });
        // the one-call API (write_batches): a big table is written in parts on every thread
        let ours = || msgpack_arrow::write::write_batches(&batches, Layout::Values).unwrap();
        assert!(
            ours() == slice && encode(&batches, Layout::Values, len) == slice,
            "{label}: our writer does not reproduce the crate's bytes"
        );
        g.bench_function("ours_encode", |b| b.iter(|| black_box(ours())));
        g.finish();
    }
}

criterion_group!(benches, bench_peer, bench_families);
criterion_main!(benches);
