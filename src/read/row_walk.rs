//! The walk over the rows of a records or values read, one row at a time: what each row adds to
//! the inferred type, and where each batch starts.

use super::empty_shapes::{note_empty_shapes, EmptyShapes};
use super::infer::{skip_marker_fits, Inferrer, Ty};
use super::ReaderBuilder;
use crate::error::{Error, ErrorKind, Result};
use crate::options::Layout;
use crate::wire::cursor::{Cursor, Kind};
use std::collections::HashMap;

/// A row this big ends its batch: a stream of big arrays is read a batch per array, and each
/// array's values are then a slice of the input where its bytes are aligned (no copy). A 16th of
/// `batch_bytes`, at least 1 MiB (a copy of a smaller row costs little more than a batch).
pub(crate) fn row_alone_bytes(batch_bytes: usize) -> usize {
    (batch_bytes / 16).max(1 << 20)
}

/// What a walk over rows has found so far.
pub(crate) struct RowsSeen {
    /// the type of the rows (records: a `Struct` of the columns)
    pub ty: Ty,
    pub rows: usize,
    /// row shapes nested Lists lose ([`note_empty_shapes`]), by column
    pub empties: EmptyShapes,
    /// a record lacked a column that others have, or brought one after the first record
    pub absent: bool,
    /// the length of the last row walked: how far on the next row probably starts
    pub last_len: usize,
}

impl RowsSeen {
    /// How many columns a read of the rows so far gives: what a batch of them is as wide as
    /// (the projection's, a given schema's, the records' keys so far; one for `values`).
    pub(crate) fn width(&self, b: &ReaderBuilder, layout: Layout) -> usize {
        let columns = match (&b.schema, &self.ty) {
            (Some(s), _) => s.fields().len(),
            (None, Ty::Struct(cols)) => cols.len(),
            _ => 1,
        };
        b.read_width(layout, columns)
    }
    pub(crate) fn new(layout: Layout) -> Self {
        RowsSeen {
            ty: if layout == Layout::Records {
                Ty::Struct(Default::default())
            } else {
                Ty::Null
            },
            rows: 0,
            empties: HashMap::new(),
            absent: false,
            last_len: 0,
        }
    }
}

/// How many rows ahead of the one walked [`RowWalk::row`] asks for the next rows' bytes.
const ROWS_AHEAD: usize = 8;

/// Ask for the cache line at `buf[at]` (nothing when `at` is past the end). A hint only.
#[inline]
fn prefetch(buf: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = buf.get(at) {
        // SAFETY: a prefetch reads nothing and cannot fault; the address is inside `buf`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (p as *const u8).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (buf, at);
}

/// How each row of a records or values walk is looked at.
pub(crate) struct RowWalk<'b> {
    pub b: &'b ReaderBuilder,
    pub layout: Layout,
    /// rows after this many are only stepped over ([`ReaderBuilder::with_infer_rows`])
    pub limit: usize,
    /// values layout with the type of `value` given
    pub given_value: bool,
}

impl RowWalk<'_> {
    /// Walk the row at `c` (the `seen.rows`-th), adding what it holds to `seen`.
    pub(crate) fn row(
        &self,
        inf: &mut Inferrer,
        seen: &mut RowsSeen,
        c: &mut Cursor<'_>,
    ) -> Result<()> {
        let (b, rows, at, start) = (self.b, seen.rows, c.offset(), c.pos());
        // rows of one file tend to be of one length: have the first bytes of the row 8 rows ahead
        // on their way from memory while this one is walked (most of a walk over rows of a few
        // hundred bytes is waiting on them; one row ahead is too close to hide the wait)
        prefetch(c.buf(), start + ROWS_AHEAD * seen.last_len);
        prefetch(c.buf(), start + ROWS_AHEAD * seen.last_len + 64);
        let records = self.layout == Layout::Records;
        // a `values` row is the column `value`: errors inside it name it
        let in_value = |e: Error| if records { e } else { e.prepend_path("value") };
        // a record with fewer keys than the columns so far: keys are absent, not nil
        let row_keys = (records && rows < self.limit)
            .then(|| c.clone().read_map_len().ok())
            .flatten();
        let cols_before = match &seen.ty {
            Ty::Struct(f) => f.len(),
            _ => 0,
        };
        let known = rows < self.limit
            && b.fast_infer
            && if records {
                inf.fits_row(&seen.ty, c)
            } else {
                inf.fits_value(&seen.ty, c)
            };
        if known {
            // the row adds nothing to the type: nothing to merge
        } else if rows < self.limit {
            let t = if records {
                if c.peek_kind()? != Kind::Map {
                    return Err(c
                        .error(ErrorKind::Layout(format!(
                            "records layout: row {rows} is not a map"
                        )))
                        .at_record(rows as u64));
                }
                inf.records = true;
                let t = inf.map(c, 0);
                inf.records = false;
                t
            } else if self.given_value {
                inf.given_value(c)
            } else {
                inf.row_value(c)
            }
            .map_err(|e| in_value(e).at_offset(at).at_record(rows as u64))?;
            note_empty_shapes(&t, rows, records, &mut seen.empties);
            inf.note_nested_keys(&seen.ty, &t);
            let ty = std::mem::replace(&mut seen.ty, Ty::Null);
            seen.ty = ty
                .merge_with(t, inf.opts.raw_conflicts)
                .map_err(|e| in_value(e).at_offset(at).at_record(rows as u64))?;
            inf.index_nested(&seen.ty);
            self.check_columns(&seen.ty)
                .map_err(|e| e.at_offset(at).at_record(rows as u64))?;
        } else {
            c.skip(b.max_depth).map_err(|e| e.at_record(rows as u64))?;
        }
        if let (Some(k), Ty::Struct(f)) = (row_keys, &seen.ty) {
            // this row lacks some column, or brought one the rows before it lacked
            if k < f.len() || (rows > 0 && f.len() > cols_before) {
                seen.absent = true;
            }
        }
        seen.rows += 1;
        seen.last_len = c.pos() - start;
        Ok(())
    }

    /// Rows (of the `values` layout) whose value fits the type so far by its marker byte alone
    /// (a stream of numbers): stepped over in one loop, without the per-row work of
    /// [`RowWalk::row`], where a stream of 1,000,000 floats spent 41% of its read. The same rows
    /// `row` would take the same way. At most `most` rows, none starting at or past `end`. The
    /// number of rows stepped over.
    pub(crate) fn values_fitting(
        &self,
        seen: &mut RowsSeen,
        c: &mut Cursor<'_>,
        end: usize,
        most: usize,
    ) -> usize {
        // the first row sets the type (records go through `row`'s template: the caller asks for
        // values only)
        if !self.b.fast_infer || seen.rows == 0 {
            return 0;
        }
        let most = most.min(self.limit.saturating_sub(seen.rows));
        let (mut n, mut last_start) = (0, 0);
        let pos = skip_marker_fits(c.buf(), c.pos(), &seen.ty, |start| {
            if n >= most || start >= end {
                return false;
            }
            n += 1;
            last_start = start;
            true
        });
        if n > 0 {
            seen.last_len = pos - last_start;
            seen.rows += n;
            c.set_pos(pos);
        }
        n
    }

    /// The cap on the number of columns ([`ReaderBuilder::with_max_columns`]).
    pub(crate) fn check_columns(&self, ty: &Ty) -> Result<()> {
        match ty {
            Ty::Struct(f) if f.len() > self.b.max_columns => {
                Err(Error::new(ErrorKind::TooManyColumns(self.b.max_columns)))
            }
            _ => Ok(()),
        }
    }
}
