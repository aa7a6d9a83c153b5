//! ndarray values: tensors (fixed or ragged), complex numbers, raw object-array pickles.

use crate::types::layout::ValueForm;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field};

use crate::error::Result;
use crate::types::{meta, NumpyDtype};
use crate::wire::pyrepr::py_complex_repr;
use crate::wire::write::Out;
use crate::write::access::Bins;
use crate::write::encoder::ColumnEncoder;
use crate::write::ndarray::{NdHead, NdProbe, TypeEnc};
use crate::write::tensor::{resolve_tensor, NdType, Tensor};

/// One ndarray map per row (0-d for a non-list column), or nil for a null row.
pub(crate) struct TensorEnc {
    pub(crate) nd: NdType,
    pub(crate) t: Tensor,
    /// rows (of this batch) whose shape the lists cannot tell: from `msgpack_numpy.empty_shapes`
    pub(crate) overrides: std::collections::HashMap<usize, Vec<usize>>,
    /// Fixed shape: the shape, elements per row, and the whole head (non-aligned mode).
    pub(crate) fixed: Option<(Vec<usize>, usize, Vec<u8>)>,
    pub(crate) shape: Vec<usize>,
    /// `U`/`S` rows written at their own smallest width (`msgpack_numpy.widths` = `min`), or at
    /// least the column's (the last number: 0, or that width), with the dtype of the last width
    /// used
    pub(crate) min_width: Option<(NumpyDtype, usize, NdType, usize)>,
    /// 0-d datetime ndarrays: the column's nulls, each a NaT where it holds NaT's marker (the
    /// element writer writes it), else a nil
    nat_or_nil: Option<arrow_buffer::NullBuffer>,
}

impl TensorEnc {
    pub(crate) fn new(
        arr: &ArrayRef,
        dtype: Option<&NumpyDtype>,
        lists: bool,
        structs: bool,
        dims: &[Option<usize>],
    ) -> Result<Self> {
        let (dt, mut ts) = resolve_tensor(std::slice::from_ref(arr), dtype, lists, structs)?;
        let mut t = ts.pop().expect("one array").with_dims(dims);
        // A null in a column that held 0-d datetime ndarrays was a NaT where it keeps NaT's
        // marker: written back as one (the element writer turns it into NaT), any other null as
        // nil. Without metadata a null stays nil.
        let temporal = matches!(
            dt,
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. }
        );
        let nat_or_nil = if temporal && t.levels.is_empty() && dtype.is_some() {
            t.nulls.take()
        } else {
            None
        };
        let nd = NdType::of(&dt);
        let fixed = match t.fixed_shape() {
            Some(shape) => {
                let per_row: usize = shape.iter().product();
                let mut o = Out::new(false);
                NdHead {
                    ty: &nd.ty,
                    kind: nd.kind,
                    shape: &shape,
                    data_len: per_row * nd.itemsize,
                }
                .write(&mut o)?;
                Some((shape, per_row, o.buf))
            }
            None => None,
        };
        Ok(TensorEnc {
            nd,
            t,
            overrides: Default::default(),
            fixed,
            shape: Vec::new(),
            min_width: None,
            nat_or_nil,
        })
    }

    /// Whether row `row` is written as nil.
    fn nil_at(&self, row: usize) -> bool {
        self.t.is_null(row)
            || self
                .nat_or_nil
                .as_ref()
                .is_some_and(|n| n.is_null(row) && !self.t.elems.nat_at(row))
    }

    /// Write rows at their own smallest width when the reader saw several (`field` metadata); a
    /// row wider than the dtype (a column typed from its first rows, `infer_rows`, that widened
    /// past them) at its own width, the others at the column's.
    pub(crate) fn with_widths_of(mut self, field: &Field, dt: Option<&NumpyDtype>) -> Self {
        let Some((dt, (_, width))) = dt.and_then(|d| Some((d, d.text_width()?))) else {
            return self;
        };
        let min = field
            .metadata()
            .get(meta::WIDTHS)
            .is_some_and(|v| v == "min");
        let floor = if min {
            0
        } else if self
            .t
            .elems
            .min_text_width(0, self.t.elems.text_len())
            .is_some_and(|w| w > width)
        {
            width
        } else {
            return self;
        };
        self.min_width = Some((dt.clone(), usize::MAX, NdType::of(dt), floor));
        self.fixed = None;
        self
    }

    /// The row's dtype: the column's, or (`min_width`) the same at the row's smallest width.
    pub(crate) fn row_width(&mut self, a: usize, b: usize) -> Option<usize> {
        let (dt, last, nd, floor) = self.min_width.as_mut()?;
        let w = self.t.elems.min_text_width(a, b)?.max(*floor);
        if w != *last {
            *nd = NdType::of(&dt.with_text_width(w));
            *last = w;
        }
        Some(w)
    }

    pub(crate) fn head_range(&mut self, row: usize) -> Result<(usize, usize)> {
        self.shape.clear();
        let r = self.t.range(row, row + 1, &mut self.shape)?;
        if let Some(s) = self.overrides.get(&row) {
            if r.0 == r.1 {
                self.shape.clear();
                self.shape.extend_from_slice(s);
            }
        }
        Ok(r)
    }
}

impl ColumnEncoder for TensorEnc {
    #[inline]
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nil_at(row) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let plain = !(out.align || out.openpi) && out.spelling.is_default();
        if let (Some((_, k, prefix)), true) = (&self.fixed, plain) {
            // Hot path: the whole head is constant; one copy of the row's payload.
            self.t.check_elems(row * k, (row + 1) * k)?;
            out.buf.extend_from_slice(prefix);
            return self.t.elems.put(row * k, (row + 1) * k, out);
        }
        let (a, b) = self.head_range(row)?;
        self.t.check_elems(a, b)?;
        let w = self.row_width(a, b);
        let nd = match (&self.min_width, w) {
            (Some((_, _, nd, _)), Some(_)) => nd,
            _ => &self.nd,
        };
        let head = NdHead {
            ty: &nd.ty,
            kind: nd.kind,
            shape: &self.shape,
            data_len: (b - a) * nd.itemsize,
        };
        head.write(out)?;
        match w {
            Some(w) => self.t.elems.write_width(a, b, w, &mut out.buf)?,
            None => self.t.elems.put(a, b, out)?,
        }
        head.write_tail(out);
        Ok(())
    }
    fn nd_probe(&mut self, row: usize) -> Result<Option<NdProbe>> {
        if self.nil_at(row) {
            return Ok(None);
        }
        let (a, b) = self.head_range(row)?;
        let w = self.row_width(a, b);
        let nd = match (&self.min_width, w) {
            (Some((_, _, nd, _)), Some(_)) => nd,
            _ => &self.nd,
        };
        let h = NdHead {
            ty: &nd.ty,
            kind: nd.kind,
            shape: &self.shape,
            data_len: (b - a) * nd.itemsize,
        };
        h.probe().map(Some)
    }
    fn may_nd(&self) -> bool {
        true
    }
    fn form(&mut self, row: usize) -> Result<ValueForm> {
        if self.nil_at(row) {
            return Ok(ValueForm::Other);
        }
        self.head_range(row)?;
        Ok(self
            .shape
            .first()
            .map_or(ValueForm::Other, |&l| ValueForm::Ndarray(l)))
    }
    fn size_hint(&self) -> usize {
        let mut s = Vec::new();
        let elems = self
            .t
            .range(0, self.t.len, &mut s)
            .map(|(a, b)| b - a)
            .unwrap_or(0);
        let head = self.fixed.as_ref().map_or(48, |f| f.2.len());
        self.t.len * head + elems * self.nd.itemsize
    }
}

/// Python `complex`: `{b'complex': True, b'data': repr(z)}` from FixedSizeList(Float64|32, 2).
pub(crate) struct ComplexEnc {
    pub(crate) parts: ArrayRef,
    pub(crate) nulls: Option<NullBuffer>,
    pub(crate) len: usize,
    pub(crate) s: String,
}

impl ComplexEnc {
    pub(crate) fn new(arr: &ArrayRef) -> Option<Self> {
        match arr.data_type() {
            DataType::FixedSizeList(f, 2)
                if matches!(f.data_type(), DataType::Float64 | DataType::Float32) =>
            {
                Some(ComplexEnc {
                    parts: arr.as_fixed_size_list().values().clone(),
                    nulls: arr.logical_nulls(),
                    len: arr.len(),
                    s: String::new(),
                })
            }
            _ => None,
        }
    }
    pub(crate) fn part(&self, i: usize) -> f64 {
        match self.parts.data_type() {
            DataType::Float64 => self.parts.as_primitive::<Float64Type>().value(i),
            _ => self.parts.as_primitive::<Float32Type>().value(i) as f64,
        }
    }
}

impl ColumnEncoder for ComplexEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let (re, im) = (self.part(2 * row), self.part(2 * row + 1));
        py_complex_repr(re, im, &mut self.s);
        let (sp, b) = (out.spelling, &mut out.buf);
        if sp.is_default() {
            b.extend_from_slice(b"\x82\xc4\x07complex\xc3\xc4\x04data");
        } else {
            b.push(0x82);
            sp.key(b, b"complex");
            b.push(0xc3);
            sp.key(b, b"data");
        }
        sp.str(b, &self.s);
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.len * 40
    }
}

/// Raw pickle bytes of an object array, written back as
/// `{nd: True, type: [["", "|O"]], kind: b'O', shape: [..], data: <pickle>}`. The shape is the
/// one every row had when read ([`crate::types::meta::SHAPE`]), else `[]`: the pickle alone does
/// not say it, and Python's decoder ignores it (it returns `pickle.loads(data)`).
pub(crate) struct ObjectEnc {
    pub(crate) bins: Bins,
    pub(crate) ty: TypeEnc,
    pub(crate) shape: Vec<usize>,
}

impl ColumnEncoder for ObjectEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.bins.is_null(row) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let v = self.bins.value(row);
        NdHead {
            ty: &self.ty,
            kind: b"O",
            shape: &self.shape,
            data_len: v.len(),
        }
        .write(out)?;
        out.buf.extend_from_slice(v);
        Ok(())
    }
    fn nd_probe(&mut self, row: usize) -> Result<Option<NdProbe>> {
        if self.bins.is_null(row) {
            return Ok(None);
        }
        let n = self.bins.value(row).len();
        NdHead {
            ty: &self.ty,
            kind: b"O",
            shape: &self.shape,
            data_len: n,
        }
        .probe()
        .map(Some)
    }
    fn may_nd(&self) -> bool {
        true
    }
    fn size_hint(&self) -> usize {
        self.bins.bytes_hint() + self.bins.len() * 48
    }
}
