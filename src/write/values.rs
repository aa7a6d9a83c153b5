//! Per-column value encoders, chosen once per batch by [`make_encoder`], writing MessagePack
//! byte-for-byte as Python `msgpack_numpy` 0.4.8 (over `msgpack` 1.x, `use_bin_type=True`) does.
//!
//! The MessagePack primitives are written by hand (module [`wire`]) rather than through
//! `rmp::encode`: they follow the same smallest-form rules as `rmp::encode::write_sint` and Python's
//! packer (positive ints as fixint/uint8..64, negative ones as the smallest signed form, str8
//! allowed), but cannot fail on a `Vec<u8>` and inline into the per-row loops. Aligned mode also
//! needs explicitly *wider* forms, which `rmp` only offers one function per marker for.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int64Type, TimestampNanosecondType, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    LargeBinaryArray, LargeStringArray, PrimitiveArray, StringArray, StringViewArray,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, TimeUnit};

use crate::error::{Error, ErrorKind, Result};
use crate::types::{meta, ByteOrder, NpTimeUnit, NumpyDtype, StructField};
use crate::wire::pad::{choose_pad, pick_sizes, suffix_reach};
use crate::wire::pyrepr::py_complex_repr;
#[cfg(test)]
use crate::wire::write::IntVal;
use crate::wire::write::{self as wire, Out};

fn unsupported(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Unsupported(msg.into()))
}

// ---------------------------------------------------------------------------------------------
// ndarray maps
// ---------------------------------------------------------------------------------------------

/// `U<chars>` elements `rows` of `strs`, padded with NULs.
fn write_unicode(
    strs: &Strs,
    rows: std::ops::Range<usize>,
    chars: usize,
    big: bool,
    ty: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    for i in rows {
        let s = if strs.is_null(i) { "" } else { strs.value(i) };
        let n = s.chars().count();
        if n > chars {
            return Err(unsupported(format!(
                "string of {n} characters does not fit numpy dtype {ty}"
            )));
        }
        for c in s.chars() {
            let c = c as u32;
            out.extend_from_slice(&if big {
                c.to_be_bytes()
            } else {
                c.to_le_bytes()
            });
        }
        out.resize(out.len() + (chars - n) * 4, 0);
    }
    Ok(())
}

/// `S<len>` elements `rows` of `bins`, padded with NULs.
fn write_bytes(
    bins: &Bins,
    rows: std::ops::Range<usize>,
    len: usize,
    ty: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    for i in rows {
        let s = if bins.is_null(i) {
            &[][..]
        } else {
            bins.value(i)
        };
        if s.len() > len {
            return Err(unsupported(format!(
                "value of {} bytes does not fit numpy dtype {ty}",
                s.len()
            )));
        }
        out.extend_from_slice(s);
        out.resize(out.len() + (len - s.len()), 0);
    }
    Ok(())
}

/// The `type` entry of an ndarray map: a dtype string, or a structured descr (nested arrays),
/// pre-encoded once per column.
#[derive(Debug, Clone)]
pub(crate) enum TypeEnc {
    Str(String),
    Descr { n: usize, items: Vec<u8> },
}

impl TypeEnc {
    pub(crate) fn of(dt: &NumpyDtype) -> Self {
        match dt {
            NumpyDtype::Struct(fields) => {
                let mut items = Vec::new();
                for f in fields {
                    descr_field(&f.name, &f.dtype, &f.shape, &mut items);
                }
                TypeEnc::Descr {
                    n: fields.len(),
                    items,
                }
            }
            // `dtype.descr` of an unstructured void or object dtype is `[('', '|V8')]`.
            NumpyDtype::Void { .. } | NumpyDtype::Object => {
                let mut items = Vec::new();
                descr_field("", dt, &[], &mut items);
                TypeEnc::Descr { n: 1, items }
            }
            _ => TypeEnc::Str(dt.to_dtype_str()),
        }
    }
    fn forms_and_body(&self) -> (&'static [u8], usize) {
        match self {
            TypeEnc::Str(s) => (wire::str_forms(s.len()), s.len()),
            TypeEnc::Descr { n, items } => (wire::coll_forms(*n), items.len()),
        }
    }
    fn write(&self, b: &mut Vec<u8>, size: u8) {
        match self {
            TypeEnc::Str(s) => {
                wire::str_hdr_sized(b, s.len(), size);
                b.extend_from_slice(s.as_bytes());
            }
            TypeEnc::Descr { n, items } => {
                wire::array_hdr_sized(b, *n, size);
                b.extend_from_slice(items);
            }
        }
    }
}

fn descr_field(name: &str, dt: &NumpyDtype, shape: &[usize], b: &mut Vec<u8>) {
    wire::array_hdr(b, if shape.is_empty() { 2 } else { 3 });
    wire::str(b, name);
    match dt {
        NumpyDtype::Struct(fields) => {
            wire::array_hdr(b, fields.len());
            for f in fields {
                descr_field(&f.name, &f.dtype, &f.shape, b);
            }
        }
        other => wire::str(b, &other.to_dtype_str()),
    }
    if !shape.is_empty() {
        wire::array_hdr(b, shape.len());
        for &d in shape {
            wire::uint(b, d as u64);
        }
    }
}

fn kind_of(dt: &NumpyDtype) -> &'static [u8] {
    match dt {
        NumpyDtype::Struct(_) | NumpyDtype::Void { .. } => b"V",
        NumpyDtype::Object => b"O",
        _ => b"",
    }
}

/// numpy's limit on the number of axes.
const MAX_DIMS: usize = 64;
const NSLOT: usize = 10 + MAX_DIMS;
/// Aligned mode spends padding on these slots first: the shape ints, the `type` str, the `data`
/// bin header, the shape array header, the map header, the `kind` bin header, and only then the
/// bin-encoded keys (every decoder compares key *contents*, but keys are the least usual place).
const PREFERENCE: [usize; 10] = [3, 9, 7, 0, 5, 1, 2, 4, 6, 8];

/// Position-independent facts about one ndarray map, for planning alignment in the enclosing map.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NdProbe {
    /// Bytes from the start of the map to the start of the data payload, all forms smallest.
    pub(crate) min: usize,
    /// Paddings (bit k: k extra bytes) reachable by widening inside the map.
    pub(crate) reach: u128,
}

/// The head of an ndarray map, everything before the data payload:
/// `{b'nd': True, b'type': .., b'kind': .., b'shape': [..], b'data': <bin header>`.
pub(crate) struct NdHead<'a> {
    pub(crate) ty: &'a TypeEnc,
    pub(crate) kind: &'a [u8],
    pub(crate) shape: &'a [usize],
    pub(crate) data_len: usize,
}

impl NdHead<'_> {
    /// Slot forms in emission order: 0 map header, 1 key nd, 2 key type, 3 type header,
    /// 4 key kind, 5 kind header, 6 key shape, 7 shape header, 8 key data, 9 data header,
    /// 10.. the shape ints. Returns (slots, bytes that never change).
    fn forms(&self, f: &mut [&'static [u8]; NSLOT]) -> Result<(usize, usize)> {
        if self.shape.len() > MAX_DIMS {
            return Err(unsupported(format!(
                "ndarray with {} axes (numpy allows {MAX_DIMS})",
                self.shape.len()
            )));
        }
        if self.data_len > u32::MAX as usize {
            return Err(unsupported(format!(
                "ndarray of {} bytes: a msgpack bin holds at most 4 GiB",
                self.data_len
            )));
        }
        let (tf, tbody) = self.ty.forms_and_body();
        f[0] = wire::coll_forms(5);
        f[1] = wire::bin_forms(2);
        f[2] = wire::bin_forms(4);
        f[3] = tf;
        f[4] = wire::bin_forms(4);
        f[5] = wire::bin_forms(self.kind.len());
        f[6] = wire::bin_forms(5);
        f[7] = wire::coll_forms(self.shape.len());
        f[8] = wire::bin_forms(4);
        f[9] = wire::bin_forms(self.data_len);
        for (i, &d) in self.shape.iter().enumerate() {
            f[10 + i] = wire::uint_forms(d as u64);
        }
        // b"nd" + True + b"type" + body + b"kind" + kind + b"shape" + b"data"
        let fixed = 2 + 1 + 4 + tbody + 4 + self.kind.len() + 5 + 4;
        Ok((10 + self.shape.len(), fixed))
    }

    fn plan(
        &self,
        f: &[&'static [u8]; NSLOT],
        n: usize,
        order: &mut [usize; NSLOT],
    ) -> ([&'static [u8]; NSLOT], [u128; NSLOT + 1]) {
        let mut k = 0;
        for i in 10..n {
            order[k] = i;
            k += 1;
        }
        for &i in &PREFERENCE {
            order[k] = i;
            k += 1;
        }
        let mut slots: [&'static [u8]; NSLOT] = [&[0]; NSLOT];
        for j in 0..n {
            slots[j] = f[order[j]];
        }
        let mut suf = [0u128; NSLOT + 1];
        suffix_reach(&slots[..n], &mut suf[..n + 1]);
        (slots, suf)
    }

    pub(crate) fn probe(&self) -> Result<NdProbe> {
        let mut f: [&'static [u8]; NSLOT] = [&[0]; NSLOT];
        let (n, fixed) = self.forms(&mut f)?;
        let min = fixed + f[..n].iter().map(|x| x[0] as usize).sum::<usize>();
        let mut order = [0usize; NSLOT];
        let (_, suf) = self.plan(&f, n, &mut order);
        Ok(NdProbe { min, reach: suf[0] })
    }

    /// Write the head. In aligned mode, widen forms inside this map so the payload starts on a
    /// 64-byte boundary (8 when 64 is out of reach). Only wider-but-valid encodings are used —
    /// never extra keys or bytes outside msgpack values — so every msgpack-numpy reader accepts it.
    pub(crate) fn write(&self, out: &mut Out) -> Result<()> {
        let mut f: [&'static [u8]; NSLOT] = [&[0]; NSLOT];
        let (n, fixed) = self.forms(&mut f)?;
        let mut sizes = [0u8; NSLOT];
        for i in 0..n {
            sizes[i] = f[i][0];
        }
        if out.align {
            let min = fixed + sizes[..n].iter().map(|&s| s as usize).sum::<usize>();
            let mut order = [0usize; NSLOT];
            let (slots, suf) = self.plan(&f, n, &mut order);
            let t = choose_pad(suf[0], out.pos() + min as u64);
            let mut chosen = [0u8; NSLOT];
            pick_sizes(&slots[..n], &suf[..n + 1], t, &mut chosen);
            for j in 0..n {
                sizes[order[j]] = chosen[j];
            }
        }
        let b = &mut out.buf;
        wire::map_hdr_sized(b, 5, sizes[0]);
        wire::bin_hdr_sized(b, 2, sizes[1]);
        b.extend_from_slice(b"nd\xc3");
        wire::bin_hdr_sized(b, 4, sizes[2]);
        b.extend_from_slice(b"type");
        self.ty.write(b, sizes[3]);
        wire::bin_hdr_sized(b, 4, sizes[4]);
        b.extend_from_slice(b"kind");
        wire::bin_hdr_sized(b, self.kind.len(), sizes[5]);
        b.extend_from_slice(self.kind);
        wire::bin_hdr_sized(b, 5, sizes[6]);
        b.extend_from_slice(b"shape");
        wire::array_hdr_sized(b, self.shape.len(), sizes[7]);
        for (i, &d) in self.shape.iter().enumerate() {
            wire::uint_sized(b, d as u64, sizes[10 + i]);
        }
        wire::bin_hdr_sized(b, 4, sizes[8]);
        b.extend_from_slice(b"data");
        wire::bin_hdr_sized(b, self.data_len, sizes[9]);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Arrow access helpers
// ---------------------------------------------------------------------------------------------

/// Any of Arrow's string arrays.
enum Strs {
    S(StringArray),
    L(LargeStringArray),
    V(StringViewArray),
}

impl Strs {
    fn new(a: &dyn Array) -> Option<Self> {
        Some(match a.data_type() {
            DataType::Utf8 => Strs::S(a.as_string::<i32>().clone()),
            DataType::LargeUtf8 => Strs::L(a.as_string::<i64>().clone()),
            DataType::Utf8View => Strs::V(a.as_string_view().clone()),
            _ => return None,
        })
    }
    #[inline]
    fn value(&self, i: usize) -> &str {
        match self {
            Strs::S(a) => a.value(i),
            Strs::L(a) => a.value(i),
            Strs::V(a) => a.value(i),
        }
    }
    #[inline]
    fn is_null(&self, i: usize) -> bool {
        match self {
            Strs::S(a) => a.is_null(i),
            Strs::L(a) => a.is_null(i),
            Strs::V(a) => a.is_null(i),
        }
    }
    fn len(&self) -> usize {
        match self {
            Strs::S(a) => a.len(),
            Strs::L(a) => a.len(),
            Strs::V(a) => a.len(),
        }
    }
    fn bytes_hint(&self) -> usize {
        match self {
            Strs::S(a) => a.values().len(),
            Strs::L(a) => a.values().len(),
            Strs::V(a) => a.data_buffers().iter().map(|b| b.len()).sum::<usize>() + a.len() * 12,
        }
    }
}

/// Any of Arrow's binary arrays.
enum Bins {
    B(BinaryArray),
    L(LargeBinaryArray),
    V(BinaryViewArray),
    F(FixedSizeBinaryArray),
}

impl Bins {
    fn new(a: &dyn Array) -> Option<Self> {
        Some(match a.data_type() {
            DataType::Binary => Bins::B(a.as_binary::<i32>().clone()),
            DataType::LargeBinary => Bins::L(a.as_binary::<i64>().clone()),
            DataType::BinaryView => Bins::V(a.as_binary_view().clone()),
            DataType::FixedSizeBinary(_) => Bins::F(a.as_fixed_size_binary().clone()),
            _ => return None,
        })
    }
    #[inline]
    fn value(&self, i: usize) -> &[u8] {
        match self {
            Bins::B(a) => a.value(i),
            Bins::L(a) => a.value(i),
            Bins::V(a) => a.value(i),
            Bins::F(a) => a.value(i),
        }
    }
    #[inline]
    fn is_null(&self, i: usize) -> bool {
        match self {
            Bins::B(a) => a.is_null(i),
            Bins::L(a) => a.is_null(i),
            Bins::V(a) => a.is_null(i),
            Bins::F(a) => a.is_null(i),
        }
    }
    fn len(&self) -> usize {
        match self {
            Bins::B(a) => a.len(),
            Bins::L(a) => a.len(),
            Bins::V(a) => a.len(),
            Bins::F(a) => a.len(),
        }
    }
    fn bytes_hint(&self) -> usize {
        match self {
            Bins::B(a) => a.values().len(),
            Bins::L(a) => a.values().len(),
            Bins::V(a) => a.data_buffers().iter().map(|b| b.len()).sum::<usize>() + a.len() * 12,
            Bins::F(a) => a.len() * a.value_length() as usize,
        }
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}
fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// Nanoseconds per tick of a numpy unit that converts linearly to Arrow's.
fn np_unit_ns(u: NpTimeUnit) -> Option<i64> {
    Some(match u {
        NpTimeUnit::Week => 7 * 86_400_000_000_000,
        NpTimeUnit::Day => 86_400_000_000_000,
        NpTimeUnit::Hour => 3_600_000_000_000,
        NpTimeUnit::Minute => 60_000_000_000,
        NpTimeUnit::Second => 1_000_000_000,
        NpTimeUnit::Milli => 1_000_000,
        NpTimeUnit::Micro => 1_000,
        NpTimeUnit::Nano => 1,
        _ => return None,
    })
}
fn arrow_unit_ns(u: &TimeUnit) -> i64 {
    match u {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}
fn np_unit(u: &TimeUnit) -> NpTimeUnit {
    match u {
        TimeUnit::Second => NpTimeUnit::Second,
        TimeUnit::Millisecond => NpTimeUnit::Milli,
        TimeUnit::Microsecond => NpTimeUnit::Micro,
        TimeUnit::Nanosecond => NpTimeUnit::Nano,
    }
}
/// Nanoseconds per stored value of an Arrow temporal type.
fn temporal_ns(t: &DataType) -> Option<i64> {
    Some(match t {
        DataType::Timestamp(u, _) | DataType::Duration(u) => arrow_unit_ns(u),
        DataType::Date32 => 86_400_000_000_000,
        DataType::Date64 => 1_000_000,
        _ => return None,
    })
}

fn is_utc(tz: &str) -> bool {
    matches!(tz, "UTC" | "utc" | "Z" | "+00:00" | "Etc/UTC")
}

/// Peel FixedSizeList levels matching a structured field's sub-array shape.
fn peel_fixed_type<'a>(mut t: &'a DataType, shape: &[usize]) -> Option<&'a DataType> {
    for &d in shape {
        match t {
            DataType::FixedSizeList(f, n) if *n as usize == d => t = f.data_type(),
            _ => return None,
        }
    }
    Some(t)
}

/// Whether values of Arrow type `t` can be written as elements of numpy dtype `dt`.
fn accepts(dt: &NumpyDtype, t: &DataType) -> bool {
    use DataType as T;
    match dt {
        NumpyDtype::Bool => matches!(t, T::Boolean),
        NumpyDtype::Int { size, signed, .. } => matches!(
            (size, signed, t),
            (1, true, T::Int8)
                | (2, true, T::Int16)
                | (4, true, T::Int32)
                | (8, true, T::Int64)
                | (1, false, T::UInt8)
                | (2, false, T::UInt16)
                | (4, false, T::UInt32)
                | (8, false, T::UInt64)
        ),
        NumpyDtype::Float { size, .. } => {
            matches!(
                (size, t),
                (2, T::Float16) | (4, T::Float32) | (8, T::Float64)
            )
        }
        NumpyDtype::Complex { size, .. } => match t {
            T::FixedSizeList(f, 2) => {
                matches!((size, f.data_type()), (8, T::Float32) | (16, T::Float64))
            }
            _ => false,
        },
        NumpyDtype::Unicode { .. } => is_string(t),
        NumpyDtype::Bytes { .. } | NumpyDtype::Void { .. } => is_binary(t),
        NumpyDtype::Datetime { unit, .. } => {
            np_unit_ns(*unit).is_some() && matches!(t, T::Timestamp(..) | T::Date32 | T::Date64)
        }
        NumpyDtype::Timedelta { unit, .. } => {
            np_unit_ns(*unit).is_some() && matches!(t, T::Duration(_))
        }
        NumpyDtype::Struct(fields) => match t {
            T::Struct(children) => fields.iter().filter(|f| !f.name.is_empty()).all(|f| {
                children
                    .iter()
                    .find(|c| c.name() == &f.name)
                    .is_some_and(|c| {
                        peel_fixed_type(c.data_type(), &f.shape)
                            .is_some_and(|ct| accepts(&f.dtype, ct))
                    })
            }),
            _ => false,
        },
        NumpyDtype::Object => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Element writers: ndarray payload bytes
// ---------------------------------------------------------------------------------------------

enum TimeSrc {
    D32(ScalarBuffer<i32>),
    I64(ScalarBuffer<i64>),
}

/// Writes elements `a..b` of a flat Arrow array as numpy element bytes of one dtype.
enum Elems {
    /// Fixed-width values: element `i` is `buf[i*width..][..width]`; `swap` is the width of the
    /// units to byte-reverse (0: copy as is).
    Raw {
        buf: Buffer,
        width: usize,
        swap: usize,
    },
    Bool(BooleanArray),
    Unicode {
        strs: Strs,
        chars: usize,
        big: bool,
        ty: String,
    },
    Bytes {
        bins: Bins,
        len: usize,
        ty: String,
    },
    Time {
        src: TimeSrc,
        nulls: Option<NullBuffer>,
        mul: i64,
        div: i64,
        big: bool,
        ty: String,
    },
    /// Structured: per element, each field in descr order (`None` = padding, written as zeros).
    Struct(Vec<(Option<Elems>, usize, usize)>),
}

impl Elems {
    fn new(arr: &ArrayRef, dt: &NumpyDtype) -> Result<Self> {
        if !accepts(dt, arr.data_type()) {
            return Err(unsupported(format!(
                "numpy dtype {} cannot hold Arrow {}",
                dt.to_dtype_str(),
                arr.data_type()
            )));
        }
        let ty = dt.to_dtype_str();
        Ok(match dt {
            NumpyDtype::Bool => Elems::Bool(arr.as_boolean().clone()),
            NumpyDtype::Int { size, .. } | NumpyDtype::Float { size, .. } => {
                raw(arr.as_ref(), *size as usize, dt.swap_width())
            }
            NumpyDtype::Complex { size, .. } => raw(
                arr.as_fixed_size_list().values().as_ref(),
                *size as usize,
                dt.swap_width(),
            ),
            NumpyDtype::Unicode { chars, order } => Elems::Unicode {
                strs: Strs::new(arr.as_ref()).expect("checked by accepts"),
                chars: *chars,
                big: *order == ByteOrder::Big,
                ty,
            },
            NumpyDtype::Bytes { len } | NumpyDtype::Void { len } => Elems::Bytes {
                bins: Bins::new(arr.as_ref()).expect("checked by accepts"),
                len: *len,
                ty,
            },
            NumpyDtype::Datetime { unit, order } | NumpyDtype::Timedelta { unit, order } => {
                let src_ns = temporal_ns(arr.data_type()).expect("checked by accepts");
                let dst_ns = np_unit_ns(*unit).expect("checked by accepts");
                let (mul, div) = if src_ns >= dst_ns {
                    (src_ns / dst_ns, 1)
                } else {
                    (1, dst_ns / src_ns)
                };
                let d = arr.to_data();
                let src = match arr.data_type() {
                    DataType::Date32 => TimeSrc::D32(ScalarBuffer::new(
                        d.buffers()[0].clone(),
                        d.offset(),
                        d.len(),
                    )),
                    _ => TimeSrc::I64(ScalarBuffer::new(
                        d.buffers()[0].clone(),
                        d.offset(),
                        d.len(),
                    )),
                };
                Elems::Time {
                    src,
                    nulls: arr.logical_nulls(),
                    mul,
                    div,
                    big: *order == ByteOrder::Big,
                    ty,
                }
            }
            NumpyDtype::Struct(fields) => {
                let sa = arr.as_struct();
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    let count: usize = f.shape.iter().product();
                    let bytes = f.dtype.itemsize() * count;
                    if f.name.is_empty() {
                        out.push((None, bytes, count));
                        continue;
                    }
                    let mut child = sa
                        .column_by_name(&f.name)
                        .expect("checked by accepts")
                        .clone();
                    for _ in &f.shape {
                        child = child.as_fixed_size_list().values().clone();
                    }
                    let e = Elems::new(&child, &f.dtype).map_err(|e| e.prepend_path(&f.name))?;
                    out.push((Some(e), bytes, count));
                }
                Elems::Struct(out)
            }
            NumpyDtype::Object => unreachable!("rejected by accepts"),
        })
    }

    /// For `U`/`S` elements: the smallest width that holds elements `a..b`, at least 1 (the
    /// width `np.array(list_of_str)` picks); None for other dtypes.
    fn min_text_width(&self, a: usize, b: usize) -> Option<usize> {
        let w = match self {
            Elems::Unicode { strs, .. } => (a..b)
                .filter(|&i| !strs.is_null(i))
                .map(|i| strs.value(i).chars().count())
                .max(),
            Elems::Bytes { bins, .. } => (a..b)
                .filter(|&i| !bins.is_null(i))
                .map(|i| bins.value(i).len())
                .max(),
            _ => return None,
        };
        Some(w.unwrap_or(0).max(1))
    }

    /// [`Elems::write`] at another `U`/`S` width (other dtypes: as they are).
    fn write_width(&self, a: usize, b: usize, width: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Elems::Unicode { strs, big, ty, .. } => write_unicode(strs, a..b, width, *big, ty, out),
            Elems::Bytes { bins, ty, .. } => write_bytes(bins, a..b, width, ty, out),
            _ => self.write(a, b, out),
        }
    }

    /// Append elements `a..b` (exactly `(b - a) * itemsize` bytes, or an error).
    fn write(&self, a: usize, b: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Elems::Raw { buf, width, swap } => {
                let s = &buf.as_slice()[a * width..b * width];
                match swap {
                    0 => out.extend_from_slice(s),
                    2 => out.extend(s.chunks_exact(2).flat_map(|c| [c[1], c[0]])),
                    4 => {
                        out.reserve(s.len());
                        for c in s.chunks_exact(4) {
                            let v = u32::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                            out.extend_from_slice(&v.to_ne_bytes());
                        }
                    }
                    _ => {
                        out.reserve(s.len());
                        for c in s.chunks_exact(8) {
                            let v = u64::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                            out.extend_from_slice(&v.to_ne_bytes());
                        }
                    }
                }
            }
            Elems::Bool(arr) => out.extend((a..b).map(|i| arr.value(i) as u8)),
            Elems::Unicode {
                strs,
                chars,
                big,
                ty,
            } => write_unicode(strs, a..b, *chars, *big, ty, out)?,
            Elems::Bytes { bins, len, ty } => write_bytes(bins, a..b, *len, ty, out)?,
            Elems::Time {
                src,
                nulls,
                mul,
                div,
                big,
                ty,
            } => {
                for i in a..b {
                    let v = if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                        i64::MIN // NaT
                    } else {
                        let v = match src {
                            TimeSrc::D32(s) => s[i] as i64,
                            TimeSrc::I64(s) => s[i],
                        };
                        let r = if *div == 1 {
                            v.checked_mul(*mul)
                        } else if v % div == 0 {
                            Some(v / div)
                        } else {
                            None
                        };
                        r.ok_or_else(|| {
                            unsupported(format!(
                                "value {v} is not a whole number of numpy {ty} ticks"
                            ))
                        })?
                    };
                    out.extend_from_slice(&if *big {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    });
                }
            }
            Elems::Struct(fields) => {
                for j in a..b {
                    for (e, bytes, count) in fields {
                        match e {
                            None => out.resize(out.len() + bytes, 0),
                            Some(e) => e.write(j * count, (j + 1) * count, out)?,
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn raw(arr: &dyn Array, width: usize, swap: usize) -> Elems {
    let d = arr.to_data();
    let pw = d.data_type().primitive_width().expect("primitive array");
    let buf = d.buffers()[0].slice_with_length(d.offset() * pw, d.len() * pw);
    Elems::Raw { buf, width, swap }
}

// ---------------------------------------------------------------------------------------------
// Tensors: list levels over a flat element array
// ---------------------------------------------------------------------------------------------

enum Level {
    Fixed(usize),
    O32(OffsetBuffer<i32>),
    O64(OffsetBuffer<i64>),
}

/// Peel list levels off `arr`: until `dt` accepts the type (metadata dtype), or (native) until the
/// type is no list. `lists`: whether variable-size List levels are axes too (ragged tensors).
fn peel(arr: &ArrayRef, dt: Option<&NumpyDtype>, lists: bool) -> Option<(Vec<Level>, ArrayRef)> {
    let mut levels = Vec::new();
    let mut cur = arr.clone();
    loop {
        if let Some(dt) = dt {
            if accepts(dt, cur.data_type()) {
                return Some((levels, cur));
            }
        }
        let next = match cur.data_type() {
            DataType::FixedSizeList(_, n) => {
                levels.push(Level::Fixed(*n as usize));
                cur.as_fixed_size_list().values().clone()
            }
            DataType::List(_) if lists => {
                let l = cur.as_list::<i32>();
                levels.push(Level::O32(l.offsets().clone()));
                l.values().clone()
            }
            DataType::LargeList(_) if lists => {
                let l = cur.as_list::<i64>();
                levels.push(Level::O64(l.offsets().clone()));
                l.values().clone()
            }
            _ => {
                return if dt.is_none() {
                    Some((levels, cur))
                } else {
                    None
                }
            }
        };
        cur = next;
    }
}

/// The numpy dtype a leaf Arrow array is written as when no metadata says otherwise, over one or
/// more chunks (string widths are the maximum over all of them). `structs`: allow a structured
/// dtype for Struct leaves.
fn native_dtype(leaves: &[ArrayRef], structs: bool) -> Option<NumpyDtype> {
    use DataType as T;
    let first = leaves.first()?;
    let int = |size: u8, signed: bool| NumpyDtype::Int {
        size,
        signed,
        order: if size == 1 {
            ByteOrder::NotApplicable
        } else {
            ByteOrder::Little
        },
    };
    let float = |size: u8| NumpyDtype::Float {
        size,
        order: ByteOrder::Little,
    };
    Some(match first.data_type() {
        T::Boolean => NumpyDtype::Bool,
        T::Int8 => int(1, true),
        T::Int16 => int(2, true),
        T::Int32 => int(4, true),
        T::Int64 => int(8, true),
        T::UInt8 => int(1, false),
        T::UInt16 => int(2, false),
        T::UInt32 => int(4, false),
        T::UInt64 => int(8, false),
        T::Float16 => float(2),
        T::Float32 => float(4),
        T::Float64 => float(8),
        T::Timestamp(u, _) => NumpyDtype::Datetime {
            unit: np_unit(u),
            order: ByteOrder::Little,
        },
        T::Date32 => NumpyDtype::Datetime {
            unit: NpTimeUnit::Day,
            order: ByteOrder::Little,
        },
        T::Date64 => NumpyDtype::Datetime {
            unit: NpTimeUnit::Milli,
            order: ByteOrder::Little,
        },
        T::Duration(u) => NumpyDtype::Timedelta {
            unit: np_unit(u),
            order: ByteOrder::Little,
        },
        t if is_string(t) => {
            let mut chars = 1;
            for l in leaves {
                let s = Strs::new(l.as_ref())?;
                for i in 0..s.len() {
                    if !s.is_null(i) {
                        // numpy drops trailing NULs: such strings have no U form
                        if s.value(i).ends_with('\0') {
                            return None;
                        }
                        chars = chars.max(s.value(i).chars().count());
                    }
                }
            }
            NumpyDtype::Unicode {
                chars,
                order: ByteOrder::Little,
            }
        }
        t if is_binary(t) => {
            let mut len = 1;
            for l in leaves {
                let s = Bins::new(l.as_ref())?;
                for i in 0..s.len() {
                    if !s.is_null(i) {
                        if s.value(i).last() == Some(&0) {
                            return None;
                        }
                        len = len.max(s.value(i).len());
                    }
                }
            }
            NumpyDtype::Bytes { len }
        }
        T::Struct(children) if structs => {
            let mut fields = Vec::with_capacity(children.len());
            for (k, c) in children.iter().enumerate() {
                let mut shape = Vec::new();
                let mut cl: Vec<ArrayRef> = leaves
                    .iter()
                    .map(|l| l.as_struct().column(k).clone())
                    .collect();
                let mut t = c.data_type().clone();
                while let T::FixedSizeList(f, n) = t {
                    shape.push(n as usize);
                    cl = cl
                        .iter()
                        .map(|a| a.as_fixed_size_list().values().clone())
                        .collect();
                    t = f.data_type().clone();
                }
                let dtype = native_dtype(&cl, true)?;
                fields.push(StructField {
                    name: c.name().clone(),
                    dtype,
                    shape,
                });
            }
            NumpyDtype::Struct(fields)
        }
        _ => return None,
    })
}

/// A tensor column of one batch: how its rows map onto a flat element array.
struct Tensor {
    levels: Vec<Level>,
    elems: Elems,
    nulls: Option<NullBuffer>,
    /// nulls among the elements: an ndarray cannot hold them (datetimes write them as NaT)
    elem_nulls: Option<NullBuffer>,
    len: usize,
    /// Per axis, the length every row has (`msgpack_numpy.shape` metadata of ragged columns): the
    /// length of an axis that an empty row cannot show, e.g. the 3 of shape `(0, 3)`.
    dims: Vec<Option<usize>>,
}

impl Tensor {
    fn new(arr: &ArrayRef, dt: &NumpyDtype, lists: bool) -> Result<Self> {
        let (levels, leaf) = peel(arr, Some(dt), lists).ok_or_else(|| {
            unsupported(format!(
                "Arrow {} is not a tensor of numpy dtype {}",
                arr.data_type(),
                dt.to_dtype_str()
            ))
        })?;
        let elem_nulls = match dt {
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => None,
            _ => leaf.logical_nulls().filter(|n| n.null_count() > 0),
        };
        Ok(Tensor {
            levels,
            elems: Elems::new(&leaf, dt)?,
            nulls: arr.logical_nulls(),
            elem_nulls,
            len: arr.len(),
            dims: Vec::new(),
        })
    }
    fn with_dims(mut self, dims: &[Option<usize>]) -> Self {
        if dims.len() == self.levels.len() {
            self.dims = dims.to_vec();
        }
        self
    }
    /// The length of axis `k` when no row shows it.
    fn dim_or_zero(&self, k: usize) -> usize {
        match self.levels.get(k) {
            Some(Level::Fixed(n)) => *n,
            _ => self.dims.get(k).copied().flatten().unwrap_or(0),
        }
    }
    #[inline]
    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }
    /// Refuse a null among the elements `[a, b)` of a row: writing it as 0 would change the data.
    #[inline]
    fn check_elems(&self, a: usize, b: usize) -> Result<()> {
        match &self.elem_nulls {
            Some(n) if (a..b).any(|i| n.is_null(i)) => Err(unsupported(
                "a null inside an array value: ndarrays cannot hold nulls (fill them, or use a List column)".to_string(),
            )),
            _ => Ok(()),
        }
    }
    /// Whether every non-null row is an ndarray: its nested lists rectangular, no null elements.
    fn rows_are_ndarrays(&self) -> bool {
        let mut shape = Vec::new();
        (0..self.len).filter(|&r| !self.is_null(r)).all(|r| {
            shape.clear();
            matches!(self.range(r, r + 1, &mut shape), Ok((a, b)) if self.check_elems(a, b).is_ok())
        })
    }
    fn fixed_shape(&self) -> Option<Vec<usize>> {
        self.levels
            .iter()
            .map(|l| match l {
                Level::Fixed(n) => Some(*n),
                _ => None,
            })
            .collect()
    }
    /// The shape of rows `a..b` taken together (each must have the same shape), pushed onto `shape`,
    /// and their flat element range.
    fn range(&self, mut a: usize, mut b: usize, shape: &mut Vec<usize>) -> Result<(usize, usize)> {
        for (k, l) in self.levels.iter().enumerate() {
            let (len, na, nb) = match l {
                Level::Fixed(n) => (*n, a * n, b * n),
                Level::O32(o) => uniform(o.as_ref(), a, b)?,
                Level::O64(o) => uniform(o.as_ref(), a, b)?,
            };
            // No list at this level (an empty axis above): the metadata knows the length.
            let len = if a == b { self.dim_or_zero(k) } else { len };
            shape.push(len);
            a = na;
            b = nb;
        }
        Ok((a, b))
    }
}

fn uniform<O: Copy + TryInto<usize>>(o: &[O], a: usize, b: usize) -> Result<(usize, usize, usize)> {
    let at = |i: usize| -> usize { o[i].try_into().unwrap_or(0) };
    let len = if a < b { at(a + 1) - at(a) } else { 0 };
    for j in a + 1..b {
        if at(j + 1) - at(j) != len {
            return Err(unsupported(
                "ragged tensor: lists nested inside one ndarray have different lengths".to_string(),
            ));
        }
    }
    Ok((len, at(a), at(b)))
}

/// dtype-level facts shared by every row of a tensor column.
struct NdType {
    ty: TypeEnc,
    kind: &'static [u8],
    itemsize: usize,
}

impl NdType {
    fn of(dt: &NumpyDtype) -> Self {
        NdType {
            ty: TypeEnc::of(dt),
            kind: kind_of(dt),
            itemsize: dt.itemsize(),
        }
    }
}

/// Resolve the dtype of a tensor column over its chunks: the metadata dtype when every chunk fits
/// it, else the native dtype of the leaf type.
fn resolve_tensor(
    arrays: &[ArrayRef],
    dtype: Option<&NumpyDtype>,
    lists: bool,
    structs: bool,
) -> Result<(NumpyDtype, Vec<Tensor>)> {
    if let Some(dt) = dtype {
        if let Ok(ts) = arrays
            .iter()
            .map(|a| Tensor::new(a, dt, lists))
            .collect::<Result<Vec<_>>>()
        {
            return Ok((dt.clone(), ts));
        }
    }
    let mut leaves = Vec::with_capacity(arrays.len());
    for a in arrays {
        match peel(a, None, lists) {
            Some((_, leaf)) => leaves.push(leaf),
            None => {
                return Err(unsupported(format!(
                    "Arrow {} is not a tensor",
                    a.data_type()
                )))
            }
        }
    }
    let t = arrays
        .first()
        .map(|a| a.data_type().to_string())
        .unwrap_or_default();
    let dt = native_dtype(&leaves, structs)
        .ok_or_else(|| unsupported(format!("Arrow {t} has no numpy dtype")))?;
    let ts = arrays
        .iter()
        .map(|a| Tensor::new(a, &dt, lists))
        .collect::<Result<Vec<_>>>()?;
    Ok((dt, ts))
}

// ---------------------------------------------------------------------------------------------
// Column encoders
// ---------------------------------------------------------------------------------------------

/// Encodes the values of one column (of one batch), row by row.
pub(crate) trait ColumnEncoder {
    /// Append the msgpack encoding of row `row`.
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()>;
    /// When row `row` encodes as exactly one ndarray map: how its head can be widened (aligned mode).
    fn nd_probe(&mut self, _row: usize) -> Result<Option<NdProbe>> {
        Ok(None)
    }
    /// Whether values may hold ndarray maps (which align themselves against the absolute output
    /// position, so must be encoded in place).
    fn may_nd(&self) -> bool {
        false
    }
    /// A rough size of all rows' encodings, for reserving the output up front.
    fn size_hint(&self) -> usize;
}

struct NullEnc(usize);
impl ColumnEncoder for NullEnc {
    fn encode(&mut self, _: usize, out: &mut Out) -> Result<()> {
        out.buf.push(0xc0);
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0
    }
}

struct BoolEnc(BooleanArray);
impl ColumnEncoder for BoolEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        out.buf.push(if self.0.is_null(row) {
            0xc0
        } else if self.0.value(row) {
            0xc3
        } else {
            0xc2
        });
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0.len()
    }
}

macro_rules! prim_enc {
    ($name:ident, $t:ty, |$b:ident, $v:ident| $body:expr, $w:expr) => {
        struct $name(PrimitiveArray<$t>);
        impl ColumnEncoder for $name {
            #[inline]
            fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
                if self.0.is_null(row) {
                    out.buf.push(0xc0);
                } else {
                    let $b = &mut out.buf;
                    let $v = self.0.value(row);
                    $body;
                }
                Ok(())
            }
            fn size_hint(&self) -> usize {
                self.0.len() * $w
            }
        }
    };
}
prim_enc!(IntEnc, Int64Type, |b, v| wire::sint(b, v), 5);
prim_enc!(UIntEnc, UInt64Type, |b, v| wire::uint(b, v), 5);
prim_enc!(F64Enc, Float64Type, |b, v| wire::f64(b, v), 9);
prim_enc!(F32Enc, Float32Type, |b, v| wire::f32(b, v), 5);
prim_enc!(
    TsExtEnc,
    TimestampNanosecondType,
    |b, v| wire::timestamp_ns(b, v),
    10
);

struct StrEnc(Strs);
impl ColumnEncoder for StrEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.0.is_null(row) {
            out.buf.push(0xc0);
        } else {
            wire::str(&mut out.buf, self.0.value(row));
        }
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0.bytes_hint() + self.0.len() * 3
    }
}

struct BinEnc(Bins);
impl ColumnEncoder for BinEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.0.is_null(row) {
            out.buf.push(0xc0);
        } else {
            wire::bin(&mut out.buf, self.0.value(row));
        }
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0.bytes_hint() + self.0.len() * 3
    }
}

/// A numpy scalar: `{b'nd': False, b'type': dtype.str, b'data': <itemsize bytes>}`.
struct ScalarEnc {
    prefix: Vec<u8>,
    elems: Elems,
    nulls: Option<NullBuffer>,
    len: usize,
}

impl ScalarEnc {
    fn new(arr: &ArrayRef, dtype: Option<&NumpyDtype>) -> Result<Self> {
        let dt = match dtype.filter(|d| accepts(d, arr.data_type())) {
            Some(d) => d.clone(),
            None => native_dtype(std::slice::from_ref(arr), false).ok_or_else(|| {
                unsupported(format!(
                    "Arrow {} has no numpy scalar type",
                    arr.data_type()
                ))
            })?,
        };
        let elems = Elems::new(arr, &dt)?;
        let mut p = Vec::with_capacity(32);
        wire::map_hdr(&mut p, 3);
        p.extend_from_slice(b"\xc4\x02nd\xc2\xc4\x04type");
        let ty = TypeEnc::of(&dt);
        ty.write(&mut p, ty.forms_and_body().0[0]);
        p.extend_from_slice(b"\xc4\x04data");
        wire::bin_hdr_sized(&mut p, dt.itemsize(), wire::bin_forms(dt.itemsize())[0]);
        Ok(ScalarEnc {
            prefix: p,
            elems,
            nulls: arr.logical_nulls(),
            len: arr.len(),
        })
    }
}

impl ColumnEncoder for ScalarEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        out.buf.extend_from_slice(&self.prefix);
        self.elems.write(row, row + 1, &mut out.buf)
    }
    fn size_hint(&self) -> usize {
        self.len * (self.prefix.len() + 8)
    }
}

/// One ndarray map per row (0-d for a non-list column), or nil for a null row.
struct TensorEnc {
    nd: NdType,
    t: Tensor,
    /// rows (of this batch) whose shape the lists cannot tell: from `msgpack_numpy.empty_shapes`
    overrides: std::collections::HashMap<usize, Vec<usize>>,
    /// Fixed shape: the shape, elements per row, and the whole head (non-aligned mode).
    fixed: Option<(Vec<usize>, usize, Vec<u8>)>,
    shape: Vec<usize>,
    /// `U`/`S` rows written at their own smallest width (`msgpack_numpy.widths` = `min`), with
    /// the dtype of the last width used
    min_width: Option<(NumpyDtype, usize, NdType)>,
}

impl TensorEnc {
    fn new(
        arr: &ArrayRef,
        dtype: Option<&NumpyDtype>,
        lists: bool,
        structs: bool,
        dims: &[Option<usize>],
    ) -> Result<Self> {
        let (dt, mut ts) = resolve_tensor(std::slice::from_ref(arr), dtype, lists, structs)?;
        let mut t = ts.pop().expect("one array").with_dims(dims);
        // A null in a column that held 0-d datetime ndarrays was a NaT: write it back as one
        // (the element writer turns nulls into NaT). Without metadata a null stays nil.
        let temporal = matches!(
            dt,
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. }
        );
        if temporal && t.levels.is_empty() && dtype.is_some() {
            t.nulls = None;
        }
        let nd = NdType::of(&dt);
        let fixed = match t.fixed_shape() {
            Some(shape) => {
                let per_row: usize = shape.iter().product();
                let mut o = Out::new(false);
                NdHead {
                    ty: &nd.ty,
                    kind: nd.kind,
                    shape: &shape,
                    data_len: per_row * nd.itemsize,
                }
                .write(&mut o)?;
                Some((shape, per_row, o.buf))
            }
            None => None,
        };
        Ok(TensorEnc {
            nd,
            t,
            overrides: Default::default(),
            fixed,
            shape: Vec::new(),
            min_width: None,
        })
    }

    /// Write rows at their own smallest width when the reader saw several (`field` metadata).
    fn with_widths_of(mut self, field: &Field, dt: Option<&NumpyDtype>) -> Self {
        let min = field
            .metadata()
            .get(meta::WIDTHS)
            .is_some_and(|v| v == "min");
        if let (true, Some(dt)) = (min, dt) {
            if dt.text_width().is_some() {
                self.min_width = Some((dt.clone(), usize::MAX, NdType::of(dt)));
                self.fixed = None;
            }
        }
        self
    }

    /// The row's dtype: the column's, or (`min_width`) the same at the row's smallest width.
    fn row_width(&mut self, a: usize, b: usize) -> Option<usize> {
        let (dt, last, nd) = self.min_width.as_mut()?;
        let w = self.t.elems.min_text_width(a, b)?;
        if w != *last {
            *nd = NdType::of(&dt.with_text_width(w));
            *last = w;
        }
        Some(w)
    }

    fn head_range(&mut self, row: usize) -> Result<(usize, usize)> {
        self.shape.clear();
        let r = self.t.range(row, row + 1, &mut self.shape)?;
        if let Some(s) = self.overrides.get(&row) {
            if r.0 == r.1 {
                self.shape.clear();
                self.shape.extend_from_slice(s);
            }
        }
        Ok(r)
    }
}

impl ColumnEncoder for TensorEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.t.is_null(row) {
            out.buf.push(0xc0);
            return Ok(());
        }
        if let (Some((_, k, prefix)), false) = (&self.fixed, out.align) {
            // Hot path: the whole head is constant; one copy of the row's payload.
            self.t.check_elems(row * k, (row + 1) * k)?;
            out.buf.extend_from_slice(prefix);
            return self.t.elems.write(row * k, (row + 1) * k, &mut out.buf);
        }
        let (a, b) = self.head_range(row)?;
        self.t.check_elems(a, b)?;
        let w = self.row_width(a, b);
        let nd = match (&self.min_width, w) {
            (Some((_, _, nd)), Some(_)) => nd,
            _ => &self.nd,
        };
        NdHead {
            ty: &nd.ty,
            kind: nd.kind,
            shape: &self.shape,
            data_len: (b - a) * nd.itemsize,
        }
        .write(out)?;
        match w {
            Some(w) => self.t.elems.write_width(a, b, w, &mut out.buf),
            None => self.t.elems.write(a, b, &mut out.buf),
        }
    }
    fn nd_probe(&mut self, row: usize) -> Result<Option<NdProbe>> {
        if self.t.is_null(row) {
            return Ok(None);
        }
        let (a, b) = self.head_range(row)?;
        let w = self.row_width(a, b);
        let nd = match (&self.min_width, w) {
            (Some((_, _, nd)), Some(_)) => nd,
            _ => &self.nd,
        };
        let h = NdHead {
            ty: &nd.ty,
            kind: nd.kind,
            shape: &self.shape,
            data_len: (b - a) * nd.itemsize,
        };
        h.probe().map(Some)
    }
    fn may_nd(&self) -> bool {
        true
    }
    fn size_hint(&self) -> usize {
        let mut s = Vec::new();
        let elems = self
            .t
            .range(0, self.t.len, &mut s)
            .map(|(a, b)| b - a)
            .unwrap_or(0);
        let head = self.fixed.as_ref().map_or(48, |f| f.2.len());
        self.t.len * head + elems * self.nd.itemsize
    }
}

/// Python `complex`: `{b'complex': True, b'data': repr(z)}` from FixedSizeList(Float64|32, 2).
struct ComplexEnc {
    parts: ArrayRef,
    nulls: Option<NullBuffer>,
    len: usize,
    s: String,
}

impl ComplexEnc {
    fn new(arr: &ArrayRef) -> Option<Self> {
        match arr.data_type() {
            DataType::FixedSizeList(f, 2)
                if matches!(f.data_type(), DataType::Float64 | DataType::Float32) =>
            {
                Some(ComplexEnc {
                    parts: arr.as_fixed_size_list().values().clone(),
                    nulls: arr.logical_nulls(),
                    len: arr.len(),
                    s: String::new(),
                })
            }
            _ => None,
        }
    }
    fn part(&self, i: usize) -> f64 {
        match self.parts.data_type() {
            DataType::Float64 => self.parts.as_primitive::<Float64Type>().value(i),
            _ => self.parts.as_primitive::<Float32Type>().value(i) as f64,
        }
    }
}

impl ColumnEncoder for ComplexEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let (re, im) = (self.part(2 * row), self.part(2 * row + 1));
        py_complex_repr(re, im, &mut self.s);
        out.buf
            .extend_from_slice(b"\x82\xc4\x07complex\xc3\xc4\x04data");
        wire::str(&mut out.buf, &self.s);
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.len * 40
    }
}

/// Raw pickle bytes of an object array, written back as
/// `{nd: True, type: [["", "|O"]], kind: b'O', shape: [], data: <pickle>}`. The original shape is
/// not recoverable from the bytes; Python's decoder ignores it (it returns `pickle.loads(data)`).
struct ObjectEnc {
    bins: Bins,
    ty: TypeEnc,
}

impl ColumnEncoder for ObjectEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.bins.is_null(row) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let v = self.bins.value(row);
        NdHead {
            ty: &self.ty,
            kind: b"O",
            shape: &[],
            data_len: v.len(),
        }
        .write(out)?;
        out.buf.extend_from_slice(v);
        Ok(())
    }
    fn nd_probe(&mut self, row: usize) -> Result<Option<NdProbe>> {
        if self.bins.is_null(row) {
            return Ok(None);
        }
        let n = self.bins.value(row).len();
        NdHead {
            ty: &self.ty,
            kind: b"O",
            shape: &[],
            data_len: n,
        }
        .probe()
        .map(Some)
    }
    fn may_nd(&self) -> bool {
        true
    }
    fn size_hint(&self) -> usize {
        self.bins.bytes_hint() + self.bins.len() * 48
    }
}

enum ListShape {
    Fixed(usize),
    O32(OffsetBuffer<i32>),
    O64(OffsetBuffer<i64>),
    V32(ScalarBuffer<i32>, ScalarBuffer<i32>),
    V64(ScalarBuffer<i64>, ScalarBuffer<i64>),
}

impl ListShape {
    #[inline]
    fn range(&self, row: usize) -> (usize, usize) {
        match self {
            ListShape::Fixed(n) => (row * n, (row + 1) * n),
            ListShape::O32(o) => (o[row] as usize, o[row + 1] as usize),
            ListShape::O64(o) => (o[row] as usize, o[row + 1] as usize),
            ListShape::V32(o, s) => (o[row] as usize, (o[row] + s[row]) as usize),
            ListShape::V64(o, s) => (o[row] as usize, (o[row] + s[row]) as usize),
        }
    }
}

/// A msgpack array of the items' encodings.
struct ListEnc {
    shape: ListShape,
    nulls: Option<NullBuffer>,
    child: Box<dyn ColumnEncoder>,
    len: usize,
}

impl ListEnc {
    fn new(arr: &ArrayRef) -> Result<Self> {
        let (shape, field, values): (ListShape, &Field, &ArrayRef) = match arr.data_type() {
            DataType::FixedSizeList(f, n) => (
                ListShape::Fixed(*n as usize),
                f,
                arr.as_fixed_size_list().values(),
            ),
            DataType::List(f) => {
                let l = arr.as_list::<i32>();
                (ListShape::O32(l.offsets().clone()), f, l.values())
            }
            DataType::LargeList(f) => {
                let l = arr.as_list::<i64>();
                (ListShape::O64(l.offsets().clone()), f, l.values())
            }
            DataType::ListView(f) => {
                let l = arr.as_list_view::<i32>();
                (
                    ListShape::V32(l.offsets().clone(), l.sizes().clone()),
                    f,
                    l.values(),
                )
            }
            DataType::LargeListView(f) => {
                let l = arr.as_list_view::<i64>();
                (
                    ListShape::V64(l.offsets().clone(), l.sizes().clone()),
                    f,
                    l.values(),
                )
            }
            t => return Err(unsupported(format!("Arrow {t} is not a list"))),
        };
        let child = make_encoder(field, values)?;
        Ok(ListEnc {
            shape,
            nulls: arr.logical_nulls(),
            child,
            len: arr.len(),
        })
    }
}

impl ColumnEncoder for ListEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let (a, b) = self.shape.range(row);
        wire::array_hdr(&mut out.buf, b - a);
        for j in a..b {
            self.child.encode(j, out)?;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.child.may_nd()
    }
    fn size_hint(&self) -> usize {
        self.child.size_hint() + self.len * 3
    }
}

/// A map with str keys in field order.
struct StructEnc {
    names: Vec<String>,
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    children: Vec<Box<dyn ColumnEncoder>>,
    nulls: Option<NullBuffer>,
    len: usize,
}

impl StructEnc {
    fn new(arr: &ArrayRef) -> Result<Self> {
        let sa = arr.as_struct();
        let mut names = Vec::new();
        let mut keys = Vec::new();
        let mut key_ends = Vec::new();
        let mut children = Vec::new();
        for (f, c) in sa.fields().iter().zip(sa.columns()) {
            children.push(make_encoder(f, c).map_err(|e| e.prepend_path(f.name()))?);
            wire::str(&mut keys, f.name());
            key_ends.push(keys.len());
            names.push(f.name().clone());
        }
        Ok(StructEnc {
            names,
            keys,
            key_ends,
            children,
            nulls: arr.logical_nulls(),
            len: arr.len(),
        })
    }
}

impl ColumnEncoder for StructEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        wire::map_hdr(&mut out.buf, self.children.len());
        let mut start = 0;
        for (i, c) in self.children.iter_mut().enumerate() {
            out.buf
                .extend_from_slice(&self.keys[start..self.key_ends[i]]);
            start = self.key_ends[i];
            c.encode(row, out)
                .map_err(|e| e.prepend_path(&self.names[i]))?;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.children.iter().any(|c| c.may_nd())
    }
    fn size_hint(&self) -> usize {
        self.children.iter().map(|c| c.size_hint()).sum::<usize>()
            + self.len * (self.keys.len() + 1)
    }
}

/// An Arrow Map: a msgpack map of the entries' encodings.
struct MapEnc {
    offsets: OffsetBuffer<i32>,
    nulls: Option<NullBuffer>,
    keys: Box<dyn ColumnEncoder>,
    values: Box<dyn ColumnEncoder>,
    len: usize,
}

impl ColumnEncoder for MapEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let (a, b) = (self.offsets[row] as usize, self.offsets[row + 1] as usize);
        wire::map_hdr(&mut out.buf, b - a);
        for j in a..b {
            self.keys.encode(j, out)?;
            self.values.encode(j, out)?;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.keys.may_nd() || self.values.may_nd()
    }
    fn size_hint(&self) -> usize {
        self.keys.size_hint() + self.values.size_hint() + self.len * 3
    }
}

/// `msgpack_numpy.shape`: per axis of a ragged tensor column, the length shared by every row.
fn meta_dims(field: &Field) -> Vec<Option<usize>> {
    field
        .metadata()
        .get(meta::SHAPE)
        .and_then(|s| serde_json::from_str::<Vec<Option<usize>>>(s).ok())
        .unwrap_or_default()
}

fn field_meta(field: &Field) -> (Option<&str>, Option<NumpyDtype>) {
    let md = field.metadata();
    let kind = md.get(meta::KIND).map(String::as_str);
    // A dtype this crate cannot parse is treated as absent: the Arrow type decides.
    let dtype = md
        .get(meta::DTYPE)
        .and_then(|s| NumpyDtype::from_metadata(s).ok());
    (kind, dtype)
}

/// The encoder for a top-level column of a batch whose first row is row `row0` of the file: like
/// [`make_encoder`], plus the empty-row shapes recorded in `msgpack_numpy.empty_shapes`.
pub(crate) fn make_top_encoder(
    field: &Field,
    arr: &ArrayRef,
    row0: u64,
) -> Result<Box<dyn ColumnEncoder>> {
    let (kind, dtype) = field_meta(field);
    if let (Some("ndarray"), Some(shapes)) = (kind, field.metadata().get(meta::EMPTY_SHAPES)) {
        let shapes: std::collections::HashMap<String, Vec<usize>> =
            serde_json::from_str(shapes).unwrap_or_default();
        if let Ok(t) = TensorEnc::new(arr, dtype.as_ref(), true, true, &meta_dims(field)) {
            let mut t = t.with_widths_of(field, dtype.as_ref());
            let end = row0 + arr.len() as u64;
            for (k, v) in shapes {
                if let Ok(r) = k.parse::<u64>() {
                    if (row0..end).contains(&r) {
                        t.overrides.insert((r - row0) as usize, v);
                    }
                }
            }
            return Ok(Box::new(t));
        }
    }
    make_encoder(field, arr)
}

/// The encoder for one column (or struct child / list item) of one batch, chosen once from the
/// Arrow type and the field's `msgpack_numpy.*` metadata.
pub(crate) fn make_encoder(field: &Field, arr: &ArrayRef) -> Result<Box<dyn ColumnEncoder>> {
    if let DataType::Dictionary(..) = arr.data_type() {
        let d = arr.as_any_dictionary();
        let vals = arrow_select::take::take(d.values().as_ref(), d.keys(), None)?;
        return make_encoder(field, &vals);
    }
    let (kind, dtype) = field_meta(field);
    match kind {
        Some("ndarray") => {
            if let Ok(t) = TensorEnc::new(arr, dtype.as_ref(), true, true, &meta_dims(field)) {
                return Ok(Box::new(t.with_widths_of(field, dtype.as_ref())));
            }
        }
        Some("scalar") => {
            if let Ok(s) = ScalarEnc::new(arr, dtype.as_ref()) {
                return Ok(Box::new(s));
            }
        }
        Some("complex") => {
            if let Some(c) = ComplexEnc::new(arr) {
                return Ok(Box::new(c));
            }
        }
        // plain msgpack ints too big for Int64 (the reader's UInt64 columns)
        Some("int") if matches!(arr.data_type(), DataType::UInt64) => {
            return Ok(Box::new(UIntEnc(arr.as_primitive::<UInt64Type>().clone())));
        }
        Some("object") => {
            if let Some(bins) = Bins::new(arr.as_ref()) {
                return Ok(Box::new(ObjectEnc {
                    bins,
                    ty: TypeEnc::of(&NumpyDtype::Object),
                }));
            }
        }
        _ => {}
    }
    plain_encoder(arr)
}

fn plain_encoder(arr: &ArrayRef) -> Result<Box<dyn ColumnEncoder>> {
    use DataType as T;
    Ok(match arr.data_type() {
        T::Null => Box::new(NullEnc(arr.len())),
        T::Boolean => Box::new(BoolEnc(arr.as_boolean().clone())),
        T::Int64 => Box::new(IntEnc(arr.as_primitive::<Int64Type>().clone())),
        // UInt64 is only plain msgpack ints where the reader found them so (kind "int", see
        // make_encoder): small values would read back as Int64, so the dtype goes along.
        T::UInt64 => Box::new(ScalarEnc::new(arr, None)?),
        T::Float64 => Box::new(F64Enc(arr.as_primitive::<Float64Type>().clone())),
        T::Float32 => Box::new(F32Enc(arr.as_primitive::<Float32Type>().clone())),
        // Narrower numbers become numpy scalars so their dtype survives a round trip.
        T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 | T::UInt32 | T::Float16 => {
            Box::new(ScalarEnc::new(arr, None)?)
        }
        t if is_string(t) => Box::new(StrEnc(Strs::new(arr.as_ref()).expect("string"))),
        t if is_binary(t) => Box::new(BinEnc(Bins::new(arr.as_ref()).expect("binary"))),
        T::Timestamp(TimeUnit::Nanosecond, Some(tz)) if is_utc(tz) => Box::new(TsExtEnc(
            arr.as_primitive::<TimestampNanosecondType>().clone(),
        )),
        T::Timestamp(..) | T::Date32 | T::Date64 | T::Duration(_) => {
            Box::new(TensorEnc::new(arr, None, false, false, &[])?)
        }
        T::FixedSizeList(..) => match TensorEnc::new(arr, None, false, false, &[]) {
            Ok(t) => Box::new(t),
            Err(_) => Box::new(ListEnc::new(arr)?),
        },
        T::List(_) | T::LargeList(_) | T::ListView(_) | T::LargeListView(_) => {
            Box::new(ListEnc::new(arr)?)
        }
        T::Struct(_) => Box::new(StructEnc::new(arr)?),
        T::Map(..) => {
            let m = arr.as_map();
            let (kf, vf) = m.entries_fields();
            Box::new(MapEnc {
                offsets: m.offsets().clone(),
                nulls: arr.logical_nulls(),
                keys: make_encoder(kf, m.keys())?,
                values: make_encoder(vf, m.values())?,
                len: arr.len(),
            })
        }
        t => {
            return Err(unsupported(format!(
                "Arrow type {t} has no msgpack-numpy encoding"
            )))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Whole-column encoders (columns layout, values layout with an ndarray container)
// ---------------------------------------------------------------------------------------------

/// A whole column (all batches) as ONE ndarray of shape `(N, *s)`.
pub(crate) struct ColumnNd {
    nd: NdType,
    parts: Vec<Tensor>,
    shape: Vec<usize>,
}

impl ColumnNd {
    /// `None` when the column is not one ndarray: null rows, rows of different shapes, or neither
    /// `ndarray` metadata nor (when `plain_nd`) a numeric/bool/temporal/tensor type. `plain_nd` is
    /// false for a table the reader made from a `columns` file: there a column without metadata
    /// was a msgpack list, and stays one.
    pub(crate) fn try_new(
        field: &Field,
        arrays: &[ArrayRef],
        plain_nd: bool,
    ) -> Result<Option<Self>> {
        use DataType as T;
        let (kind, dtype) = field_meta(field);
        let explicit = match kind {
            Some("ndarray") => true,
            None if plain_nd => false,
            _ => return Ok(None),
        };
        let t = field.data_type();
        if !explicit {
            let mut leaf = t;
            while let T::FixedSizeList(f, _) = leaf {
                leaf = f.data_type();
            }
            let ok = match leaf {
                T::Boolean
                | T::Int8
                | T::Int16
                | T::Int32
                | T::Int64
                | T::UInt8
                | T::UInt16
                | T::UInt32
                | T::UInt64
                | T::Float16
                | T::Float32
                | T::Float64
                | T::Date32
                | T::Date64
                | T::Duration(_) => true,
                T::Timestamp(u, tz) => {
                    !(matches!(u, TimeUnit::Nanosecond) && tz.as_deref().is_some_and(is_utc))
                }
                // Strings and bytes only inside a FixedSizeList (a plain str column stays a list).
                t2 if is_string(t2) || is_binary(t2) => leaf != t,
                _ => false,
            };
            if !ok {
                return Ok(None);
            }
        }
        if arrays
            .iter()
            .any(|a| matches!(a.data_type(), T::Dictionary(..)))
        {
            return Ok(None);
        }
        let (dt, parts) = match resolve_tensor(arrays, dtype.as_ref(), explicit, explicit) {
            Ok((dt, parts)) => {
                let dims = meta_dims(field);
                (
                    dt,
                    parts
                        .into_iter()
                        .map(|p| p.with_dims(&dims))
                        .collect::<Vec<_>>(),
                )
            }
            Err(_) => return Ok(None),
        };
        let temporal = matches!(
            dt,
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. }
        );
        let mut inner: Option<Vec<usize>> = None;
        let mut n = 0usize;
        let mut s = Vec::new();
        for p in &parts {
            // Null rows have no ndarray form, except a flat datetime column: nulls are NaT.
            if p.nulls.as_ref().is_some_and(|nb| nb.null_count() > 0)
                && !(temporal && p.levels.is_empty())
            {
                return Ok(None);
            }
            // nulls among the elements: the per-row encoders report them
            if p.elem_nulls.is_some() {
                return Ok(None);
            }
            n += p.len;
            if let Some(fs) = p.fixed_shape() {
                if inner.get_or_insert_with(|| fs.clone()) != &fs {
                    return Ok(None);
                }
                continue;
            }
            for r in 0..p.len {
                s.clear();
                if p.range(r, r + 1, &mut s).is_err()
                    || inner.get_or_insert_with(|| s.clone()) != &s
                {
                    return Ok(None);
                }
            }
        }
        let inner = match inner {
            Some(i) => i,
            // No rows: fixed axes are known, ragged ones from metadata or 0.
            None => parts
                .first()
                .map(|p| (0..p.levels.len()).map(|k| p.dim_or_zero(k)).collect())
                .unwrap_or_default(),
        };
        let mut shape = vec![n];
        shape.extend(inner);
        Ok(Some(ColumnNd {
            nd: NdType::of(&dt),
            parts,
            shape,
        }))
    }

    fn head(&self) -> NdHead<'_> {
        let elems: usize = self.shape.iter().product();
        NdHead {
            ty: &self.nd.ty,
            kind: self.nd.kind,
            shape: &self.shape,
            data_len: elems * self.nd.itemsize,
        }
    }
}

impl ColumnEncoder for ColumnNd {
    fn encode(&mut self, _row: usize, out: &mut Out) -> Result<()> {
        self.head().write(out)?;
        let mut s = Vec::new();
        let mut row0 = 0u64;
        for p in &self.parts {
            s.clear();
            let (a, b) = p.range(0, p.len, &mut s)?;
            p.elems
                .write(a, b, &mut out.buf)
                .map_err(|e| e.at_record(row0))?;
            row0 += p.len as u64;
        }
        Ok(())
    }
    fn nd_probe(&mut self, _row: usize) -> Result<Option<NdProbe>> {
        self.head().probe().map(Some)
    }
    fn may_nd(&self) -> bool {
        true
    }
    fn size_hint(&self) -> usize {
        self.head().data_len + 64
    }
}

/// A whole column (all batches) as one msgpack array of per-row encodings.
pub(crate) struct ColumnList {
    parts: Vec<(Box<dyn ColumnEncoder>, usize)>,
}

impl ColumnList {
    pub(crate) fn new(field: &Field, arrays: &[ArrayRef]) -> Result<Self> {
        let parts = arrays
            .iter()
            .map(|a| Ok((make_encoder(field, a)?, a.len())))
            .collect::<Result<_>>()?;
        Ok(ColumnList { parts })
    }
}

impl ColumnEncoder for ColumnList {
    fn encode(&mut self, _row: usize, out: &mut Out) -> Result<()> {
        let n: usize = self.parts.iter().map(|p| p.1).sum();
        wire::array_hdr(&mut out.buf, n);
        let mut row0 = 0u64;
        for (enc, len) in &mut self.parts {
            for r in 0..*len {
                enc.encode(r, out)
                    .map_err(|e| e.at_record(row0 + r as u64))?;
            }
            row0 += *len as u64;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.parts.iter().any(|p| p.0.may_nd())
    }
    fn size_hint(&self) -> usize {
        self.parts.iter().map(|p| p.0.size_hint()).sum::<usize>() + 5
    }
}

/// Whether every non-null row of a List column can be written as an ndarray (rectangular, no
/// null elements, a numpy dtype for its leaf).
pub(crate) fn rows_are_ndarrays(arr: &ArrayRef) -> bool {
    TensorEnc::new(arr, None, true, false, &[]).is_ok_and(|t| t.t.rows_are_ndarrays())
}

/// The whole-column encoder for a `columns` map value: one ndarray when possible, else a list.
pub(crate) fn column_encoder(
    field: &Field,
    arrays: &[ArrayRef],
    plain_nd: bool,
) -> Result<Box<dyn ColumnEncoder>> {
    // a list in the file read (of ndarrays, say): a list again, one value per row
    if field.metadata().get(meta::COLUMN).map(String::as_str) == Some("list") {
        return Ok(Box::new(ColumnList::new(field, arrays)?));
    }
    Ok(match ColumnNd::try_new(field, arrays, plain_nd)? {
        Some(nd) => Box::new(nd),
        None => Box::new(ColumnList::new(field, arrays)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn ints_smallest_form_like_python() {
        // b''.join(msgpack.packb(i) for i in [0,127,128,255,256,65535,65536,2**32-1,2**32,2**63-1,
        //   -1,-32,-33,-128,-129,-32768,-32769,-2**31,-2**31-1,-2**63])   (msgpack 1.1)
        let want = "007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf7fffffffffffffffffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd38000000000000000";
        let mut b = Vec::new();
        for v in [
            0i64,
            127,
            128,
            255,
            256,
            65535,
            65536,
            (1 << 32) - 1,
            1 << 32,
            i64::MAX,
            -1,
            -32,
            -33,
            -128,
            -129,
            -32768,
            -32769,
            -(1 << 31),
            -(1 << 31) - 1,
            i64::MIN,
        ] {
            wire::sint(&mut b, v);
        }
        assert_eq!(hex(&b), want);
        // and rmp agrees on the signed rules
        let mut r = Vec::new();
        for v in [0i64, 127, 128, -33, -129, i64::MIN] {
            rmp::encode::write_sint(&mut r, v).unwrap();
        }
        let mut m = Vec::new();
        for v in [0i64, 127, 128, -33, -129, i64::MIN] {
            wire::sint(&mut m, v);
        }
        assert_eq!(r, m);
        let mut b = Vec::new();
        wire::uint(&mut b, u64::MAX); // msgpack.packb(2**64-1)
        assert_eq!(hex(&b), "cfffffffffffffffff");
        // every form reads back
        for v in [
            0i64,
            5,
            200,
            40000,
            1 << 40,
            -5,
            -100,
            -1000,
            -100000,
            i64::MIN,
        ] {
            for &size in wire::sint_forms(v) {
                let mut b = Vec::new();
                wire::sint_sized(&mut b, v, size);
                assert_eq!(b.len(), size as usize);
                let back = match wire::read_int(&b).unwrap() {
                    IntVal::U(u) => u as i64,
                    IntVal::S(s) => s,
                };
                assert_eq!(back, v);
            }
        }
    }

    #[test]
    fn headers() {
        let mut b = Vec::new();
        wire::str(&mut b, &"x".repeat(40)); // str8, as msgpack.packb('x'*40)
        assert_eq!(&b[..2], &[0xd9, 40]);
        b.clear();
        wire::bin(&mut b, &[0; 300]);
        assert_eq!(&b[..3], &[0xc5, 1, 44]);
        b.clear();
        wire::array_hdr(&mut b, 16);
        wire::map_hdr(&mut b, 15);
        assert_eq!(b, [0xdc, 0, 16, 0x8f]);
    }

    #[test]
    fn timestamps_like_python() {
        // msgpack.packb(msgpack.Timestamp.from_unix_nano(ns))
        for (ns, want) in [
            (0i64, "d6ff00000000"),
            (1_500_000_000_000_000_000, "d6ff59682f00"),
            (1_500_000_000_000_000_005, "d7ff0000001459682f00"),
            (-1, "c70cff3b9ac9ffffffffffffffffff"),
            (-1_000_000_000, "c70cff00000000ffffffffffffffff"),
        ] {
            let mut b = Vec::new();
            wire::timestamp_ns(&mut b, ns);
            assert_eq!(hex(&b), want, "{ns}");
        }
    }

    #[test]
    fn complex_repr_like_python() {
        // Produced by: for v in vals: print(struct.pack('<dd', v.real, v.imag).hex(), repr(v))
        let table = [
            ("000000000000f03f0000000000000040", "(1+2j)"),
            ("0000000000000000000000000000f03f", "1j"),
            ("0000000000000080000000000000f0bf", "(-0-1j)"),
            ("691d554d1075ef3e0000000000000000", "(1.5e-05+0j)"),
            ("000000000000f07f000000000000f87f", "(inf+nanj)"),
            ("0080e03779c341430000000000000000", "(1e+16+0j)"),
            ("00000000000000000000000000000000", "0j"),
            ("00000000000000800000000000000000", "(-0+0j)"),
            ("00000000000000000000000000000080", "-0j"),
            ("00000000000000800000000000000080", "(-0-0j)"),
            ("000000000000f03f00000000000004c0", "(1-2.5j)"),
            ("9a9999999999b93f9a9999999999c93f", "(0.1+0.2j)"),
            ("2d431cebe2361a3ff168e388b5f8e43e", "(0.0001+1e-05j)"),
            (
                "350f63bab4697b43000000000000f03f",
                "(1.2345678901234568e+17+1j)",
            ),
            ("00eb2af2548b11430000000000000000", "(1234567890123456+0j)"),
            ("ff7fe03779c341430000000000000000", "(9999999999999998+0j)"),
            (
                "00003426f56b0c4300a0d88557347643",
                "(1000000000000000+1e+17j)",
            ),
            ("000000000000f0ff000000000000f0ff", "(-inf-infj)"),
            ("000000000000f87f000000000000f8ff", "(nan+nanj)"),
            ("000000000000f8ff000000000000f87f", "(nan+nanj)"),
            (
                "0100000000000000ffffffffffffef7f",
                "(5e-324+1.7976931348623157e+308j)",
            ),
            ("000000000000e03f0000000000005940", "(0.5+100j)"),
            ("2d431cebe236fa3e92d54d06cff08044", "(2.5e-05+1e+22j)"),
            ("48afbc9af2d77a3e6e861bf0f92109c0", "(1e-07-3.14159j)"),
            (
                "555555555555d53f555555555555e53f",
                "(0.3333333333333333+0.6666666666666666j)",
            ),
            ("7dc39425ad49b2540000000000000000", "(1e+100+0j)"),
            ("30058ee42eff2bab0000000000000000", "(-1e-100+0j)"),
            ("00000000000000000080e03779c34143", "1e+16j"),
            ("00000000000000000000000000c05e40", "123j"),
            ("0000000000000000fca9f1d24d6250bf", "-0.001j"),
        ];
        let mut s = String::new();
        for (h, want) in table {
            let b: Vec<u8> = (0..16)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            let re = f64::from_le_bytes(b[..8].try_into().unwrap());
            let im = f64::from_le_bytes(b[8..].try_into().unwrap());
            py_complex_repr(re, im, &mut s);
            assert_eq!(s, want, "{h}");
        }
    }

    #[test]
    fn planner_reaches_every_residue() {
        // A 1-d f4 ndarray head can always reach an 8-byte boundary by itself, and 64 from more than half
        // of start positions (widening inside one map gives at most ~40 bytes; records add
        // the slack of their header, keys and ints, see `Segment`).
        let ty = TypeEnc::Str("<f4".into());
        for len in [3usize, 768, 100_000] {
            let shape = [len];
            let h = NdHead {
                ty: &ty,
                kind: b"",
                shape: &shape,
                data_len: len * 4,
            };
            let p = h.probe().unwrap();
            let mut hit64 = 0;
            for start in 0..64u64 {
                let mut out = Out {
                    buf: Vec::new(),
                    base: start,
                    align: true,
                };
                h.write(&mut out).unwrap();
                let data = start + out.buf.len() as u64;
                assert_eq!(data % 8, 0, "len {len} start {start}");
                hit64 += (data % 64 == 0) as usize;
                assert!(out.buf.len() >= p.min);
            }
            assert!(hit64 >= 32, "len {len}: {hit64}/64");
        }
    }
}
