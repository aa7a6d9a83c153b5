//! ndarray maps as `msgpack_numpy.encode` writes them: the `nd`/`type`/`kind`/`shape`/`data`
//! header in Python's key order, the dtype string or structured descr, and in aligned mode the
//! header widened so the payload starts on a 64-byte boundary.

use crate::error::Result;
use crate::types::NumpyDtype;
use crate::wire::pad::{choose_pad, pick_sizes, suffix_reach};
use crate::wire::write::{self as wire, Out};
use crate::write::access::{Bins, Strs};
use crate::write::unsupported;

// ndarray maps

/// `U<chars>` elements `rows` of `strs`, padded with NULs.
pub(crate) fn write_unicode(
    strs: &Strs,
    rows: std::ops::Range<usize>,
    chars: usize,
    big: bool,
    ty: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    for i in rows {
        let s = if strs.is_null(i) { "" } else { strs.value(i) };
        let n = s.chars().count();
        if n > chars {
            return Err(unsupported(format!(
                "string of {n} characters does not fit numpy dtype {ty}"
            )));
        }
        for c in s.chars() {
            let c = c as u32;
            out.extend_from_slice(&if big {
                c.to_be_bytes()
            } else {
                c.to_le_bytes()
            });
        }
        out.resize(out.len() + (chars - n) * 4, 0);
    }
    Ok(())
}

/// `S<len>` elements `rows` of `bins`, padded with NULs.
pub(crate) fn write_bytes(
    bins: &Bins,
    rows: std::ops::Range<usize>,
    len: usize,
    ty: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    for i in rows {
        let s = if bins.is_null(i) {
            &[][..]
        } else {
            bins.value(i)
        };
        if s.len() > len {
            return Err(unsupported(format!(
                "value of {} bytes does not fit numpy dtype {ty}",
                s.len()
            )));
        }
        out.extend_from_slice(s);
        out.resize(out.len() + (len - s.len()), 0);
    }
    Ok(())
}

/// The `type` entry of an ndarray map: a dtype string, or a structured descr (nested arrays),
/// pre-encoded once per column.
#[derive(Debug, Clone)]
pub(crate) enum TypeEnc {
    Str(String),
    Descr { n: usize, items: Vec<u8> },
}

impl TypeEnc {
    pub(crate) fn of(dt: &NumpyDtype) -> Self {
        match dt {
            NumpyDtype::Struct(fields) => {
                let mut items = Vec::new();
                for f in fields {
                    descr_field(&f.name, &f.dtype, &f.shape, &mut items);
                }
                TypeEnc::Descr {
                    n: fields.len(),
                    items,
                }
            }
            // `dtype.descr` of an unstructured void or object dtype is `[('', '|V8')]`.
            NumpyDtype::Void { .. } | NumpyDtype::Object => {
                let mut items = Vec::new();
                descr_field("", dt, &[], &mut items);
                TypeEnc::Descr { n: 1, items }
            }
            _ => TypeEnc::Str(dt.to_dtype_str()),
        }
    }
    pub(crate) fn forms_and_body(&self) -> (&'static [u8], usize) {
        match self {
            TypeEnc::Str(s) => (wire::str_forms(s.len()), s.len()),
            TypeEnc::Descr { n, items } => (wire::coll_forms(*n), items.len()),
        }
    }
    pub(crate) fn write(&self, b: &mut Vec<u8>, size: u8) {
        match self {
            TypeEnc::Str(s) => {
                wire::str_hdr_sized(b, s.len(), size);
                b.extend_from_slice(s.as_bytes());
            }
            TypeEnc::Descr { n, items } => {
                wire::array_hdr_sized(b, *n, size);
                b.extend_from_slice(items);
            }
        }
    }
}

pub(crate) fn descr_field(name: &str, dt: &NumpyDtype, shape: &[usize], b: &mut Vec<u8>) {
    wire::array_hdr(b, if shape.is_empty() { 2 } else { 3 });
    wire::str(b, name);
    match dt {
        NumpyDtype::Struct(fields) => {
            wire::array_hdr(b, fields.len());
            for f in fields {
                descr_field(&f.name, &f.dtype, &f.shape, b);
            }
        }
        other => wire::str(b, &other.to_dtype_str()),
    }
    if !shape.is_empty() {
        wire::array_hdr(b, shape.len());
        for &d in shape {
            wire::uint(b, d as u64);
        }
    }
}

pub(crate) fn kind_of(dt: &NumpyDtype) -> &'static [u8] {
    match dt {
        NumpyDtype::Struct(_) | NumpyDtype::Void { .. } => b"V",
        NumpyDtype::Object => b"O",
        _ => b"",
    }
}

/// numpy's limit on the number of axes.
pub(crate) const MAX_DIMS: usize = 64;
pub(crate) const NSLOT: usize = 10 + MAX_DIMS;
/// Aligned mode spends padding on these slots first: the shape ints, the `type` str, the `data`
/// bin header, the shape array header, the map header, the `kind` bin header, and only then the
/// bin-encoded keys (every decoder compares key *contents*, but keys are the least usual place).
pub(crate) const PREFERENCE: [usize; 10] = [3, 9, 7, 0, 5, 1, 2, 4, 6, 8];

/// Position-independent facts about one ndarray map, for planning alignment in the enclosing map.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NdProbe {
    /// Bytes from the start of the map to the start of the data payload, all forms smallest.
    pub(crate) min: usize,
    /// Paddings (bit k: k extra bytes) reachable by widening inside the map.
    pub(crate) reach: u128,
}

/// The head of an ndarray map, everything before the data payload:
/// `{b'nd': True, b'type': .., b'kind': .., b'shape': [..], b'data': <bin header>`.
pub(crate) struct NdHead<'a> {
    pub(crate) ty: &'a TypeEnc,
    pub(crate) kind: &'a [u8],
    pub(crate) shape: &'a [usize],
    pub(crate) data_len: usize,
}

impl NdHead<'_> {
    /// Slot forms in emission order: 0 map header, 1 key nd, 2 key type, 3 type header,
    /// 4 key kind, 5 kind header, 6 key shape, 7 shape header, 8 key data, 9 data header,
    /// 10.. the shape ints. Returns (slots, bytes that never change).
    pub(crate) fn forms(&self, f: &mut [&'static [u8]; NSLOT]) -> Result<(usize, usize)> {
        if self.shape.len() > MAX_DIMS {
            return Err(unsupported(format!(
                "ndarray with {} axes (numpy allows {MAX_DIMS})",
                self.shape.len()
            )));
        }
        if self.data_len > u32::MAX as usize {
            return Err(unsupported(format!(
                "ndarray of {} bytes: a msgpack bin holds at most 4 GiB",
                self.data_len
            )));
        }
        let (tf, tbody) = self.ty.forms_and_body();
        f[0] = wire::coll_forms(5);
        f[1] = wire::bin_forms(2);
        f[2] = wire::bin_forms(4);
        f[3] = tf;
        f[4] = wire::bin_forms(4);
        f[5] = wire::bin_forms(self.kind.len());
        f[6] = wire::bin_forms(5);
        f[7] = wire::coll_forms(self.shape.len());
        f[8] = wire::bin_forms(4);
        f[9] = wire::bin_forms(self.data_len);
        for (i, &d) in self.shape.iter().enumerate() {
            f[10 + i] = wire::uint_forms(d as u64);
        }
        // b"nd" + True + b"type" + body + b"kind" + kind + b"shape" + b"data"
        let fixed = 2 + 1 + 4 + tbody + 4 + self.kind.len() + 5 + 4;
        Ok((10 + self.shape.len(), fixed))
    }

    pub(crate) fn plan(
        &self,
        f: &[&'static [u8]; NSLOT],
        n: usize,
        order: &mut [usize; NSLOT],
    ) -> ([&'static [u8]; NSLOT], [u128; NSLOT + 1]) {
        let mut k = 0;
        for i in 10..n {
            order[k] = i;
            k += 1;
        }
        for &i in &PREFERENCE {
            order[k] = i;
            k += 1;
        }
        let mut slots: [&'static [u8]; NSLOT] = [&[0]; NSLOT];
        for j in 0..n {
            slots[j] = f[order[j]];
        }
        let mut suf = [0u128; NSLOT + 1];
        suffix_reach(&slots[..n], &mut suf[..n + 1]);
        (slots, suf)
    }

    pub(crate) fn probe(&self) -> Result<NdProbe> {
        let mut f: [&'static [u8]; NSLOT] = [&[0]; NSLOT];
        let (n, fixed) = self.forms(&mut f)?;
        let min = fixed + f[..n].iter().map(|x| x[0] as usize).sum::<usize>();
        let mut order = [0usize; NSLOT];
        let (_, suf) = self.plan(&f, n, &mut order);
        Ok(NdProbe { min, reach: suf[0] })
    }

    /// Write the head. In aligned mode, widen forms inside this map so the payload starts on a
    /// 64-byte boundary (8 when 64 is out of reach). Only wider-but-valid encodings are used —
    /// never extra keys or bytes outside msgpack values — so every msgpack-numpy reader accepts it.
    pub(crate) fn write(&self, out: &mut Out) -> Result<()> {
        if out.openpi {
            return self.write_openpi_head(out);
        }
        if !out.spelling.is_default() {
            return self.write_spelled_head(out);
        }
        let mut f: [&'static [u8]; NSLOT] = [&[0]; NSLOT];
        let (n, fixed) = self.forms(&mut f)?;
        let mut sizes = [0u8; NSLOT];
        for i in 0..n {
            sizes[i] = f[i][0];
        }
        if out.align {
            let min = fixed + sizes[..n].iter().map(|&s| s as usize).sum::<usize>();
            let mut order = [0usize; NSLOT];
            let (slots, suf) = self.plan(&f, n, &mut order);
            let t = choose_pad(suf[0], out.pos() + min as u64);
            let mut chosen = [0u8; NSLOT];
            pick_sizes(&slots[..n], &suf[..n + 1], t, &mut chosen);
            for j in 0..n {
                sizes[order[j]] = chosen[j];
            }
        }
        let b = &mut out.buf;
        wire::map_hdr_sized(b, 5, sizes[0]);
        wire::bin_hdr_sized(b, 2, sizes[1]);
        b.extend_from_slice(b"nd\xc3");
        wire::bin_hdr_sized(b, 4, sizes[2]);
        b.extend_from_slice(b"type");
        self.ty.write(b, sizes[3]);
        wire::bin_hdr_sized(b, 4, sizes[4]);
        b.extend_from_slice(b"kind");
        wire::bin_hdr_sized(b, self.kind.len(), sizes[5]);
        b.extend_from_slice(self.kind);
        wire::bin_hdr_sized(b, 5, sizes[6]);
        b.extend_from_slice(b"shape");
        wire::array_hdr_sized(b, self.shape.len(), sizes[7]);
        for (i, &d) in self.shape.iter().enumerate() {
            wire::uint_sized(b, d as u64, sizes[10 + i]);
        }
        wire::bin_hdr_sized(b, 4, sizes[8]);
        b.extend_from_slice(b"data");
        wire::bin_hdr_sized(b, self.data_len, sizes[9]);
        Ok(())
    }

    /// The head as an older packer spelled it ([`crate::wire::spelling`]): str keys, no `kind`,
    /// raw strs for bytes, each as the file read had them; the smallest forms (never aligned).
    fn write_spelled_head(&self, out: &mut Out) -> Result<()> {
        self.forms(&mut [&[0]; NSLOT])?; // the same limits (axes, 4 GiB)
        let (sp, b) = (out.spelling, &mut out.buf);
        // (a structured or object array keeps its `kind`: without it msgpack_numpy reads the
        // payload as plain bytes)
        let kind = !sp.no_kind || !self.kind.is_empty();
        wire::map_hdr(b, if kind { 5 } else { 4 });
        sp.key(b, b"nd");
        b.push(0xc3);
        sp.key(b, b"type");
        self.ty.write(b, self.ty.forms_and_body().0[0]);
        if kind {
            sp.key(b, b"kind");
            sp.bytes_hdr(b, self.kind.len());
            b.extend_from_slice(self.kind);
        }
        sp.key(b, b"shape");
        wire::array_hdr(b, self.shape.len());
        for &d in self.shape {
            wire::uint(b, d as u64);
        }
        sp.key(b, b"data");
        sp.bytes_hdr(b, self.data_len);
        Ok(())
    }

    /// openpi's `pack_array`: `{b'__ndarray__': True, b'data': .., b'dtype': str, b'shape': [..]}`.
    /// The payload comes before dtype and shape: [`NdHead::write_tail`] writes those after it.
    fn write_openpi_head(&self, out: &mut Out) -> Result<()> {
        let TypeEnc::Str(ty) = self.ty else {
            return Err(openpi_refuses("structured"));
        };
        if !self.kind.is_empty() || ty.as_bytes().get(1) == Some(&b'c') {
            return Err(openpi_refuses(if self.kind.is_empty() {
                "complex"
            } else {
                "object or void"
            }));
        }
        self.forms(&mut [&[0]; NSLOT])?; // the same limits (axes, 4 GiB)
        let b = &mut out.buf;
        wire::map_hdr(b, 4);
        b.extend_from_slice(b"\xc4\x0b__ndarray__\xc3\xc4\x04data");
        wire::bin_hdr_sized(b, self.data_len, wire::bin_forms(self.data_len)[0]);
        Ok(())
    }

    /// What follows the payload: nothing for msgpack-numpy, dtype and shape for openpi.
    pub(crate) fn write_tail(&self, out: &mut Out) {
        if let (true, TypeEnc::Str(ty)) = (out.openpi, self.ty) {
            let b = &mut out.buf;
            b.extend_from_slice(b"\xc4\x05dtype");
            wire::str(b, ty);
            b.extend_from_slice(b"\xc4\x05shape");
            wire::array_hdr(b, self.shape.len());
            for &d in self.shape {
                wire::uint(b, d as u64);
            }
        }
    }
}

/// openpi's `pack_array` raises ValueError for these dtypes: so does the writer.
pub(crate) fn openpi_refuses(what: &str) -> crate::error::Error {
    unsupported(format!(
        "openpi's msgpack_numpy has no form for {what} ndarrays (it refuses them); write this \
         column with dialect msgpack-numpy"
    ))
}
