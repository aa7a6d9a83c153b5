//! Inference's per-row fast path against full inference, case by case: the same schema
//! (metadata included) or the same error, also when the walk is cut into pieces.

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
    // a 1-d `<f4` ndarray whose `shape` is the int `n`, not a list
    fn nd_int_shape(n: usize) -> Vec<u8> {
        map(&[
            ("nd", vec![0xc3]),
            ("type", s("<f4")),
            ("kind", bin(b"")),
            ("shape", uint(n as u64)),
            ("data", bin(&vec![7u8; n * 4])),
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
        // a 1-d shape written as an int (numpy takes `shape=3`), beside shapes that are lists
        (
            Layout::Records,
            vec![
                rec(&[("v", nd_int_shape(3))]),
                rec(&[("v", nd("<f4", &[3], b""))]),
                rec(&[("v", nd_int_shape(3))]),
                rec(&[("v", nd_int_shape(2))]),
            ],
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
