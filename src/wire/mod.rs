//! The msgpack-numpy wire format, I/O-free (as `csv-core` is to `csv`): reading MessagePack with
//! positions ([`cursor`]), numpy's dtype notation ([`dtype`]), recognising ndarray maps and the
//! other dialects' forms (`ndarray`; ext values: `npy`, `flax`), writing MessagePack as Python's
//! packer does ([`write`],
//! `pad` for aligned payloads), and Python's float/complex repr (`pyrepr`).
//!
//! Nothing here knows Arrow, files or codecs; every layer above builds on it.

pub mod cursor;
pub mod dtype;
pub(crate) mod flax;
pub(crate) mod header_memo;
pub(crate) mod keys;
pub(crate) mod ndarray;
pub(crate) mod npy;
pub(crate) mod pad;
pub(crate) mod pyrepr;
pub(crate) mod skip_memo;
pub mod sniff;
pub(crate) mod spelling;
pub(crate) mod write;
