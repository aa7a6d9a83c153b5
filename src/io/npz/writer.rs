//! Writing `.npz`: each column spooled to a temporary file as one `(N, *s)` array, zipped at
//! [`NpzWriter::finish`] when N is known.

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::io::compress::io_error;
use crate::io::npz::header::npy_header;
use crate::types::{meta, ByteOrder, NpTimeUnit, NumpyDtype};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Date64Type, Int64Type};
use arrow_array::{Array, ArrayRef, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef, TimeUnit};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// How one column's leaf values become numpy bytes.
#[derive(Debug, Clone)]
pub(crate) enum Leaf {
    /// Arrow bit-packed booleans → one byte each.
    Bool,
    /// Fixed-width numbers copied as bytes (byte-swapped when `swap`).
    Fixed { width: usize, swap: bool },
    /// Date32 / Timestamp / Duration / Date64 values divided by `div` (exactly) into i64.
    Time { div: i64, swap: bool },
    /// Utf8 (`U`, UTF-32) or Binary (`S`) values, NUL padded to `fixed` or to the longest.
    Var {
        unicode: bool,
        fixed: Option<usize>,
        order: ByteOrder,
    },
    /// FixedSizeBinary copied as is.
    FixedBinary,
}

#[derive(Debug)]
pub(crate) struct NpzColumn {
    pub(crate) name: String,
    /// Nested FixedSizeList levels to strip from the stored type.
    pub(crate) levels: usize,
    /// Trailing dimensions (after axis 0).
    pub(crate) shape: Vec<u64>,
    /// The numpy dtype; for variable-width strings its size is set at `finish`.
    pub(crate) dtype: NumpyDtype,
    pub(crate) leaf: Leaf,
    pub(crate) spool: Option<BufWriter<File>>,
    /// Longest value: chars (`U`) or bytes (`S`).
    pub(crate) max_len: usize,
}

/// Writes record batches as an `.npz` archive (stored, like `np.savez`).
pub struct NpzWriter<W: Write + Seek> {
    pub(crate) out: W,
    pub(crate) columns: Vec<NpzColumn>,
    pub(crate) rows: u64,
    pub(crate) spool_dir: Option<PathBuf>,
}

impl<W: Write + Seek> std::fmt::Debug for NpzWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzWriter")
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .finish()
    }
}

pub(crate) fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', '\0'])
        || name.chars().any(|c| c.is_control());
    if bad {
        return Err(unsupported(format!(
            "column name {name:?} cannot be an npz member name (empty, '.', '..', or holding '/', '\\\\' or control characters); rename it or select other columns"
        )));
    }
    Ok(())
}

/// Whether numpy dtype `dt` describes Arrow leaf values of type `leaf` exactly.
pub(crate) fn dtype_fits(dt: &NumpyDtype, leaf: &DataType) -> bool {
    use DataType::*;
    match dt {
        NumpyDtype::Bool => *leaf == Boolean,
        NumpyDtype::Int { .. } | NumpyDtype::Float { .. } => {
            dt.arrow_type().is_ok_and(|t| t == *leaf)
        }
        NumpyDtype::Unicode { .. } => matches!(leaf, Utf8 | LargeUtf8 | Utf8View),
        NumpyDtype::Bytes { len } => {
            matches!(leaf, Binary | LargeBinary | BinaryView)
                || matches!(leaf, FixedSizeBinary(n) if *n as usize == *len)
        }
        NumpyDtype::Void { len } => matches!(leaf, FixedSizeBinary(n) if *n as usize == *len),
        NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => match (dt.arrow_type(), leaf)
        {
            (Ok(Timestamp(a, _)), Timestamp(b, _)) => a == *b,
            (Ok(t), l) => t == *l,
            _ => false,
        },
        _ => false,
    }
}

/// The numpy dtype numpy itself would give Arrow leaf values of this type.
pub(crate) fn natural_dtype(leaf: &DataType) -> Option<NumpyDtype> {
    use DataType::*;
    let o = native_order();
    let int = |size: u8, signed| NumpyDtype::Int {
        size,
        signed,
        order: if size == 1 {
            ByteOrder::NotApplicable
        } else {
            o
        },
    };
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => NpTimeUnit::Second,
        TimeUnit::Millisecond => NpTimeUnit::Milli,
        TimeUnit::Microsecond => NpTimeUnit::Micro,
        TimeUnit::Nanosecond => NpTimeUnit::Nano,
    };
    Some(match leaf {
        Boolean => NumpyDtype::Bool,
        Int8 => int(1, true),
        Int16 => int(2, true),
        Int32 => int(4, true),
        Int64 => int(8, true),
        UInt8 => int(1, false),
        UInt16 => int(2, false),
        UInt32 => int(4, false),
        UInt64 => int(8, false),
        Float16 => NumpyDtype::Float { size: 2, order: o },
        Float32 => NumpyDtype::Float { size: 4, order: o },
        Float64 => NumpyDtype::Float { size: 8, order: o },
        Utf8 | LargeUtf8 | Utf8View => NumpyDtype::Unicode { chars: 0, order: o },
        Binary | LargeBinary | BinaryView => NumpyDtype::Bytes { len: 0 },
        FixedSizeBinary(n) => NumpyDtype::Void {
            len: (*n).max(0) as usize,
        },
        Timestamp(u, _) => NumpyDtype::Datetime {
            unit: unit(u),
            order: o,
        },
        Date32 => NumpyDtype::Datetime {
            unit: NpTimeUnit::Day,
            order: o,
        },
        Date64 => NumpyDtype::Datetime {
            unit: NpTimeUnit::Milli,
            order: o,
        },
        Duration(u) => NumpyDtype::Timedelta {
            unit: unit(u),
            order: o,
        },
        _ => return None,
    })
}

/// Plan how a field becomes an `.npy` array.
pub(crate) fn plan_column(field: &Field) -> Result<NpzColumn> {
    let name = field.name();
    check_name(name)?;
    let md = field.metadata();
    let col_err = |m: String| unsupported(format!("column {name:?}: {m}"));
    let mut shape: Vec<u64> = Vec::new();
    let mut levels = 0;
    let mut t = field.data_type().clone();
    if md.get(meta::EXTENSION_NAME).map(String::as_str) == Some("arrow.fixed_shape_tensor") {
        let ext: serde_json::Value = md
            .get(meta::EXTENSION_METADATA)
            .and_then(|m| serde_json::from_str(m).ok())
            .ok_or_else(|| col_err("arrow.fixed_shape_tensor without valid metadata".into()))?;
        let dims: Vec<u64> = ext
            .get("shape")
            .and_then(|s| s.as_array())
            .and_then(|s| s.iter().map(|d| d.as_u64()).collect())
            .ok_or_else(|| col_err("arrow.fixed_shape_tensor metadata has no shape".into()))?;
        if let Some(p) = ext.get("permutation").and_then(|p| p.as_array()) {
            let identity = p
                .iter()
                .enumerate()
                .all(|(i, v)| v.as_u64() == Some(i as u64));
            if !identity {
                return Err(col_err(
                    "a permuted arrow.fixed_shape_tensor cannot be written to npz".into(),
                ));
            }
        }
        let DataType::FixedSizeList(item, n) = &t else {
            return Err(col_err(
                "arrow.fixed_shape_tensor storage is not a FixedSizeList".into(),
            ));
        };
        let prod = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        if prod != Some(*n as u64) {
            return Err(col_err(format!(
                "tensor shape {dims:?} does not hold {n} values"
            )));
        }
        shape = dims;
        levels = 1;
        t = item.data_type().clone();
    } else {
        while let DataType::FixedSizeList(item, n) = &t {
            shape.push((*n).max(0) as u64);
            levels += 1;
            t = item.data_type().clone();
        }
    }
    let from_meta = md
        .get(meta::DTYPE)
        .and_then(|s| NumpyDtype::from_metadata(s).ok())
        .and_then(|dt| match dt {
            NumpyDtype::Complex { size, .. } => {
                let part = if size == 8 {
                    DataType::Float32
                } else {
                    DataType::Float64
                };
                (shape.last() == Some(&2) && t == part).then_some(dt)
            }
            _ => dtype_fits(&dt, &t).then_some(dt),
        });
    let has_meta = from_meta.is_some();
    let dtype = match from_meta {
        Some(dt) => {
            if matches!(dt, NumpyDtype::Complex { .. }) {
                // the innermost axis of 2 is the (real, imag) pair of one complex element
                shape.pop();
            }
            dt
        }
        None => natural_dtype(&t).ok_or_else(|| {
            col_err(format!(
                "Arrow type {} has no numpy equivalent for npz",
                field.data_type()
            ))
        })?,
    };
    let swap = dtype.order().needs_swap();
    let leaf = match &dtype {
        NumpyDtype::Bool => Leaf::Bool,
        NumpyDtype::Int { .. } | NumpyDtype::Float { .. } | NumpyDtype::Complex { .. } => {
            Leaf::Fixed {
                width: t
                    .primitive_width()
                    .ok_or_else(|| col_err(format!("unexpected leaf type {t}")))?,
                swap,
            }
        }
        NumpyDtype::Datetime { unit, .. } | NumpyDtype::Timedelta { unit, .. } => {
            let div = match (&t, unit) {
                (DataType::Date32, NpTimeUnit::Week) => 7,
                (DataType::Date32 | DataType::Date64, _) => 1,
                (_, u) => u.to_arrow().map(|(_, f)| f).unwrap_or(1),
            };
            Leaf::Time { div, swap }
        }
        NumpyDtype::Unicode { chars, order } => Leaf::Var {
            unicode: true,
            fixed: has_meta.then_some(*chars),
            order: *order,
        },
        NumpyDtype::Bytes { len } if !matches!(t, DataType::FixedSizeBinary(_)) => Leaf::Var {
            unicode: false,
            fixed: has_meta.then_some(*len),
            order: ByteOrder::NotApplicable,
        },
        NumpyDtype::Bytes { .. } | NumpyDtype::Void { .. } => Leaf::FixedBinary,
        _ => {
            return Err(col_err(format!(
                "numpy dtype {} cannot be written",
                dtype.to_dtype_str()
            )))
        }
    };
    Ok(NpzColumn {
        name: name.clone(),
        levels,
        shape,
        dtype,
        leaf,
        spool: None,
        max_len: 0,
    })
}

impl<W: Write + Seek> NpzWriter<W> {
    /// A writer for tables of `schema`. Fails early for columns npz cannot hold (nested lists,
    /// structs, invalid member names, duplicate names).
    pub fn try_new(out: W, schema: SchemaRef) -> Result<Self> {
        let mut columns: Vec<NpzColumn> = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            // (a zip member's name is at most 65,535 bytes: the zip crate panics past it)
            if f.name().len() + ".npy".len() > u16::MAX as usize {
                return Err(unsupported(format!(
                    "column name of {} bytes is too long for an npz member name (at most {})",
                    f.name().len(),
                    u16::MAX as usize - ".npy".len()
                )));
            }
            if columns.iter().any(|c| c.name == *f.name()) {
                return Err(unsupported(format!(
                    "column name {:?} appears twice",
                    f.name()
                )));
            }
            columns.push(plan_column(f)?);
        }
        Ok(NpzWriter {
            out,
            columns,
            rows: 0,
            spool_dir: None,
        })
    }

    /// Spool column data in `dir` (default: the system temporary directory). Putting it beside the
    /// output keeps it on the output's file system.
    pub fn with_spool_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spool_dir = Some(dir.into());
        self
    }

    /// Add a batch's rows.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.columns.len() {
            return Err(Error::new(ErrorKind::Layout(format!(
                "batch has {} columns, the npz writer's schema {}",
                batch.num_columns(),
                self.columns.len()
            ))));
        }
        // an archive holds arrays, not rows: rows of no column would vanish silently
        if batch.num_columns() == 0 && batch.num_rows() > 0 {
            return Err(crate::io::rows_without_columns("npz", batch.num_rows()));
        }
        let first_row = self.rows;
        for (col, array) in self.columns.iter_mut().zip(batch.columns()) {
            if col.spool.is_none() {
                let f = match &self.spool_dir {
                    Some(d) => tempfile::tempfile_in(d).map_err(|e| io_error(d, e))?,
                    None => tempfile::tempfile()?,
                };
                col.spool = Some(BufWriter::with_capacity(64 << 10, f));
            }
            col.append(array, first_row)
                .map_err(|e| e.prepend_path(&col.name))?;
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Write the archive and return the output.
    pub fn finish(mut self) -> Result<W> {
        let mut zip = ZipWriter::new(&mut self.out);
        let rows = self.rows;
        for col in &mut self.columns {
            col.finish(&mut zip, rows)
                .map_err(|e| e.prepend_path(&col.name))?;
        }
        zip.finish()
            .map_err(|e| zip_error(Path::new("npz output"), e))?;
        Ok(self.out)
    }
}

impl NpzColumn {
    pub(crate) fn append(&mut self, array: &ArrayRef, first_row: u64) -> Result<()> {
        let null_err = |what: String| {
            Error::new(ErrorKind::Unsupported(format!(
                "{what}, and npz (numpy arrays) cannot hold nulls"
            )))
        };
        // Null datetimes and timedeltas are written as NaT, which numpy reads as missing.
        let nat = matches!(self.leaf, Leaf::Time { .. });
        if !(nat && self.levels == 0) {
            if let Some(nulls) = array.logical_nulls().filter(|n| n.null_count() > 0) {
                let i = nulls.iter().position(|v| !v).unwrap_or(0);
                return Err(null_err(format!("row {} is null", first_row + i as u64)));
            }
        }
        let mut a = array.clone();
        for level in 0..self.levels {
            a = a.as_fixed_size_list().values().clone();
            if a.logical_null_count() > 0 && !(nat && level + 1 == self.levels) {
                return Err(null_err("a tensor element is null".into()));
            }
        }
        let spool = self
            .spool
            .as_mut()
            .ok_or_else(|| unsupported("npz spool missing".into()))?;
        match &self.leaf {
            Leaf::Bool => {
                let b = a.as_boolean();
                let bytes: Vec<u8> = b.values().iter().map(u8::from).collect();
                spool.write_all(&bytes)?;
            }
            Leaf::Fixed { width, swap } => {
                let data = a.to_data();
                let buf = &data.buffers()[0];
                let bytes =
                    &buf.as_slice()[data.offset() * width..(data.offset() + data.len()) * width];
                write_swapped(spool, bytes, if *swap { *width } else { 0 })?;
            }
            Leaf::Time { div, swap } => {
                let values: Vec<i64> = match a.data_type() {
                    DataType::Date32 => a
                        .as_primitive::<Date32Type>()
                        .values()
                        .iter()
                        .map(|&v| v as i64)
                        .collect(),
                    DataType::Date64 => a.as_primitive::<Date64Type>().values().to_vec(),
                    // Timestamp and Duration are i64 of any unit: reinterpret via the Int64 layout.
                    _ => {
                        let data = a
                            .to_data()
                            .into_builder()
                            .data_type(DataType::Int64)
                            .build()?;
                        PrimitiveArray::<Int64Type>::from(data).values().to_vec()
                    }
                };
                let nulls = a.logical_nulls();
                let mut out = Vec::with_capacity(values.len() * 8);
                for (i, v) in values.into_iter().enumerate() {
                    let v = if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                        i64::MIN // NaT
                    } else if v % div != 0 || v == i64::MIN {
                        return Err(unsupported(format!(
                            "value {v} is not a whole number of the unit of {} (its {} metadata)",
                            self.dtype.to_dtype_str(),
                            meta::DTYPE
                        )));
                    } else {
                        v / div
                    };
                    out.extend_from_slice(&if *swap { v.swap_bytes() } else { v }.to_ne_bytes());
                }
                spool.write_all(&out)?;
            }
            Leaf::Var { unicode, fixed, .. } => {
                let mut put = |v: &[u8], len: usize| -> Result<()> {
                    if let Some(n) = fixed {
                        if len > *n {
                            return Err(unsupported(format!(
                                "a value of {len} {} does not fit its numpy dtype {}",
                                if *unicode { "characters" } else { "bytes" },
                                self.dtype.to_dtype_str()
                            )));
                        }
                    }
                    self.max_len = self.max_len.max(len);
                    let n = u32::try_from(v.len())
                        .map_err(|_| unsupported("a value longer than 4 GiB".into()))?;
                    spool.write_all(&n.to_le_bytes())?;
                    spool.write_all(v)?;
                    Ok(())
                };
                match a.data_type() {
                    DataType::Utf8 => a.as_string::<i32>().iter().try_for_each(|s| {
                        let s = s.unwrap_or_default();
                        put(s.as_bytes(), s.chars().count())
                    })?,
                    DataType::LargeUtf8 => a.as_string::<i64>().iter().try_for_each(|s| {
                        let s = s.unwrap_or_default();
                        put(s.as_bytes(), s.chars().count())
                    })?,
                    DataType::Utf8View => a.as_string_view().iter().try_for_each(|s| {
                        let s = s.unwrap_or_default();
                        put(s.as_bytes(), s.chars().count())
                    })?,
                    DataType::Binary => a.as_binary::<i32>().iter().try_for_each(|s| {
                        put(s.unwrap_or_default(), s.unwrap_or_default().len())
                    })?,
                    DataType::LargeBinary => a.as_binary::<i64>().iter().try_for_each(|s| {
                        put(s.unwrap_or_default(), s.unwrap_or_default().len())
                    })?,
                    DataType::BinaryView => a.as_binary_view().iter().try_for_each(|s| {
                        put(s.unwrap_or_default(), s.unwrap_or_default().len())
                    })?,
                    other => return Err(unsupported(format!("unexpected string type {other}"))),
                }
            }
            Leaf::FixedBinary => {
                let b = a.as_fixed_size_binary();
                let w = b.value_length().max(0) as usize;
                // value_data() starts at the array's first value (slicing trims it).
                spool.write_all(&b.value_data()[..b.len() * w])?;
            }
        }
        Ok(())
    }

    pub(crate) fn finish<Z: Write + Seek>(
        &mut self,
        zip: &mut ZipWriter<Z>,
        rows: u64,
    ) -> Result<()> {
        if let Leaf::Var {
            unicode,
            fixed,
            order,
        } = &self.leaf
        {
            let n = fixed.unwrap_or(self.max_len.max(1));
            self.dtype = if *unicode {
                NumpyDtype::Unicode {
                    chars: n,
                    order: *order,
                }
            } else {
                NumpyDtype::Bytes { len: n }
            };
        }
        let mut full_shape = vec![rows];
        full_shape.extend_from_slice(&self.shape);
        let count = full_shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let nbytes = count.and_then(|c| c.checked_mul(self.dtype.itemsize() as u64));
        let nbytes = nbytes.ok_or_else(|| unsupported("array too large".into()))?;
        let header = npy_header(&self.dtype.to_dtype_str(), &full_shape);
        let total = header.len() as u64 + nbytes;
        let opts = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(total >= u32::MAX as u64);
        let member = format!("{}.npy", self.name);
        zip.start_file(member.as_str(), opts)
            .map_err(|e| zip_error(Path::new(&member), e))?;
        zip.write_all(&header)?;
        let Some(spool) = self.spool.take() else {
            return Ok(()); // no rows
        };
        let mut f = spool.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(0))?;
        let mut r = BufReader::with_capacity(1 << 20, f);
        match &self.leaf {
            Leaf::Var { unicode, order, .. } => {
                let width = self.dtype.itemsize();
                let swap = order.needs_swap();
                let mut item = vec![0u8; width];
                let mut len = [0u8; 4];
                let mut value = Vec::new();
                for _ in 0..count.unwrap_or(0) {
                    r.read_exact(&mut len)?;
                    value.resize(u32::from_le_bytes(len) as usize, 0);
                    r.read_exact(&mut value)?;
                    item.fill(0);
                    if *unicode {
                        let s = std::str::from_utf8(&value)
                            .map_err(|_| unsupported("invalid UTF-8".into()))?;
                        for (c, slot) in s.chars().zip(item.chunks_exact_mut(4)) {
                            let v = c as u32;
                            slot.copy_from_slice(
                                &if swap { v.swap_bytes() } else { v }.to_ne_bytes(),
                            );
                        }
                    } else {
                        item[..value.len()].copy_from_slice(&value);
                    }
                    zip.write_all(&item)?;
                }
            }
            _ => {
                let copied = io::copy(&mut r, zip)?;
                if copied != nbytes {
                    return Err(unsupported(format!(
                        "spooled {copied} bytes, expected {nbytes}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Write `bytes`, reversing each `width`-byte unit when `width > 1`.
pub(crate) fn write_swapped(w: &mut impl Write, bytes: &[u8], width: usize) -> io::Result<()> {
    if width <= 1 {
        return w.write_all(bytes);
    }
    let mut scratch = vec![0u8; (1 << 16) / width * width];
    for chunk in bytes.chunks(scratch.len()) {
        let out = &mut scratch[..chunk.len()];
        out.copy_from_slice(chunk);
        out.chunks_exact_mut(width).for_each(|u| u.reverse());
        w.write_all(out)?;
    }
    Ok(())
}
