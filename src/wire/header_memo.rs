//! The last ndarray maps each thread recognised, kept with what they parsed to. The ndarrays of one
//! input mostly share their bytes up to the payload (the 10,000 float64 columns of a wide map,
//! the rows of a tensor column), and a map is recognised up to three times (layout, inference,
//! decode): one comparison and the payload's length replace parsing its keys again, which took a
//! quarter of a wide map's read.

use std::borrow::Cow;
use std::cell::RefCell;

use crate::options::Dialect;
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::NdArray;

/// Headers longer than this (structured dtypes' descr lists) are parsed each time.
const MAX_HEADER: usize = 256;
/// Headers remembered per thread: records may hold a few tensor columns of different shapes.
const SLOTS: usize = 4;

struct Memo {
    dialect: Dialect,
    depth: usize,
    /// the map's bytes from its map header up to its `data` value, which is its last entry
    bytes: Vec<u8>,
    /// where `type` and `kind` are in those bytes: (offset, length)
    type_raw: (usize, usize),
    kind: Option<(usize, usize)>,
    scalar: bool,
    shape: Vec<usize>,
    len: usize,
    js: bool,
    openpi: bool,
}

#[derive(Default)]
struct Memos {
    slots: [Option<Memo>; SLOTS],
    /// the slot the next new header takes
    next: usize,
}

thread_local! {
    static LAST: RefCell<Memos> = RefCell::new(Memos::default());
}

/// The ndarray at `c` when its bytes up to its payload are those of one remembered
/// (read with the same dialect and depth): the cursor is then past it. `None` leaves the cursor
/// where it was.
pub(crate) fn recall<'a>(
    c: &mut Cursor<'a>,
    dialect: Dialect,
    depth: usize,
) -> Option<NdArray<'a>> {
    LAST.with(|m| {
        let m = m.borrow();
        let (buf, start) = (c.buf(), c.pos());
        let m = m.slots.iter().flatten().find(|m| {
            m.dialect == dialect
                && m.depth == depth
                && buf.get(start..start + m.bytes.len()) == Some(m.bytes.as_slice())
        })?;
        let mut d = c.clone();
        d.set_pos(start + m.bytes.len());
        if !matches!(d.peek_kind(), Ok(Kind::Str | Kind::Bin)) {
            return None;
        }
        let (data, data_pos) = d.read_str_or_bin().ok()?;
        *c = d;
        let at = |(o, l): (usize, usize)| &buf[start + o..start + o + l];
        Some(NdArray {
            type_raw: at(m.type_raw),
            type_pos: start + m.type_raw.0,
            kind: m.kind.map(at),
            scalar: m.scalar,
            shape: m.shape.clone(),
            len: m.len,
            data: Cow::Borrowed(data),
            data_pos,
            js: m.js,
            openpi: m.openpi,
            npy: false,
        })
    })
}

/// Remember `nd`, the ndarray map of `buf[start..]` whose `data` value (its last entry) is at
/// `data_at`, for [`recall`].
pub(crate) fn remember(
    buf: &[u8],
    start: usize,
    data_at: usize,
    nd: &NdArray<'_>,
    dialect: Dialect,
    depth: usize,
) {
    if data_at - start > MAX_HEADER || nd.npy || !matches!(nd.data, Cow::Borrowed(_)) {
        return;
    }
    let offset = |s: &[u8]| (s.as_ptr() as usize - buf.as_ptr() as usize - start, s.len());
    let memo = Memo {
        dialect,
        depth,
        bytes: buf[start..data_at].to_vec(),
        type_raw: (nd.type_pos - start, nd.type_raw.len()),
        kind: nd.kind.map(offset),
        scalar: nd.scalar,
        shape: nd.shape.clone(),
        len: nd.len,
        js: nd.js,
        openpi: nd.openpi,
    };
    LAST.with(|m| {
        let mut m = m.borrow_mut();
        let k = m.next;
        m.slots[k] = Some(memo);
        m.next = (k + 1) % SLOTS;
    });
}

/// Forget every header this thread remembered.
#[cfg(test)]
pub(crate) fn forget() {
    LAST.with(|m| *m.borrow_mut() = Memos::default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ndarray::probe;

    fn map(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_map_len(&mut o, entries.len() as u32).unwrap();
        for (k, v) in entries {
            rmp::encode::write_bin(&mut o, k.as_bytes()).unwrap();
            o.extend(v);
        }
        o
    }
    fn s(v: &str) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_str(&mut o, v).unwrap();
        o
    }
    fn bin(v: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_bin(&mut o, v).unwrap();
        o
    }
    fn shape(dims: &[u8]) -> Vec<u8> {
        let mut o = vec![0x90 | dims.len() as u8];
        o.extend(dims);
        o
    }
    /// msgpack_numpy's key order (data last), or another order
    fn nd(ty: &str, dims: &[u8], data: Vec<u8>, data_last: bool) -> Vec<u8> {
        let mut e = vec![
            ("nd", vec![0xc3]),
            ("type", s(ty)),
            ("kind", bin(b"")),
            ("shape", shape(dims)),
        ];
        e.insert(if data_last { 4 } else { 1 }, ("data", data));
        map(&e)
    }

    /// Probing a run of maps that share header bytes (so later ones are recalled) gives, for
    /// every map, what probing it alone gives: the same array or error, the cursor at the same
    /// place.
    #[test]
    fn recalled_headers_read_as_parsed_ones() {
        let f8 = |n: usize| bin(&vec![1u8; n]);
        let mut cut = nd("<f8", &[2], f8(16), true);
        cut.truncate(cut.len() - 3);
        let runs: Vec<Vec<Vec<u8>>> = vec![
            // the same header: recalled, payload read anew
            vec![
                nd("<f8", &[2], f8(16), true),
                nd("<f8", &[2], bin(&[2; 16]), true),
            ],
            // the same header bytes before a payload of another length (the decoder's length
            // check then refuses it, as it does a parsed one)
            vec![nd("<f8", &[2], f8(16), true), nd("<f8", &[2], f8(8), true)],
            // a payload that is not bin, or is cut short, after a known header
            vec![
                nd("<f8", &[2], f8(16), true),
                nd("<f8", &[2], vec![0x07], true),
            ],
            vec![nd("<f8", &[2], f8(16), true), cut],
            // other shapes, dtypes and data before the other keys: parsed
            vec![
                nd("<f8", &[2], f8(16), true),
                nd("<f8", &[3], f8(24), true),
                nd("<f4", &[2], f8(8), true),
                nd("<f8", &[2], f8(16), false),
                nd("<f8", &[2], f8(16), false),
                nd("<f8", &[2], f8(16), true),
            ],
            // more headers than slots, then the first again
            (1..=6u8)
                .chain([1])
                .map(|d| nd("<i2", &[d], f8(2 * d as usize), true))
                .collect(),
        ];
        let probe_at = |bytes: &[u8], dialect: Dialect| {
            let mut c = Cursor::new(bytes, 0);
            let r = probe(&mut c, dialect, None, 32);
            (format!("{r:?}"), c.pos())
        };
        for run in &runs {
            for (i, m) in run.iter().enumerate() {
                // the maps before it probed in another dialect: nothing to recall
                for (before, dialect) in
                    [(Dialect::Js, Dialect::Auto), (Dialect::Auto, Dialect::Auto)]
                {
                    forget();
                    run[..i].iter().for_each(|m| drop(probe_at(m, before)));
                    let recalled = probe_at(m, dialect);
                    forget();
                    let parsed = probe_at(m, dialect);
                    assert_eq!(recalled, parsed, "map {i} of {run:02x?} after {before:?}");
                }
            }
        }
    }
}
