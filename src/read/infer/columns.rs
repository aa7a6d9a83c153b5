//! Inference of the `columns` layout: each value of a map is a column, an ndarray whose axis 0
//! are its rows or a list whose elements are.

use super::{skip_marker_fits, Columns, Inferrer, NdKind, Ty};
use crate::error::{Error, ErrorKind, Result};
use crate::options::ObjectArrays;
use crate::read::columns::rows_per_range;
use crate::read::ReaderBuilder;
use crate::types::NumpyDtype;
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, Special};
use rayon::prelude::*;

/// Infer one `columns` map: its rows, and the type of each column's rows.
pub(crate) fn infer_columns_map(
    c: &mut Cursor<'_>,
    inf: &mut Inferrer,
    b: &ReaderBuilder,
) -> Result<(usize, Ty)> {
    let at = c.offset();
    if c.peek_kind()? != Kind::Map {
        return Err(c.error(ErrorKind::Layout(
            "columns layout: expected a map of name → ndarray or list".into(),
        )));
    }
    let n = c.read_map_len()?;
    let mut fields = Columns::default();
    let mut len: Option<(usize, &str)> = None;
    // the rows of each range of the map's lists, from its first list
    let mut per = None;
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
        inf.key_paths.start(key);
        let r = infer_column(c, inf, b, &mut per);
        inf.key_paths.stop();
        let (l, t) = r.map_err(|e| e.prepend_path(key))?;
        match &len {
            Some((l0, k0)) if *l0 != l => {
                return Err(Error::new(ErrorKind::Layout(format!(
                    "columns of unequal length: {k0:?} has {l0} rows, {key:?} has {l}"
                )))
                .at_offset(at))
            }
            _ => len = Some((l, key)),
        }
        fields.insert(key.to_string(), t);
    }
    Ok((len.map_or(0, |(l, _)| l), Ty::Struct(fields)))
}

/// Infer one column of a `columns` map: (rows, type of a row).
pub(crate) fn infer_columns_value(
    c: &mut Cursor<'_>,
    inf: &mut Inferrer,
    b: &ReaderBuilder,
) -> Result<(usize, Ty)> {
    infer_column(c, inf, b, &mut None)
}

/// How many of the `most` elements from the cursor on repeat the one at `prev` (which ends at the
/// cursor) byte for byte up to its payload, and that element's length: an ndarray map whose
/// payload is its last bytes. The same header bytes mean the same dtype, shape and payload
/// length, so the same type; only each element's header is read, on every thread.
fn repeats(c: &Cursor<'_>, prev: usize, most: usize, b: &ReaderBuilder) -> (usize, usize) {
    let (buf, at) = (c.buf(), c.pos());
    let stride = at - prev;
    let mut d = c.clone();
    d.set_pos(prev);
    let Ok(Some(Special::Array(nd))) = probe(&mut d, b.dialect, b.npy_ext, b.max_depth) else {
        return (0, stride);
    };
    if !nd.in_place() || nd.type_text || nd.data.is_empty() || nd.data_pos + nd.data.len() != at {
        return (0, stride);
    }
    let head = &buf[prev..nd.data_pos];
    let differs = |j: usize| {
        let s = at + j * stride;
        s + stride > buf.len() || &buf[s..s + head.len()] != head
    };
    // in windows twice as long each time, the pieces of a window on every thread: a run that
    // ends early costs little past its end
    const PIECE: usize = 4096;
    let (mut done, mut window) = (0, PIECE * rayon::current_num_threads());
    while done < most {
        let end = (done + window).min(most);
        let fails: Vec<Option<usize>> = (done..end)
            .step_by(PIECE)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|p| (p..(p + PIECE).min(end)).find(|&j| differs(j)))
            .collect();
        // the first element that differs ends the run
        if let Some(j) = fails.into_iter().flatten().next() {
            return (j, stride);
        }
        (done, window) = (end, window * 2);
    }
    (most, stride)
}

/// [`infer_columns_value`], noting where the ranges of a list start ([`Inferrer::list_ranges`]),
/// of `per` rows (set by the map's first list).
fn infer_column(
    c: &mut Cursor<'_>,
    inf: &mut Inferrer,
    b: &ReaderBuilder,
    per: &mut Option<usize>,
) -> Result<(usize, Ty)> {
    let at = c.pos();
    match c.peek_kind()? {
        Kind::Array => {
            let n = c.read_array_len()?;
            let range = *per.get_or_insert_with(|| rows_per_range(n, c.buf().len() - at, b));
            let mut starts = Vec::with_capacity(n / range + 2);
            let mut t = Ty::Null;
            let mut i = 0;
            // where the element before the cursor's starts (`None`: not known); the element
            // from which repeats are looked for again, and how far on after a look found none
            let (mut last, mut next_look, mut backoff) = (None, 0, 1);
            while i < n {
                // a list of same-shape ndarrays (msgpack_numpy's list of arrays): elements that
                // repeat the last one's bytes up to the payload have its type, checked at once
                if let (Some(prev), Ty::Nd { .. }, true) =
                    (last, &t, b.fast_infer && i >= next_look)
                {
                    let (k, stride) = repeats(c, prev, n - i, b);
                    // after an odd element, looked for again behind it; where none repeat, each
                    // time twice as far on (elements of other shapes by turns cost a few looks)
                    (next_look, backoff) = if k > 0 {
                        (i + k + 1, 1)
                    } else {
                        (i + backoff, (backoff * 2).min(1 << 16))
                    };
                    // the range starts among them: every `range`-th element
                    for j in (i.div_ceil(range) * range..i + k).step_by(range) {
                        starts.push(c.pos() + (j - i) * stride);
                    }
                    if k > 0 {
                        c.set_pos(c.pos() + k * stride);
                        (i, last) = (i + k, None);
                        continue;
                    }
                }
                if i % range == 0 {
                    starts.push(c.pos());
                }
                // most elements add nothing to the type so far: checked without allocating, as
                // the rows of a records walk are (a list of 100,000 maps spent 90% here), and
                // scalars that fit by their marker byte alone in one loop (not past the range)
                if i > 0 && b.fast_infer {
                    let (mut k, left) = (0, (n - i).min(range - i % range));
                    let p = skip_marker_fits(c.buf(), c.pos(), &t, |_| {
                        k += 1;
                        k <= left
                    });
                    let k = k.min(left);
                    if k > 0 {
                        c.set_pos(p);
                        (i, last) = (i + k, None);
                        continue;
                    }
                    last = Some(c.pos());
                    if inf.fits_element(&t, c, 1) {
                        i += 1;
                        continue;
                    }
                }
                last = Some(c.pos());
                let p = c.offset();
                let v = inf.value(c, 1)?;
                // the column's values conflict: with conflicts="binary", the column is kept raw
                // (a list of maps too: the column is the list's, not the fields of its maps)
                t = match t.merge(v) {
                    Err(e)
                        if inf.opts.raw_conflicts
                            && matches!(e.kind(), ErrorKind::TypeConflict(_)) =>
                    {
                        Ty::Raw
                    }
                    r => r.map_err(|e| e.at_offset(p).at_record(i as u64))?,
                };
                i += 1;
            }
            starts.push(c.pos());
            inf.list_ranges.insert(at, (range, starts));
            Ok((n, t))
        }
        Kind::Map | Kind::Ext => match probe(c, b.dialect, b.npy_ext, b.max_depth)? {
            Some(Special::Array(nd)) if !nd.scalar && !nd.shape.is_empty() => {
                // (an openpi ndarray: the file is written back in that dialect)
                inf.note_form(&nd);
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
                // a dtype with no Arrow type (a unit such as M8[Y], an object field) is
                // reported here, where its place is known, not when the schema is made
                if matches!(
                    dt,
                    NumpyDtype::Datetime { .. }
                        | NumpyDtype::Timedelta { .. }
                        | NumpyDtype::Struct(_)
                ) {
                    dt.arrow_type()
                        .map_err(|e| e.at_offset(c.offset_of(nd.type_pos)))?;
                }
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
