//! The `columns` layout: each map value's axis 0 becomes rows.

use self::array::{
    make_decoder, nest_fixed, time_out_of_range_error, too_many_unbacked, unknown_key, Ctx,
};
use self::infer::ListRanges;
use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::read::array::{convert_elems, inexact_element};
use crate::read::source::{release_pages, RELEASE_STEP};
use crate::types::arrow::leaf_dtype;
use crate::types::{meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, Special, MAX_EMPTY_ENTRIES};
use arrow_array::{new_empty_array, Array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::collections::HashMap;
use std::sync::Arc;

/// Each column's position by name.
fn positions(schema: &Schema) -> HashMap<&str, usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name().as_str(), i))
        .collect()
}

/// Decode `columns` maps (or one bare ndarray) into whole columns, then slice them into batches.
/// `walked`: where the ranges of the lists start, as the plan's inference noted them (lists not
/// in it are walked here).
pub(crate) fn decode_columns(
    b: &ReaderBuilder,
    buf: &Buffer,
    full: &Schema,
    out: &SchemaRef,
    container: Container,
    ctx: &Ctx,
    walked: &ListRanges,
) -> Result<(Vec<RecordBatch>, Vec<usize>)> {
    let data = buf.as_slice();
    let mut c = Cursor::new(data, 0);
    // the chunks holding the rows asked for (`n_rows` after `skip_rows`), and no later one: its
    // types were not inferred
    let wanted = b
        .n_rows
        .map_or(usize::MAX, |n| b.skip_rows.saturating_add(n.max(1)));
    let mut batches = Vec::new();
    let mut chunk_rows = Vec::new();
    let mut rows_so_far = 0usize;
    let mut chunk = 0u64;
    // entries no data byte backs, over every chunk (a stream of tiny `(1048576, 0)` arrays)
    let mut unbacked = 0u128;
    // Name lookups by hash: a linear `field_with_name` per key made wide maps quadratic.
    let (full_at, out_at) = (positions(full), positions(out));
    while !c.is_empty() {
        let chunk_at = c.pos();
        let mut cols: Vec<Option<Decoded>> = (0..out.fields().len()).map(|_| None).collect();
        let mut rows = None;
        // the rows of each range of a list column decoded on its own (none: columns whole)
        let mut range_rows: Option<usize> = None;
        if container == Container::NdArray {
            let f = &full.fields()[0];
            let (n, a) = decode_column_value(&mut c, buf, f, ctx, b.release_input, &mut unbacked)?;
            rows = Some(n);
            if let Some(&i) = out_at.get(f.name().as_str()) {
                cols[i] = Some(Decoded::Whole(a));
            }
        } else {
            let at = c.offset();
            let n = c.read_map_len().map_err(|e| e.at_record(chunk))?;
            // The walk finds each wanted column's value. A list's elements are decoded one by
            // one: the walk cuts it into ranges of rows and hands each to the thread pool as it
            // steps past it, so that lists are decoded while the walk goes on, on every thread
            // (a map of long lists was decoded one column after another on one). An ndarray is
            // a slice of the input or one copy (a wide map has 10,000 small ones): decoded in
            // turn after the walk. What the walk stops at is reported after the columns before
            // it, as a decode in turn reported it.
            let mut jobs: Vec<Job<'_>> = Vec::new();
            let mut stop: Option<Error> = None;
            let par = b.decode_threads() > 1 && b.max_depth > 1;
            let release = b.release_input;
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            let mut spawned = 0usize;
            rayon::in_place_scope(|s| {
                for _ in 0..n {
                    let kp = c.pos();
                    let key = match crate::read::infer::read_key(&mut c) {
                        Ok(k) => k,
                        Err(e) => {
                            stop = Some(e);
                            break;
                        }
                    };
                    let wanted = out_at.get(key).copied();
                    let (Some(f), Some(slot)) = (full_at.get(key).map(|&i| full.field(i)), wanted)
                    else {
                        if ctx.strict_keys && !full_at.contains_key(key) {
                            stop = Some(c.error_at(kp, unknown_key(key, ctx)).at_record(chunk));
                            break;
                        }
                        // unknown or projected out: skipped, its bytes never copied
                        if let Err(e) = c.skip(b.max_depth) {
                            stop = Some(e);
                            break;
                        }
                        continue;
                    };
                    let mut list = c.clone();
                    let len = match list.peek_kind() {
                        Ok(Kind::Array) if par => list.read_array_len().ok(),
                        _ => None,
                    };
                    let Some(len) = len else {
                        jobs.push(Job {
                            slot,
                            key,
                            work: Work::InTurn(c.clone(), f),
                        });
                        if let Err(e) = c.skip(b.max_depth) {
                            // its decode says what is wrong with it (this, if the decode does not)
                            stop = Some(e);
                            break;
                        }
                        continue;
                    };
                    let rest = data.len() - c.pos();
                    // where its ranges start, if the inference noted them in ranges of this size
                    let known = walked.get(&c.pos());
                    let per = *range_rows.get_or_insert_with(|| match known {
                        Some((k, _)) => *k,
                        None => rows_per_range(len, rest, b),
                    });
                    let known =
                        known.filter(|(k, s)| *k == per && s.len() == len.div_ceil(per) + 1);
                    // whole maps asked for: only a list of several MiB is cut (a chunk per
                    // column is what Polars imports fastest); any other is one range
                    let step = match (b.whole_chunks, known) {
                        (false, _) => per,
                        (true, Some((_, at))) if at[at.len() - 1] - at[0] >= RANGE_MIN_BYTES => per,
                        (true, _) => len.max(1),
                    };
                    let mut ranges = Vec::new();
                    let mut first = 0;
                    while first < len && stop.is_none() {
                        let (m, mut at, tx) =
                            (step.min(len - first), list.clone(), done_tx.clone());
                        if let Some((_, starts)) = known {
                            at.set_pos(starts[first / per]);
                        }
                        let id = spawned;
                        spawned += 1;
                        ranges.push(id);
                        s.spawn(move |_| {
                            let from = at.pos();
                            let r = decode_list_range(&mut at, f, ctx, m, first);
                            // a mapped file's pages of the range, copied: not kept resident
                            if release {
                                release_pages(data, from, at.pos());
                            }
                            let _ = tx.send((id, r));
                        });
                        first += m;
                        if known.is_some() {
                            continue;
                        }
                        // (the elements one level down: as deep as a skip of the list lets them)
                        for _ in 0..m {
                            if let Err(e) = list.skip(b.max_depth - 1) {
                                stop = Some(e);
                                break;
                            }
                        }
                    }
                    if let Some((_, starts)) = known {
                        list.set_pos(starts[starts.len() - 1]);
                    }
                    jobs.push(Job {
                        slot,
                        key,
                        work: Work::Ranges(len, ranges),
                    });
                    if stop.is_some() {
                        break;
                    }
                    c = list;
                }
            });
            drop(done_tx);
            let mut decoded: Vec<Option<Result<ArrayRef>>> = (0..spawned).map(|_| None).collect();
            for (id, r) in done_rx {
                decoded[id] = Some(r);
            }
            for job in jobs {
                let key = job.key;
                let (len, col) = match job.work {
                    Work::InTurn(mut d, f) => {
                        let (len, a) = decode_column_value(
                            &mut d,
                            buf,
                            f,
                            ctx,
                            b.release_input,
                            &mut unbacked,
                        )
                        .map_err(|e| e.prepend_path(key).at_record(chunk))?;
                        (len, Decoded::Whole(a))
                    }
                    Work::Ranges(len, ids) => {
                        let mut parts = Vec::with_capacity(ids.len());
                        for id in ids {
                            let r = decoded[id].take().expect("one result per range");
                            parts.push(r.map_err(|e| e.prepend_path(key).at_record(chunk))?);
                        }
                        if parts.iter().map(|a| a.len()).sum::<usize>() != len {
                            // the walk stopped inside this list, where its decode did not
                            return Err(stop.take().unwrap_or_else(|| {
                                Error::new(ErrorKind::Layout(format!(
                                    "the list of {key:?} was not decoded whole"
                                )))
                            }));
                        }
                        // the ranges of a big list stay apart, a batch each (joined, they
                        // were a copy of the whole column)
                        match (b.whole_chunks, parts.len()) {
                            (true, 0) => (
                                len,
                                Decoded::Whole(new_empty_array(out.field(job.slot).data_type())),
                            ),
                            (true, 1) => (len, Decoded::Whole(parts.swap_remove(0))),
                            _ => (len, Decoded::Ranges(parts)),
                        }
                    }
                };
                if let Some(r) = rows {
                    if r != len {
                        return Err(Error::new(ErrorKind::Layout(format!(
                            "columns of unequal length in one map: {r} and {len} ({key:?})"
                        )))
                        .at_offset(at));
                    }
                }
                rows = Some(len);
                cols[job.slot] = Some(col);
            }
            if let Some(e) = stop {
                return Err(e);
            }
        }
        let rows = rows.unwrap_or(0);
        // a batch per range (no copy), sliced into batches of at most batch_size rows and about
        // batch_bytes bytes
        let row_bytes = (c.pos() - chunk_at) / rows.max(1);
        let per = if b.whole_chunks {
            rows.max(1)
        } else {
            b.batch_size.min((b.batch_bytes / row_bytes.max(1)).max(1))
        };
        let ranged = cols.iter().any(|c| matches!(c, Some(Decoded::Ranges(_))));
        let per_range = range_rows.filter(|_| ranged).unwrap_or(rows.max(1));
        let (mut first, mut j) = (0, 0);
        while first < rows {
            let len = per_range.min(rows - first);
            let arrays = out
                .fields()
                .iter()
                .zip(&cols)
                .map(|(f, c)| match c {
                    Some(Decoded::Whole(a)) => a.slice(first, len),
                    Some(Decoded::Ranges(parts)) => parts[j].clone(),
                    None => arrow_array::new_null_array(f.data_type(), len),
                })
                .collect();
            let range = crate::types::arrow::record_batch(out, arrays, len)?;
            let mut off = 0;
            while off < len {
                let n = (len - off).min(per);
                batches.push(range.slice(off, n));
                off += n;
            }
            first += len;
            j += 1;
        }
        chunk_rows.push(rows);
        rows_so_far = rows_so_far.saturating_add(rows);
        chunk += 1;
        if container == Container::NdArray || rows_so_far >= wanted {
            break;
        }
    }
    Ok((batches, chunk_rows))
}

/// A column of one `columns` map, decoded whole or in ranges of rows (a batch each).
enum Decoded {
    Whole(ArrayRef),
    Ranges(Vec<ArrayRef>),
}

/// A wanted column the walk of a map found.
struct Job<'a> {
    slot: usize,
    key: &'a str,
    work: Work<'a>,
}

enum Work<'a> {
    /// decoded after the walk, on the caller's thread, from here
    InTurn(Cursor<'a>, &'a Field),
    /// a list of this many elements, its ranges on the pool: the index of each one's result
    /// (fewer than it has where the walk stopped inside it)
    Ranges(usize, Vec<usize>),
}

/// A list of fewer bytes is one range when a whole map is asked for (one batch for the map,
/// a chunk per column); a longer one is decoded in ranges on every thread, a batch each.
const RANGE_MIN_BYTES: usize = 4 << 20;

/// Fewer rows than this are not cut into ranges (a job's own cost).
const MIN_RANGE_ROWS: usize = 4096;

/// The rows of each range of the lists of a map whose lists are `len` long, `rest` the bytes from
/// the first of them to the end of the input: a few ranges per thread, at most a batch, in rows
/// and in bytes. (A range of 38 MB of tensors was an allocation past glibc's mmap threshold:
/// fresh pages the kernel zeroes, 41% of a warm read, where a batch's 16 MiB are reused.)
pub(crate) fn rows_per_range(len: usize, rest: usize, b: &ReaderBuilder) -> usize {
    let threads = b.decode_threads().max(1);
    let by_bytes = b.batch_bytes / (rest / len.max(1)).max(1);
    len.div_ceil(threads * 4)
        .max(MIN_RANGE_ROWS)
        .min(b.batch_size)
        .min(by_bytes)
        .max(1)
}

/// `n` elements of a list column from `c`, the first being element `first` of the list.
fn decode_list_range(
    c: &mut Cursor<'_>,
    f: &Field,
    ctx: &Ctx,
    n: usize,
    first: usize,
) -> Result<ArrayRef> {
    let mut d = make_decoder(f, &ctx.for_column(f.name()))?;
    d.reserve(n);
    for i in first..first + n {
        let p = c.offset();
        d.decode(c)
            .map_err(|e| e.at_offset(p).at_record(i as u64))?;
    }
    d.finish()
}

/// One column of a `columns` map: an ndarray (N, *s) taken whole, or a list decoded row by row.
/// `release`: the input is a file mapping whose pages may be dropped once copied.
pub(crate) fn decode_column_value(
    c: &mut Cursor<'_>,
    buf: &Buffer,
    f: &Field,
    ctx: &Ctx,
    release: bool,
    unbacked: &mut u128,
) -> Result<(usize, ArrayRef)> {
    let at = c.pos();
    if c.peek_kind()? == Kind::Array {
        let n = c.read_array_len()?;
        return Ok((n, decode_list_range(c, f, ctx, n, 0)?));
    }
    let Some(Special::Array(nd)) = probe(c, ctx.dialect, ctx.npy_ext, ctx.max_depth)? else {
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
    if let Some(i) = crate::types::buffers::time_out_of_range(&dt, &nd.data) {
        return Err(c.error_at(nd.data_pos, time_out_of_range_error(&dt, i)));
    }
    *unbacked = unbacked.saturating_add(nd.unbacked_entries(&dt));
    // (two entries a byte read so far are free, as within one ndarray)
    if *unbacked > MAX_EMPTY_ENTRIES + 2 * c.pos() as u128 {
        return Err(c.error_at(at, too_many_unbacked()));
    }
    let want = f
        .metadata()
        .get(meta::DTYPE)
        .map(|s| NumpyDtype::from_metadata(s))
        .transpose()?;
    if let Some(w) = &want {
        // (each chunk's ndarray becomes Arrow values on its own: strings of other widths, and
        // structured ones whose string fields are of other widths or whose fields are in another
        // byte order, are values of the same Arrow type)
        let text = |d: &NumpyDtype| d.text_width().map(|(unicode, _)| unicode);
        if crate::types::buffers::native(w) != crate::types::buffers::native(&dt)
            && w.widest_struct(&dt).is_none()
            && (text(w).is_none() || text(w) != text(&dt))
        {
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
    // the caller's schema (not one inferred) may name another number type: each element
    // converted exactly, as in a records column the caller typed
    let number = matches!(
        dt,
        NumpyDtype::Bool | NumpyDtype::Int { .. } | NumpyDtype::Float { .. }
    );
    let convert_to = leaf_dtype(f.data_type())
        .filter(|w| ctx.convert && number && *w != crate::types::buffers::native(&dt));
    if let Some(w) = convert_to {
        let mut values = crate::types::buffers::output_buffer(nd.len * w.itemsize());
        convert_elems(&dt, &w, &nd.data, nd.len, &mut values)
            .map_err(|i| c.error_at(nd.data_pos, inexact_element(i, &dt, &w)))?;
        let values = crate::types::buffers::to_arrow(&w, values.into(), nd.len, true, None)?;
        return Ok((rows, nest_as_schema(c, at, f, &nd.shape, values, rows)?));
    }
    // zero-copy when no swap is needed and the elements are aligned: a slice of the input buffer
    let aligned = nd
        .data
        .as_ptr()
        .align_offset(crate::types::buffers::elem_align(&dt))
        == 0;
    let bytes = if dt.swap_width() == 0 && nd.in_place() && aligned {
        buf.slice_with_length(nd.data_pos, nd.data.len())
    } else {
        // copied a step at a time, a mapped file's pages dropped behind the copy: the input and
        // the column are not both resident (a single column of 300 MB doubled the peak)
        let mut m = crate::types::buffers::output_buffer(nd.data.len());
        crate::types::buffers::advise_huge_pages(&mut m);
        let item = dt.itemsize().max(1);
        let step = (RELEASE_STEP / item).max(1) * item;
        for (k, part) in nd.data.chunks(step).enumerate() {
            crate::types::buffers::extend_native(&dt, part, &mut m);
            if release && nd.in_place() {
                let from = nd.data_pos + k * step;
                release_pages(buf.as_slice(), from, from + part.len());
            }
        }
        m.into()
    };
    let values = crate::types::buffers::to_arrow(
        &crate::types::buffers::native(&dt),
        bytes,
        nd.len,
        true,
        None,
    )?;
    Ok((rows, nest_as_schema(c, at, f, &nd.shape, values, rows)?))
}

/// The flat `values` of an ndarray of `shape` (its rows on axis 0) as `rows` items of column
/// `f`'s type: its FixedSizeList sizes, or (chunks whose shapes differ) its List axes.
fn nest_as_schema(
    c: &Cursor<'_>,
    at: usize,
    f: &Field,
    shape: &[usize],
    values: ArrayRef,
    rows: usize,
) -> Result<ArrayRef> {
    let t = f.data_type();
    Ok(if shape.len() == 1 {
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
                // the per-row shape fits the schema's FixedSizeList sizes, or (chunks whose
                // shapes differ) its List axes, each row of this chunk as long as the others
                let mut tt = t;
                let mut fixed = true;
                for (axis, &d) in shape[1..].iter().enumerate() {
                    match tt {
                        DataType::FixedSizeList(item, n) if *n as usize == d => {
                            tt = item.data_type()
                        }
                        DataType::List(item) => {
                            fixed = false;
                            tt = item.data_type()
                        }
                        _ => {
                            return Err(c.error_at(
                                at,
                                ErrorKind::TypeConflict(format!(
                                    "ndarray of shape {:?} does not fit column type {t} (axis {})",
                                    shape,
                                    axis + 1
                                )),
                            ))
                        }
                    }
                }
                if fixed {
                    nest_fixed(t, values, None, rows)?
                } else {
                    nest_uniform(t, values, &shape[1..], rows)
                        .map_err(|e| e.at_offset(c.offset_of(at)))?
                }
            }
        }
    })
}

/// `values` as `count` items of type `t` (List or FixedSizeList axes, checked by the caller to
/// match `dims`), each item of shape `dims`: the rows of one ndarray of a `columns` chunk in a
/// column whose shapes differ between chunks.
fn nest_uniform(t: &DataType, values: ArrayRef, dims: &[usize], count: usize) -> Result<ArrayRef> {
    let Some((&d, rest)) = dims.split_first() else {
        return Ok(values);
    };
    let items = count.checked_mul(d).ok_or_else(|| {
        Error::new(ErrorKind::Layout(
            "more items than an ndarray can hold".into(),
        ))
    })?;
    Ok(match t {
        DataType::FixedSizeList(item, n) => Arc::new(arrow_array::FixedSizeListArray::try_new(
            item.clone(),
            *n,
            nest_uniform(item.data_type(), values, rest, items)?,
            None,
        )?),
        DataType::List(item) => {
            let ends = (0..=count)
                .map(|i| i32::try_from(i * d))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|_| {
                    Error::new(ErrorKind::Layout(
                        "more than 2^31 items in one batch; use a smaller batch size".into(),
                    ))
                })?;
            Arc::new(arrow_array::ListArray::try_new(
                item.clone(),
                arrow_buffer::OffsetBuffer::new(ends.into()),
                nest_uniform(item.data_type(), values, rest, items)?,
                None,
            )?)
        }
        other => {
            return Err(Error::new(ErrorKind::Layout(format!(
                "an ndarray axis in a column of {other}"
            ))))
        }
    })
}
