//! Rust errors → the Python exceptions of `msgpack_arrow.exceptions`.
//!
//! The classes live in Python (`DecodeError` derives from both `MsgpackArrowError` and
//! `ValueError`, which `create_exception!` cannot express); they are looked up once and raised
//! with their position attributes (`offset`, `record`, `column`) set from [`Error`]'s accessors,
//! never parsed out of the message text.

use std::io;

use msgpack_arrow::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// What a failed operation was doing, which picks the exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Reading msgpack-numpy: `DecodeError`.
    Decode,
    /// Writing msgpack-numpy: `EncodeError`.
    Encode,
}

/// A failure inside the core: its error, or a panic (a bug) caught before it reached Python.
#[derive(Debug)]
pub enum Failure {
    /// An error returned by the core.
    Core(Error),
    /// A panic, with its message.
    Panic(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

impl From<arrow_schema::ArrowError> for Failure {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Failure::Core(Error::from(e))
    }
}

/// Run `f`, turning a panic into [`Failure::Panic`]: no panic crosses into Python as
/// `pyo3_runtime.PanicException` (a `BaseException` that `except Exception` does not catch).
pub fn guarded<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Failure::Panic(msgpack_arrow::error::panic_message(&*p))),
    }
}

static EXCEPTIONS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let m = EXCEPTIONS.get_or_try_init(py, || {
        py.import("msgpack_arrow.exceptions")
            .map(|m| m.into_any().unbind())
    })?;
    Ok(m.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// Convert a failure of operation `op` into the Python exception to raise.
pub fn to_pyerr(py: Python<'_>, op: Op, f: Failure) -> PyErr {
    match make(py, op, f) {
        Ok(e) | Err(e) => e,
    }
}

fn make(py: Python<'_>, op: Op, f: Failure) -> PyResult<PyErr> {
    let cls_name = match op {
        Op::Decode => "DecodeError",
        Op::Encode => "EncodeError",
    };
    let e = match f {
        Failure::Panic(msg) => {
            let cls = class(py, cls_name)?;
            let msg = format!("internal error (a bug in msgpack-arrow, please report it): {msg}");
            return Ok(PyErr::from_value(cls.call1((
                msg,
                None::<u64>,
                None::<u64>,
                None::<String>,
            ))?));
        }
        Failure::Core(e) => e,
    };
    if let ErrorKind::Io(io_err) = e.kind() {
        // keep the errno class (FileNotFoundError, PermissionError, ...) with the core's message
        if !matches!(
            io_err.kind(),
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
        ) {
            return Ok(PyErr::from(io::Error::new(io_err.kind(), e.to_string())));
        }
    }
    let cls = class(py, cls_name)?;
    let exc = cls.call1((
        e.to_string(),
        e.offset(),
        e.record(),
        e.path().map(str::to_string),
        e.file().map(str::to_string),
    ))?;
    Ok(PyErr::from_value(exc))
}

/// A `DecodeError`/`EncodeError` with this message and position.
pub fn positioned_error(
    py: Python<'_>,
    op: Op,
    msg: &str,
    offset: Option<u64>,
    record: Option<u64>,
    column: Option<String>,
) -> PyErr {
    let cls_name = match op {
        Op::Decode => "DecodeError",
        Op::Encode => "EncodeError",
    };
    let make = || -> PyResult<PyErr> {
        let cls = class(py, cls_name)?;
        Ok(PyErr::from_value(cls.call1((msg, offset, record, column))?))
    };
    match make() {
        Ok(e) | Err(e) => e,
    }
}
