//! NumPy `.npz` files: a zip holding one `<column>.npy` array per column, as `np.savez` writes them.
//!
//! Writing: each column becomes an array of shape `(N, *s)` (`s` from nested FixedSizeList or a
//! `arrow.fixed_shape_tensor` column), with the numpy dtype from the field metadata
//! `msgpack_numpy.dtype` when it matches the Arrow type (so `>f4` or `<U5` come back exactly), else
//! the natural one (`<f4`, `|b1`, `<U{longest}`, `|S{longest}`, `<M8[us]`, ...). The `.npy` headers
//! are byte-for-byte what numpy writes. NPZ needs the row count before any data, so columns are
//! spooled to anonymous temporary files until [`NpzWriter::finish`]. Nulls cannot be stored and are
//! an error naming the column, except in datetime/timedelta columns, where they become NaT.
//!
//! Reading: every `.npy` member (stored or deflated, format 1.0–3.0, C or Fortran order) becomes a
//! column; 1-d arrays are primitive columns, n-d arrays nested FixedSizeList; all must share the
//! length of axis 0.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Date64Type, DurationMicrosecondType, Int64Type};
use arrow_array::{
    make_array, Array, ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray,
    FixedSizeListArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::error::{Error, ErrorKind, Result};
use crate::io::compress::io_error;
use crate::io::BatchIter;
use crate::options::TensorMode;
use crate::types::{fixed_size_list, meta, ByteOrder, NpTimeUnit, NumpyDtype};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
const ARRAY_ALIGN: usize = 64;
/// numpy leaves room in the header for axis 0 to grow to this many digits.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;
/// numpy refuses headers over 10,000 bytes by default; allow more, but not without bound.
const MAX_HEADER_LEN: usize = 1 << 20;

fn unsupported(msg: String) -> Error {
    Error::new(ErrorKind::Unsupported(msg))
}

fn zip_error(path: &Path, e: zip::result::ZipError) -> Error {
    match e {
        zip::result::ZipError::Io(e) => io_error(path, e),
        other => io_error(
            path,
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a valid npz (zip) file: {other}"),
            ),
        ),
    }
}

fn native_order() -> ByteOrder {
    if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    }
}

// ---------------------------------------------------------------------------------------------
// .npy headers

/// Python's `repr` of a shape tuple: `()`, `(3,)`, `(3, 768)`.
fn shape_repr(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The `.npy` header (magic, version, length, dict, padding) exactly as
/// `numpy.lib.format.write_array` writes it for a C-order array.
pub fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    // numpy: sorted keys, repr values, then spare spaces so axis 0 can grow in place.
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_repr(shape)
    );
    if let Some(first) = shape.first() {
        let digits = first.to_string().len();
        dict.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits)));
    }
    let wrap = |len_field: usize| {
        let hlen = dict.len() + 1;
        let pad = ARRAY_ALIGN - (MAGIC.len() + 2 + len_field + hlen) % ARRAY_ALIGN;
        (hlen + pad, pad)
    };
    let (total, pad, version) = match wrap(2) {
        (total, pad) if total <= u16::MAX as usize => (total, pad, 1u8),
        _ => {
            let (total, pad) = wrap(4);
            // Non-ASCII (structured field names) would need 3.0; our descrs are ASCII.
            (total, pad, if dict.is_ascii() { 2 } else { 3 })
        }
    };
    let mut out = Vec::with_capacity(total + 12);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(total as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(total as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

/// A Python literal, as found in `.npy` headers.
#[derive(Debug, Clone, PartialEq)]
enum Py {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Seq(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

struct PyParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> PyParser<'a> {
    fn bad(&self, what: &str) -> Error {
        Error::new(ErrorKind::InvalidNdarray(format!(
            "bad .npy header: {what} at character {}",
            self.pos
        )))
    }
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn value(&mut self, depth: usize) -> Result<Py> {
        if depth > 32 {
            return Err(self.bad("nesting too deep"));
        }
        self.ws();
        let Some(&c) = self.s.get(self.pos) else {
            return Err(self.bad("unexpected end"));
        };
        match c {
            b'\'' | b'"' => self.string(c),
            b'(' | b'[' => {
                self.pos += 1;
                let close = if c == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                loop {
                    if self.eat(close) {
                        break;
                    }
                    items.push(self.value(depth + 1)?);
                    if !self.eat(b',') {
                        if self.eat(close) {
                            break;
                        }
                        return Err(self.bad("expected ',' or closing bracket"));
                    }
                }
                Ok(Py::Seq(items))
            }
            b'{' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.eat(b'}') {
                        break;
                    }
                    let k = self.value(depth + 1)?;
                    if !self.eat(b':') {
                        return Err(self.bad("expected ':'"));
                    }
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    if !self.eat(b',') {
                        if self.eat(b'}') {
                            break;
                        }
                        return Err(self.bad("expected ',' or '}'"));
                    }
                }
                Ok(Py::Dict(items))
            }
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                self.pos += 1;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos])
                    .map_err(|_| self.bad("number"))?;
                let v = text.parse::<i128>().map_err(|_| self.bad("number"))?;
                // Python 2 longs: `3L`
                if matches!(self.s.get(self.pos), Some(b'L' | b'l')) {
                    self.pos += 1;
                }
                Ok(Py::Int(v))
            }
            _ => {
                for (word, v) in [
                    ("True", Py::Bool(true)),
                    ("False", Py::Bool(false)),
                    ("None", Py::None),
                ] {
                    if self.s[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(v);
                    }
                }
                Err(self.bad("unexpected character"))
            }
        }
    }
    fn string(&mut self, quote: u8) -> Result<Py> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return Err(self.bad("unterminated string"));
            };
            self.pos += 1;
            match c {
                _ if c == quote => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.bad("bad escape"));
                    };
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'0' => out.push(0),
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out)
            .map(Py::Str)
            .map_err(|_| self.bad("string is not UTF-8"))
    }
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    /// The element dtype.
    pub dtype: NumpyDtype,
    /// Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<usize>,
    /// Bytes before the data (magic, version, length, dict, padding).
    pub header_len: usize,
}

/// Read and parse a `.npy` header from `r`, leaving it at the first data byte.
pub fn read_npy_header(r: &mut impl Read) -> Result<NpyHeader> {
    let bad = |m: &str| Error::new(ErrorKind::InvalidNdarray(format!("bad .npy header: {m}")));
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| bad("shorter than the magic string"))?;
    if &pre[..6] != MAGIC {
        return Err(bad("no \\x93NUMPY magic (not a .npy array)"));
    }
    let (len, len_field) = match pre[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).map_err(|_| bad("truncated"))?;
            (u16::from_le_bytes(b) as usize, 2)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|_| bad("truncated"))?;
            (u32::from_le_bytes(b) as usize, 4)
        }
        v => return Err(bad(&format!("unknown format version {v}.{}", pre[7]))),
    };
    if len > MAX_HEADER_LEN {
        return Err(bad(&format!("header of {len} bytes is too long")));
    }
    let mut h = vec![0u8; len];
    r.read_exact(&mut h).map_err(|_| bad("truncated"))?;
    // Versions 1 and 2 are latin-1: map bytes to chars one to one.
    let text: String = if pre[6] == 3 {
        String::from_utf8(h).map_err(|_| bad("not UTF-8"))?
    } else {
        h.iter().map(|&b| b as char).collect()
    };
    let mut p = PyParser {
        s: text.as_bytes(),
        pos: 0,
    };
    let Py::Dict(items) = p.value(0)? else {
        return Err(bad("not a dict"));
    };
    let get = |k: &str| {
        items
            .iter()
            .find(|(key, _)| *key == Py::Str(k.into()))
            .map(|(_, v)| v)
    };
    let dtype = match get("descr") {
        Some(Py::Str(s)) => NumpyDtype::parse(s)?,
        Some(Py::Seq(_)) => {
            return Err(unsupported(
                "structured (record) arrays in .npy files are not supported".into(),
            ))
        }
        _ => return Err(bad("no 'descr'")),
    };
    let fortran_order = match get("fortran_order") {
        Some(Py::Bool(b)) => *b,
        _ => return Err(bad("no 'fortran_order'")),
    };
    let shape = match get("shape") {
        Some(Py::Seq(dims)) => dims
            .iter()
            .map(|d| match d {
                Py::Int(v) => usize::try_from(*v).map_err(|_| bad("negative or huge axis")),
                _ => Err(bad("shape is not a tuple of ints")),
            })
            .collect::<Result<Vec<_>>>()?,
        _ => return Err(bad("no 'shape'")),
    };
    Ok(NpyHeader {
        dtype,
        fortran_order,
        shape,
        header_len: 6 + 2 + len_field + len,
    })
}

// ---------------------------------------------------------------------------------------------
// Writer

/// How one column's leaf values become numpy bytes.
#[derive(Debug, Clone)]
enum Leaf {
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
struct NpzColumn {
    name: String,
    /// Nested FixedSizeList levels to strip from the stored type.
    levels: usize,
    /// Trailing dimensions (after axis 0).
    shape: Vec<u64>,
    /// The numpy dtype; for variable-width strings its size is set at `finish`.
    dtype: NumpyDtype,
    leaf: Leaf,
    spool: Option<BufWriter<File>>,
    /// Longest value: chars (`U`) or bytes (`S`).
    max_len: usize,
}

/// Writes record batches as an `.npz` archive (stored, like `np.savez`).
pub struct NpzWriter<W: Write + Seek> {
    out: W,
    columns: Vec<NpzColumn>,
    rows: u64,
    spool_dir: Option<PathBuf>,
}

impl<W: Write + Seek> std::fmt::Debug for NpzWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzWriter")
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .finish()
    }
}

fn check_name(name: &str) -> Result<()> {
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
fn dtype_fits(dt: &NumpyDtype, leaf: &DataType) -> bool {
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
fn natural_dtype(leaf: &DataType) -> Option<NumpyDtype> {
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
fn plan_column(field: &Field) -> Result<NpzColumn> {
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
    fn append(&mut self, array: &ArrayRef, first_row: u64) -> Result<()> {
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

    fn finish<Z: Write + Seek>(&mut self, zip: &mut ZipWriter<Z>, rows: u64) -> Result<()> {
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
fn write_swapped(w: &mut impl Write, bytes: &[u8], width: usize) -> io::Result<()> {
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

// ---------------------------------------------------------------------------------------------
// Reader

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
        let opts = RecordBatchOptions::new().with_row_count(Some(len));
        Ok(RecordBatch::try_new_with_options(out.clone(), cols, &opts)?)
    });
    Ok((schema, Box::new(batches)))
}

/// One `.npy` member → its field and column.
fn read_member(
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
        match tensor {
            TensorMode::Array => {
                for &d in tail.iter().rev() {
                    leaf = wrap_fsl(leaf, d)?;
                }
            }
            TensorMode::Extension => {
                let n = tail.iter().product();
                leaf = wrap_fsl(leaf, n)?;
                md.insert(
                    meta::EXTENSION_NAME.into(),
                    "arrow.fixed_shape_tensor".into(),
                );
                md.insert(
                    meta::EXTENSION_METADATA.into(),
                    serde_json::json!({ "shape": tail }).to_string(),
                );
            }
        }
    }
    debug_assert_eq!(leaf.len(), rows);
    let field = Field::new(key, leaf.data_type().clone(), true).with_metadata(md);
    Ok((field, leaf))
}

fn wrap_fsl(values: ArrayRef, n: usize) -> Result<ArrayRef> {
    let DataType::FixedSizeList(item, size) = fixed_size_list(values.data_type().clone(), n)?
    else {
        unreachable!("fixed_size_list returns a FixedSizeList")
    };
    Ok(Arc::new(FixedSizeListArray::try_new(
        item, size, values, None,
    )?))
}

/// Reorder a Fortran-order array's elements into C order.
fn fortran_to_c(src: &[u8], shape: &[usize], itemsize: usize) -> MutableBuffer {
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
fn leaf_array(dt: &NumpyDtype, buf: Buffer, count: usize) -> Result<ArrayRef> {
    let bytes = buf.as_slice();
    Ok(match dt {
        NumpyDtype::Bool => Arc::new(BooleanArray::new(
            BooleanBuffer::collect_bool(count, |i| bytes[i] != 0),
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
        NumpyDtype::Unicode { chars, .. } => {
            let width = chars * 4;
            let mut offsets = Vec::with_capacity(count + 1);
            offsets.push(0i32);
            let mut data = Vec::with_capacity(bytes.len() / 4);
            for i in 0..count {
                let item = &bytes[i * width..(i + 1) * width];
                let mut units: Vec<u32> = item
                    .chunks_exact(4)
                    .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]]))
                    .collect();
                while units.last() == Some(&0) {
                    units.pop();
                }
                for u in units {
                    let c = char::from_u32(u).ok_or_else(|| {
                        Error::new(ErrorKind::InvalidNdarray(format!(
                            "element {i} holds {u:#x}, which is not a Unicode code point"
                        )))
                    })?;
                    let mut tmp = [0u8; 4];
                    data.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                }
                offsets.push(
                    i32::try_from(data.len())
                        .map_err(|_| unsupported("string column over 2 GiB".into()))?,
                );
            }
            // SAFETY-free: the offsets are monotonic and the data valid UTF-8 by construction;
            // try_new checks anyway.
            Arc::new(StringArray::try_new(
                OffsetBuffer::new(offsets.into()),
                data.into(),
                None,
            )?)
        }
        NumpyDtype::Bytes { len } => {
            let mut offsets = Vec::with_capacity(count + 1);
            offsets.push(0i32);
            let mut data = Vec::with_capacity(bytes.len());
            for i in 0..count {
                let item = &bytes[i * len..(i + 1) * len];
                let end = item.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                data.extend_from_slice(&item[..end]);
                offsets.push(
                    i32::try_from(data.len())
                        .map_err(|_| unsupported("binary column over 2 GiB".into()))?,
                );
            }
            Arc::new(BinaryArray::try_new(
                OffsetBuffer::new(offsets.into()),
                data.into(),
                None,
            )?)
        }
        NumpyDtype::Void { len } => {
            let w = i32::try_from(*len)
                .map_err(|_| Error::new(ErrorKind::UnsupportedDtype(dt.to_dtype_str())))?;
            Arc::new(FixedSizeBinaryArray::try_new(w, buf, None)?)
        }
        NumpyDtype::Datetime { unit, .. } | NumpyDtype::Timedelta { unit, .. } => {
            let target = dt.arrow_type()?;
            let raw: &[i64] = buf.typed_data::<i64>();
            let nulls = NullBuffer::from_iter(raw.iter().map(|&v| v != i64::MIN));
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float16Array, Float32Array, Int64Array, TimestampMicrosecondArray};
    use std::io::Cursor;

    #[test]
    fn header_like_numpy() {
        // Exactly what `np.save` (numpy 2.4) writes before the data.
        let numpy = |dict: &str| {
            let mut v = b"\x93NUMPY\x01\x00v\x00".to_vec();
            v.extend_from_slice(dict.as_bytes());
            v.extend(std::iter::repeat_n(b' ', 128 - 1 - v.len()));
            v.push(b'\n');
            v
        };
        assert_eq!(
            npy_header("|b1", &[]),
            numpy("{'descr': '|b1', 'fortran_order': False, 'shape': (), }")
        );
        assert_eq!(
            npy_header("<i8", &[5]),
            numpy("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }")
        );
        assert_eq!(
            npy_header("<f4", &[3, 768]),
            numpy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 768), }")
        );
        for shape in [&[0u64][..], &[1 << 40, 7, 9, 11], &[123456789, 1]] {
            assert_eq!(npy_header(">U17", shape).len() % 64, 0);
        }
    }

    #[test]
    fn header_parse_round_trip() {
        let h = npy_header(">U5", &[2, 3, 4]);
        let parsed = read_npy_header(&mut Cursor::new(&h)).unwrap();
        assert_eq!(parsed.dtype, NumpyDtype::parse(">U5").unwrap());
        assert_eq!(parsed.shape, [2, 3, 4]);
        assert!(!parsed.fortran_order);
        assert_eq!(parsed.header_len, h.len());

        let mut p = PyParser {
            s: b"{'a': [('x', '<i4'), (\"y\", '<f8', (2,))], 'b': 3L, 'c': None, }",
            pos: 0,
        };
        let v = p.value(0).unwrap();
        let Py::Dict(items) = v else { panic!() };
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].1, Py::Int(3));

        for bad in [
            &b"\x93NUMPY\x09\x00"[..],
            b"NOTNUMPY",
            b"\x93NUMPY\x01\x00\x05\x00{'de",
        ] {
            assert!(read_npy_header(&mut Cursor::new(bad)).is_err());
        }
        let mut deep = b"\x93NUMPY\x01\x00\x50\x00".to_vec();
        deep.extend([b'['; 80]);
        assert!(read_npy_header(&mut Cursor::new(&deep)).is_err());
    }

    fn fsl(values: ArrayRef, n: usize) -> ArrayRef {
        wrap_fsl(values, n).unwrap()
    }

    fn write_npz(batches: &[RecordBatch]) -> Vec<u8> {
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), batches[0].schema()).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn read_back(bytes: &[u8]) -> (SchemaRef, RecordBatch) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.npz");
        std::fs::write(&p, bytes).unwrap();
        let (schema, batches) = read_npz(&p).unwrap();
        let batches: Vec<_> = batches.collect::<Result<_>>().unwrap();
        let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        (schema, all)
    }

    #[test]
    fn round_trip_types() {
        let emb = fsl(
            fsl(
                Arc::new(Float32Array::from_iter_values((0..24).map(|i| i as f32))),
                3,
            ),
            2,
        );
        let md = |d: &str| HashMap::from([(meta::DTYPE.to_string(), d.to_string())]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("emb", emb.data_type().clone(), true),
            Field::new("big", DataType::Float32, true).with_metadata(md(">f4")),
            Field::new("s", DataType::Utf8, true),
            Field::new("u5", DataType::Utf8, true).with_metadata(md("<U5")),
            Field::new("b", DataType::Binary, true),
            Field::new("ok", DataType::Boolean, true),
            Field::new("h", DataType::Float16, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("d", DataType::Date32, true),
            Field::new("v", DataType::FixedSizeBinary(2), true),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, -2, 3, 4])),
            emb,
            Arc::new(Float32Array::from(vec![1.5, 2.5, -0.0, f32::NAN])),
            Arc::new(StringArray::from(vec!["a", "héllo", "", "z"])),
            Arc::new(StringArray::from(vec!["ab", "", "abcde", "x"])),
            Arc::new(BinaryArray::from(vec![&b"\x00\x01"[..], b"", b"abc", b"q"])),
            Arc::new(BooleanArray::from(vec![true, false, true, true])),
            Arc::new(Float16Array::from_iter_values(
                [0.5, 1.0, 1.5, 2.0].map(half::f16::from_f32),
            )),
            Arc::new(TimestampMicrosecondArray::from(vec![
                0,
                1,
                -1,
                1_700_000_000_000_000,
            ])),
            Arc::new(PrimitiveArray::<Date32Type>::from(vec![0, 1, 19000, -5])),
            Arc::new(
                FixedSizeBinaryArray::try_from_iter([b"ab", b"\0\0", b"cd", b"e\0"].into_iter())
                    .unwrap(),
            ),
        ];
        let batch = RecordBatch::try_new(schema, cols).unwrap();
        let bytes = write_npz(&[batch.slice(0, 1), batch.slice(1, 3)]);
        let (schema, got) = read_back(&bytes);
        let dtypes: Vec<&str> = schema
            .fields()
            .iter()
            .map(|f| f.metadata()[meta::DTYPE].as_str())
            .collect();
        assert_eq!(
            dtypes,
            ["<i8", "<f4", ">f4", "<U5", "<U5", "|S3", "|b1", "<f2", "<M8[us]", "<M8[D]", "|V2"]
        );
        assert_eq!(
            schema.field(1).data_type(),
            batch.schema().field(1).data_type()
        );
        for i in 0..batch.num_columns() {
            if i == 5 {
                // |S strips trailing NULs only; b"\x00\x01" survives
                assert_eq!(got.column(i).as_binary::<i32>().value(0), b"\x00\x01");
                continue;
            }
            assert_eq!(
                got.column(i).to_data(),
                batch.column(i).to_data(),
                "column {i}"
            );
        }
    }

    #[test]
    fn nulls_and_names_are_errors() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![Some(1), None]))],
        )
        .unwrap();
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), schema).unwrap();
        let e = w.write(&b).unwrap_err().to_string();
        assert!(e.contains("row 1 is null") && e.contains("\"x\""), "{e}");

        let schema = Arc::new(Schema::new(vec![Field::new("a/b", DataType::Int64, true)]));
        let e = NpzWriter::try_new(Cursor::new(Vec::new()), schema)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"a/b\""), "{e}");

        let schema = Arc::new(Schema::new(vec![Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            true,
        )]));
        let e = NpzWriter::try_new(Cursor::new(Vec::new()), schema)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"l\"") && e.contains("no numpy equivalent"),
            "{e}"
        );

        let schema = Arc::new(Schema::new(vec![Field::new("u", DataType::Utf8, true)
            .with_metadata(HashMap::from([(
                meta::DTYPE.to_string(),
                "<U2".to_string(),
            )]))]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec!["abc"]))],
        )
        .unwrap();
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), schema).unwrap();
        assert!(w
            .write(&b)
            .unwrap_err()
            .to_string()
            .contains("does not fit"));
    }

    #[test]
    fn fortran_order_and_lengths() {
        // A 2x3 int16 array in Fortran order: memory holds columns.
        let mut npy = npy_header("<i2", &[2, 3]);
        let at = npy.windows(5).position(|w| w == b"False").unwrap();
        npy[at..at + 5].copy_from_slice(b"True ");
        for v in [1i16, 4, 2, 5, 3, 6] {
            npy.extend_from_slice(&v.to_le_bytes());
        }
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("m.npy", SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy).unwrap();
        zip.start_file("short.npy", SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy_header("<i8", &[5])).unwrap();
        zip.write_all(&[0u8; 40]).unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.npz");
        std::fs::write(&p, &bytes).unwrap();
        let e = read_npz(&p).err().unwrap().to_string();
        assert!(
            e.contains("axis 0") && e.contains("\"m\" has 2") && e.contains("\"short\" has 5"),
            "{e}"
        );
        let (_, batches) =
            read_npz_with(&p, Some(&["m".to_string()]), 10, TensorMode::Array).unwrap();
        let b = batches.collect::<Result<Vec<_>>>().unwrap().remove(0);
        let vals = b
            .column(0)
            .as_fixed_size_list()
            .values()
            .as_primitive::<arrow_array::types::Int16Type>()
            .values()
            .to_vec();
        assert_eq!(vals, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn truncated_member_is_an_error() {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("x.npy", SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy_header("<f8", &[1_000_000_000])).unwrap();
        zip.write_all(&[0u8; 16]).unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.npz");
        std::fs::write(&p, &bytes).unwrap();
        let e = read_npz(&p).err().unwrap().to_string();
        assert!(e.contains("truncated") && e.contains("\"x\""), "{e}");
    }
}
