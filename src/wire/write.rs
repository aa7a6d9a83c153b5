//! MessagePack primitives as Python's packer writes them: the smallest form (positive ints as
//! fixint/uint8..64, negative ones as the smallest signed form, str8 allowed), or an explicit wider
//! form of a given total header size (aligned mode).
//!
//! Written by hand rather than through `rmp::encode`: they cannot fail on a `Vec<u8>` and inline
//! into the per-row loops, and aligned mode needs explicitly *wider* forms, which `rmp` only
//! offers one function per marker for.

use crate::wire::spelling::Spelling;

// The smallest forms are written with one append each (marker and value in one array): one
// capacity check per value, where a push then an extend made two.
#[inline]
pub fn uint(b: &mut Vec<u8>, v: u64) {
    if v < 128 {
        b.push(v as u8);
    } else if v < 256 {
        b.extend_from_slice(&[0xcc, v as u8]);
    } else if v < 65536 {
        let x = (v as u16).to_be_bytes();
        b.extend_from_slice(&[0xcd, x[0], x[1]]);
    } else if v < 1 << 32 {
        b.extend_from_slice(&marked::<4, 5>(0xce, (v as u32).to_be_bytes()));
    } else {
        b.extend_from_slice(&marked::<8, 9>(0xcf, v.to_be_bytes()));
    }
}
#[inline]
pub fn sint(b: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        uint(b, v as u64);
    } else if v >= -32 {
        b.push(v as u8);
    } else if v >= -128 {
        b.extend_from_slice(&[0xd0, v as u8]);
    } else if v >= -32768 {
        let x = (v as i16).to_be_bytes();
        b.extend_from_slice(&[0xd1, x[0], x[1]]);
    } else if v >= i32::MIN as i64 {
        b.extend_from_slice(&marked::<4, 5>(0xd2, (v as i32).to_be_bytes()));
    } else {
        b.extend_from_slice(&marked::<8, 9>(0xd3, v.to_be_bytes()));
    }
}
#[inline]
pub fn f64(b: &mut Vec<u8>, v: f64) {
    b.extend_from_slice(&marked::<8, 9>(0xcb, v.to_bits().to_be_bytes()));
}
#[inline]
pub fn f32(b: &mut Vec<u8>, v: f32) {
    b.extend_from_slice(&marked::<4, 5>(0xca, v.to_bits().to_be_bytes()));
}
/// `marker` followed by the `N` value bytes, as one array of `M` = `N + 1` bytes.
#[inline(always)]
fn marked<const N: usize, const M: usize>(marker: u8, x: [u8; N]) -> [u8; M] {
    let mut a = [marker; M];
    a[1..].copy_from_slice(&x);
    a
}
#[inline]
pub fn str(b: &mut Vec<u8>, s: &str) {
    str_hdr_sized(b, s.len(), str_forms(s.len())[0]);
    b.extend_from_slice(s.as_bytes());
}
#[inline]
pub fn bin(b: &mut Vec<u8>, s: &[u8]) {
    bin_hdr_sized(b, s.len(), bin_forms(s.len())[0]);
    b.extend_from_slice(s);
}
#[inline]
pub fn array_hdr(b: &mut Vec<u8>, n: usize) {
    array_hdr_sized(b, n, coll_forms(n)[0])
}
#[inline]
pub fn map_hdr(b: &mut Vec<u8>, n: usize) {
    map_hdr_sized(b, n, coll_forms(n)[0])
}

/// Encoded sizes (marker included) an unsigned int can take, smallest first.
#[inline]
pub fn uint_forms(v: u64) -> &'static [u8] {
    if v < 128 {
        &[1, 2, 3, 5, 9]
    } else if v < 256 {
        &[2, 3, 5, 9]
    } else if v < 65536 {
        &[3, 5, 9]
    } else if v < 1 << 32 {
        &[5, 9]
    } else {
        &[9]
    }
}
/// Encoded sizes a signed int can take (non-negative ones use the uint forms, as Python does).
#[inline]
pub fn sint_forms(v: i64) -> &'static [u8] {
    if v >= 0 {
        uint_forms(v as u64)
    } else if v >= -32 {
        &[1, 2, 3, 5, 9]
    } else if v >= -128 {
        &[2, 3, 5, 9]
    } else if v >= -32768 {
        &[3, 5, 9]
    } else if v >= i32::MIN as i64 {
        &[5, 9]
    } else {
        &[9]
    }
}
/// Header sizes of a str of `n` bytes.
#[inline]
pub fn str_forms(n: usize) -> &'static [u8] {
    if n < 32 {
        &[1, 2, 3, 5]
    } else if n < 256 {
        &[2, 3, 5]
    } else if n < 65536 {
        &[3, 5]
    } else {
        &[5]
    }
}
/// Header sizes of a bin of `n` bytes.
#[inline]
pub fn bin_forms(n: usize) -> &'static [u8] {
    if n < 256 {
        &[2, 3, 5]
    } else if n < 65536 {
        &[3, 5]
    } else {
        &[5]
    }
}
/// Header sizes of an array or map of `n` entries.
#[inline]
pub fn coll_forms(n: usize) -> &'static [u8] {
    if n < 16 {
        &[1, 3, 5]
    } else if n < 65536 {
        &[3, 5]
    } else {
        &[5]
    }
}

#[inline]
pub fn uint_sized(b: &mut Vec<u8>, v: u64, size: u8) {
    match size {
        1 => b.push(v as u8),
        2 => b.extend_from_slice(&[0xcc, v as u8]),
        3 => {
            b.push(0xcd);
            b.extend_from_slice(&(v as u16).to_be_bytes())
        }
        5 => {
            b.push(0xce);
            b.extend_from_slice(&(v as u32).to_be_bytes())
        }
        _ => {
            b.push(0xcf);
            b.extend_from_slice(&v.to_be_bytes())
        }
    }
}
#[inline]
pub fn sint_sized(b: &mut Vec<u8>, v: i64, size: u8) {
    if v >= 0 {
        return uint_sized(b, v as u64, size);
    }
    match size {
        1 => b.push(v as u8),
        2 => b.extend_from_slice(&[0xd0, v as u8]),
        3 => {
            b.push(0xd1);
            b.extend_from_slice(&(v as i16).to_be_bytes())
        }
        5 => {
            b.push(0xd2);
            b.extend_from_slice(&(v as i32).to_be_bytes())
        }
        _ => {
            b.push(0xd3);
            b.extend_from_slice(&v.to_be_bytes())
        }
    }
}
#[inline]
fn sized_hdr(b: &mut Vec<u8>, n: usize, size: u8, fix: u8, m8: Option<u8>, m16: u8, m32: u8) {
    match size {
        1 => b.push(fix | n as u8),
        2 => b.extend_from_slice(&[m8.unwrap_or(m16), n as u8]),
        3 => {
            b.push(m16);
            b.extend_from_slice(&(n as u16).to_be_bytes())
        }
        _ => {
            b.push(m32);
            b.extend_from_slice(&(n as u32).to_be_bytes())
        }
    }
}
#[inline]
pub fn str_hdr_sized(b: &mut Vec<u8>, n: usize, size: u8) {
    sized_hdr(b, n, size, 0xa0, Some(0xd9), 0xda, 0xdb)
}
#[inline]
pub fn bin_hdr_sized(b: &mut Vec<u8>, n: usize, size: u8) {
    sized_hdr(b, n, size, 0, Some(0xc4), 0xc5, 0xc6)
}
#[inline]
pub fn array_hdr_sized(b: &mut Vec<u8>, n: usize, size: u8) {
    sized_hdr(b, n, size, 0x90, None, 0xdc, 0xdd)
}
#[inline]
pub fn map_hdr_sized(b: &mut Vec<u8>, n: usize, size: u8) {
    sized_hdr(b, n, size, 0x80, None, 0xde, 0xdf)
}

/// An ext value of type `code`, in the smallest form (fixext for 1, 2, 4, 8 and 16 bytes), as
/// Python's msgpack packs an `ExtType`. `None` past 2^32 - 1 bytes, which msgpack cannot hold.
pub fn ext(b: &mut Vec<u8>, code: i8, data: &[u8]) -> Option<()> {
    let n = data.len();
    match n {
        1 => b.push(0xd4),
        2 => b.push(0xd5),
        4 => b.push(0xd6),
        8 => b.push(0xd7),
        16 => b.push(0xd8),
        _ if n <= u8::MAX as usize => b.extend_from_slice(&[0xc7, n as u8]),
        _ if n <= u16::MAX as usize => {
            b.push(0xc8);
            b.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            b.push(0xc9);
            b.extend_from_slice(&u32::try_from(n).ok()?.to_be_bytes());
        }
    }
    b.push(code as u8);
    b.extend_from_slice(data);
    Some(())
}

/// The msgpack timestamp (ext -1) for nanoseconds since the epoch, in the 32/64/96-bit form
/// Python's `msgpack.Timestamp.to_bytes` picks.
pub fn timestamp_ns(b: &mut Vec<u8>, ns: i64) {
    let secs = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000) as u64;
    if secs >> 34 == 0 {
        let d64 = (nsec << 34) | secs as u64;
        if d64 >> 32 == 0 {
            b.extend_from_slice(&[0xd6, 0xff]);
            b.extend_from_slice(&(d64 as u32).to_be_bytes());
        } else {
            b.extend_from_slice(&[0xd7, 0xff]);
            b.extend_from_slice(&d64.to_be_bytes());
        }
    } else {
        b.extend_from_slice(&[0xc7, 12, 0xff]);
        b.extend_from_slice(&(nsec as u32).to_be_bytes());
        b.extend_from_slice(&secs.to_be_bytes());
    }
}

/// Whether `b` is exactly one msgpack integer; its value.
pub fn read_int(b: &[u8]) -> Option<IntVal> {
    use IntVal::{S, U};
    let be = |n: usize| -> Option<u64> {
        (b.len() == n + 1).then(|| b[1..].iter().fold(0u64, |a, &x| (a << 8) | x as u64))
    };
    let m = *b.first()?;
    Some(match m {
        0x00..=0x7f if b.len() == 1 => U(m as u64),
        0xe0..=0xff if b.len() == 1 => S(m as i8 as i64),
        0xcc => U(be(1)?),
        0xcd => U(be(2)?),
        0xce => U(be(4)?),
        0xcf => U(be(8)?),
        0xd0 => S(be(1)? as u8 as i8 as i64),
        0xd1 => S(be(2)? as u16 as i16 as i64),
        0xd2 => S(be(4)? as u32 as i32 as i64),
        0xd3 => S(be(8)? as i64),
        _ => return None,
    })
}

/// A msgpack integer read back from encoded bytes (to re-emit it wider in aligned mode).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum IntVal {
    /// unsigned form
    U(u64),
    /// signed form
    S(i64),
}

impl IntVal {
    pub(crate) fn forms(self) -> &'static [u8] {
        match self {
            IntVal::U(v) => uint_forms(v),
            IntVal::S(v) => sint_forms(v),
        }
    }
    pub(crate) fn write(self, b: &mut Vec<u8>, size: u8) {
        match self {
            IntVal::U(v) => uint_sized(b, v, size),
            IntVal::S(v) => sint_sized(b, v, size),
        }
    }
}

/// The output buffer and where it sits in the whole output (`base` = bytes already handed to the
/// sink), so aligned mode can compute absolute offsets.
pub(crate) struct Out {
    pub(crate) buf: Vec<u8>,
    pub(crate) base: u64,
    pub(crate) align: bool,
    /// ndarrays and numpy scalars in openpi's maps (`__ndarray__`/`__npgeneric__`)
    pub(crate) openpi: bool,
    /// how msgpack-numpy's maps and byte strings are spelled (the file read's, where it was
    /// not msgpack_numpy 0.4's own)
    pub(crate) spelling: Spelling,
    /// Only the output's size is wanted ([`crate::WriterBuilder::build_count`]): payloads whose
    /// length is known without encoding them are counted in `elided` instead of copied.
    pub(crate) count_only: bool,
    /// Bytes counted but not put in `buf` (`count_only`); they sit before `buf`'s bytes.
    pub(crate) elided: u64,
}

impl Out {
    pub(crate) fn new(align: bool) -> Self {
        Out {
            buf: Vec::new(),
            base: 0,
            align,
            openpi: false,
            spelling: Spelling::default(),
            count_only: false,
            elided: 0,
        }
    }
    /// Absolute output offset of the next byte.
    #[inline]
    pub(crate) fn pos(&self) -> u64 {
        self.base + self.elided + self.buf.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any of the widths a value can take: small values are the interesting ones.
    fn any_width_u64() -> impl Strategy<Value = u64> {
        (0u32..=64, any::<u64>()).prop_map(|(bits, v)| {
            if bits == 64 {
                v
            } else {
                v & ((1u64 << bits) - 1)
            }
        })
    }

    /// Each form's edges, on both sides: as rmp writes them.
    #[test]
    fn integers_at_every_form_edge_are_written_as_rmp_writes_them() {
        let edges: [i128; 12] = [
            0,
            -32,
            -128,
            127,
            255,
            -32768,
            65535,
            i32::MIN as i128,
            u32::MAX as i128,
            i64::MIN as i128,
            i64::MAX as i128,
            u64::MAX as i128,
        ];
        for e in edges {
            for v in [e - 1, e, e + 1] {
                let (mut ours, mut rmps) = (Vec::new(), Vec::new());
                if let Ok(u) = u64::try_from(v) {
                    uint(&mut ours, u);
                    rmp::encode::write_uint(&mut rmps, u).unwrap();
                }
                if let Ok(i) = i64::try_from(v) {
                    sint(&mut ours, i);
                    rmp::encode::write_sint(&mut rmps, i).unwrap();
                }
                assert_eq!(ours, rmps, "{v}");
            }
        }
    }

    proptest! {
        /// The smallest forms are rmp's (which picks them as Python's packer does).
        #[test]
        fn numbers_are_written_as_rmp_writes_them(
            u in any_width_u64(),
            neg in any_width_u64(),
            x in any::<f64>(),
            y in any::<f32>(),
        ) {
            let i = -((neg >> 1) as i64) - 1; // -1 ..= i64::MIN
            let mut ours = Vec::new();
            let mut rmps = Vec::new();
            uint(&mut ours, u);
            rmp::encode::write_uint(&mut rmps, u).unwrap();
            for v in [i, u as i64, (u >> 1) as i64] {
                sint(&mut ours, v);
                rmp::encode::write_sint(&mut rmps, v).unwrap();
            }
            f64(&mut ours, x);
            rmp::encode::write_f64(&mut rmps, x).unwrap();
            f32(&mut ours, y);
            rmp::encode::write_f32(&mut rmps, y).unwrap();
            prop_assert_eq!(ours, rmps);
        }
    }
}
