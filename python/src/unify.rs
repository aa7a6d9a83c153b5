//! `unify_schemas`: the schema several files read as one would have, for the Python readers'
//! fallback where a glob's files differ as rows of one file may (the core's rules, so the CLI's
//! `convert` and the Python readers type shards alike).

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;

use crate::errors::{to_pyerr, Op};
use crate::stream::{import_schema, ArrowStream};

/// `unify_schemas([(name, schema), ...])`: each file's schema (objects with `__arrow_c_schema__`,
/// in order) unified as rows of one file, as an empty stream of that schema; `None` where they are
/// all one schema. A column no one type holds is a `DecodeError` naming the file, the column and
/// both types.
#[pyfunction]
pub fn unify_schemas(
    py: Python<'_>,
    schemas: Vec<(String, Bound<'_, PyAny>)>,
) -> PyResult<Option<ArrowStream>> {
    let schemas = schemas
        .into_iter()
        .map(|(name, s)| Ok((PathBuf::from(name), import_schema(&s)?)))
        .collect::<PyResult<Vec<_>>>()?;
    let hint = |name: &str| format!("schema_overrides={{{name:?}: dtype}} gives one");
    let together = msgpack_arrow::io::unify::unify_schemas(&schemas, &hint)
        .map_err(|e| to_pyerr(py, Op::Decode, e.into()))?;
    Ok(together.map(|s| ArrowStream::new(Arc::new(s), Vec::new())))
}
