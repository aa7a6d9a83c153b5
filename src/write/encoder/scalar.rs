//! Plain msgpack values: nil, bool, str, bin, and numbers (numpy scalars too).

use arrow_array::types::{
    Float32Type, Float64Type, Int64Type, TimestampNanosecondType, UInt64Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::NullBuffer;

use crate::error::Result;
use crate::types::NumpyDtype;
use crate::wire::spelling::Spelling;
use crate::wire::write::{self as wire, Out};
use crate::write::access::{accepts, Bins, Strs};
use crate::write::elements::Elems;
use crate::write::encoder::ColumnEncoder;
use crate::write::ndarray::TypeEnc;
use crate::write::tensor::native_dtype;
use crate::write::unsupported;

pub(crate) struct NullEnc(pub(crate) usize);
impl ColumnEncoder for NullEnc {
    fn encode(&mut self, _: usize, out: &mut Out) -> Result<()> {
        out.buf.push(0xc0);
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0
    }
}

pub(crate) struct BoolEnc(pub(crate) BooleanArray);
impl ColumnEncoder for BoolEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        out.buf.push(if self.0.is_null(row) {
            0xc0
        } else if self.0.value(row) {
            0xc3
        } else {
            0xc2
        });
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0.len()
    }
}

macro_rules! prim_enc {
    ($name:ident, $t:ty, |$b:ident, $v:ident| $body:expr, $w:expr) => {
        pub(crate) struct $name(pub(crate) PrimitiveArray<$t>);
        impl ColumnEncoder for $name {
            #[inline]
            fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
                if self.0.is_null(row) {
                    out.buf.push(0xc0);
                } else {
                    let $b = &mut out.buf;
                    let $v = self.0.value(row);
                    $body;
                }
                Ok(())
            }
            fn size_hint(&self) -> usize {
                self.0.len() * $w
            }
        }
    };
}
prim_enc!(IntEnc, Int64Type, |b, v| wire::sint(b, v), 5);
prim_enc!(UIntEnc, UInt64Type, |b, v| wire::uint(b, v), 5);
prim_enc!(F64Enc, Float64Type, |b, v| wire::f64(b, v), 9);
prim_enc!(F32Enc, Float32Type, |b, v| wire::f32(b, v), 5);
prim_enc!(
    TsExtEnc,
    TimestampNanosecondType,
    |b, v| wire::timestamp_ns(b, v),
    10
);

pub(crate) struct StrEnc(pub(crate) Strs);
impl ColumnEncoder for StrEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.0.is_null(row) {
            out.buf.push(0xc0);
        } else {
            out.spelling.str(&mut out.buf, self.0.value(row));
        }
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0.bytes_hint() + self.0.len() * 3
    }
}

pub(crate) struct BinEnc(pub(crate) Bins);
impl ColumnEncoder for BinEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.0.is_null(row) {
            out.buf.push(0xc0);
        } else {
            let v = self.0.value(row);
            out.spelling.bytes_hdr(&mut out.buf, v.len());
            out.buf.extend_from_slice(v);
        }
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.0.bytes_hint() + self.0.len() * 3
    }
}

/// A numpy scalar: `{b'nd': False, b'type': dtype.str, b'data': <itemsize bytes>}`.
pub(crate) struct ScalarEnc {
    /// the dtype string (`"<i4"`), for openpi's maps, which name it after the value
    pub(crate) dtype_str: String,
    /// the map up to the payload's bytes, in the spelling it was made for (the output's, made
    /// again when that is another)
    prefix: (Spelling, Vec<u8>),
    dtype: NumpyDtype,
    pub(crate) elems: Elems,
    pub(crate) nulls: Option<NullBuffer>,
    pub(crate) len: usize,
}

impl ScalarEnc {
    pub(crate) fn new(arr: &ArrayRef, dtype: Option<&NumpyDtype>) -> Result<Self> {
        let dt = match dtype.filter(|d| accepts(d, arr.data_type())) {
            Some(d) => d.clone(),
            None => native_dtype(std::slice::from_ref(arr), false).ok_or_else(|| {
                unsupported(format!(
                    "Arrow {} has no numpy scalar type",
                    arr.data_type()
                ))
            })?,
        };
        let elems = Elems::new(arr, &dt)?;
        Ok(ScalarEnc {
            dtype_str: dt.to_dtype_str(),
            prefix: (Spelling::default(), scalar_prefix(&dt, Spelling::default())),
            dtype: dt,
            elems,
            nulls: arr.logical_nulls(),
            len: arr.len(),
        })
    }
}

/// A numpy scalar's map up to its payload's bytes, in spelling `sp`.
fn scalar_prefix(dt: &NumpyDtype, sp: Spelling) -> Vec<u8> {
    let mut p = Vec::with_capacity(32);
    wire::map_hdr(&mut p, 3);
    sp.key(&mut p, b"nd");
    p.push(0xc2);
    sp.key(&mut p, b"type");
    let ty = TypeEnc::of(dt);
    ty.write(&mut p, ty.forms_and_body().0[0]);
    sp.key(&mut p, b"data");
    sp.bytes_hdr(&mut p, dt.itemsize());
    p
}

impl ScalarEnc {
    /// The map up to the payload, in the output's spelling.
    fn prefix_for(&mut self, sp: Spelling) -> &[u8] {
        if self.prefix.0 != sp {
            self.prefix = (sp, scalar_prefix(&self.dtype, sp));
        }
        &self.prefix.1
    }

    /// openpi's numpy scalar: `{b'__npgeneric__': True, b'data': obj.item(), b'dtype': str}`:
    /// `item()` is a Python bool, int or float, which msgpack writes in its smallest int form or
    /// as a float64.
    fn encode_npgeneric(&mut self, row: usize, out: &mut Out) -> Result<()> {
        let ty = &self.dtype_str;
        let t = ty.as_bytes();
        let (big, kind) = (t.first() == Some(&b'>'), t.get(1).copied().unwrap_or(0));
        let mut le = Vec::with_capacity(16);
        self.elems.write(row, row + 1, &mut le)?;
        if big {
            le.reverse();
        }
        let b = &mut out.buf;
        wire::map_hdr(b, 3);
        b.extend_from_slice(b"\xc4\x0d__npgeneric__\xc3\xc4\x04data");
        let mut w = [0u8; 8];
        match (kind, le.len()) {
            (b'b', 1) => b.push(if le[0] != 0 { 0xc3 } else { 0xc2 }),
            (b'u', n @ (1 | 2 | 4 | 8)) => {
                w[..n].copy_from_slice(&le);
                wire::uint(b, u64::from_le_bytes(w));
            }
            (b'i', n @ (1 | 2 | 4 | 8)) => {
                w[..n].copy_from_slice(&le);
                // sign-extend from n bytes
                let v = (i64::from_le_bytes(w) << (64 - 8 * n)) >> (64 - 8 * n);
                wire::sint(b, v);
            }
            (b'f', 2) => wire::f64(b, half::f16::from_le_bytes([le[0], le[1]]).to_f64()),
            (b'f', 4) => wire::f64(b, f32::from_le_bytes(le[..4].try_into().unwrap()) as f64),
            (b'f', 8) => wire::f64(b, f64::from_le_bytes(le[..8].try_into().unwrap())),
            _ => {
                return Err(unsupported(format!(
                    "openpi's msgpack_numpy has no form for numpy scalars of dtype {ty} \
                     (item() is not a msgpack value); write with dialect msgpack-numpy"
                )))
            }
        }
        b.extend_from_slice(b"\xc4\x05dtype");
        wire::str(b, ty);
        Ok(())
    }
}

impl ColumnEncoder for ScalarEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            // a null read from a NaT keeps its marker: a NaT again (the element writer writes a
            // null as one); any other null was a nil (openpi's form has no NaT)
            if !out.openpi && self.elems.nat_at(row) {
                let p = self.prefix_for(out.spelling);
                out.buf.extend_from_slice(p);
                return self.elems.write(row, row + 1, &mut out.buf);
            }
            out.buf.push(0xc0);
            return Ok(());
        }
        if out.openpi {
            return self.encode_npgeneric(row, out);
        }
        let p = self.prefix_for(out.spelling);
        out.buf.extend_from_slice(p);
        self.elems.write(row, row + 1, &mut out.buf)
    }
    fn size_hint(&self) -> usize {
        self.len * (self.prefix.1.len() + 8)
    }
}
