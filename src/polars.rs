//! Polars `DataFrame`s in and out (feature `polars`).
//!
//! Arrays cross between arrow-rs and Polars through the Arrow C Data Interface, without copying
//! the buffers. The types are polars-core's, the same as `polars::prelude::{DataFrame, Series}`
//! of the `polars` crate 0.55.
//!
//! Two Polars limits are handled here (see the repository's INTEROP notes):
//! - Polars panics importing an Arrow `FixedSizeList` of width 0 (an ndarray with a 0 axis): such
//!   columns become `List` columns on the way in, at any nesting level.
//! - Polars exports its `Null` type with one (absent) buffer, which arrow-rs refuses: columns with
//!   a `Null` type somewhere are exported as `Boolean` and cast back to `Null` in arrow-rs.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use msgpack_arrow::ReaderBuilder;
//! // {"id": 7, "emb": np.array([1.5, 2.5], dtype="<f4")} as msgpack_numpy.packb writes it
//! let mut bytes = vec![0x82, 0xa2, b'i', b'd', 0x07, 0xa3, b'e', b'm', b'b', 0x85];
//! bytes.extend(b"\xc4\x02nd\xc3\xc4\x04type\xa3<f4\xc4\x04kind\xc4\x00\xc4\x05shape\x91\x02\xc4\x04data\xc4\x08");
//! bytes.extend(1.5f32.to_le_bytes());
//! bytes.extend(2.5f32.to_le_bytes());
//! let df = msgpack_arrow::polars::to_dataframe(ReaderBuilder::new().build_from_slice(&bytes)?)?;
//! assert_eq!(df.shape(), (1, 2));
//! assert_eq!(df.column("emb").unwrap().dtype().to_string(), "array[f32, 2]");
//! let batches = msgpack_arrow::polars::from_dataframe(&df)?;
//! assert_eq!(msgpack_arrow::write::write_batches(&batches, msgpack_arrow::Layout::Records)?, bytes);
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::Arc;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{make_array, Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use polars_arrow::ffi as pl_ffi;
use polars_core::prelude::{
    Column, CompatLevel, DataFrame, DataType as PlDataType, PlSmallStr, PolarsError, PolarsResult,
    Series,
};

use crate::error::{Error, ErrorKind, Result};
use crate::types::arrow::record_batch;
use crate::{Layout, Reader, ReaderBuilder, WriterBuilder};

fn compute_err(e: impl std::fmt::Display) -> PolarsError {
    PolarsError::ComputeError(e.to_string().into())
}

fn to_error(e: PolarsError) -> Error {
    Error::new(ErrorKind::Unsupported(format!("polars: {e}")))
}

pub use crate::types::polars_compatible_type;

/// One arrow-rs array as a Polars array (zero-copy), after mapping the types Polars cannot import
/// ([`polars_compatible_type`]).
fn export_array(
    a: &ArrayRef,
) -> PolarsResult<(
    polars_arrow::datatypes::Field,
    Box<dyn polars_arrow::array::Array>,
)> {
    let t = polars_compatible_type(a.data_type());
    let a = if &t == a.data_type() {
        a.clone()
    } else {
        // a value that does not fit (seconds beyond the milliseconds range) is an error
        crate::types::arrow::cast_exact(a, &t, None).map_err(compute_err)?
    };
    let (array, schema) = to_ffi(&a.to_data()).map_err(compute_err)?;
    // SAFETY: arrow-rs' and polars-arrow's C Data Interface structs are both `#[repr(C)]`
    // definitions of the same C structs (ArrowArray, ArrowSchema): moving one into the other moves
    // ownership of the release callbacks, which run exactly once (by whichever is dropped last).
    let (array, schema) = unsafe {
        (
            std::mem::transmute::<arrow_array::ffi::FFI_ArrowArray, pl_ffi::ArrowArray>(array),
            std::mem::transmute::<arrow_schema::ffi::FFI_ArrowSchema, pl_ffi::ArrowSchema>(schema),
        )
    };
    // SAFETY: both structs were just produced by arrow-rs' exporter, so they are valid.
    let field = unsafe { pl_ffi::import_field_from_c(&schema)? };
    let arr = unsafe { pl_ffi::import_array_from_c(array, field.dtype().clone())? };
    Ok((field, arr))
}

/// The chunks of one arrow-rs column (all of one type) as a Polars [`Series`], zero-copy.
/// Width-0 `FixedSizeList`s become `List`s (Polars cannot import them).
pub fn arrays_to_series(name: &str, arrays: &[ArrayRef]) -> PolarsResult<Series> {
    let Some(first) = arrays.first() else {
        return Err(compute_err("arrays_to_series needs at least one array"));
    };
    let mut field = None;
    let mut chunks = Vec::with_capacity(arrays.len());
    for a in arrays {
        if a.data_type() != first.data_type() {
            return Err(compute_err(format!(
                "column {name:?}: chunks of different types ({} and {})",
                first.data_type(),
                a.data_type()
            )));
        }
        let (f, arr) = export_array(a)?;
        field.get_or_insert(f);
        chunks.push(arr);
    }
    let mut field = field.expect("one chunk at least");
    field.name = PlSmallStr::from_str(name);
    Series::try_from((&field, chunks))
}

/// Whether a Polars type has `Null` anywhere in it.
fn has_null(t: &PlDataType) -> bool {
    match t {
        PlDataType::Null => true,
        PlDataType::List(t) | PlDataType::Array(t, _) => has_null(t),
        PlDataType::Struct(fs) => fs.iter().any(|f| has_null(f.dtype())),
        _ => false,
    }
}

/// `t` with every `Null` replaced by `Boolean` (an all-null Boolean exports like any array).
fn null_as_bool(t: &PlDataType) -> PlDataType {
    match t {
        PlDataType::Null => PlDataType::Boolean,
        PlDataType::List(t) => PlDataType::List(Box::new(null_as_bool(t))),
        PlDataType::Array(t, n) => PlDataType::Array(Box::new(null_as_bool(t)), *n),
        PlDataType::Struct(fs) => PlDataType::Struct(
            fs.iter()
                .map(|f| {
                    polars_core::prelude::Field::new(f.name().clone(), null_as_bool(f.dtype()))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The arrow-rs field of a Polars field (through the C Data Interface, so every type Polars
/// exports is described exactly as Polars describes it).
fn arrow_field(f: &polars_arrow::datatypes::Field) -> Result<Field> {
    let schema = pl_ffi::export_field_to_c(f);
    // SAFETY: same C struct, see `export_array`.
    let schema: FFI_ArrowSchema = unsafe { std::mem::transmute(schema) };
    Ok(Field::try_from(&schema)?)
}

/// `a`, exported with `Boolean` in place of `Null` ([`null_as_bool`]), as type `t` again.
fn restore_nulls(a: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::{FixedSizeListArray, LargeListArray, ListArray, NullArray, StructArray};
    Ok(match (a.data_type(), t) {
        (_, DataType::Null) => Arc::new(NullArray::new(a.len())),
        (DataType::List(_), DataType::List(f)) => {
            let l = a.as_list::<i32>();
            Arc::new(ListArray::try_new(
                f.clone(),
                l.offsets().clone(),
                restore_nulls(l.values(), f.data_type())?,
                l.nulls().cloned(),
            )?)
        }
        (DataType::LargeList(_), DataType::LargeList(f)) => {
            let l = a.as_list::<i64>();
            Arc::new(LargeListArray::try_new(
                f.clone(),
                l.offsets().clone(),
                restore_nulls(l.values(), f.data_type())?,
                l.nulls().cloned(),
            )?)
        }
        (DataType::FixedSizeList(_, _), DataType::FixedSizeList(f, n)) => {
            let l = a.as_fixed_size_list();
            Arc::new(FixedSizeListArray::try_new(
                f.clone(),
                *n,
                restore_nulls(l.values(), f.data_type())?,
                l.nulls().cloned(),
            )?)
        }
        (DataType::Struct(_), DataType::Struct(fs)) => {
            let s = a.as_struct();
            let cols = s
                .columns()
                .iter()
                .zip(fs.iter())
                .map(|(c, f)| restore_nulls(c, f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fs.clone(), cols, s.nulls().cloned())?)
        }
        _ => arrow_cast::cast(a, t)?,
    })
}

/// A Polars [`Series`] as arrow-rs arrays, one per chunk, zero-copy (Polars' own Arrow types:
/// `Utf8View`, `BinaryView`, `LargeList`, nested `FixedSizeList` for `Array`).
pub fn series_to_arrays(s: &Series) -> Result<Vec<ArrayRef>> {
    let compat = CompatLevel::newest();
    let target = arrow_field(&s.field().to_arrow(compat))?;
    let exported = if has_null(s.dtype()) {
        s.cast(&null_as_bool(s.dtype())).map_err(to_error)?
    } else {
        s.clone()
    };
    let pl_field = exported.field().to_arrow(compat);
    let mut out = Vec::with_capacity(exported.n_chunks());
    for i in 0..exported.n_chunks() {
        let arr = exported.to_arrow(i, compat);
        let field = pl_field.clone().with_dtype(arr.dtype().clone());
        let array = pl_ffi::export_array_to_c(arr);
        let schema = pl_ffi::export_field_to_c(&field);
        // SAFETY: same C structs, see `export_array`; Polars' exporter made them valid.
        let (array, schema) = unsafe {
            (
                std::mem::transmute::<pl_ffi::ArrowArray, FFI_ArrowArray>(array),
                std::mem::transmute::<pl_ffi::ArrowSchema, FFI_ArrowSchema>(schema),
            )
        };
        let data = unsafe { from_ffi(array, &schema)? };
        let a = make_array(data);
        out.push(if a.data_type() == target.data_type() {
            a
        } else {
            restore_nulls(&a, target.data_type())?
        });
    }
    Ok(out)
}

/// Record batches (all of `schema`) as one `DataFrame`, one chunk per batch, zero-copy. The
/// Arrow field metadata (the exact numpy dtypes) does not survive: Polars has no place for it.
pub fn batches_to_dataframe(schema: &Schema, batches: &[RecordBatch]) -> PolarsResult<DataFrame> {
    let height = batches.iter().map(|b| b.num_rows()).sum();
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, f) in schema.fields().iter().enumerate() {
        let arrays: Vec<ArrayRef> = if batches.is_empty() {
            vec![arrow_array::new_empty_array(f.data_type())]
        } else {
            batches.iter().map(|b| b.column(i).clone()).collect()
        };
        columns.push(Column::from(arrays_to_series(f.name(), &arrays)?));
    }
    DataFrame::new(height, columns)
}

/// Everything a [`Reader`] gives, as one `DataFrame` (decode errors become
/// `PolarsError::ComputeError`s with the reader's message: offset, record, column).
pub fn to_dataframe(reader: Reader) -> PolarsResult<DataFrame> {
    let schema = reader.schema();
    let batches = reader.collect_batches().map_err(compute_err)?;
    batches_to_dataframe(&schema, &batches)
}

/// Read a msgpack-numpy file (layout `auto`; see [`ReaderBuilder`] for more control) into a
/// `DataFrame`.
pub fn read_msgpack_df(path: impl AsRef<Path>) -> PolarsResult<DataFrame> {
    to_dataframe(
        ReaderBuilder::new()
            .build_from_path(path)
            .map_err(compute_err)?,
    )
}

/// A `DataFrame` as record batches (one per chunk; columns with different chunkings are
/// rechunked to match first), zero-copy.
pub fn from_dataframe(df: &DataFrame) -> Result<Vec<RecordBatch>> {
    let mut df = df.clone();
    if df.should_rechunk() {
        df.align_chunks();
    }
    let mut fields = Vec::with_capacity(df.width());
    let mut cols: Vec<Vec<ArrayRef>> = Vec::with_capacity(df.width());
    for c in df.columns() {
        let s = c.as_materialized_series();
        let arrays = series_to_arrays(s)?;
        let t = match arrays.first() {
            Some(a) => a.data_type().clone(),
            None => arrow_field(&s.field().to_arrow(CompatLevel::newest()))?
                .data_type()
                .clone(),
        };
        fields.push(Field::new(s.name().as_str(), t, true));
        cols.push(arrays);
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let n_chunks = cols.iter().map(Vec::len).max().unwrap_or(0);
    if df.width() == 0 {
        return Ok(vec![record_batch(&schema, vec![], df.height())?]);
    }
    let mut out = Vec::with_capacity(n_chunks);
    for i in 0..n_chunks {
        let columns: Vec<ArrayRef> = cols.iter().map(|c| c[i].clone()).collect();
        let rows = columns.first().map_or(0, |c| c.len());
        out.push(record_batch(&schema, columns, rows)?);
    }
    Ok(out)
}

/// Write a `DataFrame` as msgpack-numpy (`layout` as [`WriterBuilder::with_layout`]); the file
/// appears only when complete.
pub fn write_msgpack_df(df: &DataFrame, path: impl AsRef<Path>, layout: Layout) -> Result<()> {
    let batches = from_dataframe(df)?;
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => Arc::new(Schema::empty()),
    };
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .with_table(&batches)
        .build(crate::io::AtomicFile::create(path)?, schema)?;
    for b in &batches {
        w.write(b)?;
    }
    w.finish()?.commit()
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
    use arrow_array::types::Int64Type;
    use arrow_array::*;
    use arrow_buffer::{NullBuffer, OffsetBuffer};

    use super::*;

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = cols
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            cols.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap()
    }

    fn fsl(values: Vec<f32>, n: i32) -> ArrayRef {
        let mut b = FixedSizeListBuilder::new(Float32Builder::new(), n);
        for chunk in values.chunks(n.max(1) as usize) {
            b.values().append_slice(chunk);
            b.append(true);
        }
        Arc::new(b.finish())
    }

    #[test]
    fn round_trip_through_a_dataframe() {
        let list = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
            Some(vec![]),
        ]);
        let strukt = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![Some("x"), Some("y"), None])) as ArrayRef,
            ),
        ]);
        let b = batch(vec![
            (
                "i",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            ),
            ("u8", Arc::new(UInt8Array::from(vec![1u8, 2, 255]))),
            (
                "f16",
                Arc::new(Float16Array::from(vec![half::f16::from_f32(1.5); 3])),
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![Some("a"), None, Some("ccc")])),
            ),
            (
                "bin",
                Arc::new(BinaryArray::from(vec![
                    Some(&b"\x00\x01"[..]),
                    None,
                    Some(b""),
                ])),
            ),
            ("emb", fsl(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2)),
            ("l", Arc::new(list)),
            ("st", Arc::new(strukt)),
            (
                "ts",
                Arc::new(TimestampMicrosecondArray::from(vec![1, 2, 3])),
            ),
            ("nul", Arc::new(NullArray::new(3))),
            (
                "lnul",
                Arc::new(ListArray::new(
                    Arc::new(Field::new("item", DataType::Null, true)),
                    OffsetBuffer::new(vec![0, 2, 2, 3].into()),
                    Arc::new(NullArray::new(3)),
                    None,
                )),
            ),
        ]);
        let df = batches_to_dataframe(&b.schema(), std::slice::from_ref(&b)).unwrap();
        assert_eq!(df.shape(), (3, 11));
        let dtypes: Vec<String> = df.columns().iter().map(|c| c.dtype().to_string()).collect();
        assert_eq!(
            dtypes,
            [
                "i64",
                "u8",
                "f16",
                "str",
                "binary",
                "array[f32, 2]",
                "list[i64]",
                "struct[2]",
                "datetime[μs]",
                "null",
                "list[null]"
            ]
        );
        assert_eq!(df.column("emb").unwrap().n_chunks(), 1);
        let back = from_dataframe(&df).unwrap();
        assert_eq!(back.len(), 1);
        let back = &back[0];
        // Polars' own Arrow types on the way out; same values
        for (i, f) in b.schema().fields().iter().enumerate() {
            let got = back.column(i);
            let want = arrow_cast::cast(b.column(i), got.data_type()).unwrap();
            assert_eq!(got.as_ref(), want.as_ref(), "column {}", f.name());
        }
        assert_eq!(back.column(9).data_type(), &DataType::Null);
        assert_eq!(
            back.column(10).data_type(),
            &DataType::LargeList(Arc::new(Field::new("item", DataType::Null, true)))
        );
        assert_eq!(back.column(3).data_type(), &DataType::Utf8View);
    }

    #[test]
    fn width_zero_array_becomes_list() {
        // shape (0,) ndarrays are a FixedSizeList of width 0, which Polars cannot import
        let item = |t: DataType| Arc::new(Field::new("item", t, true));
        let a: ArrayRef = Arc::new(FixedSizeListArray::new_null(item(DataType::Float32), 0, 2));
        let inner = DataType::FixedSizeList(item(DataType::Int8), 0);
        let b: ArrayRef = Arc::new(FixedSizeListArray::new_null(item(inner), 3, 2));
        let batch = batch(vec![("empty", a), ("nested", b)]);
        let df = batches_to_dataframe(&batch.schema(), &[batch.clone()]).unwrap();
        assert_eq!(df.column("empty").unwrap().dtype().to_string(), "list[f32]");
        assert_eq!(
            df.column("nested").unwrap().dtype().to_string(),
            "array[list[i8], 3]"
        );
        assert_eq!(df.height(), 2);
    }

    #[test]
    fn chunks_and_empty_frames() {
        let b1 = batch(vec![(
            "x",
            Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef,
        )]);
        let b2 = batch(vec![("x", Arc::new(Int64Array::from(vec![3])) as ArrayRef)]);
        let df = batches_to_dataframe(&b1.schema(), &[b1.clone(), b2]).unwrap();
        assert_eq!(df.height(), 3);
        assert_eq!(df.column("x").unwrap().n_chunks(), 2);
        let back = from_dataframe(&df).unwrap();
        assert_eq!(
            back.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            [2, 1]
        );

        let empty = batches_to_dataframe(&b1.schema(), &[]).unwrap();
        assert_eq!(empty.shape(), (0, 1));
        assert_eq!(
            from_dataframe(&empty)
                .unwrap()
                .iter()
                .map(|b| b.num_rows())
                .sum::<usize>(),
            0
        );
    }

    #[test]
    fn msgpack_files_in_and_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.msgpack");
        let nulls = NullBuffer::from(vec![true, false]);
        let l = ListArray::new(
            Arc::new(Field::new("item", DataType::Float64, true)),
            OffsetBuffer::new(vec![0, 2, 2].into()),
            Arc::new(Float64Array::from(vec![1.0, 2.0])),
            Some(nulls),
        );
        let b = batch(vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            ("emb", fsl(vec![0.5, 1.5, 2.5, 3.5], 2)),
            ("l", Arc::new(l)),
        ]);
        let df = batches_to_dataframe(&b.schema(), &[b]).unwrap();
        write_msgpack_df(&df, &path, Layout::Records).unwrap();
        let back = read_msgpack_df(&path).unwrap();
        assert!(back.equals_missing(&df), "{back:?}\n{df:?}");
        // a decode error is a ComputeError naming the position
        std::fs::write(&path, b"\x82\xa2id\x01\xa3emb\xc1").unwrap();
        let e = read_msgpack_df(&path).unwrap_err();
        assert!(e.to_string().contains("byte"), "{e}");
    }
}
