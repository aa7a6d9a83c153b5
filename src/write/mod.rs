//! The writer: Arrow [`RecordBatch`]es → msgpack-numpy, byte-for-byte as Python
//! `msgpack_numpy` 0.4.8 writes the same values (SPEC §4.2).
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! # fn main() -> msgpack_arrow::Result<()> {
//! use msgpack_arrow::{Layout, WriterBuilder};
//! let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2]))])?;
//! let mut w = WriterBuilder::new().with_layout(Layout::Records).build(Vec::new(), schema)?;
//! w.write(&batch)?;
//! let bytes = w.finish()?;
//! assert_eq!(bytes, b"\x81\xa2id\x01\x81\xa2id\x02");
//! # Ok(()) }
//! ```
//!
//! How each Arrow column is written is decided once per batch and column (`encoder::make_encoder`):
//! the field metadata written by the reader (`msgpack_numpy.dtype`,
//! `msgpack_numpy.kind`) restores the exact numpy form; without it the Arrow type decides (SPEC §3).
//! The schema metadata `msgpack_arrow.layout` / `msgpack_arrow.container` restore how rows were
//! contained (a stream of objects, one top-level array, one bare ndarray).

mod access;
mod columns;
mod elements;
mod encoder;
mod ndarray;
mod tensor;

use std::io::Write;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};

use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, Layout, Missing};
use crate::types::layout::is_columns_map;
use crate::types::meta;

use crate::wire::write::{self as wire, IntVal, Out};
use columns::{column_encoder, rows_are_ndarrays, ColumnNd};
use encoder::{make_encoder, make_top_encoder, ColumnEncoder};
use ndarray::NdProbe;

/// A value this writer has no msgpack-numpy form for.
pub(crate) fn unsupported(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Unsupported(msg.into()))
}

/// Encoded bytes are handed to the sink in chunks of about this size: a small buffer that stays
/// in cache and is reused, instead of one huge fresh allocation per batch (page faults on fresh
/// memory cost more than the copy itself on these machines).
const FLUSH_AT: usize = 1 << 20;

/// How rows are contained in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    /// Concatenated objects, one per row (`records`, `values`); one map (`columns`).
    Stream,
    /// One top-level msgpack array holding all rows.
    Array,
    /// One bare ndarray whose axis 0 are the rows (`values` only).
    Ndarray,
}

/// Builds a [`Writer`].
///
/// ```
/// # use msgpack_arrow::{Layout, WriterBuilder};
/// assert_eq!(
///     format!("{:?}", WriterBuilder::new()),
///     format!("{:?}", WriterBuilder::new().with_layout(Layout::Records).with_aligned(false)),
/// );
/// ```
#[derive(Debug, Clone)]
pub struct WriterBuilder {
    layout: Layout,
    aligned: bool,
    missing: Missing,
    dialect: Dialect,
}

impl Default for WriterBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl WriterBuilder {
    /// Defaults: layout [`Layout::Records`], not aligned.
    pub fn new() -> Self {
        WriterBuilder {
            layout: Layout::Records,
            aligned: false,
            missing: Missing::Auto,
            dialect: Dialect::Auto,
        }
    }

    /// The form of ndarrays and numpy scalars (default [`Dialect::Auto`]: openpi's maps when the
    /// schema metadata `msgpack_arrow.dialect` says the file read had them and the output is not
    /// aligned, else msgpack-numpy's). [`Dialect::Openpi`] writes `{__ndarray__, data, dtype, shape}` and
    /// `{__npgeneric__, data, dtype}` as openpi's `packb` does; msgpack-numpy-js is read only.
    pub fn with_dialect(mut self, d: Dialect) -> Self {
        self.dialect = d;
        self
    }

    /// How a null in a record is written (default [`Missing::Auto`]: left out where the file
    /// read had absent keys, else nil).
    pub fn with_missing(mut self, m: Missing) -> Self {
        self.missing = m;
        self
    }

    /// The layout to write (default `Records`). [`Layout::Auto`] uses the schema metadata
    /// `msgpack_arrow.layout` (what the reader found) when present, else `Records`.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Place every ndarray payload at an output offset that is a multiple of 64 (at least of 8),
    /// so readers can view it in place (default `false`: byte-exact with Python). The padding is
    /// made of wider-but-valid msgpack encodings only (map16, str8, bin32, uint64 shape entries,
    /// and in records wider keys and ints before the ndarray), so every msgpack-numpy reader
    /// accepts the output; no keys are added.
    pub fn with_aligned(mut self, aligned: bool) -> Self {
        self.aligned = aligned;
        self
    }

    /// A writer of batches with this schema into `w`.
    pub fn build<W: Write>(self, w: W, schema: SchemaRef) -> Result<Writer<W>> {
        let md = schema.metadata();
        let meta_layout = md.get(meta::LAYOUT).and_then(|s| s.parse::<Layout>().ok());
        let layout = match self.layout {
            Layout::Auto => match meta_layout {
                Some(l) if l != Layout::Auto => l,
                _ => Layout::Records,
            },
            l => l,
        };
        // The container describes how rows sat in a file of the layout the reader used: it only
        // applies when writing that same layout.
        // a file that was a record stream: written as one whatever it holds (byte-exact)
        let was_stream = meta_layout == Some(layout)
            && md.get(meta::CONTAINER).map(String::as_str) == Some("stream");
        let container = match md.get(meta::CONTAINER).map(String::as_str) {
            _ if meta_layout.is_some_and(|l| l != layout) => Container::Stream,
            Some("array") if layout != Layout::Columns => Container::Array,
            Some("ndarray") if layout == Layout::Values => Container::Ndarray,
            _ => Container::Stream,
        };
        // No columns (an empty input read as `values`) writes nothing.
        if layout == Layout::Values && schema.fields().len() > 1 {
            return Err(Error::new(ErrorKind::Layout(format!(
                "the values layout writes exactly one column; the schema has {}",
                schema.fields().len()
            ))));
        }
        let seg = Segment {
            bin: schema.fields().iter().map(|f| bin_key(f)).collect(),
            ..Segment::default()
        };
        let openpi = match self.dialect {
            Dialect::Openpi => true,
            Dialect::MsgpackNumpy => false,
            // aligned output exists only in msgpack-numpy's form: asking for it chooses that
            Dialect::Auto => {
                !self.aligned && md.get(meta::DIALECT).map(String::as_str) == Some("openpi")
            }
            Dialect::Js => {
                return Err(Error::new(ErrorKind::Unsupported(
                    "the msgpack-numpy-js dialect is read only; write msgpack-numpy or openpi"
                        .into(),
                )))
            }
        };
        if openpi && self.aligned {
            return Err(Error::new(ErrorKind::Unsupported(
                "aligned output is msgpack-numpy's (openpi's maps put the payload before dtype \
                 and shape); write openpi without aligned"
                    .into(),
            )));
        }
        let mut out = Out::new(self.aligned);
        out.openpi = openpi;
        let omit = match self.missing {
            Missing::Omit => true,
            Missing::Nil => false,
            Missing::Auto => md.get(meta::MISSING).map(String::as_str) == Some("absent"),
        };
        Ok(Writer {
            omit,
            w,
            schema,
            layout,
            container,
            out,
            flush_at: FLUSH_AT,
            pending: Vec::new(),
            rows: 0,
            streaming: layout == Layout::Records && was_stream,
            seg,
            keys: Vec::new(),
        })
    }
}

/// Writes [`RecordBatch`]es as msgpack-numpy. Call [`Writer::finish`] at the end: some containers
/// (a top-level array, the `columns` map, a bare ndarray) are only written then, because their
/// headers hold the total row count.
pub struct Writer<W: Write> {
    w: W,
    /// records: a null leaves its key out ([`Missing`])
    omit: bool,
    schema: SchemaRef,
    layout: Layout,
    container: Container,
    out: Out,
    flush_at: usize,
    /// Batches held until `finish` (containers whose header needs the row count).
    pending: Vec<RecordBatch>,
    rows: u64,
    /// `values` or `records` stream: more than one row seen (or the input was a record stream),
    /// so rows are written as they come.
    streaming: bool,
    seg: Segment,
    /// Column names encoded as msgpack str keys.
    keys: Vec<Vec<u8>>,
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("layout", &self.layout)
            .field("container", &self.container)
            .field("aligned", &self.out.align)
            .field("rows", &self.rows)
            .finish()
    }
}

impl<W: Write> Writer<W> {
    /// Encode one batch (its columns must match the schema given to the builder).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check(batch)?;
        if self.layout == Layout::Values && self.schema.fields().is_empty() {
            if batch.num_rows() > 0 {
                return Err(Error::new(ErrorKind::Layout(
                    "the values layout needs one column; the batch has none".to_string(),
                )));
            }
            return Ok(());
        }
        let n = batch.num_rows() as u64;
        match (self.layout, self.container) {
            // The first row is held back until a second one comes: one row alone may read back
            // as something else (a values row that is an array: its items; a record of ndarrays:
            // a `columns` map); see finish_values_stream / finish_records_stream.
            (Layout::Values | Layout::Records, Container::Stream) if !self.streaming => {
                self.pending.push(batch.clone());
                self.rows += n;
                if self.rows > 1 {
                    self.streaming = true;
                    let mut row0 = 0;
                    for b in std::mem::take(&mut self.pending) {
                        self.encode_rows(&b, row0)?;
                        row0 += b.num_rows() as u64;
                    }
                }
            }
            (Layout::Values, Container::Stream) => {
                self.encode_values(batch, self.rows)?;
                self.rows += n;
            }
            (Layout::Records, Container::Stream) => {
                self.encode_records(batch, self.rows)?;
                self.rows += n;
            }
            _ => {
                self.pending.push(batch.clone());
                self.rows += n;
            }
        }
        self.flush_if(0)
    }

    /// Write whatever was held back, flush, and return the sink.
    pub fn finish(mut self) -> Result<W> {
        self.finish_encoding()?;
        self.flush_if(0)?;
        self.flush_all()?;
        self.w.flush()?;
        Ok(self.w)
    }

    fn check(&self, batch: &RecordBatch) -> Result<()> {
        let fields = self.schema.fields();
        let bf = batch.schema_ref().fields();
        if bf.len() != fields.len() {
            return Err(Error::new(ErrorKind::Layout(format!(
                "batch has {} columns, the writer's schema {}",
                bf.len(),
                fields.len()
            ))));
        }
        for (f, b) in fields.iter().zip(bf.iter()) {
            if f.data_type() != b.data_type() {
                return Err(Error::new(ErrorKind::Layout(format!(
                    "batch column type {} differs from the schema's {}",
                    b.data_type(),
                    f.data_type()
                )))
                .prepend_path(f.name()));
            }
        }
        Ok(())
    }

    fn finish_encoding(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        match (self.layout, self.container) {
            (Layout::Records, Container::Array) => {
                wire::array_hdr(&mut self.out.buf, self.rows as usize);
                let mut row0 = 0;
                for b in &pending {
                    self.encode_records(b, row0)?;
                    row0 += b.num_rows() as u64;
                }
            }
            (Layout::Records, _) => {
                if !self.streaming {
                    self.finish_records_stream(&pending)?;
                }
            }
            (Layout::Columns, _) => self.encode_columns(&pending)?,
            // a file that was one empty top-level array (`[]`) is written back as one
            (Layout::Values, Container::Array) if self.schema.fields().is_empty() => {
                wire::array_hdr(&mut self.out.buf, 0)
            }
            (Layout::Values, _) if self.schema.fields().is_empty() => {}
            (Layout::Values, Container::Ndarray) => {
                let field = self.schema.field(0).clone();
                let mut arrays: Vec<ArrayRef> =
                    pending.iter().map(|b| b.column(0).clone()).collect();
                if arrays.is_empty() {
                    // no rows: the shape's other axes come from the type, e.g. (0, 3)
                    arrays.push(arrow_array::new_empty_array(field.data_type()));
                }
                match ColumnNd::try_new(&field, &arrays, true)
                    .map_err(|e| e.prepend_path(field.name()))?
                {
                    Some(mut nd) => {
                        nd.encode(0, &mut self.out)
                            .map_err(|e| e.prepend_path(field.name()))?;
                    }
                    // Not one ndarray (nulls, ragged rows): fall back to a stream of values.
                    None => self.finish_values_stream(&pending)?,
                }
            }
            (Layout::Values, Container::Array) => {
                wire::array_hdr(&mut self.out.buf, self.rows as usize);
                let mut row0 = 0;
                for b in &pending {
                    self.encode_values(b, row0)?;
                    row0 += b.num_rows() as u64;
                }
            }
            (Layout::Values, _) => {
                if !self.streaming {
                    self.finish_values_stream(&pending)?;
                }
            }
            (Layout::Auto, _) => unreachable!("resolved in build"),
        }
        Ok(())
    }

    fn encode_rows(&mut self, batch: &RecordBatch, row0: u64) -> Result<()> {
        match self.layout {
            Layout::Values => self.encode_values(batch, row0),
            _ => self.encode_records(batch, row0),
        }
    }

    /// A record stream of at most one row, held back: a row that `auto` would read as a
    /// `columns` map (all values ndarrays or lists of one length) is wrapped in a one-element
    /// top-level array, which reads back as one record.
    fn finish_records_stream(&mut self, pending: &[RecordBatch]) -> Result<()> {
        let rows: usize = pending.iter().map(|b| b.num_rows()).sum();
        if rows == 1 {
            let b = pending.iter().find(|b| b.num_rows() == 1).expect("one row");
            let mut forms = Vec::with_capacity(b.num_columns());
            for (mut enc, f) in self.encoders(b, 0)?.into_iter().zip(self.schema.fields()) {
                forms.push(
                    enc.form(0)
                        .map_err(|e| e.at_record(0).prepend_path(f.name()))?,
                );
            }
            if is_columns_map(forms) {
                self.out.buf.push(0x91);
            }
        }
        let mut row0 = 0;
        for b in pending {
            self.encode_records(b, row0)?;
            row0 += b.num_rows() as u64;
        }
        Ok(())
    }

    /// A stream of values whose rows were all held back. One row that encodes as an array or an
    /// ndarray would read back as several rows (its items, its axis 0), so it is wrapped in a
    /// one-element top-level array.
    fn finish_values_stream(&mut self, pending: &[RecordBatch]) -> Result<()> {
        let total: usize = pending.iter().map(|b| b.num_rows()).sum();
        if total == 1 {
            let b = pending.iter().find(|b| b.num_rows() == 1).expect("one row");
            let field = self.schema.field(0).clone();
            let mut enc =
                make_encoder(&field, b.column(0)).map_err(|e| e.prepend_path(field.name()))?;
            // a bare ndarray's rows are its axis 0 (a 0-d one, of a plain type, is one row)
            let is_nd = enc
                .nd_probe(0)
                .map_err(|e| e.at_record(0).prepend_path(field.name()))?
                .is_some()
                && matches!(
                    field.data_type(),
                    DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
                );
            let mut tmp = Out::new(false);
            enc.encode(0, &mut tmp)
                .map_err(|e| e.at_record(0).prepend_path(field.name()))?;
            let is_array = matches!(tmp.buf.first(), Some(0x90..=0x9f | 0xdc | 0xdd));
            if is_nd || is_array {
                self.out.buf.push(0x91);
                let mut enc = make_encoder(&field, b.column(0))?;
                return enc
                    .encode(0, &mut self.out)
                    .map_err(|e| e.at_record(0).prepend_path(field.name()));
            }
        }
        let mut row0 = 0;
        for b in pending {
            self.encode_values(b, row0)?;
            row0 += b.num_rows() as u64;
        }
        Ok(())
    }

    fn encoders(&self, batch: &RecordBatch, row0: u64) -> Result<Vec<Box<dyn ColumnEncoder>>> {
        self.schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| make_top_encoder(f, c, row0).map_err(|e| e.prepend_path(f.name())))
            .collect()
    }

    fn ensure_keys(&mut self) {
        if self.keys.is_empty() && !self.schema.fields().is_empty() {
            self.keys = self
                .schema
                .fields()
                .iter()
                .map(|f| {
                    let mut k = Vec::with_capacity(f.name().len() + 1);
                    write_key(&mut k, f);
                    k
                })
                .collect();
        }
    }

    fn reserve(&mut self, hint: usize) {
        let want = if self.flush_at == usize::MAX {
            hint
        } else {
            hint.min(self.flush_at + self.flush_at / 4)
        };
        self.out.buf.reserve(want);
    }

    /// One map per row, keys in schema order.
    fn encode_records(&mut self, batch: &RecordBatch, row0: u64) -> Result<()> {
        self.ensure_keys();
        let mut encs = self.encoders(batch, row0)?;
        let ncols = encs.len();
        let mut hdr = Vec::with_capacity(5);
        wire::map_hdr(&mut hdr, ncols);
        let keys_len: usize = self.keys.iter().map(|k| k.len()).sum();
        let hint = encs.iter().map(|e| e.size_hint()).sum::<usize>()
            + batch.num_rows() * (keys_len + hdr.len());
        self.reserve(hint);
        let names = self.schema.fields().clone();
        // Missing::Omit: which cells are null (Null columns too), so their keys are left out
        let nulls: Vec<Option<arrow_buffer::NullBuffer>> = if self.omit {
            batch.columns().iter().map(|c| c.logical_nulls()).collect()
        } else {
            Vec::new()
        };
        let present = |c: usize, row: usize| {
            nulls
                .get(c)
                .and_then(|n| n.as_ref())
                .is_none_or(|n| n.is_valid(row))
        };
        for row in 0..batch.num_rows() {
            let rec = row0 + row as u64;
            let fail = |c: usize, e: Error| e.at_record(rec).prepend_path(names[c].name());
            let n_here = if self.omit {
                (0..ncols).filter(|&c| present(c, row)).count()
            } else {
                ncols
            };
            if self.out.align {
                self.seg.items.push(Item::MapHdr(n_here));
                for (c, enc) in encs.iter_mut().enumerate() {
                    if !present(c, row) {
                        continue;
                    }
                    self.seg.items.push(Item::Key(c));
                    encode_aligned(enc.as_mut(), row, &mut self.seg, &mut self.out, &names)
                        .map_err(|e| fail(c, e))?;
                }
                self.seg.flush(&mut self.out, &names, None);
            } else {
                if n_here == ncols {
                    self.out.buf.extend_from_slice(&hdr);
                } else {
                    wire::map_hdr(&mut self.out.buf, n_here);
                }
                for (c, enc) in encs.iter_mut().enumerate() {
                    if !present(c, row) {
                        continue;
                    }
                    self.out.buf.extend_from_slice(&self.keys[c]);
                    enc.encode(row, &mut self.out).map_err(|e| fail(c, e))?;
                }
            }
            self.flush_if(self.flush_at)?;
        }
        Ok(())
    }

    /// One value per row (the single column).
    fn encode_values(&mut self, batch: &RecordBatch, row0: u64) -> Result<()> {
        let field = self.schema.field(0).clone();
        let mut enc = make_top_encoder(&field, batch.column(0), row0)
            .map_err(|e| e.prepend_path(field.name()))?;
        self.reserve(enc.size_hint());
        for row in 0..batch.num_rows() {
            // ndarrays align themselves inside their own map; there is no enclosing record.
            enc.encode(row, &mut self.out)
                .map_err(|e| e.at_record(row0 + row as u64).prepend_path(field.name()))?;
            self.flush_if(self.flush_at)?;
        }
        Ok(())
    }

    /// One map `{name: ndarray or list}` for the whole table.
    fn encode_columns(&mut self, batches: &[RecordBatch]) -> Result<()> {
        let Some(chunks) = self.chunk_rows() else {
            return self.encode_columns_map(batches);
        };
        // a file of several column maps is written back as those maps (byte-exact)
        let mut row0 = 0;
        for n in chunks {
            self.encode_columns_map(&slice_rows(batches, row0, n))?;
            row0 += n;
        }
        Ok(())
    }

    /// The rows of each column map of the file the table was read from ([`meta::CHUNKS`]), when
    /// there were several and the table still has all of their rows.
    fn chunk_rows(&self) -> Option<Vec<usize>> {
        let s = self.schema.metadata().get(meta::CHUNKS)?;
        let rows: Vec<usize> = s
            .split(',')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let total = rows
            .iter()
            .try_fold(0u64, |a, &n| a.checked_add(n as u64))?;
        (rows.len() > 1 && total == self.rows).then_some(rows)
    }

    fn encode_columns_map(&mut self, batches: &[RecordBatch]) -> Result<()> {
        let names = self.schema.fields().clone();
        // A table the reader made from a `columns` file marks its ndarray columns; the others
        // were lists there. Other tables (Polars, ...) write plain numeric columns as ndarrays.
        let from_columns_file =
            self.schema.metadata().get(meta::LAYOUT).map(String::as_str) == Some("columns");
        let mut encs = Vec::with_capacity(names.len());
        for (c, f) in names.iter().enumerate() {
            let arrays: Vec<ArrayRef> = if batches.is_empty() {
                vec![arrow_array::new_empty_array(f.data_type())]
            } else {
                batches.iter().map(|b| b.column(c).clone()).collect()
            };
            encs.push(
                column_encoder(f, &arrays, !from_columns_file)
                    .map_err(|e| e.prepend_path(f.name()))?,
            );
        }
        self.reserve(encs.iter().map(|e| e.size_hint()).sum::<usize>() + 16 * names.len());
        let fail = |c: usize, e: Error| e.prepend_path(names[c].name());
        if self.out.align {
            self.seg.items.push(Item::MapHdr(encs.len()));
            for (c, enc) in encs.iter_mut().enumerate() {
                self.seg.items.push(Item::Key(c));
                encode_aligned(enc.as_mut(), 0, &mut self.seg, &mut self.out, &names)
                    .map_err(|e| fail(c, e))?;
            }
            self.seg.flush(&mut self.out, &names, None);
        } else {
            wire::map_hdr(&mut self.out.buf, encs.len());
            for (c, enc) in encs.iter_mut().enumerate() {
                write_key(&mut self.out.buf, &names[c]);
                enc.encode(0, &mut self.out).map_err(|e| fail(c, e))?;
            }
        }
        Ok(())
    }

    fn flush_if(&mut self, at: usize) -> Result<()> {
        if self.out.buf.len() >= at.max(1) {
            self.flush_all()?;
        }
        Ok(())
    }

    fn flush_all(&mut self) -> Result<()> {
        if self.flush_at == usize::MAX || self.out.buf.is_empty() {
            return Ok(());
        }
        self.w.write_all(&self.out.buf)?;
        self.out.base += self.out.buf.len() as u64;
        self.out.buf.clear();
        Ok(())
    }
}

/// `schema` with the List columns of `batches` that held ndarrays marked so (`msgpack_numpy.kind`
/// = `ndarray`), for a table msgpack-arrow did not read (from Polars, pyarrow, ...), which says
/// nothing of ndarrays: a List of numbers narrower than msgpack's int64/float64 (int8..uint32,
/// float16/32) can only have been ndarrays (ragged ones: the rows' shapes differ), when every row
/// can be one (nested lists rectangular, no null elements). A table with reader metadata, or a
/// column that has some, is left as it is. The whole table is looked at, so a column is written
/// one way throughout.
pub fn mark_ragged_ndarrays(schema: &SchemaRef, batches: &[RecordBatch]) -> SchemaRef {
    use arrow_schema::DataType as T;
    fn narrow_leaf(t: &T) -> bool {
        match t {
            T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => narrow_leaf(f.data_type()),
            T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 | T::UInt32 => true,
            T::Float16 | T::Float32 => true,
            _ => false,
        }
    }
    if schema.metadata().contains_key(meta::LAYOUT) {
        return schema.clone();
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| {
            let mut f = f.as_ref().clone();
            let ragged = matches!(f.data_type(), T::List(_) | T::LargeList(_))
                && narrow_leaf(f.data_type())
                && !f.metadata().contains_key(meta::KIND)
                && batches.iter().all(|b| rows_are_ndarrays(b.column(c)));
            if ragged {
                let mut md = f.metadata().clone();
                md.insert(meta::KIND.to_string(), "ndarray".to_string());
                f = f.with_metadata(md);
            }
            f
        })
        .collect();
    std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

/// Whether a column's key is written as bin: the file read had it so ([`meta::KEY`]).
fn bin_key(f: &Field) -> bool {
    f.metadata().get(meta::KEY).map(String::as_str) == Some("bin")
}

/// The key of a column: str, or bin ([`bin_key`]).
fn write_key(b: &mut Vec<u8>, f: &Field) {
    if bin_key(f) {
        wire::bin(b, f.name().as_bytes())
    } else {
        wire::str(b, f.name())
    }
}

/// Rows `start..start + n` of the table made of `batches`, as slices of them.
fn slice_rows(batches: &[RecordBatch], start: usize, n: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut at = 0;
    for b in batches {
        let (lo, hi) = (start.max(at), (start + n).min(at + b.num_rows()));
        if lo < hi {
            out.push(b.slice(lo - at, hi - lo));
        }
        at += b.num_rows();
    }
    out
}

/// One element of a map being assembled in aligned mode, before the next ndarray.
#[derive(Debug, Clone, Copy)]
enum Item {
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
struct Segment {
    items: Vec<Item>,
    scratch: Vec<u8>,
    forms: Vec<&'static [u8]>,
    ints: Vec<Option<IntVal>>,
    sizes: Vec<u8>,
    suf: Vec<u128>,
    /// per column: its key is bin ([`bin_key`]), looked up once
    bin: Vec<bool>,
}

impl Segment {
    /// Write the held items, widened so that an ndarray starting right after them (described by
    /// `next`) can put its payload on a 64-byte boundary.
    fn flush(&mut self, out: &mut Out, names: &arrow_schema::Fields, next: Option<NdProbe>) {
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
fn encode_aligned(
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
    };
    let start = tmp.buf.len();
    let r = enc.encode(row, &mut tmp);
    let end = tmp.buf.len();
    seg.scratch = tmp.buf;
    r?;
    seg.items.push(Item::Val(start, end));
    Ok(())
}

/// Encode batches into one buffer (layout as [`WriterBuilder::with_layout`]; not aligned).
pub fn write_batches(batches: &[RecordBatch], layout: Layout) -> Result<Vec<u8>> {
    let Some(first) = batches.first() else {
        return Ok(Vec::new());
    };
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .build(std::io::sink(), first.schema())?;
    // Encode straight into the final buffer, reserved once (no chunk copies).
    w.flush_at = usize::MAX;
    let estimate: usize = batches
        .iter()
        .map(|b| {
            b.columns()
                .iter()
                .map(|c| c.get_buffer_memory_size())
                .sum::<usize>()
                + b.num_rows() * 16
        })
        .sum();
    w.out.buf.reserve(estimate);
    for b in batches {
        w.write(b)?;
    }
    w.finish_encoding()?;
    Ok(std::mem::take(&mut w.out.buf))
}

/// Encode each row of one column as its own msgpack-numpy object (one blob per row, as
/// `msgpack_numpy.packb(value)` writes the value; what `msgpack_numpy.unpackb(blob)` reads back).
/// A null row is a null blob; nulls inside a row are `nil`. The field's `msgpack_numpy.*` metadata
/// chooses the numpy form as for the other layouts (SPEC §3).
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{Array, ArrayRef, Int64Array};
/// # use arrow_schema::{DataType, Field};
/// let col: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(300)]));
/// let blobs = msgpack_arrow::write::encode_values_per_row(&Field::new("x", DataType::Int64, true), &col).unwrap();
/// assert_eq!(blobs.value(0), b"\x01");
/// assert!(blobs.is_null(1));
/// assert_eq!(blobs.value(2), b"\xcd\x01\x2c");
/// ```
pub fn encode_values_per_row(
    field: &arrow_schema::Field,
    array: &ArrayRef,
) -> Result<arrow_array::LargeBinaryArray> {
    use arrow_array::Array;
    let mut enc = make_top_encoder(field, array, 0).map_err(|e| e.prepend_path(field.name()))?;
    let mut out = Out::new(false);
    out.buf.reserve(enc.size_hint());
    let nulls = array.logical_nulls();
    let mut offsets = Vec::with_capacity(array.len() + 1);
    offsets.push(0i64);
    for row in 0..array.len() {
        if nulls.as_ref().is_none_or(|n| n.is_valid(row)) {
            enc.encode(row, &mut out)
                .map_err(|e| e.at_record(row as u64).prepend_path(field.name()))?;
        }
        offsets.push(out.buf.len() as i64);
    }
    Ok(arrow_array::LargeBinaryArray::try_new(
        arrow_buffer::OffsetBuffer::new(offsets.into()),
        arrow_buffer::Buffer::from_vec(out.buf),
        nulls,
    )?)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::types::*;
    use arrow_array::*;
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{DataType, Field, Fields, Schema};

    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }
    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
    fn md(kind: &str, dtype: &str) -> HashMap<String, String> {
        let mut m = HashMap::new();
        m.insert(meta::KIND.to_string(), kind.to_string());
        if !dtype.is_empty() {
            m.insert(meta::DTYPE.to_string(), dtype.to_string());
        }
        m
    }
    fn item(t: DataType) -> Arc<Field> {
        Arc::new(Field::new("item", t, true))
    }
    fn fsl(values: ArrayRef, n: i32) -> ArrayRef {
        Arc::new(
            FixedSizeListArray::try_new(item(values.data_type().clone()), n, values, None).unwrap(),
        )
    }
    fn list(values: ArrayRef, offsets: Vec<i32>) -> ArrayRef {
        Arc::new(
            ListArray::try_new(
                item(values.data_type().clone()),
                OffsetBuffer::new(offsets.into()),
                values,
                None,
            )
            .unwrap(),
        )
    }
    fn batch(cols: Vec<(Field, ArrayRef)>) -> RecordBatch {
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }
    fn col(name: &str, a: ArrayRef) -> (Field, ArrayRef) {
        (Field::new(name, a.data_type().clone(), true), a)
    }
    fn col_md(name: &str, a: ArrayRef, kind: &str, dtype: &str) -> (Field, ArrayRef) {
        (
            Field::new(name, a.data_type().clone(), true).with_metadata(md(kind, dtype)),
            a,
        )
    }
    /// The batch as a record stream, as read from one (so one row stays one bare map, as
    /// `msgpack_numpy.packb` writes it).
    fn records(b: &RecordBatch) -> String {
        let b = with_schema_md(b.clone(), "records", "stream");
        hex(&write_batches(std::slice::from_ref(&b), Layout::Records).unwrap())
    }
    fn with_schema_md(b: RecordBatch, layout: &str, container: &str) -> RecordBatch {
        let mut m = HashMap::new();
        m.insert(meta::LAYOUT.to_string(), layout.to_string());
        m.insert(meta::CONTAINER.to_string(), container.to_string());
        let s = Arc::new(b.schema().as_ref().clone().with_metadata(m));
        b.with_schema(s).unwrap()
    }

    #[test]
    fn records_plain_values() {
        // recs=[{'i':1,'f':1.5,'s':'ab','b':b'\x00\x01','t':True,'n':None},
        //       {'i':-200,'f':-0.0,'s':'x'*40,'b':b'','t':False,'n':None}]
        // b''.join(msgpack_numpy.packb(r) for r in recs)
        let want = "86a16901a166cb3ff8000000000000a173a26162a162c4020001a174c3a16ec086a169d1ff38a166cb8000000000000000a173d92878787878787878787878787878787878787878787878787878787878787878787878787878787878a162c400a174c2a16ec0";
        let x40 = "x".repeat(40);
        let b = batch(vec![
            col("i", Arc::new(Int64Array::from(vec![1, -200]))),
            col("f", Arc::new(Float64Array::from(vec![1.5, -0.0]))),
            col("s", Arc::new(StringArray::from(vec!["ab", x40.as_str()]))),
            col(
                "b",
                Arc::new(BinaryArray::from(vec![&b"\x00\x01"[..], b""])),
            ),
            col("t", Arc::new(BooleanArray::from(vec![true, false]))),
            col("n", Arc::new(NullArray::new(2))),
        ]);
        assert_eq!(records(&b), want);
        // The same through the chunked Writer, batch split in two, and with view types.
        let mut w = WriterBuilder::new().build(Vec::new(), b.schema()).unwrap();
        w.write(&b.slice(0, 1)).unwrap();
        w.write(&b.slice(1, 1)).unwrap();
        assert_eq!(hex(&w.finish().unwrap()), want);
        let v = batch(vec![
            col("i", Arc::new(Int64Array::from(vec![1, -200]))),
            col("f", Arc::new(Float64Array::from(vec![1.5, -0.0]))),
            col(
                "s",
                Arc::new(StringViewArray::from(vec!["ab", x40.as_str()])),
            ),
            col(
                "b",
                Arc::new(BinaryViewArray::from(vec![&b"\x00\x01"[..], b""])),
            ),
            col("t", Arc::new(BooleanArray::from(vec![true, false]))),
            col("n", Arc::new(NullArray::new(2))),
        ]);
        assert_eq!(records(&v), want);
    }

    #[test]
    fn values_stream_of_ints() {
        // b''.join(msgpack.packb(i) for i in [0,127,128,255,256,65535,65536,2**32-1,2**32,2**63-1,
        //   -1,-32,-33,-128,-129,-32768,-32769,-2**31,-2**31-1,-2**63])
        let want = "007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf7fffffffffffffffffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd38000000000000000";
        let v = vec![
            0i64,
            127,
            128,
            255,
            256,
            65535,
            65536,
            (1 << 32) - 1,
            1 << 32,
            i64::MAX,
            -1,
            -32,
            -33,
            -128,
            -129,
            -32768,
            -32769,
            -(1 << 31),
            -(1 << 31) - 1,
            i64::MIN,
        ];
        let b = batch(vec![col("value", Arc::new(Int64Array::from(v)))]);
        assert_eq!(
            hex(&write_batches(&[b.slice(0, 1), b.slice(1, 19)], Layout::Values).unwrap()),
            want
        );
        // msgpack.packb(2**64-1): plain ints (kind "int", as the reader marks them); one row that
        // is not an array stays bare
        let plain = Field::new("value", DataType::UInt64, true).with_metadata(
            std::collections::HashMap::from([(meta::KIND.to_string(), "int".to_string())]),
        );
        let u = RecordBatch::try_new(
            Arc::new(Schema::new(vec![plain])),
            vec![Arc::new(UInt64Array::from(vec![u64::MAX]))],
        )
        .unwrap();
        assert_eq!(
            hex(&write_batches(&[u], Layout::Values).unwrap()),
            "cfffffffffffffffff"
        );
        // without it (e.g. from Polars) the dtype goes along, or small values would read back
        // as Int64: msgpack_numpy.packb(np.uint64(2**64-1))
        let u = batch(vec![col(
            "value",
            Arc::new(UInt64Array::from(vec![u64::MAX])),
        )]);
        assert_eq!(
            hex(&write_batches(&[u], Layout::Values).unwrap()),
            "83c4026e64c2c40474797065a33c7538c40464617461c408ffffffffffffffff"
        );
    }

    #[test]
    fn tensors() {
        // b''.join(msgpack_numpy.packb({'v': np.arange(3, dtype='<f4') + i}) for i in range(2))
        let b = batch(vec![col(
            "v",
            fsl(
                Arc::new(Float32Array::from(vec![0., 1., 2., 1., 2., 3.])),
                3,
            ),
        )]);
        assert_eq!(records(&b), "81a17685c4026e64c3c40474797065a33c6634c4046b696e64c400c40573686170659103c40464617461c40c000000000000803f0000004081a17685c4026e64c3c40474797065a33c6634c4046b696e64c400c40573686170659103c40464617461c40c0000803f0000004000004040");

        // msgpack_numpy.packb({'m': np.arange(6, dtype='>i2').reshape(2, 3)})
        let m = fsl(
            fsl(Arc::new(Int16Array::from(vec![0, 1, 2, 3, 4, 5])), 3),
            2,
        );
        let b = batch(vec![col_md("m", m, "ndarray", ">i2")]);
        assert_eq!(records(&b), "81a16d85c4026e64c3c40474797065a33e6932c4046b696e64c400c4057368617065920203c40464617461c40c000000010002000300040005");

        // packb({'r': np.zeros((2,3),'<f8')}) + packb({'r': np.ones((1,3),'<f8')})
        let vals = Float64Array::from(vec![0., 0., 0., 0., 0., 0., 1., 1., 1.]);
        let r = list(list(Arc::new(vals), vec![0, 3, 6, 9]), vec![0, 2, 3]);
        let b = batch(vec![col_md("r", r, "ndarray", "<f8")]);
        assert_eq!(records(&b), "81a17285c4026e64c3c40474797065a33c6638c4046b696e64c400c4057368617065920203c40464617461c43000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000081a17285c4026e64c3c40474797065a33c6638c4046b696e64c400c4057368617065920103c40464617461c418000000000000f03f000000000000f03f000000000000f03f");

        // packb({'z': np.array(2.5, dtype='<f8')})  (0-d)
        let b = batch(vec![col_md(
            "z",
            Arc::new(Float64Array::from(vec![2.5])),
            "ndarray",
            "<f8",
        )]);
        assert_eq!(records(&b), "81a17a85c4026e64c3c40474797065a33c6638c4046b696e64c400c405736861706590c40464617461c4080000000000000440");

        // packb({'b': np.array([True, False])})
        let b = batch(vec![col(
            "b",
            fsl(Arc::new(BooleanArray::from(vec![true, false])), 2),
        )]);
        assert_eq!(records(&b), "81a16285c4026e64c3c40474797065a37c6231c4046b696e64c400c40573686170659102c40464617461c4020100");

        // packb({'t': np.array([[1, 2], [3, 4]], dtype='<i8')})
        let b = batch(vec![col(
            "t",
            fsl(fsl(Arc::new(Int64Array::from(vec![1, 2, 3, 4])), 2), 2),
        )]);
        assert_eq!(records(&b), "81a17485c4026e64c3c40474797065a33c6938c4046b696e64c400c4057368617065920202c40464617461c4200100000000000000020000000000000003000000000000000400000000000000");

        // packb({'c': np.array([1+2j, 3-4j], dtype='<c8')})
        let c = fsl(
            fsl(Arc::new(Float32Array::from(vec![1., 2., 3., -4.])), 2),
            2,
        );
        let b = batch(vec![col_md("c", c, "ndarray", "<c8")]);
        assert_eq!(records(&b), "81a16385c4026e64c3c40474797065a33c6338c4046b696e64c400c40573686170659102c40464617461c4100000803f0000004000004040000080c0");

        // packb({'u': np.array(['a', 'bcd'])})  (no metadata: '<U{max}')
        let b = batch(vec![col(
            "u",
            fsl(Arc::new(StringArray::from(vec!["a", "bcd"])), 2),
        )]);
        assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33c5533c4046b696e64c400c40573686170659102c40464617461c418610000000000000000000000620000006300000064000000");
    }

    #[test]
    fn ragged_empty_row_keeps_uniform_axes() {
        // msgpack_numpy.packb({'e': np.ones((2, 3), '<f4')}) + packb({'e': np.zeros((0, 3), '<f4')})
        // read as List(List(Float32)) with msgpack_numpy.shape = [null, 3]
        let e = list(
            list(Arc::new(Float32Array::from(vec![1.0; 6])), vec![0, 3, 6]),
            vec![0, 2, 2],
        );
        let mut m = md("ndarray", "<f4");
        m.insert(meta::SHAPE.to_string(), "[null,3]".to_string());
        let f = Field::new("e", e.data_type().clone(), true).with_metadata(m);
        let b = batch(vec![(f, e)]);
        let want = "81a16585c4026e64c3c40474797065a33c6634c4046b696e64c400c4057368617065920203c40464617461c4180000803f0000803f0000803f0000803f0000803f0000803f81a16585c4026e64c3c40474797065a33c6634c4046b696e64c400c4057368617065920003c40464617461c400";
        assert_eq!(records(&b), want);
    }

    #[test]
    fn tensor_null_row_and_slice() {
        let inner = Float32Array::from(vec![0., 1., 2., 9., 9., 9., 1., 2., 3.]);
        let a = FixedSizeListArray::try_new(
            item(DataType::Float32),
            3,
            Arc::new(inner),
            Some(NullBuffer::from(vec![true, false, true])),
        )
        .unwrap();
        let b = batch(vec![col("v", Arc::new(a))]);
        let out = records(&b);
        // Row 1 is null: {'v': None}
        assert!(out.contains("81a176c081a176"), "{out}");
        // A slice starts at the right element.
        let s = records(&b.slice(2, 1));
        assert!(s.ends_with("c40c0000803f0000004000004040"), "{s}");
    }

    #[test]
    fn scalars_and_complex() {
        // packb({'h': np.float16(1.5)})
        let b = batch(vec![col(
            "h",
            Arc::new(Float16Array::from(vec![half::f16::from_f32(1.5)])),
        )]);
        assert_eq!(
            records(&b),
            "81a16883c4026e64c2c40474797065a33c6632c40464617461c402003e"
        );
        // packb({'k': np.int32(5)})
        let b = batch(vec![col("k", Arc::new(Int32Array::from(vec![5])))]);
        assert_eq!(
            records(&b),
            "81a16b83c4026e64c2c40474797065a33c6934c40464617461c40405000000"
        );
        // packb({'c': np.complex128(1+2j)})
        let c = fsl(Arc::new(Float64Array::from(vec![1., 2.])), 2);
        let b = batch(vec![col_md("c", c, "scalar", "<c16")]);
        assert_eq!(records(&b), "81a16383c4026e64c2c40474797065a43c633136c40464617461c410000000000000f03f0000000000000040");
        // packb({'c': np.bool_(True)})
        let b = batch(vec![col_md(
            "c",
            Arc::new(BooleanArray::from(vec![true])),
            "scalar",
            "|b1",
        )]);
        assert_eq!(
            records(&b),
            "81a16383c4026e64c2c40474797065a37c6231c40464617461c40101"
        );
        // msgpack.packb({'a': 1.5}, use_single_float=True)  (a Float32 column is msgpack float32)
        let b = batch(vec![col("a", Arc::new(Float32Array::from(vec![1.5])))]);
        assert_eq!(records(&b), "81a161ca3fc00000");
        // packb({'c': 1+2j}), packb({'c': 1j}), packb({'c': complex(-0.0, -1)})
        let c = fsl(
            Arc::new(Float64Array::from(vec![1., 2., 0., 1., -0.0, -1.])),
            2,
        );
        let b = batch(vec![col_md("c", c, "complex", "")]);
        let want = [("(1+2j)"), ("1j"), ("(-0-1j)")]
            .iter()
            .map(|r| {
                let mut v = unhex("81a16382c407636f6d706c6578c3c40464617461");
                v.push(0xa0 | r.len() as u8);
                v.extend_from_slice(r.as_bytes());
                hex(&v)
            })
            .collect::<String>();
        assert_eq!(records(&b), want);
        // msgpack_numpy.packb({'c': 1+2j}) exactly:
        assert!(want.starts_with("81a16382c407636f6d706c6578c3c40464617461a6283"));
    }

    #[test]
    fn strings_bytes_dates() {
        // packb({'u': np.array('héllo', dtype='<U5')}) + packb({'u': np.array('ab', dtype='<U5')})
        let b = batch(vec![col_md(
            "u",
            Arc::new(StringArray::from(vec!["héllo", "ab"])),
            "ndarray",
            "<U5",
        )]);
        assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33c5535c4046b696e64c400c405736861706590c40464617461c41468000000e90000006c0000006c0000006f00000081a17585c4026e64c3c40474797065a33c5535c4046b696e64c400c405736861706590c40464617461c4146100000062000000000000000000000000000000");
        // packb({'u': np.array(['ab', 'c'], dtype='>U3')})
        let b = batch(vec![col_md(
            "u",
            fsl(Arc::new(StringArray::from(vec!["ab", "c"])), 2),
            "ndarray",
            ">U3",
        )]);
        assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33e5533c4046b696e64c400c40573686170659102c40464617461c418000000610000006200000000000000630000000000000000");
        // packb({'s': np.array(b'ab', dtype='|S3')})
        let b = batch(vec![col_md(
            "s",
            Arc::new(BinaryArray::from(vec![&b"ab"[..]])),
            "ndarray",
            "|S3",
        )]);
        assert_eq!(records(&b), "81a17385c4026e64c3c40474797065a37c5333c4046b696e64c400c405736861706590c40464617461c403616200");
        // Too long for the dtype: an error naming column and record.
        let b = batch(vec![col_md(
            "u",
            Arc::new(StringArray::from(vec!["ok", "toolong"])),
            "ndarray",
            "<U5",
        )]);
        let e = write_batches(&[b], Layout::Records).unwrap_err();
        assert_eq!(e.record(), Some(1));
        assert_eq!(e.path(), Some("u"));
        assert!(e.to_string().contains("<U5"), "{e}");

        // msgpack_numpy cannot pack datetime64 (no buffer protocol); the same map by hand:
        // a = np.array(np.datetime64('2020-01-01T00:00:00.000001'), dtype='<M8[us]')
        // msgpack.packb({b'nd': True, b'type': a.dtype.str, b'kind': b'', b'shape': list(a.shape),
        //                b'data': a.view('<i8').tobytes()}, use_bin_type=True), keyed 't', then NaT;
        // msgpack_numpy.unpackb gives back array('2020-01-01T00:00:00.000001', dtype='datetime64[us]').
        let t = TimestampMicrosecondArray::from(vec![Some(1_577_836_800_000_001), None]);
        let b = batch(vec![col_md("t", Arc::new(t), "ndarray", "<M8[us]")]);
        let want = "81a17485c4026e64c3c40474797065a73c4d385b75735dc4046b696e64c400c405736861706590c40464617461c4080140fac1089b050081a17485c4026e64c3c40474797065a73c4d385b75735dc4046b696e64c400c405736861706590c40464617461c4080000000000000080";
        assert_eq!(records(&b), want);
        // Without metadata a Timestamp(us) is the same 0-d '<M8[us]' ndarray; nulls stay nil.
        let t = TimestampMicrosecondArray::from(vec![Some(1_577_836_800_000_001), None]);
        let b = batch(vec![col("t", Arc::new(t))]);
        assert_eq!(records(&b), format!("{}81a174c0", &want[..want.len() / 2]));
        // '<M8[D]' from Date32 and from Timestamp(s) (how the reader stores D units).
        let d = batch(vec![col_md(
            "d",
            Arc::new(Date32Array::from(vec![18262])),
            "ndarray",
            "<M8[D]",
        )]);
        let s = batch(vec![col_md(
            "d",
            Arc::new(TimestampSecondArray::from(vec![18262 * 86400])),
            "ndarray",
            "<M8[D]",
        )]);
        assert_eq!(records(&d), records(&s));
        // a = np.array(np.datetime64('2020-01-01'), dtype='<M8[D]'); the map by hand as above:
        assert_eq!(records(&d), "81a16485c4026e64c3c40474797065a63c4d385b445dc4046b696e64c400c405736861706590c40464617461c4085647000000000000");
        let bad = batch(vec![col_md(
            "d",
            Arc::new(TimestampSecondArray::from(vec![5])),
            "ndarray",
            "<M8[D]",
        )]);
        assert!(write_batches(&[bad], Layout::Records)
            .unwrap_err()
            .to_string()
            .contains("whole number"));
    }

    #[test]
    fn utc_timestamps_are_ext() {
        // b''.join(msgpack.packb(msgpack.Timestamp.from_unix_nano(ns)) for ns in [...])
        let ns = vec![
            0,
            1_500_000_000_000_000_000,
            1_500_000_000_000_000_005,
            -1,
            -1_000_000_000,
        ];
        let a = TimestampNanosecondArray::from(ns).with_timezone("UTC");
        let b = batch(vec![col("value", Arc::new(a))]);
        assert_eq!(
            hex(&write_batches(&[b], Layout::Values).unwrap()),
            "d6ff00000000d6ff59682f00d7ff0000001459682f00c70cff3b9ac9ffffffffffffffffffc70cff00000000ffffffffffffffff"
        );
    }

    #[test]
    fn structured_dtypes() {
        // dt = np.dtype({'names':['a','b'],'formats':['<i4','<f8'],'offsets':[0,8],'itemsize':16})
        // s = np.zeros((), dtype=dt); s['a'] = 7; s['b'] = 2.5; msgpack_numpy.packb({'s': s})
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Float64, true),
        ]);
        let sa = StructArray::try_new(
            fields,
            vec![
                Arc::new(Int32Array::from(vec![7])),
                Arc::new(Float64Array::from(vec![2.5])),
            ],
            None,
        )
        .unwrap();
        let b = batch(vec![col_md(
            "s",
            Arc::new(sa),
            "ndarray",
            r#"[["a","<i4"],["","|V4"],["b","<f8"]]"#,
        )]);
        assert_eq!(records(&b), "81a17385c4026e64c3c404747970659392a161a33c693492a0a37c563492a162a33c6638c4046b696e64c40156c405736861706590c40464617461c41007000000000000000000000000000440");

        // dt2 = np.dtype([('a','>i2'),('c','<f4',(2,))]); s2 = np.zeros((2,), dtype=dt2)
        // s2['a'] = [1, 2]; s2['c'] = [[1, 2], [3, 4]]; msgpack_numpy.packb({'s': s2})
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int16, true),
            Field::new(
                "c",
                DataType::FixedSizeList(item(DataType::Float32), 2),
                true,
            ),
        ]);
        let sa = StructArray::try_new(
            fields,
            vec![
                Arc::new(Int16Array::from(vec![1, 2])),
                fsl(Arc::new(Float32Array::from(vec![1., 2., 3., 4.])), 2),
            ],
            None,
        )
        .unwrap();
        let b = batch(vec![col_md(
            "s",
            fsl(Arc::new(sa), 2),
            "ndarray",
            r#"[["a",">i2"],["c","<f4",[2]]]"#,
        )]);
        assert_eq!(records(&b), "81a17385c4026e64c3c404747970659292a161a33e693293a163a33c66349102c4046b696e64c40156c40573686170659102c40464617461c41400010000803f0000004000020000404000008040");
    }

    #[test]
    fn maps_and_lists() {
        // packb({'s': {'a': 1, 'b': 'x'}, 'l': [1, 2, 3]}) + packb({'s': None, 'l': []})
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]);
        let sa = StructArray::try_new(
            fields,
            vec![
                Arc::new(Int64Array::from(vec![1, 0])),
                Arc::new(StringArray::from(vec!["x", ""])),
            ],
            Some(NullBuffer::from(vec![true, false])),
        )
        .unwrap();
        let l = list(Arc::new(Int64Array::from(vec![1, 2, 3])), vec![0, 3, 3]);
        let b = batch(vec![col("s", Arc::new(sa)), col("l", l)]);
        assert_eq!(
            records(&b),
            "82a17382a16101a162a178a16c9301020382a173c0a16c90"
        );
        // Dictionary columns write the values they point to.
        let d: DictionaryArray<Int32Type> = vec!["x", "y", "x"].into_iter().collect();
        let b = batch(vec![col("d", Arc::new(d))]);
        assert_eq!(records(&b), "81a164a17881a164a17981a164a178");
        // Unsupported types name the column.
        let dec = Decimal128Array::from(vec![1])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let e = write_batches(&[batch(vec![col("money", Arc::new(dec))])], Layout::Records)
            .unwrap_err();
        assert_eq!(e.path(), Some("money"));
        assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{e}");
    }

    #[test]
    fn columns_and_values_containers() {
        // msgpack_numpy.packb({'x': np.arange(12, dtype='<f4').reshape(4, 3)})
        let want = "81a17885c4026e64c3c40474797065a33c6634c4046b696e64c400c4057368617065920403c40464617461c430000000000000803f0000004000004040000080400000a0400000c0400000e04000000041000010410000204100003041";
        let vals: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let b = batch(vec![col("x", fsl(Arc::new(Float32Array::from(vals)), 3))]);
        assert_eq!(
            hex(&write_batches(std::slice::from_ref(&b), Layout::Columns).unwrap()),
            want
        );
        // Several batches still make one map.
        assert_eq!(
            hex(&write_batches(&[b.slice(0, 1), b.slice(1, 3)], Layout::Columns).unwrap()),
            want
        );
        // Layout::Auto follows the schema metadata (as the reader sets it, with field metadata).
        let x = b.column(0).clone();
        let auto = with_schema_md(
            batch(vec![col_md("x", x, "ndarray", "<f4")]),
            "columns",
            "stream",
        );
        assert_eq!(hex(&write_batches(&[auto], Layout::Auto).unwrap()), want);

        // msgpack_numpy.packb(np.arange(5, dtype='<i8'))  (values layout, one bare ndarray)
        let want = "85c4026e64c3c40474797065a33c6938c4046b696e64c400c40573686170659105c40464617461c42800000000000000000100000000000000020000000000000003000000000000000400000000000000";
        let b = with_schema_md(
            batch(vec![col(
                "value",
                Arc::new(Int64Array::from(vec![0, 1, 2, 3, 4])),
            )]),
            "values",
            "ndarray",
        );
        assert_eq!(
            hex(&write_batches(&[b.slice(0, 2), b.slice(2, 3)], Layout::Values).unwrap()),
            want
        );

        // A values stream of one ndarray row would read back as its axis 0: written as [value].
        let one = batch(vec![col(
            "value",
            fsl(Arc::new(Float32Array::from(vec![0., 1., 2.])), 3),
        )]);
        let out = write_batches(&[one], Layout::Values).unwrap();
        assert_eq!(out[0], 0x91);
        assert_eq!(out[1], 0x85);
        // container "array": one top-level array of rows
        let b = with_schema_md(
            batch(vec![col("value", Arc::new(Int64Array::from(vec![1, 2])))]),
            "values",
            "array",
        );
        assert_eq!(hex(&write_batches(&[b], Layout::Auto).unwrap()), "920102");
        let r = with_schema_md(
            batch(vec![col("a", Arc::new(Int64Array::from(vec![1, 2])))]),
            "records",
            "array",
        );
        assert_eq!(
            hex(&write_batches(std::slice::from_ref(&r), Layout::Auto).unwrap()),
            "9281a1610181a16102"
        );
        // The container of another layout does not apply.
        assert_eq!(hex(&write_batches(&[r], Layout::Values).unwrap()), "0102");
        // A column with nulls in columns layout is a list.
        let n = batch(vec![col(
            "a",
            Arc::new(Float64Array::from(vec![Some(1.0), None])),
        )]);
        assert_eq!(
            hex(&write_batches(&[n], Layout::Columns).unwrap()),
            "81a16192cb3ff0000000000000c0"
        );
        // msgpack_numpy.packb({'a': [1, 2, 3], 'b': ['x', 'y', 'z'], 'c': np.arange(3.0)}) as the
        // reader gives it back: only the ndarray column carries metadata, the lists stay lists.
        let c = with_schema_md(
            batch(vec![
                col("a", Arc::new(Int64Array::from(vec![1, 2, 3]))),
                col("b", Arc::new(StringArray::from(vec!["x", "y", "z"]))),
                col_md(
                    "c",
                    Arc::new(Float64Array::from(vec![0., 1., 2.])),
                    "ndarray",
                    "<f8",
                ),
            ]),
            "columns",
            "stream",
        );
        assert_eq!(
            hex(&write_batches(&[c], Layout::Auto).unwrap()),
            "83a16193010203a16293a178a179a17aa16385c4026e64c3c40474797065a33c6638c4046b696e64c400c40573686170659103c40464617461c4180000000000000000000000000000f03f0000000000000040"
        );
        // An empty input reads as a values table without columns: it writes an empty file.
        let empty = with_schema_md(
            RecordBatch::new_empty(Arc::new(Schema::empty())),
            "values",
            "stream",
        );
        let w = WriterBuilder::new()
            .with_layout(Layout::Auto)
            .build(Vec::new(), empty.schema())
            .unwrap();
        assert!(w.finish().unwrap().is_empty());
        // Values layout needs exactly one column.
        let two = batch(vec![
            col("a", Arc::new(Int64Array::from(vec![1]))),
            col("b", Arc::new(Int64Array::from(vec![1]))),
        ]);
        assert!(write_batches(&[two], Layout::Values).is_err());
    }

    /// Offsets of every ndarray payload in `buf` (a msgpack walker, for the aligned tests).
    fn nd_payloads(buf: &[u8]) -> Vec<(usize, usize)> {
        fn be(b: &[u8]) -> usize {
            b.iter().fold(0, |a, &x| (a << 8) | x as usize)
        }
        // Returns the end of the value at `p`; records payloads of maps with keys nd and data.
        fn walk(b: &[u8], p: usize, found: &mut Vec<(usize, usize)>) -> usize {
            let m = b[p];
            let (hdr, len, kind) = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => return p + 1,
                0x80..=0x8f => (1, (m & 15) as usize, 'm'),
                0x90..=0x9f => (1, (m & 15) as usize, 'a'),
                0xa0..=0xbf => return p + 1 + (m & 31) as usize,
                0xcc | 0xd0 => return p + 2,
                0xcd | 0xd1 => return p + 3,
                0xce | 0xd2 | 0xca => return p + 5,
                0xcf | 0xd3 | 0xcb => return p + 9,
                0xc4 | 0xd9 => return p + 2 + b[p + 1] as usize,
                0xc5 | 0xda => return p + 3 + be(&b[p + 1..p + 3]),
                0xc6 | 0xdb => return p + 5 + be(&b[p + 1..p + 5]),
                0xd6 => return p + 6,
                0xd7 => return p + 10,
                0xc7 => return p + 3 + b[p + 1] as usize,
                0xdc => (3, be(&b[p + 1..p + 3]), 'a'),
                0xdd => (5, be(&b[p + 1..p + 5]), 'a'),
                0xde => (3, be(&b[p + 1..p + 3]), 'm'),
                0xdf => (5, be(&b[p + 1..p + 5]), 'm'),
                _ => panic!("marker {m:#x} at {p}"),
            };
            let mut q = p + hdr;
            if kind == 'a' {
                for _ in 0..len {
                    q = walk(b, q, found);
                }
                return q;
            }
            let mut is_nd = false;
            let mut data = None;
            for _ in 0..len {
                let k0 = q;
                q = walk(b, q, found);
                let key = &b[k0..q];
                let key = &key[key.len().saturating_sub(4)..];
                let v0 = q;
                q = walk(b, q, found);
                if key.ends_with(b"nd") && b[v0] == 0xc3 {
                    is_nd = true;
                }
                if key == b"data" && matches!(b[v0], 0xc4..=0xc6) {
                    let h = match b[v0] {
                        0xc4 => 2,
                        0xc5 => 3,
                        _ => 5,
                    };
                    data = Some((v0 + h, q - v0 - h));
                }
            }
            if let (true, Some(d)) = (is_nd, data) {
                found.push(d);
            }
            q
        }
        let mut found = Vec::new();
        let mut p = 0;
        while p < buf.len() {
            p = walk(buf, p, &mut found);
        }
        found
    }

    fn bench_like(n: usize, dim: usize) -> RecordBatch {
        let ids = Int64Array::from((0..n as i64).map(|i| i * 7919 - 3000).collect::<Vec<_>>());
        let labels = StringArray::from((0..n).map(|i| "label".repeat(i % 9)).collect::<Vec<_>>());
        let scores = Float64Array::from((0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>());
        let emb = Float32Array::from((0..n * dim).map(|i| (i % 97) as f32).collect::<Vec<_>>());
        batch(vec![
            col("id", Arc::new(ids)),
            col("label", Arc::new(labels)),
            col("score", Arc::new(scores)),
            col("emb", fsl(Arc::new(emb), dim as i32)),
        ])
    }

    #[test]
    fn aligned_records_put_every_payload_on_64() {
        for dim in [3usize, 768] {
            let b = bench_like(200, dim);
            let mut w = WriterBuilder::new()
                .with_aligned(true)
                .build(Vec::new(), b.schema())
                .unwrap();
            w.write(&b.slice(0, 77)).unwrap();
            w.write(&b.slice(77, 123)).unwrap();
            let out = w.finish().unwrap();
            let found = nd_payloads(&out);
            assert_eq!(found.len(), 200);
            for (off, len) in &found {
                assert_eq!(off % 64, 0, "dim {dim}: payload at {off}");
                assert_eq!(*len, dim * 4);
            }
            // Same values as the unaligned output: only encodings are wider.
            let plain = write_batches(std::slice::from_ref(&b), Layout::Records).unwrap();
            let plain_found = nd_payloads(&plain);
            for ((a, l), (p, _)) in found.iter().zip(&plain_found) {
                assert_eq!(out[*a..a + l], plain[*p..p + l]);
            }
            assert!(out.len() > plain.len());
        }
    }

    #[test]
    fn aligned_other_layouts_reach_at_least_8() {
        // Ragged tensors, a 2-d tensor first in the record, bare ndarrays in a values stream,
        // and the columns map.
        let vals = Float64Array::from((0..60).map(|i| i as f64).collect::<Vec<_>>());
        let r = list(
            list(Arc::new(vals), (0..=20).map(|i| i * 3).collect()),
            vec![0, 2, 3, 7, 8, 12, 20],
        );
        let m = fsl(
            fsl(
                Arc::new(Int16Array::from(
                    (0..36).map(|i| i as i16).collect::<Vec<_>>(),
                )),
                3,
            ),
            2,
        );
        let b = batch(vec![
            col_md("m", m, "ndarray", ">i2"),
            col_md("r", r, "ndarray", "<f8"),
        ]);
        for layout in [Layout::Records, Layout::Columns] {
            let mut w = WriterBuilder::new()
                .with_layout(layout)
                .with_aligned(true)
                .build(Vec::new(), b.schema())
                .unwrap();
            w.write(&b).unwrap();
            let out = w.finish().unwrap();
            let found = nd_payloads(&out);
            assert!(!found.is_empty());
            for (off, _) in &found {
                assert_eq!(off % 8, 0, "{layout:?}: {off}");
            }
        }
        let v = batch(vec![col(
            "value",
            fsl(
                Arc::new(Float32Array::from(
                    (0..300).map(|i| i as f32).collect::<Vec<_>>(),
                )),
                3,
            ),
        )]);
        let mut w = WriterBuilder::new()
            .with_layout(Layout::Values)
            .with_aligned(true)
            .build(Vec::new(), v.schema())
            .unwrap();
        w.write(&v).unwrap();
        let out = w.finish().unwrap();
        let found = nd_payloads(&out);
        assert_eq!(found.len(), 100);
        assert!(found.iter().all(|(o, _)| o % 8 == 0));
        assert!(found.iter().filter(|(o, _)| o % 64 == 0).count() >= 50);
    }
}

#[cfg(test)]
mod null_elements {
    use super::*;
    use arrow_array::{Array, FixedSizeListArray, Float32Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn a_null_inside_an_array_value_is_an_error_not_zero() {
        let vals = Float32Array::from(vec![Some(1.0), None, Some(3.0), Some(4.0)]);
        let col = FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float32, true)),
            2,
            Arc::new(vals),
            None,
        );
        let schema = Arc::new(Schema::new(vec![Field::new(
            "emb",
            col.data_type().clone(),
            true,
        )]));
        let b = RecordBatch::try_new(schema, vec![Arc::new(col)]).unwrap();
        for layout in [Layout::Records, Layout::Columns, Layout::Values] {
            let e = write_batches(std::slice::from_ref(&b), layout).unwrap_err();
            assert!(
                e.to_string().contains("ndarrays cannot hold nulls"),
                "{layout}: {e}"
            );
            assert_eq!(e.record(), Some(0), "{layout}: {e}");
            assert_eq!(e.path(), Some("emb"), "{layout}: {e}");
        }
    }
}

#[cfg(test)]
mod per_row {
    use super::*;
    use arrow_array::builder::{Int64Builder, ListBuilder};
    use arrow_array::{
        Array, FixedSizeListArray, Float32Array, Int64Array, StringArray, StructArray,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    /// Each blob is what the records layout writes as the value of key "v" in that row's map.
    fn check(col: ArrayRef) {
        let field = Field::new("v", col.data_type().clone(), true);
        let blobs = encode_values_per_row(&field, &col).unwrap();
        assert_eq!(blobs.len(), col.len());
        // a record stream (as read from one): one row stays one bare map
        let md = std::collections::HashMap::from([
            (meta::LAYOUT.to_string(), "records".to_string()),
            (meta::CONTAINER.to_string(), "stream".to_string()),
        ]);
        let schema = Arc::new(Schema::new_with_metadata(vec![field], md));
        let b = RecordBatch::try_new(schema, vec![col.clone()]).unwrap();
        for row in 0..col.len() {
            if col.is_null(row) {
                assert!(blobs.is_null(row), "row {row}");
                continue;
            }
            let rec = write_batches(&[b.slice(row, 1)], Layout::Records).unwrap();
            // 0x81 (map of 1), 0xa1 'v' (the key), then the value
            assert_eq!(&rec[..3], b"\x81\xa1v");
            assert_eq!(
                blobs.value(row),
                &rec[3..],
                "row {row} of {}",
                col.data_type()
            );
        }
    }

    #[test]
    fn one_blob_per_row() {
        check(Arc::new(Int64Array::from(vec![
            Some(1),
            None,
            Some(-70000),
        ])));
        check(Arc::new(StringArray::from(vec![None, Some("é"), Some("")])));
        let vals = Float32Array::from((0..6).map(|i| i as f32).collect::<Vec<_>>());
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        check(Arc::new(FixedSizeListArray::new(
            item,
            2,
            Arc::new(vals),
            Some(NullBuffer::from(vec![true, false, true])),
        )));
        let mut lb = ListBuilder::new(Int64Builder::new());
        lb.append_value([Some(1), None]);
        lb.append_null();
        lb.append_value([]);
        check(Arc::new(lb.finish()));
        let s = StructArray::try_new(
            vec![
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(Field::new("b", DataType::Utf8, true)),
            ]
            .into(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
                Arc::new(StringArray::from(vec![Some("x"), None])),
            ],
            Some(NullBuffer::from(vec![true, false])),
        )
        .unwrap();
        check(Arc::new(s));
        // an all-null column: null blobs, nothing encoded
        let blobs = encode_values_per_row(
            &Field::new("v", DataType::Null, true),
            &(Arc::new(arrow_array::NullArray::new(2)) as ArrayRef),
        )
        .unwrap();
        assert_eq!(blobs.null_count(), 2);
        assert!(blobs.values().is_empty());
    }

    #[test]
    fn errors_name_the_row() {
        let vals = Float32Array::from(vec![Some(1.0), Some(2.0), None, Some(4.0)]);
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let col: ArrayRef = Arc::new(FixedSizeListArray::new(item, 2, Arc::new(vals), None));
        let e = encode_values_per_row(&Field::new("emb", col.data_type().clone(), true), &col)
            .unwrap_err();
        assert_eq!(e.record(), Some(1), "{e}");
        assert_eq!(e.path(), Some("emb"), "{e}");
    }
}
