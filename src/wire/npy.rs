//! `np.save` bytes (the `.npy` format) inside a msgpack ext value, as msgpack and msgspec users
//! write ndarrays with `ExtType(code, buf.getvalue())`: read when the reader is told the code
//! (`npy_ext`). The header is a Python dict literal, `{'descr': '<f4', 'fortran_order': False,
//! 'shape': (3, 4), }`, after the magic `\x93NUMPY`, a version and the header's length
//! (numpy's `lib.format`); the data follows it.

use std::borrow::Cow;

use crate::error::{Error, ErrorKind, Result};
use crate::wire::ndarray::NdArray;

const MAGIC: &[u8] = b"\x93NUMPY";

fn invalid(what: String, at: u64) -> Error {
    Error::new(ErrorKind::InvalidNdarray(format!(
        "np.save bytes in an ext value: {what}"
    )))
    .at_offset(at)
}

/// The ndarray in `payload` (an ext value's data, at byte `pos` of the input; `base` is the
/// input's offset for errors).
pub(crate) fn parse<'a>(payload: &'a [u8], pos: usize, base: u64) -> Result<NdArray<'a>> {
    let at = base + pos as u64;
    if payload.len() < 10 || !payload.starts_with(MAGIC) {
        return Err(invalid("no \\x93NUMPY magic".into(), at));
    }
    let (hlen, hstart): (usize, usize) = match payload[6] {
        1 => (u16::from_le_bytes([payload[8], payload[9]]) as usize, 10),
        2 | 3 if payload.len() >= 12 => (
            u32::from_le_bytes(payload[8..12].try_into().expect("4 bytes")) as usize,
            12,
        ),
        v => return Err(invalid(format!("format version {v} is not 1, 2 or 3"), at)),
    };
    let hend = hstart
        .checked_add(hlen)
        .filter(|&e| e <= payload.len())
        .ok_or_else(|| invalid(format!("a {hlen}-byte header runs past the value"), at))?;
    let header = std::str::from_utf8(&payload[hstart..hend])
        .map_err(|_| invalid("the header is not text".into(), at))?;
    let descr = dict_value(header, "descr")
        .ok_or_else(|| invalid(format!("no 'descr' in the header {header:?}"), at))?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split_once('\''))
        .map(|(d, _)| d)
        .ok_or_else(|| {
            invalid(
                format!(
                    "descr {descr:?}: only plain dtypes (a string) are read, not structured ones"
                ),
                at,
            )
        })?;
    let fortran = match dict_value(header, "fortran_order") {
        Some(v) if v.starts_with("False") => false,
        Some(v) if v.starts_with("True") => true,
        _ => {
            return Err(invalid(
                format!("no fortran_order in the header {header:?}"),
                at,
            ))
        }
    };
    let shape_text = dict_value(header, "shape")
        .and_then(|v| v.strip_prefix('('))
        .and_then(|v| v.split_once(')'))
        .map(|(v, _)| v)
        .ok_or_else(|| invalid(format!("no shape tuple in the header {header:?}"), at))?;
    let mut shape = Vec::new();
    for d in shape_text
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        shape.push(
            d.trim_end_matches('L').parse::<usize>().map_err(|_| {
                invalid(format!("shape ({shape_text}) is not a tuple of sizes"), at)
            })?,
        );
    }
    if shape.len() > 64 {
        return Err(invalid(
            format!("{} dimensions (numpy allows 64)", shape.len()),
            at,
        ));
    }
    let len = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| invalid(format!("shape {shape:?} overflows"), at))?;
    let raw = &payload[hend..];
    // Fortran order (2 or more axes): the rows are not contiguous, so the data is put in C
    // order (a copy); data of the wrong length is left for `NdArray::check_len` to report
    // (the dtype is parsed here for Fortran data only; the decoders parse and cache it)
    let itemsize = || {
        crate::wire::dtype::NumpyDtype::parse(descr)
            .map(|d| d.itemsize())
            .unwrap_or(0)
    };
    let data: Cow<'a, [u8]> = match (fortran && shape.len() > 1).then(itemsize) {
        Some(size) if size > 0 && len.checked_mul(size) == Some(raw.len()) => {
            Cow::Owned(to_c_order(raw, &shape, size))
        }
        _ => Cow::Borrowed(raw),
    };
    // the type's text, borrowed from the payload: also the key the decoders cache dtypes by
    let d0 = descr.as_ptr() as usize - payload.as_ptr() as usize;
    Ok(NdArray {
        type_raw: &payload[d0..d0 + descr.len()],
        type_pos: pos + d0,
        kind: None,
        scalar: false,
        shape,
        len,
        data,
        data_pos: pos + hend,
        js: false,
        openpi: false,
        type_text: true,
        spelling: Default::default(),
    })
}

/// The text after `'key':` in a Python dict literal, leading spaces trimmed.
fn dict_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    // the last one: a key given twice is the last value in Python's dict literal, as numpy reads it
    let i = header.rfind(&format!("'{key}'"))?;
    let rest = header[i + key.len() + 2..].trim_start().strip_prefix(':')?;
    Some(rest.trim_start())
}

/// Fortran-ordered data (`fortran_order: True`, 2 or more dimensions) in C order: a copy.
pub(crate) fn to_c_order(data: &[u8], shape: &[usize], itemsize: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = vec![0u8; n * itemsize];
    // strides of the Fortran layout, in elements
    let mut fstride = vec![1usize; shape.len()];
    for k in 1..shape.len() {
        fstride[k] = fstride[k - 1] * shape[k - 1];
    }
    let mut idx = vec![0usize; shape.len()];
    for i in 0..n {
        let src: usize = idx.iter().zip(&fstride).map(|(a, b)| a * b).sum();
        out[i * itemsize..(i + 1) * itemsize]
            .copy_from_slice(&data[src * itemsize..(src + 1) * itemsize]);
        // next C-order index: the last axis moves fastest
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}
