//! The elements of `U<n>` / `S<n>` ndarrays, each appended as Arrow text or bytes as its row
//! arrives (trailing NULs stripped, as numpy reads them).
//!
//! Why not a fixed-width buffer converted at the batch's end, as other dtypes are: rows of other
//! widths would be padded to the widest one, and one long string beside millions of short ones
//! asked for terabytes.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::{ArrayRef, BinaryArray, StringArray};
use arrow_buffer::NullBuffer;

use crate::error::{Error, ErrorKind, Result};
use crate::types::buffers::{push_ucs4, strip_nuls};
use crate::types::NumpyDtype;

pub(crate) enum TextValues {
    Str(StringBuilder, String),
    Bin(BinaryBuilder),
}

impl TextValues {
    /// For a column of `dt`; `None` for other dtypes.
    pub(crate) fn for_dtype(dt: &NumpyDtype) -> Option<Self> {
        match dt {
            NumpyDtype::Unicode { .. } => {
                Some(TextValues::Str(StringBuilder::new(), String::new()))
            }
            NumpyDtype::Bytes { .. } => Some(TextValues::Bin(BinaryBuilder::new())),
            _ => None,
        }
    }

    /// Append the `n` elements of `row` (`data` in the file's byte order), each without its
    /// trailing NULs.
    pub(crate) fn push(&mut self, row: &NumpyDtype, data: &[u8], n: usize) -> Result<()> {
        let item = row.itemsize();
        match self {
            TextValues::Str(b, s) => {
                let swap = row.order().needs_swap();
                for i in 0..n {
                    s.clear();
                    push_ucs4(&data[i * item..(i + 1) * item], swap, s).map_err(|u| {
                        Error::new(ErrorKind::InvalidNdarray(format!(
                            "{} element {i} holds {u:#x}, not a Unicode code point",
                            row.to_dtype_str()
                        )))
                    })?;
                    b.append_value(&*s);
                }
            }
            TextValues::Bin(b) => {
                for i in 0..n {
                    // (`S0` elements hold no bytes)
                    b.append_value(strip_nuls(
                        data.get(i * item..(i + 1) * item).unwrap_or(&[]),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Append `n` empty elements (the places of a null row of fixed shape).
    pub(crate) fn push_empty(&mut self, n: usize) {
        for _ in 0..n {
            match self {
                TextValues::Str(b, _) => b.append_value(""),
                TextValues::Bin(b) => b.append_value(b""),
            }
        }
    }

    /// The elements so far, with `nulls`; the builder is left empty for the next batch.
    pub(crate) fn finish(&mut self, nulls: Option<NullBuffer>) -> ArrayRef {
        match self {
            TextValues::Str(b, _) => {
                let a = b.finish();
                Arc::new(StringArray::new(
                    a.offsets().clone(),
                    a.values().clone(),
                    nulls,
                ))
            }
            TextValues::Bin(b) => {
                let a = b.finish();
                Arc::new(BinaryArray::new(
                    a.offsets().clone(),
                    a.values().clone(),
                    nulls,
                ))
            }
        }
    }
}
