//! The last ndarray maps each thread recognised, kept with what they parsed to. The ndarrays of one
//! input mostly share their bytes up to the payload (the 10,000 float64 columns of a wide map,
//! the rows of a tensor column), and a map is recognised up to three times (layout, inference,
//! decode): one comparison and the payload's length replace parsing its keys again, which took a
//! quarter of a wide map's read. Ragged arrays (one shape per row) share the bytes before and
//! after their `shape`: a map matching those around a shape that parses is recalled too, so a
//! column of variable-length arrays does not parse every map's keys.

use std::borrow::Cow;
use std::cell::RefCell;

use crate::options::Dialect;
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::ndarray::{NdArray, MAX_NDIM};
use crate::wire::spelling::Spelling;

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
    /// the map's spelling (its payload's, `raw`, is read from each map's own marker)
    spelling: Spelling,
    /// where the `shape` value is in `bytes` (offset, length), when `type` and `kind` come
    /// before it (so that their offsets hold whatever its length)
    shape_at: Option<(usize, usize)>,
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
        let slots = || {
            m.slots
                .iter()
                .flatten()
                .filter(|m| m.dialect == dialect && m.depth == depth)
        };
        let same = slots()
            .find(|m| buf.get(start..start + m.bytes.len()) == Some(m.bytes.as_slice()))
            .map(|m| (m, start + m.bytes.len(), None));
        let (m, data_at, shape) = same.or_else(|| {
            slots().find_map(|m| {
                let (o, l) = m.shape_at?;
                if buf.get(start..start + o) != Some(&m.bytes[..o]) {
                    return None;
                }
                let mut d = c.clone();
                d.set_pos(start + o);
                let shape = read_shape(&mut d)?;
                let tail = &m.bytes[o + l..];
                let end = d.pos();
                (buf.get(end..end + tail.len()) == Some(tail)).then_some((
                    m,
                    end + tail.len(),
                    Some(shape),
                ))
            })
        })?;
        let mut d = c.clone();
        d.set_pos(data_at);
        if !matches!(d.peek_kind(), Ok(Kind::Str | Kind::Bin)) {
            return None;
        }
        let raw = d.peek_kind().ok()? == Kind::Str;
        let (data, data_pos) = d.read_str_or_bin().ok()?;
        let (shape, len) = match shape {
            Some(s) => {
                let len = s.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
                (s, len)
            }
            None => (m.shape.clone(), m.len),
        };
        *c = d;
        let at = |(o, l): (usize, usize)| &buf[start + o..start + o + l];
        Some(NdArray {
            type_raw: at(m.type_raw),
            type_pos: start + m.type_raw.0,
            kind: m.kind.map(at),
            scalar: m.scalar,
            shape,
            len,
            data: Cow::Borrowed(data),
            data_pos,
            js: m.js,
            openpi: m.openpi,
            type_text: false,
            spelling: Spelling { raw, ..m.spelling },
        })
    })
}

/// A `shape` value as the full parse takes it (an array of at most [`MAX_NDIM`] ints, none
/// negative), or `None` for anything else: the full parse then says what is wrong.
fn read_shape(d: &mut Cursor<'_>) -> Option<Vec<usize>> {
    if !matches!(d.peek_kind(), Ok(Kind::Array)) {
        return None;
    }
    let n = d.read_array_len().ok()?;
    if n > MAX_NDIM {
        return None;
    }
    (0..n)
        .map(|_| match d.read_int() {
            Ok(Int::I(v)) => usize::try_from(v).ok(),
            _ => None,
        })
        .collect()
}

/// Remember `nd`, the ndarray map of `buf[start..]` whose `data` value (its last entry) is at
/// `data_at`, for [`recall`].
pub(crate) fn remember(
    buf: &[u8],
    start: usize,
    shape_at: usize,
    data_at: usize,
    nd: &NdArray<'_>,
    dialect: Dialect,
    depth: usize,
) {
    if data_at - start > MAX_HEADER || nd.type_text || !matches!(nd.data, Cow::Borrowed(_)) {
        return;
    }
    let offset = |s: &[u8]| (s.as_ptr() as usize - buf.as_ptr() as usize - start, s.len());
    let type_raw = (nd.type_pos - start, nd.type_raw.len());
    let kind = nd.kind.map(offset);
    // the shape's bytes, if they lie between `type` and `kind` and the payload
    let shape_at = (!nd.scalar && shape_at > start && shape_at < data_at)
        .then(|| {
            let mut d = Cursor::new(buf, 0);
            d.set_pos(shape_at);
            read_shape(&mut d)?;
            let before = |(o, l): (usize, usize)| o + l <= shape_at - start;
            (d.pos() <= data_at && before(type_raw) && kind.is_none_or(before))
                .then_some((shape_at - start, d.pos() - shape_at))
        })
        .flatten();
    let memo = Memo {
        dialect,
        depth,
        bytes: buf[start..data_at].to_vec(),
        type_raw,
        kind,
        scalar: nd.scalar,
        shape: nd.shape.clone(),
        len: nd.len,
        js: nd.js,
        openpi: nd.openpi,
        spelling: nd.spelling,
        shape_at,
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
    fn ints(dims: &[i64]) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_array_len(&mut o, dims.len() as u32).unwrap();
        for &d in dims {
            rmp::encode::write_sint(&mut o, d).unwrap();
        }
        o
    }
    /// msgpack_numpy's map around `shape`, an encoded shape value of any kind
    fn ragged(ty: &str, shape: Vec<u8>, data: Vec<u8>) -> Vec<u8> {
        map(&[
            ("nd", vec![0xc3]),
            ("type", s(ty)),
            ("kind", bin(b"")),
            ("shape", shape),
            ("data", data),
        ])
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
            // ragged: the bytes around the shape are known, the shape is another
            vec![
                ragged("<f4", ints(&[3]), f8(12)),
                ragged("<f4", ints(&[1]), f8(4)),
                ragged("<f4", ints(&[200]), f8(800)),
                ragged("<f4", ints(&[300]), f8(1200)),
                ragged("<f4", ints(&[0]), f8(0)),
                ragged("<f4", ints(&[2, 3]), f8(24)),
                ragged("<f4", ints(&[]), f8(4)),
                ragged("<f4", ints(&[3]), f8(8)),
                ragged("<f8", ints(&[3]), f8(24)),
            ],
            // shapes the full parse refuses, after a known ragged header
            vec![
                ragged("<f4", ints(&[3]), f8(12)),
                ragged("<f4", ints(&[-1]), f8(12)),
                ragged("<f4", ints(&[1 << 40, 1 << 40]), f8(12)),
                ragged("<f4", vec![0x91, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0], f8(12)),
                ragged("<f4", vec![0xc0], f8(12)),
                ragged("<f4", ints(&[1; 65]), f8(4)),
                ragged("<f4", vec![0x92, 0x01], f8(4)),
                ragged("<f4", ints(&[2]), vec![0xc0]),
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
