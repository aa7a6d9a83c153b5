//! msgpack-numpy ↔ Apache Arrow.
#![deny(missing_docs)]

pub mod decode;
pub mod dtype;
pub mod encode;
pub mod error;
pub mod io;
pub mod msgpack;
pub mod options;
pub(crate) mod schema;

pub use decode::{infer_schema, Reader, ReaderBuilder};
pub use encode::{Writer, WriterBuilder};
pub use error::{Error, ErrorKind, Result};
pub use options::{Dialect, Layout, ObjectArrays, TensorMode};
