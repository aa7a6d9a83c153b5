//! The plan of a read: which layout `auto` picks (SPEC §2), how rows are contained, the schema
//! inferred from the data, and where each batch starts.

use self::infer::{infer_columns_map, infer_columns_value, Inferrer, ListRanges, Ty};
use super::empty_shapes::attach_empty_shapes;
use super::row_walk::{row_alone_bytes, RowWalk, RowsSeen};
use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, Layout};
use crate::read::source::release_pages;
use crate::read::source::{release_behind, RELEASE_STEP};
use crate::types::arrow::leaf_dtype;
use crate::types::layout::{is_columns_map as is_columns_map_rule, ValueForm};
use crate::types::meta;
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, Special};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::collections::HashMap;
use std::sync::Arc;

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
    pub(crate) fn as_str(self) -> &'static str {
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
    /// where each batch starts (records/values): a batch ends at `batch_size` rows or after the
    /// row that reaches `batch_bytes` input bytes
    pub batch_starts: Vec<usize>,
    /// the index of each batch's first row
    pub batch_rows: Vec<usize>,
    /// rows stepped over before `first_row` ([`ReaderBuilder::with_skip_rows`])
    pub skipped: usize,
    /// `columns`: where the ranges of the lists inferred start
    pub list_ranges: ListRanges,
}

impl Plan {
    /// Whether the row at `pos` (the `rows`-th, after a row of `last_len` bytes) starts a new
    /// batch: a batch ends at `batch_size` rows, after the row that reaches `batch_bytes` input
    /// bytes, or after a row of [`row_alone_bytes`] or more.
    pub(crate) fn starts_batch(
        &self,
        b: &ReaderBuilder,
        pos: usize,
        seen: &RowsSeen,
        last_len: usize,
    ) -> bool {
        let (row0, pos0) = (self.batch_rows.last(), self.batch_starts.last());
        let rows = seen.rows;
        row0.is_none_or(|&r0| rows - r0 >= b.batch_rows(seen.width(b, self.layout)))
            || pos0.is_some_and(|&s0| pos - s0 >= b.batch_bytes)
            || last_len >= row_alone_bytes(b.batch_bytes)
    }
}

/// Layout decision from the first object alone. `None` for an empty input.
pub(crate) fn plan_first(b: &ReaderBuilder, data: &[u8], single: bool) -> Result<Option<Plan>> {
    plan_first_known(b, data, single, None)
}

/// [`plan_first`] with whether the first object is a columns map already known (from
/// [`first_object`]'s walk), so that it is not walked again.
fn plan_first_known(
    b: &ReaderBuilder,
    data: &[u8],
    single: bool,
    columns_map: Option<bool>,
) -> Result<Option<Plan>> {
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
            batch_rows: Vec::new(),
            skipped: 0,
            list_ranges: Default::default(),
        })
    };
    let kind = c.peek_kind()?;
    let special = if matches!(kind, Kind::Map | Kind::Ext) {
        let mut d = c.clone();
        match probe(&mut d, b.dialect, b.npy_ext, b.max_depth)? {
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
                batch_rows: Vec::new(),
                skipped: 0,
                list_ranges: Default::default(),
            }));
        }
        let first_row = d.pos();
        let is_map = d.peek_kind()? == Kind::Map
            && probe(&mut d.clone(), b.dialect, b.npy_ext, b.max_depth)?.is_none();
        Some((is_map, first_row))
    } else {
        None
    };
    Ok(match b.layout {
        Layout::Auto => match (kind, special, array_first_is_map) {
            (Kind::Map, None, _)
                if single
                    && match columns_map {
                        Some(known) => known,
                        None => is_columns_map(&mut c.clone(), b)?,
                    } =>
            {
                mk(
                    Layout::Columns,
                    Container::Stream,
                    "auto: one map whose values are all ndarrays or lists of one length",
                    0,
                )
            }
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
            (Kind::Map | Kind::Ext, Some(ndim), _) if single && ndim >= 1 => mk(
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
pub(crate) fn is_columns_map(c: &mut Cursor<'_>, b: &ReaderBuilder) -> Result<bool> {
    map_forms(c, b, b.max_depth, false)
}

/// Whether the map at the cursor is a columns map, from the forms of its values. `whole`: the map
/// is walked to its end even once it cannot be one (values stepped over with `depth`); otherwise
/// the walk stops at the first value that rules it out.
fn map_forms(c: &mut Cursor<'_>, b: &ReaderBuilder, depth: usize, whole: bool) -> Result<bool> {
    let n = c.read_map_len()?;
    let mut forms = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let form = entry_form(c, b, depth)?;
        if form == ValueForm::Other && !whole {
            return Ok(false);
        }
        forms.push(form);
    }
    Ok(is_columns_map_rule(forms))
}

/// The form of the value of the map entry at the cursor, the entry (key and value) consumed. A
/// key that is not a string makes it a records map (`Other`).
fn entry_form(c: &mut Cursor<'_>, b: &ReaderBuilder, depth: usize) -> Result<ValueForm> {
    if !matches!(c.peek_kind()?, Kind::Str | Kind::Bin) {
        c.skip(depth)?;
        c.skip(depth)?;
        return Ok(ValueForm::Other);
    }
    let (key, _) = c.read_str_or_bin()?;
    // (a bad value found here names its key: the map is a record or a columns map)
    let in_key = |e: Error| e.prepend_path(&String::from_utf8_lossy(key));
    Ok(match c.peek_kind()? {
        Kind::Array => {
            let l = c.clone().read_array_len()?;
            c.skip(depth).map_err(in_key)?;
            ValueForm::List(l)
        }
        Kind::Map | Kind::Ext => match probe(c, b.dialect, b.npy_ext, depth).map_err(in_key)? {
            Some(Special::Array(nd)) if !nd.scalar && !nd.shape.is_empty() => {
                ValueForm::Ndarray(nd.shape[0])
            }
            // (consumed by the probe: a 0-d array, a numpy scalar, a complex)
            Some(_) => ValueForm::Other,
            None => {
                c.skip(depth).map_err(in_key)?;
                ValueForm::Other
            }
        },
        _ => {
            c.skip(depth).map_err(in_key)?;
            ValueForm::Other
        }
    })
}

/// [`only_object`], and for a first object that is a map read with the `auto` layout, whether it
/// is a columns map: both known from one walk of it (a map of long lists was walked twice).
pub(crate) fn first_object(b: &ReaderBuilder, data: &[u8]) -> Result<(bool, Option<bool>)> {
    let mut c = Cursor::new(data, 0);
    let walk_forms = b.layout == Layout::Auto
        && b.max_depth > 1
        && matches!(c.peek_kind(), Ok(Kind::Map))
        && !matches!(
            probe(&mut c.clone(), b.dialect, b.npy_ext, b.max_depth),
            Ok(Some(_)) | Err(_)
        );
    if !walk_forms {
        return Ok((only_object(b, data)?, None));
    }
    // the values one level down: as deep as a skip of the whole map lets them be
    // (on an error, what the walk would have said of the input without this: the same error
    // from the same place)
    let Ok(columns) = map_forms(&mut c, b, b.max_depth - 1, true) else {
        return Ok((only_object(b, data)?, None));
    };
    if b.release_input {
        release_pages(data, 0, c.pos());
    }
    Ok((c.is_empty() && !b.cut_after, Some(columns)))
}

/// One batch the walk has gone past, with the schema inferred through its last row: what
/// [`crate::read::ahead`] decodes while the walk goes on.
pub(crate) struct WalkedBatch {
    /// the batch's index
    pub k: usize,
    /// its first byte and the byte after its last row, its first row's index and its row count
    pub start: usize,
    pub end: usize,
    pub row0: usize,
    pub rows: usize,
    pub layout: Layout,
    pub schema: Schema,
}

/// Who takes the batches of rows a walk goes past ([`plan_with`]).
pub(crate) struct Handoff<'a> {
    /// told of each batch; `false`: whoever takes the batches is gone, the walk stops
    pub(crate) take: &'a mut dyn FnMut(WalkedBatch) -> bool,
    /// whether the input's only batch is handed on too, at the walk's end. A read that decodes
    /// ahead does not want it: nothing is left to overlap its decode with, and a wide table's
    /// schema and decoders would be made twice (a 4,000-tensor state dict read 1.7x slower).
    pub(crate) only_batch: bool,
}

/// Full plan: layout, and the schema inferred unless given.
pub(crate) fn plan(b: &ReaderBuilder, data: &[u8]) -> Result<Plan> {
    plan_with(b, data, None)
}

/// [`plan`], telling `walked` of each batch of rows (records, values) as soon as the walk is past
/// it ([`Handoff`]). The walk then leaves a mapped file's pages to whoever decodes the batches.
/// The schema handed on is the inferred one: with a given schema or overrides it is not what the
/// read ends with, and the caller does not ask ([`ReaderBuilder::decodes_ahead`]).
pub(crate) fn plan_with(
    b: &ReaderBuilder,
    data: &[u8],
    walked: Option<Handoff<'_>>,
) -> Result<Plan> {
    // Whether the first object is the only one decides whether a top-level array's elements are
    // the rows. Knowing it takes a walk to the array's end, which the walk of its rows makes
    // anyway: so a first array is taken as the only object and the row walk checks what follows
    // it. Where that does not hold (data after it, or an error that a stream of arrays might not
    // give), the first object is skipped to know, and the plan made again.
    // (an empty first array is skipped at once: its plan has no walk to check with)
    let first_is_array = {
        let mut c = Cursor::new(data, 0);
        c.peek_kind().ok() == Some(Kind::Array) && c.read_array_len().is_ok_and(|n| n > 0)
    };
    // Only where rows are walked (a columns read walks its maps, not rows), and with one level of
    // nesting less for the elements, as the array they sit in is one: a too-deep element fails
    // the walk, and the skip of the whole array then says where, as before.
    // (batches handed to `walked` on the way are the first array's elements: none starts where
    // a batch of the plan made again starts, at the first object, and its caller checks that)
    if first_is_array && b.layout != Layout::Columns && b.max_depth > 1 {
        let mut inner = b.clone();
        inner.max_depth = b.max_depth - 1;
        return match plan_single(&inner, data, walked, Single::Assumed, None) {
            Err(e) if only_object(b, data)? => Err(e),
            Err(_) => plan_single(b, data, None, Single::Known(false), None),
            ok => ok,
        };
    }
    if let Some(p) = plan_assumed_columns(b, data) {
        return Ok(p);
    }
    let (single, columns_map) = first_object(b, data)?;
    plan_single(b, data, walked, Single::Known(single), columns_map)
}

/// [`plan`] without [`plan_assumed_columns`]: what it must agree with.
#[cfg(test)]
pub(crate) fn plan_walking_forms(b: &ReaderBuilder, data: &[u8]) -> Result<Plan> {
    let (single, columns_map) = first_object(b, data)?;
    plan_single(b, data, None, Single::Known(single), columns_map)
}

/// The plan of a first map read with `auto`, taken as the only object and a columns map: the
/// inference of its columns walks it whole, and fails where a value is not a column (or their
/// lengths differ). A walk of the map for the forms of its values first (a step over every
/// element of its lists, a fifth of a read of a list of 100,000 ragged arrays) is then left out.
/// `None` where the map is not the only object, not a columns map, or anything fails: the plan is
/// made as before, which reports what it reported.
fn plan_assumed_columns(b: &ReaderBuilder, data: &[u8]) -> Option<Plan> {
    let mut c = Cursor::new(data, 0);
    let assume = b.layout == Layout::Auto
        && b.schema.is_none()
        && !b.cut_after
        && matches!(c.peek_kind(), Ok(Kind::Map))
        // (an empty map is a record)
        && c.clone().read_map_len().ok()? > 0
        && matches!(probe(&mut c.clone(), b.dialect, b.npy_ext, b.max_depth), Ok(None));
    if !assume {
        return None;
    }
    let (mut inf, _) = rows_inferrer(b, Layout::Columns);
    let t = infer_columns_map(&mut c, &mut inf, b).ok()?.1;
    if !c.is_empty() {
        return None;
    }
    // (the pages the walk mapped are kept for the decode, which drops each range's behind it:
    // dropped here, they were all mapped in again)
    // as the plan of the map known to be the only one and a columns map makes it
    let mut p = plan_first_known(b, data, true, Some(true)).ok()??;
    let ty = Ty::Struct(Default::default())
        .merge_with(t, inf.opts.raw_conflicts)
        .ok()?;
    p.schema = Some(Arc::new(ty_schema(ty, p.layout, &inf).ok()?));
    p.schema = finish_schema(b, p.layout, &inf, p.schema, &[]);
    p.list_ranges = std::mem::take(&mut inf.list_ranges);
    Some(p)
}

/// Whether the input holds one object at most (walking the first one).
pub(crate) fn only_object(b: &ReaderBuilder, data: &[u8]) -> Result<bool> {
    let mut c = Cursor::new(data, 0);
    Ok(!b.cut_after
        && (c.is_empty() || {
            c.skip(b.max_depth)?;
            // one top-level array is walked whole here: drop what it mapped in
            if b.release_input {
                release_pages(data, 0, c.pos());
            }
            c.is_empty()
        }))
}

/// Whether the first object is the only one: known, or assumed (a first top-level array; the
/// walk of its rows then fails if anything follows it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Single {
    Known(bool),
    Assumed,
}

fn plan_single(
    b: &ReaderBuilder,
    data: &[u8],
    mut walked: Option<Handoff<'_>>,
    single_is: Single,
    columns_map: Option<bool>,
) -> Result<Plan> {
    let single = single_is != Single::Known(false);
    let Some(mut p) = plan_first_known(b, data, single, columns_map)? else {
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
            batch_rows: Vec::new(),
            skipped: 0,
            list_ranges: Default::default(),
        });
    };
    if p.container == Container::Empty || p.rows == Some(0) {
        return Ok(p);
    }
    let (mut inf, given_value) = rows_inferrer(b, p.layout);
    let mut c = Cursor::new(data, 0);
    let layout = p.layout;
    // given columns (schema overrides) that hold ndarrays
    let mut given_nd: Vec<String> = Vec::new();
    // with a schema given, rows are only counted (and batch starts found), not inferred
    let limit = if b.schema.is_some() {
        0
    } else {
        b.infer_rows.unwrap_or(usize::MAX)
    };
    match (p.layout, p.container) {
        (Layout::Records | Layout::Values, Container::Stream | Container::Array) => {
            // walk the rows: count them all, infer from the first `limit`
            let (mut left, array) = if p.container == Container::Array {
                let n = c.read_array_len()?;
                (n, true)
            } else {
                (usize::MAX, false)
            };
            // rows before `skip_rows` are stepped over, not decoded
            while p.skipped < b.skip_rows && left > 0 && !c.is_empty() {
                c.skip(b.max_depth)
                    .map_err(|e| e.at_record(p.skipped as u64))?;
                p.skipped += 1;
                if array {
                    left -= 1;
                }
            }
            p.first_row = c.pos();
            let mut seen = RowsSeen::new(p.layout);
            let mut released = 0usize;
            let release_walk = b.release_input && walked.is_none();
            // (pieces count their rows from 0: a limit other than all or none would be misplaced)
            let whole_walk = walked.is_none() && (limit == usize::MAX || limit == 0);
            let rw = RowWalk {
                b,
                layout,
                limit,
                given_value,
            };
            // batch `k` (from its start to the row at `c`) has been walked: hand it on with the
            // schema of the rows so far, which cover it (none when that schema is not there yet).
            // `false`: whoever takes the batches is gone, the walk stops.
            let only_batch = walked.as_ref().is_none_or(|h| h.only_batch);
            let mut hand_on = |p: &Plan, end, seen: &RowsSeen, inf: &Inferrer| -> bool {
                let (Some(walked), Some(k)) = (
                    walked.as_mut().map(|h| &mut h.take),
                    p.batch_starts.len().checked_sub(1),
                ) else {
                    return true;
                };
                // the schema the plan will end with if no later row widens it: a given one, or
                // the inferred one with the overrides applied as `finish_schema` applies them
                let schema = match &b.schema {
                    Some(given) => Ok(given.as_ref().clone()),
                    None => ty_schema(seen.ty.clone(), layout, inf).map(|s| {
                        let s = attach_empty_shapes(s, Clone::clone(&seen.empties));
                        match &b.overrides {
                            Some(o) => with_overrides(o, &s, &given_ndarrays(&seen.ty)),
                            None => s,
                        }
                    }),
                };
                match schema {
                    Ok(schema) => walked(WalkedBatch {
                        k,
                        start: p.batch_starts[k],
                        end,
                        row0: p.batch_rows[k],
                        rows: seen.rows - p.batch_rows[k],
                        layout,
                        schema,
                    }),
                    Err(_) => true,
                }
            };
            // at least one row, for a schema even when no rows are asked for (n_rows = 0)
            let most = b.n_rows.map_or(usize::MAX, |n| n.max(1));
            // a large stream, walked whole: pieces of it on every thread at once
            if whole_walk && most == usize::MAX {
                let pos = super::split::walk(
                    &rw,
                    &c,
                    array.then_some(left),
                    &mut inf,
                    &mut seen,
                    &mut p,
                )?;
                if array {
                    left -= seen.rows;
                }
                released = pos;
                c.set_pos(pos);
            }
            while left > 0 && !c.is_empty() && seen.rows < most {
                // a mapped file: this walk over every row would otherwise keep the whole file
                // resident until decoding drops it again
                released = release_behind(release_walk, data, released, c.pos());
                if p.starts_batch(b, c.pos(), &seen, seen.last_len) {
                    if !hand_on(&p, c.pos(), &seen, &inf) {
                        return Err(Error::from(std::io::Error::other("the read was stopped")));
                    }
                    p.batch_starts.push(c.pos());
                    p.batch_rows.push(seen.rows);
                }
                rw.row(&mut inf, &mut seen, &mut c)?;
                let mut n = 1;
                if layout == Layout::Values {
                    // values that fit by their marker, up to the row that starts the next batch
                    let (s0, r0) = (
                        p.batch_starts[p.batch_starts.len() - 1],
                        p.batch_rows[p.batch_rows.len() - 1],
                    );
                    let room = r0
                        .saturating_add(b.batch_size)
                        .saturating_sub(seen.rows)
                        .min(left - 1)
                        .min(most.saturating_sub(seen.rows));
                    let end = s0.saturating_add(b.batch_bytes).min(if release_walk {
                        released + RELEASE_STEP
                    } else {
                        usize::MAX
                    });
                    n += rw.values_fitting(&mut seen, &mut c, end, room);
                }
                if array {
                    left -= n;
                }
            }
            let rows = seen.rows;
            if array && single_is == Single::Assumed && left > 0 {
                // the walk stopped early (n_rows): what follows the array is still to be seen
                for _ in 0..left {
                    c.skip(b.max_depth)?;
                }
                left = 0;
            }
            if array && !c.is_empty() && (rows < most || left == 0) {
                return Err(c.error(ErrorKind::Layout("data after the top-level array".into())));
            }
            if p.batch_starts.len() > 1 || only_batch {
                let _ = hand_on(&p, c.pos(), &seen, &inf);
            }
            p.rows = Some(rows);
            let saw_all = limit == usize::MAX && b.n_rows.is_none();
            let (schema, nd) = rows_schema(b, layout, seen, &inf, saw_all)?;
            (p.schema, given_nd) = (schema.map(Arc::new), nd);
        }
        (Layout::Columns, _) => {
            let mut ty = Ty::Struct(Default::default());
            let mut chunks = 0;
            // chunks until `infer_rows` rows are seen: an empty first chunk types nothing; rows
            // skipped (`skip_rows`) are in chunks decoded (and dropped) too
            let most = b
                .infer_rows
                .map_or(usize::MAX, |n| n.saturating_add(b.skip_rows));
            let mut rows = 0usize;
            while !c.is_empty() && b.schema.is_none() && (chunks == 0 || rows < most) {
                let (n, t) = infer_columns_map(&mut c, &mut inf, b)?;
                rows = rows.saturating_add(n);
                ty = ty
                    .merge_with(t, inf.opts.raw_conflicts)
                    .map_err(|e| e.at_record(chunks))?;
                chunks += 1;
            }
            if b.schema.is_none() {
                p.schema = Some(Arc::new(ty_schema(ty, layout, &inf)?));
            }
            p.list_ranges = std::mem::take(&mut inf.list_ranges);
        }
        (Layout::Values, Container::NdArray) if b.schema.is_none() => {
            let t = infer_columns_value(&mut c, &mut inf, b)?.1;
            let f = t.to_field("value", &inf.opts)?;
            check_ndarray_override(b, &f)?;
            p.schema = Some(Arc::new(Schema::new(vec![f])));
        }
        (Layout::Values, Container::NdArray) => {}
        _ => unreachable!("plan_first gives only these"),
    }
    // a bare ndarray decodes into its own type, as a columns map's values do, and an override
    // converts the decoded column after (`Reader::output_types`): the plan keeps the native type
    let types_of = match p.container {
        Container::NdArray => Layout::Columns,
        _ => p.layout,
    };
    p.schema = finish_schema(b, types_of, &inf, p.schema, &given_nd);
    Ok(p)
}

/// An override of a bare ndarray's column (`value`, its field `f` as decoded) must be numbers
/// (or lists of them) as its elements are: each is converted exactly, as a records column's
/// ndarrays are; another type (a string) is the conflict it is in a records column.
fn check_ndarray_override(b: &ReaderBuilder, f: &Field) -> Result<()> {
    let Some(o) = b
        .overrides
        .as_ref()
        .and_then(|o| o.field_with_name("value").ok())
    else {
        return Ok(());
    };
    let numbers = |t: &DataType| leaf_dtype(t).is_some();
    if o.data_type() == f.data_type() || (numbers(f.data_type()) && numbers(o.data_type())) {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Inexact(format!(
        "schema_overrides: a bare ndarray of {} cannot be read as {}; its elements can be given \
         another number type",
        f.data_type(),
        o.data_type()
    ))))
}

/// The inferrer of a plan: the builder's options, and the columns whose types overrides give
/// or a projection leaves out (not inferred);
/// also whether the one column of a `values` walk, `value`, is one of them.
pub(crate) fn rows_inferrer(b: &ReaderBuilder, layout: Layout) -> (Inferrer, bool) {
    let mut inf = Inferrer::new(b.infer_options());
    if let Some(o) = &b.overrides {
        inf.given.names = o.fields().iter().map(|f| f.name().clone()).collect();
    }
    if layout == Layout::Records {
        inf.given.only = b.projection.as_ref().map(|p| p.iter().cloned().collect());
        inf.nested_track = true;
    }
    let given_value = layout == Layout::Values && inf.given.names.contains("value");
    (inf, given_value)
}

/// The schema of a walk's rows (`records`, `values`), unless one was given: one column per key,
/// or `value`, with the empty shapes noted; "absent" recorded when the walk saw every row.
/// Also the columns given (overrides) that hold ndarrays, for [`finish_schema`].
pub(crate) fn rows_schema(
    b: &ReaderBuilder,
    layout: Layout,
    seen: RowsSeen,
    inf: &Inferrer,
    saw_all: bool,
) -> Result<(Option<Schema>, Vec<String>)> {
    let RowsSeen {
        ty,
        empties,
        absent,
        ..
    } = seen;
    let given_nd = given_ndarrays(&ty);
    if b.schema.is_some() {
        return Ok((None, given_nd));
    }
    let schema = attach_empty_shapes(ty_schema(ty, layout, inf)?, empties);
    // only a walk that saw every row can say keys were absent
    let mut md = schema.metadata().clone();
    if absent && saw_all {
        md.insert(meta::MISSING.to_string(), "absent".to_string());
    }
    if !inf.nested_absent.is_empty() && saw_all {
        md.insert(
            meta::MISSING_NESTED.to_string(),
            meta::nested_columns(&inf.nested_absent),
        );
    }
    let schema = schema.with_metadata(md);
    Ok((Some(schema), given_nd))
}

/// The columns given (overrides) that hold ndarrays, by the type of the rows walked.
fn given_ndarrays(ty: &Ty) -> Vec<String> {
    match ty {
        Ty::Struct(fields) => fields
            .iter()
            .filter(|(_, t)| **t == Ty::Given(true))
            .map(|(k, _)| k.clone())
            .collect(),
        Ty::Given(true) => vec!["value".to_string()],
        _ => Vec::new(),
    }
}

/// The inferred type of every row as a schema: records and columns one column per key; values
/// one column, whatever it holds (maps are a Struct column, all-nil a Null one).
fn ty_schema(ty: Ty, layout: Layout, inf: &Inferrer) -> Result<Schema> {
    match ty {
        Ty::Struct(fields) if layout != Layout::Values => {
            // columns of one type (a wide map: 10,000 float64 arrays) share the field made for
            // the first, renamed: its type and metadata are reference-counted, where making each
            // anew cost a fifth of such a read
            // (nested keys that were bin tagged again for this column's name: their paths)
            let mut last: Option<(&Ty, [bool; 2], Field)> = None;
            let mut out = Vec::with_capacity(fields.len());
            for (k, v) in fields.iter() {
                let tags = inf.column_tags(k);
                let f = match &last {
                    Some((t, g, f)) if *t == v && *g == tags => {
                        inf.key_paths.tag(f.clone().with_name(k))
                    }
                    _ => inf.column_field(k, v)?,
                };
                last = Some((v, tags, f.clone()));
                out.push(f);
            }
            Ok(Schema::new(out))
        }
        // (a map's keys that were bin tagged, from the walk's paths under `value`)
        other => Ok(Schema::new(vec![inf
            .key_paths
            .tag(other.to_field("value", &inf.opts)?)])),
    }
}

/// What every plan does to its schema last: how the maps were written noted (openpi's dialect,
/// an older packer's spelling), a given schema taken as it is, overrides given their types.
pub(crate) fn finish_schema(
    b: &ReaderBuilder,
    layout: Layout,
    inf: &Inferrer,
    mut schema: Option<Arc<Schema>>,
    given_nd: &[String],
) -> Option<Arc<Schema>> {
    let openpi = inf.openpi_seen || b.dialect == Dialect::Openpi;
    let spelling = inf.spellings.spelling();
    if let (Some(s), true) = (&schema, openpi || !spelling.is_default()) {
        let mut md = s.metadata().clone();
        if openpi {
            md.insert(meta::DIALECT.to_string(), "openpi".to_string());
        }
        if !spelling.is_default() {
            md.insert(meta::SPELLING.to_string(), spelling.to_meta());
        }
        schema = Some(Arc::new(s.as_ref().clone().with_metadata(md)));
    }
    if let Some(s) = &b.schema {
        schema = Some(s.clone());
    } else if let (Some(o), Some(s), Layout::Records | Layout::Values) =
        (&b.overrides, &schema, layout)
    {
        schema = Some(Arc::new(with_overrides(o, s, given_nd)));
    }
    schema
}

/// `s` with the columns `o` gives taking the given types (without the inferred numpy metadata;
/// those in `given_nd` hold ndarrays: tensors of the given element type).
fn with_overrides(o: &Schema, s: &Schema, given_nd: &[String]) -> Schema {
    let given: HashMap<&str, &Field> = o
        .fields()
        .iter()
        .map(|g| (g.name().as_str(), g.as_ref()))
        .collect();
    let fields: Vec<Field> = s
        .fields()
        .iter()
        .map(|f| match given.get(f.name().as_str()) {
            Some(g) => {
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
                } else if matches!(g.data_type(), DataType::FixedSizeList(..)) {
                    // an Array type given to msgpack lists: lists of that shape
                    md.insert(meta::KIND.to_string(), "list".to_string());
                }
                Field::new(f.name(), g.data_type().clone(), true).with_metadata(md)
            }
            None => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, s.metadata().clone())
}

/// Column maps (chunks) of one file recorded in the schema, at most ([`meta::CHUNKS`]: more are
/// written back as one map).
pub(crate) const MAX_CHUNKS: usize = 4096;
