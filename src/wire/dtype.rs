//! numpy dtypes as msgpack-numpy writes them (SPEC §1): a [`NumpyDtype`] is parsed from the `type`
//! entry of an ndarray map, a dtype string such as `"<f4"`, `"|b1"`, `"<U5"`, `"<M8[us]"`, or for
//! structured arrays (`kind == b'V'`) a descr list such as `[["a", "<i4"], ["b", "<f8", [2]]]`.
//! numpy's own notation only: the Arrow types live in `types::arrow`.

use crate::error::{ErrorKind, Result};

/// Byte order of a dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// `<`
    Little,
    /// `>`
    Big,
    /// `|`: single bytes, strings of bytes, structured.
    NotApplicable,
}

impl ByteOrder {
    /// Whether values must be byte-swapped to reach this machine's order.
    pub fn needs_swap(self) -> bool {
        matches!(self, ByteOrder::Big) == cfg!(target_endian = "little")
            && !matches!(self, ByteOrder::NotApplicable)
    }
    fn char(self) -> char {
        match self {
            ByteOrder::Little => '<',
            ByteOrder::Big => '>',
            ByteOrder::NotApplicable => '|',
        }
    }
}

/// A numpy datetime/timedelta unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NpTimeUnit {
    /// `Y`
    Year,
    /// `M`
    Month,
    /// `W`
    Week,
    /// `D`
    Day,
    /// `h`
    Hour,
    /// `m`
    Minute,
    /// `s`
    Second,
    /// `ms`
    Milli,
    /// `us` (also `μs`)
    Micro,
    /// `ns`
    Nano,
    /// `ps`, `fs`, `as`: finer than Arrow can hold
    Finer(u8),
    /// `generic` (no unit): only NaT fits
    Generic,
}

impl NpTimeUnit {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "Y" => Self::Year,
            "M" => Self::Month,
            "W" => Self::Week,
            "D" => Self::Day,
            "h" => Self::Hour,
            "m" => Self::Minute,
            "s" => Self::Second,
            "ms" => Self::Milli,
            "us" | "μs" => Self::Micro,
            "ns" => Self::Nano,
            "ps" => Self::Finer(b'p'),
            "fs" => Self::Finer(b'f'),
            "as" => Self::Finer(b'a'),
            "generic" => Self::Generic,
            _ => return None,
        })
    }
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Year => "Y",
            Self::Month => "M",
            Self::Week => "W",
            Self::Day => "D",
            Self::Hour => "h",
            Self::Minute => "m",
            Self::Second => "s",
            Self::Milli => "ms",
            Self::Micro => "us",
            Self::Nano => "ns",
            Self::Finer(b'p') => "ps",
            Self::Finer(b'f') => "fs",
            Self::Finer(_) => "as",
            Self::Generic => "generic",
        }
    }
}

/// One field of a structured dtype.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructField {
    /// Field name; `""` for padding, which is skipped in Arrow.
    pub name: String,
    /// Element dtype.
    pub dtype: NumpyDtype,
    /// Sub-array shape (`[]` for a scalar field).
    pub shape: Vec<usize>,
}

/// A parsed numpy dtype.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NumpyDtype {
    /// `b1`
    Bool,
    /// `i1`..`i8`, `u1`..`u8`
    Int {
        /// item size in bytes
        size: u8,
        /// `i` or `u`
        signed: bool,
        /// byte order
        order: ByteOrder,
    },
    /// `f2`, `f4`, `f8`
    Float {
        /// item size in bytes
        size: u8,
        /// byte order
        order: ByteOrder,
    },
    /// `c8`, `c16`
    Complex {
        /// item size in bytes (both parts)
        size: u8,
        /// byte order
        order: ByteOrder,
    },
    /// `U<n>`: UTF-32 code points, NUL padded
    Unicode {
        /// characters per item
        chars: usize,
        /// byte order of the code units
        order: ByteOrder,
    },
    /// `S<n>`: bytes, NUL padded
    Bytes {
        /// bytes per item
        len: usize,
    },
    /// `M8[unit]`
    Datetime {
        /// unit
        unit: NpTimeUnit,
        /// byte order
        order: ByteOrder,
    },
    /// `m8[unit]`
    Timedelta {
        /// unit
        unit: NpTimeUnit,
        /// byte order
        order: ByteOrder,
    },
    /// `V<n>` without fields: opaque bytes
    Void {
        /// bytes per item
        len: usize,
    },
    /// structured (`kind == b'V'` with a descr list)
    Struct(Vec<StructField>),
    /// `O`: Python objects, pickled
    Object,
}

fn order_of(c: u8) -> Option<ByteOrder> {
    match c {
        b'<' => Some(ByteOrder::Little),
        b'>' => Some(ByteOrder::Big),
        b'|' => Some(ByteOrder::NotApplicable),
        b'=' => Some(if cfg!(target_endian = "little") {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        }),
        _ => None,
    }
}

/// The `dtype.str` of numpy's name for a plain dtype (`"float32"` → `"<f4"`).
fn named(s: &str) -> Option<&'static str> {
    Some(match s {
        "bool" | "bool_" => "|b1",
        "int8" | "byte" => "|i1",
        "uint8" | "ubyte" => "|u1",
        "int16" | "short" => "<i2",
        "uint16" | "ushort" => "<u2",
        "int32" | "intc" => "<i4",
        "uint32" | "uintc" => "<u4",
        // (`int`, `long`, `intp`: numpy's C long and pointer sizes on the 64-bit platforms)
        "int64" | "int_" | "longlong" | "int" | "long" | "intp" | "p" => "<i8",
        "uint64" | "uint" | "ulonglong" | "ulong" | "uintp" | "P" => "<u8",
        "float16" | "half" => "<f2",
        "float32" | "single" => "<f4",
        "float64" | "double" | "float_" | "float" => "<f8",
        "complex64" | "csingle" => "<c8",
        "complex128" | "cdouble" | "complex_" | "complex" => "<c16",
        _ => return None,
    })
}

impl NumpyDtype {
    /// Parse a dtype string (`dtype.str`), e.g. `"<f4"`, `"|S3"`, `"<M8[ns]"`.
    pub fn parse(s: &str) -> Result<Self> {
        // numpy's names for the plain dtypes, which other writers than numpy's `dtype.str` use
        if let Some(canonical) = named(s) {
            return Self::parse(canonical);
        }
        // `datetime64[ns]`, `timedelta64[s]`: the names Flax writes (`dtype.name`)
        for (name, code) in [("datetime64", "<M8"), ("timedelta64", "<m8")] {
            if let Some(unit) = s.strip_prefix(name).filter(|u| u.starts_with('[')) {
                return Self::parse(&format!("{code}{unit}"));
            }
        }
        let bad = || crate::error::Error::new(ErrorKind::UnsupportedDtype(s.to_string()));
        let b = s.as_bytes();
        let (order, rest) = match b.first().and_then(|&c| order_of(c)) {
            Some(o) => (Some(o), &s[1..]),
            None => (None, s),
        };
        let mut chars = rest.chars();
        let kind = chars.next().ok_or_else(bad)?;
        let tail = chars.as_str();
        let (digits, unit) = match tail.find('[') {
            Some(i) if tail.ends_with(']') => (&tail[..i], Some(&tail[i + 1..tail.len() - 1])),
            Some(_) => return Err(bad()),
            None => (tail, None),
        };
        if digits.len() > 12 || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let size: usize = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| bad())?
        };
        // a one-letter type code (struct module style, as numpy reads it): `b` is int8 (only
        // `b1` is bool), `h` int16, `f` float32, `D` complex128, ...
        let (kind, size) = match (kind, digits.is_empty() && unit.is_none()) {
            (k, true) => match k {
                'b' => ('i', 1),
                'B' => ('u', 1),
                'h' => ('i', 2),
                'H' => ('u', 2),
                'i' => ('i', 4),
                'I' => ('u', 4),
                'l' | 'q' => ('i', 8),
                'L' | 'Q' => ('u', 8),
                'e' => ('f', 2),
                'f' => ('f', 4),
                'd' => ('f', 8),
                'F' => ('c', 8),
                'D' => ('c', 16),
                'c' => ('S', 1),
                k => (k, size),
            },
            (k, false) => (k, size),
        };
        // no byte order given: the machine's, as numpy reads `f4` (its `dtype.str` is `<f4`)
        let machine = order_of(b'=').unwrap_or(ByteOrder::NotApplicable);
        let ord = |o: Option<ByteOrder>| o.unwrap_or(machine);
        // numpy writes '|' for single bytes; '<'/'>' there would be harmless, so accept it.
        let multi = |o: Option<ByteOrder>, size: usize| {
            if size == 1 {
                ByteOrder::NotApplicable
            } else {
                ord(o)
            }
        };
        let dt = match (kind, unit) {
            ('b', None) if size == 1 || size == 0 => NumpyDtype::Bool,
            ('?', None) => NumpyDtype::Bool,
            ('i' | 'u', None) if matches!(size, 1 | 2 | 4 | 8) => NumpyDtype::Int {
                size: size as u8,
                signed: kind == 'i',
                order: multi(order, size),
            },
            ('f', None) if matches!(size, 2 | 4 | 8) => NumpyDtype::Float {
                size: size as u8,
                order: ord(order),
            },
            ('c', None) if matches!(size, 8 | 16) => NumpyDtype::Complex {
                size: size as u8,
                order: ord(order),
            },
            ('U', None) => NumpyDtype::Unicode {
                chars: size,
                order: ord(order),
            },
            ('S' | 'a', None) => NumpyDtype::Bytes { len: size },
            ('V', None) => NumpyDtype::Void { len: size },
            ('O', None) => NumpyDtype::Object,
            ('M' | 'm', Some(u)) if size == 8 => {
                let unit = NpTimeUnit::parse(u).ok_or_else(bad)?;
                if kind == 'M' {
                    NumpyDtype::Datetime {
                        unit,
                        order: ord(order),
                    }
                } else {
                    NumpyDtype::Timedelta {
                        unit,
                        order: ord(order),
                    }
                }
            }
            _ => return Err(bad()),
        };
        Ok(dt)
    }

    /// `U<n>` (true, n characters) or `S<n>` (false, n bytes); None for other dtypes.
    pub fn text_width(&self) -> Option<(bool, usize)> {
        match self {
            NumpyDtype::Unicode { chars, .. } => Some((true, *chars)),
            NumpyDtype::Bytes { len } => Some((false, *len)),
            _ => None,
        }
    }

    /// The same `U`/`S` dtype with another width (other dtypes unchanged).
    pub fn with_text_width(&self, n: usize) -> NumpyDtype {
        match self {
            NumpyDtype::Unicode { order, .. } => NumpyDtype::Unicode {
                chars: n,
                order: *order,
            },
            NumpyDtype::Bytes { .. } => NumpyDtype::Bytes { len: n },
            other => other.clone(),
        }
    }

    /// Whether a plain msgpack value of `kind` is a value of this 0-d dtype's Arrow column as it
    /// is (Python's int beside `np.int64` scalars: both Int64; a float or an int beside `np.float64`:
    /// Float64; a bool beside `np.bool_`), so the two unify into one column of this dtype.
    pub fn takes_plain(&self, kind: crate::wire::cursor::Kind) -> bool {
        use crate::wire::cursor::Kind as K;
        match self {
            NumpyDtype::Int {
                size: 8,
                signed: true,
                ..
            } => kind == K::Int,
            NumpyDtype::Float { size: 8, .. } => matches!(kind, K::Int | K::F32 | K::F64),
            NumpyDtype::Bool => kind == K::Bool,
            _ => false,
        }
    }

    /// Size of one element in bytes.
    pub fn itemsize(&self) -> usize {
        match self {
            NumpyDtype::Bool => 1,
            NumpyDtype::Int { size, .. }
            | NumpyDtype::Float { size, .. }
            | NumpyDtype::Complex { size, .. } => *size as usize,
            NumpyDtype::Unicode { chars, .. } => chars.saturating_mul(4),
            NumpyDtype::Bytes { len } | NumpyDtype::Void { len } => *len,
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => 8,
            NumpyDtype::Struct(fields) => fields
                .iter()
                .map(|f| {
                    f.dtype
                        .itemsize()
                        .saturating_mul(f.shape.iter().product::<usize>())
                })
                .fold(0usize, |a, b| a.saturating_add(b)),
            NumpyDtype::Object => 8,
        }
    }

    /// Byte order (`NotApplicable` for bytes, strings of bytes and structured dtypes).
    pub fn order(&self) -> ByteOrder {
        match self {
            NumpyDtype::Int { order, .. }
            | NumpyDtype::Float { order, .. }
            | NumpyDtype::Complex { order, .. }
            | NumpyDtype::Unicode { order, .. }
            | NumpyDtype::Datetime { order, .. }
            | NumpyDtype::Timedelta { order, .. } => *order,
            _ => ByteOrder::NotApplicable,
        }
    }

    /// Width of the units that byte-swapping reverses (0: nothing to swap).
    pub fn swap_width(&self) -> usize {
        if !self.order().needs_swap() {
            return 0;
        }
        self.unit_width()
    }

    /// Width of the units a byte order applies to (0: none, as in bytes and structured dtypes).
    pub fn unit_width(&self) -> usize {
        match self {
            NumpyDtype::Int { size, .. } | NumpyDtype::Float { size, .. } => *size as usize,
            NumpyDtype::Complex { size, .. } => *size as usize / 2,
            NumpyDtype::Unicode { .. } => 4,
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => 8,
            _ => 0,
        }
    }

    /// Two structured dtypes of the same fields (names, sub-array shapes, kinds), each element of
    /// either a value of: this one with every `U`/`S` field as wide as the wider of the two
    /// (`np.rec.fromrecords` sizes strings by the data, so records differ). Byte orders may
    /// differ (this one's are kept). `None` for other dtypes or other fields.
    pub fn widest_struct(&self, other: &NumpyDtype) -> Option<NumpyDtype> {
        let (NumpyDtype::Struct(a), NumpyDtype::Struct(b)) = (self, other) else {
            return None;
        };
        if a.len() != b.len() {
            return None;
        }
        let mut out = Vec::with_capacity(a.len());
        for (fa, fb) in a.iter().zip(b) {
            if fa.name != fb.name || fa.shape != fb.shape {
                return None;
            }
            let dtype = match (fa.dtype.text_width(), fb.dtype.text_width()) {
                (Some((ua, na)), Some((ub, nb))) if ua == ub => {
                    fa.dtype.with_text_width(na.max(nb))
                }
                (None, None) if matches!(fa.dtype, NumpyDtype::Struct(_)) => {
                    fa.dtype.widest_struct(&fb.dtype)?
                }
                (None, None)
                    if fa.dtype.ordered_as(ByteOrder::Little)
                        == fb.dtype.ordered_as(ByteOrder::Little) =>
                {
                    fa.dtype.clone()
                }
                _ => return None,
            };
            out.push(StructField {
                name: fa.name.clone(),
                dtype,
                shape: fa.shape.clone(),
            });
        }
        Some(NumpyDtype::Struct(out))
    }

    /// The same dtype in byte order `o` (dtypes without one unchanged).
    pub fn ordered_as(&self, o: ByteOrder) -> NumpyDtype {
        let mut d = self.clone();
        match &mut d {
            NumpyDtype::Int { order, size, .. } if *size > 1 => *order = o,
            NumpyDtype::Float { order, .. }
            | NumpyDtype::Complex { order, .. }
            | NumpyDtype::Unicode { order, .. }
            | NumpyDtype::Datetime { order, .. }
            | NumpyDtype::Timedelta { order, .. } => *order = o,
            _ => {}
        }
        d
    }

    /// Whether the (native-order) bytes of these elements are exactly an Arrow values buffer.
    pub fn is_fixed_width_primitive(&self) -> bool {
        matches!(
            self,
            NumpyDtype::Int { .. } | NumpyDtype::Float { .. } | NumpyDtype::Complex { .. }
        )
    }

    /// The numpy dtype string, as `dtype.str` gives it (structured: the descr as JSON).
    pub fn to_dtype_str(&self) -> String {
        let o = self.order().char();
        match self {
            NumpyDtype::Bool => "|b1".into(),
            NumpyDtype::Int { size, signed, .. } => {
                format!("{o}{}{size}", if *signed { 'i' } else { 'u' })
            }
            NumpyDtype::Float { size, .. } => format!("{o}f{size}"),
            NumpyDtype::Complex { size, .. } => format!("{o}c{size}"),
            NumpyDtype::Unicode { chars, .. } => format!("{o}U{chars}"),
            NumpyDtype::Bytes { len } => format!("|S{len}"),
            NumpyDtype::Void { len } => format!("|V{len}"),
            NumpyDtype::Datetime { unit, .. } => format!("{o}M8[{}]", unit.as_str()),
            NumpyDtype::Timedelta { unit, .. } => format!("{o}m8[{}]", unit.as_str()),
            NumpyDtype::Object => "|O".into(),
            NumpyDtype::Struct(_) => self.descr_json().to_string(),
        }
    }

    /// The structured descr as JSON (`[["a","<i4"],["b","<f8",[2]]]`); other dtypes: their string.
    pub fn descr_json(&self) -> serde_json::Value {
        match self {
            NumpyDtype::Struct(fields) => serde_json::Value::Array(
                fields
                    .iter()
                    .map(|f| {
                        let mut v = vec![
                            serde_json::Value::from(f.name.clone()),
                            f.dtype.descr_json(),
                        ];
                        if !f.shape.is_empty() {
                            v.push(serde_json::Value::from(f.shape.clone()));
                        }
                        serde_json::Value::Array(v)
                    })
                    .collect(),
            ),
            other => serde_json::Value::from(other.to_dtype_str()),
        }
    }

    /// Parse what [`NumpyDtype::to_dtype_str`] wrote (a dtype string or a descr JSON).
    pub fn from_metadata(s: &str) -> Result<Self> {
        if s.starts_with('[') {
            let v: serde_json::Value = serde_json::from_str(s)
                .map_err(|_| crate::error::Error::new(ErrorKind::UnsupportedDtype(s.into())))?;
            Self::from_descr_json(&v)
        } else {
            Self::parse(s)
        }
    }

    fn from_descr_json(v: &serde_json::Value) -> Result<Self> {
        let bad = || crate::error::Error::new(ErrorKind::UnsupportedDtype(v.to_string()));
        match v {
            serde_json::Value::String(s) => Self::parse(s),
            serde_json::Value::Array(items) => {
                let mut fields = Vec::with_capacity(items.len());
                for it in items {
                    let parts = it.as_array().ok_or_else(bad)?;
                    let name = parts.first().and_then(|n| n.as_str()).ok_or_else(bad)?;
                    let dtype = Self::from_descr_json(parts.get(1).ok_or_else(bad)?)?;
                    let shape = match parts.get(2) {
                        None => vec![],
                        Some(s) => s
                            .as_array()
                            .ok_or_else(bad)?
                            .iter()
                            .map(|d| d.as_u64().map(|d| d as usize).ok_or_else(bad))
                            .collect::<Result<_>>()?,
                    };
                    fields.push(StructField {
                        name: name.to_string(),
                        dtype,
                        shape,
                    });
                }
                Ok(NumpyDtype::Struct(fields))
            }
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_round_trip() {
        for s in [
            "<f4", ">f8", "<f2", "|b1", "|i1", "|u1", "<i8", ">u2", "<c8", ">c16", "<U5", ">U1",
            "|S3", "|V8", "<M8[us]", ">m8[ns]", "<M8[D]", "|O",
        ] {
            assert_eq!(NumpyDtype::parse(s).unwrap().to_dtype_str(), s, "{s}");
        }
        for bad in [
            "",
            "<",
            "<f3",
            "<i16",
            "<c32",
            "<M8",
            "<M8[xs]",
            "zz",
            "<f99999999999999999999",
        ] {
            assert!(NumpyDtype::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn structured_dtypes_widen_their_strings_and_keep_their_fields() {
        let d = |s: &str| NumpyDtype::from_metadata(s).unwrap();
        let a = d(r#"[["name","<U2"],["v","<i8"],["p",[["b","|S1"]]]]"#);
        let b = d(r#"[["name",">U6"],["v",">i8"],["p",[["b","|S3"]]]]"#);
        let want = d(r#"[["name","<U6"],["v","<i8"],["p",[["b","|S3"]]]]"#);
        assert_eq!(a.widest_struct(&b), Some(want.clone()));
        assert_eq!(want.widest_struct(&a), Some(want));
        // another field name, kind or size: no one column
        for other in [
            r#"[["nom","<U2"],["v","<i8"],["p",[["b","|S1"]]]]"#,
            r#"[["name","<U2"],["v","<f8"],["p",[["b","|S1"]]]]"#,
            r#"[["name","<U2"],["v","<i4"],["p",[["b","|S1"]]]]"#,
            r#"[["name","|S2"],["v","<i8"],["p",[["b","|S1"]]]]"#,
        ] {
            assert_eq!(a.widest_struct(&d(other)), None, "{other}");
        }
        assert_eq!(d("<U2").widest_struct(&d("<U3")), None);
    }
}
