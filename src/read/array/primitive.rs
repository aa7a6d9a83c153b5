//! nil, bool and number columns (plain msgpack numbers and numpy scalars), converted exactly.

use super::validity::Validity;
use super::*;
use crate::error::{ErrorKind, Result};
use crate::types::NumpyDtype;
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::ndarray::{probe, Special};
use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{MutableBuffer, NullBufferBuilder, ScalarBuffer};
use std::sync::Arc;

pub(crate) struct NullDecoder {
    pub(crate) n: usize,
}

impl ArrayDecoder for NullDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if c.peek_kind()? != Kind::Nil {
            return Err(found(c, "nil (the column held only nil where its type was inferred; pass a schema or infer from more rows)"));
        }
        c.read_nil()?;
        self.n += 1;
        Ok(())
    }
    fn append_null(&mut self) {
        self.n += 1;
    }
    fn append_nulls(&mut self, n: usize) {
        self.n += n;
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(NullArray::new(std::mem::take(&mut self.n))))
    }
}

pub(crate) struct BoolDecoder {
    pub(crate) v: BooleanBufferBuilder,
    pub(crate) nulls: NullBufferBuilder,
    pub(crate) ctx: Ctx,
}

impl ArrayDecoder for BoolDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Bool => {
                self.v.append(c.read_bool()?);
                self.nulls.append_non_null();
            }
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
            }
            // a numpy scalar into a column the caller typed bool
            Kind::Map if self.ctx.convert => {
                let v = numpy_scalar(c, &self.ctx, "bool")?;
                self.v.append(v.as_f64() != 0.0);
                self.nulls.append_non_null();
            }
            _ => return Err(found(c, "bool")),
        }
        Ok(())
    }
    fn append_null(&mut self) {
        self.v.append(false);
        self.nulls.append_null();
    }
    fn append_nulls(&mut self, n: usize) {
        self.v.append_n(n, false);
        self.nulls.append_n_nulls(n);
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(BooleanArray::new(
            self.v.finish(),
            self.nulls.finish(),
        )))
    }
}

/// A number read from msgpack or from a numpy scalar.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i64),
    U(u64),
    F(f64),
}

impl Num {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::I(v) => v as f64,
            Num::U(v) => v as f64,
            Num::F(v) => v,
        }
    }
}

/// Read a numpy scalar or 0-d array of a numeric/bool dtype at the cursor.
pub(crate) fn numpy_scalar(c: &mut Cursor<'_>, ctx: &Ctx, want: &str) -> Result<Num> {
    let start = c.pos();
    let nd = match probe(c, ctx.dialect, ctx.npy_ext, ctx.max_depth)? {
        Some(Special::Array(nd)) if nd.len == 1 => nd,
        _ => {
            c.set_pos(start);
            return Err(found(c, want));
        }
    };
    let dt = nd.parse_dtype(c.offset_of(nd.type_pos))?;
    nd.check_len(&dt, c.offset_of(0))?;
    match num_at(&dt, &nd.data) {
        Some(n) => Ok(n),
        None => {
            c.set_pos(start);
            Err(c.error(ErrorKind::TypeConflict(format!(
                "expected {want}, found numpy {}",
                dt.to_dtype_str()
            ))))
        }
    }
}

/// The numeric or bool element of dtype `dt` in `d` (exactly its itemsize bytes); None for
/// other dtypes.
pub(crate) fn num_at(dt: &NumpyDtype, d: &[u8]) -> Option<Num> {
    let swap = dt.order().needs_swap();
    macro_rules! rd {
        ($t:ty) => {{
            let mut a = [0u8; std::mem::size_of::<$t>()];
            a.copy_from_slice(d);
            if swap {
                a.reverse();
            }
            <$t>::from_ne_bytes(a)
        }};
    }
    Some(match dt {
        NumpyDtype::Bool => Num::I((d[0] != 0) as i64),
        NumpyDtype::Int {
            size: 1,
            signed: true,
            ..
        } => Num::I(rd!(i8) as i64),
        NumpyDtype::Int {
            size: 2,
            signed: true,
            ..
        } => Num::I(rd!(i16) as i64),
        NumpyDtype::Int {
            size: 4,
            signed: true,
            ..
        } => Num::I(rd!(i32) as i64),
        NumpyDtype::Int {
            size: 8,
            signed: true,
            ..
        } => Num::I(rd!(i64)),
        NumpyDtype::Int { size: 1, .. } => Num::I(rd!(u8) as i64),
        NumpyDtype::Int { size: 2, .. } => Num::I(rd!(u16) as i64),
        NumpyDtype::Int { size: 4, .. } => Num::I(rd!(u32) as i64),
        NumpyDtype::Int { .. } => Num::U(rd!(u64)),
        NumpyDtype::Float { size: 2, .. } => Num::F(half::f16::from_bits(rd!(u16)).to_f64()),
        NumpyDtype::Float { size: 4, .. } => Num::F(rd!(f32) as f64),
        NumpyDtype::Float { .. } => Num::F(rd!(f64)),
        _ => return None,
    })
}

/// `elems` elements of `from` in `data` appended to `out` as native `to` elements, each converted
/// exactly; else `out` as it was and the index of the first that does not fit.
pub(crate) fn convert_elems(
    from: &NumpyDtype,
    to: &NumpyDtype,
    data: &[u8],
    elems: usize,
    out: &mut MutableBuffer,
) -> std::result::Result<(), usize> {
    let start = out.len();
    for (i, d) in data.chunks_exact(from.itemsize()).take(elems).enumerate() {
        if !num_at(from, d).is_some_and(|n| put_num(to, n, out)) {
            out.truncate(start);
            return Err(i);
        }
    }
    Ok(())
}

/// The error for element `i` of an ndarray of `from` that a column of `to` cannot hold exactly.
pub(crate) fn inexact_element(i: usize, from: &NumpyDtype, to: &NumpyDtype) -> ErrorKind {
    ErrorKind::Inexact(format!(
        "element {i} of this {} ndarray does not fit {} exactly",
        from.to_dtype_str(),
        to.to_dtype_str()
    ))
}

/// Append `n` to a buffer of native `col` elements, converted exactly; false when it does not fit.
pub(crate) fn put_num(col: &NumpyDtype, n: Num, out: &mut MutableBuffer) -> bool {
    macro_rules! put {
        ($t:ty) => {
            match <$t>::from_num(n) {
                Some(v) => {
                    out.push(v);
                    true
                }
                None => false,
            }
        };
    }
    match col {
        NumpyDtype::Bool => match u8::from_num(n) {
            Some(v @ (0 | 1)) => {
                out.push(v);
                true
            }
            _ => false,
        },
        NumpyDtype::Int {
            size: 1,
            signed: true,
            ..
        } => put!(i8),
        NumpyDtype::Int {
            size: 2,
            signed: true,
            ..
        } => put!(i16),
        NumpyDtype::Int {
            size: 4,
            signed: true,
            ..
        } => put!(i32),
        NumpyDtype::Int {
            size: 8,
            signed: true,
            ..
        } => put!(i64),
        NumpyDtype::Int { size: 1, .. } => put!(u8),
        NumpyDtype::Int { size: 2, .. } => put!(u16),
        NumpyDtype::Int { size: 4, .. } => put!(u32),
        NumpyDtype::Int { .. } => put!(u64),
        NumpyDtype::Float { size: 2, .. } => put!(half::f16),
        NumpyDtype::Float { size: 4, .. } => put!(f32),
        NumpyDtype::Float { .. } => put!(f64),
        _ => false,
    }
}

/// Exact conversion of a number into a column's native type.
pub(crate) trait FromNum: Sized {
    fn from_num(n: Num) -> Option<Self>;
    /// float32 read bit-exactly (no round trip through f64 for f32 columns)
    fn from_f32(v: f32) -> Option<Self> {
        Self::from_num(Num::F(v as f64))
    }
}

macro_rules! int_from_num {
    ($($t:ty),*) => {$(
        impl FromNum for $t {
            fn from_num(n: Num) -> Option<Self> {
                match n {
                    Num::I(v) => <$t>::try_from(v).ok(),
                    Num::U(v) => <$t>::try_from(v).ok(),
                    Num::F(v) if v.fract() == 0.0 && v >= <$t>::MIN as f64 && v <= <$t>::MAX as f64 => Some(v as $t),
                    Num::F(_) => None,
                }
            }
        }
    )*};
}

int_from_num!(i8, i16, i32, i64, u8, u16, u32, u64);

impl FromNum for f64 {
    fn from_num(n: Num) -> Option<Self> {
        Some(n.as_f64())
    }
}

/// Whether an int is exactly a float64: where inference widened ints to Float64 (a float beside
/// them), 2^53 + 1 or 2^64 - 1 must not be rounded silently. (A column the caller typed float
/// takes ints rounded, as numpy's `float()` does.)
fn exact_f64(n: Num) -> bool {
    // (a float of this magnitude converts to i128 exactly)
    match n {
        Num::I(v) => (v as f64) as i128 == v as i128,
        Num::U(v) => (v as f64) as i128 == v as i128,
        Num::F(_) => true,
    }
}

/// `v` as a narrower float `w`: rounded to the nearest, but never a finite value made infinite.
fn narrowed<W: Into<f64> + Copy>(v: f64, w: W) -> Option<W> {
    (w.into().is_finite() || !v.is_finite()).then_some(w)
}

impl FromNum for f32 {
    fn from_num(n: Num) -> Option<Self> {
        let v = n.as_f64();
        narrowed(v, v as f32)
    }
    fn from_f32(v: f32) -> Option<Self> {
        Some(v)
    }
}

impl FromNum for half::f16 {
    fn from_num(n: Num) -> Option<Self> {
        let v = n.as_f64();
        narrowed(v, half::f16::from_f64(v))
    }
}

impl<T: ArrowPrimitiveType> PrimDecoder<T> {
    /// Room for `n` more elements, and the null value written into all of the spare capacity.
    #[cold]
    fn zero_ahead(&mut self, n: usize) {
        self.v.reserve(n);
        let len = self.v.len();
        let spare = self.v.spare_capacity_mut();
        spare.fill(std::mem::MaybeUninit::new(T::Native::default()));
        self.zeroed = len + spare.len();
        self.zeroed_for = self.v.capacity();
    }
}

pub(crate) struct PrimDecoder<T: ArrowPrimitiveType> {
    pub(crate) v: Vec<T::Native>,
    /// `v`'s spare capacity holds zeros (the null value) up to this many elements while its
    /// capacity is `zeroed_for`: nulls there are appended by moving the length, not by a
    /// `memset` call per run of nulls (most of a sparse table's columns)
    zeroed: usize,
    zeroed_for: usize,
    pub(crate) nulls: Validity,
    pub(crate) ctx: Ctx,
    /// which msgpack numbers the column takes: where its type was inferred, those inference
    /// gives it (ints into ints and Float64, float32 into floats, float64 into Float64), so a
    /// row another read would call a conflict is one here too; where the caller typed it, any
    /// number that fits
    ints: bool,
    f32s: bool,
    f64s: bool,
    /// ints only where a float64 holds them exactly (an inferred Float64 column: [`exact_f64`])
    exact_ints: bool,
}

impl<T: ArrowPrimitiveType> PrimDecoder<T> {
    pub(crate) fn new(ctx: &Ctx) -> Self {
        let t = T::DATA_TYPE;
        let any = ctx.convert;
        PrimDecoder {
            v: Vec::new(),
            zeroed: 0,
            zeroed_for: 0,
            nulls: Validity::default(),
            ctx: ctx.clone(),
            ints: any || t.is_integer() || t == DataType::Float64,
            f32s: any || matches!(t, DataType::Float32 | DataType::Float64),
            f64s: any || t == DataType::Float64,
            exact_ints: !any && t == DataType::Float64,
        }
    }
}

impl<T: ArrowPrimitiveType> ArrayDecoder for PrimDecoder<T>
where
    T::Native: FromNum,
{
    #[inline]
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        let p = c.pos();
        // positive fixints and float64s from the marker byte at once, and other integers
        // straight from the cursor (the common cases; the general path looks the kind up first)
        let buf = c.buf();
        let quick = match buf.get(p) {
            Some(&b @ 0x00..=0x7f) if self.ints => Some((T::Native::from_num(Num::I(b as i64)), 1)),
            Some(0xcb) if self.f64s => buf
                .get(p + 1..p + 9)
                .and_then(|s| s.try_into().ok())
                .map(|s: [u8; 8]| (T::Native::from_num(Num::F(f64::from_be_bytes(s))), 9)),
            _ => None,
        };
        let int_marker = self.ints && matches!(buf.get(p), Some(0xcc..=0xd3 | 0xe0..=0xff));
        let v = match quick {
            Some((v, n)) => {
                c.set_pos(p + n);
                v
            }
            None => match if int_marker {
                Kind::Int
            } else {
                c.peek_kind()?
            } {
                Kind::Int if self.ints => {
                    let n = match c.read_int()? {
                        Int::I(v) => Num::I(v),
                        Int::U(v) => Num::U(v),
                    };
                    if self.exact_ints && !exact_f64(n) {
                        None
                    } else {
                        T::Native::from_num(n)
                    }
                }
                Kind::F64 if self.f64s => T::Native::from_num(Num::F(c.read_f64()?)),
                Kind::F32 if self.f32s => T::Native::from_f32(c.read_f32()?),
                // Python's bool is an int (a column given a numeric type: schema overrides)
                Kind::Bool if self.ctx.convert => {
                    T::Native::from_num(Num::I(c.read_bool()? as i64))
                }
                Kind::Nil => {
                    c.read_nil()?;
                    self.append_null();
                    return Ok(());
                }
                Kind::Map if self.ctx.convert => {
                    T::Native::from_num(numpy_scalar(c, &self.ctx, &T::DATA_TYPE.to_string())?)
                }
                _ => return Err(found(c, &T::DATA_TYPE.to_string())),
            },
        };
        match v {
            Some(v) => {
                self.v.push(v);
                self.nulls.append_valid();
                Ok(())
            }
            None => {
                let mut what = format!("value does not fit {} exactly", T::DATA_TYPE);
                if T::DATA_TYPE.is_floating() && matches!(c.buf().get(p), Some(0xcc..=0xd3)) {
                    // where ints and floats met, inference made the column Float64
                    what.push_str(
                        " (an int that no float holds exactly, in a column of ints and floats: \
                         schema_overrides String keeps each value as Python's str() writes it, Float64 rounds \
                         it as numpy does)",
                    );
                }
                Err(c.error_at(p, ErrorKind::Inexact(what)))
            }
        }
    }
    fn decode_n(&mut self, c: &mut Cursor<'_>, n: usize) -> Result<()> {
        // (a list's length is the writer's word: room for no more than its bytes can hold)
        self.reserve(n.min(c.buf().len() - c.pos()));
        for _ in 0..n {
            self.decode(c)?;
        }
        Ok(())
    }
    fn append_null(&mut self) {
        self.v.push(T::Native::default());
        self.nulls.append_nulls(1);
    }
    fn append_nulls(&mut self, n: usize) {
        let end = self.v.len() + n;
        if end > self.zeroed || self.v.capacity() != self.zeroed_for {
            self.zero_ahead(n);
        }
        // SAFETY: up to `self.zeroed` (at least `end`, within the capacity) the elements were
        // written by `zero_ahead` in this allocation (its capacity is the one zeroed for), and
        // nothing has written them since: values are pushed at the end only
        unsafe { self.v.set_len(end) };
        self.nulls.append_nulls(n);
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let v = std::mem::take(&mut self.v);
        (self.zeroed, self.zeroed_for) = (0, 0);
        Ok(Arc::new(PrimitiveArray::<T>::new(
            ScalarBuffer::from(v),
            self.nulls.finish(),
        )))
    }
    fn reserve(&mut self, rows: usize) {
        self.v.reserve(rows);
        self.nulls.reserve(rows);
    }
}
