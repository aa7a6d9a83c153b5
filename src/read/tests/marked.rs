//! Values written with every msgpack marker and of every kind the fast path of inference
//! decides: what the inference tests make their rows of.

use super::*;

/// One value of many kinds, each written with the marker named (not the smallest rmp picks):
/// the markers the fast path decides from the marker byte alone and the values beside them.
pub(super) fn marked_value(kind: u8, v: u64) -> Vec<u8> {
    let be = |m: u8, b: &[u8]| [&[m][..], b].concat();
    match kind % MARKED_KINDS {
        0 => vec![(v % 128) as u8],
        1 => be(0xcc, &[v as u8]),
        2 => be(0xcd, &(v as u16).to_be_bytes()),
        3 => be(0xce, &(v as u32).to_be_bytes()),
        4 => be(0xcf, &(v >> 2).to_be_bytes()),
        5 => be(0xcf, &(v | 1 << 63).to_be_bytes()),
        6 => vec![0xe0 | (v % 32) as u8],
        7 => be(0xd0, &[v as u8]),
        8 => be(0xd1, &(v as u16).to_be_bytes()),
        9 => be(0xd2, &(v as u32).to_be_bytes()),
        10 => be(0xd3, &v.to_be_bytes()),
        11 => be(0xca, &(v as f32).to_be_bytes()),
        12 => be(0xcb, &(v as f64).to_be_bytes()),
        13 => vec![0xc0],
        14 => vec![0xc2 | (v % 2) as u8],
        15 => s(&format!("s{}", v % 1000)),
        // a fixstr that is not UTF-8, and one of 31 bytes
        16 => vec![0xa2, 0xff, 0xfe],
        17 => s(&"x".repeat(31)),
        18 => be(0xd9, b"\x03abc"),
        19 => bin(b"ab"),
        20 => [vec![0x92], marked_value(0, v), marked_value(6, v)].concat(),
        21 => [vec![0x81], s("x"), marked_value((v % 13) as u8, v)].concat(),
        // a map that may be a special one (an ndarray's key)
        22 => [vec![0x81], s("type"), s("<f4")].concat(),
        23 => [vec![0x91], marked_value(12, v)].concat(),
        // timestamps of 4 and 8 bytes (the second's nanoseconds may be out of range), another ext
        24 => be(0xd6, &[&[0xff][..], &(v as u32).to_be_bytes()].concat()),
        25 => be(0xd7, &[&[0xff][..], &(v >> 3).to_be_bytes()].concat()),
        26 => be(0xd4, &[5, v as u8]),
        // a Python complex (one in four not a complex literal)
        27 => map(&[
            ("complex", vec![0xc3]),
            (
                "data",
                s(["(1+2j)", "-j", "1e5-0j", "(1+2"][(v % 4) as usize]),
            ),
        ]),
        // a map keyed by integers, of ints or floats
        28 => [
            vec![0x81],
            marked_value((v % 11) as u8, v),
            marked_value(12 - (v % 2) as u8, v),
        ]
        .concat(),
        _ => [
            vec![0x82],
            marked_value(6, v),
            marked_value(0, v),
            marked_value(0, v),
            vec![0x80],
        ]
        .concat(),
    }
}

/// How many kinds of value [`marked_value`] writes.
pub(super) const MARKED_KINDS: u8 = 30;
