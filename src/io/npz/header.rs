//! `.npy` headers: written byte-for-byte as numpy writes them, and parsed (the Python dict
//! literal numpy uses) with every length checked.

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::types::NumpyDtype;
use std::io::Read;

pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

pub(crate) const ARRAY_ALIGN: usize = 64;

/// numpy leaves room in the header for axis 0 to grow to this many digits.
pub(crate) const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// numpy refuses headers over 10,000 bytes by default; allow more, but not without bound.
pub(crate) const MAX_HEADER_LEN: usize = 1 << 20;

/// Python's `repr` of a shape tuple: `()`, `(3,)`, `(3, 768)`.
pub(crate) fn shape_repr(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The `.npy` header (magic, version, length, dict, padding) exactly as
/// `numpy.lib.format.write_array` writes it for a C-order array.
pub fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    // numpy: sorted keys, repr values, then spare spaces so axis 0 can grow in place.
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_repr(shape)
    );
    if let Some(first) = shape.first() {
        let digits = first.to_string().len();
        dict.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits)));
    }
    let wrap = |len_field: usize| {
        let hlen = dict.len() + 1;
        let pad = ARRAY_ALIGN - (MAGIC.len() + 2 + len_field + hlen) % ARRAY_ALIGN;
        (hlen + pad, pad)
    };
    let (total, pad, version) = match wrap(2) {
        (total, pad) if total <= u16::MAX as usize => (total, pad, 1u8),
        _ => {
            let (total, pad) = wrap(4);
            // Non-ASCII (structured field names) would need 3.0; our descrs are ASCII.
            (total, pad, if dict.is_ascii() { 2 } else { 3 })
        }
    };
    let mut out = Vec::with_capacity(total + 12);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(total as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(total as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

/// A Python literal, as found in `.npy` headers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Py {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Seq(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

pub(crate) struct PyParser<'a> {
    pub(crate) s: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> PyParser<'a> {
    pub(crate) fn bad(&self, what: &str) -> Error {
        Error::new(ErrorKind::InvalidNdarray(format!(
            "bad .npy header: {what} at character {}",
            self.pos
        )))
    }
    pub(crate) fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    pub(crate) fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn value(&mut self, depth: usize) -> Result<Py> {
        if depth > 32 {
            return Err(self.bad("nesting too deep"));
        }
        self.ws();
        let Some(&c) = self.s.get(self.pos) else {
            return Err(self.bad("unexpected end"));
        };
        match c {
            b'\'' | b'"' => self.string(c),
            b'(' | b'[' => {
                self.pos += 1;
                let close = if c == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                loop {
                    if self.eat(close) {
                        break;
                    }
                    items.push(self.value(depth + 1)?);
                    if !self.eat(b',') {
                        if self.eat(close) {
                            break;
                        }
                        return Err(self.bad("expected ',' or closing bracket"));
                    }
                }
                Ok(Py::Seq(items))
            }
            b'{' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.eat(b'}') {
                        break;
                    }
                    let k = self.value(depth + 1)?;
                    if !self.eat(b':') {
                        return Err(self.bad("expected ':'"));
                    }
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    if !self.eat(b',') {
                        if self.eat(b'}') {
                            break;
                        }
                        return Err(self.bad("expected ',' or '}'"));
                    }
                }
                Ok(Py::Dict(items))
            }
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                self.pos += 1;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos])
                    .map_err(|_| self.bad("number"))?;
                let v = text.parse::<i128>().map_err(|_| self.bad("number"))?;
                // Python 2 longs: `3L`
                if matches!(self.s.get(self.pos), Some(b'L' | b'l')) {
                    self.pos += 1;
                }
                Ok(Py::Int(v))
            }
            _ => {
                for (word, v) in [
                    ("True", Py::Bool(true)),
                    ("False", Py::Bool(false)),
                    ("None", Py::None),
                ] {
                    if self.s[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(v);
                    }
                }
                Err(self.bad("unexpected character"))
            }
        }
    }
    pub(crate) fn string(&mut self, quote: u8) -> Result<Py> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return Err(self.bad("unterminated string"));
            };
            self.pos += 1;
            match c {
                _ if c == quote => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.bad("bad escape"));
                    };
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'0' => out.push(0),
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out)
            .map(Py::Str)
            .map_err(|_| self.bad("string is not UTF-8"))
    }
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    /// The element dtype.
    pub dtype: NumpyDtype,
    /// Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<usize>,
    /// Bytes before the data (magic, version, length, dict, padding).
    pub header_len: usize,
}

/// Read and parse a `.npy` header from `r`, leaving it at the first data byte.
pub fn read_npy_header(r: &mut impl Read) -> Result<NpyHeader> {
    let bad = |m: &str| Error::new(ErrorKind::InvalidNdarray(format!("bad .npy header: {m}")));
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| bad("shorter than the magic string"))?;
    if &pre[..6] != MAGIC {
        return Err(bad("no \\x93NUMPY magic (not a .npy array)"));
    }
    let (len, len_field) = match pre[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).map_err(|_| bad("truncated"))?;
            (u16::from_le_bytes(b) as usize, 2)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|_| bad("truncated"))?;
            (u32::from_le_bytes(b) as usize, 4)
        }
        v => return Err(bad(&format!("unknown format version {v}.{}", pre[7]))),
    };
    if len > MAX_HEADER_LEN {
        return Err(bad(&format!("header of {len} bytes is too long")));
    }
    let mut h = vec![0u8; len];
    r.read_exact(&mut h).map_err(|_| bad("truncated"))?;
    // Versions 1 and 2 are latin-1: map bytes to chars one to one.
    let text: String = if pre[6] == 3 {
        String::from_utf8(h).map_err(|_| bad("not UTF-8"))?
    } else {
        h.iter().map(|&b| b as char).collect()
    };
    let mut p = PyParser {
        s: text.as_bytes(),
        pos: 0,
    };
    let Py::Dict(items) = p.value(0)? else {
        return Err(bad("not a dict"));
    };
    let get = |k: &str| {
        items
            .iter()
            .find(|(key, _)| *key == Py::Str(k.into()))
            .map(|(_, v)| v)
    };
    let dtype = match get("descr") {
        Some(Py::Str(s)) => NumpyDtype::parse(s)?,
        Some(Py::Seq(_)) => {
            return Err(unsupported(
                "structured (record) arrays in .npy files are not supported".into(),
            ))
        }
        _ => return Err(bad("no 'descr'")),
    };
    let fortran_order = match get("fortran_order") {
        Some(Py::Bool(b)) => *b,
        _ => return Err(bad("no 'fortran_order'")),
    };
    let shape = match get("shape") {
        Some(Py::Seq(dims)) => dims
            .iter()
            .map(|d| match d {
                Py::Int(v) => usize::try_from(*v).map_err(|_| bad("negative or huge axis")),
                _ => Err(bad("shape is not a tuple of ints")),
            })
            .collect::<Result<Vec<_>>>()?,
        _ => return Err(bad("no 'shape'")),
    };
    Ok(NpyHeader {
        dtype,
        fortran_order,
        shape,
        header_len: 6 + 2 + len_field + len,
    })
}
