//! `msgpack_arrow._internal`: the Rust half of the Python package `msgpack_arrow`.
//!
//! Data crosses to Python through the Arrow PyCapsule interface (`__arrow_c_stream__`): Polars
//! (`pl.DataFrame(obj)`) and pyarrow (`pa.table(obj)`) import it without a copy, so reading and
//! writing do not depend on the Polars version. Built with the `plugin` feature, the same library is
//! also the Polars expression plugin of `pl.col(c).msgpack.decode/encode` (`plugin.rs`,
//! pyo3-polars against the polars crate 0.55: Python polars 2.0 and 2.1). The Python API (`read_msgpack`, `scan_msgpack`, ...) is
//! in `msgpack_arrow/__init__.py`.

mod alloc;
mod blobs;
mod errors;
#[cfg(feature = "plugin")]
mod plugin;
mod reader;
mod series;
mod stream;
mod unify;
mod writer;

use pyo3::prelude::*;

/// Polars' allocator for everything the extension allocates (why: `alloc.rs`).
#[global_allocator]
static ALLOC: alloc::PolarsAllocator = alloc::PolarsAllocator;

/// The `msgpack-arrow` command (the console script of the package): the core's CLI, run with the
/// GIL released; the exit code.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| msgpack_arrow::cli::main(argv))
}

/// The extension module.
#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stream::ArrowStream>()?;
    m.add_class::<reader::PyReader>()?;
    m.add_class::<reader::HeldInput>()?;
    m.add_class::<reader::FileRange>()?;
    m.add_function(wrap_pyfunction!(reader::decompress_whole, m)?)?;
    m.add_function(wrap_pyfunction!(writer::write, m)?)?;
    m.add_function(wrap_pyfunction!(writer::write_iter, m)?)?;
    m.add_function(wrap_pyfunction!(series::decode_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(series::encode_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(series::infer_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(series::dtype_token, m)?)?;
    m.add_function(wrap_pyfunction!(unify::unify_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(expand_url, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "DEFAULT_HOLD_DECOMPRESSED",
        msgpack_arrow::read::DEFAULT_HOLD_DECOMPRESSED,
    )?;
    // URLs of remote stores (s3://, gs://, az://, http(s)://) wherever a path goes
    m.add("REMOTE", true)?;
    m.add(
        "MSGPACK_EXTENSIONS",
        msgpack_arrow::io::compress::MSGPACK_EXTENSIONS.to_vec(),
    )?;
    // Python checks this before registering `pl.col(c).msgpack` expressions against this library
    m.add("HAS_PLUGIN", cfg!(feature = "plugin"))?;
    Ok(())
}

/// The objects a URL glob matches (listed, sorted as local globs are); a plain URL is itself.
#[pyfunction]
#[pyo3(signature = (url, storage_options = None))]
fn expand_url(
    py: Python<'_>,
    url: &str,
    storage_options: Option<Vec<(String, String)>>,
) -> PyResult<Vec<String>> {
    let storage = msgpack_arrow::io::StorageOptions(storage_options.unwrap_or_default());
    py.detach(|| errors::guarded(|| Ok(msgpack_arrow::io::remote::expand(url, &storage)?)))
        .map_err(|f| errors::to_pyerr(py, errors::Op::Decode, f))
}
