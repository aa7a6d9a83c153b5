//! One msgpack-numpy object per row: a Binary column of blobs ↔ a typed column. Shared by the
//! `.msgpack` expression plugin (`plugin.rs`) and the eager Series functions (`series.rs`).
//!
//! Decoding is the core's (`ReaderBuilder::decode_blobs`: each blob parsed in place, exactly one
//! msgpack object per row, errors naming the row and the byte in its blob); this module adds
//! what Polars needs: the Polars-compatible types and conversion to a requested dtype
//! ([`conform`]). Encoding is the core's `encode_values_per_row`.

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, BinaryArray, FixedSizeListArray, GenericListArray,
    OffsetSizeTrait, StructArray,
};
use arrow_schema::{ArrowError, DataType, Field};
use msgpack_arrow::types::polars_compatible_type;
use msgpack_arrow::ReaderBuilder;

/// A failure, with the row (of the input column) and the byte offset inside that row's blob.
#[derive(Debug, Clone)]
pub struct BlobError {
    pub message: String,
    pub row: Option<u64>,
    pub offset: Option<u64>,
    pub column: Option<String>,
}

impl BlobError {
    fn msg(message: impl Into<String>) -> Self {
        BlobError {
            message: message.into(),
            row: None,
            offset: None,
            column: None,
        }
    }
}

impl fmt::Display for BlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        let mut sep = " at ";
        if let Some(o) = self.offset {
            write!(f, "{sep}byte {o}")?;
            sep = " of ";
        }
        if let Some(r) = self.row {
            write!(f, "{sep}row {r}")?;
            sep = ", ";
        }
        if let Some(c) = &self.column {
            write!(f, "{sep}field {c:?}")?;
        }
        Ok(())
    }
}

impl From<ArrowError> for BlobError {
    fn from(e: ArrowError) -> Self {
        BlobError::msg(e.to_string())
    }
}

/// A core error as a `BlobError`: the record is the row (counted from `row0`), the offset is
/// inside that row's blob, the path is the field inside the value.
fn located(e: msgpack_arrow::Error, row0: u64) -> BlobError {
    BlobError {
        message: e.kind().to_string(),
        row: e.record().map(|r| r + row0),
        offset: e.offset(),
        column: e
            .path()
            .map(str::to_string)
            .filter(|p| p != "value")
            .map(|p| p.strip_prefix("value.").map(str::to_string).unwrap_or(p)),
    }
}

/// The blobs of one column, as the chunks it came in (`Binary`, `LargeBinary`, `BinaryView`;
/// `Null`: all null). Each blob is parsed in place by the core
/// (`ReaderBuilder::{infer_blobs, decode_blobs, decode_blobs_as}`): one msgpack value per row.
pub struct Blobs {
    chunks: Vec<ArrayRef>,
}

impl Blobs {
    /// Blobs given as slices (`None`: a null row), copied into one chunk. Used by the expression
    /// plugin only.
    #[cfg_attr(not(feature = "plugin"), allow(dead_code))]
    pub fn new<'a>(blobs: impl IntoIterator<Item = Option<&'a [u8]>>) -> Result<Blobs, BlobError> {
        let a: BinaryArray = blobs.into_iter().collect();
        Ok(Blobs {
            chunks: vec![Arc::new(a)],
        })
    }

    /// The chunks of one column, read in place.
    pub fn from_arrays(chunks: &[ArrayRef]) -> Result<Blobs, BlobError> {
        Ok(Blobs {
            chunks: chunks.to_vec(),
        })
    }

    fn rows(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    /// The field inferred from every blob (`Null` when none is set).
    fn inferred(&self) -> Result<Field, BlobError> {
        let chunks: Vec<&dyn Array> = self.chunks.iter().map(|c| c.as_ref()).collect();
        ReaderBuilder::new()
            .infer_blobs(&chunks)
            .map_err(|e| located(e, 0))
    }

    /// The Arrow type the blobs decode to (inferred from all of them; `Null` when none is set),
    /// mapped for Polars (width-0 `FixedSizeList` → `List`).
    pub fn infer(&self) -> Result<DataType, BlobError> {
        Ok(polars_compatible_type(self.inferred()?.data_type()))
    }

    /// Decode: one value per input row, nulls where the input is null, one array per input
    /// chunk. With `target`, the chunks have exactly that type (see [`conform`]); without, the
    /// type inferred from all rows, mapped for Polars.
    pub fn decode(&self, target: Option<&DataType>) -> Result<Vec<ArrayRef>, BlobError> {
        if self.rows() == 0 {
            return Ok(vec![new_null_array(target.unwrap_or(&DataType::Null), 0)]);
        }
        let b = ReaderBuilder::new();
        let inferred = match target {
            Some(_) => None,
            None => Some(self.inferred()?),
        };
        let mut out = Vec::with_capacity(self.chunks.len());
        let mut row0 = 0u64;
        for c in &self.chunks {
            let a = match (target, &inferred) {
                (None, Some(f)) => {
                    let a = b
                        .decode_blobs(c.as_ref(), Some(f))
                        .map_err(|e| located(e, row0))?;
                    let t = polars_compatible_type(a.data_type());
                    if &t == a.data_type() {
                        a
                    } else {
                        // seconds past the range of milliseconds: an error, never a null
                        msgpack_arrow::types::arrow::cast_exact(&a, &t, Some(0))
                            .map_err(|e| located(e, row0))?
                    }
                }
                (Some(t), _) => {
                    // inferred, then converted to the target (structs by name); where the rows
                    // disagree on their type, decoded straight into the target (when that fails
                    // too, the first error says more: e.g. a malformed blob)
                    let a = match b.decode_blobs(c.as_ref(), None) {
                        Ok(a) => a,
                        Err(e) => b
                            .decode_blobs_as(c.as_ref(), &crate::reader::plain_type(t))
                            .map_err(|_| located(e, row0))?,
                    };
                    conform(&a, t).map_err(|e| {
                        BlobError::msg(format!(
                            "cannot convert the decoded {} to {t}: {e}",
                            a.data_type()
                        ))
                    })?
                }
                (None, None) => unreachable!("inferred when no target is given"),
            };
            row0 += c.len() as u64;
            out.push(a);
        }
        Ok(out)
    }
}

fn cast_strict(a: &ArrayRef, t: &DataType) -> Result<ArrayRef, ArrowError> {
    let opts = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow_cast::cast_with_options(a, t, &opts)
}

fn conform_list<O: OffsetSizeTrait>(
    a: &ArrayRef,
    item: &Arc<Field>,
) -> Result<ArrayRef, ArrowError> {
    let l = a.as_list::<O>();
    let values = conform(l.values(), item.data_type())?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        item.clone(),
        l.offsets().clone(),
        values,
        l.nulls().cloned(),
    )?))
}

/// `a` as type `t`, exactly: struct fields are matched by name (a field missing from the data is
/// all null; a map key the type lacks is an error), lists and arrays converted item by item, other
/// values cast (arrow-cast; a value that does not fit is an error, never a silent null).
/// A FixedSizeList with its items conformed to `item` (its length kept: width 0 has no items).
fn conform_fsl(l: &FixedSizeListArray, item: &Arc<Field>, m: i32) -> Result<ArrayRef, ArrowError> {
    let values = conform(l.values(), item.data_type())?;
    Ok(Arc::new(FixedSizeListArray::try_new_with_length(
        item.clone(),
        m,
        values,
        l.nulls().cloned(),
        l.len(),
    )?))
}

pub fn conform(a: &ArrayRef, t: &DataType) -> Result<ArrayRef, ArrowError> {
    use DataType as T;
    if a.data_type() == t {
        return Ok(a.clone());
    }
    match (a.data_type(), t) {
        // datetime64 values are UTC instants: a zone only labels them (no chrono-tz needed)
        (T::Timestamp(_, _), T::Timestamp(v, Some(_))) => {
            let same_unit = cast_strict(a, &T::Timestamp(*v, None))?;
            let d = same_unit.to_data().into_builder().data_type(t.clone());
            Ok(arrow_array::make_array(d.build()?))
        }
        (T::Struct(have), T::Struct(want)) => {
            let s = a.as_struct();
            if let Some(extra) = have.iter().find(|f| want.find(f.name()).is_none()) {
                return Err(ArrowError::CastError(format!(
                    "the data has a key {:?} that the struct dtype does not have",
                    extra.name()
                )));
            }
            let cols = want
                .iter()
                .map(|f| match s.column_by_name(f.name()) {
                    Some(c) => conform(c, f.data_type())
                        .map_err(|e| ArrowError::CastError(format!("field {:?}: {e}", f.name()))),
                    None => Ok(new_null_array(f.data_type(), s.len())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Arc::new(StructArray::try_new(
                want.clone(),
                cols,
                s.nulls().cloned(),
            )?))
        }
        (T::List(_), T::List(item)) => conform_list::<i32>(a, item),
        (T::LargeList(_), T::LargeList(item)) => conform_list::<i64>(a, item),
        (T::List(_), T::LargeList(item)) => {
            let l = cast_strict(
                a,
                &T::LargeList(Arc::new(Field::new(
                    "item",
                    a.as_list::<i32>().value_type(),
                    true,
                ))),
            )?;
            conform_list::<i64>(&l, item)
        }
        (T::FixedSizeList(_, n), T::FixedSizeList(item, m)) if n == m => {
            conform_fsl(a.as_fixed_size_list(), item, *m)
        }
        // ragged rows that must all have the target's length, or an array of lists
        (T::List(_) | T::LargeList(_), T::FixedSizeList(item, m)) => {
            let fsl = cast_strict(
                a,
                &T::FixedSizeList(Arc::new(Field::new("item", list_value_type(a), true)), *m),
            )?;
            conform_fsl(fsl.as_fixed_size_list(), item, *m)
        }
        (T::FixedSizeList(..), T::List(item) | T::LargeList(item)) => {
            let l = a.as_fixed_size_list();
            let as_list = cast_strict(
                a,
                &T::LargeList(Arc::new(Field::new("item", l.value_type(), true))),
            )?;
            let out = conform_list::<i64>(&as_list, item)?;
            if matches!(t, T::List(_)) {
                cast_strict(&out, t)
            } else {
                Ok(out)
            }
        }
        _ => cast_strict(a, t),
    }
}

fn list_value_type(a: &ArrayRef) -> DataType {
    match a.data_type() {
        DataType::List(f) | DataType::LargeList(f) => f.data_type().clone(),
        other => other.clone(),
    }
}

/// Encode each row of a column as one blob (null rows stay null).
pub fn encode(name: &str, a: &ArrayRef) -> Result<ArrayRef, msgpack_arrow::Error> {
    let field = Field::new(name, a.data_type().clone(), true);
    Ok(Arc::new(msgpack_arrow::write::encode_values_per_row(
        &field, a,
    )?))
}

/// A target type passed from Python as text: the hex of an Arrow IPC schema of one field (made by
/// `dtype_token` from the Arrow type Polars exports for the dtype).
pub fn parse_dtype_token(token: &str) -> Result<Field, String> {
    if token.len() % 2 != 0 {
        return Err("malformed dtype token".into());
    }
    let bytes = (0..token.len() / 2)
        .map(|i| u8::from_str_radix(&token[2 * i..2 * i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| "malformed dtype token".to_string())?;
    let fb =
        arrow_ipc::root_as_schema(&bytes).map_err(|e| format!("malformed dtype token: {e}"))?;
    let schema = arrow_ipc::convert::try_fb_to_schema(fb)
        .map_err(|e| format!("malformed dtype token: {e}"))?;
    schema
        .fields()
        .first()
        .map(|f| f.as_ref().clone())
        .ok_or_else(|| "malformed dtype token: no field".to_string())
}

/// The token of a field's type (see [`parse_dtype_token`]).
pub fn dtype_token(field: &Field) -> String {
    let schema = arrow_schema::Schema::new(vec![field.clone()]);
    let fb = arrow_ipc::convert::IpcSchemaEncoder::new().schema_to_fb(&schema);
    fb.finished_data()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
