//! `write`: Arrow data from Python (anything with `__arrow_c_stream__`) → msgpack-numpy.

use std::io::Write;
use std::path::PathBuf;

use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use msgpack_arrow::io::AtomicFile;
use msgpack_arrow::{mark_ragged_ndarrays, Layout, Writer, WriterBuilder};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{guarded, to_pyerr, Failure, Op};
use crate::stream::import_stream;

/// Write the batches of `data` (an object with `__arrow_c_stream__`, or such a capsule) as
/// msgpack-numpy.
///
/// With `path`, the file appears only when complete (a temporary file beside it, renamed over it);
/// a failed write leaves any previous file untouched. Without `path`, the bytes are returned.
/// The GIL is released while encoding; Ctrl-C is checked between batches.
#[pyfunction]
#[pyo3(signature = (data, path = None, *, layout = "records", aligned = false, whole_table = false))]
pub fn write<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    path: Option<PathBuf>,
    layout: &str,
    aligned: bool,
    whole_table: bool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let layout: Layout = layout
        .parse()
        .map_err(|e: msgpack_arrow::Error| PyValueError::new_err(e.to_string()))?;
    let builder = WriterBuilder::new()
        .with_layout(layout)
        .with_aligned(aligned);
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    let stream = import_stream(data)?;
    // `whole_table` (a DataFrame, in memory anyway): its batches (imported without a copy) are
    // looked at first, for List columns that held ndarrays (msgpack_arrow::mark_ragged_ndarrays)
    let mut stream: Box<dyn RecordBatchReader + Send> = if whole_table {
        let schema = stream.schema();
        let batches = py
            .detach(|| guarded(|| Ok(stream.collect::<Result<Vec<RecordBatch>, _>>()?)))
            .map_err(err)?;
        let schema = mark_ragged_ndarrays(&schema, &batches);
        Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            schema,
        ))
    } else {
        Box::new(stream)
    };
    let schema = stream.schema();
    match path {
        Some(path) => {
            let w = py
                .detach(|| guarded(|| Ok(builder.build(AtomicFile::create(&path)?, schema)?)))
                .map_err(err)?;
            let file = pump(py, &mut stream, w)?;
            // dropping an uncommitted AtomicFile (on any error above) deletes the temporary file
            py.detach(|| guarded(|| Ok(file.commit()?))).map_err(err)?;
            Ok(None)
        }
        None => {
            let w = builder
                .build(Vec::new(), schema)
                .map_err(|e| err(e.into()))?;
            let bytes = pump(py, &mut stream, w)?;
            Ok(Some(PyBytes::new(py, &bytes)))
        }
    }
}

/// Encode every batch of `stream` with `w`, GIL released, then finish it.
fn pump<W: Write + Send>(
    py: Python<'_>,
    stream: &mut (impl RecordBatchReader + Send),
    mut w: Writer<W>,
) -> PyResult<W> {
    let err = |f: Failure| to_pyerr(py, Op::Encode, f);
    loop {
        let more = py
            .detach(|| {
                guarded(|| match stream.next() {
                    None => Ok(false),
                    Some(b) => {
                        w.write(&b?)?;
                        Ok(true)
                    }
                })
            })
            .map_err(err)?;
        if !more {
            break;
        }
        py.check_signals()?;
    }
    py.detach(|| guarded(|| Ok(w.finish()?))).map_err(err)
}
