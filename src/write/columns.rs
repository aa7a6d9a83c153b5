//! Whole-column encoders: one ndarray (or list of them) per column, for the `columns` layout
//! and the `values` layout with an ndarray container.

use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, TimeUnit};

use crate::error::Result;
use crate::types::{meta, NumpyDtype};
use crate::wire::write::{self as wire, Out};
use crate::write::access::{is_binary, is_string, is_utc};
use crate::write::encoder::tensor::TensorEnc;
use crate::write::encoder::{field_meta, make_encoder, meta_dims, ColumnEncoder};
use crate::write::ndarray::{NdHead, NdProbe};
use crate::write::tensor::{resolve_tensor, NdType, Tensor};

// Whole-column encoders (columns layout, values layout with an ndarray container)

/// A whole column (all batches) as ONE ndarray of shape `(N, *s)`.
pub(crate) struct ColumnNd {
    pub(crate) nd: NdType,
    pub(crate) parts: Vec<Tensor>,
    pub(crate) shape: Vec<usize>,
}

impl ColumnNd {
    /// `None` when the column is not one ndarray: null rows, rows of different shapes, or neither
    /// `ndarray` metadata nor (when `plain_nd`) a numeric/bool/temporal/tensor type. `plain_nd` is
    /// false for a table the reader made from a `columns` file: there a column without metadata
    /// was a msgpack list, and stays one.
    pub(crate) fn try_new(
        field: &Field,
        arrays: &[ArrayRef],
        plain_nd: bool,
    ) -> Result<Option<Self>> {
        use DataType as T;
        let (kind, dtype) = field_meta(field);
        let explicit = match kind {
            Some("ndarray") => true,
            None if plain_nd => false,
            _ => return Ok(None),
        };
        let t = field.data_type();
        if !explicit {
            let mut leaf = t;
            while let T::FixedSizeList(f, _) = leaf {
                leaf = f.data_type();
            }
            let ok = match leaf {
                T::Boolean
                | T::Int8
                | T::Int16
                | T::Int32
                | T::Int64
                | T::UInt8
                | T::UInt16
                | T::UInt32
                | T::UInt64
                | T::Float16
                | T::Float32
                | T::Float64
                | T::Date32
                | T::Date64
                | T::Duration(_) => true,
                T::Timestamp(u, tz) => {
                    !(matches!(u, TimeUnit::Nanosecond) && tz.as_deref().is_some_and(is_utc))
                }
                // Strings and bytes only inside a FixedSizeList (a plain str column stays a list),
                // or with no rows: an empty list would read back as a Null column
                t2 if is_string(t2) || is_binary(t2) => {
                    leaf != t || arrays.iter().all(|a| a.is_empty())
                }
                _ => false,
            };
            if !ok {
                return Ok(None);
            }
        }
        if arrays
            .iter()
            .any(|a| matches!(a.data_type(), T::Dictionary(..)))
        {
            return Ok(None);
        }
        let (dt, parts) = match resolve_tensor(arrays, dtype.as_ref(), explicit, explicit) {
            Ok((dt, parts)) => {
                let dims = meta_dims(field);
                (
                    dt,
                    parts
                        .into_iter()
                        .map(|p| p.with_dims(&dims))
                        .collect::<Vec<_>>(),
                )
            }
            Err(_) => return Ok(None),
        };
        let temporal = matches!(
            dt,
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. }
        );
        let mut inner: Option<Vec<usize>> = None;
        let mut n = 0usize;
        let mut s = Vec::new();
        for p in &parts {
            // Null rows have no ndarray form, except a flat datetime column: nulls are NaT.
            if p.nulls.as_ref().is_some_and(|nb| nb.null_count() > 0)
                && !(temporal && p.levels.is_empty())
            {
                return Ok(None);
            }
            // nulls among the elements: the per-row encoders report them
            if p.elem_nulls.is_some() {
                return Ok(None);
            }
            n += p.len;
            if let Some(fs) = p.fixed_shape() {
                if inner.get_or_insert_with(|| fs.clone()) != &fs {
                    return Ok(None);
                }
                continue;
            }
            for r in 0..p.len {
                s.clear();
                if p.range(r, r + 1, &mut s).is_err()
                    || inner.get_or_insert_with(|| s.clone()) != &s
                {
                    return Ok(None);
                }
            }
        }
        let inner = match inner {
            Some(i) => i,
            // No rows: fixed axes are known, ragged ones from metadata or 0.
            None => parts
                .first()
                .map(|p| (0..p.levels.len()).map(|k| p.dim_or_zero(k)).collect())
                .unwrap_or_default(),
        };
        let mut shape = vec![n];
        shape.extend(inner);
        Ok(Some(ColumnNd {
            nd: NdType::of(&dt),
            parts,
            shape,
        }))
    }

    pub(crate) fn head(&self) -> NdHead<'_> {
        let elems: usize = self.shape.iter().product();
        NdHead {
            ty: &self.nd.ty,
            kind: self.nd.kind,
            shape: &self.shape,
            data_len: elems * self.nd.itemsize,
        }
    }
}

/// About how many bytes of a whole column (an ndarray's payload, a list's values) are encoded
/// between two calls of `flush`.
const PAYLOAD_STEP: usize = 4 << 20;

impl ColumnEncoder for ColumnNd {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        self.encode_flushing(row, out, &mut |_| Ok(()))
    }
    fn encode_flushing(
        &mut self,
        _row: usize,
        out: &mut Out,
        flush: &mut dyn FnMut(&mut Out) -> Result<()>,
    ) -> Result<()> {
        let head = self.head();
        head.write(out)?;
        let step = (PAYLOAD_STEP / self.nd.itemsize.max(1)).max(1);
        let mut s = Vec::new();
        let mut row0 = 0u64;
        for p in &self.parts {
            s.clear();
            let (a, b) = p.range(0, p.len, &mut s)?;
            let mut x = a;
            while x < b {
                let y = (x + step).min(b);
                p.elems.put(x, y, out).map_err(|e| e.at_record(row0))?;
                flush(out)?;
                x = y;
            }
            row0 += p.len as u64;
        }
        head.write_tail(out);
        Ok(())
    }
    fn nd_probe(&mut self, _row: usize) -> Result<Option<NdProbe>> {
        self.head().probe().map(Some)
    }
    fn may_nd(&self) -> bool {
        true
    }
    fn size_hint(&self) -> usize {
        self.head().data_len + 64
    }
}

/// A whole column (all batches) as one msgpack array of per-row encodings.
pub(crate) struct ColumnList {
    pub(crate) parts: Vec<(Box<dyn ColumnEncoder>, usize)>,
}

impl ColumnList {
    pub(crate) fn new(field: &Field, arrays: &[ArrayRef]) -> Result<Self> {
        let parts = arrays
            .iter()
            .map(|a| Ok((make_encoder(field, a)?, a.len())))
            .collect::<Result<_>>()?;
        Ok(ColumnList { parts })
    }
}

impl ColumnEncoder for ColumnList {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        self.encode_flushing(row, out, &mut |_| Ok(()))
    }
    fn encode_flushing(
        &mut self,
        _row: usize,
        out: &mut Out,
        flush: &mut dyn FnMut(&mut Out) -> Result<()>,
    ) -> Result<()> {
        let n: usize = self.parts.iter().map(|p| p.1).sum();
        wire::array_hdr(&mut out.buf, n);
        let mut row0 = 0u64;
        for (enc, len) in &mut self.parts {
            for r in 0..*len {
                enc.encode(r, out)
                    .map_err(|e| e.at_record(row0 + r as u64))?;
                if out.buf.len() >= PAYLOAD_STEP {
                    flush(out)?;
                }
            }
            row0 += *len as u64;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.parts.iter().any(|p| p.0.may_nd())
    }
    fn size_hint(&self) -> usize {
        self.parts.iter().map(|p| p.0.size_hint()).sum::<usize>() + 5
    }
}

/// Whether every non-null row of a List column can be written as an ndarray (rectangular, no
/// null elements, a numpy dtype for its leaf).
pub(crate) fn rows_are_ndarrays(arr: &ArrayRef) -> bool {
    TensorEnc::new(arr, None, true, false, &[]).is_ok_and(|t| t.t.rows_are_ndarrays())
}

/// Whether the non-null rows of List columns (one array per batch) have more than one shape: where
/// they all have one, ndarrays would read back as a fixed-shape Array, not the List they are.
pub(crate) fn row_shapes_vary(arrs: &[ArrayRef]) -> bool {
    let mut first = None;
    arrs.iter().any(|a| {
        TensorEnc::new(a, None, true, false, &[]).is_ok_and(|t| t.t.shapes_vary(&mut first))
    })
}

/// The whole-column encoder for a `columns` map value: one ndarray when possible, else a list.
pub(crate) fn column_encoder(
    field: &Field,
    arrays: &[ArrayRef],
    plain_nd: bool,
) -> Result<Box<dyn ColumnEncoder>> {
    // a list in the file read (of ndarrays, say): a list again, one value per row
    if field.metadata().get(meta::COLUMN).map(String::as_str) == Some("list") {
        return Ok(Box::new(ColumnList::new(field, arrays)?));
    }
    Ok(match ColumnNd::try_new(field, arrays, plain_nd)? {
        Some(nd) => Box::new(nd),
        None => Box::new(ColumnList::new(field, arrays)?),
    })
}
