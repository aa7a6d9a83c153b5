//! A position-tracking MessagePack reader over a byte slice.
//!
//! Markers are classified by `rmp::Marker`; every declared length is checked against the bytes that
//! remain *before* anything is allocated or sliced, and nesting is bounded, so hostile input gives
//! an error with its byte offset instead of a panic, a hang or a huge allocation.

use rmp::Marker;

use crate::error::{Error, ErrorKind, Result};

/// Default nesting limit of msgpack containers.
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// One decoded msgpack integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int {
    /// Fits in i64.
    I(i64),
    /// Above i64::MAX.
    U(u64),
}

/// [`Kind`] by marker byte (`None`: the reserved 0xc1): one load where a match on the marker was
/// a chain of compares, in every decoder's and the walk's per-value path.
const KINDS: [Option<Kind>; 256] = {
    let mut t = [None; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            0xc0 => Some(Kind::Nil),
            0xc2 | 0xc3 => Some(Kind::Bool),
            0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xd3 => Some(Kind::Int),
            0xca => Some(Kind::F32),
            0xcb => Some(Kind::F64),
            0xa0..=0xbf | 0xd9..=0xdb => Some(Kind::Str),
            0xc4..=0xc6 => Some(Kind::Bin),
            0x90..=0x9f | 0xdc | 0xdd => Some(Kind::Array),
            0x80..=0x8f | 0xde | 0xdf => Some(Kind::Map),
            0xc7..=0xc9 | 0xd4..=0xd8 => Some(Kind::Ext),
            0xc1 => None,
        };
        b += 1;
    }
    t
};

/// The broad type of the next value, from its marker alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// nil
    Nil,
    /// true/false
    Bool,
    /// any integer
    Int,
    /// float 32
    F32,
    /// float 64
    F64,
    /// str
    Str,
    /// bin
    Bin,
    /// array
    Array,
    /// map
    Map,
    /// ext
    Ext,
}

/// What [`Cursor::skip`] has left to skip at each level above (inline up to 32 levels).
type SkipStack = smallvec::SmallVec<[usize; 32]>;

/// A cursor over msgpack bytes. `base` is the absolute offset of `buf[0]` in the input, so errors
/// name positions in the whole file.
#[derive(Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    /// start of the value being read: truncation errors are reported from there
    vstart: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`, which begins at absolute offset `base`.
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        Cursor {
            buf,
            pos: 0,
            base,
            vstart: 0,
        }
    }
    /// Position within `buf`.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Move to a position within `buf` (must be one this cursor reported).
    #[inline]
    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }
    /// Absolute offset of the cursor in the input.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
    /// Absolute offset of a position within `buf`.
    #[inline]
    pub fn offset_of(&self, pos: usize) -> u64 {
        self.base + pos as u64
    }
    /// The underlying bytes.
    #[inline]
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }
    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// Whether all bytes were consumed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// An error of this kind at the cursor's position.
    pub fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind).at_offset(self.offset())
    }
    /// An error of this kind at a given position.
    pub fn error_at(&self, pos: usize, kind: ErrorKind) -> Error {
        Error::new(kind).at_offset(self.offset_of(pos))
    }

    /// The value starting at `vstart` needs `need` more bytes at `pos`: report it from its start,
    /// so `offset + have` is where the input ends.
    #[inline]
    fn truncated(&self, need: usize) -> Error {
        let start = self.vstart.min(self.pos);
        let before = (self.pos - start) as u64;
        Error::new(ErrorKind::Truncated {
            need: before.saturating_add(need as u64),
            have: (self.buf.len() - start) as u64,
        })
        .at_offset(self.offset_of(start))
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.truncated(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[inline]
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    fn be<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Marker of the next value, not consumed.
    #[inline]
    pub fn peek_marker(&self) -> Result<Marker> {
        match self.buf.get(self.pos) {
            Some(&b) => Ok(Marker::from_u8(b)),
            None => Err(self.error(ErrorKind::Truncated { need: 1, have: 0 })),
        }
    }

    /// The next value's bytes if it is a fixstr (as most map keys and short strings are), read
    /// from its marker byte alone; not consumed (it is `1 + len` bytes long). `None` for anything
    /// else, or a fixstr cut short: the general helpers then say what is wrong.
    #[inline]
    pub fn peek_fixstr(&self) -> Option<&'a [u8]> {
        match self.buf.get(self.pos) {
            Some(&b @ 0xa0..=0xbf) => self
                .buf
                .get(self.pos + 1..self.pos + 1 + (b & 0x1f) as usize),
            _ => None,
        }
    }

    /// Broad kind of the next value, not consumed.
    #[inline]
    pub fn peek_kind(&self) -> Result<Kind> {
        match self.buf.get(self.pos) {
            Some(&b) => match KINDS[b as usize] {
                Some(k) => Ok(k),
                None => Err(self.error(ErrorKind::InvalidMsgpack("reserved byte 0xc1".into()))),
            },
            None => Err(self.error(ErrorKind::Truncated { need: 1, have: 0 })),
        }
    }

    fn wrong(&self, want: &str) -> Error {
        let got = match self.peek_kind() {
            Ok(k) => format!("{k:?}").to_lowercase(),
            Err(e) => return e,
        };
        self.error(ErrorKind::InvalidMsgpack(format!(
            "expected {want}, found {got}"
        )))
    }

    /// Read nil.
    pub fn read_nil(&mut self) -> Result<()> {
        self.vstart = self.pos;
        match self.peek_marker()? {
            Marker::Null => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.wrong("nil")),
        }
    }

    /// Read a bool.
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool> {
        self.vstart = self.pos;
        match self.peek_marker()? {
            Marker::True => {
                self.pos += 1;
                Ok(true)
            }
            Marker::False => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.wrong("bool")),
        }
    }

    /// Read any integer.
    #[inline]
    pub fn read_int(&mut self) -> Result<Int> {
        let p = self.pos;
        // with the longest int's 9 bytes there, the marker alone says where the value ends: one
        // check, not one per step (most ints of a file are read here)
        if let Some(w) = self.buf.get(p..p + 9) {
            let w: [u8; 9] = w.try_into().expect("9 bytes");
            let a2 = [w[1], w[2]];
            let a4 = [w[1], w[2], w[3], w[4]];
            let a8 = [w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]];
            let (v, n) = match w[0] {
                b @ 0x00..=0x7f => (Int::I(b as i64), 1),
                b @ 0xe0..=0xff => (Int::I(b as i8 as i64), 1),
                0xcc => (Int::I(w[1] as i64), 2),
                0xcd => (Int::I(u16::from_be_bytes(a2) as i64), 3),
                0xce => (Int::I(u32::from_be_bytes(a4) as i64), 5),
                0xcf => match u64::from_be_bytes(a8) {
                    v if v > i64::MAX as u64 => (Int::U(v), 9),
                    v => (Int::I(v as i64), 9),
                },
                0xd0 => (Int::I(w[1] as i8 as i64), 2),
                0xd1 => (Int::I(i16::from_be_bytes(a2) as i64), 3),
                0xd2 => (Int::I(i32::from_be_bytes(a4) as i64), 5),
                0xd3 => (Int::I(i64::from_be_bytes(a8)), 9),
                _ => return self.read_int_checked(),
            };
            self.vstart = p;
            self.pos = p + n;
            return Ok(v);
        }
        self.read_int_checked()
    }

    /// [`Cursor::read_int`] near the end of the input, or of a value that is not an int: each
    /// step checked, errors positioned. (A twin of the fast path's table on purpose: one table
    /// for both, over a zero-padded word, read 1,000,000 ints in 14.0 ms instead of 11.7.)
    fn read_int_checked(&mut self) -> Result<Int> {
        self.vstart = self.pos;
        let m = self.peek_marker()?;
        let start = self.pos;
        self.pos += 1;
        let r = match m {
            Marker::FixPos(v) => Ok(Int::I(v as i64)),
            Marker::FixNeg(v) => Ok(Int::I(v as i64)),
            Marker::U8 => self.u8().map(|v| Int::I(v as i64)),
            Marker::U16 => self.be::<2>().map(|b| Int::I(u16::from_be_bytes(b) as i64)),
            Marker::U32 => self.be::<4>().map(|b| Int::I(u32::from_be_bytes(b) as i64)),
            Marker::U64 => self.be::<8>().map(|b| {
                let v = u64::from_be_bytes(b);
                if v > i64::MAX as u64 {
                    Int::U(v)
                } else {
                    Int::I(v as i64)
                }
            }),
            Marker::I8 => self.u8().map(|v| Int::I(v as i8 as i64)),
            Marker::I16 => self.be::<2>().map(|b| Int::I(i16::from_be_bytes(b) as i64)),
            Marker::I32 => self.be::<4>().map(|b| Int::I(i32::from_be_bytes(b) as i64)),
            Marker::I64 => self.be::<8>().map(|b| Int::I(i64::from_be_bytes(b))),
            _ => {
                self.pos = start;
                Err(self.wrong("integer"))
            }
        };
        if r.is_err() {
            self.pos = start;
        }
        r
    }

    /// Read a float32 or float64 (as f64), or an integer converted to f64.
    #[inline]
    pub fn read_f64(&mut self) -> Result<f64> {
        self.vstart = self.pos;
        match self.peek_marker()? {
            Marker::F64 => {
                self.pos += 1;
                Ok(f64::from_be_bytes(self.be::<8>()?))
            }
            Marker::F32 => {
                self.pos += 1;
                Ok(f32::from_be_bytes(self.be::<4>()?) as f64)
            }
            _ => match self.read_int() {
                Ok(Int::I(v)) => Ok(v as f64),
                Ok(Int::U(v)) => Ok(v as f64),
                Err(_) => Err(self.wrong("number")),
            },
        }
    }

    /// Read a float32 exactly (bits preserved); integers are converted.
    #[inline]
    pub fn read_f32(&mut self) -> Result<f32> {
        self.vstart = self.pos;
        match self.peek_marker()? {
            Marker::F32 => {
                self.pos += 1;
                Ok(f32::from_be_bytes(self.be::<4>()?))
            }
            _ => self.read_f64().map(|v| v as f32),
        }
    }

    fn len_after(&mut self, m: Marker) -> Result<Option<usize>> {
        Ok(Some(match m {
            Marker::FixStr(n) => n as usize,
            Marker::FixArray(n) => n as usize,
            Marker::FixMap(n) => n as usize,
            Marker::Str8 | Marker::Bin8 => self.u8()? as usize,
            Marker::Str16 | Marker::Bin16 | Marker::Array16 | Marker::Map16 => {
                u16::from_be_bytes(self.be::<2>()?) as usize
            }
            Marker::Str32 | Marker::Bin32 | Marker::Array32 | Marker::Map32 => {
                u32::from_be_bytes(self.be::<4>()?) as usize
            }
            _ => return Ok(None),
        }))
    }

    /// Read a str or bin payload (either is accepted: old writers used raw strings for bytes).
    /// Returns the bytes and their position in `buf`.
    #[inline]
    pub fn read_str_or_bin(&mut self) -> Result<(&'a [u8], usize)> {
        self.vstart = self.pos;
        let m = self.peek_marker()?;
        let start = self.pos;
        match m {
            Marker::FixStr(_)
            | Marker::Str8
            | Marker::Str16
            | Marker::Str32
            | Marker::Bin8
            | Marker::Bin16
            | Marker::Bin32 => {
                self.pos += 1;
                let n = self.len_after(m)?.unwrap_or(0);
                let at = self.pos;
                match self.take(n) {
                    Ok(s) => Ok((s, at)),
                    Err(e) => {
                        self.pos = start;
                        Err(e)
                    }
                }
            }
            _ => Err(self.wrong("str or bin")),
        }
    }

    /// Read a str payload as UTF-8.
    pub fn read_str(&mut self) -> Result<&'a str> {
        match self.peek_kind()? {
            Kind::Str => {}
            _ => return Err(self.wrong("str")),
        }
        let start = self.pos;
        let (b, _) = self.read_str_or_bin()?;
        // most strings are ASCII: checked inline (a call to from_utf8 per short string was a
        // twentieth of a scalar record read)
        if b.is_ascii() {
            // SAFETY: ASCII bytes are valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(b) });
        }
        std::str::from_utf8(b).map_err(|e| {
            self.error_at(
                start,
                ErrorKind::InvalidMsgpack(format!(
                    "str is not valid UTF-8 ({e}); a writer without bin type (msgpack before 1.0) wrote bytes so: \
                     schema_overrides gives the column the Binary type (CLI --schema-overrides COLUMN=bin)"
                )),
            )
        })
    }

    /// Read an array header; the length is checked against the bytes left (each element takes one at least).
    #[inline]
    pub fn read_array_len(&mut self) -> Result<usize> {
        self.read_container_len(false)
    }

    /// Read a map header; the length is checked against the bytes left (each entry takes two at least).
    #[inline]
    pub fn read_map_len(&mut self) -> Result<usize> {
        self.read_container_len(true)
    }

    #[inline]
    fn read_container_len(&mut self, map: bool) -> Result<usize> {
        self.vstart = self.pos;
        // a fixmap or fixarray (most records and lists): the length is in the marker byte
        if let Some(&b) = self.buf.get(self.pos) {
            let n = (b & 0x0f) as usize;
            let (fix, need) = if map { (0x80, 2 * n) } else { (0x90, n) };
            if b & 0xf0 == fix && need < self.remaining() {
                self.pos += 1;
                return Ok(n);
            }
        }
        let m = self.peek_marker()?;
        let ok = if map {
            matches!(m, Marker::FixMap(_) | Marker::Map16 | Marker::Map32)
        } else {
            matches!(m, Marker::FixArray(_) | Marker::Array16 | Marker::Array32)
        };
        if !ok {
            return Err(self.wrong(if map { "map" } else { "array" }));
        }
        let start = self.pos;
        self.pos += 1;
        let n = self.len_after(m)?.unwrap_or(0);
        // the smallest encoding of each element is one byte: more than that cannot be there
        let need = if map { n.saturating_mul(2) } else { n };
        if need > self.remaining() {
            let e = self.truncated(need);
            self.pos = start;
            return Err(e);
        }
        Ok(n)
    }

    /// Read an ext value: its type and payload.
    pub fn read_ext(&mut self) -> Result<(i8, &'a [u8])> {
        self.vstart = self.pos;
        let m = self.peek_marker()?;
        let start = self.pos;
        self.pos += 1;
        let r = (|| {
            let n = match m {
                Marker::FixExt1 => 1,
                Marker::FixExt2 => 2,
                Marker::FixExt4 => 4,
                Marker::FixExt8 => 8,
                Marker::FixExt16 => 16,
                Marker::Ext8 => self.u8()? as usize,
                Marker::Ext16 => u16::from_be_bytes(self.be::<2>()?) as usize,
                Marker::Ext32 => u32::from_be_bytes(self.be::<4>()?) as usize,
                _ => {
                    self.pos = start;
                    return Err(self.wrong("ext"));
                }
            };
            let t = self.u8()? as i8;
            Ok((t, self.take(n)?))
        })();
        if r.is_err() {
            self.pos = start;
        }
        r
    }

    /// Skip one value, which must be all the bytes left (a blob, a raw value): trailing bytes
    /// are an error at their offset.
    pub fn skip_exactly_one(&mut self, max_depth: usize) -> Result<()> {
        self.skip(max_depth)?;
        if !self.is_empty() {
            return Err(self.error(ErrorKind::InvalidMsgpack(format!(
                "{} bytes after the value: a row must hold exactly one object",
                self.remaining()
            ))));
        }
        Ok(())
    }

    /// [`Self::skip`] goes into the container at `start` of `n` items: what is left of the level
    /// above waits on `pending`, up to `max_depth` levels.
    #[inline]
    fn enter(
        &mut self,
        pending: &mut SkipStack,
        left: &mut usize,
        n: usize,
        start: usize,
        max_depth: usize,
    ) -> Result<()> {
        if pending.len() + 1 >= max_depth {
            self.pos = start;
            return Err(self.error(ErrorKind::TooDeep(max_depth)));
        }
        pending.push(*left);
        *left = n;
        Ok(())
    }

    /// Where the last value [`Cursor::skip`] stepped over starts (at any depth: after a map,
    /// its last item).
    pub(crate) fn last_value_start(&self) -> usize {
        self.vstart
    }

    /// Skip one value of any type, checking lengths; nesting is bounded by `max_depth`.
    pub fn skip(&mut self, max_depth: usize) -> Result<()> {
        // An explicit stack of "values still to skip" keeps deep nesting off the call stack.
        let mut pending = SkipStack::new();
        let mut left = 1usize;
        loop {
            while left == 0 {
                match pending.pop() {
                    Some(l) => left = l,
                    None => return Ok(()),
                }
            }
            left -= 1;
            // the common case from the marker byte and its length bytes alone: a complete value
            // that is not an ext. Anything else (cut short, ext, reserved) goes the general way
            // below, which says what is wrong.
            if let Some((len, items)) = fast_len(self.buf, self.pos) {
                let start = self.pos;
                // (each item takes a byte at least: more items than bytes is a cut the general
                // way reports)
                if self.buf.len() - start >= len + items.unwrap_or(0) {
                    self.vstart = start;
                    self.pos = start + len;
                    if let Some(n) = items {
                        self.enter(&mut pending, &mut left, n, start, max_depth)?;
                    }
                    continue;
                }
            }
            let m = self.peek_marker()?;
            let start = self.pos;
            self.vstart = start;
            self.pos += 1;
            let fixed = match m {
                Marker::Null
                | Marker::True
                | Marker::False
                | Marker::FixPos(_)
                | Marker::FixNeg(_) => 0,
                Marker::U8 | Marker::I8 => 1,
                Marker::U16 | Marker::I16 => 2,
                Marker::U32 | Marker::I32 | Marker::F32 => 4,
                Marker::U64 | Marker::I64 | Marker::F64 => 8,
                Marker::FixExt1 => 2,
                Marker::FixExt2 => 3,
                Marker::FixExt4 => 5,
                Marker::FixExt8 => 9,
                Marker::FixExt16 => 17,
                Marker::Ext8 | Marker::Ext16 | Marker::Ext32 => {
                    self.pos = start;
                    self.read_ext()?;
                    continue;
                }
                Marker::FixStr(_)
                | Marker::Str8
                | Marker::Str16
                | Marker::Str32
                | Marker::Bin8
                | Marker::Bin16
                | Marker::Bin32 => {
                    self.pos = start;
                    self.read_str_or_bin()?;
                    continue;
                }
                Marker::FixArray(_)
                | Marker::Array16
                | Marker::Array32
                | Marker::FixMap(_)
                | Marker::Map16
                | Marker::Map32 => {
                    self.pos = start;
                    let n = if matches!(m, Marker::FixMap(_) | Marker::Map16 | Marker::Map32) {
                        self.read_map_len()? * 2
                    } else {
                        self.read_array_len()?
                    };
                    self.enter(&mut pending, &mut left, n, start, max_depth)?;
                    continue;
                }
                Marker::Reserved => {
                    self.pos = start;
                    return Err(self.error(ErrorKind::InvalidMsgpack("reserved byte 0xc1".into())));
                }
            };
            if let Err(e) = self.take(fixed) {
                self.pos = start;
                return Err(e);
            }
        }
    }
}

/// The byte length of the value at `pos` up to its items, and for an array or map the number of
/// items that follow (a map's keys and values); `None` for an ext, the reserved byte, or length
/// bytes cut short. Lengths come from the bytes alone: whether they are there is the caller's.
#[inline(always)]
fn fast_len(buf: &[u8], pos: usize) -> Option<(usize, Option<usize>)> {
    let b = *buf.get(pos)?;
    let be = |n: usize| -> Option<usize> {
        let s = buf.get(pos + 1..pos + 1 + n)?;
        Some(s.iter().fold(0usize, |a, &x| (a << 8) | x as usize))
    };
    Some(match b {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, None),
        0xa0..=0xbf => (1 + (b & 0x1f) as usize, None),
        0x90..=0x9f => (1, Some((b & 0x0f) as usize)),
        0x80..=0x8f => (1, Some((b & 0x0f) as usize * 2)),
        0xcc | 0xd0 => (2, None),
        0xcd | 0xd1 => (3, None),
        0xca | 0xce | 0xd2 => (5, None),
        0xcb | 0xcf | 0xd3 => (9, None),
        0xc4 | 0xd9 => (2 + be(1)?, None),
        0xc5 | 0xda => (3 + be(2)?, None),
        0xc6 | 0xdb => (5 + be(4)?, None),
        0xdc => (3, Some(be(2)?)),
        0xdd => (5, Some(be(4)?)),
        0xde => (3, Some(be(2)? * 2)),
        0xdf => (5, Some(be(4)? * 2)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_table_classifies_every_marker_byte_as_rmp_does() {
        for b in 0..=255u8 {
            let want = match Marker::from_u8(b) {
                Marker::Null => Some(Kind::Nil),
                Marker::True | Marker::False => Some(Kind::Bool),
                Marker::FixPos(_)
                | Marker::FixNeg(_)
                | Marker::U8
                | Marker::U16
                | Marker::U32
                | Marker::U64
                | Marker::I8
                | Marker::I16
                | Marker::I32
                | Marker::I64 => Some(Kind::Int),
                Marker::F32 => Some(Kind::F32),
                Marker::F64 => Some(Kind::F64),
                Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => Some(Kind::Str),
                Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => Some(Kind::Bin),
                Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => Some(Kind::Array),
                Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => Some(Kind::Map),
                Marker::FixExt1
                | Marker::FixExt2
                | Marker::FixExt4
                | Marker::FixExt8
                | Marker::FixExt16
                | Marker::Ext8
                | Marker::Ext16
                | Marker::Ext32 => Some(Kind::Ext),
                Marker::Reserved => None,
            };
            assert_eq!(KINDS[b as usize], want, "marker byte {b:#04x}");
            let buf = [b, 0, 0, 0, 0, 0, 0, 0, 0];
            assert_eq!(Cursor::new(&buf, 0).peek_kind().ok(), want);
        }
    }

    #[test]
    fn ints_of_every_width_read_as_rmp_wrote_them_with_or_without_bytes_after() {
        use rmp::encode::*;
        let mut cases: Vec<(Vec<u8>, i128)> = Vec::new();
        for v in [
            0i64,
            1,
            127,
            -1,
            -32,
            -33,
            -128,
            -129,
            255,
            256,
            65_535,
            -32_768,
            i64::MIN,
            i64::MAX,
        ] {
            let mut b = Vec::new();
            write_sint(&mut b, v).unwrap();
            cases.push((b, v as i128));
        }
        for v in [
            0u64,
            200,
            65_535,
            70_000,
            u32::MAX as u64,
            1 << 40,
            i64::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            write_uint(&mut b, v).unwrap();
            cases.push((b, v as i128));
        }
        // the widths a writer may choose though a shorter one holds the value
        type Put = fn(&mut Vec<u8>, i128);
        let forced: [Put; 8] = [
            |b, v| write_u8(b, v as u8).unwrap(),
            |b, v| write_u16(b, v as u16).unwrap(),
            |b, v| write_u32(b, v as u32).unwrap(),
            |b, v| write_u64(b, v as u64).unwrap(),
            |b, v| write_i8(b, v as i8).unwrap(),
            |b, v| write_i16(b, v as i16).unwrap(),
            |b, v| write_i32(b, v as i32).unwrap(),
            |b, v| write_i64(b, v as i64).unwrap(),
        ];
        for put in forced {
            let mut b = Vec::new();
            put(&mut b, 5);
            cases.push((b, 5));
        }
        for (bytes, want) in cases {
            for after in [0usize, 1, 8, 16] {
                let mut buf = bytes.clone();
                buf.resize(bytes.len() + after, 0xc0);
                let mut c = Cursor::new(&buf, 0);
                let got = match c.read_int().unwrap() {
                    Int::I(v) => v as i128,
                    Int::U(v) => v as i128,
                };
                assert_eq!(
                    (got, c.pos()),
                    (want, bytes.len()),
                    "{bytes:02x?} + {after}"
                );
            }
            // cut short: an error at the value's start, nothing consumed
            let mut c = Cursor::new(&bytes[..bytes.len() - 1], 7);
            if bytes.len() > 1 {
                let e = c.read_int().unwrap_err();
                assert!(e.to_string().contains("truncated"), "{e}");
                assert_eq!((e.offset(), c.pos()), (Some(7), 0));
            }
        }
        // not an int: an error, the cursor where it was
        let buf = [0xa1, b'x', 0, 0, 0, 0, 0, 0, 0, 0];
        let mut c = Cursor::new(&buf, 0);
        assert!(c.read_int().is_err());
        assert_eq!(c.pos(), 0);
    }

    #[test]
    fn fix_headers_read_as_the_general_path_reads_them() {
        // a fixmap / fixarray whose items cannot all be there is refused as a longer header is
        let ok = [0x81, 0xa1, b'a', 0x01];
        assert_eq!(Cursor::new(&ok, 0).read_map_len().unwrap(), 1);
        let short = [0x82, 0xa1, b'a'];
        assert!(Cursor::new(&short, 0).read_map_len().is_err());
        let arr = [0x93, 1, 2, 3];
        let mut c = Cursor::new(&arr, 0);
        assert_eq!(c.read_array_len().unwrap(), 3);
        assert_eq!(c.pos(), 1);
        assert!(Cursor::new(&arr[..3], 0).read_array_len().is_err());
        // one kind is not the other
        assert!(Cursor::new(&arr, 0).read_map_len().is_err());
        assert!(Cursor::new(&ok, 0).read_array_len().is_err());
    }

    #[test]
    fn lengths_are_checked_before_use() {
        // bin32 claiming 4 GiB with 1 byte present
        let b = [0xc6, 0xff, 0xff, 0xff, 0xff, 0x00];
        let e = Cursor::new(&b, 100).read_str_or_bin().unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        assert_eq!(e.offset(), Some(100));
        // array32 claiming 4 billion elements
        let b = [0xdd, 0xff, 0xff, 0xff, 0xff];
        assert!(Cursor::new(&b, 0).read_array_len().is_err());
    }

    /// One value of every marker family, as rmp writes them (each length form of str, bin, ext,
    /// array and map, ints and floats of every width), nested in an array and a map.
    fn every_marker() -> Vec<u8> {
        use rmp::encode::*;
        let mut v = Vec::new();
        let long = vec![b'x'; 70_000];
        write_map_len(&mut v, 1).unwrap();
        write_str(&mut v, "all").unwrap();
        write_array_len(&mut v, 34).unwrap();
        write_nil(&mut v).unwrap();
        write_bool(&mut v, true).unwrap();
        write_pfix(&mut v, 7).unwrap();
        write_nfix(&mut v, -3).unwrap();
        write_u8(&mut v, 200).unwrap();
        write_u16(&mut v, 60_000).unwrap();
        write_u32(&mut v, 4_000_000_000).unwrap();
        write_u64(&mut v, u64::MAX).unwrap();
        write_i8(&mut v, -100).unwrap();
        write_i16(&mut v, -30_000).unwrap();
        write_i32(&mut v, -2_000_000_000).unwrap();
        write_i64(&mut v, i64::MIN).unwrap();
        write_f32(&mut v, 1.5).unwrap();
        write_f64(&mut v, -2.25).unwrap();
        for n in [3, 40, 300, 70_000] {
            write_str(&mut v, std::str::from_utf8(&long[..n]).unwrap()).unwrap();
            write_bin(&mut v, &long[..n]).unwrap();
        }
        for n in [1, 2, 4, 8, 16, 3, 300, 70_000] {
            write_ext_meta(&mut v, n, 5).unwrap();
            v.extend_from_slice(&long[..n as usize]);
        }
        write_array_len(&mut v, 20).unwrap(); // array16
        v.extend(std::iter::repeat_n(0xc0, 20));
        write_map_len(&mut v, 17).unwrap(); // map16
        v.extend(std::iter::repeat_n(0x01, 34));
        v.extend([0xdd, 0, 0, 0, 1, 0xc3]); // array32 of one
        v.extend([0xdf, 0, 0, 0, 1, 0x01, 0x02]); // map32 of one pair
        v
    }

    #[test]
    fn skip_steps_over_every_marker_and_names_every_cut() {
        let v = every_marker();
        let mut c = Cursor::new(&v, 0);
        c.skip(64).unwrap();
        assert_eq!(c.pos(), v.len(), "skip ends where rmp's value ends");
        // cut anywhere: the error is a cut, from the start of a value, that reaches the cut
        for cut in 0..v.len() {
            let e = Cursor::new(&v[..cut], 1000).skip(64).unwrap_err();
            match e.kind() {
                ErrorKind::Truncated { need, have } => {
                    assert!(need > have, "cut {cut}: {e}");
                    assert_eq!(
                        e.offset().unwrap() - 1000 + have,
                        cut as u64,
                        "cut {cut}: {e}"
                    );
                }
                _ => panic!("cut {cut}: {e}"),
            }
        }
    }

    #[test]
    fn skip_bounds_depth() {
        let b = vec![0x91u8; 100_000];
        let e = Cursor::new(&b, 0).skip(64).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::TooDeep(64)));
    }
}
