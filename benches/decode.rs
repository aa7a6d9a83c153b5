//! Decode/encode throughput of the embedding table (issue: 100,000 records
//! `{id: int, label: str, score: float, emb: float32[768]}`), side by side with a plain memcpy of
//! the same bytes into a freshly allocated buffer, measured in the same run.
//!
//! `cargo bench --bench decode` (set MSGPACK_ARROW_BENCH_ROWS to change the size).

use std::hint::black_box;

use arrow_buffer::Buffer;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use msgpack_arrow::{Layout, ReaderBuilder};

const ROWS: usize = 100_000;
const DIM: usize = 768;

fn rows() -> usize {
    std::env::var("MSGPACK_ARROW_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ROWS)
}

/// Deterministic pseudo-random f32s (xorshift), no RNG crate needed.
fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
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

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn records_file(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * (DIM * 4 + 120));
    for i in 0..n {
        rmp::encode::write_map_len(&mut out, 4).unwrap();
        rmp::encode::write_str(&mut out, "id").unwrap();
        rmp::encode::write_uint(&mut out, i as u64).unwrap();
        rmp::encode::write_str(&mut out, "label").unwrap();
        rmp::encode::write_str(&mut out, &format!("item-{i}")).unwrap();
        rmp::encode::write_str(&mut out, "score").unwrap();
        rmp::encode::write_f64(&mut out, i as f64 * 0.25).unwrap();
        rmp::encode::write_str(&mut out, "emb").unwrap();
        write_ndarray(&mut out, "<f4", &[DIM], &f32_bytes(&floats(DIM, i as u64)));
    }
    out
}

fn columns_file(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * (DIM * 4 + 40));
    rmp::encode::write_map_len(&mut out, 4).unwrap();
    rmp::encode::write_str(&mut out, "id").unwrap();
    let ids: Vec<u8> = (0..n as i64).flat_map(|i| i.to_le_bytes()).collect();
    write_ndarray(&mut out, "<i8", &[n], &ids);
    rmp::encode::write_str(&mut out, "label").unwrap();
    rmp::encode::write_array_len(&mut out, n as u32).unwrap();
    for i in 0..n {
        rmp::encode::write_str(&mut out, &format!("item-{i}")).unwrap();
    }
    rmp::encode::write_str(&mut out, "score").unwrap();
    let scores: Vec<u8> = (0..n)
        .flat_map(|i| (i as f64 * 0.25).to_le_bytes())
        .collect();
    write_ndarray(&mut out, "<f8", &[n], &scores);
    rmp::encode::write_str(&mut out, "emb").unwrap();
    let emb: Vec<u8> = (0..n)
        .flat_map(|i| f32_bytes(&floats(DIM, i as u64)))
        .collect();
    write_ndarray(&mut out, "<f4", &[n, DIM], &emb);
    out
}

fn decode_all(buf: &Buffer, layout: Layout) -> usize {
    decode_threads(buf, layout, None)
}

fn decode_threads(buf: &Buffer, layout: Layout, threads: Option<usize>) -> usize {
    let r = ReaderBuilder::new()
        .with_threads(threads)
        .with_batch_size(16_384)
        .with_layout(layout)
        .build_from_buffer(buf.clone())
        .unwrap();
    r.map(|b| b.unwrap().num_rows()).sum()
}

fn bench(c: &mut Criterion) {
    let n = rows();
    let rec = Buffer::from_vec(records_file(n));
    let col = Buffer::from_vec(columns_file(n));
    let mut g = c.benchmark_group("embedding");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(rec.len() as u64));
    g.bench_function("memcpy_fresh", |b| {
        b.iter(|| {
            let mut v = Vec::<u8>::with_capacity(rec.len());
            v.extend_from_slice(rec.as_slice());
            black_box(v)
        })
    });
    g.bench_function("decode_records_1_thread", |b| {
        b.iter(|| black_box(decode_threads(&rec, Layout::Records, Some(1))))
    });
    g.bench_function("decode_records", |b| {
        b.iter(|| black_box(decode_all(&rec, Layout::Records)))
    });
    g.bench_function("decode_columns_copy", |b| {
        b.iter(|| {
            // from an unaligned copy of the bytes: the one-copy path
            let mut v = Vec::with_capacity(col.len() + 1);
            v.push(0u8);
            v.extend_from_slice(col.as_slice());
            let unaligned = Buffer::from_vec(v).slice(1);
            black_box(decode_all(&unaligned, Layout::Columns))
        })
    });
    g.bench_function("decode_columns", |b| {
        b.iter(|| black_box(decode_all(&col, Layout::Columns)))
    });
    // encode the decoded table back (the same bytes out as in)
    let table: Vec<_> = ReaderBuilder::new()
        .build_from_buffer(rec.clone())
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    for layout in [Layout::Records, Layout::Columns] {
        g.bench_function(format!("encode_{layout}"), |b| {
            b.iter(|| {
                black_box(
                    msgpack_arrow::write::write_batches(&table, layout)
                        .unwrap()
                        .len(),
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
