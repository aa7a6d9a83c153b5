//! The elements of `U<n>` / `S<n>` arrays as Arrow text or bytes (trailing NULs stripped, as
//! numpy reads them): a whole array at once (`buffers::to_arrow`, the NPZ reader), or row by row
//! as a column's rows arrive (the tensor decoder: a fixed-width buffer converted at the batch's
//! end would pad rows of other widths to the widest one, and one long string beside millions of
//! short ones asked for terabytes).

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::{ArrayRef, BinaryArray, StringArray};
use arrow_buffer::NullBuffer;

use crate::error::{Error, ErrorKind, Result};
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
                    check_room(b.values_slice().len(), s.len())?;
                    b.append_value(&*s);
                }
            }
            TextValues::Bin(b) => {
                for i in 0..n {
                    // (`S0` elements hold no bytes)
                    let el = strip_nuls(data.get(i * item..(i + 1) * item).unwrap_or(&[]));
                    check_room(b.values_slice().len(), el.len())?;
                    b.append_value(el);
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

/// Arrow's `Utf8`/`Binary` offsets are i32: more than 2 GiB of text in one array is an error (the
/// builders panic on it).
fn check_room(held: usize, more: usize) -> Result<()> {
    if held.saturating_add(more) > i32::MAX as usize {
        return Err(Error::new(ErrorKind::Usage(
            "more than 2 GiB of strings in one batch of a column: a smaller batch_bytes (CLI \
             --batch-bytes) makes batches of fewer rows"
                .into(),
        )));
    }
    Ok(())
}

/// Append the characters of one `U` element (UCS-4 code units, byte-swapped where `swap`) to `s`,
/// without its trailing NULs, which numpy strips (embedded ones stay); `Err` gives a unit that is
/// no Unicode code point.
fn push_ucs4(el: &[u8], swap: bool, s: &mut String) -> std::result::Result<(), u32> {
    let unit = |c: &[u8]| {
        let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        if swap {
            v.swap_bytes()
        } else {
            v
        }
    };
    let units = el.chunks_exact(4);
    let keep = units.len() - units.clone().rev().take_while(|c| unit(c) == 0).count();
    for c in units.take(keep) {
        let u = unit(c);
        s.push(char::from_u32(u).ok_or(u)?);
    }
    Ok(())
}

/// One `S` element without its trailing NULs, as numpy reads it.
fn strip_nuls(el: &[u8]) -> &[u8] {
    &el[..el.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1)]
}
