//! `msgpack_arrow._internal`: the Rust half of the Python package `msgpack_arrow`.
//!
//! Data crosses to Python through the Arrow PyCapsule interface (`__arrow_c_stream__`): Polars
//! (`pl.DataFrame(obj)`) and pyarrow (`pa.table(obj)`) import it without a copy, and no Polars
//! crate is compiled here. The Python API (`read_msgpack`, `scan_msgpack`, ...) is in
//! `msgpack_arrow/__init__.py`.

mod errors;
mod reader;
mod stream;
mod writer;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stream::ArrowStream>()?;
    m.add_class::<reader::PyReader>()?;
    m.add_function(wrap_pyfunction!(writer::write, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
