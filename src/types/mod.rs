//! The one numpy ↔ Arrow mapping (SPEC §3): the Arrow type of each dtype ([`arrow`]), numpy
//! element bytes → Arrow buffers (`buffers`, shared by the msgpack reader and NPZ), the
//! field/schema metadata that carries what Arrow alone would lose ([`meta`]), and the rule by which
//! `auto` reads one map as a `columns` map ([`layout`]).

pub mod arrow;
pub(crate) mod buffers;
pub mod extension;
pub mod layout;
pub mod meta;
pub(crate) mod nest;
pub mod shared_metadata;
pub(crate) mod text;

pub use crate::wire::dtype::{ByteOrder, NpTimeUnit, NumpyDtype, StructField};
pub use arrow::{fixed_size_list, list, parse_type_name, polars_compatible_type, short_name};
