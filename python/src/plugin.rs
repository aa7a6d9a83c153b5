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
use pyo3_polars::export::polars_arrow::datatypes as pl_ffi_types;
use pyo3_polars::export::polars_arrow::ffi as pl_ffi;
use pyo3_polars::export::polars_core::prelude::*;
use pyo3_polars::export::polars_ffi::version_0 as pl_ffi_series;
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
fn msgpack_decode_series(inputs: &[Series], kwargs: DecodeKwargs) -> PolarsResult<Series> {
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

/// Whether `encode` writes this dtype (numpy's types; the types this build cannot even import
/// are refused before, by [`unsupported`]).
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
fn msgpack_encode_series(inputs: &[Series]) -> PolarsResult<Series> {
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

// The entry points Polars calls (`msgpack_decode`, `msgpack_encode`). The functions
// `#[polars_expr]` makes turn every input field into a polars-core dtype first, which panics for
// the dtypes this build leaves out (Categorical, Enum, Decimal, Int128, objects and other
// extensions): Polars then only says "the plugin panicked". The field functions below look at
// the Arrow types first and name the column and its type instead; Polars asks for the output
// field while planning, so the expression itself is never called on such a column.

/// What in an input's Arrow type this build's polars-core cannot import (it has no categorical,
/// decimal, 128-bit or object dtypes), as Polars names it; `None` when it imports.
fn unsupported(t: &pl_ffi_types::ArrowDataType) -> Option<String> {
    use pl_ffi_types::ArrowDataType as A;
    match t {
        A::Null
        | A::Boolean
        | A::Int8
        | A::Int16
        | A::Int32
        | A::Int64
        | A::UInt8
        | A::UInt16
        | A::UInt32
        | A::UInt64
        | A::Float16
        | A::Float32
        | A::Float64
        | A::Date32
        | A::Date64
        | A::Timestamp(..)
        | A::Duration(_)
        | A::Time32(_)
        | A::Time64(_)
        | A::Utf8
        | A::LargeUtf8
        | A::Utf8View
        | A::Binary
        | A::LargeBinary
        | A::BinaryView => None,
        // Polars has no fixed-size binary dtype: it hands Python objects (pl.Object) to a plugin
        // as 8-byte pointers, which would be written as if they were bytes
        A::FixedSizeBinary(_) => Some("Object (Python objects)".into()),
        A::Dictionary(_, _, false) => Some("Categorical".into()),
        A::Dictionary(_, _, true) => Some("Enum".into()),
        A::Decimal(p, s) | A::Decimal32(p, s) | A::Decimal64(p, s) | A::Decimal256(p, s) => {
            Some(format!("Decimal({p}, {s})"))
        }
        A::Int128 => Some("Int128".into()),
        A::UInt128 => Some("UInt128".into()),
        A::List(f) | A::LargeList(f) | A::FixedSizeList(f, _) | A::Map(f, _) => {
            unsupported(&f.dtype).map(|inner| format!("List of {inner}"))
        }
        A::Struct(fields) => fields.iter().find_map(|f| {
            unsupported(&f.dtype)
                .map(|inner| format!("Struct whose field {:?} is {inner}", f.name.as_str()))
        }),
        other => Some(format!("{other:?}")),
    }
}

/// `false` (with the error set for Polars) when an input field is of a type the plugin cannot
/// take.
///
/// # Safety
/// `field` points at `len` valid C Data Interface schemas (Polars' call).
unsafe fn inputs_importable(what: &str, field: *const pl_ffi::ArrowSchema, len: usize) -> bool {
    // a panic must not unwind out of the `extern "C"` caller (it would abort Python): on one,
    // the generated function decides, which catches its own
    // SAFETY: as the caller promises
    catch_unwind(AssertUnwindSafe(|| unsafe {
        check_inputs(what, field, len)
    }))
    .unwrap_or(true)
}

/// [`inputs_importable`] without its guard.
///
/// # Safety
/// As [`inputs_importable`].
unsafe fn check_inputs(what: &str, field: *const pl_ffi::ArrowSchema, len: usize) -> bool {
    // SAFETY: as the caller promises
    let fields = unsafe { std::slice::from_raw_parts(field, len) };
    for f in fields {
        // SAFETY: a valid schema (polars-arrow imports every Arrow type)
        let Ok(f) = (unsafe { pl_ffi::import_field_from_c(f) }) else {
            continue;
        };
        if let Some(t) = unsupported(&f.dtype) {
            let hint = match what {
                "msgpack.decode" => "expected binary (one msgpack-numpy blob per row)",
                _ => "numpy has no dtype for it; cast it first (e.g. .cast(pl.String))",
            };
            pyo3_polars::derive::_update_last_error(PolarsError::InvalidOperation(
                format!("{what}: column {:?} is {t}: {hint}", f.name.as_str()).into(),
            ));
            return false;
        }
    }
    true
}

/// The two entry points Polars calls for one expression (`$what`): its output field, checked
/// first, and its evaluation, each passed on to the function `#[polars_expr]` made.
macro_rules! checked_entry_points {
    ($what:literal, $field:ident => $field_made:ident, $expr:ident => $expr_made:ident) => {
        /// # Safety
        /// Polars' plugin call: valid schemas in, an empty schema to fill.
        #[no_mangle]
        pub unsafe extern "C" fn $field(
            field: *mut pl_ffi::ArrowSchema,
            len: usize,
            return_value: *mut pl_ffi::ArrowSchema,
            kwargs_ptr: *const u8,
            kwargs_len: usize,
        ) {
            // SAFETY: Polars' arguments, passed on as they came
            unsafe {
                if inputs_importable($what, field, len) {
                    $field_made(field, len, return_value, kwargs_ptr, kwargs_len)
                }
            }
        }

        /// # Safety
        /// Polars' plugin call.
        #[no_mangle]
        pub unsafe extern "C" fn $expr(
            e: *mut pl_ffi_series::SeriesExport,
            input_len: usize,
            kwargs_ptr: *const u8,
            kwargs_len: usize,
            return_value: *mut pl_ffi_series::SeriesExport,
            context: *mut pl_ffi_series::CallerContext,
        ) {
            // SAFETY: Polars' arguments, passed on as they came
            unsafe { $expr_made(e, input_len, kwargs_ptr, kwargs_len, return_value, context) }
        }
    };
}

checked_entry_points!(
    "msgpack.encode",
    _polars_plugin_field_msgpack_encode => _polars_plugin_field_msgpack_encode_series,
    _polars_plugin_msgpack_encode => _polars_plugin_msgpack_encode_series
);
checked_entry_points!(
    "msgpack.decode",
    _polars_plugin_field_msgpack_decode => _polars_plugin_field_msgpack_decode_series,
    _polars_plugin_msgpack_decode => _polars_plugin_msgpack_decode_series
);
