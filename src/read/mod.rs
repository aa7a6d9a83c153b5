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

mod ahead;
pub(crate) mod array;
mod blobs;
mod columns;
mod decoder;
mod empty_shapes;
mod first_pass;
pub(crate) mod infer;
mod output;
mod piped;
pub(crate) mod plan;
pub(crate) mod row_walk;
mod rows;
pub(crate) mod source;
mod split;
mod stream;
mod truncation;
mod window;

use self::columns::decode_columns;
pub use self::decoder::Decoder;
use self::plan::{plan, plan_first, Container, Plan, MAX_CHUNKS};
use self::rows::{Limit, Parallel, RowDecoder, RowsReader};
use self::stream::StreamRows;
use self::truncation::complete_prefix;
pub use self::truncation::Truncation;
pub(crate) use self::window::RowWindow;
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
use crate::types::meta;
use crate::wire::cursor::Cursor;

/// Default rows per batch.
pub const DEFAULT_BATCH_SIZE: usize = 65_536;
/// Default bound of a batch in input bytes: a batch ends at the row that reaches it, so wide rows
/// (tensors) make smaller batches and a stream's memory is a few batches whatever the row width.
pub const DEFAULT_BATCH_BYTES: usize = 16 << 20;
pub use crate::wire::cursor::DEFAULT_MAX_DEPTH;
/// Values (rows × columns) one batch of a wide records table holds at most: its rows shrink as
/// columns grow, so memory follows the batch, not rows × keys.
pub const MAX_BATCH_CELLS: usize = 1 << 24;

/// Inputs smaller than this are walked, then decoded, on the calling thread: their walk is too
/// short to overlap with anything, and handing a batch to the pool and waiting for it cost more
/// than decoding it (a 2 KB file: 108 µs that way, 37.5 µs on the calling thread).
const AHEAD_MIN_BYTES: usize = 1 << 20;
/// Columns (distinct top-level keys) a records file may have, by default.
pub const DEFAULT_MAX_COLUMNS: usize = 65_536;
/// Decompressed bytes held in memory, by default ([`ReaderBuilder::with_hold_decompressed`]).
pub const DEFAULT_HOLD_DECOMPRESSED: usize = 1 << 30;
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
    batch_bytes: usize,
    projection: Option<Vec<String>>,
    infer_rows: Option<usize>,
    tensor: TensorMode,
    object_arrays: ObjectArrays,
    dialect: Dialect,
    npy_ext: Option<i8>,
    max_depth: usize,
    max_decoded_bytes: Option<u64>,
    threads: Option<usize>,
    /// the input is a file mapping: pages already decoded may be dropped from memory
    release_input: bool,
    /// the input is memory this read alone holds (a decompressed stream): rows of the `records`
    /// and `values` layouts, which are copied out, free their pages once finally decoded
    release_decoded: bool,
    /// rows that add nothing to the type so far skip full inference ([`Inferrer::fits_row`]);
    /// off only in tests, which compare both ways
    fast_infer: bool,
    /// the schema walk of a stream this many bytes long or more is cut into a piece per thread
    walk_piece_bytes: usize,
    /// inputs shorter than this are not decoded during the walk ([`ReaderBuilder::with_eager`])
    ahead_min_bytes: usize,
    /// with a given schema, a key it does not have is an error
    strict_schema: bool,
    /// the given schema was inferred (from other rows, another file): values are not converted
    schema_inferred: bool,
    on_truncated: OnTruncated,
    n_rows: Option<usize>,
    skip_rows: usize,
    conflicts: Conflicts,
    lists: Lists,
    max_columns: usize,
    polars_types: bool,
    numpy_extension: bool,
    eager: bool,
    whole_chunks: bool,
    /// what a first pass over the whole stream found ([`ReaderBuilder::with_first_pass`])
    first_pass: Option<first_pass::FirstPass>,
    /// The input was cut after the objects read ([`OnTruncated::Keep`]): one object kept is not
    /// a file of one object (whose `auto` layout may be `columns`), but the first of a stream.
    cut_after: bool,
    hold_decompressed: usize,
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
            batch_bytes: DEFAULT_BATCH_BYTES,
            projection: None,
            infer_rows: None,
            tensor: TensorMode::Array,
            object_arrays: ObjectArrays::Error,
            dialect: Dialect::Auto,
            npy_ext: None,
            max_depth: DEFAULT_MAX_DEPTH,
            max_decoded_bytes: None,
            threads: None,
            release_input: false,
            release_decoded: false,
            fast_infer: true,
            walk_piece_bytes: split::WALK_PIECE_BYTES,
            ahead_min_bytes: AHEAD_MIN_BYTES,
            strict_schema: false,
            schema_inferred: false,
            on_truncated: OnTruncated::Error,
            n_rows: None,
            skip_rows: 0,
            conflicts: Conflicts::Error,
            lists: Lists::List,
            max_columns: DEFAULT_MAX_COLUMNS,
            polars_types: false,
            numpy_extension: false,
            eager: false,
            whole_chunks: false,
            first_pass: None,
            cut_after: false,
            hold_decompressed: DEFAULT_HOLD_DECOMPRESSED,
        }
    }
    /// A `columns` map (each chunk of a stream of them) becomes one batch, whatever
    /// [`ReaderBuilder::with_batch_size`] and [`ReaderBuilder::with_batch_bytes`] say (default
    /// `false`). Its columns are decoded whole either way, so cutting them into batches bounds no
    /// memory: it only makes more, smaller chunks. For a caller that keeps every batch in one
    /// table (Python's `read_msgpack`), one chunk per column: a 2,000-column map of 80 MB read in
    /// 34-36 ms instead of 43-72 ms (5 chunks each), most of the difference Polars' import of
    /// each chunk. A list of 4 MiB or more is still decoded in ranges on every thread, a batch
    /// each (the other columns sliced to match): joining them would copy the column. Other
    /// layouts are unaffected.
    pub fn with_whole_chunks(mut self, on: bool) -> Self {
        self.whole_chunks = on;
        self
    }
    /// The caller keeps every batch (a whole read into one table; default `false`): the batches
    /// of an in-memory or mapped file (of 1 MiB or more) are then decoded on the thread pool
    /// while the schema walk goes on, instead of after it. The batches are the same either way;
    /// memory is the whole table either way for such a caller, but a reader built eager holds
    /// decoded batches before they are asked for.
    pub fn with_eager(mut self, on: bool) -> Self {
        self.eager = on;
        self
    }
    /// Output only types Polars imports as they are (default `false`: the exact Arrow types):
    /// `FixedSizeList` of width 0 becomes `List`, seconds (Timestamp, Duration) milliseconds, at
    /// any depth (see [`crate::types::polars_compatible_type`]). Decided when the reader is
    /// built; the schema says it, and every batch comes out in it.
    pub fn with_polars_types(mut self, on: bool) -> Self {
        self.polars_types = on;
        self
    }
    /// Carry the numpy facts Polars drops (field and schema metadata: byte order, string widths,
    /// complex, the file's layout, ...) in a `msgpack_arrow.numpy` extension type on the columns
    /// that have any (default `false`; see [`crate::types::extension`]). For Polars, which keeps
    /// an extension's metadata; the writer takes them back off.
    pub fn with_numpy_extension(mut self, on: bool) -> Self {
        self.numpy_extension = on;
        self
    }
    /// The smallest piece of a stream the schema walk gives a thread of its own (default 4 MiB).
    /// Exposed for tests, which walk small inputs in pieces to compare with a walk in one.
    #[doc(hidden)]
    pub fn with_walk_piece_bytes(mut self, n: usize) -> Self {
        self.walk_piece_bytes = n.max(1);
        self
    }
    /// The shortest input whose batches [`ReaderBuilder::with_eager`] decodes during the walk
    /// (default 1 MiB). Exposed for tests, which decode small inputs during the walk.
    #[doc(hidden)]
    pub fn with_ahead_min_bytes(mut self, n: usize) -> Self {
        self.ahead_min_bytes = n;
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
    /// Start at this row (default 0): the rows before it are stepped over without being decoded
    /// where the input allows (a file or buffer of records or values; with a record index, see
    /// [`crate::io::index`], not even walked), else decoded and dropped. `n_rows` counts from
    /// here, and an inferred schema comes from the rows read.
    pub fn with_skip_rows(mut self, n: usize) -> Self {
        self.skip_rows = n;
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
    /// Say that the schema given ([`ReaderBuilder::with_schema`]) was inferred, from other rows
    /// or another file (a scan reads every file with the first one's), rather than chosen: then a
    /// value must be of the kind its column was inferred from, as in a read that infers from
    /// every row, and any other (a bool in an Int64 column, an int in a String one, a float64
    /// ndarray in a float32 one) is an error naming it, never converted. Default `false`: a
    /// schema's types are the caller's, and values of other kinds are converted into them
    /// exactly, as [`ReaderBuilder::with_schema_overrides`] does. A schema inferred from the
    /// first rows ([`ReaderBuilder::with_infer_rows`]) is always read so.
    pub fn with_schema_inferred(mut self, inferred: bool) -> Self {
        self.schema_inferred = inferred;
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
    /// Bound each batch by the input bytes of its rows as well (default [`DEFAULT_BATCH_BYTES`]):
    /// a batch ends after the row that reaches this many bytes, or at the batch size, whichever
    /// comes first (it holds at least one row). A row of a 16th of this bound or more (at least
    /// 1 MiB) ends its batch too: a stream of big arrays is read a batch per array, and an array
    /// whose payload is aligned in the input (a mapped file, a [`Buffer`]) is then a slice of it,
    /// not a copy.
    pub fn with_batch_bytes(mut self, n: usize) -> Self {
        self.batch_bytes = n.max(1);
        self
    }
    /// Only these columns, in this order (default: all). Others are skipped: their bytes are never copied.
    pub fn with_projection(mut self, columns: Option<Vec<String>>) -> Self {
        self.projection = columns;
        self
    }
    /// Infer the schema from this many rows (default `None`: all rows of an in-memory or mapped
    /// file, or of a compressed one read from a path or with
    /// [`ReaderBuilder::build_from_reopenable`] (see [`ReaderBuilder::with_hold_decompressed`]);
    /// 1000 for other `Read` streams). Keys first seen later are then errors.
    pub fn with_infer_rows(mut self, n: Option<usize>) -> Self {
        self.infer_rows = n;
        self
    }
    /// How many decompressed bytes a compressed file (or compressed bytes, or a remote object)
    /// may be held in memory as (default [`DEFAULT_HOLD_DECOMPRESSED`], 1 GiB), for the types of
    /// every row: an input up to this is decompressed once and read as bytes; a larger file is
    /// decompressed twice, a first pass for the types, then batch by batch in bounded memory (a
    /// larger remote object is fetched once, typed from its first rows). 0: always the latter.
    pub fn with_hold_decompressed(mut self, bytes: usize) -> Self {
        self.hold_decompressed = bytes;
        self
    }
    pub(crate) fn hold_decompressed(&self) -> usize {
        self.hold_decompressed
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
    /// Ext values of this type code hold `np.save` bytes (the `.npy` format, as msgpack and
    /// msgspec users write ndarrays with `ExtType(code, ...)`): read them as ndarrays, tensors
    /// like msgpack-numpy's. Default `None`: an ext value other than a timestamp is an error.
    pub fn with_npy_ext(mut self, code: Option<i8>) -> Self {
        self.npy_ext = code;
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
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }
    /// The input is a file mapping: pages already decoded may be dropped from memory.
    pub(crate) fn releasing_input(mut self) -> Self {
        self.release_input = true;
        self
    }
    /// The input is memory only this read holds: rows finally decoded free their pages (never
    /// those a walk or a decode ahead has passed: a batch decoded ahead may be decoded again).
    pub(crate) fn releasing_decoded(mut self) -> Self {
        self.release_decoded = true;
        self
    }
    /// Rows skipped before the first one read ([`ReaderBuilder::with_skip_rows`]).
    pub fn skip_rows(&self) -> usize {
        self.skip_rows
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
    /// The bound of a batch in input bytes.
    pub fn batch_bytes(&self) -> usize {
        self.batch_bytes
    }
    /// Whether the types are the caller's: a schema or schema overrides given.
    pub fn types_given(&self) -> bool {
        (self.schema.is_some() && !self.schema_inferred) || self.overrides.is_some()
    }

    /// The threads that decode batches of one buffer (by default the thread pool's: every core,
    /// or `RAYON_NUM_THREADS`).
    fn decode_threads(&self) -> usize {
        self.threads.unwrap_or_else(rayon::current_num_threads)
    }

    /// Whether batches are decoded during the walk ([`ReaderBuilder::with_eager`]): only where
    /// batches are decoded in parallel, and not from a worker of the thread pool (the walk
    /// waits for the pool's decoding, which must not wait on it). With a schema or overrides
    /// given, a batch is decoded with what the schema will be (see `plan_with`'s `hand_on`).
    fn decodes_ahead(&self) -> bool {
        self.eager && self.decode_threads() > 1 && rayon::current_thread_index().is_none()
    }

    /// A read of rows whose schema is given and whose batches are taken one by one (not
    /// [`ReaderBuilder::with_eager`]): walked on a thread of its own and decoded as the walk
    /// goes ([`piped`]). `None` where that does not apply: another layout or container, a first
    /// object that is an array (whose plan may be made again), rows to skip, one thread, a small
    /// input, a table so wide that its batches are cut smaller than the walk's, a projection.
    fn piped(&self, buf: &Buffer, cut: Option<Truncation>) -> Result<Option<Reader>> {
        let Some(given) = &self.schema else {
            return Ok(None);
        };
        let data = buf.as_slice();
        let first_is_array =
            Cursor::new(data, 0).peek_kind().ok() == Some(crate::wire::cursor::Kind::Array);
        // a read of some columns only: their batches are small beside the walk's lead, which
        // holds whole batches of the file mapped (a scan of the ids of T: +30 MiB of peak)
        let every_column = self.projection.as_ref().is_none_or(|p| {
            let p: std::collections::HashSet<&str> = p.iter().map(String::as_str).collect();
            given.fields().iter().all(|f| p.contains(f.name().as_str()))
        });
        if !every_column
            || self.eager
            || self.skip_rows > 0
            || self.decode_threads() < 2
            || rayon::current_thread_index().is_some()
            || buf.len() < self.ahead_min_bytes
            || first_is_array
        {
            return Ok(None);
        }
        let single = plan::only_object(self, data)?;
        let Some(p) = plan::plan_first(self, data, single)? else {
            return Ok(None);
        };
        if !matches!(p.layout, Layout::Records | Layout::Values)
            || p.container != Container::Stream
            || p.rows == Some(0)
        {
            return Ok(None);
        }
        let full = with_layout_metadata(given, p.layout, p.container);
        let projected = project(&full, self.projection.as_deref())?;
        if !self.walk_batches_fit(projected.fields().len()) {
            return Ok(None);
        }
        let schema = Arc::new(projected);
        let piped = piped::Piped::start(self.clone(), buf.clone(), schema.clone())?;
        Ok(Some(Reader {
            schema,
            layout: p.layout,
            reason: p.reason,
            inner: Inner::Piped(Box::new(piped)),
            truncation: cut,
            window: RowWindow::ALL,
            convert: Vec::new(),
            decoded: Arc::new(Schema::empty()),
        }))
    }

    /// Whether batches of `batch_size` rows hold at most [`MAX_BATCH_CELLS`] values of
    /// `columns` columns (the piped read cuts batches of `batch_size` rows).
    fn walk_batches_fit(&self, columns: usize) -> bool {
        self.batch_rows(columns) == self.batch_size
    }

    /// How many columns a read of rows `columns` wide gives: the projection's where there is
    /// one, one for anything but `records` (a `values` row is one column, maps or not).
    pub(crate) fn read_width(&self, layout: Layout, columns: usize) -> usize {
        match (layout, &self.projection) {
            (Layout::Records, Some(p)) => p.len(),
            (Layout::Records, None) => columns,
            _ => 1,
        }
    }

    /// Rows per batch of a table `columns` wide: `batch_size`, fewer where that many rows would
    /// hold more than [`MAX_BATCH_CELLS`] values.
    pub(crate) fn batch_rows(&self, columns: usize) -> usize {
        self.batch_size
            .min((MAX_BATCH_CELLS / columns.max(1)).max(1))
    }

    /// What every batch decoder is told of the read; `input`: the buffer its rows lie in, where
    /// a tensor may be a slice of it (not of memory the read frees behind it).
    pub(crate) fn decode_ctx(&self, input: Option<&Buffer>) -> Ctx {
        Ctx {
            dialect: self.dialect,
            npy_ext: self.npy_ext,
            max_depth: self.max_depth,
            strict_keys: self.schema.is_none() || self.strict_schema,
            given_schema: self.schema.is_some(),
            convert: self.schema.is_some() && !self.schema_inferred,
            overridden: self
                .overrides
                .as_ref()
                .map(|o| Arc::new(o.fields().iter().map(|f| f.name().clone()).collect())),
            input: input.filter(|_| !self.release_decoded).cloned(),
        }
    }

    fn infer_options(&self) -> InferOptions {
        InferOptions {
            dialect: self.dialect,
            npy_ext: self.npy_ext,
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
        let (left, polars, ext) = (this.n_rows, this.polars_types, this.numpy_extension);
        // a given schema is the file's whole (a scan's first file): its metadata and first column
        // make every file and projection wrap alike
        let given = this.schema.clone();
        let (overrides, strict) = (this.overrides.clone(), this.projection.is_none());
        let mut r = read(this)?;
        r.window.left = left;
        let r = r.output_types(overrides.as_deref(), strict, polars)?;
        Ok(if ext { r.numpy_extension(given) } else { r })
    }

    fn build_from_buffer_all(mut self, buf: Buffer) -> Result<Reader> {
        check_msgpack(&self, buf.as_slice())?;
        let cut = match self.on_truncated {
            OnTruncated::Keep => complete_prefix(buf.as_slice(), self.max_depth),
            OnTruncated::Error => None,
        };
        let buf = match &cut {
            Some(t) => buf.slice_with_length(0, t.offset as usize),
            None => buf,
        };
        self.cut_after = cut.is_some();
        if let Some(r) = self.piped(&buf, cut)? {
            return Ok(r);
        }
        let (plan, ahead) = if self.decodes_ahead() && buf.len() >= self.ahead_min_bytes {
            ahead::plan_ahead(&self, &buf)?
        } else {
            (plan(&self, buf.as_slice())?, Vec::new())
        };
        // what the plan stepped over is not dropped again
        let skip = self.skip_rows - plan.skipped;
        let mut r = Reader::from_plan(self, buf, plan, ahead)?;
        r.truncation = cut;
        r.window.skip = skip;
        Ok(r)
    }

    /// Read from any `Read`: a stream of records or values is decoded batch by batch in bounded
    /// memory; the single-object containers (one top-level array, one columns map, one bare
    /// ndarray) are read whole.
    pub fn build<R: Read + Send + 'static>(self, r: R) -> Result<Reader> {
        self.build_with(|b| b.build_all(r))
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
    /// the rows handed out: `skip` dropped first where the plan could not step over them
    /// undecoded ([`ReaderBuilder::with_skip_rows`]), then at most `n_rows`
    window: RowWindow,
    /// per column, the type its decoded array is converted to
    /// ([`ReaderBuilder::with_polars_types`]); empty: none is
    convert: Vec<Option<DataType>>,
    /// the schema before that conversion
    decoded: SchemaRef,
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
    Piped(Box<piped::Piped>),
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
            // (by hash: `field_with_name` for each of 65,535 columns was quadratic)
            let at: std::collections::HashMap<&str, usize> = schema
                .fields()
                .iter()
                .enumerate()
                .map(|(i, f)| (f.name().as_str(), i))
                .collect();
            let mut fields = Vec::with_capacity(p.len());
            for name in p {
                let f = at
                    .get(name.as_str())
                    .map(|&i| schema.field(i))
                    .ok_or_else(|| {
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
    fn from_plan(b: ReaderBuilder, buf: Buffer, p: Plan, ahead: ahead::Ahead) -> Result<Reader> {
        let ctx = b.decode_ctx(Some(&buf));
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
                window: RowWindow::ALL,
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
                // values whatever the width. The walk cut its batches as wide as the rows before
                // each cut: where columns came later, a batch of it may be too long, and the
                // rows are then decoded one batch after another instead.
                let batch_size = b.batch_rows(projected.fields().len());
                let total = p.rows.unwrap_or(0);
                let starts_fit = p
                    .batch_rows
                    .iter()
                    .zip(p.batch_rows.iter().skip(1).chain(std::iter::once(&total)))
                    .all(|(r0, r1)| r1.saturating_sub(*r0) <= batch_size);
                Ok(Reader {
                    schema: Arc::new(projected.clone()),
                    layout: p.layout,
                    reason: p.reason,
                    inner: Inner::Rows(Box::new(RowsReader {
                        buf,
                        release: b.release_input || b.release_decoded,
                        limit: Limit::new(b.max_decoded_bytes),
                        pos: p.first_row,
                        left: p.rows.unwrap_or(0),
                        row: 0,
                        batch_size,
                        batch_bytes: b.batch_bytes,
                        dec,
                        schema: Arc::new(projected),
                        par: {
                            let threads = b.decode_threads();
                            (threads > 1 && p.batch_starts.len() > 1 && starts_fit).then(|| {
                                Parallel {
                                    threads,
                                    starts: p.batch_starts.clone(),
                                    rows: p.batch_rows.clone(),
                                    next: 0,
                                    ready: Default::default(),
                                    layout: p.layout,
                                    full: full.clone(),
                                    projection: b.projection.clone(),
                                    ctx: ctx.clone(),
                                    ahead,
                                }
                            })
                        },
                    })),
                    truncation: None,
                    window: RowWindow::ALL,
                    convert: Vec::new(),
                    decoded: Arc::new(Schema::empty()),
                })
            }
            (Layout::Columns, _) | (Layout::Values, Container::NdArray) => {
                let mut schema = Arc::new(projected);
                let (mut batches, chunks) =
                    decode_columns(&b, &buf, &full, &schema, p.container, &ctx, &p.list_ranges)?;
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
                    window: RowWindow::ALL,
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
                window: RowWindow::ALL,
                convert: Vec::new(),
                decoded: Arc::new(Schema::empty()),
            }),
        }
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
    /// records, values or columns, and a `Read` stream that a first pass walked whole); `None`
    /// for other `Read` streams and for reads with a schema given that walk as they decode.
    pub fn num_rows(&self) -> Option<usize> {
        match &self.inner {
            Inner::Empty => Some(0),
            Inner::Rows(r) => Some(r.row as usize + r.left),
            Inner::Batches(b) => Some(
                b.as_slice()
                    .iter()
                    .map(|b| b.num_rows())
                    .sum::<usize>()
                    .saturating_sub(self.window.skip),
            ),
            Inner::Stream(s) => s.rows.map(|r| r.saturating_sub(self.window.skip)),
            // known once the walk is over
            Inner::Piped(_) => None,
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
        while !self.window.done() {
            let r = match &mut self.inner {
                Inner::Empty => return None,
                Inner::Rows(r) => r.next_batch(),
                Inner::Batches(b) => Ok(b.next()),
                Inner::Stream(s) => s.next_batch(),
                Inner::Piped(p) => p.next_batch(),
            };
            match r.and_then(|b| b.map(|b| self.converted(b)).transpose()) {
                Ok(Some(b)) => {
                    if let Some(b) = self.window.cut(b) {
                        return Some(Ok(b));
                    }
                }
                Ok(None) => return None,
                Err(e) => {
                    // an error ends the stream
                    self.inner = Inner::Empty;
                    return Some(Err(e));
                }
            }
        }
        None
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
mod tests;
