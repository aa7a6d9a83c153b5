//! `write`: Arrow data from Python (anything with `__arrow_c_stream__`) → msgpack-numpy;
//! `write_iter`: the same from an iterator of such objects (`sink_msgpack`: a LazyFrame's
//! `collect_batches()`), one batch in memory at a time.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use msgpack_arrow::io::compress::{Codec, CompressedWriter};
use msgpack_arrow::io::{Format, Output, StorageOptions};
use msgpack_arrow::types::extension;
use msgpack_arrow::write::{slice_rows, Parts, SliceSink, PARTS_MIN_BYTES, SAMPLE_ROWS};
use msgpack_arrow::{mark_ragged_ndarrays, Layout, Writer, WriterBuilder};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use crate::errors::{guarded, to_pyerr, Failure, Op};
use crate::stream::{import_pieces, import_schema, import_stream};

/// Write the batches of `data` (an object with `__arrow_c_stream__`, or such a capsule; with
/// `whole_table`, also a list of them, the pieces of one table) as msgpack-numpy.
///
/// With `path`, the file appears only when complete (a temporary file beside it, renamed over it);
/// a failed write leaves any previous file untouched. Without `path`, the bytes are returned.
/// The GIL is released while encoding; Ctrl-C is checked between batches.
#[pyfunction]
#[pyo3(signature = (data, path = None, *, layout = None, aligned = false, whole_table = false, missing = "auto", dialect = "auto", storage_options = None, fsync = true, target = None, index = false, in_memory = false))]
#[allow(clippy::too_many_arguments)]
pub fn write<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    path: Option<PathBuf>,
    layout: Option<&str>,
    aligned: bool,
    whole_table: bool,
    missing: &str,
    dialect: &str,
    storage_options: Option<Vec<(String, String)>>,
    fsync: bool,
    target: Option<Bound<'py, PyAny>>,
    index: bool,
    in_memory: bool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let storage = StorageOptions(storage_options.unwrap_or_default());
    check_index(index, path.as_deref())?;
    let layout = parse_layout(layout)?;
    let mut builder = WriterBuilder::new()
        .with_aligned(aligned)
        .with_missing(parse_missing(missing)?)
        .with_dialect(parse_dialect(dialect)?);
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    // `whole_table` (a DataFrame, in memory anyway): its batches (imported without a copy) are
    // looked at first, for List columns that held ndarrays (msgpack_arrow::mark_ragged_ndarrays).
    // `in_memory` (a pyarrow Table, ...) written to bytes: held whole too, its schema as it is
    let to_bytes = path.is_none() && target.is_none();
    let mut stream: Box<dyn RecordBatchReader + Send> = if whole_table || (in_memory && to_bytes) {
        let (schema, streams) = import_pieces(data)?;
        let batches = py
            .detach(|| {
                guarded(|| {
                    Ok(streams
                        .into_iter()
                        .flatten()
                        .collect::<Result<Vec<RecordBatch>, _>>()?)
                })
            })
            .map_err(err)?;
        let schema = match whole_table {
            true => mark_ragged_ndarrays(&schema, &batches),
            false => schema,
        };
        // (where nulls leave keys out, a column's first value may be in a later batch)
        builder = builder.with_table(&batches);
        if to_bytes {
            let builder = builder.with_layout(default_layout(layout, &schema));
            return bytes_in_place(py, builder, schema, &batches).map(Some);
        }
        Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            schema,
        ))
    } else {
        Box::new(import_stream(data)?)
    };
    let schema = stream.schema();
    let builder = builder.with_layout(default_layout(layout, &schema));
    if let Some(target) = target {
        // a file object: written in chunks as they are encoded, never the whole output at once
        write_file_object(py, builder, &mut stream, schema, target)?;
        return Ok(None);
    }
    match path {
        Some(path) => {
            let w = py
                .detach(|| guarded(|| Ok(builder.build(create(&path, &storage, fsync)?, schema)?)))
                .map_err(err)?;
            let file = pump(py, &mut stream, w, Some(&path))?;
            // dropping an uncommitted AtomicFile (on any error above) deletes the temporary file
            commit(py, file, &path, index)?;
            Ok(None)
        }
        None => {
            let w = builder
                .build(Vec::new(), schema)
                .map_err(|e| err(e.into()))?;
            let bytes = pump(py, &mut stream, w, None)?;
            Ok(Some(PyBytes::new(py, &bytes)))
        }
    }
}

/// A table in memory as `bytes`, made in one allocation of the output's size (advised into huge
/// pages), where a growing `Vec` and its copy into `bytes` faulted in fresh pages twice.
///
/// Two ways, chosen by counting the first rows: where ndarray payloads are most of the output,
/// a first pass counts the whole output (copying no payload) and a second encodes into the
/// `bytes` object itself; where they are not (scalar records), that count would cost a second
/// encode, so the table is encoded once into a buffer sized from the sample, then copied. A
/// container that holds its rows to the end (the `columns` map) counts nothing in the sample: a
/// small one is encoded once and copied too, a big one counted.
///
/// A big table of rows (more than [`PARTS_MIN_BYTES`]) is cut into one part per thread, each
/// written by its own writer at once ([`Parts`]): counted then encoded into its range of the
/// `bytes`, or (scalars) encoded into its own buffer, the buffers then copied at once.
fn bytes_in_place<'py>(
    py: Python<'py>,
    builder: WriterBuilder,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> PyResult<Bound<'py, PyBytes>> {
    let err = |e: msgpack_arrow::Error| to_pyerr(py, Op::Encode, e.into());
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let table: usize = batches.iter().map(|b| b.get_array_memory_size()).sum();
    let sample_rows = rows.min(SAMPLE_ROWS);
    let first = slice_rows(batches, 0, sample_rows);
    let all = || RecordBatchIterator::new(batches.iter().cloned().map(Ok), schema.clone());
    let mut sample = builder.clone().build_count(schema.clone()).map_err(err)?;
    let mut first = RecordBatchIterator::new(first.into_iter().map(Ok), schema.clone());
    encode_all(py, &mut first, &mut sample, None)?;
    let (counted, uncopied) = (sample.counted(), sample.uncopied());
    // the estimate can be far off where the first rows are not like the others: a reservation
    // the system refuses falls back to counting the whole table (never an abort)
    let estimate_of = |counted: u64| {
        ((counted as f64 * rows as f64 / sample_rows.max(1) as f64 * 1.1) as usize)
            .saturating_add(4096)
    };
    let mut estimate = estimate_of(counted);
    // a container that holds its rows until the end (the `columns` map) counted nothing: a small
    // table is encoded once and copied, where counting it first encoded it twice (a map of
    // 10,000 columns: a count is about as long as the write); a big one is counted whole
    let small_held = counted == 0 && rows > 0 && table <= ENCODE_ONCE_MAX;
    if small_held {
        estimate = table + table / 4 + 64 * schema.fields().len() + 4096;
    }
    let once = (counted > 0 && uncopied * 2 < counted) || small_held;
    // a big table of rows (concatenated or in one top-level array): its parts at once, one per
    // thread
    let threads = rayon::current_num_threads();
    if threads > 1 && table >= PARTS_MIN_BYTES {
        let step = (SLICE_BYTES as u128 * rows as u128 / table.max(1) as u128).max(1) as usize;
        let cut = py
            .detach(|| guarded(|| Ok(Parts::cut(&builder, &schema, batches, threads)?)))
            .map_err(|f| to_pyerr(py, Op::Encode, f))?;
        if let Some(parts) = cut {
            // a top-level array holds its rows to the end: the parts' writers count them
            let (counted, uncopied) = match counted {
                0 => py
                    .detach(|| guarded(|| Ok(parts.sample(&builder, &schema, sample_rows)?)))
                    .map_err(|f| to_pyerr(py, Op::Encode, f))?,
                _ => (counted, uncopied),
            };
            let scalars = counted > 0 && uncopied * 2 < counted;
            if scalars && parts.independent() {
                let estimate = estimate_of(counted);
                if let Some(out) = bytes_of_parts(py, &builder, &schema, &parts, step, estimate)? {
                    return Ok(out);
                }
            }
            // (a scalar table whose parts depend on each other, aligned: encoded once, below)
            if !scalars || parts.independent() {
                if let Some(parts) = count_parts(py, &builder, &schema, parts, step)? {
                    return fill_parts(py, &builder, &schema, &parts, step);
                }
            }
        }
    }
    let mut v: Vec<u8> = Vec::new();
    if once && v.try_reserve_exact(estimate).is_ok() {
        msgpack_arrow::advise_huge_range(v.as_mut_ptr(), estimate);
        let w = builder.build(Growing(v), schema.clone()).map_err(err)?;
        let Growing(v) = pump(py, &mut all(), w, None)?;
        return new_bytes(py, v.len(), |buf| {
            py.detach(|| buf.copy_from_slice(&v));
            Ok(())
        });
    }
    // the count copies no tensor payload: a fraction of the write for a tensor table
    let mut counted = builder.clone().build_count(schema.clone()).map_err(err)?;
    encode_all(py, &mut all(), &mut counted, None)?;
    let len = py
        .detach(|| guarded(|| Ok(counted.finish_count()?)))
        .map_err(|f| to_pyerr(py, Op::Encode, f))?;
    let len = usize::try_from(len)
        .map_err(|_| PyValueError::new_err(format!("the output ({len} bytes) is too big")))?;
    new_bytes(py, len, |buf| {
        let w = builder
            .build(SliceSink::new(buf), schema.clone())
            .map_err(err)?;
        let filled = pump(py, &mut all(), w, None)?.filled();
        if filled != len {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "the output came to {filled} bytes, not the {len} counted"
            )));
        }
        Ok(())
    })
}

/// Each part of a table cut for the threads ([`Parts`]) encoded into its own growing buffer, all
/// at once, then copied into one `bytes` (the copies at once too). `None` where the buffers'
/// estimated size is refused (the output is then counted and made in place, one copy of it).
fn bytes_of_parts<'py>(
    py: Python<'py>,
    builder: &WriterBuilder,
    schema: &SchemaRef,
    parts: &Parts<'_>,
    step: usize,
    estimate: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    let n = parts.ranges().len();
    let want = estimate / n + 4096;
    let mut bufs = Vec::with_capacity(n);
    for _ in 0..n {
        let mut v: Vec<u8> = Vec::new();
        if v.try_reserve_exact(want).is_err() {
            return Ok(None);
        }
        msgpack_arrow::advise_huge_range(v.as_mut_ptr(), want);
        bufs.push(Some(Growing(v)));
    }
    let mut ws = parts
        .writers(builder, schema, |i| {
            bufs[i].take().expect("one buffer per part")
        })
        .map_err(|e| err(e.into()))?;
    in_steps(py, || ws.step(step))?;
    let bufs: Vec<Vec<u8>> = py
        .detach(|| guarded(|| Ok(ws.finish()?)))
        .map_err(err)?
        .into_iter()
        .map(|Growing(v)| v)
        .collect();
    let out = new_bytes(py, bufs.iter().map(Vec::len).sum(), |out| {
        py.detach(|| {
            let mut rest = out;
            let mut pairs = Vec::with_capacity(bufs.len());
            for b in &bufs {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(b.len());
                pairs.push((head, b));
                rest = tail;
            }
            pairs
                .into_par_iter()
                .for_each(|(dst, src)| dst.copy_from_slice(src));
        });
        Ok(())
    })?;
    Ok(Some(out))
}

/// Run `step` without the GIL until it says all is done, with a Ctrl-C check between steps.
fn in_steps(
    py: Python<'_>,
    mut step: impl FnMut() -> msgpack_arrow::Result<bool> + Send,
) -> PyResult<()> {
    while py
        .detach(|| guarded(|| Ok(step()?)))
        .map_err(|f| to_pyerr(py, Op::Encode, f))?
    {
        py.check_signals()?;
    }
    Ok(())
}

/// [`Parts`] counted in steps, with a Ctrl-C check between them: `None` where the parts could not
/// be resumed where they were cut.
fn count_parts<'a>(
    py: Python<'_>,
    builder: &WriterBuilder,
    schema: &SchemaRef,
    parts: Parts<'a>,
    step: usize,
) -> PyResult<Option<Parts<'a>>> {
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    let mut counter = parts.counter(builder, schema).map_err(|e| err(e.into()))?;
    in_steps(py, || counter.step(step))?;
    py.detach(|| guarded(|| Ok(counter.finish()?))).map_err(err)
}

/// Counted [`Parts`] encoded into one new `bytes` of their size, each part into its range of it
/// at once (the pages faulted in by several threads too).
fn fill_parts<'py>(
    py: Python<'py>,
    builder: &WriterBuilder,
    schema: &SchemaRef,
    parts: &Parts<'_>,
    step: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    let len = parts.bytes().unwrap_or_default();
    new_bytes(py, len, |buf| {
        let mut ws = py
            .detach(|| guarded(|| Ok(parts.fill(builder, schema, buf)?)))
            .map_err(err)?;
        in_steps(py, || ws.step(step))?;
        py.detach(|| guarded(|| Ok(ws.finish_filled()?)))
            .map_err(err)
    })
}

/// The largest table (Arrow bytes) whose held container [`bytes_in_place`] encodes once into a
/// growing buffer: the copy into `bytes` after it is then at most this much.
const ENCODE_ONCE_MAX: usize = 64 << 20;

/// A new `bytes` object of `len` bytes (advised into huge pages), filled in by `fill`.
fn new_bytes<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| PyValueError::new_err(format!("the output ({len} bytes) is too big")))?;
    // SAFETY: a NULL source asks for an uninitialised bytes object of `size` bytes; the pointer
    // is owned (or NULL with the MemoryError set, which `from_owned_ptr_or_err` returns).
    let out = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size),
        )?
    }
    .cast_into::<PyBytes>()?;
    // SAFETY: the object was just made and is referenced only here, so nothing reads its
    // `len` bytes while `fill` writes them (with or without the GIL).
    let buf = unsafe {
        let p = pyo3::ffi::PyBytes_AsString(out.as_ptr()) as *mut u8;
        msgpack_arrow::advise_huge_range(p, len);
        std::slice::from_raw_parts_mut(p, len)
    };
    fill(buf)?;
    Ok(out)
}

/// A growing buffer whose growth the system may refuse: an error (Python's MemoryError through
/// the encode error), where `Vec`'s own growth would abort the process.
struct Growing(Vec<u8>);

impl Write for Growing {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.try_reserve(b.len()).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!(
                    "out of memory growing the output past {} bytes",
                    self.0.len()
                ),
            )
        })?;
        self.0.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn parse_layout(s: Option<&str>) -> PyResult<Option<Layout>> {
    s.map(|s| {
        s.parse()
            .map_err(|e: msgpack_arrow::Error| PyValueError::new_err(e.to_string()))
    })
    .transpose()
}

/// No layout given: `records`, except for data read with the numpy extension
/// (`numpy_types="extension"`), which is written in the layout it was read in.
fn default_layout(layout: Option<Layout>, schema: &arrow_schema::Schema) -> Layout {
    layout.unwrap_or_else(|| {
        if schema.fields().iter().any(|f| extension::is_wrapped(f)) {
            Layout::Auto
        } else {
            Layout::Records
        }
    })
}

fn parse_dialect(s: &str) -> PyResult<msgpack_arrow::Dialect> {
    s.parse()
        .map_err(|e: msgpack_arrow::Error| PyValueError::new_err(e.to_string()))
}

fn parse_missing(s: &str) -> PyResult<msgpack_arrow::Missing> {
    s.parse()
        .map_err(|e: msgpack_arrow::Error| PyValueError::new_err(e.to_string()))
}

/// The output file (or object, for a URL) at `path`, appearing only when committed, compressed as
/// its name says (`.msgpack.zst`, `.gz`, `.lz4`), as the CLI writes it.
fn create(
    path: &std::path::Path,
    storage: &StorageOptions,
    fsync: bool,
) -> msgpack_arrow::Result<CompressedWriter<Output>> {
    Ok(CompressedWriter::new(
        Output::create(path, storage)?.with_fsync(fsync),
        Codec::from_path(path),
    )?)
}

/// Encode every batch of `stream` with `w`, GIL released, then finish it. On an error the writer
/// is dropped with the GIL released too: dropping a remote output aborts its upload over the
/// network, which must not stall Python's other threads (or an object store served by them).
fn pump<W: Write + Send>(
    py: Python<'_>,
    stream: &mut (impl RecordBatchReader + Send),
    mut w: Writer<W>,
    file: Option<&std::path::Path>,
) -> PyResult<W> {
    match encode_all(py, stream, &mut w, file) {
        Ok(()) => py
            .detach(|| guarded(|| Ok(w.finish().map_err(|e| named(e, file))?)))
            .map_err(|f| to_pyerr(py, Op::Encode, f)),
        Err(e) => {
            py.detach(move || drop(w));
            Err(e)
        }
    }
}

/// An error of writing `file` (when writing to a path) names it.
fn named(e: msgpack_arrow::Error, file: Option<&std::path::Path>) -> msgpack_arrow::Error {
    match file {
        Some(p) => e.in_file(p),
        None => e,
    }
}

fn encode_all<W: Write + Send>(
    py: Python<'_>,
    stream: &mut (impl RecordBatchReader + Send),
    w: &mut Writer<W>,
    file: Option<&std::path::Path>,
) -> PyResult<()> {
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    loop {
        let next = py
            .detach(|| guarded(|| Ok(stream.next().transpose()?)))
            .map_err(err)?;
        let Some(b) = next else { return Ok(()) };
        // a big batch is encoded in slices of about SLICE_BYTES, with a Ctrl-C check between them,
        // so an interrupt is seen within a fraction of a second whatever the batch size
        let rows = b.num_rows();
        let step = msgpack_arrow::io::convert::rows_per_slice(&b, SLICE_BYTES);
        let mut at = 0;
        while at < rows || (rows == 0 && at == 0) {
            let n = step.min(rows - at);
            let part = b.slice(at, n);
            py.detach(|| guarded(|| Ok(w.write(&part).map_err(|e| named(e, file))?)))
                .map_err(err)?;
            py.check_signals()?;
            at += n;
            if rows == 0 {
                break;
            }
        }
    }
}

/// Encode `stream` into a Python binary file object, in chunks of 1 MiB (each written with the
/// GIL) as they are encoded.
fn write_file_object(
    py: Python<'_>,
    builder: WriterBuilder,
    stream: &mut (impl RecordBatchReader + Send),
    schema: SchemaRef,
    target: Bound<'_, PyAny>,
) -> PyResult<()> {
    let file = PyFileWriter {
        file: target.unbind(),
    };
    let w = builder
        .build(BufWriter::with_capacity(1 << 20, file), schema)
        .map_err(|e| to_pyerr(py, Op::Encode, e.into()))?;
    let out = pump(py, stream, w, None)?;
    out.into_inner().map_err(|e| PyErr::from(e.into_error()))?;
    Ok(())
}

/// Finish the output and make it appear. A local file's fsync (a second or more for a big file)
/// runs on another thread while this one answers Ctrl-C: interrupted, the temporary file is
/// removed at once (the previous file stays as it was) and the fsync ends in the background.
/// With its record index, when asked or when it had one (`msgpack_arrow::io::index`: made before
/// either is renamed into place, so a failure leaves both as they were).
fn commit(
    py: Python<'_>,
    file: CompressedWriter<Output>,
    path: &std::path::Path,
    index: bool,
) -> PyResult<()> {
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    let mut out = py
        .detach(|| {
            guarded(|| {
                Ok(file
                    .finish()
                    .map_err(|e| msgpack_arrow::Error::from(e).in_file(path))?)
            })
        })
        .map_err(err)?;
    if let Some(tmp) = out.as_file_mut().map(|f| f.temp_path().to_path_buf()) {
        let (tx, rx) = std::sync::mpsc::channel();
        let rx = Mutex::new(rx); // waited on with the GIL released: must be Sync
        std::thread::spawn(move || {
            let r = out.as_file_mut().map_or(Ok(()), |f| f.sync());
            let _ = tx.send((out, r));
        });
        out = loop {
            let next = py.detach(|| {
                rx.lock()
                    .map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected)?
                    .recv_timeout(std::time::Duration::from_millis(20))
            });
            match next {
                Ok((o, r)) => {
                    guarded(|| Ok(r?)).map_err(err)?;
                    break o;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        let _ = std::fs::remove_file(&tmp);
                        return Err(e);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(pyo3::exceptions::PyRuntimeError::new_err(
                        "the thread syncing the output ended without an answer",
                    ))
                }
            }
        };
    }
    py.detach(|| {
        guarded(|| {
            let compressed = Codec::from_path(path).is_some();
            msgpack_arrow::io::index::commit_with_index(
                out,
                path,
                Format::Msgpack,
                compressed,
                index,
            )?;
            Ok(())
        })
    })
    .map_err(err)
}

/// `index=True` is for a local, uncompressed msgpack file: said before anything is written.
fn check_index(index: bool, path: Option<&std::path::Path>) -> PyResult<()> {
    if !index {
        return Ok(());
    }
    let Some(path) = path else {
        return Err(PyValueError::new_err(
            "index=True needs a path to write the index beside",
        ));
    };
    msgpack_arrow::io::index::check_indexable(
        path,
        Format::Msgpack,
        Codec::from_path(path).is_some(),
    )
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Bytes of Arrow data encoded between two Ctrl-C checks.
const SLICE_BYTES: usize = 32 << 20;

/// Write an iterator of Arrow objects (each with `__arrow_c_stream__`: the DataFrames of a
/// LazyFrame's `collect_batches()`) whose schema is `schema`'s, holding one batch at a time.
///
/// `path`: atomic, as [`write`]. `target`: a binary file object, written to in chunks as the
/// batches are encoded. An exception raised by the iterator (a query error, Ctrl-C) is re-raised
/// as it was, after the partial output is discarded.
#[pyfunction]
#[pyo3(signature = (schema, batches, path = None, target = None, *, layout = None, aligned = false, missing = "auto", dialect = "auto", storage_options = None, fsync = true, index = false))]
#[allow(clippy::too_many_arguments)]
pub fn write_iter<'py>(
    py: Python<'py>,
    schema: &Bound<'py, PyAny>,
    batches: &Bound<'py, PyAny>,
    path: Option<PathBuf>,
    target: Option<Bound<'py, PyAny>>,
    layout: Option<&str>,
    aligned: bool,
    missing: &str,
    dialect: &str,
    storage_options: Option<Vec<(String, String)>>,
    fsync: bool,
    index: bool,
) -> PyResult<()> {
    let storage = StorageOptions(storage_options.unwrap_or_default());
    check_index(index, path.as_deref())?;
    let layout = parse_layout(layout)?;
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    let schema = import_schema(schema)?;
    let builder = WriterBuilder::new()
        .with_missing(parse_missing(missing)?)
        .with_dialect(parse_dialect(dialect)?)
        .with_layout(default_layout(layout, &schema))
        .with_aligned(aligned);
    let pending = Arc::new(Mutex::new(None));
    let mut stream = PyBatches {
        schema: schema.clone(),
        iter: batches.try_iter()?.unbind(),
        current: None,
        pending: pending.clone(),
    };
    // an exception the iterator raised goes back to Python as it was
    let reraise = |e: PyErr| pending.lock().ok().and_then(|mut p| p.take()).unwrap_or(e);
    match (path, target) {
        (Some(path), None) => {
            let w = py
                .detach(|| guarded(|| Ok(builder.build(create(&path, &storage, fsync)?, schema)?)))
                .map_err(err)?;
            let file = pump(py, &mut stream, w, Some(&path)).map_err(reraise)?;
            commit(py, file, &path, index)?;
        }
        (None, Some(target)) => {
            write_file_object(py, builder, &mut stream, schema, target).map_err(reraise)?;
        }
        _ => {
            return Err(PyValueError::new_err(
                "write_iter takes exactly one of path and target",
            ))
        }
    }
    Ok(())
}

/// The batches of a Python iterator of Arrow objects, as one `RecordBatchReader`. `next` takes
/// the GIL only to fetch the next object.
struct PyBatches {
    schema: SchemaRef,
    iter: Py<pyo3::types::PyIterator>,
    current: Option<RecordBatchStreamReader>,
    /// The Python exception behind the last error, to re-raise unchanged.
    pending: Arc<Mutex<Option<PyErr>>>,
}

impl Iterator for PyBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.current.as_mut().and_then(|c| c.next()) {
                return Some(batch);
            }
            let next = Python::attach(|py| -> PyResult<Option<RecordBatchStreamReader>> {
                match self.iter.bind(py).clone().next() {
                    None => Ok(None),
                    Some(obj) => Ok(Some(import_stream(&obj?)?)),
                }
            });
            match next {
                Ok(None) => return None,
                Ok(Some(reader)) => {
                    if reader.schema().fields() != self.schema.fields() {
                        return Some(Err(ArrowError::SchemaError(format!(
                            "a batch's schema {:?} differs from the first one's {:?}",
                            reader.schema(),
                            self.schema
                        ))));
                    }
                    self.current = Some(reader)
                }
                Err(e) => {
                    let msg = e.to_string();
                    if let Ok(mut p) = self.pending.lock() {
                        *p = Some(e);
                    }
                    return Some(Err(ArrowError::ExternalError(msg.into())));
                }
            }
        }
    }
}

impl RecordBatchReader for PyBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// A binary Python file object as a `Write` (`file.write(bytes)` under the GIL).
struct PyFileWriter {
    file: Py<PyAny>,
}

impl Write for PyFileWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Python::attach(|py| {
            let got = self
                .file
                .bind(py)
                .call_method1("write", (PyBytes::new(py, buf),))
                .map_err(std::io::Error::other)?;
            // the count written: a raw file may take part of the buffer (`write_all` then goes
            // on with the rest; 0 is an error there); None, as many ad hoc writers return, is all
            if got.is_none() {
                return Ok(buf.len());
            }
            match got.extract::<i64>() {
                Ok(n) if (0..=buf.len() as i64).contains(&n) => Ok(n as usize),
                _ => Err(std::io::Error::other(format!(
                    "the file object's write() of {} bytes returned {}, not a count of bytes \
                     written",
                    buf.len(),
                    got.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))),
            }
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
