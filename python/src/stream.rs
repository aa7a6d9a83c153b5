//! Arrow data handed to Python through the Arrow PyCapsule interface (`__arrow_c_stream__`,
//! `__arrow_c_schema__`), so Polars and pyarrow take it without a copy and without pyarrow being
//! a dependency.

use std::ffi::CStr;
use std::sync::Arc;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{ArrowError, DataType, SchemaRef};
use msgpack_arrow::types::meta;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyList};

const STREAM_CAPSULE: &CStr = c"arrow_array_stream";
const SCHEMA_CAPSULE: &CStr = c"arrow_schema";

/// Record batches of one schema, exported as an Arrow C stream each time it is asked for (so one
/// object can feed `pl.DataFrame(obj)` and `pyarrow.table(obj)` alike, more than once).
#[pyclass(module = "msgpack_arrow._internal", name = "ArrowStream", frozen)]
pub struct ArrowStream {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl ArrowStream {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        ArrowStream { schema, batches }
    }

    /// The schema and `batches` as an Arrow IPC stream (field and schema metadata kept).
    fn ipc<'py>(
        &self,
        py: Python<'py>,
        batches: &[RecordBatch],
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let mut out = Vec::new();
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &self.schema)
            .map_err(|e| PyValueError::new_err(format!("cannot write the schema: {e}")))?;
        for b in batches {
            w.write(b)
                .map_err(|e| PyValueError::new_err(format!("cannot write a batch: {e}")))?;
        }
        w.finish()
            .map_err(|e| PyValueError::new_err(format!("cannot write the stream: {e}")))?;
        drop(w);
        Ok(pyo3::types::PyBytes::new(py, &out))
    }
}

#[pymethods]
impl ArrowStream {
    /// The schema as an Arrow IPC stream with no batches (field and schema metadata kept): what a
    /// remembered scan schema is saved as.
    fn schema_ipc<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        self.ipc(py, &[])
    }

    /// An empty stream of the schema [`ArrowStream::schema_ipc`] wrote.
    #[staticmethod]
    fn from_schema_ipc(data: &[u8]) -> PyResult<Self> {
        let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(data), None)
            .map_err(|e| PyValueError::new_err(format!("not a saved schema: {e}")))?;
        Ok(ArrowStream::new(r.schema(), Vec::new()))
    }

    /// Pickled (a `scan_msgpack` LazyFrame holds its schema in one, and Polars pickles the
    /// frame's source to serialize it) as the Arrow IPC stream of its schema and batches.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, pyo3::types::PyBytes>,))> {
        let this = slf.get();
        let data = this.ipc(slf.py(), &this.batches)?;
        Ok((slf.get_type().getattr("from_ipc")?, (data,)))
    }

    /// The stream [`ArrowStream::__reduce__`] wrote.
    #[staticmethod]
    fn from_ipc(data: &[u8]) -> PyResult<Self> {
        let bad = |e: ArrowError| PyValueError::new_err(format!("not an Arrow IPC stream: {e}"));
        let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(data), None)
            .map_err(bad)?;
        let schema = r.schema();
        let batches = r.collect::<Result<Vec<_>, _>>().map_err(bad)?;
        Ok(ArrowStream::new(schema, batches))
    }

    /// The rows `offset..offset + length` of `streams` one after another (several files read
    /// as one: `read_arrow(glob)`), in the first stream's schema. Each other stream must have its
    /// columns and types (metadata and nested field names may differ); `names` name them in the
    /// error that says what differs.
    #[staticmethod]
    #[pyo3(signature = (streams, names, offset = 0, length = None))]
    fn concat(
        streams: Vec<PyRef<'_, ArrowStream>>,
        names: Vec<String>,
        offset: usize,
        length: Option<usize>,
    ) -> PyResult<Self> {
        let Some(first) = streams.first() else {
            return Err(PyValueError::new_err("no stream to concatenate"));
        };
        let schema = first.schema.clone();
        let name = |i: usize| names.get(i).map_or("?", String::as_str);
        let (mut skip, mut left) = (offset, length.unwrap_or(usize::MAX));
        let mut batches = Vec::new();
        for (i, s) in streams.iter().enumerate() {
            if let Some(diff) = msgpack_arrow::io::convert::schema_difference(&schema, &s.schema) {
                return Err(PyValueError::new_err(format!(
                    "{}: schema differs from the first input {}: {diff}",
                    name(i),
                    name(0)
                )));
            }
            for b in &s.batches {
                let n = b.num_rows();
                if skip >= n {
                    skip -= n;
                    continue;
                }
                if left == 0 {
                    break;
                }
                let k = (n - skip).min(left);
                let b = b.slice(skip, k);
                (skip, left) = (0, left - k);
                let b = msgpack_arrow::io::convert::in_schema(b, &schema)
                    .map_err(|e| PyValueError::new_err(format!("{}: {e}", name(i))))?;
                batches.push(b);
            }
        }
        Ok(ArrowStream::new(schema, batches))
    }

    /// Total number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// Number of record batches.
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.len()
    }

    /// Column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The layout the reader used (`records`, `columns`, `values`), from the schema metadata.
    #[getter]
    fn layout(&self) -> Option<String> {
        self.schema.metadata().get(meta::LAYOUT).cloned()
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        let cols: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect();
        format!("ArrowStream({} rows; {})", self.num_rows(), cols.join(", "))
    }

    /// The schema as an Arrow C schema capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// A new Arrow C stream over the batches. `requested_schema` is ignored (allowed by the
    /// protocol): the schema is what the reader produced.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let it = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok::<_, ArrowError>),
            self.schema.clone(),
        );
        stream_capsule(py, FFI_ArrowArrayStream::new(Box::new(it)))
    }
}

/// Wrap a C stream in a capsule named `arrow_array_stream`. Dropping the capsule releases the
/// stream unless a consumer moved it out (`FFI_ArrowArrayStream`'s `Drop` checks `release`).
pub fn stream_capsule(py: Python<'_>, s: FFI_ArrowArrayStream) -> PyResult<Bound<'_, PyCapsule>> {
    PyCapsule::new_with_value(py, s, STREAM_CAPSULE)
}

/// Wrap a schema in a capsule named `arrow_schema`.
pub fn schema_capsule<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    let s = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyCapsule::new_with_value(py, s, SCHEMA_CAPSULE)
}

/// Import the Arrow C stream of any object with `__arrow_c_stream__` (a Polars DataFrame, a
/// pyarrow Table or RecordBatchReader, an [`ArrowStream`], ...), or of such a capsule itself.
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = if let Ok(c) = obj.cast::<PyCapsule>() {
        c.clone()
    } else if obj.hasattr("__arrow_c_stream__")? {
        obj.call_method0("__arrow_c_stream__")?
            .cast_into::<PyCapsule>()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "expected a polars DataFrame or an object with __arrow_c_stream__, got {}",
            obj.get_type().name()?
        )));
    };
    let ptr = capsule.pointer_checked(Some(STREAM_CAPSULE))?;
    // SAFETY: the capsule is named "arrow_array_stream", so by the PyCapsule protocol it holds an
    // ArrowArrayStream; `from_raw` moves it out and marks the original released, so the capsule's
    // destructor does not release it a second time.
    unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr().cast::<FFI_ArrowArrayStream>()) }
        .map_err(|e| PyValueError::new_err(format!("cannot import the Arrow stream: {e}")))
}

/// The streams of a whole table: `data` itself, or a list of the pieces Python cut a DataFrame into
/// at its chunk boundaries (`msgpack_arrow._export.pieces`: Polars' own export copies a frame of
/// several chunks into one first). The pieces share one schema, that of the first.
pub fn import_pieces(
    data: &Bound<'_, PyAny>,
) -> PyResult<(SchemaRef, Vec<RecordBatchStreamReader>)> {
    use arrow_array::RecordBatchReader;
    let streams = match data.cast::<PyList>() {
        Ok(list) => list
            .iter()
            .map(|p| import_stream(&p))
            .collect::<PyResult<Vec<_>>>()?,
        Err(_) => vec![import_stream(data)?],
    };
    let Some(schema) = streams.first().map(|s| s.schema()) else {
        return Err(PyValueError::new_err("an empty list of pieces: no table"));
    };
    if let Some(other) = streams.iter().find(|s| s.schema() != schema) {
        return Err(PyValueError::new_err(format!(
            "the pieces of the table differ in schema: {schema:?} and {:?}",
            other.schema()
        )));
    }
    Ok((schema, streams))
}

/// The schema of an object with `__arrow_c_schema__` (a pyarrow Schema, a [`crate::reader::PyReader`],
/// ...) or `__arrow_c_stream__` (a Polars DataFrame; no batch is read).
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    use arrow_array::RecordBatchReader;
    if obj.hasattr("__arrow_c_schema__")? {
        let capsule = obj
            .call_method0("__arrow_c_schema__")?
            .cast_into::<PyCapsule>()?;
        let ptr = capsule.pointer_checked(Some(SCHEMA_CAPSULE))?;
        // SAFETY: a capsule named "arrow_schema" holds an ArrowSchema (PyCapsule protocol); it is
        // only read here, and stays owned (and released) by the capsule.
        let ffi = unsafe { ptr.cast::<FFI_ArrowSchema>().as_ref() };
        let schema = arrow_schema::Schema::try_from(ffi)
            .map_err(|e| PyValueError::new_err(format!("cannot import the Arrow schema: {e}")))?;
        return Ok(Arc::new(schema));
    }
    Ok(Arc::clone(&import_stream(obj)?.schema()))
}

/// The Arrow C interface carries names as NUL-terminated strings, so a key holding a NUL byte
/// (legal in msgpack and Python) cannot cross it: a `bad key` error naming the first such name
/// in column `name` of type `t`.
pub fn check_c_names(name: &str, t: &DataType) -> msgpack_arrow::Result<()> {
    match nul_in_name(name, t) {
        Some(path) => Err(
            msgpack_arrow::Error::new(msgpack_arrow::ErrorKind::Key(format!(
                "{path:?} holds a NUL byte, which the Arrow C interface (pyarrow, Polars) cannot \
             carry; the Rust crate and the CLI read it"
            )))
            .prepend_path(name),
        ),
        None => Ok(()),
    }
}

/// The path of the first name holding a NUL byte in column `name` of type `t`, if any.
fn nul_in_name(name: &str, t: &DataType) -> Option<String> {
    if name.contains('\0') {
        return Some(name.to_string());
    }
    let children: Vec<_> = match t {
        DataType::Struct(fs) => fs.iter().collect(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![f],
        _ => Vec::new(),
    };
    children
        .into_iter()
        .find_map(|f| nul_in_name(f.name(), f.data_type()).map(|p| format!("{name}.{p}")))
}
