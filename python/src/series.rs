//! Eager blob functions for `pl.Series.msgpack` (`decode_blobs`, `encode_blobs`, `infer_blobs`)
//! and `dtype_token` (the target type of `pl.col(c).msgpack.decode(dtype)`).
//!
//! These take the column through the Arrow C stream (like `read_msgpack`), so they work with any
//! Polars version; the whole column is seen at once, so `decode` can infer its type from every
//! row. Errors are `DecodeError`/`EncodeError` with the row in `record` and the byte offset inside
//! that row's blob in `offset`. The GIL is released while decoding and encoding.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::blobs::{self, BlobError, Blobs};
use crate::errors::{guarded, positioned_error, to_pyerr, Op};
use crate::stream::{check_c_names, import_pieces, import_schema, ArrowStream};

/// The single column of an Arrow stream (or of the pieces of one, see [`import_pieces`]): its
/// name and chunks.
fn one_column(data: &Bound<'_, PyAny>) -> PyResult<(String, Vec<ArrayRef>)> {
    let (schema, streams) = import_pieces(data)?;
    if schema.fields().len() != 1 {
        return Err(PyValueError::new_err(format!(
            "expected one column, got {}",
            schema.fields().len()
        )));
    }
    let name = schema.field(0).name().clone();
    let mut chunks = Vec::new();
    for b in streams.into_iter().flatten() {
        let b =
            b.map_err(|e| PyValueError::new_err(format!("cannot read the Arrow stream: {e}")))?;
        chunks.push(b.column(0).clone());
    }
    Ok((name, chunks))
}

fn column_stream(name: &str, arrays: Vec<ArrayRef>) -> PyResult<ArrowStream> {
    let t = arrays
        .first()
        .map_or(DataType::Null, |a| a.data_type().clone());
    let schema = Arc::new(Schema::new(vec![Field::new(name, t, true)]));
    let batches = arrays
        .into_iter()
        .map(|a| RecordBatch::try_new(schema.clone(), vec![a]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(ArrowStream::new(schema, batches))
}

fn blob_err(py: Python<'_>, e: BlobError) -> PyErr {
    positioned_error(py, Op::Decode, &e.to_string(), e.offset, e.row, e.column)
}

fn gather(chunks: &[ArrayRef]) -> Result<Blobs, BlobError> {
    Blobs::from_arrays(chunks)
}

fn decode_guarded<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, BlobError> + Send,
) -> PyResult<T> {
    let r = py.detach(|| guarded(|| Ok(f())));
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(blob_err(py, e)),
        Err(f) => Err(to_pyerr(py, Op::Decode, f)),
    }
}

/// A `DecodeError` if a key decoded into column `name` cannot cross the Arrow C interface.
fn c_names(py: Python<'_>, name: &str, t: &DataType) -> PyResult<()> {
    check_c_names(name, t).map_err(|e| to_pyerr(py, Op::Decode, e.into()))
}

/// Decode a one-column Arrow stream of msgpack blobs (Binary; one object per row) into one
/// column of the same name: of the type `dtype` describes (a token from `dtype_token`), else of
/// the type inferred from all rows.
#[pyfunction]
#[pyo3(signature = (data, dtype = None))]
pub fn decode_blobs(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&str>,
) -> PyResult<ArrowStream> {
    let (name, chunks) = one_column(data)?;
    let target = dtype
        .map(blobs::parse_dtype_token)
        .transpose()
        .map_err(PyValueError::new_err)?;
    let out = decode_guarded(py, || {
        gather(&chunks)?.decode(target.as_ref().map(|f| f.data_type()))
    })?;
    if let Some(a) = out.first() {
        c_names(py, &name, a.data_type())?;
    }
    column_stream(&name, out)
}

/// The type `decode_blobs` would infer, as an empty one-column stream.
#[pyfunction]
pub fn infer_blobs(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<ArrowStream> {
    let (name, chunks) = one_column(data)?;
    let t: DataType = decode_guarded(py, || gather(&chunks)?.infer())?;
    c_names(py, &name, &t)?;
    let schema = Arc::new(Schema::new(vec![Field::new(name, t, true)]));
    Ok(ArrowStream::new(schema, Vec::new()))
}

/// Encode every row of a one-column Arrow stream as one msgpack-numpy blob (LargeBinary; null
/// rows stay null).
#[pyfunction]
pub fn encode_blobs(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<ArrowStream> {
    let (name, chunks) = one_column(data)?;
    let r = py.detach(|| {
        guarded(|| {
            let mut row0 = 0u64;
            let mut out = Vec::with_capacity(chunks.len());
            for c in &chunks {
                match blobs::encode(&name, c) {
                    Ok(a) => out.push(a),
                    // rows counted over the whole column, not the chunk
                    Err(e) => {
                        return Ok(Err(BlobError {
                            message: e.kind().to_string(),
                            row: e.record().map(|r| row0 + r),
                            offset: None,
                            column: e.path().map(str::to_string),
                        }))
                    }
                }
                row0 += c.len() as u64;
            }
            Ok(Ok(out))
        })
    });
    let out = match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            return Err(positioned_error(
                py,
                Op::Encode,
                &e.to_string(),
                None,
                e.row,
                e.column,
            ))
        }
        Err(f) => return Err(to_pyerr(py, Op::Encode, f)),
    };
    let schema = Arc::new(Schema::new(vec![Field::new(
        &name,
        DataType::LargeBinary,
        true,
    )]));
    let batches = out
        .into_iter()
        .map(|a| RecordBatch::try_new(schema.clone(), vec![a]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(ArrowStream::new(schema, batches))
}

/// The token (text) of the type of the first field of `schema` (an object with
/// `__arrow_c_schema__` or `__arrow_c_stream__`, e.g. `pl.DataFrame(schema={"v": dtype})`).
#[pyfunction]
pub fn dtype_token(schema: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = import_schema(schema)?;
    let f = s
        .fields()
        .first()
        .ok_or_else(|| PyValueError::new_err("the schema has no field"))?;
    Ok(blobs::dtype_token(f))
}
