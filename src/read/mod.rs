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
pub(crate) mod infer;

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};

use self::array::{make_decoder, nest_fixed, unknown_key, ArrayDecoder, Ctx, StructDecoder};
use self::infer::{InferOptions, Inferrer, NdKind, Ty};
use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, Layout, ObjectArrays, TensorMode};
use crate::types::{meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, Special};

/// Default rows per batch.
pub const DEFAULT_BATCH_SIZE: usize = 65_536;
/// Default nesting limit.
pub const DEFAULT_MAX_DEPTH: usize = 128;
/// Rows a streaming (`Read`) source infers its schema from, by default.
pub const DEFAULT_STREAM_INFER_ROWS: usize = 1000;

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
        }
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
    /// The batch size set.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn infer_options(&self) -> InferOptions {
        InferOptions {
            dialect: self.dialect,
            tensor: self.tensor,
            object_arrays: self.object_arrays,
            max_depth: self.max_depth,
        }
    }

    /// Read from bytes in memory (copied once into an Arrow buffer; use
    /// [`ReaderBuilder::build_from_buffer`] to avoid the copy).
    pub fn build_from_slice(self, data: &[u8]) -> Result<Reader> {
        self.build_from_buffer(Buffer::from(data))
    }

    /// Read from an Arrow buffer. `columns`-layout tensors are taken zero-copy where aligned.
    pub fn build_from_buffer(self, buf: Buffer) -> Result<Reader> {
        let plan = plan(&self, buf.as_slice())?;
        Reader::from_plan(self, buf, plan)
    }

    /// Read a file: memory-mapped when plain; `.zst`, `.lz4`, `.gz` are decompressed on the fly.
    pub fn build_from_path(self, path: impl AsRef<Path>) -> Result<Reader> {
        let path = path.as_ref();
        match crate::io::compress::open_input(path)? {
            crate::io::compress::Input::Mmap(m) => {
                let mut b = self;
                b.release_input = true;
                b.build_from_buffer(mmap_buffer(m))
            }
            crate::io::compress::Input::Stream(r) => self.build(r),
        }
    }

    /// Read from any `Read`: a stream of records or values is decoded batch by batch in bounded
    /// memory; the single-object containers (one top-level array, one columns map, one bare
    /// ndarray) are read whole.
    pub fn build<R: Read + Send + 'static>(self, r: R) -> Result<Reader> {
        let mut s = StreamReader::new(Box::new(r));
        // buffer the first object (and one more byte, to know whether more follow)
        let first_end = s.fill_object(0)?;
        let single = match first_end {
            None => true,
            Some(e) => !s.fill_to(e + 1)?,
        };
        let probe_plan = plan_first(&self, &s.buf, single)?;
        match probe_plan.map(|p| (p.layout, p.container)) {
            Some((Layout::Records | Layout::Values, Container::Stream)) if !single => {
                let mut me = self;
                let infer = me.infer_rows.unwrap_or(DEFAULT_STREAM_INFER_ROWS);
                me.infer_rows = Some(infer);
                // buffer `infer` objects to infer from
                let mut end = 0usize;
                let mut n = 0usize;
                while n < infer {
                    match s.fill_object(end)? {
                        Some(e) => {
                            end = e;
                            n += 1;
                        }
                        None => break,
                    }
                }
                let plan = plan(&me, &s.buf[..end])?;
                Reader::from_stream(me, s, plan)
            }
            _ => {
                let mut all = std::mem::take(&mut s.buf);
                s.src.read_to_end(&mut all)?;
                self.build_from_buffer(Buffer::from_vec(all))
            }
        }
    }
}

/// Map a file into an Arrow buffer without copying.
pub(crate) fn mmap_buffer(m: memmap2::Mmap) -> Buffer {
    let len = m.len();
    if len == 0 {
        return Buffer::from_vec(Vec::<u8>::new());
    }
    let ptr = std::ptr::NonNull::new(m.as_ptr() as *mut u8)
        .expect("mmap of a non-empty file is non-null");
    // SAFETY: the pointer and length describe the mapping, which the Arc keeps alive as long as any
    // Buffer slice refers to it; it is never written through.
    unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(m)) }
}

/// How rows are contained in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Container {
    /// concatenated objects, one row each (columns: one chunk each)
    Stream,
    /// one top-level array, one row per element
    Array,
    /// one bare ndarray, axis 0 are the rows
    NdArray,
    /// nothing to read
    Empty,
}

impl Container {
    fn as_str(self) -> &'static str {
        match self {
            Container::Stream | Container::Empty => "stream",
            Container::Array => "array",
            Container::NdArray => "ndarray",
        }
    }
}

/// The decisions made before decoding: layout, container, schema, where rows start.
pub(crate) struct Plan {
    pub layout: Layout,
    pub container: Container,
    pub reason: String,
    /// full (unprojected) schema
    pub schema: Option<SchemaRef>,
    /// position of the first row and number of rows (records/values over a stream or array)
    pub first_row: usize,
    pub rows: Option<usize>,
    /// position of every `batch_size`-th row: where each batch starts (records/values)
    pub batch_starts: Vec<usize>,
}

/// Layout decision from the first object alone. `None` for an empty input.
fn plan_first(b: &ReaderBuilder, data: &[u8], single: bool) -> Result<Option<Plan>> {
    let c = Cursor::new(data, 0);
    if c.is_empty() {
        return Ok(None);
    }
    let mk = |layout, container, reason: &str, first_row| {
        Some(Plan {
            layout,
            container,
            reason: reason.to_string(),
            schema: None,
            first_row,
            rows: None,
            batch_starts: Vec::new(),
        })
    };
    let kind = c.peek_kind()?;
    let special = if kind == Kind::Map {
        let mut d = c.clone();
        match probe(&mut d, b.dialect, b.max_depth)? {
            Some(Special::Array(nd)) => Some(nd.shape.len()),
            Some(Special::Complex(..)) => Some(0),
            None => None,
        }
    } else {
        None
    };
    // a top-level array that is the only object: its elements are the rows
    let array_first_is_map = if kind == Kind::Array && single {
        let mut d = c.clone();
        let n = d.read_array_len()?;
        if n == 0 {
            return Ok(Some(Plan {
                layout: if b.layout == Layout::Auto {
                    Layout::Values
                } else {
                    b.layout
                },
                container: Container::Array,
                reason: "empty top-level array".into(),
                schema: None,
                first_row: 0,
                rows: Some(0),
                batch_starts: Vec::new(),
            }));
        }
        let first_row = d.pos();
        let is_map =
            d.peek_kind()? == Kind::Map && probe(&mut d.clone(), b.dialect, b.max_depth)?.is_none();
        Some((is_map, first_row))
    } else {
        None
    };
    Ok(match b.layout {
        Layout::Auto => match (kind, special, array_first_is_map) {
            (Kind::Map, None, _) if single && is_columns_map(&mut c.clone(), b)? => mk(
                Layout::Columns,
                Container::Stream,
                "auto: one map whose values are all ndarrays or lists of one length",
                0,
            ),
            (Kind::Map, None, _) => mk(
                Layout::Records,
                Container::Stream,
                "auto: first object is a map",
                0,
            ),
            (Kind::Array, _, Some((true, p))) => mk(
                Layout::Records,
                Container::Array,
                "auto: one top-level array of maps",
                p,
            ),
            (Kind::Array, _, Some((false, p))) => mk(
                Layout::Values,
                Container::Array,
                "auto: one top-level array of non-map values",
                p,
            ),
            (Kind::Map, Some(ndim), _) if single && ndim >= 1 => mk(
                Layout::Values,
                Container::NdArray,
                "auto: one bare ndarray; its axis 0 are the rows",
                0,
            ),
            _ => mk(
                Layout::Values,
                Container::Stream,
                "auto: first object is not a map",
                0,
            ),
        },
        Layout::Records => match array_first_is_map {
            Some((_, p)) => mk(
                Layout::Records,
                Container::Array,
                "records: one top-level array",
                p,
            ),
            None => mk(
                Layout::Records,
                Container::Stream,
                "records: a stream of maps",
                0,
            ),
        },
        Layout::Columns => mk(
            Layout::Columns,
            Container::Stream,
            "columns: map(s) of name → ndarray or list",
            0,
        ),
        Layout::Values => match (array_first_is_map, special) {
            (Some((_, p)), _) => mk(
                Layout::Values,
                Container::Array,
                "values: one top-level array",
                p,
            ),
            (None, Some(ndim)) if single && ndim >= 1 => mk(
                Layout::Values,
                Container::NdArray,
                "values: one bare ndarray; its axis 0 are the rows",
                0,
            ),
            _ => mk(
                Layout::Values,
                Container::Stream,
                "values: a stream of values",
                0,
            ),
        },
    })
}

/// Whether the map at the cursor qualifies for `auto` → `columns`.
fn is_columns_map(c: &mut Cursor<'_>, b: &ReaderBuilder) -> Result<bool> {
    let n = c.read_map_len()?;
    if n == 0 {
        return Ok(false);
    }
    let mut len = None;
    for _ in 0..n {
        if !matches!(c.peek_kind()?, Kind::Str | Kind::Bin) {
            return Ok(false);
        }
        c.read_str_or_bin()?;
        let l = match c.peek_kind()? {
            Kind::Array => {
                let l = c.clone().read_array_len()?;
                c.skip(b.max_depth)?;
                l
            }
            Kind::Map => match probe(c, b.dialect, b.max_depth)? {
                Some(Special::Array(nd)) if !nd.scalar && !nd.shape.is_empty() => nd.shape[0],
                _ => return Ok(false),
            },
            _ => return Ok(false),
        };
        if *len.get_or_insert(l) != l {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Full plan: layout, and the schema inferred unless given.
fn plan(b: &ReaderBuilder, data: &[u8]) -> Result<Plan> {
    let single = {
        let mut c = Cursor::new(data, 0);
        c.is_empty() || {
            c.skip(b.max_depth)?;
            // one top-level array is walked whole here: drop what it mapped in
            if b.release_input {
                release_pages(data, 0, c.pos());
            }
            c.is_empty()
        }
    };
    let Some(mut p) = plan_first(b, data, single)? else {
        return Ok(Plan {
            layout: if b.layout == Layout::Auto {
                Layout::Values
            } else {
                b.layout
            },
            container: Container::Empty,
            reason: "empty input".into(),
            schema: None,
            first_row: 0,
            rows: Some(0),
            batch_starts: Vec::new(),
        });
    };
    if p.container == Container::Empty || p.rows == Some(0) {
        return Ok(p);
    }
    let mut inf = Inferrer::new(b.infer_options());
    if let Some(o) = &b.overrides {
        inf.given = o.fields().iter().map(|f| f.name().clone()).collect();
    }
    // values layout: the one column is "value"
    let given_value = p.layout == Layout::Values && inf.given.iter().any(|g| g == "value");
    let mut c = Cursor::new(data, 0);
    let layout = p.layout;
    // given columns (schema overrides) that hold ndarrays
    let mut given_nd: Vec<String> = Vec::new();
    let ty_to_schema = |ty: Ty, inf: &Inferrer| -> Result<Schema> {
        match ty {
            // records and columns: one column per key
            Ty::Struct(fields) if layout != Layout::Values => Ok(Schema::new(
                fields
                    .iter()
                    .map(|(k, v)| inf.column_field(k, v))
                    .collect::<Result<Vec<Field>>>()?,
            )),
            // values: one column, whatever it holds (maps are a Struct column, all-nil a Null one)
            other => Ok(Schema::new(vec![other.to_field("value", &inf.opts)?])),
        }
    };
    // with a schema given, rows are only counted (and batch starts found), not inferred
    let limit = if b.schema.is_some() {
        0
    } else {
        b.infer_rows.unwrap_or(usize::MAX)
    };
    match (p.layout, p.container) {
        (Layout::Records | Layout::Values, Container::Stream | Container::Array) => {
            // walk the rows: count them all, infer from the first `limit`
            let mut ty = if p.layout == Layout::Records {
                Ty::Struct(Default::default())
            } else {
                Ty::Null
            };
            let (mut left, array) = if p.container == Container::Array {
                let n = c.read_array_len()?;
                (n, true)
            } else {
                (usize::MAX, false)
            };
            p.first_row = c.pos();
            let mut rows = 0usize;
            let mut empties: HashMap<String, serde_json::Map<String, serde_json::Value>> =
                HashMap::new();
            let mut released = 0usize;
            while left > 0 && !c.is_empty() {
                let at = c.offset();
                // a mapped file: this walk over every row would otherwise keep the whole file
                // resident until decoding drops it again
                released = release_behind(b.release_input, data, released, c.pos());
                if rows % b.batch_size == 0 {
                    p.batch_starts.push(c.pos());
                }
                let known = rows < limit
                    && b.fast_infer
                    && if p.layout == Layout::Records {
                        inf.fits_row(&ty, &mut c)
                    } else {
                        inf.fits_value(&ty, &mut c)
                    };
                if known {
                    // the row adds nothing to `ty`: nothing to merge
                } else if rows < limit {
                    let t = if p.layout == Layout::Records {
                        if c.peek_kind()? != Kind::Map {
                            return Err(c
                                .error(ErrorKind::Layout(format!(
                                    "records layout: row {rows} is not a map"
                                )))
                                .at_record(rows as u64));
                        }
                        inf.map(&mut c, 0)
                    } else if given_value {
                        inf.given_value(&mut c)
                    } else {
                        inf.value(&mut c, 0)
                    }
                    .map_err(|e| e.at_offset(at).at_record(rows as u64))?;
                    note_empty_shapes(&t, rows, &mut empties);
                    ty = ty
                        .merge(t)
                        .map_err(|e| e.at_offset(at).at_record(rows as u64))?;
                } else {
                    c.skip(b.max_depth).map_err(|e| e.at_record(rows as u64))?;
                }
                rows += 1;
                if array {
                    left -= 1;
                }
            }
            if array && !c.is_empty() {
                return Err(c.error(ErrorKind::Layout("data after the top-level array".into())));
            }
            p.rows = Some(rows);
            match &ty {
                Ty::Struct(fields) => {
                    given_nd = fields
                        .iter()
                        .filter(|(_, t)| **t == Ty::Given(true))
                        .map(|(k, _)| k.clone())
                        .collect();
                }
                Ty::Given(true) => given_nd = vec!["value".to_string()],
                _ => {}
            }
            if b.schema.is_none() {
                let schema = ty_to_schema(ty, &inf)?;
                p.schema = Some(Arc::new(attach_empty_shapes(schema, empties)));
            }
        }
        (Layout::Columns, _) => {
            let mut ty = Ty::Struct(Default::default());
            let mut chunks = 0;
            while !c.is_empty() && b.schema.is_none() && (chunks == 0 || b.infer_rows.is_none()) {
                let t = infer_columns_map(&mut c, &mut inf, b)?;
                ty = ty.merge(t).map_err(|e| e.at_record(chunks))?;
                chunks += 1;
            }
            if b.schema.is_none() {
                p.schema = Some(Arc::new(ty_to_schema(ty, &inf)?));
            }
        }
        (Layout::Values, Container::NdArray) if b.schema.is_none() => {
            let t = infer_columns_value(&mut c, &mut inf, b)?.1;
            {
                p.schema = Some(Arc::new(Schema::new(vec![t.to_field("value", &inf.opts)?])));
            }
        }
        (Layout::Values, Container::NdArray) => {}
        _ => unreachable!("plan_first gives only these"),
    }
    if let Some(s) = &b.schema {
        p.schema = Some(s.clone());
    } else if let (Some(o), Some(s), Layout::Records | Layout::Values) =
        (&b.overrides, &p.schema, p.layout)
    {
        // the given columns take the given types (without the inferred numpy metadata)
        let fields: Vec<Field> = s
            .fields()
            .iter()
            .map(|f| match o.field_with_name(f.name()) {
                Ok(g) => {
                    // a bin key stays one
                    let mut md: HashMap<String, String> = f
                        .metadata()
                        .get(meta::KEY)
                        .map(|v| (meta::KEY.to_string(), v.clone()))
                        .into_iter()
                        .collect();
                    // ndarrays: decoded as tensors of the given element type
                    if let Some(Some(dt)) = given_nd
                        .contains(f.name())
                        .then(|| leaf_dtype(g.data_type()))
                    {
                        md.insert(meta::KIND.to_string(), "ndarray".to_string());
                        md.insert(meta::DTYPE.to_string(), dt.to_dtype_str());
                    }
                    Field::new(f.name(), g.data_type().clone(), true).with_metadata(md)
                }
                Err(_) => f.as_ref().clone(),
            })
            .collect();
        p.schema = Some(Arc::new(Schema::new_with_metadata(
            fields,
            s.metadata().clone(),
        )));
    }
    Ok(p)
}

/// The numpy dtype (native order) of the numbers at the bottom of nested list types.
fn leaf_dtype(t: &arrow_schema::DataType) -> Option<NumpyDtype> {
    use arrow_schema::DataType as T;
    let s = match t {
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => return leaf_dtype(f.data_type()),
        T::Boolean => "|b1",
        T::Int8 => "|i1",
        T::Int16 => "<i2",
        T::Int32 => "<i4",
        T::Int64 => "<i8",
        T::UInt8 => "|u1",
        T::UInt16 => "<u2",
        T::UInt32 => "<u4",
        T::UInt64 => "<u8",
        T::Float16 => "<f2",
        T::Float32 => "<f4",
        T::Float64 => "<f8",
        _ => return None,
    };
    NumpyDtype::parse(s)
        .ok()
        .map(|d| crate::types::buffers::native(&d))
}

/// The most shapes recorded per column (beyond it, such rows write back as `(0, 0, ...)`).
const MAX_EMPTY_SHAPES: usize = 4096;
/// Column maps (chunks) of one file recorded in the schema, at most ([`meta::CHUNKS`]: more are
/// written back as one map).
const MAX_CHUNKS: usize = 4096;

/// Remember row shapes that nested Lists lose (a 0 axis followed by non-zero ones: `(0, 5)`).
fn note_empty_shapes(
    t: &Ty,
    row: usize,
    out: &mut HashMap<String, serde_json::Map<String, serde_json::Value>>,
) {
    let mut note = |name: &str, t: &Ty| {
        if let Ty::Nd { shape, .. } = t {
            let lost = shape
                .iter()
                .skip_while(|d| **d != Some(0))
                .any(|d| d.is_some_and(|d| d > 0));
            if lost {
                let m = out.entry(name.to_string()).or_default();
                if m.len() < MAX_EMPTY_SHAPES {
                    m.insert(row.to_string(), serde_json::json!(shape));
                }
            }
        }
    };
    match t {
        Ty::Struct(fields) => fields.iter().for_each(|(k, v)| note(k, v)),
        other => note("value", other),
    }
}

fn attach_empty_shapes(
    schema: Schema,
    mut empties: HashMap<String, serde_json::Map<String, serde_json::Value>>,
) -> Schema {
    if empties.is_empty() {
        return schema;
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match empties.remove(f.name()) {
            Some(m) if matches!(f.data_type(), arrow_schema::DataType::List(_)) => {
                let mut md = f.metadata().clone();
                md.insert(
                    meta::EMPTY_SHAPES.to_string(),
                    serde_json::Value::Object(m).to_string(),
                );
                f.as_ref().clone().with_metadata(md)
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Infer one `columns` map: the type of each column's rows.
fn infer_columns_map(c: &mut Cursor<'_>, inf: &mut Inferrer, b: &ReaderBuilder) -> Result<Ty> {
    let at = c.offset();
    if c.peek_kind()? != Kind::Map {
        return Err(c.error(ErrorKind::Layout(
            "columns layout: expected a map of name → ndarray or list".into(),
        )));
    }
    let n = c.read_map_len()?;
    let mut fields = indexmap::IndexMap::new();
    let mut len: Option<(usize, String)> = None;
    for _ in 0..n {
        let kp = c.pos();
        let key = inf.top_key(c)?;
        if fields.contains_key(key) {
            return Err(c.error_at(
                kp,
                ErrorKind::Key(format!("duplicate key {key:?} in one map")),
            ));
        }
        if !inf.list_columns.contains_key(key) {
            let list = c.peek_kind()? == Kind::Array;
            inf.list_columns.insert(key.to_string(), list);
        }
        let (l, t) = infer_columns_value(c, inf, b).map_err(|e| e.prepend_path(key))?;
        match &len {
            Some((l0, k0)) if *l0 != l => {
                return Err(Error::new(ErrorKind::Layout(format!(
                    "columns of unequal length: {k0:?} has {l0} rows, {key:?} has {l}"
                )))
                .at_offset(at))
            }
            _ => len = Some((l, key.to_string())),
        }
        fields.insert(key.to_string(), t);
    }
    Ok(Ty::Struct(fields))
}

/// Infer one column of a `columns` map: (rows, type of a row).
fn infer_columns_value(
    c: &mut Cursor<'_>,
    inf: &mut Inferrer,
    b: &ReaderBuilder,
) -> Result<(usize, Ty)> {
    let at = c.pos();
    match c.peek_kind()? {
        Kind::Array => {
            let n = c.read_array_len()?;
            let mut t = Ty::Null;
            for i in 0..n {
                let p = c.offset();
                let v = inf.value(c, 1)?;
                t = t.merge(v).map_err(|e| e.at_offset(p).at_record(i as u64))?;
            }
            Ok((n, t))
        }
        Kind::Map => match probe(c, b.dialect, b.max_depth)? {
            Some(Special::Array(nd)) if !nd.scalar && !nd.shape.is_empty() => {
                let dt = inf.dtype(nd.type_raw, &nd, c.offset_of(0))?;
                if matches!(dt, NumpyDtype::Object) {
                    return Err(c.error_at(
                        at,
                        match b.object_arrays {
                            ObjectArrays::Error => ErrorKind::ObjectArray,
                            // raw keeps one pickle per value: it cannot be cut into rows
                            ObjectArrays::Raw => ErrorKind::Layout(
                                "an object (pickle) ndarray cannot give a column's rows: its \
                                 pickle holds them all and is never unpickled; read with \
                                 layout=\"records\" to keep it as one Binary value"
                                    .into(),
                            ),
                        },
                    ));
                }
                nd.check_len(&dt, c.offset_of(0))?;
                let shape = nd.shape[1..].iter().map(|&d| Some(d)).collect();
                Ok((
                    nd.shape[0],
                    Ty::Nd {
                        dt,
                        shape,
                        kind: NdKind::Array,
                        widths: false,
                    },
                ))
            }
            _ => Err(c.error_at(
                at,
                ErrorKind::Layout(
                    "columns layout: a value must be an ndarray with ndim ≥ 1 or a list".into(),
                ),
            )),
        },
        k => Err(c.error(ErrorKind::Layout(
            format!("columns layout: a value must be an ndarray or a list, found {k:?}")
                .to_lowercase(),
        ))),
    }
}

/// Reads `RecordBatch`es; wrap it in [`ArrowReader`] for an [`arrow_array::RecordBatchReader`].
pub struct Reader {
    schema: SchemaRef,
    layout: Layout,
    reason: String,
    inner: Inner,
}

enum Inner {
    Empty,
    Rows(Box<RowsReader>),
    Batches(std::vec::IntoIter<RecordBatch>),
    Stream(Box<StreamRows>),
}

/// Decodes consecutive rows (records or values) of a buffer.
struct RowsReader {
    buf: Buffer,
    /// drop decoded pages of a file mapping, so a big file's RSS stays near one batch
    release: bool,
    limit: Limit,
    pos: usize,
    left: usize,
    row: u64,
    batch_size: usize,
    dec: RowDecoder,
    schema: SchemaRef,
    /// parallel decoding: where each batch starts, and what it takes to make more decoders
    par: Option<Parallel>,
}

struct Parallel {
    threads: usize,
    starts: Vec<usize>,
    /// index of the next batch to decode
    next: usize,
    ready: std::collections::VecDeque<RecordBatch>,
    layout: Layout,
    full: Schema,
    projection: Option<Vec<String>>,
    ctx: Ctx,
}

// one per reader, matched on every row: kept inline rather than boxed
#[allow(clippy::large_enum_variant)]
enum RowDecoder {
    Records(StructDecoder),
    Values(Box<dyn ArrayDecoder>),
}

impl RowDecoder {
    fn new(
        layout: Layout,
        full: &Schema,
        projection: Option<&[String]>,
        ctx: &Ctx,
    ) -> Result<(Self, SchemaRef)> {
        if layout == Layout::Records {
            let d = StructDecoder::new(full.fields().clone(), projection, ctx)?;
            let s = Arc::new(Schema::new_with_metadata(
                d.output_fields(),
                full.metadata().clone(),
            ));
            Ok((RowDecoder::Records(d), s))
        } else {
            let f = full.fields().first().ok_or_else(|| {
                Error::new(ErrorKind::Layout(
                    "values layout needs a schema with one field".into(),
                ))
            })?;
            let d = make_decoder(f, ctx).map_err(|e| e.prepend_path(f.name()))?;
            Ok((RowDecoder::Values(d), Arc::new(full.clone())))
        }
    }
    #[inline]
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match self {
            RowDecoder::Records(d) => d.decode_map(c),
            RowDecoder::Values(d) => d.decode(c),
        }
    }
    fn reserve(&mut self, rows: usize) {
        match self {
            RowDecoder::Records(d) => d.reserve_rows(rows),
            RowDecoder::Values(d) => d.reserve(rows),
        }
    }
    fn finish(&mut self) -> Result<Vec<ArrayRef>> {
        match self {
            RowDecoder::Records(d) => d.finish_columns(),
            RowDecoder::Values(d) => Ok(vec![d.finish()?]),
        }
    }
}

fn batch(schema: &SchemaRef, cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
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
                        batch_size: b.batch_size,
                        dec,
                        schema: Arc::new(projected),
                        par: {
                            let threads = b.threads.unwrap_or_else(|| {
                                std::thread::available_parallelism().map_or(1, |n| n.get())
                            });
                            let whole = p.batch_starts.len() * b.batch_size >= p.rows.unwrap_or(0);
                            (threads > 1 && p.batch_starts.len() > 1 && whole).then(|| Parallel {
                                threads,
                                starts: p.batch_starts.clone(),
                                next: 0,
                                ready: Default::default(),
                                layout: p.layout,
                                full: full.clone(),
                                projection: b.projection.clone(),
                                ctx: ctx.clone(),
                            })
                        },
                    })),
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
                })
            }
            _ => Ok(Reader {
                schema: Arc::new(projected),
                layout: p.layout,
                reason: p.reason,
                inner: Inner::Empty,
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
                dec,
                schema: projected,
                batch_size: b.batch_size,
                row: 0,
                max_depth: b.max_depth,
                limit: Limit::new(b.max_decoded_bytes),
            })),
        })
    }

    /// The layout used (`auto` resolved).
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Why this layout was chosen.
    pub fn layout_reason(&self) -> &str {
        &self.reason
    }
    /// The output schema (projection applied; layout and container in its metadata).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
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

fn reorder(cols: Vec<ArrayRef>, dec_fields: &[String], schema: &SchemaRef) -> Vec<ArrayRef> {
    if dec_fields
        .iter()
        .map(String::as_str)
        .eq(schema.fields().iter().map(|f| f.name().as_str()))
    {
        return cols;
    }
    let by: HashMap<&str, &ArrayRef> = dec_fields
        .iter()
        .map(String::as_str)
        .zip(cols.iter())
        .collect();
    schema
        .fields()
        .iter()
        .map(|f| by[f.name().as_str()].clone())
        .collect()
}

impl RowsReader {
    /// Decode the next few batches at once, one per thread (rows were split at batch starts
    /// found while inferring, so each thread knows where its rows begin).
    fn next_parallel(&mut self) -> Result<Option<RecordBatch>> {
        let par = self.par.as_mut().expect("parallel");
        if let Some(b) = par.ready.pop_front() {
            return Ok(Some(b));
        }
        let total = self.row as usize + self.left;
        let first = par.next;
        let last = (first + par.threads).min(par.starts.len());
        if first >= last {
            return Ok(None);
        }
        let (bs, data, release) = (self.batch_size, self.buf.as_slice(), self.release);
        let results: Vec<Result<RecordBatch>> = {
            let par = &*par;
            let schema = &self.schema;
            let jobs: Vec<usize> = (first..last).collect();
            use rayon::prelude::*;
            jobs.par_iter()
                .map(|&k| {
                    let (mut dec, _) = RowDecoder::new(
                        par.layout,
                        &par.full,
                        par.projection.as_deref(),
                        &par.ctx,
                    )?;
                    let row0 = k * bs;
                    let n = bs.min(total - row0);
                    dec.reserve(n);
                    let mut c = Cursor::new(data, 0);
                    c.set_pos(par.starts[k]);
                    let mut released = c.pos();
                    for r in 0..n {
                        let at = c.offset();
                        dec.decode(&mut c)
                            .map_err(|e| e.at_offset(at).at_record((row0 + r) as u64))?;
                        released = release_behind(release, data, released, c.pos());
                    }
                    let cols = dec.finish()?;
                    let names = dec_names(&dec, schema);
                    batch(schema, reorder(cols, &names, schema), n)
                })
                .collect()
        };
        let end = par.starts.get(last).copied().unwrap_or(data.len());
        if self.release {
            release_pages(self.buf.as_slice(), par.starts[first], end);
        }
        par.next = last;
        for r in results {
            let b = r?;
            self.row += b.num_rows() as u64;
            self.left -= b.num_rows();
            self.limit.add(&b, end as u64)?;
            par.ready.push_back(b);
        }
        Ok(par.ready.pop_front())
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.par.is_some() {
            return self.next_parallel();
        }
        if self.left == 0 {
            return Ok(None);
        }
        let n = self.left.min(self.batch_size);
        self.dec.reserve(n);
        let data = self.buf.as_slice();
        let mut c = Cursor::new(data, 0);
        c.set_pos(self.pos);
        let mut released = self.pos;
        for _ in 0..n {
            let at = c.offset();
            self.dec
                .decode(&mut c)
                .map_err(|e| e.at_offset(at).at_record(self.row))?;
            self.row += 1;
            released = release_behind(self.release, data, released, c.pos());
        }
        let start = self.pos;
        self.pos = c.pos();
        self.left -= n;
        if self.release {
            release_pages(self.buf.as_slice(), start, self.pos);
        }
        let cols = self.dec.finish()?;
        let names = dec_names(&self.dec, &self.schema);
        let b = batch(&self.schema, reorder(cols, &names, &self.schema), n)?;
        self.limit.add(&b, self.pos as u64)?;
        Ok(Some(b))
    }
}

/// The cap on decoded bytes.
struct Limit {
    max: Option<u64>,
    used: u64,
}

impl Limit {
    fn new(max: Option<u64>) -> Self {
        Limit { max, used: 0 }
    }
    fn add(&mut self, b: &RecordBatch, offset: u64) -> Result<()> {
        if let Some(max) = self.max {
            self.used += b.get_array_memory_size() as u64;
            if self.used > max {
                return Err(Error::new(ErrorKind::LimitExceeded(max)).at_offset(offset));
            }
        }
        Ok(())
    }
}

/// How far a walk over a mapped file gets before it drops the pages behind it.
const RELEASE_STEP: usize = 4 << 20;

/// While rows of a mapped file are walked: once `[released, pos)` adds up to [`RELEASE_STEP`],
/// drop its pages, so a batch of wide rows does not keep its part of the file resident. Returns
/// the new `released`. (Mapping the next step ahead with MADV_POPULATE_READ was tried: no gain
/// measurable on a quiet machine.)
#[inline]
fn release_behind(release: bool, buf: &[u8], released: usize, pos: usize) -> usize {
    if release && pos - released >= RELEASE_STEP {
        release_pages(buf, released, pos);
        pos
    } else {
        released
    }
}

/// Tell the kernel the mapped pages of `[from, to)` are done with. They are file-backed and
/// read-only, so a later touch reads them back from the page cache: this only lowers RSS.
fn release_pages(buf: &[u8], from: usize, to: usize) {
    #[cfg(unix)]
    {
        let page = 4096usize;
        let base = buf.as_ptr() as usize;
        let a = (base + from).div_ceil(page) * page;
        let b = ((base + to) / page) * page;
        if b > a {
            // SAFETY: the range lies inside the mapping `buf` holds; MADV_DONTNEED on a read-only
            // file mapping discards nothing that cannot be read again.
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (buf, from, to);
}

fn dec_names(dec: &RowDecoder, schema: &SchemaRef) -> Vec<String> {
    match dec {
        RowDecoder::Records(d) => d.output_fields().iter().map(|f| f.name().clone()).collect(),
        RowDecoder::Values(_) => schema.fields().iter().map(|f| f.name().clone()).collect(),
    }
}

/// Decode `columns` maps (or one bare ndarray) into whole columns, then slice them into batches.
fn decode_columns(
    b: &ReaderBuilder,
    buf: &Buffer,
    full: &Schema,
    out: &SchemaRef,
    container: Container,
    ctx: &Ctx,
) -> Result<(Vec<RecordBatch>, Vec<usize>)> {
    let data = buf.as_slice();
    let mut c = Cursor::new(data, 0);
    let mut batches = Vec::new();
    let mut chunk_rows = Vec::new();
    let mut chunk = 0u64;
    while !c.is_empty() {
        let mut cols: HashMap<String, ArrayRef> = HashMap::new();
        let mut rows = None;
        if container == Container::NdArray {
            let f = &full.fields()[0];
            let (n, a) = decode_column_value(&mut c, buf, f, ctx)?;
            rows = Some(n);
            cols.insert(f.name().clone(), a);
        } else {
            let at = c.offset();
            let n = c.read_map_len().map_err(|e| e.at_record(chunk))?;
            for _ in 0..n {
                let kp = c.pos();
                let key = crate::read::infer::read_key(&mut c)?.to_string();
                let wanted = out.field_with_name(&key).is_ok();
                let Ok(f) = full.field_with_name(&key) else {
                    if ctx.strict_keys {
                        return Err(c.error_at(kp, unknown_key(&key, ctx)).at_record(chunk));
                    }
                    c.skip(b.max_depth)?;
                    continue;
                };
                if !wanted {
                    // projected out: skipped, its bytes never copied
                    c.skip(b.max_depth)?;
                    continue;
                }
                let (len, a) = decode_column_value(&mut c, buf, f, ctx)
                    .map_err(|e| e.prepend_path(&key).at_record(chunk))?;
                if let Some(r) = rows {
                    if r != len {
                        return Err(Error::new(ErrorKind::Layout(format!(
                            "columns of unequal length in one map: {r} and {len} ({key:?})"
                        )))
                        .at_offset(at));
                    }
                }
                rows = Some(len);
                cols.insert(key, a);
            }
            if rows.is_none() {
                // every column projected out: still count rows from the first value
                let mut d = Cursor::new(data, 0);
                d.set_pos(c.pos());
                rows = Some(0);
                let _ = d;
            }
        }
        let rows = rows.unwrap_or(0);
        let mut arrays = Vec::with_capacity(out.fields().len());
        for f in out.fields() {
            match cols.remove(f.name()) {
                Some(a) => arrays.push(a),
                None => arrays.push(arrow_array::new_null_array(f.data_type(), rows)),
            }
        }
        let whole = batch(out, arrays, rows)?;
        let mut off = 0;
        while off < rows {
            let n = (rows - off).min(b.batch_size);
            batches.push(whole.slice(off, n));
            off += n;
        }
        chunk_rows.push(rows);
        chunk += 1;
        if container == Container::NdArray {
            break;
        }
    }
    Ok((batches, chunk_rows))
}

/// One column of a `columns` map: an ndarray (N, *s) taken whole, or a list decoded row by row.
fn decode_column_value(
    c: &mut Cursor<'_>,
    buf: &Buffer,
    f: &Field,
    ctx: &Ctx,
) -> Result<(usize, ArrayRef)> {
    let at = c.pos();
    if c.peek_kind()? == Kind::Array {
        let n = c.read_array_len()?;
        let mut d = make_decoder(f, ctx)?;
        d.reserve(n);
        for i in 0..n {
            let p = c.offset();
            d.decode(c)
                .map_err(|e| e.at_offset(p).at_record(i as u64))?;
        }
        return Ok((n, d.finish()?));
    }
    let Some(Special::Array(nd)) = probe(c, ctx.dialect, ctx.max_depth)? else {
        return Err(c.error_at(
            at,
            ErrorKind::Layout(
                "columns layout: a value must be an ndarray with ndim ≥ 1 or a list".into(),
            ),
        ));
    };
    let dt = nd.parse_dtype(c.offset_of(nd.type_pos))?;
    if matches!(dt, NumpyDtype::Object) {
        return Err(c.error_at(at, ErrorKind::ObjectArray));
    }
    nd.check_len(&dt, c.offset_of(0))?;
    let want = f
        .metadata()
        .get(meta::DTYPE)
        .map(|s| NumpyDtype::from_metadata(s))
        .transpose()?;
    if let Some(w) = &want {
        if crate::types::buffers::native(w) != crate::types::buffers::native(&dt) {
            return Err(c.error_at(
                nd.type_pos,
                ErrorKind::TypeConflict(format!(
                    "ndarray of {} in a column of {}",
                    dt.to_dtype_str(),
                    w.to_dtype_str()
                )),
            ));
        }
    }
    if nd.shape.is_empty() {
        return Err(c.error_at(
            at,
            ErrorKind::Layout("columns layout: a 0-d array has no rows".into()),
        ));
    }
    let rows = nd.shape[0];
    // zero-copy when no swap is needed: a slice of the input buffer (to_arrow copies only if misaligned)
    let bytes = if dt.swap_width() == 0 && nd.in_place() {
        buf.slice_with_length(nd.data_pos, nd.data.len())
    } else {
        let mut m = MutableBuffer::new(nd.data.len());
        crate::types::buffers::advise_huge_pages(&mut m);
        crate::types::buffers::extend_native(&dt, &nd.data, &mut m);
        m.into()
    };
    let values = crate::types::buffers::to_arrow(
        &crate::types::buffers::native(&dt),
        bytes,
        nd.len,
        true,
        None,
    )?;
    let t = f.data_type();
    let arr: ArrayRef = if nd.shape.len() == 1 {
        values
    } else {
        match f.metadata().get(meta::EXTENSION_NAME).map(String::as_str) {
            Some("arrow.fixed_shape_tensor") => match t {
                arrow_schema::DataType::FixedSizeList(item, n) => Arc::new(
                    arrow_array::FixedSizeListArray::try_new(item.clone(), *n, values, None)?,
                ),
                _ => {
                    return Err(Error::new(ErrorKind::Layout(format!(
                        "bad tensor storage type {t}"
                    ))))
                }
            },
            _ => {
                // check the per-row shape fits the schema's FixedSizeList sizes
                let mut tt = t;
                for (axis, &d) in nd.shape[1..].iter().enumerate() {
                    match tt {
                        arrow_schema::DataType::FixedSizeList(item, n) if *n as usize == d => {
                            tt = item.data_type()
                        }
                        _ => {
                            return Err(c.error_at(
                                at,
                                ErrorKind::TypeConflict(format!(
                                    "ndarray of shape {:?} does not fit column type {t} (axis {})",
                                    nd.shape,
                                    axis + 1
                                )),
                            ))
                        }
                    }
                }
                nest_fixed(t, values, None, rows)?
            }
        }
    };
    Ok((rows, arr))
}

impl Iterator for Reader {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        let r = match &mut self.inner {
            Inner::Empty => return None,
            Inner::Rows(r) => r.next_batch(),
            Inner::Batches(b) => return b.next().map(Ok),
            Inner::Stream(s) => s.next_batch(),
        };
        match r {
            Ok(Some(b)) => Some(Ok(b)),
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

/// Buffers a `Read` source so whole top-level objects can be decoded from a slice.
pub(crate) struct StreamReader {
    src: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// absolute offset of `buf[0]`
    base: u64,
    eof: bool,
    /// How much the next read asks for: doubles while the source fills it, up to [`READ_CHUNK`],
    /// and drops to twice what a short read returned. Pipes, sockets and decompressors return
    /// less than asked; zero-filling a full chunk for each such read made a source that hands out
    /// a few bytes at a time cost a megabyte of writes per read.
    ask: usize,
}

/// The most one read asks for.
const READ_CHUNK: usize = 1 << 20;
/// The least one read asks for.
const MIN_READ: usize = 8 << 10;

impl StreamReader {
    fn new(src: Box<dyn Read + Send>) -> Self {
        StreamReader {
            src,
            buf: Vec::new(),
            base: 0,
            eof: false,
            ask: 64 << 10,
        }
    }
    /// Read until `buf` has at least `n` bytes; false at EOF before that.
    fn fill_to(&mut self, n: usize) -> Result<bool> {
        while self.buf.len() < n && !self.eof {
            let old = self.buf.len();
            let ask = self.ask;
            self.buf.resize(old + ask, 0);
            let got = loop {
                match self.src.read(&mut self.buf[old..]) {
                    Ok(g) => break g,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(old);
                        return Err(e.into());
                    }
                }
            };
            self.buf.truncate(old + got);
            self.ask = if got == ask {
                (ask * 2).min(READ_CHUNK)
            } else {
                (got * 2).clamp(MIN_READ, READ_CHUNK)
            };
            if got == 0 {
                self.eof = true;
            }
        }
        Ok(self.buf.len() >= n)
    }
    /// End of the complete object starting at `start`, reading more as needed; `None` at a clean EOF.
    fn fill_object(&mut self, start: usize) -> Result<Option<usize>> {
        loop {
            if start >= self.buf.len() && !self.fill_to(start + 1)? {
                return Ok(None);
            }
            let mut c = Cursor::new(&self.buf, self.base);
            c.set_pos(start);
            match c.skip(crate::read::DEFAULT_MAX_DEPTH.max(1024)) {
                Ok(()) => return Ok(Some(c.pos())),
                Err(e) if matches!(e.kind(), ErrorKind::Truncated { .. }) && !self.eof => {
                    // at least double what the object has buffered: every retry re-reads the
                    // object from its start, so fixed steps would make a big object quadratic
                    let want = self.buf.len() + READ_CHUNK.max(self.buf.len() - start);
                    self.fill_to(want)?;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

struct StreamRows {
    s: StreamReader,
    dec: RowDecoder,
    schema: SchemaRef,
    batch_size: usize,
    row: u64,
    max_depth: usize,
    limit: Limit,
}

impl StreamRows {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut n = 0usize;
        let mut pos = 0usize;
        while n < self.batch_size {
            match self.s.fill_object(pos)? {
                Some(end) => {
                    let mut c = Cursor::new(&self.s.buf[..end], self.s.base);
                    c.set_pos(pos);
                    let at = c.offset();
                    self.dec
                        .decode(&mut c)
                        .map_err(|e| e.at_offset(at).at_record(self.row))?;
                    pos = end;
                    n += 1;
                    self.row += 1;
                }
                None => break,
            }
        }
        let _ = self.max_depth;
        // drop what was decoded; keep the (partial) rest
        self.s.buf.drain(..pos);
        self.s.base += pos as u64;
        if n == 0 {
            return Ok(None);
        }
        let cols = self.dec.finish()?;
        let names = dec_names(&self.dec, &self.schema);
        let b = batch(&self.schema, reorder(cols, &names, &self.schema), n)?;
        self.limit.add(&b, self.s.base)?;
        Ok(Some(b))
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
