//! One decoder per Arrow type, chosen once per column by [`make_decoder`] from the field (its type
//! and msgpack-numpy metadata). Decoders read straight from the msgpack bytes: no value tree; a
//! tensor's bytes are copied once, into the column's single values buffer.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBufferBuilder};
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{MutableBuffer, NullBuffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit};

use crate::error::{Error, ErrorKind, Result};
use crate::options::Dialect;
use crate::types::buffers::{extend_native, native, to_arrow};
use crate::types::{meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::ndarray::{probe, NdArray, Special};

/// The error for a key the schema does not have (when that is an error: `Ctx::strict_keys`).
pub(crate) fn unknown_key(name: &str, ctx: &Ctx) -> ErrorKind {
    ErrorKind::Key(if ctx.given_schema {
        format!("key {name:?} is not in the schema the reader was given")
    } else {
        format!("key {name:?} is not in the schema, which was inferred from the first rows; infer from more rows (infer_rows=None) or pass a schema")
    })
}

/// Settings every decoder needs.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub dialect: Dialect,
    pub max_depth: usize,
    /// Keys not in the schema are errors (the schema was inferred from a sample, or given with
    /// `with_strict_schema`) rather than skipped.
    pub strict_keys: bool,
    /// the schema was given, not inferred (for the message of an unknown key)
    pub given_schema: bool,
}

/// Decodes values of one column, appending them; `finish` returns the batch's array and resets.
pub(crate) trait ArrayDecoder: Send {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()>;
    fn append_null(&mut self);
    fn finish(&mut self) -> Result<ArrayRef>;
    /// Room for `rows` more rows: big buffers are allocated once, at their final size.
    fn reserve(&mut self, _rows: usize) {}
}

fn found(c: &Cursor<'_>, want: &str) -> Error {
    let got = match c.peek_kind() {
        Ok(Kind::Map) => "map".to_string(),
        Ok(k) => format!("{k:?}").to_lowercase(),
        Err(e) => return e,
    };
    c.error(ErrorKind::TypeConflict(format!(
        "expected {want}, found {got}"
    )))
}

/// Build the decoder for a field.
pub(crate) fn make_decoder(field: &Field, ctx: &Ctx) -> Result<Box<dyn ArrayDecoder>> {
    let md = field.metadata();
    let t = field.data_type();
    match md.get(meta::KIND).map(String::as_str) {
        Some("ndarray" | "scalar") => {
            let dt = md
                .get(meta::DTYPE)
                .ok_or_else(|| {
                    Error::new(ErrorKind::Layout(format!(
                        "field {:?} has no {} metadata",
                        field.name(),
                        meta::DTYPE
                    )))
                })
                .and_then(|s| NumpyDtype::from_metadata(s))?;
            return Ok(Box::new(TensorDecoder::new(dt, field, ctx)?));
        }
        Some("object") => {
            return Ok(Box::new(ObjectDecoder {
                b: BinaryBuilder::new(),
                ctx: ctx.clone(),
            }))
        }
        Some("complex") => {
            let dt = NumpyDtype::parse(
                if matches!(t, DataType::FixedSizeList(f, 2) if f.data_type() == &DataType::Float32)
                {
                    "<c8"
                } else {
                    "<c16"
                },
            )?;
            return Ok(Box::new(TensorDecoder::new(dt, field, ctx)?));
        }
        _ => {}
    }
    Ok(match t {
        DataType::Null => Box::new(NullDecoder { n: 0 }),
        DataType::Boolean => Box::new(BoolDecoder {
            v: BooleanBufferBuilder::new(0),
            nulls: NullBufferBuilder::new(0),
            ctx: ctx.clone(),
        }),
        DataType::Int8 => Box::new(PrimDecoder::<Int8Type>::new(ctx)),
        DataType::Int16 => Box::new(PrimDecoder::<Int16Type>::new(ctx)),
        DataType::Int32 => Box::new(PrimDecoder::<Int32Type>::new(ctx)),
        DataType::Int64 => Box::new(PrimDecoder::<Int64Type>::new(ctx)),
        DataType::UInt8 => Box::new(PrimDecoder::<UInt8Type>::new(ctx)),
        DataType::UInt16 => Box::new(PrimDecoder::<UInt16Type>::new(ctx)),
        DataType::UInt32 => Box::new(PrimDecoder::<UInt32Type>::new(ctx)),
        DataType::UInt64 => Box::new(PrimDecoder::<UInt64Type>::new(ctx)),
        DataType::Float16 => Box::new(PrimDecoder::<Float16Type>::new(ctx)),
        DataType::Float32 => Box::new(PrimDecoder::<Float32Type>::new(ctx)),
        DataType::Float64 => Box::new(PrimDecoder::<Float64Type>::new(ctx)),
        DataType::Utf8 => Box::new(BytesDecoder {
            b: BinaryBuilder::new(),
            utf8: true,
            ctx: ctx.clone(),
        }),
        DataType::Binary => Box::new(BytesDecoder {
            b: BinaryBuilder::new(),
            utf8: false,
            ctx: ctx.clone(),
        }),
        DataType::Timestamp(unit, tz) => Box::new(TimestampDecoder {
            unit: *unit,
            tz: tz.clone(),
            v: Vec::new(),
            nulls: NullBufferBuilder::new(0),
            ctx: ctx.clone(),
        }),
        DataType::List(item) => Box::new(ListDecoder {
            item: item.clone(),
            child: make_decoder(item, ctx).map_err(|e| e.prepend_path("[]"))?,
            offsets: vec![0],
            nulls: NullBufferBuilder::new(0),
            ctx: ctx.clone(),
        }),
        DataType::Struct(fields) => Box::new(StructDecoder::new(fields.clone(), None, ctx)?),
        DataType::FixedSizeList(..) => {
            // A tensor column without metadata (e.g. from a user schema): native little-endian dtype.
            let mut elem = t;
            while let DataType::FixedSizeList(f, _) = elem {
                elem = f.data_type();
            }
            let dt = native_dtype_of(elem).ok_or_else(|| {
                Error::new(ErrorKind::Unsupported(format!(
                    "cannot decode msgpack into {t}"
                )))
            })?;
            Box::new(TensorDecoder::new(dt, field, ctx)?)
        }
        other => {
            return Err(Error::new(ErrorKind::Unsupported(format!(
                "cannot decode msgpack into Arrow type {other}"
            ))))
        }
    })
}

/// The numpy dtype whose elements are exactly this Arrow primitive, in native order.
pub(crate) fn native_dtype_of(t: &DataType) -> Option<NumpyDtype> {
    let s = match t {
        DataType::Boolean => "|b1",
        DataType::Int8 => "|i1",
        DataType::Int16 => "<i2",
        DataType::Int32 => "<i4",
        DataType::Int64 => "<i8",
        DataType::UInt8 => "|u1",
        DataType::UInt16 => "<u2",
        DataType::UInt32 => "<u4",
        DataType::UInt64 => "<u8",
        DataType::Float16 => "<f2",
        DataType::Float32 => "<f4",
        DataType::Float64 => "<f8",
        _ => return None,
    };
    NumpyDtype::parse(s).ok().map(|d| native(&d))
}

// ---------------------------------------------------------------------------------------------
// nil, bool, numbers, strings, timestamps

struct NullDecoder {
    n: usize,
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
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(NullArray::new(std::mem::take(&mut self.n))))
    }
}

struct BoolDecoder {
    v: BooleanBufferBuilder,
    nulls: NullBufferBuilder,
    ctx: Ctx,
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
            Kind::Map => {
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
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(BooleanArray::new(
            self.v.finish(),
            self.nulls.finish(),
        )))
    }
}

/// A number read from msgpack or from a numpy scalar.
#[derive(Clone, Copy)]
enum Num {
    I(i64),
    U(u64),
    F(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::I(v) => v as f64,
            Num::U(v) => v as f64,
            Num::F(v) => v,
        }
    }
}

/// Read a numpy scalar or 0-d array of a numeric/bool dtype at the cursor.
fn numpy_scalar(c: &mut Cursor<'_>, ctx: &Ctx, want: &str) -> Result<Num> {
    let start = c.pos();
    let nd = match probe(c, ctx.dialect, ctx.max_depth)? {
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
fn num_at(dt: &NumpyDtype, d: &[u8]) -> Option<Num> {
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

/// Append `n` to a buffer of native `col` elements, converted exactly; false when it does not fit.
fn put_num(col: &NumpyDtype, n: Num, out: &mut MutableBuffer) -> bool {
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
trait FromNum: Sized {
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
impl FromNum for f32 {
    fn from_num(n: Num) -> Option<Self> {
        Some(n.as_f64() as f32)
    }
    fn from_f32(v: f32) -> Option<Self> {
        Some(v)
    }
}
impl FromNum for half::f16 {
    fn from_num(n: Num) -> Option<Self> {
        Some(half::f16::from_f64(n.as_f64()))
    }
}

struct PrimDecoder<T: ArrowPrimitiveType> {
    v: Vec<T::Native>,
    nulls: NullBufferBuilder,
    ctx: Ctx,
}

impl<T: ArrowPrimitiveType> PrimDecoder<T> {
    fn new(ctx: &Ctx) -> Self {
        PrimDecoder {
            v: Vec::new(),
            nulls: NullBufferBuilder::new(0),
            ctx: ctx.clone(),
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
        let v = match c.peek_kind()? {
            Kind::Int => match c.read_int()? {
                Int::I(v) => T::Native::from_num(Num::I(v)),
                Int::U(v) => T::Native::from_num(Num::U(v)),
            },
            Kind::F64 => T::Native::from_num(Num::F(c.read_f64()?)),
            Kind::F32 => T::Native::from_f32(c.read_f32()?),
            // Python's bool is an int (a column given a numeric type: schema overrides)
            Kind::Bool => T::Native::from_num(Num::I(c.read_bool()? as i64)),
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
                return Ok(());
            }
            Kind::Map => {
                T::Native::from_num(numpy_scalar(c, &self.ctx, &T::DATA_TYPE.to_string())?)
            }
            _ => return Err(found(c, &T::DATA_TYPE.to_string())),
        };
        match v {
            Some(v) => {
                self.v.push(v);
                self.nulls.append_non_null();
                Ok(())
            }
            None => Err(c.error_at(
                p,
                ErrorKind::TypeConflict(format!("value does not fit {} exactly", T::DATA_TYPE)),
            )),
        }
    }
    fn append_null(&mut self) {
        self.v.push(T::Native::default());
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let v = std::mem::take(&mut self.v);
        Ok(Arc::new(PrimitiveArray::<T>::new(
            ScalarBuffer::from(v),
            self.nulls.finish(),
        )))
    }
    fn reserve(&mut self, rows: usize) {
        self.v.reserve(rows);
    }
}

struct BytesDecoder {
    b: BinaryBuilder,
    utf8: bool,
    ctx: Ctx,
}

impl ArrayDecoder for BytesDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Str if self.utf8 => {
                let s = c.read_str()?;
                self.b.append_value(s);
            }
            // old writers used raw (str) for bytes
            Kind::Str | Kind::Bin if !self.utf8 => {
                let (b, _) = c.read_str_or_bin()?;
                self.b.append_value(b);
            }
            Kind::Nil => {
                c.read_nil()?;
                self.b.append_null();
            }
            // a column given the String type (schema overrides): scalars as Python's str() writes them
            Kind::Int | Kind::F32 | Kind::F64 | Kind::Bool if self.utf8 => {
                let mut s = String::new();
                match c.peek_kind()? {
                    Kind::Int => match c.read_int()? {
                        Int::I(v) => s = v.to_string(),
                        Int::U(v) => s = v.to_string(),
                    },
                    Kind::Bool => s.push_str(if c.read_bool()? { "True" } else { "False" }),
                    k => {
                        let x = if k == Kind::F32 {
                            c.read_f32()? as f64
                        } else {
                            c.read_f64()?
                        };
                        crate::wire::pyrepr::py_float_repr(x, false, &mut s);
                        if x.is_finite() && !s.contains(['.', 'e']) {
                            s.push_str(".0");
                        }
                    }
                }
                self.b.append_value(s);
            }
            Kind::Map => {
                // a 0-d U/S array
                let start = c.pos();
                let Some(Special::Array(nd)) = probe(c, self.ctx.dialect, self.ctx.max_depth)?
                else {
                    c.set_pos(start);
                    return Err(found(c, if self.utf8 { "str" } else { "bin" }));
                };
                let dt = nd.parse_dtype(c.offset_of(nd.type_pos))?;
                nd.check_len(&dt, c.offset_of(0))?;
                let ok = matches!(
                    (&dt, self.utf8),
                    (NumpyDtype::Unicode { .. }, true) | (NumpyDtype::Bytes { .. }, false)
                );
                if !ok || nd.len != 1 {
                    c.set_pos(start);
                    return Err(c.error(ErrorKind::TypeConflict(format!(
                        "expected a string, found ndarray {}",
                        dt.to_dtype_str()
                    ))));
                }
                let a = to_arrow(&dt, arrow_buffer::Buffer::from(&*nd.data), 1, false, None)?;
                let a = a
                    .as_any()
                    .downcast_ref::<GenericByteArray<GenericStringType<i32>>>()
                    .map(|s| s.value(0).as_bytes().to_vec())
                    .or_else(|| {
                        a.as_any()
                            .downcast_ref::<BinaryArray>()
                            .map(|s| s.value(0).to_vec())
                    })
                    .unwrap_or_default();
                self.b.append_value(a);
            }
            _ => return Err(found(c, if self.utf8 { "str" } else { "bin" })),
        }
        Ok(())
    }
    fn append_null(&mut self) {
        self.b.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let a = self.b.finish();
        Ok(if self.utf8 {
            let (offsets, values, nulls) = a.into_parts();
            // SAFETY: every value appended was checked to be UTF-8 (read_str or numpy U decoding).
            Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
        } else {
            Arc::new(a)
        })
    }
}

struct TimestampDecoder {
    unit: TimeUnit,
    tz: Option<Arc<str>>,
    v: Vec<i64>,
    nulls: NullBufferBuilder,
    ctx: Ctx,
}

/// msgpack timestamp ext payload → (seconds, nanoseconds).
pub(crate) fn parse_timestamp(d: &[u8]) -> Option<(i64, u32)> {
    match d.len() {
        4 => Some((u32::from_be_bytes(d.try_into().ok()?) as i64, 0)),
        8 => {
            let v = u64::from_be_bytes(d.try_into().ok()?);
            Some(((v & 0x3_ffff_ffff) as i64, (v >> 34) as u32))
        }
        12 => Some((
            i64::from_be_bytes(d[4..].try_into().ok()?),
            u32::from_be_bytes(d[..4].try_into().ok()?),
        )),
        _ => None,
    }
}

impl ArrayDecoder for TimestampDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
                Ok(())
            }
            Kind::Ext => {
                let p = c.pos();
                let (t, d) = c.read_ext()?;
                let bad = |m: &str| c.error_at(p, ErrorKind::InvalidMsgpack(m.to_string()));
                let (s, ns) = if t == -1 {
                    parse_timestamp(d).ok_or_else(|| bad("timestamp ext of wrong length"))?
                } else {
                    return Err(bad(&format!(
                        "expected a timestamp (ext -1), found ext {t}"
                    )));
                };
                if ns >= 1_000_000_000 {
                    return Err(bad("timestamp nanoseconds out of range"));
                }
                let v = match self.unit {
                    TimeUnit::Second => Some(s),
                    TimeUnit::Millisecond => s.checked_mul(1_000).and_then(|v| v.checked_add(ns as i64 / 1_000_000)),
                    TimeUnit::Microsecond => s.checked_mul(1_000_000).and_then(|v| v.checked_add(ns as i64 / 1_000)),
                    TimeUnit::Nanosecond => s.checked_mul(1_000_000_000).and_then(|v| v.checked_add(ns as i64)),
                }
                .ok_or_else(|| bad("timestamp out of the range of Timestamp(ns); pass a schema with a coarser unit"))?;
                self.v.push(v);
                self.nulls.append_non_null();
                let _ = &self.ctx;
                Ok(())
            }
            _ => Err(found(c, "timestamp (ext -1)")),
        }
    }
    fn append_null(&mut self) {
        self.v.push(0);
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let v = ScalarBuffer::from(std::mem::take(&mut self.v));
        let n = self.nulls.finish();
        Ok(match self.unit {
            TimeUnit::Second => {
                Arc::new(TimestampSecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
            TimeUnit::Millisecond => {
                Arc::new(TimestampMillisecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
            TimeUnit::Microsecond => {
                Arc::new(TimestampMicrosecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
            TimeUnit::Nanosecond => {
                Arc::new(TimestampNanosecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
        })
    }
}

/// Object arrays kept as raw pickle bytes (opt-in; never unpickled).
struct ObjectDecoder {
    b: BinaryBuilder,
    ctx: Ctx,
}

impl ArrayDecoder for ObjectDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if c.peek_kind()? == Kind::Nil {
            c.read_nil()?;
            self.b.append_null();
            return Ok(());
        }
        let start = c.pos();
        match probe(c, self.ctx.dialect, self.ctx.max_depth)? {
            Some(Special::Array(nd)) if nd.kind == Some(b"O") => {
                self.b.append_value(nd.data);
                Ok(())
            }
            _ => {
                c.set_pos(start);
                Err(found(c, "object ndarray"))
            }
        }
    }
    fn append_null(&mut self) {
        self.b.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(self.b.finish()))
    }
}

// ---------------------------------------------------------------------------------------------
// lists and maps

struct ListDecoder {
    item: FieldRef,
    child: Box<dyn ArrayDecoder>,
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
    ctx: Ctx,
}

impl ArrayDecoder for ListDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
            }
            Kind::Array => {
                let n = c.read_array_len()?;
                for _ in 0..n {
                    self.child.decode(c)?;
                }
                let last = *self.offsets.last().unwrap_or(&0);
                let next = i32::try_from(n)
                    .ok()
                    .and_then(|n| last.checked_add(n))
                    .ok_or_else(|| {
                        c.error(ErrorKind::Layout(
                            "more than 2^31 list items in one batch; use a smaller batch size"
                                .into(),
                        ))
                    })?;
                self.offsets.push(next);
                self.nulls.append_non_null();
            }
            _ => return Err(found(c, "array")),
        }
        let _ = self.ctx.max_depth;
        Ok(())
    }
    fn append_null(&mut self) {
        let last = *self.offsets.last().unwrap_or(&0);
        self.offsets.push(last);
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let values = self.child.finish()?;
        Ok(Arc::new(ListArray::try_new(
            self.item.clone(),
            OffsetBuffer::new(offsets.into()),
            values,
            self.nulls.finish(),
        )?))
    }
}

/// Sentinel for keys that are known but not decoded (projected out).
const SKIP: usize = usize::MAX;

/// Decodes maps into a struct: used for nested maps and for the records of the `records` layout.
pub(crate) struct StructDecoder {
    fields: Fields,
    names: Vec<Box<[u8]>>,
    /// decoder per field; `None` for fields projected out
    children: Vec<Option<Box<dyn ArrayDecoder>>>,
    lookup: HashMap<Box<[u8]>, usize>,
    /// `stamp[i] == gen`: field i was seen in the current map (missing ones become null; twice is an error)
    stamp: Vec<u64>,
    gen: u64,
    nulls: NullBufferBuilder,
    len: usize,
    ctx: Ctx,
}

impl StructDecoder {
    /// `projection`: names to decode (others are skipped); `None`: all.
    pub(crate) fn new(fields: Fields, projection: Option<&[String]>, ctx: &Ctx) -> Result<Self> {
        let mut children = Vec::with_capacity(fields.len());
        for f in fields.iter() {
            let wanted = projection.is_none_or(|p| p.iter().any(|n| n == f.name()));
            children.push(if wanted {
                Some(make_decoder(f, ctx).map_err(|e| e.prepend_path(f.name()))?)
            } else {
                None
            });
        }
        let names: Vec<Box<[u8]>> = fields.iter().map(|f| f.name().as_bytes().into()).collect();
        let lookup = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        Ok(StructDecoder {
            stamp: vec![0; fields.len()],
            fields,
            names,
            children,
            lookup,
            gen: 0,
            nulls: NullBufferBuilder::new(0),
            len: 0,
            ctx: ctx.clone(),
        })
    }

    /// The fields that are decoded (projection applied).
    pub(crate) fn output_fields(&self) -> Fields {
        self.fields
            .iter()
            .zip(&self.children)
            .filter(|(_, c)| c.is_some())
            .map(|(f, _)| f.clone())
            .collect()
    }

    /// Decode one map.
    #[inline]
    pub(crate) fn decode_map(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        let n = match c.peek_kind()? {
            Kind::Map => c.read_map_len()?,
            _ => return Err(found(c, "map")),
        };
        self.gen += 1;
        for i in 0..n {
            let kp = c.pos();
            let key = match c.peek_kind()? {
                Kind::Str | Kind::Bin => c.read_str_or_bin()?.0,
                _ => {
                    c.set_pos(kp);
                    crate::read::infer::read_key(c)?;
                    unreachable!("read_key errors on non-string keys")
                }
            };
            // records usually repeat the key order: try the same position first
            let col = if self.names.get(i).is_some_and(|k| **k == *key) {
                i
            } else {
                match self.lookup.get(key) {
                    Some(&j) => j,
                    None => {
                        let name = std::str::from_utf8(key).map_err(|_| {
                            c.error_at(
                                kp,
                                ErrorKind::Key(format!(
                                    "key {:?} is not valid UTF-8",
                                    String::from_utf8_lossy(key)
                                )),
                            )
                        })?;
                        if self.ctx.strict_keys {
                            return Err(c.error_at(kp, unknown_key(name, &self.ctx)));
                        }
                        c.skip(self.ctx.max_depth)?;
                        continue;
                    }
                }
            };
            if self.stamp[col] == self.gen {
                return Err(c.error_at(
                    kp,
                    ErrorKind::Key(format!(
                        "duplicate key {:?} in one map",
                        String::from_utf8_lossy(key)
                    )),
                ));
            }
            self.stamp[col] = self.gen;
            match &mut self.children[col] {
                Some(d) => d
                    .decode(c)
                    .map_err(|e| e.prepend_path(self.fields[col].name()))?,
                None => c.skip(self.ctx.max_depth)?,
            }
            let _ = SKIP;
        }
        for (i, ch) in self.children.iter_mut().enumerate() {
            if self.stamp[i] != self.gen {
                if let Some(d) = ch {
                    d.append_null();
                }
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Finish the decoded columns (for a batch).
    pub(crate) fn finish_columns(&mut self) -> Result<Vec<ArrayRef>> {
        self.len = 0;
        let mut out = Vec::new();
        for (f, ch) in self.fields.iter().zip(self.children.iter_mut()) {
            if let Some(d) = ch {
                out.push(d.finish().map_err(|e| e.prepend_path(f.name()))?);
            }
        }
        Ok(out)
    }

    pub(crate) fn reserve_rows(&mut self, rows: usize) {
        for d in self.children.iter_mut().flatten() {
            d.reserve(rows);
        }
    }
}

impl ArrayDecoder for StructDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if c.peek_kind()? == Kind::Nil {
            c.read_nil()?;
            self.append_null();
            return Ok(());
        }
        self.decode_map(c)?;
        self.nulls.append_non_null();
        Ok(())
    }
    fn append_null(&mut self) {
        for d in self.children.iter_mut().flatten() {
            d.append_null();
        }
        self.len += 1;
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let n = self.len;
        let cols = self.finish_columns()?;
        let nulls = self.nulls.finish();
        let fields = self.output_fields();
        if fields.is_empty() {
            return Ok(Arc::new(StructArray::new_empty_fields(n, nulls)));
        }
        Ok(Arc::new(StructArray::try_new(fields, cols, nulls)?))
    }
    fn reserve(&mut self, rows: usize) {
        self.reserve_rows(rows);
    }
}

// ---------------------------------------------------------------------------------------------
// tensors: ndarrays, numpy scalars, complex

/// How a tensor column is laid out in Arrow.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Repr {
    /// nested FixedSizeList (fixed) or nested List (ragged); the element type alone for 0-d
    Nested,
    /// `arrow.fixed_shape_tensor`: FixedSizeList of the flattened row
    FixedTensor,
    /// `arrow.variable_shape_tensor`: Struct{data: List, shape: FixedSizeList<Int32>}
    VarTensor,
}

/// The header bytes of the last ndarray map (everything up to the data payload): when the next
/// row's map starts with the same bytes, dtype, shape and data length are the same, so the row is
/// one compare and one copy.
struct FastPath {
    header: Vec<u8>,
    data_len: usize,
    /// elements in the payload (from the shape: `data_len / itemsize` fails for `U0`)
    n_elems: usize,
    swap_dt: NumpyDtype,
    /// the shape the header holds (not the previous row's dims: those are gone after a batch
    /// ends, and zeros after a null row)
    shape: Vec<usize>,
}

pub(crate) struct TensorDecoder {
    /// dtype of the column (metadata), and the same in native order (what the buffer holds)
    dt: NumpyDtype,
    native_dt: NumpyDtype,
    item: usize,
    /// per-axis length; `None` where rows differ (ragged)
    shape: Vec<Option<usize>>,
    fixed: Option<Vec<usize>>,
    row_bytes: usize,
    repr: Repr,
    field: Field,
    buf: MutableBuffer,
    nulls: NullBufferBuilder,
    rows: usize,
    elems: usize,
    /// ragged: the shape of every row, `ndim` entries each
    dims: Vec<usize>,
    dtype_cache: Vec<(Vec<u8>, NumpyDtype)>,
    fast: Option<FastPath>,
    ctx: Ctx,
}

impl TensorDecoder {
    pub(crate) fn new(dt: NumpyDtype, field: &Field, ctx: &Ctx) -> Result<Self> {
        let elem = dt.arrow_type()?;
        let md = field.metadata();
        let (shape, repr): (Vec<Option<usize>>, Repr) =
            match md.get(meta::EXTENSION_NAME).map(String::as_str) {
                Some("arrow.fixed_shape_tensor") => {
                    let v: serde_json::Value = md
                        .get(meta::EXTENSION_METADATA)
                        .and_then(|m| serde_json::from_str(m).ok())
                        .unwrap_or_default();
                    let dims = v["shape"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|d| d.as_u64().map(|d| Some(d as usize)))
                                .collect()
                        })
                        .unwrap_or_default();
                    (dims, Repr::FixedTensor)
                }
                Some("arrow.variable_shape_tensor") => {
                    let ndim = match field.data_type() {
                        DataType::Struct(f) => {
                            match f.find("shape").map(|(_, f)| f.data_type().clone()) {
                                Some(DataType::FixedSizeList(_, n)) => n as usize,
                                _ => 0,
                            }
                        }
                        _ => 0,
                    };
                    (vec![None; ndim], Repr::VarTensor)
                }
                _ => {
                    let mut shape = Vec::new();
                    let mut t = field.data_type();
                    while !same_structure(t, &elem) {
                        match t {
                            DataType::FixedSizeList(f, n) => {
                                shape.push(Some(*n as usize));
                                t = f.data_type();
                            }
                            DataType::List(f) | DataType::LargeList(f) => {
                                shape.push(None);
                                t = f.data_type();
                            }
                            _ => {
                                return Err(Error::new(ErrorKind::TypeConflict(format!(
                                    "field {:?} of type {} cannot hold ndarrays of {}",
                                    field.name(),
                                    field.data_type(),
                                    dt.to_dtype_str()
                                ))))
                            }
                        }
                    }
                    if shape.iter().any(|d| d.is_none()) {
                        shape.iter_mut().for_each(|d| *d = None);
                    }
                    (shape, Repr::Nested)
                }
            };
        let fixed: Option<Vec<usize>> = shape.iter().copied().collect();
        let item = dt.itemsize();
        let row_bytes = fixed
            .as_ref()
            .map_or(0, |f| f.iter().product::<usize>() * item);
        Ok(TensorDecoder {
            native_dt: native(&dt),
            dt,
            item,
            shape,
            fixed,
            row_bytes,
            repr,
            field: field.clone(),
            buf: MutableBuffer::new(0),
            nulls: NullBufferBuilder::new(0),
            rows: 0,
            elems: 0,
            dims: Vec::new(),
            dtype_cache: Vec::new(),
            fast: None,
            ctx: ctx.clone(),
        })
    }

    fn row_dtype(&mut self, nd: &NdArray<'_>, c: &Cursor<'_>) -> Result<NumpyDtype> {
        if let Some((_, d)) = self
            .dtype_cache
            .iter()
            .find(|(r, _)| r.as_slice() == nd.type_raw)
        {
            return Ok(d.clone());
        }
        let d = nd.parse_dtype(c.offset_of(nd.type_pos))?;
        // a narrower string array in a column of wider ones is padded to the column's width
        let narrower = match (d.text_width(), self.dt.text_width()) {
            (Some((u1, n1)), Some((u2, n2))) => u1 == u2 && n1 <= n2,
            _ => false,
        };
        // numbers of another numeric dtype are converted, element by element (`push_converted`)
        let numeric = |t: &NumpyDtype| {
            matches!(
                t,
                NumpyDtype::Bool | NumpyDtype::Int { .. } | NumpyDtype::Float { .. }
            )
        };
        let convertible = numeric(&d) && numeric(&self.dt);
        if !narrower && !convertible && native(&d) != self.native_dt {
            return Err(c.error_at(
                nd.type_pos,
                ErrorKind::TypeConflict(format!(
                    "ndarray of {} in a column of {}",
                    d.to_dtype_str(),
                    self.dt.to_dtype_str()
                )),
            ));
        }
        if self.dtype_cache.len() < 4 {
            self.dtype_cache.push((nd.type_raw.to_vec(), d.clone()));
        }
        Ok(d)
    }

    /// A row of another numeric dtype, each element converted exactly (else: its index).
    fn push_converted(
        &mut self,
        row_dt: &NumpyDtype,
        data: &[u8],
        n_elems: usize,
    ) -> std::result::Result<(), usize> {
        let ri = row_dt.itemsize();
        let start = self.buf.len();
        for i in 0..n_elems {
            let n = num_at(row_dt, &data[i * ri..(i + 1) * ri]).ok_or(i)?;
            if !put_num(&self.native_dt, n, &mut self.buf) {
                self.buf.truncate(start);
                return Err(i);
            }
        }
        self.elems += n_elems;
        self.rows += 1;
        self.nulls.append_non_null();
        Ok(())
    }

    fn push_row(&mut self, row_dt: &NumpyDtype, data: &[u8], n_elems: usize) {
        let bytes = n_elems * self.item;
        if self.buf.capacity() - self.buf.len() < bytes {
            // grow geometrically; fixed-shape columns were reserved at their final size
            let want = (self.buf.len() + bytes).max(self.buf.capacity() * 2);
            self.buf.reserve(want - self.buf.len());
        }
        let row_item = row_dt.itemsize();
        if row_item == self.item {
            extend_native(row_dt, data, &mut self.buf);
        } else {
            // a narrower U/S row: each element padded with NULs (which numpy strips anyway)
            for i in 0..n_elems {
                extend_native(
                    row_dt,
                    &data[i * row_item..(i + 1) * row_item],
                    &mut self.buf,
                );
                self.buf.extend_zeros(self.item - row_item);
            }
        }
        self.elems += n_elems;
        self.rows += 1;
        self.nulls.append_non_null();
    }
}

/// Type equality that ignores field names, nullability and metadata.
fn same_structure(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::FixedSizeList(x, n), DataType::FixedSizeList(y, m)) => {
            n == m && same_structure(x.data_type(), y.data_type())
        }
        (DataType::List(x), DataType::List(y)) => same_structure(x.data_type(), y.data_type()),
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter().zip(y.iter()).all(|(p, q)| {
                    p.name() == q.name() && same_structure(p.data_type(), q.data_type())
                })
        }
        _ => a == b,
    }
}

impl ArrayDecoder for TensorDecoder {
    #[inline]
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if let Some(f) = &self.fast {
            let rest = &c.buf()[c.pos()..];
            let h = f.header.len();
            if rest.len() >= h + f.data_len && rest[..h] == f.header[..] {
                let (data, dl) = (&rest[h..h + f.data_len], f.data_len);
                let n = f.n_elems;
                if self.fixed.is_none() {
                    // same header ⇒ the same shape
                    self.dims.extend_from_slice(&f.shape);
                }
                let sdt = f.swap_dt.clone();
                self.push_row(&sdt, data, n);
                c.set_pos(c.pos() + h + dl);
                return Ok(());
            }
        }
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
                return Ok(());
            }
            Kind::Map => {}
            _ => return Err(found(c, &format!("ndarray of {}", self.dt.to_dtype_str()))),
        }
        let start = c.pos();
        match probe(c, self.ctx.dialect, self.ctx.max_depth)? {
            Some(Special::Array(nd)) => {
                let row_dt = self.row_dtype(&nd, c)?;
                nd.check_len(&row_dt, c.offset_of(0))?;
                if nd.shape.len() != self.shape.len() {
                    return Err(c.error_at(
                        start,
                        ErrorKind::TypeConflict(format!(
                            "ndarray of shape {:?} in a column of {}-dimensional arrays",
                            nd.shape,
                            self.shape.len()
                        )),
                    ));
                }
                match &self.fixed {
                    Some(f) if *f != nd.shape => {
                        return Err(c.error_at(start, ErrorKind::TypeConflict(format!(
                            "ndarray of shape {:?} in a column of fixed shape {:?} (the schema was inferred from the first rows; infer from all rows or pass a schema with List axes)",
                            nd.shape, f
                        ))))
                    }
                    Some(_) => {}
                    None => self.dims.extend_from_slice(&nd.shape),
                }
                if row_dt.text_width().is_none() && native(&row_dt) != self.native_dt {
                    return self.push_converted(&row_dt, &nd.data, nd.len).map_err(|i| {
                        c.error_at(
                            start,
                            ErrorKind::TypeConflict(format!(
                                "element {i} of this {} ndarray does not fit {} exactly",
                                row_dt.to_dtype_str(),
                                self.dt.to_dtype_str()
                            )),
                        )
                    });
                }
                self.push_row(&row_dt, &nd.data, nd.len);
                let end = c.pos();
                // the fast path is valid when data is the map's last entry, as msgpack_numpy writes it
                if nd.in_place() && nd.data_pos + nd.data.len() == end {
                    self.fast = Some(FastPath {
                        header: c.buf()[start..nd.data_pos].to_vec(),
                        data_len: nd.data.len(),
                        n_elems: nd.len,
                        swap_dt: row_dt,
                        shape: nd.shape.clone(),
                    });
                }
                Ok(())
            }
            Some(Special::Complex(re, im))
                if self.shape.is_empty() && matches!(self.dt, NumpyDtype::Complex { .. }) =>
            {
                if let NumpyDtype::Complex { size: 8, .. } = self.dt {
                    let mut b = [0u8; 8];
                    b[..4].copy_from_slice(&(re as f32).to_ne_bytes());
                    b[4..].copy_from_slice(&(im as f32).to_ne_bytes());
                    let nd = self.native_dt.clone();
                    self.push_row(&nd, &b, 1);
                } else {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&re.to_ne_bytes());
                    b[8..].copy_from_slice(&im.to_ne_bytes());
                    let nd = self.native_dt.clone();
                    self.push_row(&nd, &b, 1);
                }
                Ok(())
            }
            _ => {
                c.set_pos(start);
                Err(found(c, &format!("ndarray of {}", self.dt.to_dtype_str())))
            }
        }
    }

    fn append_null(&mut self) {
        match &self.fixed {
            Some(f) => {
                self.buf.extend_zeros(self.row_bytes);
                // from the shape: the bytes say nothing for U0/S0 elements
                self.elems += f.iter().product::<usize>();
            }
            None => self.dims.extend(std::iter::repeat_n(0, self.shape.len())),
        }
        self.rows += 1;
        self.nulls.append_null();
    }

    fn reserve(&mut self, rows: usize) {
        if self.fixed.is_some() {
            let want = rows.saturating_mul(self.row_bytes);
            // cap what we trust up front: the rest grows as bytes really arrive
            if self.buf.capacity() == 0 {
                self.buf = MutableBuffer::new(want.min(1 << 31));
                crate::types::buffers::advise_huge_pages(&mut self.buf);
            } else {
                self.buf.reserve(want.min(1 << 31));
            }
        }
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        let rows = std::mem::take(&mut self.rows);
        let elems = std::mem::take(&mut self.elems);
        let buf = std::mem::replace(&mut self.buf, MutableBuffer::new(0));
        let nulls = self.nulls.finish();
        let dims = std::mem::take(&mut self.dims);
        let t = self.field.data_type().clone();
        if self.shape.is_empty() {
            return to_arrow(&self.native_dt, buf.into(), elems, true, nulls);
        }
        let values = to_arrow(&self.native_dt, buf.into(), elems, true, None)?;
        match (self.repr, &self.fixed) {
            (Repr::Nested, Some(_)) => nest_fixed(&t, values, nulls, rows),
            (Repr::FixedTensor, Some(_)) => match &t {
                DataType::FixedSizeList(f, n) => Ok(Arc::new(FixedSizeListArray::try_new(
                    f.clone(),
                    *n,
                    values,
                    nulls,
                )?)),
                _ => Err(Error::new(ErrorKind::Layout(format!(
                    "fixed_shape_tensor storage must be a FixedSizeList, not {t}"
                )))),
            },
            (Repr::Nested, None) => {
                let ndim = self.shape.len();
                let offsets = ragged_offsets(&dims, ndim, rows)?;
                nest_ragged(&t, values, offsets, nulls)
            }
            (Repr::VarTensor, _) => {
                let ndim = self.shape.len();
                let DataType::Struct(fields) = &t else {
                    unreachable!("checked in new")
                };
                let mut off = Vec::with_capacity(rows + 1);
                off.push(0i32);
                let mut acc = 0i64;
                for r in 0..rows {
                    acc += dims[r * ndim..(r + 1) * ndim].iter().product::<usize>() as i64;
                    off.push(i32::try_from(acc).map_err(|_| {
                        Error::new(ErrorKind::Layout(
                            "more than 2^31 tensor elements in one batch; use a smaller batch size"
                                .into(),
                        ))
                    })?);
                }
                let DataType::List(item) = fields[0].data_type() else {
                    unreachable!()
                };
                let data =
                    ListArray::try_new(item.clone(), OffsetBuffer::new(off.into()), values, None)?;
                let shape_vals: Vec<i32> = dims.iter().map(|&d| d as i32).collect();
                let DataType::FixedSizeList(sf, _) = fields[1].data_type() else {
                    unreachable!()
                };
                let shape = FixedSizeListArray::try_new(
                    sf.clone(),
                    ndim as i32,
                    Arc::new(Int32Array::from(shape_vals)),
                    None,
                )?;
                Ok(Arc::new(StructArray::try_new(
                    fields.clone(),
                    vec![Arc::new(data), Arc::new(shape)],
                    nulls,
                )?))
            }
            (Repr::FixedTensor, None) => Err(Error::new(ErrorKind::Layout(
                "ragged ndarrays cannot be stored as fixed_shape_tensor".into(),
            ))),
        }
    }
}

/// Wrap flat values in the nested FixedSizeLists of type `t`; row nulls go on the outermost.
/// `rows` is needed because a FixedSizeList of size 0 cannot count its rows from its values.
pub(crate) fn nest_fixed(
    t: &DataType,
    values: ArrayRef,
    nulls: Option<NullBuffer>,
    rows: usize,
) -> Result<ArrayRef> {
    match t {
        DataType::FixedSizeList(f, n) => {
            let inner = if same_structure(f.data_type(), values.data_type()) {
                values
            } else {
                nest_fixed(f.data_type(), values, None, rows * (*n as usize))?
            };
            if *n == 0 {
                let d = arrow_data::ArrayDataBuilder::new(t.clone())
                    .len(rows)
                    .nulls(nulls)
                    .add_child_data(inner.to_data())
                    .build()?;
                return Ok(make_array(d));
            }
            Ok(Arc::new(FixedSizeListArray::try_new(
                f.clone(),
                *n,
                inner,
                nulls,
            )?))
        }
        _ => Ok(values),
    }
}

/// Offsets of every List level of ragged tensors (outermost first), from each row's shape.
fn ragged_offsets(dims: &[usize], ndim: usize, rows: usize) -> Result<Vec<Vec<i32>>> {
    let too_many = || {
        Error::new(ErrorKind::Layout(
            "more than 2^31 list entries in one batch; use a smaller batch size".into(),
        ))
    };
    let mut levels = vec![vec![0i32]; ndim];
    for r in 0..rows {
        let s = &dims[r * ndim..(r + 1) * ndim];
        // entries at level k for this row: prod(s[..k]); each of length s[k]
        let mut count = 1usize;
        for k in 0..ndim {
            let lvl = &mut levels[k];
            for _ in 0..count {
                let last = *lvl.last().unwrap_or(&0);
                lvl.push(
                    i32::try_from(s[k])
                        .ok()
                        .and_then(|d| last.checked_add(d))
                        .ok_or_else(too_many)?,
                );
            }
            count = count.checked_mul(s[k]).ok_or_else(too_many)?;
        }
    }
    Ok(levels)
}

fn nest_ragged(
    t: &DataType,
    values: ArrayRef,
    mut offsets: Vec<Vec<i32>>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let DataType::List(f) = t else {
        return Ok(values);
    };
    let mine = offsets.remove(0);
    let inner = if offsets.is_empty() {
        values
    } else {
        nest_ragged(f.data_type(), values, offsets, None)?
    };
    Ok(Arc::new(ListArray::try_new(
        f.clone(),
        OffsetBuffer::new(mine.into()),
        inner,
        nulls,
    )?))
}
