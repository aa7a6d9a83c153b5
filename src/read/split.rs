//! Walking a large stream of rows in pieces, one per thread.
//!
//! Exact inference looks at every row before the schema is known, and a msgpack stream has no
//! index: where a row starts is known only once the row before it has been walked. So the rows
//! are cut into pieces at guessed offsets. Each piece starts at the first place after its guess
//! where the bytes the first row starts with (its map header and first key) appear, and is
//! walked on a thread of its own.
//!
//! A guess can be wrong (those bytes inside a string or a binary payload). A piece is used only
//! when the walk of the piece before it ends exactly where it starts, which makes that place a
//! row start. The pieces' types are merged in file order: merging is associative, so this is the
//! type a walk over the rows one by one gives. Batch starts are found again from each row's
//! offset, so the batches are those of a walk on one thread too, except in a records table of
//! more than 256 columns whose columns grow within a piece: its batches are cut as wide as the
//! whole piece's rows (shorter, never longer, than one thread's). Where anything does not hold
//! (a wrong guess, an error in a piece, a conflict between pieces) the walk goes on one row at a
//! time from the end of the last piece that held: errors name the same row and offset as without
//! pieces.

use rayon::prelude::*;

use super::infer::{GivenKeys, Inferrer, Ty};
use super::plan::Plan;
use super::row_walk::{RowWalk, RowsSeen};
use super::source::release_behind;
use crate::error::Result;
use crate::options::Layout;
use crate::wire::cursor::{Cursor, Kind};

/// The smallest piece worth a thread of its own, by default
/// ([`crate::ReaderBuilder::with_walk_piece_bytes`]).
pub(crate) const WALK_PIECE_BYTES: usize = 4 << 20;

/// The most row starts all pieces keep (4 bytes each): a piece that reaches its share stops
/// there, and the rows after it are walked one by one. Memory stays bounded whatever the row count.
const MAX_ROW_STARTS: usize = 32 << 20;

/// One piece, walked.
struct Piece {
    start: usize,
    /// the first row start at or past the piece's end
    end: usize,
    inf: Inferrer,
    seen: RowsSeen,
    /// how far each of its rows starts from the one before (the first: from `start`)
    row_steps: Vec<u32>,
}

/// Walk the rows from the cursor in pieces, adding what they hold to `inf`, `seen` and `p`'s batch
/// starts. Returns where the rows that held end: the caller walks on from there, one row at a
/// time. `array_rows`: the rows left in a top-level array (rows past them are not taken here).
pub(crate) fn walk(
    rw: &RowWalk<'_>,
    c: &Cursor<'_>,
    array_rows: Option<usize>,
    inf: &mut Inferrer,
    seen: &mut RowsSeen,
    p: &mut Plan,
) -> Result<usize> {
    let b = rw.b;
    let (first, len) = (c.pos(), c.buf().len());
    let pieces = b
        .decode_threads()
        .min((len - first) / b.walk_piece_bytes.max(1));
    if pieces < 2 || seen.rows > 0 {
        return Ok(first);
    }
    let Some(sync) = row_prefix(rw, c) else {
        return Ok(first);
    };
    // piece i starts at the first `sync` after its guess
    let mut starts = vec![first];
    for i in 1..pieces {
        let guess = (first + (len - first) / pieces * i).max(starts[i - 1] + 1);
        match memchr::memmem::find(&c.buf()[guess..], sync) {
            Some(at) => starts.push(guess + at),
            None => break,
        }
    }
    let bounds: Vec<(usize, usize)> = (0..starts.len())
        .map(|i| (starts[i], starts.get(i + 1).copied().unwrap_or(len)))
        .collect();
    let walked: Vec<Result<Piece>> = bounds
        .par_iter()
        .map(|&(start, end)| walk_piece(rw, c, &inf.given, start, end, MAX_ROW_STARTS / pieces))
        .collect();

    let raw = inf.opts.raw_conflicts;
    let mut pos = first;
    // where the last row taken starts (a batch ends after a big one: `Plan::starts_batch`)
    let mut last_row = None;
    for piece in walked {
        let Ok(piece) = piece else { break };
        let fits_array = array_rows.is_none_or(|n| seen.rows + piece.seen.rows <= n);
        // a piece's row numbers are its own: where it noted shapes, walk it row by row
        if piece.start != pos || !fits_array || (pos != first && !piece.seen.empties.is_empty()) {
            break;
        }
        let Piece {
            end,
            inf: pinf,
            seen: pseen,
            row_steps,
            ..
        } = piece;
        if pos == first {
            *inf = pinf;
            *seen = RowsSeen { rows: 0, ..pseen };
            inf.forget_dtype_matches();
        } else {
            if regrouping_may_differ(&seen.ty, &pseen.ty) {
                break;
            }
            let differ = rw.layout == Layout::Records && keys_differ(&seen.ty, &pseen.ty);
            // (nested key sets: those that differ within the piece, then between it and before)
            let nested = match inf.nested_track {
                true => Ty::nested_keys_differ(&seen.ty, &pseen.ty, &inf.nested_absent),
                false => Vec::new(),
            };
            let ty = match seen.ty.clone().merge_with(pseen.ty, raw) {
                Ok(t) if rw.check_columns(&t).is_ok() => t,
                _ => break,
            };
            for k in pinf.nested_absent.iter().chain(&nested) {
                inf.flag_nested(k);
            }
            seen.ty = ty;
            inf.index_nested(&seen.ty);
            inf.forget_dtype_matches();
            seen.absent |= pseen.absent || differ;
            for (k, bin) in pinf.top_keys {
                inf.top_keys.entry(k).or_insert(bin);
            }
            inf.key_paths.merge(pinf.key_paths);
            inf.openpi_seen |= pinf.openpi_seen;
            inf.spellings.merge(&pinf.spellings);
        }
        let mut s = pos;
        for step in row_steps {
            s += step as usize;
            if p.starts_batch(b, s, seen, last_row.map_or(0, |r| s - r)) {
                p.batch_starts.push(s);
                p.batch_rows.push(seen.rows);
            }
            last_row = Some(s);
            seen.rows += 1;
        }
        pos = end;
    }
    if let Some(r) = last_row {
        seen.last_len = pos - r;
    }
    Ok(pos)
}

/// The bytes every row is expected to start with: the first row's map header and first key.
/// `None` when the first row is not a map with a key of a few bytes (nothing to find rows by).
fn row_prefix<'a>(rw: &RowWalk<'_>, c: &Cursor<'a>) -> Option<&'a [u8]> {
    let mut c = c.clone();
    let first = c.pos();
    if c.peek_kind().ok()? != Kind::Map || c.read_map_len().ok()? == 0 {
        return None;
    }
    c.skip(rw.b.max_depth).ok()?;
    let sync = &c.buf()[first..c.pos()];
    (sync.len() >= 3).then_some(sync)
}

/// Walk the rows from `start` up to the first one starting at or past `end`, or up to `most`
/// rows.
fn walk_piece(
    rw: &RowWalk<'_>,
    c: &Cursor<'_>,
    given: &GivenKeys,
    start: usize,
    end: usize,
    most: usize,
) -> Result<Piece> {
    let mut inf = Inferrer::new(rw.b.infer_options());
    inf.given = given.clone();
    inf.nested_track = rw.layout == Layout::Records;
    let mut seen = RowsSeen::new(rw.layout);
    let mut c = c.clone();
    c.set_pos(start);
    let mut row_steps = Vec::new();
    let (mut released, mut last) = (start, start);
    while c.pos() < end && !c.is_empty() && row_steps.len() < most {
        // a mapped file: pages walked are handed back as the one-thread walk does
        released = release_behind(rw.b.release_input, c.buf(), released, c.pos());
        // a row of 4 GiB or more: walked one by one (the rows from here are the caller's)
        let Ok(step) = u32::try_from(c.pos() - last) else {
            break;
        };
        row_steps.push(step);
        last = c.pos();
        rw.row(&mut inf, &mut seen, &mut c)?;
    }
    Ok(Piece {
        start,
        end: c.pos(),
        inf,
        seen,
        row_steps,
    })
}

/// Whether merging `later` (a piece's rows, merged among themselves first) into `acc` may give
/// another type or error than merging those rows into `acc` one by one. Merging is associative
/// except where a type absorbs what would otherwise conflict:
/// - a float absorbs integers, but integers above 2^63-1 and negative ones conflict when they meet
///   first: a side with either kind of integer facing a float on the other is not merged;
/// - raw msgpack ([`Ty::Raw`]) absorbs everything, and rows whose column is raw are stepped over
///   unread by the fast path only where the row's other columns fit: a side holding raw values is
///   not merged.
fn regrouping_may_differ(acc: &Ty, later: &Ty) -> bool {
    if holds_raw(acc) || holds_raw(later) {
        return true;
    }
    match (acc, later) {
        (Ty::Int { big, neg }, Ty::F32 | Ty::F64) => *big || *neg,
        (Ty::Struct(a), Ty::Struct(b)) => b
            .iter()
            .any(|(k, v)| a.get(k).is_some_and(|u| regrouping_may_differ(u, v))),
        (Ty::List(a, _), Ty::List(b, _)) => regrouping_may_differ(a, b),
        (Ty::Map(ak, av), Ty::Map(bk, bv)) => {
            regrouping_may_differ(ak, bk) || regrouping_may_differ(av, bv)
        }
        _ => false,
    }
}

fn holds_raw(t: &Ty) -> bool {
    match t {
        Ty::Raw => true,
        Ty::Struct(f) => f.values().any(holds_raw),
        Ty::List(t, _) => holds_raw(t),
        Ty::Map(k, v) => holds_raw(k) || holds_raw(v),
        _ => false,
    }
}

/// Whether two records' column sets differ (then some record lacks a column: keys are absent).
fn keys_differ(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Struct(a), Ty::Struct(b)) => Ty::key_sets_differ(a, b),
        _ => false,
    }
}
