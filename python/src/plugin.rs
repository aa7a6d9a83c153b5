//! The Polars expression plugin behind `pl.col(c).msgpack.decode(dtype)` and
//! `pl.col(c).msgpack.encode()` (pyo3-polars `#[polars_expr]`, loaded by Python Polars from this
//! same shared library through `register_plugin_function`).
//!
//! Both are elementwise (one output row per input row), so they run in `select`,
//! `with_columns`, `group_by().agg` and the streaming engine, on whatever slices Polars hands
//! over. Polars needs the output type at planning time, from the input fields only: `decode`
//! therefore takes its dtype as an argument (the Python side refuses `dtype=None` on expressions
//! and infers eagerly on Series instead).
//!
//! Errors come back as `PolarsError::ComputeError` (Python: `polars.exceptions.ComputeError`)
//! naming the row and byte; a panic is caught here and reported with its message, never
//! unwinding into Polars.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3_polars::derive::polars_expr;
use pyo3_polars::export::polars_arrow::ffi as pl_ffi;
use pyo3_polars::export::polars_core::prelude::*;
use serde::Deserialize;

use crate::blobs::{self, Blobs};

#[derive(Deserialize)]
struct DecodeKwargs {
    /// the target type ([`blobs::parse_dtype_token`])
    dtype: String,
}

fn compute_err(msg: impl std::fmt::Display) -> PolarsError {
    PolarsError::ComputeError(msg.to_string().into())
}

/// Run `f`, turning a panic (a bug) into an error with its message.
fn guarded<T>(what: &str, f: impl FnOnce() -> PolarsResult<T>) -> PolarsResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = msgpack_arrow::error::panic_message(&*p);
            Err(compute_err(format!(
                "{what}: internal error (a bug in msgpack-arrow, please report it): {msg}"
            )))
        }
    }
}

/// The arrow-rs field and Polars dtype a token describes.
fn target(token: &str) -> PolarsResult<(arrow_schema::Field, DataType)> {
    let field = blobs::parse_dtype_token(token).map_err(compute_err)?;
    let ffi = arrow_schema::ffi::FFI_ArrowSchema::try_from(&field).map_err(compute_err)?;
    // SAFETY: arrow-rs' FFI_ArrowSchema and polars-arrow's ArrowSchema are both `#[repr(C)]`
    // definitions of the C Data Interface's ArrowSchema; ownership (the release callback) moves.
    let ffi: pl_ffi::ArrowSchema = unsafe { std::mem::transmute(ffi) };
    // SAFETY: a valid schema, just exported by arrow-rs.
    let pl_field = unsafe { pl_ffi::import_field_from_c(&ffi)? };
    Ok((field, DataType::from_arrow_field(&pl_field)))
}

fn check_binary(what: &str, f: &Field) -> PolarsResult<()> {
    match f.dtype() {
        DataType::Binary | DataType::BinaryOffset | DataType::Null => Ok(()),
        t => Err(PolarsError::SchemaMismatch(
            format!(
                "{what}: column {:?} is {t}; expected binary (one msgpack-numpy blob per row)",
                f.name().as_str()
            )
            .into(),
        )),
    }
}

fn decode_output(inputs: &[Field], kwargs: DecodeKwargs) -> PolarsResult<Field> {
    guarded("msgpack.decode", || {
        let input = &inputs[0];
        check_binary("msgpack.decode", input)?;
        let (_, dtype) = target(&kwargs.dtype)?;
        Ok(Field::new(input.name().clone(), dtype))
    })
}

#[polars_expr(output_type_func_with_kwargs = decode_output)]
fn msgpack_decode(inputs: &[Series], kwargs: DecodeKwargs) -> PolarsResult<Series> {
    guarded("msgpack.decode", || {
        let s = &inputs[0];
        check_binary("msgpack.decode", s.field().as_ref())?;
        let (field, dtype) = target(&kwargs.dtype)?;
        // Polars hands the plugin one piece of the column at a time and not its place in the
        // column: rows are counted within the piece (the Series method counts over the column)
        let fail = |e: blobs::BlobError| {
            compute_err(format!(
                "msgpack.decode: {e} (row counted within the batch Polars passed to the plugin; \
                 df[col].msgpack.decode() names the row of the whole column)"
            ))
        };
        let blobs = if s.dtype() == &DataType::Null {
            Blobs::new(vec![None; s.len()])
        } else {
            // the Binary chunks as arrow-rs arrays, zero-copy (C Data Interface)
            let chunks = msgpack_arrow::polars::series_to_arrays(s)
                .map_err(|e| compute_err(format!("msgpack.decode: {e}")))?;
            Blobs::from_arrays(&chunks)
        };
        let decoded = blobs
            .map_err(fail)?
            .decode(Some(field.data_type()))
            .map_err(fail)?;
        let out = msgpack_arrow::polars::arrays_to_series(s.name().as_str(), &decoded)?;
        if out.dtype() == &dtype {
            Ok(out)
        } else {
            out.strict_cast(&dtype)
        }
    })
}

/// Whether `encode` writes this dtype (numpy's types; the plugin is built without Polars'
/// categorical, decimal and object types, which Polars then reports as a plugin panic).
fn encodable(t: &DataType) -> bool {
    match t {
        DataType::List(inner) | DataType::Array(inner, _) => encodable(inner),
        DataType::Struct(fields) => fields.iter().all(|f| encodable(f.dtype())),
        DataType::UInt128 | DataType::Int128 | DataType::Time | DataType::Unknown(_) => false,
        _ => true,
    }
}

fn encode_output(inputs: &[Field]) -> PolarsResult<Field> {
    let f = &inputs[0];
    if !encodable(f.dtype()) {
        return Err(PolarsError::InvalidOperation(
            format!(
                "msgpack.encode: column {:?} is {}, which numpy has no dtype for; cast it first \
                 (e.g. .cast(pl.String))",
                f.name().as_str(),
                f.dtype()
            )
            .into(),
        ));
    }
    Ok(Field::new(f.name().clone(), DataType::Binary))
}

#[polars_expr(output_type_func = encode_output)]
fn msgpack_encode(inputs: &[Series]) -> PolarsResult<Series> {
    guarded("msgpack.encode", || {
        let s = &inputs[0];
        let name = s.name().as_str();
        let arrays = msgpack_arrow::polars::series_to_arrays(s)
            .map_err(|e| compute_err(format!("msgpack.encode: {e}")))?;
        let blobs = arrays
            .iter()
            .map(|a| blobs::encode(name, a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| compute_err(format!("msgpack.encode: {e}")))?;
        if blobs.is_empty() {
            return Ok(Series::new_empty(s.name().clone(), &DataType::Binary));
        }
        let out = msgpack_arrow::polars::arrays_to_series(name, &blobs)?;
        if out.dtype() == &DataType::Binary {
            Ok(out)
        } else {
            out.cast(&DataType::Binary)
        }
    })
}
