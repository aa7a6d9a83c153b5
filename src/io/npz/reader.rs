//! Reading `.npz`: every `.npy` member becomes a column (1-d: primitive, n-d: nested
//! FixedSizeList), C or Fortran order, stored or deflated.

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::io::compress::io_error;
use crate::io::npz::header::read_npy_header;
use crate::io::BatchIter;
use crate::options::TensorMode;
use crate::types::arrow::record_batch;
use crate::types::nest::nest_fixed;
use crate::types::{fixed_size_list, meta, NpTimeUnit, NumpyDtype};
use arrow_array::types::{Date32Type, DurationMicrosecondType};
use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, FixedSizeBinaryArray, FixedSizeListArray,
    PrimitiveArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use zip::{CompressionMethod, ZipArchive};

/// Open an `.npz` file: one column per `.npy` member, batches of 65536 rows.
pub fn read_npz(path: &Path) -> Result<(SchemaRef, BatchIter)> {
    read_npz_with(path, None, 65536, TensorMode::Array)
}

/// [`read_npz`] keeping only `columns` (in that order), with `batch_size` rows per batch and
/// tensors as nested FixedSizeList ([`TensorMode::Array`]) or `arrow.fixed_shape_tensor`.
pub fn read_npz_with(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    tensor: TensorMode,
) -> Result<(SchemaRef, BatchIter)> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let file_len = file.metadata().map_err(|e| io_error(path, e))?.len();
    let mut zip = ZipArchive::new(BufReader::new(file)).map_err(|e| zip_error(path, e))?;
    let mut members: Vec<(String, usize)> = Vec::new();
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| zip_error(path, e))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_string();
        match name.strip_suffix(".npy") {
            Some(key) => members.push((key.to_string(), i)),
            None => {
                return Err(io_error(
                    path,
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("npz member {name:?} is not a .npy array"),
                    ),
                ))
            }
        }
    }
    let chosen: Vec<(String, usize)> = match columns {
        None => members,
        Some(cols) => {
            let mut out = Vec::with_capacity(cols.len());
            for c in cols {
                let m = members.iter().find(|(k, _)| k == c).ok_or_else(|| {
                    let names: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
                    Error::new(ErrorKind::Key(format!(
                        "column {c:?} not found; the input has: {}",
                        names.join(", ")
                    )))
                })?;
                if out.iter().any(|(k, _): &(String, usize)| k == c) {
                    return Err(Error::new(ErrorKind::Key(format!(
                        "column {c:?} is listed twice"
                    ))));
                }
                out.push(m.clone());
            }
            out
        }
    };

    let mut fields = Vec::with_capacity(chosen.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(chosen.len());
    let mut rows: Option<(usize, String)> = None;
    for (key, index) in &chosen {
        let mut entry = zip.by_index(*index).map_err(|e| zip_error(path, e))?;
        // Bound what a member may make us allocate by what its bytes can hold: stored data is in
        // the file; deflate expands at most ~1032:1.
        let limit = match entry.compression() {
            CompressionMethod::Stored => entry.compressed_size().min(file_len),
            _ => entry
                .compressed_size()
                .min(file_len)
                .saturating_mul(1032)
                .saturating_add(1024),
        }
        .min(entry.size());
        let (field, array) =
            read_member(&mut entry, key, limit, tensor).map_err(|e| e.prepend_path(key))?;
        let n = array.len();
        match &rows {
            None => rows = Some((n, key.clone())),
            Some((m, first)) if *m != n => {
                return Err(Error::new(ErrorKind::Layout(format!(
                    "npz arrays differ in length along axis 0: {first:?} has {m}, {key:?} has {n}"
                ))))
            }
            _ => {}
        }
        fields.push(field);
        arrays.push(array);
    }
    let schema = Arc::new(Schema::new(fields).with_metadata(HashMap::from([(
        meta::LAYOUT.to_string(),
        "columns".to_string(),
    )])));
    let rows = rows.map(|(n, _)| n).unwrap_or(0);
    let batch_size = batch_size.max(1);
    let out = schema.clone();
    let batches = (0..rows).step_by(batch_size).map(move |start| {
        let len = batch_size.min(rows - start);
        let cols = arrays.iter().map(|a| a.slice(start, len)).collect();
        record_batch(&out, cols, len)
    });
    Ok((schema, Box::new(batches)))
}

/// One `.npy` member → its field and column.
pub(crate) fn read_member(
    r: &mut impl Read,
    key: &str,
    limit: u64,
    tensor: TensorMode,
) -> Result<(Field, ArrayRef)> {
    let h = read_npy_header(r)?;
    if matches!(h.dtype, NumpyDtype::Object) {
        return Err(Error::new(ErrorKind::ObjectArray));
    }
    let Some((&rows, tail)) = h.shape.split_first() else {
        return Err(Error::new(ErrorKind::Layout(
            "a 0-d array (a scalar) has no axis 0 to make rows of".into(),
        )));
    };
    let count = h.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let nbytes = count.and_then(|c| c.checked_mul(h.dtype.itemsize()));
    let (Some(count), Some(nbytes)) = (count, nbytes) else {
        return Err(Error::new(ErrorKind::InvalidNdarray(format!(
            "shape {:?} is too large",
            h.shape
        ))));
    };
    // an axis of length 0 under others (a (5, 0) array has 5 rows): entries no data byte backs,
    // bounded as the msgpack reader bounds them
    if count == 0 {
        let unbacked = h
            .shape
            .iter()
            .take_while(|&&d| d > 0)
            .try_fold(1usize, |a, &d| a.checked_mul(d));
        if unbacked.is_none_or(|n| n as u128 > crate::wire::ndarray::MAX_EMPTY_ENTRIES) {
            return Err(Error::new(crate::read::array::too_many_unbacked()));
        }
    }
    let have = limit.saturating_sub(h.header_len as u64);
    if nbytes as u64 > have {
        return Err(Error::new(ErrorKind::Truncated {
            need: nbytes as u64,
            have,
        }));
    }
    let mut buf = MutableBuffer::from_len_zeroed(nbytes);
    r.read_exact(buf.as_slice_mut()).map_err(|_| {
        Error::new(ErrorKind::Truncated {
            need: nbytes as u64,
            have,
        })
    })?;
    let itemsize = h.dtype.itemsize();
    if h.fortran_order && h.shape.len() > 1 {
        buf = fortran_to_c(buf.as_slice(), &h.shape, itemsize);
    }
    let w = h.dtype.swap_width();
    if w > 1 {
        buf.as_slice_mut()
            .chunks_exact_mut(w)
            .for_each(|u| u.reverse());
    }
    let mut leaf = leaf_array(&h.dtype, buf.into(), count)?;
    // Each member is one ndarray, as a `columns`-layout msgpack value is: the same metadata lets
    // the msgpack writer reproduce it exactly.
    let mut md = HashMap::from([
        (meta::DTYPE.to_string(), h.dtype.to_dtype_str()),
        (meta::KIND.to_string(), "ndarray".to_string()),
    ]);
    if !tail.is_empty() {
        // as the reader's tensor_type: canonical tensors of fixed-width numbers only
        let numeric = leaf.data_type().is_numeric();
        match tensor {
            TensorMode::Extension if numeric => {
                let n = tail.iter().product();
                let t = fixed_size_list(leaf.data_type().clone(), n)?;
                leaf = nest_fixed(&t, leaf, None, rows)?;
                md.insert(
                    meta::EXTENSION_NAME.into(),
                    "arrow.fixed_shape_tensor".into(),
                );
                md.insert(
                    meta::EXTENSION_METADATA.into(),
                    serde_json::json!({ "shape": tail }).to_string(),
                );
            }
            _ => {
                // (nest_fixed keeps the row count where an axis is 0: its lists hold no values)
                let t = tail
                    .iter()
                    .rev()
                    .try_fold(leaf.data_type().clone(), |t, &d| fixed_size_list(t, d))?;
                leaf = nest_fixed(&t, leaf, None, rows)?;
            }
        }
    }
    debug_assert_eq!(leaf.len(), rows);
    let field = Field::new(key, leaf.data_type().clone(), true).with_metadata(md);
    Ok((field, leaf))
}

/// Reorder a Fortran-order array's elements into C order.
pub(crate) fn fortran_to_c(src: &[u8], shape: &[usize], itemsize: usize) -> MutableBuffer {
    let mut out = MutableBuffer::from_len_zeroed(src.len());
    let ndim = shape.len();
    let mut fstride = vec![1usize; ndim];
    for j in 1..ndim {
        fstride[j] = fstride[j - 1] * shape[j - 1];
    }
    let mut idx = vec![0usize; ndim];
    let dst = out.as_slice_mut();
    for c in 0..src.len() / itemsize.max(1) {
        let f: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum();
        dst[c * itemsize..(c + 1) * itemsize]
            .copy_from_slice(&src[f * itemsize..(f + 1) * itemsize]);
        for j in (0..ndim).rev() {
            idx[j] += 1;
            if idx[j] < shape[j] {
                break;
            }
            idx[j] = 0;
        }
    }
    out
}

/// The Arrow array of `count` elements of `dt` held (native order) in `buf`.
pub(crate) fn leaf_array(dt: &NumpyDtype, buf: Buffer, count: usize) -> Result<ArrayRef> {
    let bytes = buf.as_slice();
    Ok(match dt {
        NumpyDtype::Bool => Arc::new(BooleanArray::new(
            crate::types::buffers::bool_bits(&bytes[..count]),
            None,
        )),
        NumpyDtype::Int { .. } | NumpyDtype::Float { .. } => make_array(
            ArrayData::builder(dt.arrow_type()?)
                .len(count)
                .add_buffer(buf)
                .build()?,
        ),
        NumpyDtype::Complex { size, .. } => {
            let part = if *size == 8 {
                DataType::Float32
            } else {
                DataType::Float64
            };
            let floats = make_array(
                ArrayData::builder(part)
                    .len(count * 2)
                    .add_buffer(buf)
                    .build()?,
            );
            let DataType::FixedSizeList(item, 2) = dt.arrow_type()? else {
                unreachable!("complex is FixedSizeList(_, 2)")
            };
            Arc::new(FixedSizeListArray::try_new(item, 2, floats, None)?)
        }
        // (the bytes are in native order here)
        NumpyDtype::Unicode { .. } | NumpyDtype::Bytes { .. } => {
            crate::types::buffers::to_arrow(dt, buf, count, true, None)?
        }
        NumpyDtype::Void { len } => {
            let w = i32::try_from(*len)
                .map_err(|_| Error::new(ErrorKind::UnsupportedDtype(dt.to_dtype_str())))?;
            Arc::new(FixedSizeBinaryArray::try_new(w, buf, None)?)
        }
        NumpyDtype::Datetime { unit, .. } | NumpyDtype::Timedelta { unit, .. } => {
            let target = dt.arrow_type()?;
            let raw: &[i64] = buf.typed_data::<i64>();
            let nulls = NullBuffer::new(BooleanBuffer::collect_bool(raw.len(), |i| {
                raw[i] != i64::MIN
            }));
            let nulls = (nulls.null_count() > 0).then_some(nulls);
            let overflow = |v: i64| {
                Error::new(ErrorKind::InvalidNdarray(format!(
                    "{} value {v} does not fit Arrow's {target}",
                    dt.to_dtype_str()
                )))
            };
            if target == DataType::Date32 {
                let mul = if *unit == NpTimeUnit::Week { 7 } else { 1 };
                let days = raw
                    .iter()
                    .map(|&v| {
                        if v == i64::MIN {
                            return Ok(0);
                        }
                        v.checked_mul(mul)
                            .and_then(|d| i32::try_from(d).ok())
                            .ok_or_else(|| overflow(v))
                    })
                    .collect::<Result<Vec<i32>>>()?;
                Arc::new(PrimitiveArray::<Date32Type>::new(days.into(), nulls))
            } else {
                let factor = unit.to_arrow().map(|(_, f)| f).unwrap_or(1);
                let vals = raw
                    .iter()
                    .map(|&v| {
                        if v == i64::MIN {
                            Ok(0)
                        } else {
                            v.checked_mul(factor).ok_or_else(|| overflow(v))
                        }
                    })
                    .collect::<Result<Vec<i64>>>()?;
                // Any i64 temporal type shares this layout; set the real type on the data.
                let arr = PrimitiveArray::<DurationMicrosecondType>::new(vals.into(), nulls);
                make_array(arr.into_data().into_builder().data_type(target).build()?)
            }
        }
        other => {
            return Err(Error::new(ErrorKind::UnsupportedDtype(
                other.to_dtype_str(),
            )))
        }
    })
}
