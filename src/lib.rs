//! msgpack-numpy ↔ Apache Arrow.
//!
//! Reads what Python's `msgpack_numpy` writes — ndarrays, numpy scalars and complex numbers inside
//! MessagePack maps, record streams and column maps — into Arrow `RecordBatch`es, and writes them
//! back byte for byte.
//!
//! Where things are: [`decode`] (the reader: layouts, batching, streaming), [`dtype`] (numpy dtypes
//! and their Arrow types), `schema` (inference), [`encode`] (the writer), [`io`] (Parquet, Feather,
//! NPZ, compressed inputs, atomic outputs), [`tensor`] (ndarray views of tensor columns).
//!
//! ```
//! # fn main() -> msgpack_arrow::Result<()> {
//! use msgpack_arrow::{Layout, ReaderBuilder};
//! // {"id": 7, "emb": np.array([1.5, 2.5], dtype="<f4")} as msgpack_numpy.packb writes it
//! let mut bytes = vec![0x82, 0xa2, b'i', b'd', 0x07, 0xa3, b'e', b'm', b'b', 0x85];
//! bytes.extend(b"\xc4\x02nd\xc3\xc4\x04type\xa3<f4\xc4\x04kind\xc4\x00\xc4\x05shape\x91\x02\xc4\x04data\xc4\x08");
//! bytes.extend(1.5f32.to_le_bytes());
//! bytes.extend(2.5f32.to_le_bytes());
//! let reader = ReaderBuilder::new().build_from_slice(&bytes)?;
//! assert_eq!(reader.layout(), Layout::Records);
//! let batch = reader.collect::<msgpack_arrow::Result<Vec<_>>>()?.remove(0);
//! assert_eq!(batch.schema().field(1).data_type().to_string(), "FixedSizeList(2 x Float32)");
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod decode;
pub mod dtype;
pub mod encode;
pub mod error;
pub mod io;
pub mod msgpack;
pub mod options;
#[cfg(feature = "polars")]
pub mod polars;
pub(crate) mod schema;
pub mod sniff;
pub mod tensor;

#[doc(hidden)] // for the Python extension's blob decoder
pub use decode::values::advise_huge_pages;
pub use decode::{infer_schema, Reader, ReaderBuilder};
pub use encode::{mark_ragged_ndarrays, Writer, WriterBuilder};
pub use error::{Error, ErrorKind, Result};
pub use options::{Dialect, Layout, ObjectArrays, TensorMode};
