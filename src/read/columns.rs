//! The `columns` layout: each map value's axis 0 becomes rows.

use self::array::{make_decoder, nest_fixed, unknown_key, Ctx};
use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::read::source::{release_pages, RELEASE_STEP};
use crate::types::{meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, Special};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{Field, Schema, SchemaRef};
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
pub(crate) fn decode_columns(
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
    // Name lookups by hash: a linear `field_with_name` per key made wide maps quadratic.
    let (full_at, out_at) = (positions(full), positions(out));
    while !c.is_empty() {
        let chunk_at = c.pos();
        let mut cols: Vec<Option<ArrayRef>> = vec![None; out.fields().len()];
        let mut rows = None;
        if container == Container::NdArray {
            let f = &full.fields()[0];
            let (n, a) = decode_column_value(&mut c, buf, f, ctx, b.release_input)?;
            rows = Some(n);
            if let Some(&i) = out_at.get(f.name().as_str()) {
                cols[i] = Some(a);
            }
        } else {
            let at = c.offset();
            let n = c.read_map_len().map_err(|e| e.at_record(chunk))?;
            // The walk finds each wanted column's value and hands it to the thread pool, where
            // the columns are decoded while the walk goes on (a map of long lists was decoded one
            // column after another). What the walk stops at is reported after the columns before
            // it, as a decode in turn reported it.
            // (slot, key, whether it went to the pool)
            let mut jobs: Vec<(usize, &str, bool)> = Vec::new();
            let mut stop: Option<Error> = None;
            let par = b.decode_threads() > 1;
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            let mut in_turn = Vec::new();
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
                    let (k, mut d, tx) = (jobs.len(), c.clone(), done_tx.clone());
                    // a list's elements are decoded one by one: worth a thread. An ndarray is
                    // a slice of the input or one copy (a wide map has 10,000 small ones)
                    let spawn = par && matches!(c.peek_kind(), Ok(Kind::Array));
                    jobs.push((slot, key, spawn));
                    if spawn {
                        s.spawn(move |_| {
                            let r = decode_column_value(&mut d, buf, f, ctx, b.release_input);
                            let _ = tx.send((k, r));
                        });
                    } else {
                        in_turn.push((d, f));
                    }
                    if let Err(e) = c.skip(b.max_depth) {
                        // its decode says what is wrong with it (this, if the decode does not)
                        stop = Some(e);
                        break;
                    }
                }
            });
            drop(done_tx);
            let mut decoded: Vec<Option<Result<(usize, ArrayRef)>>> = Vec::new();
            decoded.resize_with(jobs.len(), || None);
            for (k, r) in done_rx {
                decoded[k] = Some(r);
            }
            let mut in_turn = in_turn.into_iter();
            for (k, &(slot, key, spawned)) in jobs.iter().enumerate() {
                let r = match spawned {
                    true => decoded[k].take().expect("one result per column"),
                    false => {
                        let (mut d, f) = in_turn.next().expect("one cursor per column");
                        decode_column_value(&mut d, buf, f, ctx, b.release_input)
                    }
                };
                let (len, a) = r.map_err(|e| e.prepend_path(key).at_record(chunk))?;
                if let Some(r) = rows {
                    if r != len {
                        return Err(Error::new(ErrorKind::Layout(format!(
                            "columns of unequal length in one map: {r} and {len} ({key:?})"
                        )))
                        .at_offset(at));
                    }
                }
                rows = Some(len);
                cols[slot] = Some(a);
            }
            if let Some(e) = stop {
                return Err(e);
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
        for (f, a) in out.fields().iter().zip(cols) {
            match a {
                Some(a) => arrays.push(a),
                None => arrays.push(arrow_array::new_null_array(f.data_type(), rows)),
            }
        }
        let whole = crate::types::arrow::record_batch(out, arrays, rows)?;
        // slices (no copy) of at most batch_size rows and about batch_bytes bytes
        let row_bytes = (c.pos() - chunk_at) / rows.max(1);
        let per = if b.whole_chunks {
            rows.max(1)
        } else {
            b.batch_size.min((b.batch_bytes / row_bytes.max(1)).max(1))
        };
        let mut off = 0;
        while off < rows {
            let n = (rows - off).min(per);
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

/// The alignment an Arrow values buffer of `dt`'s (native) elements needs to be a view of the
/// input: that of the primitive each element is (or is made of); 1 for dtypes converted anyway.
fn elem_align(dt: &NumpyDtype) -> usize {
    match dt {
        NumpyDtype::Int { size, .. } | NumpyDtype::Float { size, .. } => *size as usize,
        NumpyDtype::Complex { size, .. } => *size as usize / 2,
        NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => 8,
        _ => 1,
    }
}

/// One column of a `columns` map: an ndarray (N, *s) taken whole, or a list decoded row by row.
/// `release`: the input is a file mapping whose pages may be dropped once copied.
pub(crate) fn decode_column_value(
    c: &mut Cursor<'_>,
    buf: &Buffer,
    f: &Field,
    ctx: &Ctx,
    release: bool,
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
    // zero-copy when no swap is needed and the elements are aligned: a slice of the input buffer
    let aligned = nd.data.as_ptr().align_offset(elem_align(&dt)) == 0;
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
