//! One msgpack-numpy object per row: a Binary column of blobs ↔ a typed column. Shared by the
//! `.msgpack` expression plugin (`plugin.rs`) and the eager Series functions (`series.rs`).
//!
//! Decoding checks that each blob is exactly one msgpack object, then reads the blobs with the
//! core reader in the `values` layout (one row per object): runs of blobs lying back to back in
//! the input's Arrow buffers are read in place, the others are copied behind a msgpack array
//! header (see [`Blobs`]). Null rows are skipped and put back afterwards. Encoding is the core's
//! `encode_values_per_row`.

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, FixedSizeListArray, GenericListArray, OffsetSizeTrait,
    StructArray, UInt32Array,
};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_schema::{ArrowError, DataType, Field};
use msgpack_arrow::read::DEFAULT_MAX_DEPTH;
use msgpack_arrow::wire::cursor::Cursor;
use msgpack_arrow::{Layout, ReaderBuilder};

/// A failure, with the row (of the input column) and the byte offset inside that row's blob.
#[derive(Debug, Clone)]
pub struct BlobError {
    pub message: String,
    pub row: Option<u64>,
    pub offset: Option<u64>,
    pub column: Option<String>,
}

impl BlobError {
    fn msg(message: impl Into<String>) -> Self {
        BlobError {
            message: message.into(),
            row: None,
            offset: None,
            column: None,
        }
    }
}

impl fmt::Display for BlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        let mut sep = " at ";
        if let Some(o) = self.offset {
            write!(f, "{sep}byte {o}")?;
            sep = " of ";
        }
        if let Some(r) = self.row {
            write!(f, "{sep}row {r}")?;
            sep = ", ";
        }
        if let Some(c) = &self.column {
            write!(f, "{sep}field {c:?}")?;
        }
        Ok(())
    }
}

impl From<ArrowError> for BlobError {
    fn from(e: ArrowError) -> Self {
        BlobError::msg(e.to_string())
    }
}

fn array_header(n: usize, b: &mut Vec<u8>) {
    if n < 16 {
        b.push(0x90 | n as u8);
    } else if n <= u16::MAX as usize {
        b.push(0xdc);
        b.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        b.push(0xdd);
        b.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// One blob must be exactly one msgpack object (the reader finds row boundaries by parsing).
fn check(row: usize, blob: &[u8]) -> Result<(), BlobError> {
    let fail = |message: String, offset: Option<u64>| BlobError {
        message,
        row: Some(row as u64),
        offset,
        column: None,
    };
    if blob.is_empty() {
        return Err(fail(
            "empty blob: a row must hold one msgpack object".into(),
            None,
        ));
    }
    let mut c = Cursor::new(blob, 0);
    if let Err(e) = c.skip(DEFAULT_MAX_DEPTH) {
        return Err(fail(e.kind().to_string(), e.offset()));
    }
    if !c.is_empty() {
        return Err(fail(
            format!(
                "{} bytes after the msgpack object: a row must hold exactly one object",
                c.remaining()
            ),
            Some(c.pos() as u64),
        ));
    }
    Ok(())
}

/// The non-null blobs of a column, each checked to be exactly one msgpack object, in groups the
/// core reader reads as one buffer each:
/// - in place: two or more blobs lying back to back in one Arrow buffer of the input (the usual
///   case for a column built row by row or made by `encode`), read as a stream of objects
///   without copying them;
/// - copied: the other blobs (inlined in `BinaryView` views, isolated, ...), copied behind a
///   msgpack array header (which keeps a single blob holding a list or an ndarray one row: alone
///   in a stream it would be read as a container of rows).
pub struct Blobs {
    /// rows of the input
    len: usize,
    /// the input row of each non-null blob, in order
    rows: Vec<usize>,
    groups: Vec<Group>,
}

struct Group {
    buf: Buffer,
    /// where each blob starts in `buf`
    starts: Vec<usize>,
    /// index (in `Blobs::rows`) of the first blob
    first: usize,
}

impl Group {
    fn blob(&self, i: usize) -> &[u8] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.buf.len());
        &self.buf.as_slice()[self.starts[i]..end]
    }
}

/// Builds the groups of one column.
struct Gather {
    len: usize,
    rows: Vec<usize>,
    groups: Vec<Group>,
    /// blobs waiting to be copied: (row, bytes)
    pending: Vec<(usize, Buffer, usize, usize)>,
}

impl Gather {
    fn new() -> Self {
        Gather {
            len: 0,
            rows: Vec::new(),
            groups: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Copy the pending blobs into one group.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let total: usize = self.pending.iter().map(|p| p.3 - p.2).sum();
        let mut buf = MutableBuffer::new(total + 5);
        msgpack_arrow::advise_huge_pages(&mut buf);
        let mut hdr = Vec::with_capacity(5);
        array_header(self.pending.len(), &mut hdr);
        buf.extend_from_slice(&hdr);
        let first = self.rows.len();
        let mut starts = Vec::with_capacity(self.pending.len());
        for (row, b, s, e) in self.pending.drain(..) {
            self.rows.push(row);
            starts.push(buf.len());
            buf.extend_from_slice(&b.as_slice()[s..e]);
        }
        self.groups.push(Group {
            buf: buf.into(),
            starts,
            first,
        });
    }

    /// One chunk: `spans[i]` is row i's blob as (buffer, start, end), `None` when null.
    fn chunk(
        &mut self,
        spans: Vec<Option<(usize, usize, usize)>>,
        buffers: &[Buffer],
    ) -> Result<(), BlobError> {
        let row0 = self.len;
        self.len += spans.len();
        let set: Vec<(usize, (usize, usize, usize))> = spans
            .into_iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (row0 + i, s)))
            .collect();
        for &(row, (b, s, e)) in &set {
            check(row, &buffers[b].as_slice()[s..e])?;
        }
        let mut i = 0;
        while i < set.len() {
            // the run of blobs back to back in one buffer from i
            let (b, s0, mut end) = set[i].1;
            let mut j = i + 1;
            while j < set.len() && set[j].1 .0 == b && set[j].1 .1 == end {
                end = set[j].1 .2;
                j += 1;
            }
            if j - i >= 2 {
                self.flush();
                let first = self.rows.len();
                self.rows.extend(set[i..j].iter().map(|x| x.0));
                self.groups.push(Group {
                    buf: buffers[b].slice_with_length(s0, end - s0),
                    starts: set[i..j].iter().map(|x| x.1 .1 - s0).collect(),
                    first,
                });
            } else {
                let (row, (b, s, e)) = set[i];
                if self.pending.len() == u32::MAX as usize {
                    self.flush(); // one msgpack array holds at most 2^32 - 1 items
                }
                self.pending.push((row, buffers[b].clone(), s, e));
            }
            i = j;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Blobs, BlobError> {
        self.flush();
        if self.rows.len() > u32::MAX as usize {
            return Err(BlobError::msg("more than 2^32 - 1 non-null rows"));
        }
        Ok(Blobs {
            len: self.len,
            rows: self.rows,
            groups: self.groups,
        })
    }
}

/// Row i's blob of a Binary-like array as (buffer index, start, end) into `buffers`.
fn spans(a: &dyn Array) -> Result<(Vec<Option<(usize, usize, usize)>>, Vec<Buffer>), BlobError> {
    fn offsets<O: OffsetSizeTrait>(
        a: &dyn Array,
    ) -> (Vec<Option<(usize, usize, usize)>>, Vec<Buffer>) {
        let b = a.as_binary::<O>();
        let o = b.value_offsets();
        let spans = (0..b.len())
            .map(|i| {
                b.is_valid(i)
                    .then(|| (0, o[i].as_usize(), o[i + 1].as_usize()))
            })
            .collect();
        (spans, vec![b.values().clone()])
    }
    Ok(match a.data_type() {
        DataType::Binary => offsets::<i32>(a),
        DataType::LargeBinary => offsets::<i64>(a),
        DataType::BinaryView => {
            let b = a.as_binary_view();
            // data buffers, then the views themselves (for values of <= 12 bytes, inlined)
            let mut buffers: Vec<Buffer> = b.data_buffers().to_vec();
            let views_at = buffers.len();
            buffers.push(b.views().inner().clone());
            let spans = b
                .views()
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if b.is_null(i) {
                        return None;
                    }
                    let len = *v as u32 as usize;
                    if len <= 12 {
                        // bytes 4..4+len of the 16-byte view
                        let at = i * 16 + 4;
                        Some((views_at, at, at + len))
                    } else {
                        let off = (*v >> 96) as u32 as usize;
                        Some(((*v >> 64) as u32 as usize, off, off + len))
                    }
                })
                .collect();
            (spans, buffers)
        }
        DataType::Null => (vec![None; a.len()], Vec::new()),
        t => {
            return Err(BlobError::msg(format!(
                "msgpack.decode expects a Binary column of msgpack blobs, got {t}"
            )))
        }
    })
}

impl Blobs {
    /// Check and gather blobs given as slices (`None`: a null row); they are copied. Used by the
    /// expression plugin only.
    #[cfg_attr(not(feature = "plugin"), allow(dead_code))]
    pub fn new<'a>(blobs: impl IntoIterator<Item = Option<&'a [u8]>>) -> Result<Blobs, BlobError> {
        let mut g = Gather::new();
        for (row, b) in blobs.into_iter().enumerate() {
            g.len += 1;
            if let Some(b) = b {
                check(row, b)?;
                g.pending.push((row, Buffer::from(b), 0, b.len()));
            }
        }
        g.finish()
    }

    /// The blobs of Binary-like arrow-rs arrays (`Binary`, `LargeBinary`, `BinaryView`; `Null`:
    /// all null): the chunks of one column. Runs of blobs lying back to back are read in place.
    pub fn from_arrays(chunks: &[ArrayRef]) -> Result<Blobs, BlobError> {
        let mut g = Gather::new();
        for c in chunks {
            let (spans, buffers) = spans(c.as_ref())?;
            g.chunk(spans, &buffers)?;
        }
        g.finish()
    }

    /// All blobs copied into one group (one inference over every row).
    fn coalesced(&self) -> Blobs {
        let mut g = Gather::new();
        g.len = self.len;
        for grp in &self.groups {
            for i in 0..grp.starts.len() {
                let row = self.rows[grp.first + i];
                let (s, e) = (grp.starts[i], grp.starts[i] + grp.blob(i).len());
                g.pending.push((row, grp.buf.clone(), s, e));
            }
        }
        g.finish().expect("fewer rows than before")
    }

    /// A core error with its offset (in the group's buffer) and record (in the group) turned
    /// into the input row and the offset inside its blob.
    fn locate(&self, grp: &Group, e: msgpack_arrow::Error) -> BlobError {
        let mut out = BlobError {
            message: e.kind().to_string(),
            row: None,
            offset: None,
            column: e
                .path()
                .map(str::to_string)
                .filter(|p| p != "value")
                .map(|p| p.strip_prefix("value.").map(str::to_string).unwrap_or(p)),
        };
        if let Some(off) = e.offset() {
            let off = off as usize;
            let i = grp.starts.partition_point(|&s| s <= off);
            if i > 0 {
                out.row = Some(self.rows[grp.first + i - 1] as u64);
                out.offset = Some((off - grp.starts[i - 1]) as u64);
            }
        }
        if out.row.is_none() {
            if let Some(r) = e.record() {
                out.row = self.rows.get(grp.first + r as usize).map(|&r| r as u64);
            }
        }
        out
    }

    fn reader(&self, grp: &Group) -> Result<msgpack_arrow::Reader, BlobError> {
        self.reader_as(grp, None)
    }

    /// `target`: the values are not inferred but decoded into this type (so values of several
    /// types that it can hold are no conflict).
    fn reader_as(
        &self,
        grp: &Group,
        target: Option<&DataType>,
    ) -> Result<msgpack_arrow::Reader, BlobError> {
        let given = target.map(|t| {
            Arc::new(arrow_schema::Schema::new(vec![Field::new(
                "value",
                t.clone(),
                true,
            )]))
        });
        ReaderBuilder::new()
            .with_layout(Layout::Values)
            .with_batch_size(grp.starts.len().max(1))
            .with_schema_overrides(given)
            .build_from_buffer(grp.buf.clone())
            .map_err(|e| self.locate(grp, e))
    }

    /// The type of each group (before any mapping).
    fn group_types(&self) -> Result<Vec<DataType>, BlobError> {
        self.groups
            .iter()
            .map(|g| Ok(self.reader(g)?.schema().field(0).data_type().clone()))
            .collect()
    }

    /// The Arrow type the blobs decode to (inferred from all of them; `Null` when none is set),
    /// mapped for Polars (width-0 `FixedSizeList` → `List`).
    pub fn infer(&self) -> Result<DataType, BlobError> {
        let types = self.group_types()?;
        let t = match types.as_slice() {
            [] => return Ok(DataType::Null),
            [t, rest @ ..] if rest.iter().all(|r| r == t) => t.clone(),
            _ => return self.coalesced().infer(),
        };
        Ok(msgpack_arrow::types::polars_compatible_type(&t))
    }

    fn decode_group(&self, grp: &Group, target: Option<&DataType>) -> Result<ArrayRef, BlobError> {
        let batches = self
            .reader_as(grp, target)?
            .collect_batches()
            .map_err(|e| self.locate(grp, e))?;
        let cols: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
        Ok(match cols.as_slice() {
            [_] => batches[0].column(0).clone(),
            _ => arrow_select::concat::concat(&cols)?,
        })
    }

    /// Decode: one value per input row, nulls where the input is null, as chunks (one per group,
    /// in row order: concatenating the groups would copy every value once more). With `target`,
    /// the chunks have exactly that type (see [`conform`]); without, the type inferred from all
    /// rows, mapped for Polars.
    pub fn decode(&self, target: Option<&DataType>) -> Result<Vec<ArrayRef>, BlobError> {
        if self.rows.is_empty() {
            return Ok(vec![new_null_array(
                target.unwrap_or(&DataType::Null),
                self.len,
            )]);
        }
        if target.is_none() && self.groups.len() > 1 {
            // the groups must agree on the type, else decode them all with one inference
            let types = self.group_types()?;
            if types.iter().any(|t| t != &types[0]) {
                return self.coalesced().decode(None);
            }
        }
        let mut out = Vec::with_capacity(self.groups.len());
        for (gi, g) in self.groups.iter().enumerate() {
            // inferred, then converted to the target (structs by name); where the rows disagree
            // on their type, decoded straight into the target
            let a = match (self.decode_group(g, None), target) {
                (Ok(a), _) => a,
                // (when that fails too, the first error says more: e.g. a malformed blob)
                (Err(e), Some(t)) => self
                    .decode_group(g, Some(&crate::reader::plain_type(t)))
                    .map_err(|_| e)?,
                (Err(e), None) => return Err(e),
            };
            let a = match target {
                Some(t) => conform(&a, t).map_err(|e| {
                    BlobError::msg(format!(
                        "cannot convert the decoded {} to {t}: {e}",
                        a.data_type()
                    ))
                })?,
                None => {
                    let t = msgpack_arrow::types::polars_compatible_type(a.data_type());
                    if &t == a.data_type() {
                        a
                    } else {
                        arrow_cast::cast(&a, &t)?
                    }
                }
            };
            // the input rows this chunk covers: from its first blob (row 0 for the first chunk)
            // to the next chunk's first blob, null rows included
            let lo = if gi == 0 { 0 } else { self.rows[g.first] };
            let hi = match self.groups.get(gi + 1) {
                Some(n) => self.rows[n.first],
                None => self.len,
            };
            let mine = &self.rows[g.first..g.first + g.starts.len()];
            if hi - lo == mine.len() {
                out.push(a);
                continue;
            }
            let mut it = 0u32;
            let mut next = mine.iter().peekable();
            let idx: UInt32Array = (lo..hi)
                .map(|row| {
                    if next.peek() == Some(&&row) {
                        next.next();
                        it += 1;
                        Some(it - 1)
                    } else {
                        None
                    }
                })
                .collect();
            out.push(arrow_select::take::take(a.as_ref(), &idx, None)?);
        }
        Ok(out)
    }
}

fn cast_strict(a: &ArrayRef, t: &DataType) -> Result<ArrayRef, ArrowError> {
    let opts = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow_cast::cast_with_options(a, t, &opts)
}

fn conform_list<O: OffsetSizeTrait>(
    a: &ArrayRef,
    item: &Arc<Field>,
) -> Result<ArrayRef, ArrowError> {
    let l = a.as_list::<O>();
    let values = conform(l.values(), item.data_type())?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        item.clone(),
        l.offsets().clone(),
        values,
        l.nulls().cloned(),
    )?))
}

/// `a` as type `t`, exactly: struct fields are matched by name (a field missing from the data is
/// all null; a map key the type lacks is an error), lists and arrays converted item by item, other
/// values cast (arrow-cast; a value that does not fit is an error, never a silent null).
/// A FixedSizeList with its items conformed to `item` (its length kept: width 0 has no items).
fn conform_fsl(l: &FixedSizeListArray, item: &Arc<Field>, m: i32) -> Result<ArrayRef, ArrowError> {
    let values = conform(l.values(), item.data_type())?;
    Ok(Arc::new(FixedSizeListArray::try_new_with_length(
        item.clone(),
        m,
        values,
        l.nulls().cloned(),
        l.len(),
    )?))
}

pub fn conform(a: &ArrayRef, t: &DataType) -> Result<ArrayRef, ArrowError> {
    use DataType as T;
    if a.data_type() == t {
        return Ok(a.clone());
    }
    match (a.data_type(), t) {
        // datetime64 values are UTC instants: a zone only labels them (no chrono-tz needed)
        (T::Timestamp(_, _), T::Timestamp(v, Some(_))) => {
            let same_unit = cast_strict(a, &T::Timestamp(*v, None))?;
            let d = same_unit.to_data().into_builder().data_type(t.clone());
            Ok(arrow_array::make_array(d.build()?))
        }
        (T::Struct(have), T::Struct(want)) => {
            let s = a.as_struct();
            if let Some(extra) = have.iter().find(|f| want.find(f.name()).is_none()) {
                return Err(ArrowError::CastError(format!(
                    "the data has a key {:?} that the struct dtype does not have",
                    extra.name()
                )));
            }
            let cols = want
                .iter()
                .map(|f| match s.column_by_name(f.name()) {
                    Some(c) => conform(c, f.data_type())
                        .map_err(|e| ArrowError::CastError(format!("field {:?}: {e}", f.name()))),
                    None => Ok(new_null_array(f.data_type(), s.len())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Arc::new(StructArray::try_new(
                want.clone(),
                cols,
                s.nulls().cloned(),
            )?))
        }
        (T::List(_), T::List(item)) => conform_list::<i32>(a, item),
        (T::LargeList(_), T::LargeList(item)) => conform_list::<i64>(a, item),
        (T::List(_), T::LargeList(item)) => {
            let l = cast_strict(
                a,
                &T::LargeList(Arc::new(Field::new(
                    "item",
                    a.as_list::<i32>().value_type(),
                    true,
                ))),
            )?;
            conform_list::<i64>(&l, item)
        }
        (T::FixedSizeList(_, n), T::FixedSizeList(item, m)) if n == m => {
            conform_fsl(a.as_fixed_size_list(), item, *m)
        }
        // ragged rows that must all have the target's length, or an array of lists
        (T::List(_) | T::LargeList(_), T::FixedSizeList(item, m)) => {
            let fsl = cast_strict(
                a,
                &T::FixedSizeList(Arc::new(Field::new("item", list_value_type(a), true)), *m),
            )?;
            conform_fsl(fsl.as_fixed_size_list(), item, *m)
        }
        (T::FixedSizeList(..), T::List(item) | T::LargeList(item)) => {
            let l = a.as_fixed_size_list();
            let as_list = cast_strict(
                a,
                &T::LargeList(Arc::new(Field::new("item", l.value_type(), true))),
            )?;
            let out = conform_list::<i64>(&as_list, item)?;
            if matches!(t, T::List(_)) {
                cast_strict(&out, t)
            } else {
                Ok(out)
            }
        }
        _ => cast_strict(a, t),
    }
}

fn list_value_type(a: &ArrayRef) -> DataType {
    match a.data_type() {
        DataType::List(f) | DataType::LargeList(f) => f.data_type().clone(),
        other => other.clone(),
    }
}

/// Encode each row of a column as one blob (null rows stay null).
pub fn encode(name: &str, a: &ArrayRef) -> Result<ArrayRef, msgpack_arrow::Error> {
    let field = Field::new(name, a.data_type().clone(), true);
    Ok(Arc::new(msgpack_arrow::write::encode_values_per_row(
        &field, a,
    )?))
}

/// A target type passed from Python as text: the hex of an Arrow IPC schema of one field (made by
/// `dtype_token` from the Arrow type Polars exports for the dtype).
pub fn parse_dtype_token(token: &str) -> Result<Field, String> {
    if token.len() % 2 != 0 {
        return Err("malformed dtype token".into());
    }
    let bytes = (0..token.len() / 2)
        .map(|i| u8::from_str_radix(&token[2 * i..2 * i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| "malformed dtype token".to_string())?;
    let fb =
        arrow_ipc::root_as_schema(&bytes).map_err(|e| format!("malformed dtype token: {e}"))?;
    let schema = arrow_ipc::convert::try_fb_to_schema(fb)
        .map_err(|e| format!("malformed dtype token: {e}"))?;
    schema
        .fields()
        .first()
        .map(|f| f.as_ref().clone())
        .ok_or_else(|| "malformed dtype token: no field".to_string())
}

/// The token of a field's type (see [`parse_dtype_token`]).
pub fn dtype_token(field: &Field) -> String {
    let schema = arrow_schema::Schema::new(vec![field.clone()]);
    let fb = arrow_ipc::convert::IpcSchemaEncoder::new().schema_to_fb(&schema);
    fb.finished_data()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
