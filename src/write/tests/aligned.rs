//! Aligned output: every ndarray payload on a 64-byte boundary (8 at least in other layouts),
//! the same values as the unaligned output, and the unaligned bytes where no ndarray is written.

use super::*;

/// Offsets of every ndarray payload in `buf` (a msgpack walker, for the aligned tests).
fn nd_payloads(buf: &[u8]) -> Vec<(usize, usize)> {
    fn be(b: &[u8]) -> usize {
        b.iter().fold(0, |a, &x| (a << 8) | x as usize)
    }
    // Returns the end of the value at `p`; records payloads of maps with keys nd and data.
    fn walk(b: &[u8], p: usize, found: &mut Vec<(usize, usize)>) -> usize {
        let m = b[p];
        let (hdr, len, kind) = match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => return p + 1,
            0x80..=0x8f => (1, (m & 15) as usize, 'm'),
            0x90..=0x9f => (1, (m & 15) as usize, 'a'),
            0xa0..=0xbf => return p + 1 + (m & 31) as usize,
            0xcc | 0xd0 => return p + 2,
            0xcd | 0xd1 => return p + 3,
            0xce | 0xd2 | 0xca => return p + 5,
            0xcf | 0xd3 | 0xcb => return p + 9,
            0xc4 | 0xd9 => return p + 2 + b[p + 1] as usize,
            0xc5 | 0xda => return p + 3 + be(&b[p + 1..p + 3]),
            0xc6 | 0xdb => return p + 5 + be(&b[p + 1..p + 5]),
            0xd6 => return p + 6,
            0xd7 => return p + 10,
            0xc7 => return p + 3 + b[p + 1] as usize,
            0xdc => (3, be(&b[p + 1..p + 3]), 'a'),
            0xdd => (5, be(&b[p + 1..p + 5]), 'a'),
            0xde => (3, be(&b[p + 1..p + 3]), 'm'),
            0xdf => (5, be(&b[p + 1..p + 5]), 'm'),
            _ => panic!("marker {m:#x} at {p}"),
        };
        let mut q = p + hdr;
        if kind == 'a' {
            for _ in 0..len {
                q = walk(b, q, found);
            }
            return q;
        }
        let mut is_nd = false;
        let mut data = None;
        for _ in 0..len {
            let k0 = q;
            q = walk(b, q, found);
            let key = &b[k0..q];
            let key = &key[key.len().saturating_sub(4)..];
            let v0 = q;
            q = walk(b, q, found);
            if key.ends_with(b"nd") && b[v0] == 0xc3 {
                is_nd = true;
            }
            if key == b"data" && matches!(b[v0], 0xc4..=0xc6) {
                let h = match b[v0] {
                    0xc4 => 2,
                    0xc5 => 3,
                    _ => 5,
                };
                data = Some((v0 + h, q - v0 - h));
            }
        }
        if let (true, Some(d)) = (is_nd, data) {
            found.push(d);
        }
        q
    }
    let mut found = Vec::new();
    let mut p = 0;
    while p < buf.len() {
        p = walk(buf, p, &mut found);
    }
    found
}

fn bench_like(n: usize, dim: usize) -> RecordBatch {
    let ids = Int64Array::from((0..n as i64).map(|i| i * 7919 - 3000).collect::<Vec<_>>());
    let labels = StringArray::from((0..n).map(|i| "label".repeat(i % 9)).collect::<Vec<_>>());
    let scores = Float64Array::from((0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>());
    let emb = Float32Array::from((0..n * dim).map(|i| (i % 97) as f32).collect::<Vec<_>>());
    batch(vec![
        col("id", Arc::new(ids)),
        col("label", Arc::new(labels)),
        col("score", Arc::new(scores)),
        col("emb", fsl(Arc::new(emb), dim as i32)),
    ])
}

#[test]
fn aligned_records_put_every_payload_on_64() {
    for dim in [3usize, 768] {
        let b = bench_like(200, dim);
        let mut w = WriterBuilder::new()
            .with_aligned(true)
            .build(Vec::new(), b.schema())
            .unwrap();
        w.write(&b.slice(0, 77)).unwrap();
        w.write(&b.slice(77, 123)).unwrap();
        let out = w.finish().unwrap();
        let found = nd_payloads(&out);
        assert_eq!(found.len(), 200);
        for (off, len) in &found {
            assert_eq!(off % 64, 0, "dim {dim}: payload at {off}");
            assert_eq!(*len, dim * 4);
        }
        // Same values as the unaligned output: only encodings are wider.
        let plain = write_batches(std::slice::from_ref(&b), Layout::Records).unwrap();
        let plain_found = nd_payloads(&plain);
        for ((a, l), (p, _)) in found.iter().zip(&plain_found) {
            assert_eq!(out[*a..a + l], plain[*p..p + l]);
        }
        assert!(out.len() > plain.len());
    }
}

/// A table with no ndarray anywhere (integers of every width, strings, floats, nulls) is written
/// aligned exactly as unaligned, key omission included; one ndarray column brings the widening
/// back for the whole batch.
#[test]
fn aligned_rows_without_ndarrays_are_the_unaligned_bytes() {
    let n = 300usize;
    let big = Int64Array::from_iter(
        (0..n as i64).map(|i| (i % 7 != 0).then_some(i * i * i * 40_009 - 7)),
    );
    let small = Int64Array::from((0..n as i64).map(|i| i % 200 - 100).collect::<Vec<_>>());
    let labels = StringArray::from_iter((0..n).map(|i| (i % 5 != 0).then(|| "x".repeat(i % 40))));
    let scores = Float64Array::from((0..n).map(|i| i as f64 / 3.0).collect::<Vec<_>>());
    let b = batch(vec![
        col("big", Arc::new(big)),
        col("small", Arc::new(small)),
        col("label", Arc::new(labels)),
        col("score", Arc::new(scores)),
    ]);
    for missing in [Missing::Nil, Missing::Omit] {
        let write = |aligned: bool| {
            let mut w = WriterBuilder::new()
                .with_aligned(aligned)
                .with_missing(missing)
                .build(Vec::new(), b.schema())
                .unwrap();
            w.write(&b.slice(0, 101)).unwrap();
            w.write(&b.slice(101, n - 101)).unwrap();
            w.finish().unwrap()
        };
        assert_eq!(write(true), write(false), "{missing:?}");
    }
    // with a tensor column, the integers before each payload are widened as needed
    let t = bench_like(50, 3);
    let mut w = WriterBuilder::new()
        .with_aligned(true)
        .build(Vec::new(), t.schema())
        .unwrap();
    w.write(&t).unwrap();
    let out = w.finish().unwrap();
    assert!(nd_payloads(&out).iter().all(|(off, _)| off % 64 == 0));
}

#[test]
fn aligned_other_layouts_reach_at_least_8() {
    // Ragged tensors, a 2-d tensor first in the record, bare ndarrays in a values stream,
    // and the columns map.
    let vals = Float64Array::from((0..60).map(|i| i as f64).collect::<Vec<_>>());
    let r = list(
        list(Arc::new(vals), (0..=20).map(|i| i * 3).collect()),
        vec![0, 2, 3, 7, 8, 12, 20],
    );
    let m = fsl(
        fsl(
            Arc::new(Int16Array::from(
                (0..36).map(|i| i as i16).collect::<Vec<_>>(),
            )),
            3,
        ),
        2,
    );
    let b = batch(vec![
        col_md("m", m, "ndarray", ">i2"),
        col_md("r", r, "ndarray", "<f8"),
    ]);
    for layout in [Layout::Records, Layout::Columns] {
        let mut w = WriterBuilder::new()
            .with_layout(layout)
            .with_aligned(true)
            .build(Vec::new(), b.schema())
            .unwrap();
        w.write(&b).unwrap();
        let out = w.finish().unwrap();
        let found = nd_payloads(&out);
        assert!(!found.is_empty());
        for (off, _) in &found {
            assert_eq!(off % 8, 0, "{layout:?}: {off}");
        }
    }
    let v = batch(vec![col(
        "value",
        fsl(
            Arc::new(Float32Array::from(
                (0..300).map(|i| i as f32).collect::<Vec<_>>(),
            )),
            3,
        ),
    )]);
    let mut w = WriterBuilder::new()
        .with_layout(Layout::Values)
        .with_aligned(true)
        .build(Vec::new(), v.schema())
        .unwrap();
    w.write(&v).unwrap();
    let out = w.finish().unwrap();
    let found = nd_payloads(&out);
    assert_eq!(found.len(), 100);
    assert!(found.iter().all(|(o, _)| o % 8 == 0));
    assert!(found.iter().filter(|(o, _)| o % 64 == 0).count() >= 50);
}
