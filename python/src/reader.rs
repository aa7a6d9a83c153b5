//! `Reader`: the core [`msgpack_arrow::Reader`] behind a Python iterator of Arrow batches.
//!
//! Every decoding step runs with the GIL released (`Python::detach`), inside a panic guard; the
//! GIL is taken back between batches to check for Ctrl-C.

use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use msgpack_arrow::io::compress::{open_buffer, open_input_with};
use msgpack_arrow::io::{is_url, StorageOptions};
use msgpack_arrow::{
    Dialect, Layout, ObjectArrays, OnTruncated, Reader, ReaderBuilder, TensorMode,
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{guarded, to_pyerr, Op};
use crate::stream::{check_c_names, import_schema, schema_capsule, ArrowStream};

/// Where the bytes come from.
enum Source {
    /// A file: memory-mapped, or decompressed on the fly (`.zst`, `.lz4`, `.gz`).
    Path(PathBuf),
    /// Bytes in memory (a Python buffer viewed in place, or a copy of it).
    Buffer(Buffer),
    /// An object in a remote store (s3://, gs://, az://, http(s)://), read as it arrives.
    Url(String, StorageOptions),
    /// Decompressed bytes this read is the last to use ([`HeldInput`]): freed as decoded.
    Owned(Vec<u8>),
    /// A plain file from a position ([`FileRange`]): mapped, its pages dropped behind the read.
    FileAt(std::fs::File, usize),
}

/// The rest of a file opened with `open(path, "rb")`, from its position: read as its path is
/// (mapped, pages handed back behind the decoder), not through a Python `mmap`, whose pages all
/// stayed resident (a 305 MB file read from its file object peaked at 611 MB, from its path 331).
#[pyclass(frozen, module = "msgpack_arrow._internal")]
pub struct FileRange {
    file: std::fs::File,
    offset: usize,
}

#[pymethods]
impl FileRange {
    /// The file of descriptor `fd` (duplicated: the caller's stays its own) from byte `offset`.
    #[new]
    fn new(fd: i32, offset: usize) -> PyResult<Self> {
        use std::os::fd::{BorrowedFd, OwnedFd};
        if fd < 0 {
            return Err(PyValueError::new_err("a negative file descriptor"));
        }
        // SAFETY: the caller's descriptor is open for the duration of this call (it is the
        // fileno() of a file object it holds); it is only borrowed to be duplicated.
        let owned: OwnedFd = unsafe { BorrowedFd::borrow_raw(fd) }
            .try_clone_to_owned()
            .map_err(|e| PyValueError::new_err(format!("file descriptor {fd}: {e}")))?;
        Ok(FileRange {
            file: owned.into(),
            offset,
        })
    }
}

/// A compressed file's decompressed bytes, held for the reads of one scan (its types, then its
/// rows) so it is decompressed once (`msgpack_arrow::io::decompress_whole`). A reader given it
/// reads the bytes; after `last_read()`, the next reader takes them (and frees them as it
/// decodes), and any later one is an error.
#[pyclass(frozen, module = "msgpack_arrow._internal")]
pub struct HeldInput {
    bytes: Mutex<Option<Buffer>>,
    last: std::sync::atomic::AtomicBool,
}

#[pymethods]
impl HeldInput {
    /// The next reader given this is the last: it takes the bytes.
    fn last_read(&self) {
        self.last.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn __len__(&self) -> usize {
        self.bytes
            .lock()
            .expect("not poisoned")
            .as_ref()
            .map_or(0, |b| b.len())
    }
}

impl HeldInput {
    fn source(&self) -> PyResult<Source> {
        let mut held = self.bytes.lock().expect("not poisoned");
        if !self.last.load(std::sync::atomic::Ordering::SeqCst) {
            return held
                .clone()
                .map(Source::Buffer)
                .ok_or_else(|| PyRuntimeError::new_err("the held input was read already"));
        }
        let buf = held
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the held input was read already"))?;
        // freed as decoded only where no other buffer shares the bytes
        Ok(match buf.into_vec::<u8>() {
            Ok(v) => Source::Owned(v),
            Err(buf) => Source::Buffer(buf),
        })
    }
}

/// The decompressed bytes of the compressed file at `path`, if they come to at most `most`
/// bytes (`None` for a plain file or a larger stream).
#[pyfunction]
pub fn decompress_whole(py: Python<'_>, path: PathBuf, most: usize) -> PyResult<Option<HeldInput>> {
    let held = py
        .detach(|| guarded(|| Ok(msgpack_arrow::io::decompress_whole(&path, most)?)))
        .map_err(|f| to_pyerr(py, Op::Decode, f))?;
    Ok(held.map(|v| HeldInput {
        bytes: Mutex::new(Some(Buffer::from_vec(v))),
        last: false.into(),
    }))
}

/// Keeps a read-only Python buffer export alive for as long as Arrow arrays point into it.
struct PyOwner(#[allow(dead_code)] std::panic::AssertUnwindSafe<PyBuffer<u8>>);

fn parse<T: std::str::FromStr<Err = msgpack_arrow::Error>>(s: &str) -> PyResult<T> {
    s.parse()
        .map_err(|e: msgpack_arrow::Error| PyValueError::new_err(e.to_string()))
}

impl Source {
    fn from_py(obj: &Bound<'_, PyAny>, storage: StorageOptions) -> PyResult<Source> {
        if let Ok(held) = obj.cast::<HeldInput>() {
            return held.get().source();
        }
        if let Ok(range) = obj.cast::<FileRange>() {
            let r = range.get();
            let file = r
                .file
                .try_clone()
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            return Ok(Source::FileAt(file, r.offset));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            let s = s.to_str()?;
            if is_url(Path::new(s)) {
                return Ok(Source::Url(s.to_string(), storage));
            }
            return Ok(Source::Path(PathBuf::from(s)));
        }
        let py = obj.py();
        let pb = match PyBuffer::<u8>::get(obj) {
            Ok(b) => b,
            // not a byte buffer (e.g. a memoryview of another format, or strided): copy it with bytes()
            Err(_) => {
                let b = py
                    .import("builtins")?
                    .getattr("bytes")?
                    .call1((obj,))
                    .map_err(|_| {
                        PyTypeError::new_err(format!(
                        "source must be a path, bytes-like object or binary file object, got {}",
                        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ))
                    })?;
                let b = b.cast_into::<PyBytes>()?;
                PyBuffer::<u8>::get(b.as_any())?
            }
        };
        if pb.readonly() && pb.is_c_contiguous() && pb.len_bytes() > 0 {
            let ptr = NonNull::new(pb.buf_ptr().cast::<u8>())
                .ok_or_else(|| PyValueError::new_err("null buffer"))?;
            let len = pb.len_bytes();
            // SAFETY: the buffer is read-only and C-contiguous, `ptr`/`len` describe it, and the
            // export (held by the owner) keeps the memory alive and unmoved until it is released,
            // which happens only when the last Arrow buffer pointing into it is dropped.
            Ok(Source::Buffer(unsafe {
                Buffer::from_custom_allocation(
                    ptr,
                    len,
                    Arc::new(PyOwner(std::panic::AssertUnwindSafe(pb))),
                )
            }))
        } else {
            // writable (a bytearray could change under the decoded arrays) or empty: copy once
            Ok(Source::Buffer(Buffer::from_vec(pb.to_vec(py)?)))
        }
    }

    fn build(self, b: ReaderBuilder) -> msgpack_arrow::Result<Reader> {
        match self {
            Source::Owned(bytes) => b.build_from_owned_bytes(bytes),
            Source::FileAt(file, offset) => b.build_from_file_at(&file, offset),
            Source::Path(p) => b.build_from_path(p),
            // compressed bytes are decompressed whatever their source (wire::sniff); twice for
            // a stream of rows, its types taken from every row as uncompressed bytes' are
            Source::Buffer(buf) => {
                let open = || open_buffer(buf.clone());
                b.build_from_reopenable(open()?, open)
            }
            // fetched once: held in memory (typed from every row) up to the bound
            Source::Url(url, storage) => {
                b.build_from_held(open_input_with(Path::new(&url), None, &storage)?)
            }
        }
    }
}

/// Polars exports `string_view`, `binary_view` and large lists; the decoder builds the plain
/// types, so an override type is mapped to them (same values).
pub(crate) fn plain_type(t: &DataType) -> DataType {
    // (nested fields keep their nullability: a complex column's FixedSizeList items are not
    // null, and `read_arrow`'s own schema given back must match the batches)
    let item = |f: &Field| {
        Arc::new(Field::new(
            f.name(),
            plain_type(f.data_type()),
            f.is_nullable(),
        ))
    };
    match t {
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::BinaryView | DataType::LargeBinary => DataType::Binary,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => DataType::List(item(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(item(f), *n),
        DataType::Struct(fs) => DataType::Struct(Fields::from(
            fs.iter()
                .map(|f| Field::new(f.name(), plain_type(f.data_type()), f.is_nullable()))
                .collect::<Vec<_>>(),
        )),
        other => other.clone(),
    }
}

/// `s` with Polars' view/large types as the plain ones the decoders build; its fields' metadata
/// (a numpy dtype recorded by `read_arrow`) kept where `keep_metadata`.
fn plain_schema(s: &Schema, keep_metadata: bool) -> Schema {
    Schema::new(
        s.fields()
            .iter()
            .map(|f| {
                let plain = Field::new(f.name(), plain_type(f.data_type()), true);
                if keep_metadata {
                    plain.with_metadata(f.metadata().clone())
                } else {
                    plain
                }
            })
            .collect::<Vec<_>>(),
    )
}

/// Reads msgpack-numpy as Arrow record batches.
///
/// `Reader(source, *, layout="auto", columns=None, schema=None, schema_inferred=True, schema_overrides=None, tensor="array",
/// object_arrays="error", dialect="auto", batch_size=65536, batch_bytes=16777216, infer_rows=None, n_rows=None,
/// skip_rows=0, for_polars=False, strict_schema=False)`
///
/// `source` is a path (`str`) or a bytes-like object (read-only buffers are decoded in place).
/// `schema` (an object with `__arrow_c_schema__` or `__arrow_c_stream__`) is used instead of
/// inferring one; it is taken as inferred from other rows, so a value of another kind than its
/// column's is an error, never converted; with `schema_inferred=False` the types are the caller's
/// and values are converted into them exactly (as `schema_overrides`). `schema_overrides` (likewise; e.g. an empty Polars DataFrame) gives the types
/// of the columns it names: they are decoded as inferred and cast (arrow-cast, values that do not
/// fit are errors) batch by batch. `for_polars` maps the types Polars cannot import (`Array`
/// of width 0 → `List`; seconds → milliseconds). `strict_schema`: with `schema`, a key it does
/// not have is a `DecodeError` (default: skipped). `skip_rows`: start at that row (a file with a
/// record index, `FILE.offsets`, is not walked to it). Iterating yields one `ArrowStream`
/// per batch; `read_all()` gives them all as one.
#[pyclass(module = "msgpack_arrow._internal", name = "Reader")]
pub struct PyReader {
    /// Taken out while a batch is decoded with the GIL released (see `next_batch`).
    inner: Mutex<Option<Reader>>,
    /// the schema inferred or given, before `schema_overrides` and `for_polars`
    decoded: SchemaRef,
    /// the output schema (the core converts each batch to it)
    schema: SchemaRef,
    layout: Layout,
    reason: String,
    done: bool,
    /// what made the reader (projection included): more files read as this one
    /// ([`PyReader::read_with`])
    builder: ReaderBuilder,
}

#[pymethods]
impl PyReader {
    #[new]
    #[pyo3(signature = (source, *, layout = "auto", columns = None, schema = None, schema_inferred = true, schema_overrides = None, tensor = "array", object_arrays = "error", dialect = "auto", batch_size = 65536, batch_bytes = 16777216, infer_rows = None, n_rows = None, skip_rows = 0, for_polars = false, strict_schema = false, on_truncated = "error", conflicts = "error", lists = "list", npy_ext = None, numpy_extension = false, storage_options = None, eager = false, whole_chunks = false, hold_decompressed = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        layout: &str,
        columns: Option<Vec<String>>,
        schema: Option<&Bound<'_, PyAny>>,
        schema_inferred: bool,
        schema_overrides: Option<&Bound<'_, PyAny>>,
        tensor: &str,
        object_arrays: &str,
        dialect: &str,
        batch_size: usize,
        batch_bytes: usize,
        infer_rows: Option<usize>,
        n_rows: Option<usize>,
        skip_rows: usize,
        for_polars: bool,
        strict_schema: bool,
        on_truncated: &str,
        conflicts: &str,
        lists: &str,
        npy_ext: Option<i8>,
        numpy_extension: bool,
        storage_options: Option<Vec<(String, String)>>,
        eager: bool,
        whole_chunks: bool,
        hold_decompressed: Option<usize>,
    ) -> PyResult<Self> {
        if batch_size == 0 {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        if batch_bytes == 0 {
            return Err(PyValueError::new_err("batch_bytes must be at least 1"));
        }
        let source = Source::from_py(source, StorageOptions(storage_options.unwrap_or_default()))?;
        let builder = ReaderBuilder::new()
            .with_layout(parse::<Layout>(layout)?)
            .with_tensor(parse::<TensorMode>(tensor)?)
            .with_object_arrays(parse::<ObjectArrays>(object_arrays)?)
            .with_dialect(parse::<Dialect>(dialect)?)
            .with_batch_size(batch_size)
            .with_batch_bytes(batch_bytes)
            .with_infer_rows(infer_rows)
            .with_n_rows(n_rows)
            .with_skip_rows(skip_rows)
            .with_strict_schema(strict_schema)
            .with_on_truncated(parse::<OnTruncated>(on_truncated)?)
            .with_conflicts(parse::<msgpack_arrow::Conflicts>(conflicts)?)
            .with_lists(parse::<msgpack_arrow::Lists>(lists)?)
            .with_npy_ext(npy_ext)
            .with_eager(eager)
            .with_whole_chunks(whole_chunks);
        let builder = match hold_decompressed {
            Some(n) => builder.with_hold_decompressed(n),
            None => builder,
        };
        // a schema inferred from another file (a scan's first): a value of another kind than
        // its column's is then an error, as in a read of all the files at once; the caller's
        // own (`schema_inferred=False`, Polars' view/large types as the plain ones it builds)
        // converts values into its types
        let builder = match schema {
            Some(s) if schema_inferred => builder
                .with_schema(import_schema(s)?)
                .with_schema_inferred(true),
            Some(s) => builder.with_schema(Arc::new(plain_schema(&*import_schema(s)?, true))),
            None => builder,
        };
        let overrides = schema_overrides.map(import_schema).transpose()?;
        // the decoder reads overridden columns straight into their types (so an override
        // resolves a type conflict); Polars' view/large types as the plain ones it builds
        let builder = builder
            .with_schema_overrides(overrides.as_ref().map(|o| Arc::new(plain_schema(o, false))));
        let builder = builder
            .with_polars_types(for_polars)
            .with_numpy_extension(numpy_extension);
        let builder = builder.with_projection(columns);
        let kept = builder.clone();
        let reader = py
            .detach(|| {
                guarded(|| {
                    let reader = source.build(builder)?;
                    for f in reader.schema().fields() {
                        check_c_names(f.name(), f.data_type())?;
                    }
                    Ok(reader)
                })
            })
            .map_err(|f| to_pyerr(py, Op::Decode, f))?;
        Ok(PyReader {
            decoded: reader.decoded_schema(),
            schema: reader.schema(),
            layout: reader.layout(),
            reason: reader.layout_reason().to_string(),
            inner: Mutex::new(Some(reader)),
            done: false,
            builder: kept,
        })
    }

    /// The layout used (`auto` resolved): `records`, `columns` or `values`.
    #[getter]
    fn layout(&self) -> String {
        self.layout.to_string()
    }

    /// Why that layout was chosen.
    #[getter]
    fn layout_reason(&self) -> &str {
        &self.reason
    }

    /// With `on_truncated="keep"`, where the input was cut: `(byte offset, complete objects
    /// kept)`, or None. Known at once for files and bytes, at the end for compressed streams.
    #[getter]
    fn truncation(&self) -> Option<(u64, u64)> {
        let r = self.inner.lock().ok()?;
        r.as_ref()?.truncation().map(|t| (t.offset, t.objects))
    }

    /// Column names of the output, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The output schema as an Arrow C schema capsule.
    fn __arrow_c_schema__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, pyo3::types::PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// An empty `ArrowStream` with the output schema (`pl.DataFrame(r.empty()).schema`).
    fn empty(&self) -> ArrowStream {
        ArrowStream::new(self.schema.clone(), Vec::new())
    }

    /// An empty `ArrowStream` with the schema decoded before `schema_overrides` are applied: pass
    /// it as `schema=` to read more files exactly as this one.
    fn decoded_schema(&self) -> ArrowStream {
        ArrowStream::new(self.decoded.clone(), Vec::new())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<ArrowStream>> {
        Ok(self
            .next_batch(py)?
            .map(|b| ArrowStream::new(self.schema.clone(), vec![b])))
    }

    /// Every remaining batch, as one `ArrowStream`. Checks for Ctrl-C between batches.
    fn read_all(&mut self, py: Python<'_>) -> PyResult<ArrowStream> {
        Ok(ArrowStream::new(self.schema.clone(), self.rest(py)?))
    }

    /// The remaining rows of this reader's input and all rows of the files at `paths`, read as
    /// this one is (same options and schema), the files at once on the thread pool: one batch,
    /// and the rows each input gave (this one first). For many small files, where a reader and a
    /// frame per file cost Polars and Python more than decoding it (`scan_msgpack`'s glob of
    /// small files). An error in any file is raised without naming it: read them one by one
    /// to have it named.
    fn read_with(
        &mut self,
        py: Python<'_>,
        paths: Vec<String>,
    ) -> PyResult<(ArrowStream, Vec<usize>)> {
        use rayon::prelude::*;
        let own = self.rest(py)?;
        let (builder, schema) = (&self.builder, &self.schema);
        let others = py
            .detach(|| {
                guarded(|| {
                    Ok(paths
                        .par_iter()
                        .map(|p| {
                            // (every row of the other files: a window is this reader's own)
                            let b = builder.clone().with_n_rows(None).with_skip_rows(0);
                            let r = b.build_from_path(p)?;
                            if r.schema() != *schema {
                                return Err(msgpack_arrow::Error::new(
                                    msgpack_arrow::ErrorKind::Usage(format!(
                                        "{p}: another schema than the files read with it"
                                    )),
                                ));
                            }
                            r.collect::<msgpack_arrow::Result<Vec<_>>>()
                        })
                        .collect::<msgpack_arrow::Result<Vec<_>>>()?)
                })
            })
            .map_err(|f| to_pyerr(py, Op::Decode, f))?;
        let counts = std::iter::once(&own)
            .chain(&others)
            .map(|bs| bs.iter().map(RecordBatch::num_rows).sum())
            .collect();
        let all: Vec<RecordBatch> = own
            .into_iter()
            .chain(others.into_iter().flatten())
            .collect();
        let one = arrow_select::concat::concat_batches(schema, &all)
            .map_err(|e| PyValueError::new_err(format!("cannot join the files' rows: {e}")))?;
        Ok((ArrowStream::new(schema.clone(), vec![one]), counts))
    }
}

impl PyReader {
    /// Every remaining batch. Checks for Ctrl-C between batches.
    fn rest(&mut self, py: Python<'_>) -> PyResult<Vec<RecordBatch>> {
        let mut batches = Vec::new();
        while let Some(b) = self.next_batch(py)? {
            batches.push(b);
            py.check_signals()?;
        }
        Ok(batches)
    }

    /// Decode the next batch with the GIL released (the core slices it to what `n_rows` leaves).
    fn next_batch(&mut self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        // Take the reader out of the lock before releasing the GIL: a second thread calling in
        // meanwhile gets an error instead of blocking on the lock while holding the GIL.
        let mut reader = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("reader poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this Reader is in use by another thread"))?;
        let r = py.detach(|| guarded(|| Ok(reader.next().transpose()?)));
        *self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("reader poisoned"))? = Some(reader);
        match r {
            Err(f) => {
                self.done = true;
                Err(to_pyerr(py, Op::Decode, f))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Ok(Some(b)) => Ok(Some(b)),
        }
    }
}
