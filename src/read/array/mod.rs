//! One decoder per Arrow type, chosen once per column by [`make_decoder`] from the field (its type
//! and msgpack-numpy metadata). Decoders read straight from the msgpack bytes: no value tree; a
//! tensor's bytes are copied once, into the column's single values buffer.

mod bytes;
mod ext;
mod list;
mod map;
mod object;
mod primitive;
mod raw;
mod structs;
mod tensor;
mod timestamp;
mod validity;

pub(crate) use self::primitive::{convert_elems, inexact_element};
pub(crate) use self::structs::StructDecoder;
pub(crate) use self::tensor::{nest_fixed, time_out_of_range_error, too_many_unbacked};
use self::{
    bytes::*, ext::*, list::*, map::*, object::*, primitive::*, raw::*, tensor::*, timestamp::*,
};

use arrow_array::builder::{BinaryBuilder, BooleanBufferBuilder};
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::NullBufferBuilder;
use arrow_schema::{DataType, Field};
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::options::Dialect;
use crate::types::buffers::native;
use crate::types::{meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Kind};

/// The error for a key the schema does not have (when that is an error: `Ctx::strict_keys`).
pub(crate) fn unknown_key(name: &str, ctx: &Ctx) -> ErrorKind {
    ErrorKind::Key(if ctx.given_schema {
        format!("key {name:?} is not in the schema the reader was given")
    } else {
        // (a map's field: its struct type may also be a schema_overrides type that lacks it)
        format!("key {name:?} is not in the schema, which was inferred from the first rows or, for \
                 a map's fields, given by schema_overrides: infer from more rows (infer_rows=None), \
                 or give the column's type with every field")
    })
}

/// Settings every decoder needs.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub dialect: Dialect,
    /// ext values of this code hold `np.save` bytes ([`crate::ReaderBuilder::with_npy_ext`])
    pub npy_ext: Option<i8>,
    pub max_depth: usize,
    /// Keys not in the schema are errors (the schema was inferred from a sample, or given with
    /// `with_strict_schema`) rather than skipped.
    pub strict_keys: bool,
    /// the schema was given, not inferred (for the message of an unknown key)
    pub given_schema: bool,
    /// Values of another kind are converted into the column's type (a bool into a number, a
    /// number into a string, an ndarray of another numeric dtype), each exactly or an error: the
    /// type is the caller's. Off where it was inferred (from every row, the first rows, another
    /// file), where such a value is a conflict a full inference would have reported.
    pub convert: bool,
    /// The top-level columns whose types the caller gave (schema overrides): converted into.
    /// (hashed: a decoder per column asks, and overrides may name thousands)
    pub overridden: Option<Arc<std::collections::HashSet<String>>>,
    /// The buffer the rows are read from, where a tensor row alone in its batch may be a slice
    /// of it instead of a copy (`None`: bytes read from a pipe, or memory the read frees behind
    /// it, whose pages would read back as zeros).
    pub input: Option<arrow_buffer::Buffer>,
}

impl Ctx {
    /// The context of the decoders of top-level column `name` (and of what nests in it).
    pub(crate) fn for_column(&self, name: &str) -> Ctx {
        let mut c = self.clone();
        if let Some(o) = c.overridden.take() {
            c.convert |= o.contains(name);
        }
        c
    }
}

/// Decodes values of one column, appending them; `finish` returns the batch's array and resets.
pub(crate) trait ArrayDecoder: Send {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()>;
    /// `n` values one after another (a list's items): one call for the lot, so a decoder of
    /// numbers runs its own loop rather than a dynamic call per item.
    fn decode_n(&mut self, c: &mut Cursor<'_>, n: usize) -> Result<()> {
        for _ in 0..n {
            self.decode(c)?;
        }
        Ok(())
    }
    fn append_null(&mut self);
    /// `n` nulls at once (a struct's fields that its maps lacked, appended when the field is
    /// next seen or the batch ends).
    fn append_nulls(&mut self, n: usize) {
        for _ in 0..n {
            self.append_null();
        }
    }
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
    c.error(ErrorKind::NotItsType(format!(
        "expected {want}, found {got}"
    )))
}

/// Append the end offset of a list (or map) of `n` items to `offsets`; an error past 2^31 items
/// in one batch (Arrow's i32 offsets).
pub(crate) fn push_offset(offsets: &mut Vec<i32>, n: usize, c: &Cursor<'_>) -> Result<()> {
    let last = *offsets.last().unwrap_or(&0);
    let next = i32::try_from(n)
        .ok()
        .and_then(|n| last.checked_add(n))
        .ok_or_else(|| {
            c.error(ErrorKind::Layout(
                "more than 2^31 items in one batch; use a smaller batch size".into(),
            ))
        })?;
    offsets.push(next);
    Ok(())
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
        Some("msgpack") => {
            return Ok(Box::new(RawDecoder {
                b: BinaryBuilder::with_capacity(0, 0),
                ctx: ctx.clone(),
            }))
        }
        Some("ext") if *t == crate::types::arrow::ext_type() => {
            return Ok(Box::new(ExtDecoder::new(ctx)))
        }
        Some("object") => {
            return Ok(Box::new(ObjectDecoder {
                b: BinaryBuilder::with_capacity(0, 0),
                ctx: ctx.clone(),
            }))
        }
        Some("list") => {
            if let DataType::FixedSizeList(item, n) = t {
                return Ok(Box::new(FixedListDecoder::new(item, *n, ctx)?));
            }
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
            b: BinaryBuilder::with_capacity(0, 0),
            utf8: true,
            ctx: ctx.clone(),
        }),
        DataType::Binary => Box::new(BytesDecoder {
            b: BinaryBuilder::with_capacity(0, 0),
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
        DataType::Map(entries, _) => Box::new(MapDecoder::new(entries, ctx)?),
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
