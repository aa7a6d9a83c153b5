//! Aligned output (`WriterBuilder::with_aligned`): a map's header, keys and integers are held back
//! until the next ndarray, then written just wide enough that its payload starts on a 64-byte
//! boundary.

use crate::error::Result;
use crate::wire::write::{self as wire, IntVal, Out};
use crate::write::encoder::ColumnEncoder;
use crate::write::ndarray::NdProbe;

/// One element of a map being assembled in aligned mode, before the next ndarray.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Item {
    /// The map header (entries).
    MapHdr(usize),
    /// The key of column `c`.
    Key(usize),
    /// An encoded value, `scratch[start..end]`.
    Val(usize, usize),
}

/// Aligned mode: the part of a map written since the last ndarray payload. It is held back so that,
/// when the next ndarray cannot reach a 64-byte boundary by widening inside its own map, the map
/// header, keys and integers before it can be written wider too (never extra bytes or keys).
#[derive(Default)]
pub(crate) struct Segment {
    pub(crate) items: Vec<Item>,
    pub(crate) scratch: Vec<u8>,
    forms: Vec<&'static [u8]>,
    ints: Vec<Option<IntVal>>,
    sizes: Vec<u8>,
    suf: Vec<u128>,
    /// per column: its key is bin ([`super::bin_key`]), looked up once
    pub(crate) bin: Vec<bool>,
}

impl Segment {
    /// An empty segment for columns whose keys are bin where `bin` says.
    pub(crate) fn new(bin: Vec<bool>) -> Self {
        Segment {
            bin,
            ..Segment::default()
        }
    }

    /// Write the held items, widened so that an ndarray starting right after them (described by
    /// `next`) can put its payload on a 64-byte boundary.
    pub(crate) fn flush(
        &mut self,
        out: &mut Out,
        names: &arrow_schema::Fields,
        next: Option<NdProbe>,
    ) {
        if self.items.is_empty() {
            return;
        }
        self.forms.clear();
        self.ints.clear();
        let mut fixed = 0usize;
        for it in &self.items {
            let (f, int): (&'static [u8], Option<IntVal>) = match *it {
                Item::MapHdr(n) => (wire::coll_forms(n), None),
                Item::Key(c) => {
                    let n = names[c].name().len();
                    fixed += n;
                    let forms = if self.bin[c] {
                        wire::bin_forms(n)
                    } else {
                        wire::str_forms(n)
                    };
                    (forms, None)
                }
                Item::Val(s, e) => match wire::read_int(&self.scratch[s..e]) {
                    Some(v) => (v.forms(), Some(v)),
                    None => {
                        fixed += e - s;
                        (&[0], None)
                    }
                },
            };
            self.forms.push(f);
            self.ints.push(int);
        }
        let n = self.forms.len();
        self.suf.clear();
        self.suf.resize(n + 1, 0);
        crate::wire::pad::suffix_reach(&self.forms, &mut self.suf);
        let mut pad = 0;
        if let Some(p) = next {
            let start =
                out.pos() + fixed as u64 + self.forms.iter().map(|f| f[0] as u64).sum::<u64>();
            for r in 0..128usize {
                if (self.suf[0] >> r) & 1 == 0 {
                    continue;
                }
                let data = start + r as u64 + p.min as u64;
                let need = ((crate::wire::pad::ALIGN - data % crate::wire::pad::ALIGN)
                    % crate::wire::pad::ALIGN) as usize;
                if (p.reach >> need) & 1 == 1
                    || (need + 64 < 128 && (p.reach >> (need + 64)) & 1 == 1)
                {
                    pad = r;
                    break;
                }
            }
        }
        self.sizes.clear();
        self.sizes.resize(n, 0);
        crate::wire::pad::pick_sizes(&self.forms, &self.suf, pad, &mut self.sizes);
        let b = &mut out.buf;
        for (i, it) in self.items.iter().enumerate() {
            match *it {
                Item::MapHdr(k) => wire::map_hdr_sized(b, k, self.sizes[i]),
                Item::Key(c) => {
                    let name = names[c].name();
                    if self.bin[c] {
                        wire::bin_hdr_sized(b, name.len(), self.sizes[i]);
                    } else {
                        wire::str_hdr_sized(b, name.len(), self.sizes[i]);
                    }
                    b.extend_from_slice(name.as_bytes());
                }
                Item::Val(s, e) => match self.ints[i] {
                    Some(v) => v.write(b, self.sizes[i]),
                    None => b.extend_from_slice(&self.scratch[s..e]),
                },
            }
        }
        self.items.clear();
        self.scratch.clear();
    }
}

/// Aligned mode: encode one map value. An ndarray value flushes the held items widened for it and
/// is written in place; other values that may hold ndarrays are written in place too; plain values
/// are held (in `scratch`) so their ints can still be widened for a later ndarray.
pub(crate) fn encode_aligned(
    enc: &mut dyn ColumnEncoder,
    row: usize,
    seg: &mut Segment,
    out: &mut Out,
    names: &arrow_schema::Fields,
) -> Result<()> {
    if let Some(p) = enc.nd_probe(row)? {
        seg.flush(out, names, Some(p));
        return enc.encode(row, out);
    }
    if enc.may_nd() {
        seg.flush(out, names, None);
        return enc.encode(row, out);
    }
    let mut tmp = Out {
        buf: std::mem::take(&mut seg.scratch),
        base: 0,
        align: false,
        openpi: out.openpi,
        spelling: out.spelling,
        count_only: false,
        elided: 0,
    };
    let start = tmp.buf.len();
    let r = enc.encode(row, &mut tmp);
    let end = tmp.buf.len();
    seg.scratch = tmp.buf;
    r?;
    seg.items.push(Item::Val(start, end));
    Ok(())
}
