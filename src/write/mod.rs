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

pub(crate) mod access;
mod aligned;
pub(crate) mod canonical;
mod columns;
mod elements;
mod encoder;
mod ndarray;
pub mod parts;
mod ragged;
mod tensor;

use std::io::Write;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};

use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, Layout, Missing};
use crate::types::arrow::record_batch;
use crate::types::layout::{is_columns_map, ValueForm};
use crate::types::{extension, meta};

use crate::wire::spelling::Spelling;
use crate::wire::write::{self as wire, Out};
use aligned::{encode_aligned, Item, Segment};
use columns::{column_encoder, ColumnNd};
use encoder::structs::{bring_unwritten, field_nulls};
use encoder::{make_encoder, make_top_encoder, ColumnEncoder};
pub use parts::{Counter, Parts, SliceSink, Writers, PARTS_MIN_BYTES, SAMPLE_ROWS};
pub use ragged::mark_ragged_ndarrays;

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
    /// per column, whether the whole table holds a value in it ([`WriterBuilder::with_table`])
    valued: Option<Arc<Vec<bool>>>,
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
            valued: None,
        }
    }

    /// The whole table that will be written, when it is at hand: where nulls leave keys out
    /// ([`Missing`]), a column with no value in one batch is written as nil (once, so it does not
    /// vanish) only if no batch of the table has a value in it. Without this, each batch decides
    /// alone, and a column whose first value comes in a later batch gets a nil in the first.
    pub fn with_table(mut self, batches: &[RecordBatch]) -> Self {
        let n = batches.first().map_or(0, |b| b.num_columns());
        let valued = (0..n)
            .map(|c| {
                batches.iter().any(|b| {
                    let col = b.column(c);
                    col.logical_nulls().is_none_or(|n| n.null_count() < n.len()) && !col.is_empty()
                })
            })
            .collect();
        self.valued = Some(Arc::new(valued));
        self
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

    /// A writer that only measures: it encodes as [`WriterBuilder::build`]'s would, keeps no
    /// bytes, and counts ndarray payloads of fixed-width elements without copying them (for a
    /// tensor table, most of the output). [`Writer::finish_count`] gives the size, so that the
    /// output can be allocated once, at its size, before it is written.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{Int64Array, RecordBatch};
    /// # use arrow_schema::{DataType, Field, Schema};
    /// # fn main() -> msgpack_arrow::Result<()> {
    /// use msgpack_arrow::WriterBuilder;
    /// let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    /// let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 300]))])?;
    /// let mut count = WriterBuilder::new().build_count(schema.clone())?;
    /// count.write(&batch)?;
    /// let mut w = WriterBuilder::new().build(Vec::new(), schema)?;
    /// w.write(&batch)?;
    /// assert_eq!(count.finish_count()?, w.finish()?.len() as u64);
    /// # Ok(()) }
    /// ```
    pub fn build_count(self, schema: SchemaRef) -> Result<Writer<ByteCount>> {
        let mut w = self.build(ByteCount(0), schema)?;
        w.out.count_only = true;
        Ok(w)
    }

    /// A writer of batches with this schema into `w`.
    pub fn build<W: Write>(self, w: W, schema: SchemaRef) -> Result<Writer<W>> {
        // a schema from one of our Parquet files, read by another reader: each field's metadata
        let schema = match crate::types::shared_metadata::expand(&schema) {
            Some(s) => Arc::new(s),
            None => schema,
        };
        // columns of a Polars frame read with the numpy extension: their metadata goes back on
        let (schema, retype) = match extension::unwrap(&schema)? {
            Some(s) => (Arc::new(s), true),
            None => (schema, false),
        };
        // canonical tensor extensions: written as the nested lists of their shape
        let (schema, canon) = canonical::schema(schema)?;
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
        let seg = Segment::new(schema.fields().iter().map(|f| bin_key(f)).collect());
        let openpi = match self.dialect {
            Dialect::Openpi => true,
            Dialect::MsgpackNumpy => false,
            // aligned output exists only in msgpack-numpy's form: asking for it chooses that
            Dialect::Auto => {
                !self.aligned && md.get(meta::DIALECT).map(String::as_str) == Some("openpi")
            }
            Dialect::Js | Dialect::Flax => {
                return Err(Error::new(ErrorKind::Unsupported(format!(
                    "the {} dialect is read only; write msgpack-numpy or openpi",
                    if self.dialect == Dialect::Js {
                        "msgpack-numpy-js"
                    } else {
                        "Flax"
                    }
                ))))
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
        // the spelling of the file read (old packers'), unless a form was asked for
        if self.dialect == Dialect::Auto && !openpi && !self.aligned {
            if let Some(v) = md.get(meta::SPELLING) {
                out.spelling = Spelling::from_meta(v);
            }
        }
        let omit = match self.missing {
            Missing::Omit => true,
            Missing::Nil => false,
            Missing::Auto => md.get(meta::MISSING).map(String::as_str) == Some("absent"),
        };
        // per column, whether null fields of its nested maps are left out
        let names = || schema.fields().iter().map(|f| f.name().as_str());
        let omit_nested = match (self.missing, md.get(meta::MISSING_NESTED)) {
            (Missing::Omit, _) => vec![true; schema.fields().len()],
            (Missing::Auto, Some(v)) => meta::nested_columns_named(v, names()),
            _ => vec![false; schema.fields().len()],
        };
        Ok(Writer {
            omit,
            omit_nested,
            nested_written: Vec::new(),
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
            written: Vec::new(),
            valued: self.valued,
            retype,
            canon,
        })
    }
}

/// The sink of [`WriterBuilder::build_count`]: counts the bytes it is given, keeps none.
#[derive(Debug, Default)]
pub struct ByteCount(u64);

impl Write for ByteCount {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes [`RecordBatch`]es as msgpack-numpy. Call [`Writer::finish`] at the end: some containers
/// (a top-level array, the `columns` map, a bare ndarray) are only written then, because their
/// headers hold the total row count.
pub struct Writer<W: Write> {
    w: W,
    /// records: a null leaves its key out ([`Missing`])
    omit: bool,
    /// records: per column, a null field of a map inside it leaves its key out ([`Missing`])
    omit_nested: Vec<bool>,
    /// with `omit_nested`: per column, the nested fields written so far
    nested_written: Vec<encoder::structs::Written>,
    /// per column, whether the whole table has a value in it ([`WriterBuilder::with_table`])
    valued: Option<Arc<Vec<bool>>>,
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
    /// records with [`Missing::Omit`]: which columns' keys were written so far
    written: Vec<bool>,
    /// the schema was unwrapped from the numpy extension: batches get its nested field metadata
    retype: bool,
    /// per column, a canonical tensor extension converted to nested lists (empty: none)
    canon: Vec<Option<canonical::Canon>>,
}

impl Writer<ByteCount> {
    /// Bytes counted so far (rows a container holds back until `finish` not yet among them).
    pub fn counted(&self) -> u64 {
        self.out.pos()
    }

    /// Of [`Writer::counted`], the ndarray payload bytes counted without being copied: what a
    /// count saves against the write itself.
    pub fn uncopied(&self) -> u64 {
        self.out.elided
    }

    /// [`Writer::finish`] for the writer of [`WriterBuilder::build_count`]: the number of bytes
    /// the output has.
    pub fn finish_count(mut self) -> Result<u64> {
        self.finish_encoding()?;
        Ok(self.out.pos())
    }
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
        let retyped;
        let batch = if self.retype {
            retyped = self.retyped(batch)?;
            &retyped
        } else {
            batch
        };
        let converted;
        let batch = if self.canon.is_empty() {
            batch
        } else {
            converted = canonical::batch(&self.schema, &self.canon, batch, self.rows)?;
            &converted
        };
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

    /// A batch of the wrapped schema in the unwrapped one (the same buffers).
    fn retyped(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let fields = self.schema.fields();
        if batch.num_columns() != fields.len() {
            return Ok(batch.clone()); // `check` names the difference
        }
        let cols = batch
            .columns()
            .iter()
            .zip(fields)
            .map(|(c, f)| extension::retype(c, f.data_type()))
            .collect();
        record_batch(&self.schema, cols, batch.num_rows())
    }

    /// The field column `i` of `batch` is encoded with: the writer's, or for a canonical tensor
    /// column the batch's own (it carries the batch's empty-row shapes).
    fn field_of<'a>(&'a self, batch: &'a RecordBatch, i: usize) -> &'a Field {
        match self.canon.get(i) {
            Some(Some(_)) => batch.schema_ref().field(i),
            _ => self.schema.field(i),
        }
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
            // (field metadata may differ: a table's own schema marked for writing, such as
            // `mark_ragged_ndarrays`' struct fields)
            if !crate::types::arrow::same_but_metadata(f.data_type(), b.data_type()) {
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
            // a bare ndarray's rows are its axis 0 (a 0-d one, complex included, is one row)
            let is_nd = matches!(
                enc.form(0)
                    .map_err(|e| e.at_record(0).prepend_path(field.name()))?,
                ValueForm::Ndarray(_)
            ) && matches!(
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
        batch
            .columns()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let f = self.field_of(batch, i);
                make_top_encoder(f, c, row0).map_err(|e| e.prepend_path(f.name()))
            })
            .collect()
    }

    fn ensure_keys(&mut self) {
        if self.keys.is_empty() && !self.schema.fields().is_empty() {
            let sp = self.out.spelling;
            self.keys = self
                .schema
                .fields()
                .iter()
                .map(|f| {
                    let mut k = Vec::with_capacity(f.name().len() + 1);
                    write_key(&mut k, f, sp);
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
        if self.omit_nested.contains(&true) {
            // (which nested fields were written carries over from the batches before)
            self.nested_written
                .resize_with(encs.len(), Default::default);
            let cols = encs.iter_mut().zip(&self.nested_written);
            for ((e, w), _) in cols.zip(&self.omit_nested).filter(|(_, &o)| o) {
                e.omit_absent(w, None);
            }
        }
        let ncols = encs.len();
        let mut hdr = Vec::with_capacity(5);
        wire::map_hdr(&mut hdr, ncols);
        let keys_len: usize = self.keys.iter().map(|k| k.len()).sum();
        let hint = encs.iter().map(|e| e.size_hint()).sum::<usize>()
            + batch.num_rows() * (keys_len + hdr.len());
        self.reserve(hint);
        let names = self.schema.fields().clone();
        // Missing::Omit: which cells are null (Null columns too), so their keys are left out
        // and columns with no value in this batch (Null columns, or typed ones Polars made of them)
        let (nulls, mut no_value) = match self.omit {
            true => field_nulls(batch.columns(), None),
            false => (Vec::new(), Vec::new()),
        };
        // (a column with a value in a later batch appears there, where a reader first saw it)
        if let Some(v) = self.valued.as_ref().filter(|v| v.len() == no_value.len()) {
            no_value
                .iter_mut()
                .zip(v.iter())
                .for_each(|(n, v)| *n &= !v);
        }
        if self.written.len() != ncols {
            self.written = vec![false; ncols];
        }
        // once every key was written, a row's keys are its valid cells
        let mut all_written = self.written.iter().all(|&w| w);
        let mut present = vec![true; ncols];
        // aligned: rows with no ndarray anywhere are written as they would be unaligned (every
        // item in its smallest form); holding them back to widen was 6x the plain write
        let align = self.out.align && encs.iter().any(|e| e.may_nd());
        for row in 0..batch.num_rows() {
            let rec = row0 + row as u64;
            let fail = |c: usize, e: Error| e.at_record(rec).prepend_path(names[c].name());
            let n_here = if self.omit {
                // A reader orders columns by first appearance. A key seen for the first time
                // brings the keys before it in the schema that were never written, as nil, so
                // they still come first; a column with no value in the batch, never written yet,
                // could otherwise vanish: its nil goes in the first record where every column
                // before it has appeared.
                for (c, p) in present.iter_mut().enumerate() {
                    *p = nulls[c].as_ref().is_none_or(|n| n.is_valid(row));
                }
                if !all_written {
                    all_written = bring_unwritten(&mut present, &mut self.written, &no_value);
                }
                present.iter().filter(|&&p| p).count()
            } else {
                ncols
            };
            if align {
                self.seg.items.push(Item::MapHdr(n_here));
                for (c, enc) in encs.iter_mut().enumerate() {
                    if !present[c] {
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
                    if !present[c] {
                        continue;
                    }
                    self.out.buf.extend_from_slice(&self.keys[c]);
                    enc.encode(row, &mut self.out).map_err(|e| fail(c, e))?;
                }
            }
            self.flush_if(self.flush_at)?;
        }
        if self.omit_nested.contains(&true) {
            for (e, w) in encs.iter().zip(&mut self.nested_written) {
                e.omit_written(w);
            }
        }
        Ok(())
    }

    /// One value per row (the single column).
    fn encode_values(&mut self, batch: &RecordBatch, row0: u64) -> Result<()> {
        let field = self.field_of(batch, 0).clone();
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
                let sp = self.out.spelling;
                write_key(&mut self.out.buf, &names[c], sp);
                // to the sink as it is encoded: neither the map nor a column's payload is held
                // whole beside the table
                let (w, at) = (&mut self.w, self.flush_at);
                enc.encode_flushing(0, &mut self.out, &mut |out| flush_out(w, out, at))
                    .map_err(|e| fail(c, e))?;
                self.flush_if(self.flush_at)?;
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
        let at = if self.flush_at == usize::MAX {
            usize::MAX
        } else {
            1
        };
        flush_out(&mut self.w, &mut self.out, at)
    }
}

/// Hand what `out` holds to `w` once it holds `at` bytes or more (`usize::MAX`: the output is
/// held whole, never handed on).
fn flush_out<W: Write>(w: &mut W, out: &mut Out, at: usize) -> Result<()> {
    if at == usize::MAX || out.buf.is_empty() || out.buf.len() < at {
        return Ok(());
    }
    w.write_all(&out.buf)?;
    out.base += out.buf.len() as u64;
    out.buf.clear();
    Ok(())
}

/// Whether a column's key is written as bin: the file read had it so ([`meta::KEY`]).
fn bin_key(f: &Field) -> bool {
    f.metadata().get(meta::KEY).map(String::as_str) == Some("bin")
}

/// The key of a column or a struct's field: str (in spelling `sp`), or bin ([`bin_key`]).
pub(crate) fn write_key(b: &mut Vec<u8>, f: &Field, sp: Spelling) {
    if bin_key(f) {
        wire::bin(b, f.name().as_bytes())
    } else {
        sp.str(b, f.name())
    }
}

/// Rows `start..start + n` of the table made of `batches`, as slices of them (zero-copy; fewer
/// rows where the table ends first).
pub fn slice_rows(batches: &[RecordBatch], start: usize, n: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut at = 0;
    let end = start.saturating_add(n);
    for b in batches {
        let (lo, hi) = (start.max(at), end.min(at + b.num_rows()));
        if lo < hi {
            out.push(b.slice(lo - at, hi - lo));
        }
        at += b.num_rows();
    }
    out
}

/// Encode batches into one buffer (layout as [`WriterBuilder::with_layout`]; not aligned).
pub fn write_batches(batches: &[RecordBatch], layout: Layout) -> Result<Vec<u8>> {
    let Some(first) = batches.first() else {
        return Ok(Vec::new());
    };
    // a big stream of ndarray rows: its parts on every thread at once
    if let Some(out) = parts::write_at_once(batches, &first.schema(), layout)? {
        return Ok(out);
    }
    let mut w = WriterBuilder::new()
        .with_layout(layout)
        .with_table(batches)
        .build(std::io::sink(), first.schema())?;
    // Encode straight into the final buffer, reserved once (no chunk copies).
    w.flush_at = usize::MAX;
    // (the data the rows use: a column decoded without a copy sits in the whole input)
    let estimate: usize = batches
        .iter()
        .map(|b| crate::types::arrow::data_bytes(b) + b.num_rows() * 16)
        .sum();
    w.out.buf.reserve(estimate);
    let spare = w.out.buf.spare_capacity_mut();
    crate::types::buffers::advise_huge_range(spare.as_mut_ptr().cast(), spare.len());
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
mod tests;
