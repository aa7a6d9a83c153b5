//! ndarrays (fixed or ragged shapes), numpy scalars in tensor columns, complex numbers: the
//! payload bytes copied once into the column's values, with a fast path for repeated headers.

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::types::buffers::{elem_align, extend_as, extend_native, native, to_arrow};
pub(crate) use crate::types::nest::{nest_fixed, nest_ragged, ragged_offsets, same_structure};
use crate::types::text::TextValues;
use crate::types::{meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, NdArray, Special, MAX_EMPTY_ENTRIES};
use arrow_array::*;
use arrow_buffer::{Buffer, MutableBuffer, NullBufferBuilder, OffsetBuffer};
use arrow_schema::{DataType, Field};
use std::sync::Arc;

/// How a tensor column is laid out in Arrow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Repr {
    /// nested FixedSizeList (fixed) or nested List (ragged); the element type alone for 0-d
    Nested,
    /// `arrow.fixed_shape_tensor`: FixedSizeList of the flattened row
    FixedTensor,
    /// `arrow.variable_shape_tensor`: Struct{data: List, shape: FixedSizeList<Int32>}
    VarTensor,
}

/// The header bytes of the last ndarray map (everything up to the data payload): when the next
/// row's map starts with the same bytes, dtype, shape and data length are the same, so the row is
/// one compare and one copy.
pub(crate) struct FastPath {
    pub(crate) header: Vec<u8>,
    pub(crate) data_len: usize,
    /// elements in the payload (from the shape: `data_len / itemsize` fails for `U0`)
    pub(crate) n_elems: usize,
    pub(crate) swap_dt: Arc<NumpyDtype>,
    /// a structured dtype other than the column's (each element laid out as the column's):
    /// compared once, not per row (comparing field names was half of such a column's decode)
    pub(crate) relaid: bool,
    /// the shape the header holds (not the previous row's dims: those are gone after a batch
    /// ends, and zeros after a null row)
    pub(crate) shape: Vec<usize>,
}

pub(crate) struct TensorDecoder {
    /// dtype of the column (metadata), and the same in native order (what the buffer holds)
    pub(crate) dt: NumpyDtype,
    pub(crate) native_dt: NumpyDtype,
    pub(crate) item: usize,
    /// per-axis length; `None` where rows differ (ragged)
    pub(crate) shape: Vec<Option<usize>>,
    pub(crate) fixed: Option<Vec<usize>>,
    pub(crate) row_bytes: usize,
    pub(crate) repr: Repr,
    pub(crate) field: Field,
    pub(crate) buf: MutableBuffer,
    pub(crate) nulls: NullBufferBuilder,
    pub(crate) rows: usize,
    pub(crate) elems: usize,
    /// ragged: the shape of every row, `ndim` entries each
    pub(crate) dims: Vec<usize>,
    pub(crate) dtype_cache: Vec<(Vec<u8>, NumpyDtype)>,
    pub(crate) fast: Option<FastPath>,
    /// the header remembered before `fast`: a column of two shapes (arrays empty or not, strings
    /// of two widths) takes both by their header
    pub(crate) fast2: Option<FastPath>,
    /// The batch's only row so far, a slice of the input (`Ctx::input`) rather than a copy: the
    /// values of a batch of one big array. Copied into `buf` when another row comes.
    pub(crate) borrowed: Option<Buffer>,
    /// a column of Python `complex` values (not numpy ones): inferred so, it takes no numpy
    /// complex, nor a numpy column a Python one (the conflict a read of every row reports)
    pub(crate) python_complex: bool,
    /// entries of this batch's rows that no data byte backs ([`NdArray::unbacked_entries`]),
    /// less twice the bytes of the rows read (a batch of many small empty arrays is fine; a
    /// few bytes describing millions of entries are not)
    pub(crate) unbacked: i128,
    /// NUL bytes this batch's rows were padded with to the column's widest strings
    /// ([`MAX_PADDING`]: structured rows)
    padding: u128,
    /// a `U`/`S` column's elements, appended as each row comes (not padded to the widest)
    text: Option<TextValues>,
    pub(crate) ctx: Ctx,
}

/// NUL bytes one batch of a string (or structured) column may be padded with: narrower rows are
/// held at the widest row's width until the batch ends, and one 400 KB string beside millions
/// of short ones asked for terabytes from megabytes of input.
const MAX_PADDING: u128 = 1 << 30;

impl TensorDecoder {
    pub(crate) fn new(dt: NumpyDtype, field: &Field, ctx: &Ctx) -> Result<Self> {
        let elem = dt.arrow_type()?;
        let md = field.metadata();
        let (shape, repr): (Vec<Option<usize>>, Repr) =
            match md.get(meta::EXTENSION_NAME).map(String::as_str) {
                Some("arrow.fixed_shape_tensor") => {
                    let v: serde_json::Value = md
                        .get(meta::EXTENSION_METADATA)
                        .and_then(|m| serde_json::from_str(m).ok())
                        .unwrap_or_default();
                    let dims = v["shape"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|d| d.as_u64().map(|d| Some(d as usize)))
                                .collect()
                        })
                        .unwrap_or_default();
                    (dims, Repr::FixedTensor)
                }
                Some("arrow.variable_shape_tensor") => {
                    let ndim = match field.data_type() {
                        DataType::Struct(f) => {
                            match f.find("shape").map(|(_, f)| f.data_type().clone()) {
                                Some(DataType::FixedSizeList(_, n)) => n as usize,
                                _ => 0,
                            }
                        }
                        _ => 0,
                    };
                    (vec![None; ndim], Repr::VarTensor)
                }
                _ => {
                    let mut shape = Vec::new();
                    let mut t = field.data_type();
                    while !same_structure(t, &elem) {
                        match t {
                            DataType::FixedSizeList(f, n) => {
                                shape.push(Some(*n as usize));
                                t = f.data_type();
                            }
                            DataType::List(f) | DataType::LargeList(f) => {
                                shape.push(None);
                                t = f.data_type();
                            }
                            _ => {
                                return Err(Error::new(ErrorKind::TypeConflict(format!(
                                    "field {:?} of type {} cannot hold ndarrays of {}",
                                    field.name(),
                                    field.data_type(),
                                    dt.to_dtype_str()
                                ))))
                            }
                        }
                    }
                    if shape.iter().any(|d| d.is_none()) {
                        shape.iter_mut().for_each(|d| *d = None);
                    }
                    (shape, Repr::Nested)
                }
            };
        let fixed: Option<Vec<usize>> = shape.iter().copied().collect();
        let item = dt.itemsize();
        let row_bytes = fixed
            .as_ref()
            .map_or(0, |f| f.iter().product::<usize>() * item);
        Ok(TensorDecoder {
            native_dt: native(&dt),
            text: TextValues::for_dtype(&dt),
            dt,
            item,
            shape,
            fixed,
            row_bytes,
            repr,
            field: field.clone(),
            buf: MutableBuffer::new(0),
            nulls: NullBufferBuilder::new(0),
            rows: 0,
            elems: 0,
            dims: Vec::new(),
            dtype_cache: Vec::new(),
            fast: None,
            fast2: None,
            borrowed: None,
            python_complex: md.get(meta::KIND).map(String::as_str) == Some("complex"),
            unbacked: 0,
            padding: 0,
            ctx: ctx.clone(),
        })
    }

    /// Count the padding of `n_elems` elements of `row_item` bytes held `wide` bytes wide,
    /// refusing a batch past [`MAX_PADDING`].
    fn pad(
        &mut self,
        wide: usize,
        row_item: usize,
        n_elems: usize,
    ) -> std::result::Result<(), ErrorKind> {
        if self.text.is_some() {
            return Ok(());
        }
        let pad = wide.saturating_sub(row_item) as u128 * n_elems as u128;
        self.padding = self.padding.saturating_add(pad);
        if pad > 0 && self.padding > MAX_PADDING {
            return Err(ErrorKind::InvalidNdarray(format!(
                "refused: this batch's shorter strings would take more than {MAX_PADDING} bytes of NUL padding (a column's strings are held at its widest, here {} bytes an element, until its batch ends)",
                wide
            )));
        }
        Ok(())
    }

    pub(crate) fn row_dtype(&mut self, nd: &NdArray<'_>, c: &Cursor<'_>) -> Result<NumpyDtype> {
        if let Some((_, d)) = self
            .dtype_cache
            .iter()
            .find(|(r, _)| r.as_slice() == nd.type_raw)
        {
            return Ok(d.clone());
        }
        let d = nd.parse_dtype(c.offset_of(nd.type_pos))?;
        // a narrower string array in a column of wider ones is padded to the column's width; a
        // wider one (past the rows the type was inferred from) widens the column, as inference
        // over every row would have
        let narrower = match (d.text_width(), self.dt.text_width()) {
            (Some((u1, n1)), Some((u2, n2))) if u1 == u2 && n1 > n2 => {
                self.widen_text(n1)
                    .map_err(|k| c.error_at(nd.type_pos, k))?;
                true
            }
            (Some((u1, n1)), Some((u2, n2))) => u1 == u2 && n1 <= n2,
            _ => false,
        };
        // numbers of another numeric dtype are converted, element by element (`push_converted`)
        let numeric = |t: &NumpyDtype| {
            matches!(
                t,
                NumpyDtype::Bool | NumpyDtype::Int { .. } | NumpyDtype::Float { .. }
            )
        };
        // (only into a type the caller gave: an inferred one took every row's dtype as it was)
        let convertible = self.ctx.convert && numeric(&d) && numeric(&self.dt);
        // structured rows whose string fields are of other widths, or fields of another byte
        // order: each element laid out as the column's (`push_row`), wider ones widening it
        let restructured = match self.dt.widest_struct(&d).filter(|_| d != self.dt) {
            Some(wide) => {
                if wide != self.dt {
                    self.relayout(wide)
                        .map_err(|k| c.error_at(nd.type_pos, k))?;
                }
                true
            }
            None => false,
        };
        if !narrower && !restructured && !convertible && native(&d) != self.native_dt {
            return Err(c.error_at(
                nd.type_pos,
                ErrorKind::NotItsType(format!(
                    "ndarray of {} in a column of {}",
                    d.to_dtype_str(),
                    self.dt.to_dtype_str()
                )),
            ));
        }
        if self.dtype_cache.len() < 4 {
            self.dtype_cache.push((nd.type_raw.to_vec(), d.clone()));
        }
        Ok(d)
    }

    /// The column's strings `width` characters (or bytes) wide from now on (its dtype: the
    /// elements themselves are text already, [`TextValues`]).
    fn widen_text(&mut self, width: usize) -> std::result::Result<(), ErrorKind> {
        self.relayout(self.dt.with_text_width(width))
    }

    /// The column's elements of `dt` from now on (a wider string or structured dtype), those so
    /// far laid out again as such.
    fn relayout(&mut self, dt: NumpyDtype) -> std::result::Result<(), ErrorKind> {
        self.unborrow();
        let (old, new) = (self.item, dt.itemsize());
        if self.text.is_none() {
            self.pad(new, old, self.elems)?;
            let mut buf = MutableBuffer::new(self.elems * new);
            let had = &self.buf.as_slice()[..self.elems * old];
            extend_as(&self.dt, &dt, had, self.elems, &mut buf);
            self.buf = buf;
        }
        self.native_dt = native(&dt);
        self.dt = dt;
        self.item = new;
        self.row_bytes = self
            .fixed
            .as_ref()
            .map_or(0, |f| f.iter().product::<usize>() * new);
        self.fast = None;
        self.fast2 = None;
        self.dtype_cache.clear();
        Ok(())
    }

    /// A row of another numeric dtype, each element converted exactly (else: its index).
    pub(crate) fn push_converted(
        &mut self,
        row_dt: &NumpyDtype,
        data: &[u8],
        n_elems: usize,
    ) -> std::result::Result<(), usize> {
        self.unborrow();
        convert_elems(row_dt, &self.native_dt, data, n_elems, &mut self.buf)?;
        self.elems += n_elems;
        self.rows += 1;
        self.nulls.append_non_null();
        Ok(())
    }

    /// A row of `row_dt` (`relaid`: [`TensorDecoder::relaid`] of it).
    pub(crate) fn push_row(
        &mut self,
        row_dt: &NumpyDtype,
        data: &[u8],
        n_elems: usize,
        relaid: bool,
    ) -> Result<()> {
        if let Some(t) = &mut self.text {
            t.push(row_dt, data, n_elems)?;
        } else if !(self.rows == 0 && !relaid && self.borrow(row_dt, data)) {
            self.push_bytes(row_dt, data, n_elems, relaid);
        }
        self.elems += n_elems;
        self.rows += 1;
        self.nulls.append_non_null();
        Ok(())
    }

    /// Whether a row of `row_dt` is a structured dtype other than the column's, whose elements
    /// are laid out field by field as the column's.
    pub(crate) fn relaid(&self, row_dt: &NumpyDtype) -> bool {
        matches!(row_dt, NumpyDtype::Struct(_)) && row_dt != &self.dt
    }

    /// A row's elements copied into the values buffer, in the column's layout.
    fn push_bytes(&mut self, row_dt: &NumpyDtype, data: &[u8], n_elems: usize, relaid: bool) {
        self.unborrow();
        let bytes = n_elems * self.item;
        self.grow(bytes);
        let row_item = row_dt.itemsize();
        if relaid {
            extend_as(row_dt, &self.dt, data, n_elems, &mut self.buf);
        } else if row_item == self.item {
            extend_native(row_dt, data, &mut self.buf);
        } else {
            // a narrower row of strings (text columns take theirs as text): NUL-padded
            for i in 0..n_elems {
                extend_native(
                    row_dt,
                    &data[i * row_item..(i + 1) * row_item],
                    &mut self.buf,
                );
                self.buf.extend_zeros(self.item - row_item);
            }
        }
    }

    /// Take the first row of a batch as a slice of the input, where its bytes are already what
    /// the column's values buffer holds (same width, native order, aligned).
    fn borrow(&mut self, row_dt: &NumpyDtype, data: &[u8]) -> bool {
        let Some(input) = &self.ctx.input else {
            return false;
        };
        if data.len() < BORROW_MIN_BYTES
            || row_dt.itemsize() != self.item
            || row_dt.swap_width() != 0
            || !self.buf.is_empty()
        {
            return false;
        }
        self.borrowed = crate::read::source::slice_of(input, data, elem_align(row_dt));
        self.borrowed.is_some()
    }

    /// A second row: the first one, borrowed, is copied into the values buffer after all.
    fn unborrow(&mut self) {
        if let Some(b) = self.borrowed.take() {
            self.grow(b.len());
            self.buf.extend_from_slice(b.as_slice());
        }
    }

    /// Room for `bytes` more: geometric growth (fixed-shape columns were reserved at their final
    /// size, except a batch of one big row), a first allocation as `reserve` makes it.
    fn grow(&mut self, bytes: usize) {
        if self.buf.capacity() - self.buf.len() >= bytes {
            return;
        }
        let want = (self.buf.len() + bytes).max(self.buf.capacity() * 2);
        if self.buf.capacity() == 0 {
            self.buf = crate::types::buffers::output_buffer(want);
            crate::types::buffers::advise_huge_pages(&mut self.buf);
        } else {
            self.buf.reserve(want - self.buf.len());
        }
    }
}

/// The smallest row worth a slice of the input rather than a copy. Below it, a batch of one row
/// is rare (a row ends its batch from [`crate::read::row_walk::row_alone_bytes`] on) and a copy
/// costs little.
const BORROW_MIN_BYTES: usize = 64 << 10;

impl ArrayDecoder for TensorDecoder {
    #[inline]
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        let rest = &c.buf()[c.pos()..];
        let at = |f: &Option<FastPath>| {
            f.as_ref().is_some_and(|f| {
                let h = f.header.len();
                rest.len() >= h + f.data_len && rest[..h] == f.header[..]
            })
        };
        // (the header before `fast` matching: the two swap, the last one used first)
        let hit = at(&self.fast)
            || (at(&self.fast2) && {
                std::mem::swap(&mut self.fast, &mut self.fast2);
                true
            });
        if let Some(f) = self.fast.as_ref().filter(|_| hit) {
            let h = f.header.len();
            let (data, dl) = (&rest[h..h + f.data_len], f.data_len);
            let n = f.n_elems;
            if self.fixed.is_none() {
                // same header ⇒ the same shape
                self.dims.extend_from_slice(&f.shape);
            }
            let (sdt, relaid) = (f.swap_dt.clone(), f.relaid);
            self.pad(self.item, sdt.itemsize(), n)
                .map_err(|k| c.error_at(c.pos(), k))?;
            check_chars(&sdt, data, c, c.pos())?;
            if let Some(i) = crate::types::buffers::time_out_of_range(&sdt, data) {
                return Err(c.error_at(c.pos(), time_out_of_range_error(&sdt, i)));
            }
            self.push_row(&sdt, data, n, relaid)
                .map_err(|e| e.at_offset(c.offset_of(c.pos())))?;
            c.set_pos(c.pos() + h + dl);
            return Ok(());
        }
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
                return Ok(());
            }
            Kind::Map | Kind::Ext => {}
            // a plain number or bool beside numpy scalars, in a column the caller typed (an
            // override resolving `np.int64(3)` then `4`): converted exactly, as a scalar row
            // (or one a read of every row unified with them: `NumpyDtype::takes_plain`)
            k @ (Kind::Int | Kind::F32 | Kind::F64 | Kind::Bool)
                if self.shape.is_empty() && (self.ctx.convert || self.dt.takes_plain(k)) =>
            {
                let p = c.pos();
                let n = match c.peek_kind()? {
                    Kind::Int => match c.read_int()? {
                        crate::wire::cursor::Int::I(v) => Num::I(v),
                        crate::wire::cursor::Int::U(v) => Num::U(v),
                    },
                    Kind::F32 => Num::F(c.read_f32()? as f64),
                    Kind::F64 => Num::F(c.read_f64()?),
                    _ => Num::I(c.read_bool()? as i64),
                };
                self.unborrow();
                let start = self.buf.len();
                if !put_num(&self.native_dt, n, &mut self.buf) {
                    self.buf.truncate(start);
                    return Err(c.error_at(
                        p,
                        ErrorKind::Inexact(format!(
                            "value does not fit {} exactly",
                            self.dt.to_dtype_str()
                        )),
                    ));
                }
                self.elems += 1;
                self.rows += 1;
                self.nulls.append_non_null();
                return Ok(());
            }
            _ => return Err(found(c, &format!("ndarray of {}", self.dt.to_dtype_str()))),
        }
        let start = c.pos();
        let special = probe(c, self.ctx.dialect, self.ctx.npy_ext, self.ctx.max_depth)?;
        let python = matches!(special, Some(Special::Complex(..)));
        if special.is_some() && python != self.python_complex && !self.ctx.convert {
            let (this, column) = if python {
                (
                    "a Python complex",
                    format!("numpy {}", self.dt.to_dtype_str()),
                )
            } else {
                ("a numpy ndarray or scalar", "Python complex".to_string())
            };
            return Err(c.error_at(
                start,
                ErrorKind::NotItsType(format!("{this} in a column of {column}")),
            ));
        }
        match special {
            Some(Special::Array(nd)) => {
                let row_dt = self.row_dtype(&nd, c)?;
                nd.check_len(&row_dt, c.offset_of(0))?;
                if let Some(i) = crate::types::buffers::time_out_of_range(&row_dt, &nd.data) {
                    return Err(c.error_at(start, time_out_of_range_error(&row_dt, i)));
                }
                let unbacked = nd.unbacked_entries(&row_dt);
                let bytes = 2 * (c.pos() - start) as i128;
                self.unbacked = self
                    .unbacked
                    .saturating_add(i128::try_from(unbacked).unwrap_or(i128::MAX))
                    .saturating_sub(bytes);
                if self.unbacked > MAX_EMPTY_ENTRIES as i128 {
                    return Err(c.error_at(start, too_many_unbacked()));
                }
                if nd.shape.len() != self.shape.len() {
                    return Err(c.error_at(
                        start,
                        ErrorKind::TypeConflict(format!(
                            "ndarray of shape {:?} in a column of {}-dimensional arrays",
                            nd.shape,
                            self.shape.len()
                        )),
                    ));
                }
                match &self.fixed {
                    Some(f) if *f != nd.shape => {
                        return Err(c.error_at(
                            start,
                            ErrorKind::NotItsType(format!(
                                "ndarray of shape {:?} in a column of fixed shape {:?}",
                                nd.shape, f
                            )),
                        ))
                    }
                    Some(_) => {}
                    None => self.dims.extend_from_slice(&nd.shape),
                }
                if row_dt.text_width().is_none()
                    && native(&row_dt) != self.native_dt
                    && self.dt.widest_struct(&row_dt).is_none()
                {
                    return self
                        .push_converted(&row_dt, &nd.data, nd.len)
                        .map_err(|i| c.error_at(start, inexact_element(i, &row_dt, &self.dt)));
                }
                check_chars(&row_dt, &nd.data, c, start)?;
                self.pad(self.item, row_dt.itemsize(), nd.len)
                    .map_err(|k| c.error_at(start, k))?;
                let relaid = self.relaid(&row_dt);
                self.push_row(&row_dt, &nd.data, nd.len, relaid)
                    .map_err(|e| e.at_offset(c.offset_of(start)))?;
                let end = c.pos();
                // the fast path is valid when data is the map's last entry, as msgpack_numpy writes
                // it (not for rows of entries no data backs: each is counted, above)
                if nd.in_place() && nd.data_pos + nd.data.len() == end && unbacked == 0 {
                    self.fast2 = self.fast.take();
                    self.fast = Some(FastPath {
                        header: c.buf()[start..nd.data_pos].to_vec(),
                        data_len: nd.data.len(),
                        n_elems: nd.len,
                        swap_dt: Arc::new(row_dt),
                        relaid,
                        shape: nd.shape.clone(),
                    });
                }
                Ok(())
            }
            Some(Special::Complex(re, im))
                if self.shape.is_empty() && matches!(self.dt, NumpyDtype::Complex { .. }) =>
            {
                if let NumpyDtype::Complex { size: 8, .. } = self.dt {
                    let mut b = [0u8; 8];
                    b[..4].copy_from_slice(&(re as f32).to_ne_bytes());
                    b[4..].copy_from_slice(&(im as f32).to_ne_bytes());
                    let nd = self.native_dt.clone();
                    self.push_row(&nd, &b, 1, false)?;
                } else {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&re.to_ne_bytes());
                    b[8..].copy_from_slice(&im.to_ne_bytes());
                    let nd = self.native_dt.clone();
                    self.push_row(&nd, &b, 1, false)?;
                }
                Ok(())
            }
            _ => {
                c.set_pos(start);
                Err(found(c, &format!("ndarray of {}", self.dt.to_dtype_str())))
            }
        }
    }

    fn append_null(&mut self) {
        self.unborrow();
        match &self.fixed {
            Some(f) => {
                // from the shape: the bytes say nothing for U0/S0 elements
                let n = f.iter().product::<usize>();
                match &mut self.text {
                    Some(t) => t.push_empty(n),
                    None => self.buf.extend_zeros(self.row_bytes),
                }
                self.elems += n;
            }
            None => self.dims.extend(std::iter::repeat_n(0, self.shape.len())),
        }
        self.rows += 1;
        self.nulls.append_null();
    }

    fn reserve(&mut self, rows: usize) {
        // a batch of one big array: probably a slice of the input (`borrow`)
        let alone = rows == 1 && self.row_bytes >= BORROW_MIN_BYTES && self.ctx.input.is_some();
        // (text is appended to builders: the widest row's width says nothing of their size)
        if self.fixed.is_some() && !alone && self.text.is_none() {
            let want = rows.saturating_mul(self.row_bytes);
            // cap what we trust up front: the rest grows as bytes really arrive
            if self.buf.capacity() == 0 {
                self.buf = crate::types::buffers::output_buffer(want.min(1 << 31));
                crate::types::buffers::advise_huge_pages(&mut self.buf);
            } else {
                self.buf.reserve(want.min(1 << 31));
            }
        }
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        (self.unbacked, self.padding) = (0, 0);
        let rows = std::mem::take(&mut self.rows);
        let elems = std::mem::take(&mut self.elems);
        let buf: Buffer = match self.borrowed.take() {
            Some(b) => b,
            None => std::mem::replace(&mut self.buf, MutableBuffer::new(0)).into(),
        };
        let nulls = self.nulls.finish();
        let dims = std::mem::take(&mut self.dims);
        let t = self.field.data_type().clone();
        if let Some(t) = &mut self.text {
            if self.shape.is_empty() {
                return Ok(t.finish(nulls));
            }
        } else if self.shape.is_empty() {
            return to_arrow(&self.native_dt, buf, elems, true, nulls);
        }
        let values = match &mut self.text {
            Some(t) => t.finish(None),
            None => to_arrow(&self.native_dt, buf, elems, true, None)?,
        };
        match (self.repr, &self.fixed) {
            (Repr::Nested, Some(_)) => nest_fixed(&t, values, nulls, rows),
            // one FixedSizeList level; nest_fixed keeps the row count of a size-0 one (shape (2, 0))
            (Repr::FixedTensor, Some(_)) => match &t {
                DataType::FixedSizeList(..) => nest_fixed(&t, values, nulls, rows),
                _ => Err(Error::new(ErrorKind::Layout(format!(
                    "fixed_shape_tensor storage must be a FixedSizeList, not {t}"
                )))),
            },
            (Repr::Nested, None) => {
                let ndim = self.shape.len();
                let offsets = ragged_offsets(&dims, ndim, rows)?;
                nest_ragged(&t, values, offsets, nulls)
            }
            (Repr::VarTensor, _) => {
                let ndim = self.shape.len();
                let DataType::Struct(fields) = &t else {
                    unreachable!("checked in new")
                };
                let mut off = Vec::with_capacity(rows + 1);
                off.push(0i32);
                let mut acc = 0i64;
                for r in 0..rows {
                    acc += dims[r * ndim..(r + 1) * ndim].iter().product::<usize>() as i64;
                    off.push(i32::try_from(acc).map_err(|_| {
                        Error::new(ErrorKind::Layout(
                            "more than 2^31 tensor elements in one batch; use a smaller batch size"
                                .into(),
                        ))
                    })?);
                }
                let DataType::List(item) = fields[0].data_type() else {
                    unreachable!()
                };
                let data =
                    ListArray::try_new(item.clone(), OffsetBuffer::new(off.into()), values, None)?;
                let shape_vals: Vec<i32> = dims.iter().map(|&d| d as i32).collect();
                let DataType::FixedSizeList(sf, _) = fields[1].data_type() else {
                    unreachable!()
                };
                let shape = FixedSizeListArray::try_new(
                    sf.clone(),
                    ndim as i32,
                    Arc::new(Int32Array::from(shape_vals)),
                    None,
                )?;
                Ok(Arc::new(StructArray::try_new(
                    fields.clone(),
                    vec![Arc::new(data), Arc::new(shape)],
                    nulls,
                )?))
            }
            (Repr::FixedTensor, None) => Err(Error::new(ErrorKind::Layout(
                "ragged ndarrays cannot be stored as fixed_shape_tensor".into(),
            ))),
        }
    }
}

/// A `U` payload's code units are Unicode code points (not surrogates, not past 0x10FFFF), checked
/// as the row is read so the error names its row and byte (`at`: where the ndarray starts).
fn check_chars(dt: &NumpyDtype, data: &[u8], c: &Cursor<'_>, at: usize) -> Result<()> {
    let NumpyDtype::Unicode { order, .. } = dt else {
        return Ok(());
    };
    let swap = order.needs_swap();
    for (k, u) in data.chunks_exact(4).enumerate() {
        let mut v = u32::from_ne_bytes([u[0], u[1], u[2], u[3]]);
        if swap {
            v = v.swap_bytes();
        }
        if char::from_u32(v).is_none() {
            return Err(c.error_at(
                at,
                ErrorKind::InvalidNdarray(format!(
                    "{} character {k} is {v:#x}, not a Unicode code point",
                    dt.to_dtype_str()
                )),
            ));
        }
    }
    Ok(())
}

/// The error for a batch whose ndarrays describe more than [`MAX_EMPTY_ENTRIES`] entries no data
/// byte backs.
pub(crate) fn too_many_unbacked() -> ErrorKind {
    ErrorKind::InvalidNdarray(format!(
        "the ndarrays of this column describe more than {MAX_EMPTY_ENTRIES} empty (sub-)array \
         entries beyond two per byte of them (axes of length 0 under long ones): refused, as a \
         few bytes would make gigabytes of offsets"
    ))
}

/// The error for element `i` of an ndarray of `dt` that its Arrow unit cannot hold.
pub(crate) fn time_out_of_range_error(dt: &NumpyDtype, i: usize) -> ErrorKind {
    ErrorKind::InvalidNdarray(format!(
        "element {i} of this {} ndarray is out of range once converted to an Arrow unit",
        dt.to_dtype_str()
    ))
}
