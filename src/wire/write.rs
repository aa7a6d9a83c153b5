//! MessagePack primitives as Python's packer writes them: the smallest form (positive ints as
//! fixint/uint8..64, negative ones as the smallest signed form, str8 allowed), or an explicit wider
//! form of a given total header size (aligned mode).
//!
//! Written by hand rather than through `rmp::encode`: they cannot fail on a `Vec<u8>` and inline
//! into the per-row loops, and aligned mode needs explicitly *wider* forms, which `rmp` only
//! offers one function per marker for.

#[inline]
pub fn uint(b: &mut Vec<u8>, v: u64) {
    uint_sized(b, v, uint_forms(v)[0])
}
#[inline]
pub fn sint(b: &mut Vec<u8>, v: i64) {
    sint_sized(b, v, sint_forms(v)[0])
}
#[inline]
pub fn f64(b: &mut Vec<u8>, v: f64) {
    b.push(0xcb);
    b.extend_from_slice(&v.to_bits().to_be_bytes());
}
#[inline]
pub fn f32(b: &mut Vec<u8>, v: f32) {
    b.push(0xca);
    b.extend_from_slice(&v.to_bits().to_be_bytes());
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
