//! Inference: the per-row fast path against full inference, and the schema walk in pieces
//! against a walk in one.

use super::marked::{marked_value, MARKED_KINDS};
use super::pieces::walking_in_pieces_equals_walking_whole;
use super::*;

/// Inference with the per-row fast path gives exactly what full inference gives: the same
/// schema (metadata included) or the same error.
#[test]
fn fast_inference_equals_full_inference() {
    // one value, as rmp writes it
    fn enc(write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut o = Vec::new();
        write(&mut o);
        o
    }
    fn int(v: i64) -> Vec<u8> {
        enc(|o| {
            rmp::encode::write_sint(o, v).unwrap();
        })
    }
    fn uint(v: u64) -> Vec<u8> {
        enc(|o| {
            rmp::encode::write_uint(o, v).unwrap();
        })
    }
    fn f32v(v: f32) -> Vec<u8> {
        enc(|o| rmp::encode::write_f32(o, v).unwrap())
    }
    fn f64v(v: f64) -> Vec<u8> {
        enc(|o| rmp::encode::write_f64(o, v).unwrap())
    }
    fn list(items: &[Vec<u8>]) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_array_len(&mut o, items.len() as u32).unwrap();
        items.iter().for_each(|i| o.extend(i));
        o
    }
    // as msgpack_numpy.encode writes an ndarray (data last)
    fn nd(ty: &str, shape: &[usize], kind: &[u8]) -> Vec<u8> {
        let size: usize = ty[2..].parse().unwrap();
        let n: usize = shape.iter().product();
        let dims: Vec<Vec<u8>> = shape.iter().map(|&d| uint(d as u64)).collect();
        map(&[
            ("nd", vec![0xc3]),
            ("type", s(ty)),
            ("kind", bin(kind)),
            ("shape", list(&dims)),
            ("data", bin(&vec![7u8; n * size])),
        ])
    }
    // an ndarray map whose payload has `bytes` bytes, whatever its shape says
    fn nd_bytes(ty: &str, shape: &[usize], bytes: usize) -> Vec<u8> {
        let dims: Vec<Vec<u8>> = shape.iter().map(|&d| uint(d as u64)).collect();
        map(&[
            ("nd", vec![0xc3]),
            ("type", s(ty)),
            ("kind", bin(b"")),
            ("shape", list(&dims)),
            ("data", bin(&vec![7u8; bytes])),
        ])
    }
    fn scalar(ty: &str) -> Vec<u8> {
        let size: usize = ty[2..].parse().unwrap();
        map(&[
            ("nd", vec![0xc2]),
            ("type", s(ty)),
            ("kind", bin(b"")),
            ("data", bin(&vec![1u8; size])),
        ])
    }
    // openpi_client.msgpack_numpy's map of an int32 array of one, here with its data last
    fn openpi_i4() -> Vec<u8> {
        map(&[
            ("__ndarray__", vec![0xc3]),
            ("dtype", s("<i4")),
            ("shape", list(&[uint(1)])),
            ("data", bin(&[1, 0, 0, 0])),
        ])
    }
    // msgpack_numpy before 0.3.9: no `kind`
    fn nd_no_kind(ty: &str, n: usize) -> Vec<u8> {
        let size: usize = ty[2..].parse().unwrap();
        map(&[
            ("nd", vec![0xc3]),
            ("type", s(ty)),
            ("shape", list(&[uint(n as u64)])),
            ("data", bin(&vec![7u8; n * size])),
        ])
    }
    // an ndarray whose payload is a raw str (msgpack's use_bin_type=False)
    fn nd_raw(ty: &str, n: usize) -> Vec<u8> {
        let size: usize = ty[2..].parse().unwrap();
        let mut data = Vec::new();
        rmp::encode::write_str_len(&mut data, (n * size) as u32).unwrap();
        data.extend(vec![7u8; n * size]);
        map(&[
            ("nd", vec![0xc3]),
            ("type", s(ty)),
            ("kind", bin(b"")),
            ("shape", list(&[uint(n as u64)])),
            ("data", data),
        ])
    }
    let rec = |entries: &[(&str, Vec<u8>)]| map(entries);
    let a = |v: Vec<u8>| rec(&[("a", v)]);
    let f4 = |shape: &[usize]| nd("<f4", shape, b"");
    let mut truncated = rec(&[("e", f4(&[3]))]);
    truncated.truncate(truncated.len() - 2);
    let cases: Vec<(Layout, Vec<Vec<u8>>)> = vec![
        (Layout::Records, vec![a(int(1)), a(int(2)), a(int(-1))]),
        (Layout::Records, vec![a(int(1)), a(uint(u64::MAX))]),
        (
            Layout::Records,
            vec![a(int(-1)), a(int(1)), a(uint(u64::MAX))],
        ),
        (Layout::Records, vec![a(int(1)), a(f64v(1.5)), a(int(3))]),
        (Layout::Records, vec![a(f32v(1.5)), a(f32v(2.5)), a(int(1))]),
        (Layout::Records, vec![a(f64v(1.5)), a(f32v(2.5))]),
        (
            Layout::Records,
            vec![a(vec![0xc0]), a(int(1)), a(vec![0xc0])],
        ),
        (Layout::Records, vec![a(s("x")), a(bin(b"y"))]),
        (
            Layout::Records,
            vec![a(vec![0xc3]), a(vec![0xc2]), a(int(0))],
        ),
        (
            Layout::Records,
            vec![
                a(int(1)),
                rec(&[("a", int(2)), ("b", s("x"))]),
                rec(&[("b", s("y"))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("a", int(1)), ("b", int(2))]),
                rec(&[("b", int(2)), ("a", int(1))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("a", int(1)), ("b", int(2))]),
                rec(&[("a", int(1)), ("a", int(2))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", f4(&[3]))]),
                rec(&[("e", f4(&[3]))]),
                rec(&[("e", nd(">f4", &[3], b""))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", f4(&[3]))]),
                rec(&[("e", f4(&[3]))]),
                rec(&[("e", f4(&[4]))]),
                rec(&[("e", f4(&[3]))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", f4(&[2, 3]))]),
                rec(&[("e", f4(&[2, 3]))]),
                rec(&[("e", f4(&[0, 3]))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", f4(&[2, 3]))]),
                rec(&[("e", f4(&[1, 3]))]),
                rec(&[("e", f4(&[0, 3]))]),
            ],
        ),
        (
            Layout::Records,
            vec![a(uint(u64::MAX)), a(int(1)), a(int(-1))],
        ),
        (Layout::Records, vec![a(f32v(1.0)), a(f64v(1.0))]),
        (
            Layout::Records,
            vec![a(list(&[int(1)])), a(list(&[int(1), s("x")]))],
        ),
        (
            Layout::Records,
            vec![rec(&[("e", f4(&[3]))]), rec(&[("e", nd("<i4", &[3], b""))])],
        ),
        (
            Layout::Records,
            vec![rec(&[("e", f4(&[3]))]), rec(&[("e", f4(&[3, 1]))])],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", f4(&[3]))]),
                rec(&[("e", rec(&[("x", int(1))]))]),
            ],
        ),
        (
            Layout::Records,
            vec![rec(&[("e", f4(&[3]))]), truncated.clone()],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", f4(&[3]))]),
                rec(&[("e", nd("|O8", &[3], b"O"))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("e", scalar("<f8"))]),
                rec(&[("e", scalar("<f8"))]),
                rec(&[("e", f4(&[]))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("m", rec(&[("x", int(1))]))]),
                rec(&[("m", rec(&[("x", int(2)), ("y", s("s"))]))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("m", rec(&[("x", int(1))]))]),
                rec(&[("m", f4(&[3]))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("m", rec(&[("x", int(1))]))]),
                rec(&[("m", rec(&[("shape", int(1))]))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                a(list(&[int(1), int(2)])),
                a(list(&[])),
                a(list(&[int(-3)])),
                a(list(&[f64v(0.5)])),
            ],
        ),
        (
            Layout::Records,
            vec![
                a(list(&[f4(&[2])])),
                a(list(&[f4(&[2]), f4(&[2])])),
                a(list(&[f4(&[5])])),
            ],
        ),
        // integers above 2^63-1 and negative ones conflict when they meet before a float
        (
            Layout::Records,
            vec![a(uint(u64::MAX)), a(int(-1)), a(f64v(1.0)), a(int(2))],
        ),
        (
            Layout::Records,
            vec![a(f64v(1.0)), a(uint(u64::MAX)), a(int(-1)), a(int(2))],
        ),
        (
            Layout::Records,
            vec![a(int(-1)), a(int(5)), a(uint(u64::MAX)), a(f32v(1.0))],
        ),
        // openpi maps (here with their data last) after a msgpack-numpy one: the dialect is noted
        // by the fast path as by the slow one
        (
            Layout::Records,
            vec![
                rec(&[("e", nd("<i4", &[1], b""))]),
                rec(&[("e", openpi_i4())]),
                rec(&[("e", openpi_i4())]),
                rec(&[("e", openpi_i4())]),
            ],
        ),
        // a column raw from its second row on (conflicts="binary"), then values the slow path
        // refuses (ext 5) and openpi maps
        (
            Layout::Records,
            vec![
                rec(&[("m", map(&[])), ("x", int(1))]),
                rec(&[("m", map(&[])), ("x", s("s"))]),
                rec(&[("m", map(&[])), ("x", openpi_i4())]),
                rec(&[("m", map(&[])), ("x", vec![0xc7, 3, 5, 1, 2, 3])]),
                rec(&[("m", map(&[])), ("x", int(1))]),
            ],
        ),
        // ragged rows (the bytes around each shape known from the row before), then a zero
        // dimension, two dimensions, another dtype
        (
            Layout::Records,
            vec![
                rec(&[("v", nd("<f4", &[3], b""))]),
                rec(&[("v", nd("<f4", &[1], b""))]),
                rec(&[("v", nd("<f4", &[300], b""))]),
                rec(&[("v", nd("<f4", &[70_000], b""))]),
                rec(&[("v", nd("<f4", &[0], b""))]),
                rec(&[("v", nd("<f4", &[2, 2], b""))]),
                rec(&[("v", nd("<f8", &[4], b""))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("v", nd("<i2", &[3, 2], b""))]),
                rec(&[("v", nd("<i2", &[5, 2], b""))]),
                rec(&[("v", nd("<i2", &[5, 3], b""))]),
            ],
        ),
        // a payload shorter or longer than its shape after ragged rows: the slow path's error
        (
            Layout::Records,
            vec![
                rec(&[("v", nd("<f4", &[3], b""))]),
                rec(&[("v", nd("<f4", &[5], b""))]),
                rec(&[("v", nd_bytes("<f4", &[4], 12))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("v", nd("<f4", &[3], b""))]),
                rec(&[("v", nd("<f4", &[5], b""))]),
                rec(&[("v", nd_bytes("<f4", &[4], 20))]),
            ],
        ),
        // string arrays of several widths: narrower and as wide rows after the widths varied,
        // then a wider one, another byte order, bytes
        (
            Layout::Records,
            vec![
                rec(&[("u", nd_bytes("<U2", &[1], 8))]),
                rec(&[("u", nd_bytes("<U3", &[2], 24))]),
                rec(&[("u", nd_bytes("<U2", &[1], 8))]),
                rec(&[("u", nd_bytes("<U3", &[2], 24))]),
                rec(&[("u", nd_bytes("<U1", &[2], 8))]),
                rec(&[("u", nd_bytes(">U3", &[1], 12))]),
                rec(&[("u", nd_bytes("<U5", &[1], 20))]),
                rec(&[("u", nd_bytes("<U2", &[1], 8))]),
                rec(&[("u", nd_bytes("|S2", &[1], 2))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("u", nd_bytes("|S2", &[1], 2))]),
                rec(&[("u", nd_bytes("|S4", &[1], 4))]),
                rec(&[("u", nd_bytes("|S3", &[1], 3))]),
                rec(&[("u", nd_bytes("|S3", &[2], 6))]),
                rec(&[("u", nd_bytes("|S9", &[1], 9))]),
            ],
        ),
        // timestamps (ext -1 of 4, 8 and 12 bytes), then one of another length, another ext
        (
            Layout::Records,
            vec![
                a(vec![0xd6, 0xff, 0, 0, 0, 1]),
                a(vec![0xd7, 0xff, 0, 0, 0, 4, 0, 0, 0, 1]),
                a([&[0xc7, 12, 0xff][..], &[0; 11], &[1]].concat()),
                a(vec![0xd6, 0xff, 0, 0, 0, 2]),
            ],
        ),
        (
            Layout::Records,
            vec![
                a(vec![0xd6, 0xff, 0, 0, 0, 1]),
                a(vec![0xd6, 0xff, 0, 0, 0, 1]),
                a(vec![0xd5, 0xff, 0, 1]),
            ],
        ),
        (
            Layout::Records,
            vec![
                a(vec![0xd6, 0xff, 0, 0, 0, 1]),
                a(vec![0xd6, 0xff, 0, 0, 0, 1]),
                a(vec![0xd6, 0x05, 0, 0, 0, 1]),
            ],
        ),
        // Python complex maps, then one that is not a complex literal, then a user map
        (
            Layout::Records,
            vec![
                a(map(&[("complex", vec![0xc3]), ("data", s("(1+2j)"))])),
                a(map(&[("complex", vec![0xc3]), ("data", s("-j"))])),
                a(map(&[("complex", vec![0xc3]), ("data", s("1+2"))])),
            ],
        ),
        (
            Layout::Records,
            vec![
                a(map(&[("complex", vec![0xc3]), ("data", s("(1+2j)"))])),
                a(map(&[("complex", vec![0xc3]), ("data", s("1j"))])),
                a(rec(&[("x", int(1))])),
            ],
        ),
        // maps keyed by integers: keys and values widen, then a str key, an empty map
        (
            Layout::Records,
            vec![
                a(rec(&[(
                    "m",
                    [&[0x82u8, 1][..], &int(5), &[2], &int(6)].concat(),
                )])),
                a(rec(&[("m", [&[0x81u8, 3][..], &int(7)].concat())])),
                a(rec(&[("m", [&[0x81u8, 0xff][..], &f64v(0.5)].concat())])),
                a(rec(&[("m", [&[0x81u8, 4][..], &int(8)].concat())])),
                a(rec(&[("m", vec![0x80])])),
            ],
        ),
        (
            Layout::Records,
            vec![
                a(rec(&[("m", [&[0x81u8, 1][..], &int(5)].concat())])),
                a(rec(&[("m", [&[0x81u8, 1][..], &int(5)].concat())])),
                a(rec(&[(
                    "m",
                    [&[0x82u8, 1][..], &int(5), &s("k"), &int(6)].concat(),
                )])),
            ],
        ),
        (Layout::Values, vec![f4(&[3]), f4(&[3]), f4(&[5])]),
        (Layout::Values, vec![f4(&[3]), f4(&[4]), f4(&[5]), f4(&[1])]),
        (Layout::Values, vec![int(1), int(2), int(-3), f64v(1.0)]),
        // the spelling of the maps (no `kind`) noted alike, and dropped where a map has a `kind`
        (
            Layout::Records,
            vec![
                rec(&[("v", nd_no_kind("<f4", 3))]),
                rec(&[("v", nd_no_kind("<f4", 3))]),
                rec(&[("v", nd_no_kind("<f4", 2))]),
            ],
        ),
        (
            Layout::Records,
            vec![
                rec(&[("v", nd_no_kind("<f4", 3))]),
                rec(&[("v", nd_no_kind("<f4", 3))]),
                rec(&[("v", nd("<f4", &[3], b""))]),
            ],
        ),
        // ragged rows with raw payloads, then one with a bin payload: `raw` is dropped alike
        (
            Layout::Records,
            vec![
                rec(&[("v", nd_raw("<f4", 3))]),
                rec(&[("v", nd_raw("<f4", 5))]),
                rec(&[("v", nd_raw("<f4", 4))]),
                rec(&[("v", nd("<f4", &[2], b""))]),
            ],
        ),
        // uint64s below 2^63 fit an Int64 column by their first byte, those above do not
        (
            Layout::Values,
            vec![int(-1), uint(1 << 40), uint(i64::MAX as u64), uint(1 << 63)],
        ),
        (
            Layout::Values,
            vec![int(1), uint(1 << 40), uint(1 << 63), uint(1 << 40)],
        ),
        (
            Layout::Records,
            vec![
                a(list(&[int(1), uint(1 << 40)])),
                a(list(&[uint(1 << 40), int(-2), uint((1 << 63) + 1)])),
            ],
        ),
        (
            Layout::Values,
            vec![rec(&[("x", int(1))]), rec(&[("x", int(2))]), f4(&[1])],
        ),
    ];
    for (i, (layout, rows)) in cases.iter().enumerate() {
        let data: Vec<u8> = rows.concat();
        let run = |fast: bool| {
            let mut b = ReaderBuilder::new().with_layout(*layout);
            b.fast_infer = fast;
            match b.build_from_slice(&data) {
                Ok(r) => format!("{:?}", r.schema()),
                Err(e) => format!("error: {e}"),
            }
        };
        assert_eq!(run(true), run(false), "case {i}");
    }
    walking_in_pieces_equals_walking_whole(&cases);
}

/// What reading `data` with `b` gives (schema and batches, or the error and where), with the fast
/// path of inference on or off, the walk on one thread or cut into pieces on three.
pub(super) fn fast_or_full(b: &ReaderBuilder, data: &[u8], fast: bool, pieces: bool) -> String {
    let mut b = b.clone();
    if pieces {
        b = b.with_threads(Some(3)).with_walk_piece_bytes(64);
    }
    b.fast_infer = fast;
    match b.build_from_slice(data).and_then(|r| {
        let schema = r.schema();
        Ok((schema, r.collect_batches()?))
    }) {
        Ok((schema, batches)) => format!("{schema:?}\n{batches:?}"),
        Err(e) => format!("error: {e} at {:?} record {:?}", e.offset(), e.record()),
    }
}

/// What [`varied_records`] makes records from: the keys, each key's usual kind of value, each
/// row's shape and values (and how each value is picked), and the row from which the keys come
/// in another order; at most `max_rows` rows.
#[allow(clippy::type_complexity)]
fn varied_records_input(
    max_rows: usize,
) -> impl proptest::strategy::Strategy<Value = (Vec<usize>, Vec<u8>, Vec<(u8, Vec<(u8, u64)>)>, usize)>
{
    (
        proptest::collection::vec(0usize..8, 1..7),
        proptest::collection::vec(0u8..MARKED_KINDS, 8),
        proptest::collection::vec(
            (
                0u8..14,
                proptest::collection::vec((0u8..40, proptest::num::u64::ANY), 8),
            ),
            1..max_rows,
        ),
        0usize..max_rows,
    )
}

/// Records mostly alike, as [`fast_inference_equals_full_inference_on_any_records`] describes
/// them: each record's bytes.
fn varied_records(
    keys: Vec<usize>,
    kinds: &[u8],
    rows: &[(u8, Vec<(u8, u64)>)],
    switch_at: usize,
) -> Vec<Vec<u8>> {
    const NAMES: [&str; 8] = [
        "id",
        "name",
        "x",
        "flag",
        "tags",
        "ts",
        "fifteen_chars_x",
        "a_rather_long_column_name",
    ];
    let mut keys = keys;
    keys.dedup();
    let mut out = Vec::new();
    for (row, (shape, values)) in rows.iter().enumerate() {
        let mut data = Vec::new();
        // most rows: the keys in order, each column's usual kind of value
        let mut ks = keys.clone();
        if row >= switch_at {
            ks.rotate_left(1);
        }
        let n = ks.len();
        match shape {
            0 => ks.reverse(),
            1 => {
                ks.pop();
            }
            2 => ks.push((ks[0] + 1) % 8),
            4 if n >= 2 => ks.swap(n - 2, n - 1),
            _ => {}
        }
        ks.dedup();
        rmp::encode::write_map_len(&mut data, ks.len() as u32).unwrap();
        for (j, &k) in ks.iter().enumerate() {
            let (pick, v) = values[j];
            // a bin key: the first (shape 3) or the last (shape 5)
            if (*shape == 3 && j == 0) || (*shape == 5 && j + 1 == ks.len()) {
                rmp::encode::write_bin(&mut data, NAMES[k].as_bytes()).unwrap();
            } else {
                rmp::encode::write_str(&mut data, NAMES[k]).unwrap();
            }
            // now and then any other kind of value
            let kind = if pick < 30 {
                kinds[k]
            } else {
                (v >> 40) as u8 % MARKED_KINDS
            };
            data.extend(marked_value(kind, v));
        }
        out.push(data);
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Records mostly alike (the same keys in the same order, as files are), sometimes with keys
    /// dropped, reordered, added or as bin (the first or a later one), and from some row on in
    /// another order for good; keys of up to 25 bytes; values of every marker, with the types
    /// of a column widening, narrowing and conflicting at any row; the input cut anywhere: the
    /// fast path (and its record template) reads exactly what full inference does, schema and
    /// batches or error, in either conflict mode, also when the walk is cut into pieces on threads.
    #[test]
    fn fast_inference_equals_full_inference_on_any_records(
        (keys, kinds, rows, switch_at) in varied_records_input(150),
        cut in proptest::option::of(0usize..20_000),
        binary in proptest::bool::ANY,
    ) {
        let mut data = varied_records(keys, &kinds, &rows, switch_at).concat();
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        let b = ReaderBuilder::new()
            .with_layout(Layout::Records)
            .with_conflicts(if binary { Conflicts::Binary } else { Conflicts::Error });
        let full = fast_or_full(&b, &data, false, false);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, false), &full);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, true), &full);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    /// The same records as the elements of a `columns` map's list (a dict of lists), beside a
    /// list of any values and a column of another length now and then, the input cut anywhere:
    /// the fast path reads what full inference does, in the columns layout and in `auto`; lists
    /// decoded in ranges on several threads give the batches and errors one thread does. The
    /// one walk of a first map that tells both whether it is the only object and whether it is a
    /// columns map says what the two walks it replaces say (or fails as the first of them does).
    #[test]
    fn fast_inference_equals_full_inference_on_list_columns(
        (keys, kinds, rows, switch_at) in varied_records_input(120),
        other in proptest::collection::vec((0u8..MARKED_KINDS, proptest::num::u64::ANY), 0..120),
        cut in proptest::option::of(0usize..20_000),
        after in proptest::option::of(0u8..MARKED_KINDS),
        binary in proptest::bool::ANY,
        batch in proptest::option::of(1usize..12),
        whole in proptest::bool::ANY,
    ) {
        // (values of other kinds than their column's rarer than in the records test, and no str
        // that is not UTF-8 as a column's kind: lists that read are the common case here)
        let kinds: Vec<u8> = kinds.iter().map(|&k| if k == 16 { 15 } else { k }).collect();
        let rows: Vec<(u8, Vec<(u8, u64)>)> = rows
            .into_iter()
            .map(|(shape, vs)| (shape, vs.into_iter().map(|(p, v)| (p / 4, v)).collect()))
            .collect();
        let recs = varied_records(keys, &kinds, &rows, switch_at);
        let mut data = Vec::new();
        rmp::encode::write_map_len(&mut data, 1 + u32::from(!other.is_empty())).unwrap();
        rmp::encode::write_str(&mut data, "r").unwrap();
        rmp::encode::write_array_len(&mut data, recs.len() as u32).unwrap();
        data.extend(recs.concat());
        if !other.is_empty() {
            // as long as the records mostly (a columns map), else a records map of two lists
            let n = if other.len() > 100 { other.len() } else { recs.len() };
            rmp::encode::write_str(&mut data, "o").unwrap();
            rmp::encode::write_array_len(&mut data, n as u32).unwrap();
            for i in 0..n {
                // mostly ints of any marker, now and then anything
                let (kind, v) = other[i % other.len()];
                data.extend(marked_value(if kind < 20 { kind % 11 } else { kind }, v));
            }
        }
        // another object after it: then the map is a record
        if let Some(kind) = after {
            data.extend(marked_value(kind, 7));
        }
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        let conflicts = if binary { Conflicts::Binary } else { Conflicts::Error };
        for layout in [Layout::Columns, Layout::Auto] {
            let b = ReaderBuilder::new().with_layout(layout).with_conflicts(conflicts);
            let full = fast_or_full(&b, &data, false, false);
            proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, false), &full);
            // list columns decoded on the pool as the walk finds them (cut into ranges of at most
            // a batch), or in turn on one thread
            // (a whole map asked for: its lists' ranges joined into one batch)
            let b = match batch {
                Some(n) => b.with_batch_size(n),
                None => b,
            }
            .with_whole_chunks(whole);
            let (one, four) = (b.clone().with_threads(Some(1)), b.with_threads(Some(4)));
            proptest::prop_assert_eq!(
                &fast_or_full(&one, &data, true, false),
                &fast_or_full(&four, &data, true, false)
            );
        }
        let b = ReaderBuilder::new();
        // a first map taken as a columns map unless its inference says otherwise: the plan the
        // walk of its forms makes
        let plan = |r: Result<crate::read::plan::Plan>| match r {
            Ok(p) => format!("{:?} {:?} {:?}", p.layout, p.container, p.schema),
            Err(e) => format!("error: {e} at {:?}", e.offset()),
        };
        proptest::prop_assert_eq!(
            plan(crate::read::plan::plan(&b, &data)),
            plan(crate::read::plan::plan_walking_forms(&b, &data))
        );
        let show = |r: Result<(bool, Option<bool>)>| match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("error: {e} at {:?}", e.offset()),
        };
        let two_walks = crate::read::plan::only_object(&b, &data).and_then(|single| {
            let mut c = Cursor::new(&data, 0);
            let columns = if single && c.peek_kind().ok() == Some(crate::wire::cursor::Kind::Map) {
                Some(crate::read::plan::is_columns_map(&mut c, &b)?)
            } else {
                None
            };
            Ok((single, columns))
        });
        // (where the one walk has no answer of its own, it is the first walk's)
        let one = crate::read::plan::first_object(&b, &data);
        match (&one, &two_walks) {
            (Ok((s, Some(_))), Ok((s2, None))) => proptest::prop_assert_eq!(s, s2),
            _ => proptest::prop_assert_eq!(show(one), show(two_walks)),
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Integers of every marker (as other writers pick them, not only the smallest) decode to
    /// the values rmp reads from the same bytes, into Int64, UInt64 and Int16 columns (one that
    /// does not fit is an error) and Float64 columns (rounded as numpy's `float()` does).
    #[test]
    fn integers_of_any_marker_decode_as_rmp_reads_them(
        values in proptest::collection::vec((0u8..11, proptest::num::u64::ANY), 1..200),
    ) {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float64Type, Int16Type, Int64Type, UInt64Type};
        use arrow_schema::{DataType, Field};
        let mut data = Vec::new();
        let mut want: Vec<i128> = Vec::new();
        for &(kind, v) in &values {
            let bytes = marked_value(kind, v);
            want.push(match rmp::decode::read_int::<i64, _>(&mut &bytes[..]) {
                Ok(i) => i as i128,
                Err(_) => rmp::decode::read_int::<u64, _>(&mut &bytes[..]).unwrap() as i128,
            });
            data.extend([0x81, 0xa1, b'v']);
            data.extend(bytes);
        }
        let read = |dt: DataType| {
            let schema = Arc::new(arrow_schema::Schema::new(vec![Field::new("v", dt, true)]));
            ReaderBuilder::new()
                .with_layout(Layout::Records)
                .with_schema(schema)
                .build_from_slice(&data)
                .and_then(|r| r.collect::<Result<Vec<_>>>())
                .map(|b| arrow_select::concat::concat_batches(&b[0].schema(), &b).unwrap())
        };
        let fits = |lo: i128, hi: i128| want.iter().all(|w| (lo..=hi).contains(w));
        for dt in [DataType::Int64, DataType::UInt64, DataType::Int16, DataType::Float64] {
            let got = read(dt.clone());
            let ok = match dt {
                DataType::Int64 => fits(i64::MIN as i128, i64::MAX as i128),
                DataType::UInt64 => fits(0, u64::MAX as i128),
                DataType::Int16 => fits(i16::MIN as i128, i16::MAX as i128),
                // float64 takes any integer, rounded to the nearest float64 as numpy does
                _ => true,
            };
            proptest::prop_assert_eq!(got.is_ok(), ok, "{:?}: {:?}", dt, got.as_ref().err());
            let Ok(b) = got else { continue };
            let col = b.column(0);
            let back: Vec<i128> = match dt {
                DataType::Int64 => col.as_primitive::<Int64Type>().values().iter().map(|&x| x as i128).collect(),
                DataType::UInt64 => col.as_primitive::<UInt64Type>().values().iter().map(|&x| x as i128).collect(),
                DataType::Int16 => col.as_primitive::<Int16Type>().values().iter().map(|&x| x as i128).collect(),
                _ => {
                    let back = col.as_primitive::<Float64Type>().values();
                    let rounded: Vec<f64> = want.iter().map(|&w| w as f64).collect();
                    proptest::prop_assert_eq!(&back[..], &rounded[..]);
                    continue;
                }
            };
            proptest::prop_assert_eq!(&back, &want);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// A `values` stream or top-level array of values mostly of one kind (runs the fast path
    /// steps over by their marker), now and then another, the input cut anywhere, with batches
    /// bounded by rows and bytes, `n_rows` and `infer_rows`: the fast walk gives the same schema,
    /// batches (their bounds and contents) or error as full inference, on one thread or in pieces.
    #[test]
    fn values_walked_by_marker_equal_full_inference(
        kinds in proptest::collection::vec(0u8..MARKED_KINDS, 1..4),
        rows in proptest::collection::vec((0u8..40, 0usize..4, proptest::num::u64::ANY), 1..300),
        array in proptest::bool::ANY,
        cut in proptest::option::of(0usize..4_000),
        batch_size in 1usize..40,
        batch_bytes in 1usize..300,
        n_rows in proptest::option::of(0usize..300),
        infer_rows in proptest::option::of(1usize..300),
    ) {
        let mut data = Vec::new();
        if array {
            rmp::encode::write_array_len(&mut data, rows.len() as u32).unwrap();
        }
        for &(pick, k, v) in &rows {
            let kind = if pick < 36 { kinds[k % kinds.len()] } else { (v >> 40) as u8 % MARKED_KINDS };
            data.extend(marked_value(kind, v));
        }
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        let b = ReaderBuilder::new()
            .with_layout(Layout::Values)
            .with_batch_size(batch_size)
            .with_batch_bytes(batch_bytes)
            .with_n_rows(n_rows)
            .with_infer_rows(infer_rows);
        let full = fast_or_full(&b, &data, false, false);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, false), &full);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, true), &full);
    }
}

/// Batches bounded by bytes only (`batch_size` at its largest): the values fast path's bound on
/// rows does not overflow, and the batches are those of full inference.
#[test]
fn values_with_unbounded_batch_rows_walk_as_full_inference() {
    let data: Vec<u8> = (0..200).flat_map(|i| marked_value(8, i)).collect();
    let b = ReaderBuilder::new()
        .with_layout(Layout::Values)
        .with_batch_size(usize::MAX)
        .with_batch_bytes(64);
    let full = fast_or_full(&b, &data, false, false);
    assert!(full.matches("RecordBatch").count() > 2, "{full}");
    assert_eq!(fast_or_full(&b, &data, true, false), full);
}

/// Columns whose types the caller gives (schema overrides) are skipped by the fast path until
/// one holds an ndarray, as full inference skips them: the same schema and batches or error,
/// whatever the given column holds (every marker, a map, an ndarray from some row on).
#[test]
fn given_columns_walk_as_full_inference() {
    let f8_pair = {
        let mut o = Vec::new();
        rmp::encode::write_map_len(&mut o, 5).unwrap();
        for (k, v) in [
            ("nd", vec![0xc3]),
            ("type", s("<f8")),
            ("kind", vec![0xc4, 0]),
            ("shape", vec![0x91, 2]),
            ("data", [vec![0xc4, 16], vec![0; 16]].concat()),
        ] {
            rmp::encode::write_bin(&mut o, k.as_bytes()).unwrap();
            o.extend(v);
        }
        o
    };
    let given = Arc::new(Schema::new(vec![
        Field::new("g", DataType::Float64, true),
        Field::new("h", DataType::Utf8, true),
    ]));
    for kind in 0..MARKED_KINDS {
        for nd_at in [None, Some(0), Some(7)] {
            let mut data = Vec::new();
            for row in 0..40u64 {
                rmp::encode::write_map_len(&mut data, 3).unwrap();
                rmp::encode::write_str(&mut data, "id").unwrap();
                rmp::encode::write_uint(&mut data, row).unwrap();
                rmp::encode::write_str(&mut data, "g").unwrap();
                if nd_at == Some(row as usize) {
                    data.extend(&f8_pair);
                } else if row % 3 == 0 {
                    data.extend(marked_value(kind, row * 7919));
                } else {
                    data.extend(marked_value(12, row));
                }
                rmp::encode::write_str(&mut data, "h").unwrap();
                data.extend(marked_value(if row % 5 == 0 { kind } else { 15 }, row));
            }
            let b = ReaderBuilder::new()
                .with_layout(Layout::Records)
                .with_schema_overrides(Some(given.clone()));
            let full = fast_or_full(&b, &data, false, false);
            assert_eq!(
                fast_or_full(&b, &data, true, false),
                full,
                "kind {kind}, ndarray at {nd_at:?}"
            );
            assert_eq!(
                fast_or_full(&b, &data, true, true),
                full,
                "kind {kind}, ndarray at {nd_at:?} in pieces"
            );
        }
    }
}

/// An ndarray map as msgpack_numpy writes it, its shape's integers given as written and its
/// payload `bytes` long (7s).
fn nd_map(ty: &str, shape: &[Vec<u8>], bytes: usize) -> Vec<u8> {
    let mut dims = Vec::new();
    rmp::encode::write_array_len(&mut dims, shape.len() as u32).unwrap();
    dims.extend(shape.concat());
    map(&[
        ("nd", vec![0xc3]),
        ("type", s(ty)),
        ("kind", bin(b"")),
        ("shape", dims),
        ("data", bin(&vec![7u8; bytes])),
    ])
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// A dict of a list of same-shape ndarrays (msgpack_numpy's list of arrays), with other
    /// elements anywhere in it (another shape, dtype or header encoding of the same shape, nil, a
    /// payload of the wrong length, a scalar), beside a list of ints, cut anywhere: the elements
    /// that repeat the one before them, checked at once on every thread, read as full inference
    /// reads them, and as on one thread.
    #[test]
    fn repeated_ndarrays_of_a_list_column_read_as_full_inference_does(
        n in 1usize..10_000,
        odd in proptest::collection::vec((0usize..10_000, 0u8..7), 0..4),
        cut in proptest::option::of(0usize..400_000),
        whole in proptest::bool::ANY,
    ) {
        let same = nd_map("<f4", &[vec![2]], 8);
        let mut elems = vec![same; n];
        for (at, kind) in odd {
            if let Some(e) = elems.get_mut(at) {
                *e = match kind {
                    0 => nd_map("<f4", &[vec![3]], 12),
                    1 => nd_map("<f8", &[vec![2]], 16),
                    2 => vec![0xc0],
                    3 => nd_map("<f4", &[vec![2]], 12),
                    // the same shape, its 2 written as a uint16: other bytes, the same type
                    4 => nd_map("<f4", &[vec![0xcd, 0, 2]], 8),
                    5 => nd_map("<i4", &[vec![2]], 8),
                    _ => vec![0x05],
                };
            }
        }
        let mut data = Vec::new();
        rmp::encode::write_map_len(&mut data, 2).unwrap();
        rmp::encode::write_str(&mut data, "a").unwrap();
        rmp::encode::write_array_len(&mut data, n as u32).unwrap();
        data.extend(elems.concat());
        rmp::encode::write_str(&mut data, "i").unwrap();
        rmp::encode::write_array_len(&mut data, n as u32).unwrap();
        data.extend(std::iter::repeat_n(0x01, n));
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        // (the table, or the error: a list's batches end where its ranges do, which depends on
        // the threads)
        let read = |b: ReaderBuilder, fast: bool| {
            let mut b = b;
            b.fast_infer = fast;
            match b.build_from_slice(&data).and_then(|r| {
                let schema = r.schema();
                let batches = r.collect_batches()?;
                Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
            }) {
                Ok(t) => format!("{t:?}"),
                Err(e) => format!("error: {e} at {:?} record {:?}", e.offset(), e.record()),
            }
        };
        let b = ReaderBuilder::new().with_whole_chunks(whole);
        let full = read(b.clone().with_threads(Some(1)), false);
        proptest::prop_assert_eq!(&read(b.clone().with_threads(Some(1)), true), &full);
        proptest::prop_assert_eq!(&read(b.with_threads(Some(4)), true), &full);
    }
}

/// The repeats of a list's ndarrays are checked in windows of 4,096 × threads elements, then twice
/// as many, from the element after the first: an element of another shape on either side of a
/// window's end is found, and so is its type.
#[test]
fn an_odd_ndarray_where_a_window_of_repeats_ends_is_typed() {
    let w = 4096 * rayon::current_num_threads();
    for at in [w, w + 1, 3 * w, 3 * w + 1] {
        let n = 3 * w + 10;
        let mut elems = vec![nd_map("<f4", &[vec![2]], 8); n];
        elems[at] = nd_map("<f4", &[vec![3]], 12);
        let mut data = Vec::new();
        rmp::encode::write_map_len(&mut data, 1).unwrap();
        rmp::encode::write_str(&mut data, "a").unwrap();
        rmp::encode::write_array_len(&mut data, n as u32).unwrap();
        data.extend(elems.concat());
        let b = ReaderBuilder::new();
        let fast = fast_or_full(&b, &data, true, false);
        assert_eq!(
            fast,
            fast_or_full(&b, &data, false, false),
            "odd element {at}"
        );
        assert!(fast.contains("List("), "odd element {at}: {}", &fast[..300]);
    }
}
