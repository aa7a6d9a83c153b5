//! Flax's `flax.serialization.msgpack_serialize` (Flax/JAX checkpoints, HuggingFace's
//! `flax_model.msgpack`): an ndarray is ext 1 holding `msgpack.packb((shape, dtype.name,
//! arr.tobytes()))`, a numpy scalar ext 3 holding the same with shape `()`, a Python complex ext 2
//! holding `packb((real, imag))`.
//!
//! An ext is read so only when its payload is exactly that: an ext 1 of other bytes is another
//! application's and stays an ext value (`auto`), or is an error naming what is wrong (the `flax`
//! dialect). The dtype name is numpy's (`float32`, `datetime64[ns]`) in native order: Flax's
//! reader takes the bytes in the machine's order, which is little-endian wherever JAX runs.

use std::borrow::Cow;

use crate::error::{ErrorKind, Result};
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::dtype::NumpyDtype;
use crate::wire::ndarray::{NdArray, Special, MAX_NDIM};

/// Flax's `_MsgpackExtType`.
const NDARRAY: i8 = 1;
const COMPLEX: i8 = 2;
const SCALAR: i8 = 3;

/// Whether an ext of this code may be one of Flax's.
pub(crate) fn is_flax_code(code: i8) -> bool {
    matches!(code, NDARRAY | COMPLEX | SCALAR)
}

/// What the ext of type `code` whose `payload` starts at byte `pos` of `c`'s buffer holds, read as
/// Flax writes it; `Ok(None)` when the payload is not in Flax's form (then `strict` makes that an
/// error saying why).
pub(crate) fn parse<'a>(
    c: &Cursor<'a>,
    code: i8,
    payload: &'a [u8],
    pos: usize,
    strict: bool,
) -> Result<Option<Special<'a>>> {
    let inner = Cursor::new(payload, c.offset_of(pos));
    let found = match code {
        NDARRAY | SCALAR => ndarray(inner, code == SCALAR, pos),
        COMPLEX => complex(inner),
        _ => Err((0, String::new())),
    };
    match found {
        Ok(s) => Ok(Some(s)),
        // (Flax's form with a wrong length is an error whatever the dialect, as a msgpack-numpy
        // map's is: `NdArray::check_len`)
        Err((_, why)) if !strict && !why.starts_with(SHORT) => Ok(None),
        Err((at, why)) => Err(c.error_at(
            pos + at,
            ErrorKind::InvalidNdarray(format!("Flax ext {code}: {why}")),
        )),
    }
}

/// JAX's narrow types (`ml_dtypes`), which Flax writes by name and nothing here reads.
fn is_ml_dtypes_name(name: &str) -> bool {
    name.starts_with("float8_")
        || name.starts_with("float6_")
        || name.starts_with("float4_")
        || matches!(name, "int2" | "int4" | "uint2" | "uint4")
}

/// Where in the payload and what is wrong with it.
type Wrong = (usize, String);

/// How a payload in Flax's form whose data does not fit its shape is reported.
const SHORT: &str = "data has ";

fn ndarray<'a>(
    mut p: Cursor<'a>,
    scalar: bool,
    pos: usize,
) -> std::result::Result<Special<'a>, Wrong> {
    let whole = |p: &Cursor<'a>, what: &str| (p.pos(), what.to_string());
    if !matches!(p.read_array_len(), Ok(3)) {
        return Err(whole(&p, "not an array of (shape, dtype name, bytes)"));
    }
    let n = match p.peek_kind() {
        Ok(Kind::Array) => p
            .read_array_len()
            .map_err(|e| whole(&p, &e.kind().to_string()))?,
        _ => return Err(whole(&p, "the shape is not an array")),
    };
    if n > MAX_NDIM {
        return Err(whole(
            &p,
            &format!("{n} dimensions (numpy allows {MAX_NDIM})"),
        ));
    }
    let mut shape = Vec::with_capacity(n);
    for _ in 0..n {
        match p.read_int() {
            Ok(Int::I(d)) if d >= 0 => shape.push(d as usize),
            _ => return Err(whole(&p, "a shape entry is not a non-negative int")),
        }
    }
    if scalar && n != 0 {
        return Err(whole(&p, &format!("a numpy scalar of shape {shape:?}")));
    }
    let type_pos = p.pos();
    let type_raw = match p.read_str_or_bin() {
        Ok((s, _)) if !s.is_empty() && s.iter().all(u8::is_ascii_graphic) => s,
        _ => return Err(whole(&p, "the dtype name is not a string")),
    };
    // a name numpy (or JAX's ml_dtypes, whose types are reported unsupported later) knows: any
    // other string makes it another application's ext value
    let name = std::str::from_utf8(type_raw).unwrap_or_default();
    if NumpyDtype::parse(name).is_err() && name != "bfloat16" && !is_ml_dtypes_name(name) {
        return Err((type_pos, format!("{name:?} is not a numpy dtype name")));
    }
    let (data, data_at) = match p.peek_kind() {
        Ok(Kind::Bin | Kind::Str) => p
            .read_str_or_bin()
            .map_err(|e| whole(&p, &e.kind().to_string()))?,
        _ => return Err(whole(&p, "the data is not bytes")),
    };
    if !p.is_empty() {
        return Err(whole(&p, "bytes after (shape, dtype name, bytes)"));
    }
    let len = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| (0, format!("shape {shape:?} overflows")))?;
    // JAX's bfloat16 has no Arrow or Polars type: its values are float32's upper halves, so they
    // widen to float32 exactly (as `.astype(np.float32)` does)
    let (type_raw, data) = if type_raw == b"bfloat16" {
        if Some(data.len()) != len.checked_mul(2) {
            return Err((
                data_at,
                format!(
                    "{SHORT}{} bytes, but shape {shape:?} of bfloat16 needs {}",
                    data.len(),
                    len.saturating_mul(2)
                ),
            ));
        }
        let wide = data
            .chunks_exact(2)
            .flat_map(|h| (u32::from(u16::from_le_bytes([h[0], h[1]])) << 16).to_le_bytes())
            .collect();
        (&b"<f4"[..], Cow::Owned(wide))
    } else {
        (type_raw, Cow::Borrowed(data))
    };
    // the dtype name's text (as `.npy` descrs are): `NdArray::parse_dtype` reads it, and
    // `check_len` holds the data to the shape
    Ok(Special::Array(NdArray {
        type_raw,
        type_pos: pos + type_pos,
        kind: None,
        scalar,
        shape,
        len,
        data,
        data_pos: pos + data_at,
        js: false,
        openpi: false,
        type_text: true,
        spelling: Default::default(),
    }))
}

fn complex(mut p: Cursor<'_>) -> std::result::Result<Special<'static>, Wrong> {
    let bad = |p: &Cursor<'_>| (p.pos(), "not an array of (real, imag) floats".to_string());
    if !matches!(p.read_array_len(), Ok(2)) {
        return Err(bad(&p));
    }
    let mut parts = [0.0f64; 2];
    for v in &mut parts {
        match p.peek_kind() {
            Ok(Kind::F64 | Kind::F32) => *v = p.read_f64().map_err(|_| bad(&p))?,
            _ => return Err(bad(&p)),
        }
    }
    if !p.is_empty() {
        return Err(bad(&p));
    }
    Ok(Special::Complex(parts[0], parts[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(code: i8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        rmp::encode::write_ext_meta(&mut out, payload.len() as u32, code).unwrap();
        out.extend_from_slice(payload);
        out
    }

    fn flax_payload(shape: &[u64], name: &str, data: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        rmp::encode::write_array_len(&mut p, 3).unwrap();
        rmp::encode::write_array_len(&mut p, shape.len() as u32).unwrap();
        shape.iter().for_each(|&d| {
            rmp::encode::write_uint(&mut p, d).unwrap();
        });
        rmp::encode::write_str(&mut p, name).unwrap();
        rmp::encode::write_bin(&mut p, data).unwrap();
        p
    }

    fn read(buf: &[u8], strict: bool) -> Result<Option<Special<'_>>> {
        let mut c = Cursor::new(buf, 100);
        let (code, payload) = c.read_ext().unwrap();
        parse(&c, code, payload, buf.len() - payload.len(), strict)
    }

    #[test]
    fn flax_forms_and_other_payloads() {
        let buf = ext(1, &flax_payload(&[2, 3], "float32", &[0u8; 24]));
        let Some(Special::Array(nd)) = read(&buf, true).unwrap() else {
            panic!("not an ndarray")
        };
        assert_eq!((&nd.shape[..], nd.len, nd.scalar), (&[2, 3][..], 6, false));
        assert_eq!(nd.parse_dtype(0).unwrap().to_dtype_str(), "<f4");
        assert_eq!(&buf[nd.data_pos..nd.data_pos + 24], &nd.data[..]);
        let buf = ext(3, &flax_payload(&[], "datetime64[ns]", &[0u8; 8]));
        let Some(Special::Array(nd)) = read(&buf, true).unwrap() else {
            panic!("not a scalar")
        };
        assert!(nd.scalar);
        assert_eq!(nd.parse_dtype(0).unwrap().to_dtype_str(), "<M8[ns]");
        let mut pair = Vec::new();
        rmp::encode::write_array_len(&mut pair, 2).unwrap();
        rmp::encode::write_f64(&mut pair, 1.5).unwrap();
        rmp::encode::write_f64(&mut pair, -2.0).unwrap();
        assert!(matches!(
            read(&ext(2, &pair), true).unwrap(),
            Some(Special::Complex(re, im)) if re == 1.5 && im == -2.0
        ));
        // another application's ext 1: not Flax's unless asked, then a positioned error
        let other = ext(1, b"\x01\x02\x03");
        assert!(read(&other, false).unwrap().is_none());
        let e = read(&other, true).unwrap_err();
        assert!(e.to_string().contains("Flax ext 1"), "{e}");
        assert_eq!(e.offset(), Some(100 + 3));
        // a scalar with a shape, trailing bytes: not Flax's
        assert!(read(&ext(3, &flax_payload(&[2], "int8", &[0, 0])), false)
            .unwrap()
            .is_none());
        let mut long = flax_payload(&[1], "int8", &[0]);
        long.push(0xc0);
        assert!(read(&ext(1, &long), false).unwrap().is_none());
        // bfloat16 widens to float32 exactly; too few bytes for its shape is an error
        let buf = ext(
            1,
            &flax_payload(&[2], "bfloat16", &[0x80, 0x3f, 0x20, 0xc0]),
        );
        let Some(Special::Array(nd)) = read(&buf, false).unwrap() else {
            panic!("not an ndarray")
        };
        assert_eq!(nd.parse_dtype(0).unwrap().to_dtype_str(), "<f4");
        let vals: Vec<f32> = nd
            .data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(vals, [1.0, -2.5]);
        // a payload whose bin claims more bytes than there are: one position in the message
        let mut lying = flax_payload(&[1], "int8", &[0]);
        let n = lying.len();
        lying[n - 2] = 9; // bin8 length 9, 1 byte there
        let e = read(&ext(1, &lying), true).unwrap_err().to_string();
        assert_eq!(e.matches("at byte").count(), 1, "{e}");
        // a name numpy does not know: another application's ext (a positioned error under
        // the flax dialect); a JAX narrow type: Flax's, reported unsupported at the name
        let buf = ext(1, &flax_payload(&[2], "hello", b"ab"));
        assert!(read(&buf, false).unwrap().is_none());
        let e = read(&buf, true).unwrap_err();
        assert!(e.to_string().contains("not a numpy dtype name"), "{e}");
        let buf = ext(1, &flax_payload(&[1], "float8_e4m3fn", &[0]));
        let Some(Special::Array(nd)) = read(&buf, false).unwrap() else {
            panic!("not an ndarray")
        };
        let at = 100 + nd.type_pos as u64;
        let e = nd.parse_dtype(at).unwrap_err();
        assert!(e.to_string().contains("unsupported numpy dtype"), "{e}");
        assert_eq!(e.offset(), Some(at));
        let short = ext(1, &flax_payload(&[3], "bfloat16", &[0; 4]));
        let e = read(&short, false).unwrap_err();
        assert!(e.to_string().contains("data has 4 bytes"), "{e}");
    }
}
