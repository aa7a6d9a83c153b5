//! The reader: msgpack-numpy bytes → Arrow `RecordBatch`es.
//!
//! # Layouts (SPEC §2) and the `auto` rule
//! `auto` looks at the first object of the file:
//! - a map whose values are all ndarrays (ndim ≥ 1) or lists, all of one length, and which is the
//!   only object in the file → `columns`;
//! - any other map (not an ndarray) → `records`;
//! - a top-level array that is the only object → its elements are the rows: `records` when the
//!   first element is a map, else `values`;
//! - one bare ndarray (ndim ≥ 1), the only object → `values`, its axis 0 are the rows;
//! - anything else → `values`, one row per object.
//!
//! An empty file or a top-level `[]` is an empty table with no columns.

pub(crate) mod array;
mod blobs;
mod columns;
mod decoder;
pub(crate) mod infer;
mod plan;
mod rows;
mod source;
mod stream;

use self::columns::decode_columns;
pub use self::decoder::Decoder;
use self::plan::{plan, plan_first, Container, Plan, MAX_CHUNKS};
use self::rows::{batch, Limit, Parallel, RowDecoder, RowsReader};
use self::source::mmap_buffer;
use self::stream::{StreamReader, StreamRows};
use crate::wire::sniff::{not_msgpack_message, sniff, SNIFF_LEN};

use std::io::Read;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};

use self::array::Ctx;
use self::infer::InferOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::options::{Conflicts, Dialect, Layout, Lists, ObjectArrays, OnTruncated, TensorMode};
use crate::types::{meta, polars_compatible_type};
use crate::wire::cursor::Cursor;

/// Default rows per batch.
pub const DEFAULT_BATCH_SIZE: usize = 65_536;
pub use crate::wire::cursor::DEFAULT_MAX_DEPTH;
/// Values (rows × columns) one batch of a wide records table holds at most: its rows shrink as
/// columns grow, so memory follows the batch, not rows × keys.
pub const MAX_BATCH_CELLS: usize = 1 << 24;
/// Columns (distinct top-level keys) a records file may have, by default.
pub const DEFAULT_MAX_COLUMNS: usize = 65_536;
/// Rows a streaming (`Read`) source infers its schema from, by default.
pub const DEFAULT_STREAM_INFER_ROWS: usize = 1000;
/// ... or the rows in this many bytes, if fewer (at least one): a stream of wide rows (a remote
/// object, a compressed file) shows its first rows without buffering a thousand of them.
pub const DEFAULT_STREAM_INFER_BYTES: usize = 4 << 20;

/// Under the `auto` layout, refuse what is not MessagePack (one detection for every entry point:
/// [`crate::wire::sniff`]): text, which would read as a column of character codes, another file
/// format, or compressed bytes. An explicit layout reads the bytes as they are.
fn check_msgpack(b: &ReaderBuilder, head: &[u8]) -> Result<()> {
    if b.layout != Layout::Auto {
        return Ok(());
    }
    match not_msgpack_message(sniff(head)) {
        None => Ok(()),
        Some(m) => Err(Error::new(ErrorKind::NotMsgpack(m))),
    }
}

/// Builds a [`Reader`]. Every setter documents its default; `new()` sets them all.
///
/// ```
/// # fn main() -> msgpack_arrow::Result<()> {
/// use msgpack_arrow::{Layout, ReaderBuilder};
/// let b = ReaderBuilder::new();
/// assert_eq!(b.layout(), Layout::Auto);
/// assert_eq!(b.batch_size(), 65_536);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReaderBuilder {
    schema: Option<SchemaRef>,
    overrides: Option<SchemaRef>,
    layout: Layout,
    batch_size: usize,
    projection: Option<Vec<String>>,
    infer_rows: Option<usize>,
    tensor: TensorMode,
    object_arrays: ObjectArrays,
    dialect: Dialect,
    max_depth: usize,
    max_decoded_bytes: Option<u64>,
    threads: Option<usize>,
    /// the input is a file mapping: pages already decoded may be dropped from memory
    release_input: bool,
    /// rows that add nothing to the type so far skip full inference ([`Inferrer::fits_row`]);
    /// off only in tests, which compare both ways
    fast_infer: bool,
    /// with a given schema, a key it does not have is an error
    strict_schema: bool,
    on_truncated: OnTruncated,
    n_rows: Option<usize>,
    conflicts: Conflicts,
    lists: Lists,
    max_columns: usize,
    polars_types: bool,
}

impl Default for ReaderBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ReaderBuilder {
    /// A builder with every default.
    pub fn new() -> Self {
        ReaderBuilder {
            schema: None,
            overrides: None,
            layout: Layout::Auto,
            batch_size: DEFAULT_BATCH_SIZE,
            projection: None,
            infer_rows: None,
            tensor: TensorMode::Array,
            object_arrays: ObjectArrays::Error,
            dialect: Dialect::Auto,
            max_depth: DEFAULT_MAX_DEPTH,
            max_decoded_bytes: None,
            threads: None,
            release_input: false,
            fast_infer: true,
            strict_schema: false,
            on_truncated: OnTruncated::Error,
            n_rows: None,
            conflicts: Conflicts::Error,
            lists: Lists::List,
            max_columns: DEFAULT_MAX_COLUMNS,
            polars_types: false,
        }
    }
    /// Output only types Polars imports as they are (default `false`: the exact Arrow types):
    /// `FixedSizeList` of width 0 becomes `List`, seconds (Timestamp, Duration) milliseconds, at
    /// any depth (see [`crate::types::polars_compatible_type`]). Decided when the reader is
    /// built; the schema says it, and every batch comes out in it.
    pub fn with_polars_types(mut self, on: bool) -> Self {
        self.polars_types = on;
        self
    }
    /// The most columns (distinct top-level keys) a records file may have (default
    /// [`DEFAULT_MAX_COLUMNS`]): a stream whose records keep bringing new keys would otherwise
    /// build a table whose size is rows × keys. Past it, an error names the limit.
    pub fn with_max_columns(mut self, n: usize) -> Self {
        self.max_columns = n.max(1);
        self
    }
    /// Nested lists of numbers (default [`Lists::List`]). [`Lists::Array`]: where every list of a
    /// column (at each level) has one length, the column is a FixedSizeList (Polars `Array`)
    /// with field metadata `msgpack_numpy.kind = list`, written back as lists.
    pub fn with_lists(mut self, l: Lists) -> Self {
        self.lists = l;
        self
    }

    /// A column whose values do not unify (default [`Conflicts::Error`]: an error naming the
    /// column, both types and the record). [`Conflicts::Binary`] keeps such a column as Binary,
    /// each row its value's raw msgpack bytes (field metadata `msgpack_numpy.kind = msgpack`),
    /// written back as they were.
    pub fn with_conflicts(mut self, c: Conflicts) -> Self {
        self.conflicts = c;
        self
    }
    /// Read at most this many rows (default `None`: all). The input is not walked past them, so
    /// `head` costs what its rows cost; an inferred schema comes from them alone (the rows
    /// returned are all it has to describe).
    pub fn with_n_rows(mut self, n: Option<usize>) -> Self {
        self.n_rows = n;
        self
    }
    /// The rows to read, the batch size and the rows to infer from, bounded by `n_rows`.
    fn bounded(mut self) -> Self {
        if let Some(n) = self.n_rows {
            self.batch_size = self.batch_size.min(n.max(1));
            self.infer_rows = Some(self.infer_rows.map_or(n, |i| i.min(n)).max(1));
        }
        self
    }
    /// What to do with an input cut short, e.g. by a writer that crashed (default
    /// [`OnTruncated::Error`]: a positioned error). [`OnTruncated::Keep`] reads every complete
    /// top-level object before the cut, as `msgpack.Unpacker` yields them, and reports the cut in
    /// [`Reader::truncation`]. For a file still being appended to, it gives a consistent prefix.
    pub fn with_on_truncated(mut self, on: OnTruncated) -> Self {
        self.on_truncated = on;
        self
    }
    /// Use this schema instead of inferring one (default: inferred). Keys not in it are skipped
    /// (see [`ReaderBuilder::with_strict_schema`]).
    pub fn with_schema(mut self, schema: SchemaRef) -> Self {
        self.schema = Some(schema);
        self
    }
    /// With a schema given ([`ReaderBuilder::with_schema`]), make a key it does not have an error
    /// that names it (default `false`: skipped). For reading many files with the schema of the
    /// first: a column only later files have is not lost without a word.
    pub fn with_strict_schema(mut self, strict: bool) -> Self {
        self.strict_schema = strict;
        self
    }
    /// Give some columns their type (records layout): their values are not inferred, so values
    /// of several kinds (ints and floats, `<i4` and `<i8` ndarrays, ints and strings) that
    /// inference would call a conflict are decoded into this type, each converted exactly (numbers
    /// into a wider or other numeric type only when the value fits; any scalar into a string as
    /// Python's `str()` writes it), or an error naming the value. Other columns are inferred.
    pub fn with_schema_overrides(mut self, overrides: Option<SchemaRef>) -> Self {
        self.overrides = overrides.filter(|s| !s.fields().is_empty());
        self
    }
    /// The layout (default [`Layout::Auto`]).
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }
    /// Rows per batch (default 65,536).
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }
    /// Only these columns, in this order (default: all). Others are skipped: their bytes are never copied.
    pub fn with_projection(mut self, columns: Option<Vec<String>>) -> Self {
        self.projection = columns;
        self
    }
    /// Infer the schema from this many rows (default `None`: all rows of an in-memory or mapped
    /// file; 1000 for a `Read` stream). Keys first seen later are then errors.
    pub fn with_infer_rows(mut self, n: Option<usize>) -> Self {
        self.infer_rows = n;
        self
    }
    /// Tensor representation (default [`TensorMode::Array`]: nested FixedSizeList / List).
    pub fn with_tensor(mut self, t: TensorMode) -> Self {
        self.tensor = t;
        self
    }
    /// Object arrays (default [`ObjectArrays::Error`]: refused, never unpickled).
    pub fn with_object_arrays(mut self, o: ObjectArrays) -> Self {
        self.object_arrays = o;
        self
    }
    /// Which ndarray map dialect to recognise (default [`Dialect::Auto`]).
    pub fn with_dialect(mut self, d: Dialect) -> Self {
        self.dialect = d;
        self
    }
    /// Maximum nesting depth of msgpack containers (default 128).
    pub fn with_max_depth(mut self, d: usize) -> Self {
        self.max_depth = d.max(2);
        self
    }
    /// Stop with [`ErrorKind::LimitExceeded`] once the decoded Arrow data passes this many bytes
    /// (default `None`: no limit). Checked per batch, so the overshoot is at most one batch.
    pub fn with_max_decoded_bytes(mut self, n: Option<u64>) -> Self {
        self.max_decoded_bytes = n;
        self
    }
    /// Threads that decode batches of one in-memory or mapped file at once (default `None`: all
    /// cores when the file has more than one batch). Batches still come out in file order.
    pub fn with_threads(mut self, n: Option<usize>) -> Self {
        self.threads = n.map(|n| n.max(1));
        self
    }
    /// The layout set.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// The most rows to read (`None`: all).
    pub fn n_rows(&self) -> Option<usize> {
        self.n_rows
    }
    /// The columns to keep, in order (`None`: all).
    pub fn projection(&self) -> Option<&[String]> {
        self.projection.as_deref()
    }
    /// The tensor representation.
    pub fn tensor(&self) -> TensorMode {
        self.tensor
    }
    /// The rows per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn infer_options(&self) -> InferOptions {
        InferOptions {
            dialect: self.dialect,
            tensor: self.tensor,
            object_arrays: self.object_arrays,
            max_depth: self.max_depth,
            raw_conflicts: self.conflicts == Conflicts::Binary,
            lists_array: self.lists == Lists::Array,
        }
    }

    /// Read from bytes in memory (copied once into an Arrow buffer; use
    /// [`ReaderBuilder::build_from_buffer`] to avoid the copy).
    pub fn build_from_slice(self, data: &[u8]) -> Result<Reader> {
        self.build_from_buffer(Buffer::from(data))
    }

    /// Read from an Arrow buffer. `columns`-layout tensors are taken zero-copy where aligned.
    pub fn build_from_buffer(self, buf: Buffer) -> Result<Reader> {
        self.build_with(|b| b.build_from_buffer_all(buf))
    }

    /// What every build does around reading the input: bound it by `n_rows`, then hand out at
    /// most those rows, in the output types.
    fn build_with(self, read: impl FnOnce(Self) -> Result<Reader>) -> Result<Reader> {
        let this = self.bounded();
        let (left, polars) = (this.n_rows, this.polars_types);
        let (overrides, strict) = (this.overrides.clone(), this.projection.is_none());
        let mut r = read(this)?;
        r.left = left;
        r.output_types(overrides.as_deref(), strict, polars)
    }

    fn build_from_buffer_all(self, buf: Buffer) -> Result<Reader> {
        check_msgpack(&self, buf.as_slice())?;
        let cut = match self.on_truncated {
            OnTruncated::Keep => complete_prefix(buf.as_slice(), self.max_depth),
            OnTruncated::Error => None,
        };
        let buf = match &cut {
            Some(t) => buf.slice_with_length(0, t.offset as usize),
            None => buf,
        };
        let plan = plan(&self, buf.as_slice())?;
        let mut r = Reader::from_plan(self, buf, plan)?;
        r.truncation = cut;
        Ok(r)
    }

    /// Read a memory-mapped file. Pages already decoded are handed back to the kernel as the read
    /// goes, so a big file never stays resident. (`build_from_path`, in [`crate::io`], opens a
    /// path: mapped when plain, decompressed on the fly when compressed.)
    pub fn build_from_mmap(self, map: memmap2::Mmap) -> Result<Reader> {
        let mut b = self;
        b.release_input = true;
        b.build_from_buffer(mmap_buffer(map))
    }

    /// Read from any `Read`: a stream of records or values is decoded batch by batch in bounded
    /// memory; the single-object containers (one top-level array, one columns map, one bare
    /// ndarray) are read whole.
    pub fn build<R: Read + Send + 'static>(self, r: R) -> Result<Reader> {
        self.build_with(|b| b.build_all(r))
    }

    fn build_all<R: Read + Send + 'static>(self, r: R) -> Result<Reader> {
        let mut s = StreamReader::new(Box::new(r));
        if self.layout == Layout::Auto {
            s.fill_to(SNIFF_LEN)?;
            check_msgpack(&self, &s.buf[..s.buf.len().min(SNIFF_LEN)])?;
        }
        let keep = self.on_truncated == OnTruncated::Keep;
        // a cut among the first objects: read what there is and keep its complete prefix
        let cut_early = |e: &Error, s: &StreamReader| {
            keep && s.eof && matches!(e.kind(), ErrorKind::Truncated { .. })
        };
        // buffer the first object (and one more byte, to know whether more follow)
        let first_end = match s.fill_object(0) {
            Err(e) if cut_early(&e, &s) => {
                return self.build_from_buffer_all(Buffer::from_vec(s.buf))
            }
            r => r?,
        };
        let single = match first_end {
            None => true,
            Some(e) => !s.fill_to(e + 1)?,
        };
        let probe_plan = plan_first(&self, &s.buf, single)?;
        match probe_plan.map(|p| (p.layout, p.container)) {
            Some((Layout::Records | Layout::Values, Container::Stream)) if !single => {
                let mut me = self;
                let infer = me.infer_rows.unwrap_or(DEFAULT_STREAM_INFER_ROWS);
                let max_bytes = match me.infer_rows {
                    Some(_) => usize::MAX,
                    None => DEFAULT_STREAM_INFER_BYTES,
                };
                // buffer `infer` objects to infer from
                let mut end = 0usize;
                let mut n = 0usize;
                while n < infer && (n == 0 || end < max_bytes) {
                    match s.fill_object(end) {
                        Ok(Some(e)) => {
                            end = e;
                            n += 1;
                        }
                        Ok(None) => break,
                        Err(e) if cut_early(&e, &s) => {
                            return me.build_from_buffer_all(Buffer::from_vec(s.buf))
                        }
                        Err(e) => return Err(e),
                    }
                }
                me.infer_rows = Some(n.max(1));
                let plan = plan(&me, &s.buf[..end])?;
                Reader::from_stream(me, s, plan)
            }
            _ => {
                let mut all = std::mem::take(&mut s.buf);
                s.src.read_to_end(&mut all)?;
                self.build_from_buffer_all(Buffer::from_vec(all))
            }
        }
    }
}

/// Reads `RecordBatch`es; wrap it in [`ArrowReader`] for an [`arrow_array::RecordBatchReader`].
pub struct Reader {
    schema: SchemaRef,
    layout: Layout,
    reason: String,
    inner: Inner,
    /// where the input was cut, when [`OnTruncated::Keep`] kept the complete prefix
    truncation: Option<Truncation>,
    /// rows still to hand out ([`ReaderBuilder::with_n_rows`])
    left: Option<usize>,
    /// per column, the type its decoded array is converted to
    /// ([`ReaderBuilder::with_polars_types`]); empty: none is
    convert: Vec<Option<DataType>>,
    /// the schema before that conversion
    decoded: SchemaRef,
}

/// Where an input read with [`OnTruncated::Keep`] was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// Byte offset of the first incomplete object (the bytes from here on were not read).
    pub offset: u64,
    /// Complete top-level objects kept before it.
    pub objects: u64,
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "input cut at byte {}: kept the {} complete object{} before it",
            self.offset,
            self.objects,
            if self.objects == 1 { "" } else { "s" }
        )
    }
}

/// The end of the last complete top-level object, when the input is cut after it (`None`: not
/// cut, or broken in another way, which the reader then reports).
fn complete_prefix(data: &[u8], max_depth: usize) -> Option<Truncation> {
    let mut c = Cursor::new(data, 0);
    let mut objects = 0u64;
    while !c.is_empty() {
        let at = c.pos();
        match c.skip(max_depth) {
            Ok(()) => objects += 1,
            Err(e) if matches!(e.kind(), ErrorKind::Truncated { .. }) => {
                return Some(Truncation {
                    offset: at as u64,
                    objects,
                })
            }
            Err(_) => return None,
        }
    }
    None
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("layout", &self.layout())
            .field("schema", &self.schema())
            .finish_non_exhaustive()
    }
}

enum Inner {
    Empty,
    Rows(Box<RowsReader>),
    Batches(std::vec::IntoIter<RecordBatch>),
    Stream(Box<StreamRows>),
}

fn with_layout_metadata(schema: &Schema, layout: Layout, container: Container) -> Schema {
    let mut md = schema.metadata().clone();
    md.insert(meta::LAYOUT.to_string(), layout.to_string());
    md.insert(meta::CONTAINER.to_string(), container.as_str().to_string());
    // chunks are a fact of one file (decode_columns sets them), not of a schema given for others
    md.remove(meta::CHUNKS);
    Schema::new_with_metadata(schema.fields().clone(), md)
}

fn project(schema: &Schema, projection: Option<&[String]>) -> Result<Schema> {
    match projection {
        None => Ok(schema.clone()),
        Some(p) => {
            let mut fields = Vec::with_capacity(p.len());
            for name in p {
                let f = schema.field_with_name(name).map_err(|_| {
                    Error::new(ErrorKind::Key(format!(
                        "column {name:?} not found; the columns are: {}",
                        schema
                            .fields()
                            .iter()
                            .map(|f| f.name().as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                })?;
                fields.push(f.clone());
            }
            Ok(Schema::new_with_metadata(fields, schema.metadata().clone()))
        }
    }
}

impl Reader {
    /// The output types, decided once: columns named in `overrides` that the layout did not
    /// decode straight into their type (the `columns` layout, a given schema) are converted to
    /// it; with `polars`, every type Polars cannot import is mapped. `strict` (no projection):
    /// an override naming no column is an error.
    fn output_types(
        mut self,
        overrides: Option<&Schema>,
        strict: bool,
        polars: bool,
    ) -> Result<Reader> {
        if let (Some(o), true) = (overrides, strict && !self.schema.fields().is_empty()) {
            if let Some(o) = o
                .fields()
                .iter()
                .find(|o| self.schema.field_with_name(o.name()).is_err())
            {
                return Err(Error::new(ErrorKind::Key(format!(
                    "schema_overrides names column {:?}, which is not in the input; the columns are: {}",
                    o.name(),
                    self.schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                ))));
            }
        }
        self.decoded = self.schema.clone();
        let mut convert = Vec::with_capacity(self.schema.fields().len());
        let mut fields = Vec::with_capacity(self.schema.fields().len());
        for f in self.schema.fields() {
            let over = overrides.and_then(|o| o.field_with_name(f.name()).ok());
            let mut t = over.map_or_else(|| f.data_type().clone(), |o| o.data_type().clone());
            if polars {
                t = polars_compatible_type(&t);
            }
            if &t == f.data_type() {
                convert.push(None);
                fields.push(f.clone());
            } else {
                // an override replaces the numpy dtype the metadata described (a bin key stays
                // one); a Polars mapping keeps it, as the values are the same
                let mut g = f.as_ref().clone().with_data_type(t.clone());
                if over.is_some_and(|o| o.data_type() != f.data_type()) {
                    g = g.with_metadata(
                        f.metadata()
                            .iter()
                            .filter(|(k, _)| k.as_str() == meta::KEY)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect::<std::collections::HashMap<_, _>>(),
                    );
                }
                fields.push(Arc::new(g));
                convert.push(Some(t));
            }
        }
        if convert.iter().any(Option::is_some) {
            self.schema = Arc::new(Schema::new_with_metadata(
                fields,
                self.schema.metadata().clone(),
            ));
            self.convert = convert;
        }
        Ok(self)
    }

    /// A decoded batch in the output types (`safe: false`: a value that does not fit is an
    /// error, never a silent null).
    fn converted(&self, b: RecordBatch) -> Result<RecordBatch> {
        if self.convert.is_empty() {
            return Ok(b);
        }
        let opts = arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        };
        let mut cols = Vec::with_capacity(b.num_columns());
        for ((c, t), f) in b
            .columns()
            .iter()
            .zip(&self.convert)
            .zip(self.schema.fields())
        {
            cols.push(match t {
                None => c.clone(),
                Some(t) => arrow_cast::cast_with_options(c, t, &opts)
                    .map_err(|e| Error::from(e).prepend_path(f.name()))?,
            });
        }
        rows::batch(&self.schema, cols, b.num_rows())
    }

    fn from_plan(b: ReaderBuilder, buf: Buffer, p: Plan) -> Result<Reader> {
        let ctx = Ctx {
            dialect: b.dialect,
            max_depth: b.max_depth,
            strict_keys: b.schema.is_none() || b.strict_schema,
            given_schema: b.schema.is_some(),
        };
        let Some(full) = p.schema.clone() else {
            return Ok(Reader {
                schema: Arc::new(with_layout_metadata(
                    &Schema::empty(),
                    p.layout,
                    p.container,
                )),
                layout: p.layout,
                reason: p.reason,
                inner: Inner::Empty,
                truncation: None,
                left: None,
                convert: Vec::new(),
                decoded: Arc::new(Schema::empty()),
            });
        };
        let full = with_layout_metadata(&full, p.layout, p.container);
        let projected = project(&full, b.projection.as_deref())?;
        match (p.layout, p.container) {
            (Layout::Records | Layout::Values, Container::Stream | Container::Array) => {
                // the decoder uses projected field order; reorder after
                let (dec, dec_schema) =
                    RowDecoder::new(p.layout, &full, b.projection.as_deref(), &ctx)?;
                let _ = dec_schema;
                // a wide table: fewer rows per batch, so a batch holds at most MAX_BATCH_CELLS
                // values whatever the width (the batch starts the plan found are then unused)
                let cols = projected.fields().len().max(1);
                let batch_size = b.batch_size.min((MAX_BATCH_CELLS / cols).max(1));
                let starts_fit = batch_size == b.batch_size;
                Ok(Reader {
                    schema: Arc::new(projected.clone()),
                    layout: p.layout,
                    reason: p.reason,
                    inner: Inner::Rows(Box::new(RowsReader {
                        buf,
                        release: b.release_input,
                        limit: Limit::new(b.max_decoded_bytes),
                        pos: p.first_row,
                        left: p.rows.unwrap_or(0),
                        row: 0,
                        batch_size,
                        dec,
                        schema: Arc::new(projected),
                        par: {
                            let threads = b.threads.unwrap_or_else(|| {
                                std::thread::available_parallelism().map_or(1, |n| n.get())
                            });
                            let whole = p.batch_starts.len() * b.batch_size >= p.rows.unwrap_or(0);
                            (threads > 1 && p.batch_starts.len() > 1 && whole && starts_fit).then(
                                || Parallel {
                                    threads,
                                    starts: p.batch_starts.clone(),
                                    next: 0,
                                    ready: Default::default(),
                                    layout: p.layout,
                                    full: full.clone(),
                                    projection: b.projection.clone(),
                                    ctx: ctx.clone(),
                                },
                            )
                        },
                    })),
                    truncation: None,
                    left: None,
                    convert: Vec::new(),
                    decoded: Arc::new(Schema::empty()),
                })
            }
            (Layout::Columns, _) | (Layout::Values, Container::NdArray) => {
                let mut schema = Arc::new(projected);
                let (mut batches, chunks) =
                    decode_columns(&b, &buf, &full, &schema, p.container, &ctx)?;
                if chunks.len() > 1 && chunks.len() <= MAX_CHUNKS {
                    // a stream of column maps: the rows of each, for the writer
                    let mut md = schema.metadata().clone();
                    let rows: Vec<String> = chunks.iter().map(|n| n.to_string()).collect();
                    md.insert(meta::CHUNKS.to_string(), rows.join(","));
                    schema = Arc::new(schema.as_ref().clone().with_metadata(md));
                    batches = batches
                        .into_iter()
                        .map(|x| x.with_schema(schema.clone()))
                        .collect::<std::result::Result<_, _>>()?;
                }
                let mut limit = Limit::new(b.max_decoded_bytes);
                for x in &batches {
                    limit.add(x, buf.len() as u64)?;
                }
                Ok(Reader {
                    schema,
                    layout: p.layout,
                    reason: p.reason,
                    inner: Inner::Batches(batches.into_iter()),
                    truncation: None,
                    left: None,
                    convert: Vec::new(),
                    decoded: Arc::new(Schema::empty()),
                })
            }
            _ => Ok(Reader {
                schema: Arc::new(projected),
                layout: p.layout,
                reason: p.reason,
                inner: Inner::Empty,
                truncation: None,
                left: None,
                convert: Vec::new(),
                decoded: Arc::new(Schema::empty()),
            }),
        }
    }

    fn from_stream(b: ReaderBuilder, s: StreamReader, p: Plan) -> Result<Reader> {
        let ctx = Ctx {
            dialect: b.dialect,
            max_depth: b.max_depth,
            strict_keys: b.schema.is_none() || b.strict_schema,
            given_schema: b.schema.is_some(),
        };
        let full = with_layout_metadata(
            p.schema.as_deref().unwrap_or(&Schema::empty()),
            p.layout,
            p.container,
        );
        let projected = Arc::new(project(&full, b.projection.as_deref())?);
        let (dec, _) = RowDecoder::new(p.layout, &full, b.projection.as_deref(), &ctx)?;
        Ok(Reader {
            schema: projected.clone(),
            layout: p.layout,
            reason: p.reason,
            inner: Inner::Stream(Box::new(StreamRows {
                s,
                d: Decoder::from_parts(dec, projected, b.batch_size, b.max_depth),
                max_depth: b.max_depth,
                limit: Limit::new(b.max_decoded_bytes),
                keep: b.on_truncated == OnTruncated::Keep,
                truncation: None,
            })),
            truncation: None,
            left: None,
            convert: Vec::new(),
            decoded: Arc::new(Schema::empty()),
        })
    }

    /// The layout used (`auto` resolved).
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Where the input was cut, when it was read with [`OnTruncated::Keep`] and was: known from
    /// the start for bytes in memory and files, at the end for a `Read` stream.
    pub fn truncation(&self) -> Option<Truncation> {
        match &self.inner {
            Inner::Stream(s) => s.truncation.or(self.truncation),
            _ => self.truncation,
        }
    }
    /// Why this layout was chosen.
    pub fn layout_reason(&self) -> &str {
        &self.reason
    }
    /// The output schema (projection applied; layout and container in its metadata).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    /// The schema inferred (or given) before the output conversions
    /// ([`ReaderBuilder::with_polars_types`], overrides of a `columns` file): pass it as the
    /// schema to read more files exactly as this one.
    pub fn decoded_schema(&self) -> SchemaRef {
        self.decoded.clone()
    }
    /// Rows in the input, where they are known before decoding (in-memory and mapped files of
    /// records, values or columns); `None` for a `Read` stream.
    pub fn num_rows(&self) -> Option<usize> {
        match &self.inner {
            Inner::Empty => Some(0),
            Inner::Rows(r) => Some(r.row as usize + r.left),
            Inner::Batches(b) => Some(b.as_slice().iter().map(|b| b.num_rows()).sum()),
            Inner::Stream(_) => None,
        }
    }
    /// Read everything into batches (convenience; prefer iterating for large inputs).
    pub fn collect_batches(self) -> Result<Vec<RecordBatch>> {
        self.collect()
    }
}

impl Iterator for Reader {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == Some(0) {
            return None;
        }
        let r = match &mut self.inner {
            Inner::Empty => return None,
            Inner::Rows(r) => r.next_batch(),
            Inner::Batches(b) => Ok(b.next()),
            Inner::Stream(s) => s.next_batch(),
        };
        let r = r.and_then(|b| b.map(|b| self.converted(b)).transpose());
        match r {
            Ok(Some(b)) => match &mut self.left {
                Some(left) => {
                    let b = if b.num_rows() > *left {
                        b.slice(0, *left)
                    } else {
                        b
                    };
                    *left -= b.num_rows();
                    Some(Ok(b))
                }
                None => Some(Ok(b)),
            },
            Ok(None) => None,
            Err(e) => {
                // an error ends the stream
                self.inner = Inner::Empty;
                Some(Err(e))
            }
        }
    }
}

/// A [`Reader`] as an `arrow_array::RecordBatchReader` (errors become `ArrowError`s).
pub struct ArrowReader(pub Reader);

impl Iterator for ArrowReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(ArrowError::from))
    }
}

impl RecordBatchReader for ArrowReader {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}

/// Infer the schema and layout of msgpack-numpy bytes with default options.
pub fn infer_schema(
    data: &[u8],
    layout: Layout,
    infer_rows: Option<usize>,
) -> Result<(Schema, Layout)> {
    let b = ReaderBuilder::new()
        .with_layout(layout)
        .with_infer_rows(infer_rows);
    let p = plan(&b, data)?;
    let s = p
        .schema
        .map(|s| with_layout_metadata(&s, p.layout, p.container))
        .unwrap_or_else(|| with_layout_metadata(&Schema::empty(), p.layout, p.container));
    Ok((s, p.layout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, UInt8Type};
    use arrow_schema::Field;

    #[test]
    fn conflicting_columns_kept_as_raw_msgpack_and_written_back_as_they_were() {
        // {"w": [1, 2] | [[3]] | nil, "x": 1 | "a" | 2, "ok": i}: lists of different depth, int and str
        let mut data = Vec::new();
        let mut raws = Vec::new();
        for (i, (w, x)) in [
            (vec![0x92, 0x01, 0x02], &b"\x01"[..]),
            (vec![0x91, 0x91, 0x03], b"\xa1a"),
            (vec![0xc0], b"\x02"),
        ]
        .into_iter()
        .enumerate()
        {
            data.extend_from_slice(b"\x83\xa1w");
            data.extend_from_slice(&w);
            data.extend_from_slice(b"\xa1x");
            data.extend_from_slice(x);
            data.extend_from_slice(b"\xa2ok");
            rmp::encode::write_sint(&mut data, i as i64).unwrap();
            raws.push((w, x.to_vec()));
        }
        let e = ReaderBuilder::new().build_from_slice(&data).unwrap_err();
        assert!(e.to_string().contains("conflicts=\"binary\""), "{e}");
        let r = ReaderBuilder::new()
            .with_conflicts(Conflicts::Binary)
            .build_from_slice(&data)
            .unwrap();
        let schema = r.schema();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        let b = &batches[0];
        // w: [1, 2] and [[3]] are lists of different depth; x: int and str
        for (col, pick) in [("w", 0usize), ("x", 1)] {
            let f = schema.field_with_name(col).unwrap();
            assert_eq!(f.data_type(), &arrow_schema::DataType::Binary, "{col}");
            assert_eq!(
                f.metadata().get(meta::KIND).map(String::as_str),
                Some("msgpack")
            );
            let a = b.column_by_name(col).unwrap().as_binary::<i32>();
            for (i, (w, x)) in raws.iter().enumerate() {
                let want = if pick == 0 { w } else { x };
                if want == &[0xc0] {
                    assert!(arrow_array::Array::is_null(a, i));
                } else {
                    assert_eq!(a.value(i), &want[..], "{col} row {i}");
                }
            }
        }
        assert_eq!(
            b.column_by_name("ok").unwrap().data_type(),
            &arrow_schema::DataType::Int64
        );
        let mut w = crate::WriterBuilder::new()
            .build(Vec::new(), schema)
            .unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        assert_eq!(w.finish().unwrap(), data, "written back byte for byte");
    }

    #[test]
    fn integer_keyed_maps_are_map_columns_written_back_as_they_were() {
        // {"id": i, "counts": {1: 0.5, -3: 1.5}} and {"id": 2, "counts": {}}, then nil
        let mut data = Vec::new();
        for (i, entries) in [
            (0i64, vec![(1i64, 0.5f64), (-3, 1.5)]),
            (1, vec![(7, 2.0)]),
            (2, vec![]),
        ] {
            data.extend_from_slice(b"\x82\xa2id");
            rmp::encode::write_sint(&mut data, i).unwrap();
            data.extend_from_slice(b"\xa6counts");
            rmp::encode::write_map_len(&mut data, entries.len() as u32).unwrap();
            for (k, v) in entries {
                rmp::encode::write_sint(&mut data, k).unwrap();
                rmp::encode::write_f64(&mut data, v).unwrap();
            }
        }
        data.extend_from_slice(b"\x82\xa2id\x03\xa6counts\xc0");
        let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
        let schema = r.schema();
        let f = schema.field_with_name("counts").unwrap();
        let arrow_schema::DataType::Map(entries, false) = f.data_type() else {
            panic!("{:?}", f.data_type())
        };
        assert_eq!(
            entries.data_type().to_string(),
            "Struct(\"key\": non-null Int64, \"value\": Float64)"
        );
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        let m = batches[0].column_by_name("counts").unwrap().as_map();
        assert_eq!(m.value_offsets(), &[0, 2, 3, 3, 3]);
        assert!(arrow_array::Array::is_null(m, 3));
        let keys = m.keys().as_primitive::<arrow_array::types::Int64Type>();
        assert_eq!(keys.values(), &[1, -3, 7]);
        let mut w = crate::WriterBuilder::new()
            .build(Vec::new(), schema)
            .unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        assert_eq!(w.finish().unwrap(), data, "written back byte for byte");
        // keys of mixed types in one map stay an error that says where
        let bad = b"\x81\xa1m\x82\x01\x01\xa1k\x02";
        let e = ReaderBuilder::new().build_from_slice(bad).unwrap_err();
        assert!(e.to_string().contains("mixes integer keys"), "{e}");
        assert_eq!(e.offset(), Some(6), "the str key");
    }

    #[test]
    fn ever_new_keys_stop_at_the_column_limit() {
        // 300 records, each with a key no other has
        let mut data = Vec::new();
        for i in 0..300 {
            data.push(0x81);
            rmp::encode::write_str(&mut data, &format!("k{i}")).unwrap();
            rmp::encode::write_sint(&mut data, i).unwrap();
        }
        let e = ReaderBuilder::new()
            .with_max_columns(100)
            .build_from_slice(&data)
            .unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::TooManyColumns(100)), "{e}");
        assert_eq!(e.record(), Some(100));
        assert!(e.to_string().contains("max_columns"), "{e}");
        // within the limit the table reads
        let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
        assert_eq!(r.schema().fields().len(), 300);
        let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 300);
    }

    #[test]
    fn sparse_records_come_back_with_their_key_sets() {
        // {"a": 1, "b": 2} {"a": 3} {"a": 4, "c": "x"}: keys absent, not nil
        let data = b"\x82\xa1a\x01\xa1b\x02\x81\xa1a\x03\x82\xa1a\x04\xa1c\xa1x".to_vec();
        let write = |m: crate::Missing| {
            let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
            let schema = r.schema();
            let mut w = crate::WriterBuilder::new()
                .with_missing(m)
                .build(Vec::new(), schema)
                .unwrap();
            for b in r {
                w.write(&b.unwrap()).unwrap();
            }
            w.finish().unwrap()
        };
        let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
        assert_eq!(
            r.schema().metadata().get(meta::MISSING).map(String::as_str),
            Some("absent")
        );
        assert_eq!(write(crate::Missing::Auto), data, "key sets as they were");
        let nils = write(crate::Missing::Nil);
        assert_eq!(&nils[..11], b"\x83\xa1a\x01\xa1b\x02\xa1c\xc0\x83");
        // records that all have every key say nothing
        let full = b"\x81\xa1a\x01\x81\xa1a\x02";
        let r = ReaderBuilder::new().build_from_slice(full).unwrap();
        assert!(r.schema().metadata().get(meta::MISSING).is_none());
    }

    #[test]
    fn a_cut_anywhere_keeps_the_complete_records_before_it() {
        // records {"id": i, "v": [i as f64; i % 3]} written by rmp, their ends noted as written
        let mut data = Vec::new();
        let mut ends = Vec::new();
        for i in 0..12i64 {
            rmp::encode::write_map_len(&mut data, 2).unwrap();
            rmp::encode::write_str(&mut data, "id").unwrap();
            rmp::encode::write_sint(&mut data, i * 1000).unwrap();
            rmp::encode::write_str(&mut data, "v").unwrap();
            rmp::encode::write_array_len(&mut data, (i % 3) as u32).unwrap();
            for _ in 0..i % 3 {
                rmp::encode::write_f64(&mut data, i as f64).unwrap();
            }
            ends.push(data.len());
        }
        let ids = |r: Reader| -> Vec<i64> {
            r.flat_map(|b| {
                let b = b.unwrap();
                let c = b.column_by_name("id").unwrap().clone();
                c.as_primitive::<arrow_array::types::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect()
        };
        for cut in 1..data.len() {
            let kept = ends.iter().filter(|&&e| e <= cut).count();
            let want: Vec<i64> = (0..kept as i64).map(|i| i * 1000).collect();
            let at = if kept == 0 { 0 } else { ends[kept - 1] };
            let b = || {
                ReaderBuilder::new()
                    .with_on_truncated(OnTruncated::Keep)
                    .with_batch_size(5)
            };
            let r = b().build_from_slice(&data[..cut]).unwrap();
            let t = r.truncation();
            assert_eq!(
                (t.is_some(), ids(r)),
                (at != cut, want.clone()),
                "cut {cut}"
            );
            if at != cut {
                assert_eq!(
                    t,
                    Some(Truncation {
                        offset: at as u64,
                        objects: kept as u64
                    })
                );
            }
            let mut r = b()
                .build(std::io::Cursor::new(data[..cut].to_vec()))
                .unwrap();
            let got: Vec<i64> = r
                .by_ref()
                .flat_map(|b| {
                    let b = b.unwrap();
                    let c = b.column_by_name("id").unwrap().clone();
                    c.as_primitive::<arrow_array::types::Int64Type>()
                        .values()
                        .to_vec()
                })
                .collect();
            assert_eq!(got, want, "stream, cut {cut}");
            assert_eq!(r.truncation().is_some(), at != cut, "stream, cut {cut}");
            // the default is still a positioned error
            if at != cut {
                let e = ReaderBuilder::new()
                    .build_from_slice(&data[..cut])
                    .and_then(|r| r.collect::<Result<Vec<_>>>().map(|_| ()))
                    .unwrap_err();
                assert!(e.to_string().starts_with("truncated input"), "{e}");
            }
        }
    }

    #[test]
    fn text_and_other_formats_are_refused_under_auto_and_read_with_an_explicit_layout() {
        let cases: [(&[u8], &str); 4] = [
            (
                b"id,name\n1,alpha\n2,beta\n",
                "input looks like text (CSV?), not MessagePack",
            ),
            (
                b"{\"a\": [1, 2, 3], \"b\": \"text\"}\n",
                "input looks like text (JSON?)",
            ),
            (
                b"PAR1\x15\x04\x15\x10",
                "input is a Parquet file, not MessagePack",
            ),
            (b"\x1f\x8b\x08\x00\x00\x00", "input is gzip-compressed data"),
        ];
        for (bytes, want) in cases {
            let e = ReaderBuilder::new().build_from_slice(bytes).unwrap_err();
            assert!(e.to_string().starts_with(want), "{e}");
            assert!(matches!(e.kind(), ErrorKind::NotMsgpack(_)));
            // the streaming entry point decides the same
            let e = ReaderBuilder::new()
                .build(std::io::Cursor::new(bytes.to_vec()))
                .unwrap_err();
            assert!(e.to_string().starts_with(want), "{e}");
        }
        // an explicit values layout reads text as the small integers it is
        let r = ReaderBuilder::new()
            .with_layout(Layout::Values)
            .build_from_slice(b"id,name\n1,alpha\n")
            .unwrap();
        let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 16);
        // a stream of small ints without the shape of text still reads under auto
        let ints: Vec<u8> = (1..=40).collect();
        assert!(ReaderBuilder::new().build_from_slice(&ints).is_ok());
    }

    /// Overrides apply on every layout (a `columns` file is converted, not decoded into them),
    /// an override naming no column is an error, and the Polars types are the schema's and the
    /// batches' from the start.
    #[test]
    fn output_types_are_decided_when_the_reader_is_built() {
        use arrow_array::Array;
        // {"x": [1, 2, 3], "e": [ndarray f4 shape (0,)] * 3}: a columns map
        let empty_nd = map(&[
            ("nd", vec![0xc3]),
            ("type", s("<f4")),
            ("kind", bin(b"")),
            ("shape", vec![0x91, 0x00]),
            ("data", bin(b"")),
        ]);
        let mut cols = vec![0x82];
        cols.extend(s("x"));
        cols.extend([0x93, 1, 2, 3]);
        cols.extend(s("e"));
        cols.push(0x93);
        (0..3).for_each(|_| cols.extend(&empty_nd));
        let f64s = Arc::new(Schema::new(vec![arrow_schema::Field::new(
            "x",
            DataType::Float64,
            true,
        )]));
        let r = ReaderBuilder::new()
            .with_schema_overrides(Some(f64s.clone()))
            .with_polars_types(true)
            .build_from_slice(&cols)
            .unwrap();
        assert_eq!(r.layout(), Layout::Columns);
        let schema = r.schema();
        assert_eq!(schema.field(0).data_type(), &DataType::Float64);
        assert!(matches!(schema.field(1).data_type(), DataType::List(_)));
        assert!(matches!(
            r.decoded_schema().field(1).data_type(),
            DataType::FixedSizeList(_, 0)
        ));
        let b = r.collect_batches().unwrap().remove(0);
        assert_eq!(b.schema(), schema);
        let x = b
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap();
        assert_eq!(x.values().to_vec(), vec![1.0, 2.0, 3.0]);
        assert_eq!(b.column(1).len(), 3);
        // without the option, the exact type
        let r = ReaderBuilder::new().build_from_slice(&cols).unwrap();
        assert!(matches!(
            r.schema().field(1).data_type(),
            DataType::FixedSizeList(_, 0)
        ));
        // an override of a column the input lacks
        let other = Arc::new(Schema::new(vec![arrow_schema::Field::new(
            "nope",
            DataType::Float64,
            true,
        )]));
        let e = ReaderBuilder::new()
            .with_schema_overrides(Some(other))
            .build_from_slice(&cols)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"nope\"") && e.contains("x, e"), "{e}");
    }

    /// `{key: value}` with bin keys, as Python writes `{b'key': ...}`.
    fn map(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        rmp::encode::write_map_len(&mut out, entries.len() as u32).unwrap();
        for (k, v) in entries {
            rmp::encode::write_bin(&mut out, k.as_bytes()).unwrap();
            out.extend_from_slice(v);
        }
        out
    }
    fn s(v: &str) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_str(&mut o, v).unwrap();
        o
    }
    fn bin(v: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        rmp::encode::write_bin(&mut o, v).unwrap();
        o
    }

    /// Inference with the per-row fast path gives exactly what full inference gives: the same
    /// schema (metadata included) or the same error.
    #[test]
    fn fast_inference_equals_full_inference() {
        fn int(v: i64) -> Vec<u8> {
            let mut o = Vec::new();
            rmp::encode::write_sint(&mut o, v).unwrap();
            o
        }
        fn uint(v: u64) -> Vec<u8> {
            let mut o = Vec::new();
            rmp::encode::write_uint(&mut o, v).unwrap();
            o
        }
        fn f32v(v: f32) -> Vec<u8> {
            let mut o = Vec::new();
            rmp::encode::write_f32(&mut o, v).unwrap();
            o
        }
        fn f64v(v: f64) -> Vec<u8> {
            let mut o = Vec::new();
            rmp::encode::write_f64(&mut o, v).unwrap();
            o
        }
        fn list(items: &[Vec<u8>]) -> Vec<u8> {
            let mut o = Vec::new();
            rmp::encode::write_array_len(&mut o, items.len() as u32).unwrap();
            items.iter().for_each(|i| o.extend(i));
            o
        }
        // as msgpack_numpy.encode writes an ndarray (data last)
        fn nd(ty: &str, shape: &[usize], kind: &[u8]) -> Vec<u8> {
            let size: usize = ty[2..].parse().unwrap();
            let n: usize = shape.iter().product();
            let dims: Vec<Vec<u8>> = shape.iter().map(|&d| uint(d as u64)).collect();
            map(&[
                ("nd", vec![0xc3]),
                ("type", s(ty)),
                ("kind", bin(kind)),
                ("shape", list(&dims)),
                ("data", bin(&vec![7u8; n * size])),
            ])
        }
        fn scalar(ty: &str) -> Vec<u8> {
            let size: usize = ty[2..].parse().unwrap();
            map(&[
                ("nd", vec![0xc2]),
                ("type", s(ty)),
                ("kind", bin(b"")),
                ("data", bin(&vec![1u8; size])),
            ])
        }
        let rec = |entries: &[(&str, Vec<u8>)]| map(entries);
        let a = |v: Vec<u8>| rec(&[("a", v)]);
        let f4 = |shape: &[usize]| nd("<f4", shape, b"");
        let mut truncated = rec(&[("e", f4(&[3]))]);
        truncated.truncate(truncated.len() - 2);
        let cases: Vec<(Layout, Vec<Vec<u8>>)> = vec![
            (Layout::Records, vec![a(int(1)), a(int(2)), a(int(-1))]),
            (Layout::Records, vec![a(int(1)), a(uint(u64::MAX))]),
            (
                Layout::Records,
                vec![a(int(-1)), a(int(1)), a(uint(u64::MAX))],
            ),
            (Layout::Records, vec![a(int(1)), a(f64v(1.5)), a(int(3))]),
            (Layout::Records, vec![a(f32v(1.5)), a(f32v(2.5)), a(int(1))]),
            (Layout::Records, vec![a(f64v(1.5)), a(f32v(2.5))]),
            (
                Layout::Records,
                vec![a(vec![0xc0]), a(int(1)), a(vec![0xc0])],
            ),
            (Layout::Records, vec![a(s("x")), a(bin(b"y"))]),
            (
                Layout::Records,
                vec![a(vec![0xc3]), a(vec![0xc2]), a(int(0))],
            ),
            (
                Layout::Records,
                vec![
                    a(int(1)),
                    rec(&[("a", int(2)), ("b", s("x"))]),
                    rec(&[("b", s("y"))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("a", int(1)), ("b", int(2))]),
                    rec(&[("b", int(2)), ("a", int(1))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("a", int(1)), ("b", int(2))]),
                    rec(&[("a", int(1)), ("a", int(2))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", f4(&[3]))]),
                    rec(&[("e", f4(&[3]))]),
                    rec(&[("e", nd(">f4", &[3], b""))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", f4(&[3]))]),
                    rec(&[("e", f4(&[3]))]),
                    rec(&[("e", f4(&[4]))]),
                    rec(&[("e", f4(&[3]))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", f4(&[2, 3]))]),
                    rec(&[("e", f4(&[2, 3]))]),
                    rec(&[("e", f4(&[0, 3]))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", f4(&[2, 3]))]),
                    rec(&[("e", f4(&[1, 3]))]),
                    rec(&[("e", f4(&[0, 3]))]),
                ],
            ),
            (
                Layout::Records,
                vec![a(uint(u64::MAX)), a(int(1)), a(int(-1))],
            ),
            (Layout::Records, vec![a(f32v(1.0)), a(f64v(1.0))]),
            (
                Layout::Records,
                vec![a(list(&[int(1)])), a(list(&[int(1), s("x")]))],
            ),
            (
                Layout::Records,
                vec![rec(&[("e", f4(&[3]))]), rec(&[("e", nd("<i4", &[3], b""))])],
            ),
            (
                Layout::Records,
                vec![rec(&[("e", f4(&[3]))]), rec(&[("e", f4(&[3, 1]))])],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", f4(&[3]))]),
                    rec(&[("e", rec(&[("x", int(1))]))]),
                ],
            ),
            (
                Layout::Records,
                vec![rec(&[("e", f4(&[3]))]), truncated.clone()],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", f4(&[3]))]),
                    rec(&[("e", nd("|O8", &[3], b"O"))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("e", scalar("<f8"))]),
                    rec(&[("e", scalar("<f8"))]),
                    rec(&[("e", f4(&[]))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("m", rec(&[("x", int(1))]))]),
                    rec(&[("m", rec(&[("x", int(2)), ("y", s("s"))]))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("m", rec(&[("x", int(1))]))]),
                    rec(&[("m", f4(&[3]))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    rec(&[("m", rec(&[("x", int(1))]))]),
                    rec(&[("m", rec(&[("shape", int(1))]))]),
                ],
            ),
            (
                Layout::Records,
                vec![
                    a(list(&[int(1), int(2)])),
                    a(list(&[])),
                    a(list(&[int(-3)])),
                    a(list(&[f64v(0.5)])),
                ],
            ),
            (
                Layout::Records,
                vec![
                    a(list(&[f4(&[2])])),
                    a(list(&[f4(&[2]), f4(&[2])])),
                    a(list(&[f4(&[5])])),
                ],
            ),
            (Layout::Values, vec![f4(&[3]), f4(&[3]), f4(&[5])]),
            (Layout::Values, vec![int(1), int(2), int(-3), f64v(1.0)]),
            (
                Layout::Values,
                vec![rec(&[("x", int(1))]), rec(&[("x", int(2))]), f4(&[1])],
            ),
        ];
        for (i, (layout, rows)) in cases.iter().enumerate() {
            let data: Vec<u8> = rows.concat();
            let run = |fast: bool| {
                let mut b = ReaderBuilder::new().with_layout(*layout);
                b.fast_infer = fast;
                match b.build_from_slice(&data) {
                    Ok(r) => format!("{:?}", r.schema()),
                    Err(e) => format!("error: {e}"),
                }
            };
            assert_eq!(run(true), run(false), "case {i}");
        }
    }

    #[test]
    fn a_strict_given_schema_refuses_keys_it_lacks() {
        // {"a": 1, "b": 2} as a record, then as a columns map {"a": [1], "b": [2]}
        let rec = [vec![0x82], s("a"), vec![0x01], s("b"), vec![0x02]].concat();
        let col = [
            vec![0x82],
            s("a"),
            vec![0x91, 0x01],
            s("b"),
            vec![0x91, 0x02],
        ]
        .concat();
        let schema = Arc::new(Schema::new(vec![Field::new(
            "a",
            arrow_schema::DataType::Int64,
            true,
        )]));
        for (data, layout, at) in [(&rec, Layout::Records, 4), (&col, Layout::Columns, 5)] {
            let read = |strict: bool| {
                ReaderBuilder::new()
                    .with_layout(layout)
                    .with_schema(schema.clone())
                    .with_strict_schema(strict)
                    .build_from_slice(data)
                    .and_then(|r| r.collect_batches())
            };
            assert_eq!(read(false).unwrap()[0].num_columns(), 1);
            let e = read(true).unwrap_err();
            assert!(
                e.to_string()
                    .contains("key \"b\" is not in the schema the reader was given"),
                "{e}"
            );
            assert_eq!(e.offset(), Some(at), "{layout:?}: the offset of key b");
        }
    }

    #[test]
    fn openpi_maps_are_ndarrays_under_auto() {
        // openpi_client.msgpack_numpy: {__ndarray__: True, data, dtype, shape}
        let data: Vec<u8> = [1.5f32, -2.0, 3.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let nd = map(&[
            ("__ndarray__", vec![0xc3]),
            ("data", bin(&data)),
            ("dtype", s("<f4")),
            ("shape", vec![0x91, 0x03]),
        ]);
        let mut rec = vec![0x81];
        rec.extend(s("obs"));
        rec.extend(nd);
        for dialect in [Dialect::Auto, Dialect::Openpi] {
            let r = ReaderBuilder::new()
                .with_dialect(dialect)
                .with_layout(Layout::Records)
                .build_from_slice(&rec)
                .unwrap();
            let b = r.collect_batches().unwrap().remove(0);
            let v = b
                .column(0)
                .as_fixed_size_list()
                .values()
                .as_primitive::<Float32Type>()
                .values()
                .to_vec();
            assert_eq!(v, [1.5, -2.0, 3.25]);
        }
        // openpi's scalars hold obj.item(); nanosecond datetimes are ints
        let rec = [
            vec![0x81],
            s("t"),
            map(&[
                ("__npgeneric__", vec![0xc3]),
                ("data", vec![0xd3, 0, 0, 0, 0, 0, 0, 0x30, 0x39]),
                ("dtype", s(">M8[ns]")),
            ]),
        ]
        .concat();
        let b = ReaderBuilder::new().build_from_slice(&rec).unwrap();
        let b = b.collect_batches().unwrap().remove(0);
        let t = b
            .column(0)
            .as_primitive::<arrow_array::types::TimestampNanosecondType>();
        assert_eq!(t.value(0), 12345);
        // a value the dtype cannot hold exactly is an error
        for (data, dtype, want) in [
            (
                vec![0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],
                "<i4",
                "a non-integer does not fit",
            ),
            (vec![0xff], "|u1", "-1 does not fit"),
            (vec![0x01], "<c8", "dtype <c8 is not supported"),
            (s("abc"), "<U2", "\"abc\" does not fit"),
        ] {
            let nd = map(&[
                ("__npgeneric__", vec![0xc3]),
                ("data", data),
                ("dtype", s(dtype)),
            ]);
            let mut rec = vec![0x81];
            rec.extend(s("x"));
            rec.extend(nd);
            let e = ReaderBuilder::new()
                .build_from_slice(&rec)
                .and_then(|r| r.collect_batches())
                .unwrap_err();
            assert!(e.to_string().contains(want), "{dtype}: {e}");
        }
        // the msgpack-numpy dialect alone leaves it a user map
        let r = ReaderBuilder::new()
            .with_dialect(Dialect::MsgpackNumpy)
            .with_layout(Layout::Records)
            .build_from_slice(&rec)
            .unwrap();
        assert!(matches!(
            r.schema().field(0).data_type(),
            arrow_schema::DataType::Struct(_)
        ));
    }

    #[test]
    fn js_dialect_reads_u8_as_bytes_only_when_asked() {
        // msgpack-numpy-js writes Uint8Array as type "<U8"; numpy reads that as 8-char strings
        let nd = map(&[
            ("nd", vec![0xc3]),
            ("type", s("<U8")),
            ("shape", vec![0x91, 0x20]),
            ("data", bin(&[7u8; 32])),
        ]);
        let r = ReaderBuilder::new()
            .with_dialect(Dialect::Js)
            .build_from_slice(&nd)
            .unwrap();
        let b = r.collect_batches().unwrap().remove(0);
        assert_eq!(
            b.column(0).as_primitive::<UInt8Type>().values().to_vec(),
            vec![7u8; 32]
        );
        // to numpy, "<U8" is 8 characters of 4 bytes: 32 bytes cannot hold 32 of them
        let e = ReaderBuilder::new().build_from_slice(&nd).err().unwrap();
        assert!(
            e.to_string().contains("shape [32] of <U8 needs 1024"),
            "{e}"
        );
    }
}
