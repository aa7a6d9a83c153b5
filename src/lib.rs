//! msgpack-numpy ↔ Apache Arrow.
//!
//! Reads what Python's `msgpack_numpy` writes — ndarrays, numpy scalars and complex numbers inside
//! MessagePack maps, record streams and column maps — into Arrow `RecordBatch`es, and writes them
//! back byte for byte.
//!
//! Where things are, lowest layer first (each uses only those before it): [`wire`] (the
//! msgpack-numpy format, I/O-free), [`types`] (the numpy ↔ Arrow mapping), [`read`] (layouts,
//! inference, per-type decoders, batching) and [`write`](mod@write) (per-type encoders), which never import
//! each other, then [`io`] (files, codecs, Parquet, Feather, NPZ, atomic outputs, datasets).
//! [`error`] and [`options`] are shared by all; [`tensor`] gives ndarray views of tensor columns.
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

pub mod error;
pub mod options;

pub mod io;
pub mod read;
pub mod types;
pub mod wire;
pub mod write;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "polars")]
pub mod polars;
pub mod tensor;

pub use error::{Error, ErrorKind, Result};
pub use options::{
    Conflicts, Dialect, Layout, Lists, Missing, ObjectArrays, OnTruncated, TensorMode,
};
pub use read::{infer_schema, Decoder, Reader, ReaderBuilder, Truncation};
#[doc(hidden)] // for the Python extension's blob decoder
pub use types::buffers::{advise_huge_pages, advise_huge_range};
pub use write::{mark_ragged_ndarrays, ByteCount, Writer, WriterBuilder};
