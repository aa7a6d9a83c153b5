//! Options shared by the reader, the writer, the CLI and the Python package.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};

/// How a file becomes rows (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Decide from the first object (see [`crate::types::layout`] and the README for the rule).
    #[default]
    Auto,
    /// A stream of maps (or one top-level array of maps): one row per map.
    Records,
    /// One map `{name: ndarray or list}` (or a stream of them, as chunks): axis 0 are the rows.
    Columns,
    /// A stream of non-map values, a top-level array of them, or one bare ndarray: one column `value`.
    Values,
}

/// How tensor (ndarray) columns are represented in Arrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TensorMode {
    /// Nested `FixedSizeList` (one level per axis) for fixed shapes, nested `List` for ragged ones.
    /// This is what Polars reads as `pl.Array` / `pl.List`.
    #[default]
    Array,
    /// Canonical `arrow.fixed_shape_tensor` / `arrow.variable_shape_tensor` extension types.
    Extension,
}

/// What to do with object (`'O'`) arrays, whose data is a pickle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ObjectArrays {
    /// Refuse with a clear error (never unpickle).
    #[default]
    Error,
    /// Keep the pickle bytes as Binary, tagged `msgpack_numpy.kind = object` in field metadata.
    Raw,
}

/// Which ndarray encoding to recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// msgpack-numpy maps, and openpi's `{__ndarray__, dtype, shape, data}` and
    /// `{__npgeneric__, dtype, data}` maps.
    #[default]
    Auto,
    /// Only Python msgpack-numpy maps (`nd`, `type`, `kind`, `shape`, `data`).
    MsgpackNumpy,
    /// openpi: `{b'__ndarray__': True, b'dtype': str, b'shape': [...], b'data': bytes}`, and numpy
    /// scalars `{b'__npgeneric__': True, b'dtype': str, b'data': obj.item()}` (read as that dtype).
    Openpi,
    /// msgpack-numpy-js: `nd`/`type`/`shape`/`data` maps whose type codes follow JavaScript typed
    /// arrays (`<U8` is uint8, `<b`/`<B` int8, `<I4` uint32). Never chosen by `Auto`: `<U8` means
    /// a string of 8 characters to numpy.
    Js,
    /// Flax's `msgpack_serialize` (JAX checkpoints, HuggingFace's `flax_model.msgpack`): ndarrays
    /// as ext 1, numpy scalars as ext 3, Python complex as ext 2 (`wire::flax`). `Auto` reads
    /// them too, where an ext's payload is exactly Flax's form; this dialect makes any other
    /// payload of those codes an error, and reads maps as plain maps.
    Flax,
}

/// What to do with an input cut short (a writer that crashed, a file still being written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTruncated {
    /// A positioned error (what and where the cut is).
    #[default]
    Error,
    /// Keep every complete top-level object before the cut (the prefix `msgpack.Unpacker`
    /// yields) and report the cut ([`crate::Reader::truncation`]).
    Keep,
}

/// What to do with a column whose values do not unify into one type (an int and a str, ndarrays
/// of 2 and 3 dimensions, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Conflicts {
    /// A positioned error naming the column, both types and the record.
    #[default]
    Error,
    /// Keep the column as Binary: each row the raw msgpack bytes of its value (decodable later,
    /// e.g. with `pl.col(c).msgpack.decode(dtype)`), written back as they were.
    Binary,
}

/// How nested msgpack lists of numbers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lists {
    /// Arrow `List` (Polars `List`), whatever their lengths.
    #[default]
    List,
    /// Lists of numbers (or bools) whose every level has one length throughout the column become
    /// `FixedSizeList` (Polars `Array`), a tensor of that shape: what ormsgpack's
    /// `OPT_SERIALIZE_NUMPY` and `.tolist()` producers write. Written back as lists.
    Array,
}

/// How the writer writes a null in a record (`records` layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Missing {
    /// Leave keys out where the file read had absent keys (schema metadata
    /// `msgpack_arrow.missing`; for maps nested in records, `msgpack_arrow.missing_nested`, which
    /// names the columns where they lacked keys), else write nil.
    #[default]
    Auto,
    /// Every key in every record; a null is nil.
    Nil,
    /// A null leaves its key out of the record, and out of maps nested in it (what producers of
    /// sparse records expect back). A key present as nil and an absent one cannot be told apart:
    /// both come back absent. Two exceptions keep the columns and their order on a re-read
    /// (readers order columns by first appearance): a key written for the first time brings, as
    /// nil, the keys before it that were never written; and a column never written yet that has
    /// no value in a batch (a Null column, say) is written as nil once, in the first record where
    /// every column before it has appeared.
    Omit,
}

macro_rules! str_enum {
    ($t:ty, $what:literal, $($name:literal => $v:expr),+ $(,)?) => {
        impl FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s {
                    $($name => Ok($v),)+
                    _ => Err(Error::new(ErrorKind::Usage(format!(
                        concat!("unknown ", $what, " {:?}; expected one of: {}"),
                        s,
                        [$($name),+].join(", ")
                    )))),
                }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let s = match self { $(x if *x == $v => $name,)+ _ => unreachable!() };
                f.write_str(s)
            }
        }
        // the command line takes the same names (and lists them in --help)
        #[cfg(feature = "cli")]
        impl clap::ValueEnum for $t {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($v),+]
            }
            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(match self {
                    $(x if *x == $v => $name,)+
                    _ => unreachable!(),
                }))
            }
        }
    };
}

str_enum!(Layout, "layout", "auto" => Layout::Auto, "records" => Layout::Records, "columns" => Layout::Columns, "values" => Layout::Values);
str_enum!(TensorMode, "tensor mode", "array" => TensorMode::Array, "extension" => TensorMode::Extension);
str_enum!(ObjectArrays, "object_arrays option", "error" => ObjectArrays::Error, "raw" => ObjectArrays::Raw);
str_enum!(OnTruncated, "on_truncated option", "error" => OnTruncated::Error, "keep" => OnTruncated::Keep);
str_enum!(Conflicts, "conflicts option", "error" => Conflicts::Error, "binary" => Conflicts::Binary);
str_enum!(Lists, "lists option", "list" => Lists::List, "array" => Lists::Array);
str_enum!(Missing, "missing option", "auto" => Missing::Auto, "nil" => Missing::Nil, "omit" => Missing::Omit);
str_enum!(Dialect, "dialect", "auto" => Dialect::Auto, "msgpack-numpy" => Dialect::MsgpackNumpy, "openpi" => Dialect::Openpi, "js" => Dialect::Js, "flax" => Dialect::Flax);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        for l in ["auto", "records", "columns", "values"] {
            assert_eq!(l.parse::<Layout>().unwrap().to_string(), l);
        }
        let e = "rows".parse::<Layout>().unwrap_err().to_string();
        assert!(e.contains("auto, records, columns, values"), "{e}");
    }
}
