//! The exact schema of a stream of rows that can be read twice and is too big to hold in memory
//! (a compressed file past [`ReaderBuilder::with_hold_decompressed`]): a first pass walks every
//! row as the plan of a mapped file does, and the read that follows decodes with the schema it
//! found. Inferred from the first rows only, a stream failed where the same rows, uncompressed,
//! read: a column nil for its first thousand rows, an int column holding a float further on.

use std::io::Read;
use std::sync::Arc;

use arrow_schema::SchemaRef;

use super::plan::{finish_schema, plan_first, rows_inferrer, rows_schema, Container};
use super::row_walk::{RowWalk, RowsSeen};
use super::stream::StreamReader;
use super::{check_msgpack, ReaderBuilder};
use crate::error::{ErrorKind, Result};
use crate::options::Layout;
use crate::wire::cursor::Cursor;
use crate::wire::sniff::SNIFF_LEN;

/// What a first pass over a stream found: the schema of every row, and how many rows there
/// are (`None` where the input ended in a cut or failed: the read says what it keeps).
#[derive(Debug, Clone)]
pub(crate) struct FirstPass {
    pub schema: SchemaRef,
    pub rows: Option<usize>,
}

impl ReaderBuilder {
    /// Whether a stream read would infer from its first rows only where every row could be
    /// seen: no schema given, no row bound asked for (`infer_rows`, `n_rows`), rows to walk.
    pub(crate) fn wants_every_row(&self) -> bool {
        self.schema.is_none()
            && self.infer_rows.is_none()
            && self.n_rows.is_none()
            && self.layout != Layout::Columns
    }

    /// [`ReaderBuilder::wants_every_row`], by a first pass over a stream: not where rows are
    /// skipped, which a stream read decodes (with the types of the rows after them, they could
    /// fail) before it drops them.
    pub(crate) fn wants_first_pass(&self) -> bool {
        self.wants_every_row() && self.skip_rows == 0
    }

    /// Walk every row of `r` (the same input the read will be given) and keep the schema a plan
    /// over all of them gives, for the read to decode with (where
    /// [`ReaderBuilder::wants_first_pass`]). Inputs that are not a stream of rows
    /// (one object: read whole, and exactly, anyway) leave the builder as it was; so does a cut
    /// at the end, which the read itself reports or keeps.
    pub(crate) fn with_first_pass(mut self, r: Box<dyn Read + Send>) -> Result<Self> {
        if !self.wants_first_pass() {
            return Ok(self);
        }
        self.first_pass = self.walk_first(r)?;
        Ok(self)
    }

    /// Forget the rows a first pass counted: the input fails after them.
    pub(crate) fn without_row_count(mut self) -> Self {
        if let Some(f) = &mut self.first_pass {
            f.rows = None;
        }
        self
    }

    fn walk_first(&self, r: Box<dyn Read + Send>) -> Result<Option<FirstPass>> {
        // what the source or the first object does wrong, the read says (it meets them first)
        let mut s = StreamReader::new(r);
        let Ok(Some(first_end)) = s.fill_object_within(0, FIRST_OBJECT_MAX) else {
            return Ok(None);
        };
        // one object is read whole by the read (exact already); a stream of rows is walked here
        if !s.fill_to(first_end + 1).unwrap_or(false) {
            return Ok(None);
        }
        if self.layout == Layout::Auto
            && check_msgpack(self, &s.buf[..s.buf.len().min(SNIFF_LEN)]).is_err()
        {
            return Ok(None);
        }
        let truncated = |e: &crate::Error| matches!(e.kind(), ErrorKind::Truncated { .. });
        let Some(p) = plan_first(self, &s.buf, false)? else {
            return Ok(None);
        };
        if !matches!(p.layout, Layout::Records | Layout::Values) || p.container != Container::Stream
        {
            return Ok(None);
        }
        let (mut inf, given_value) = rows_inferrer(self, p.layout);
        let rw = RowWalk {
            b: self,
            layout: p.layout,
            limit: usize::MAX,
            given_value,
        };
        let mut seen = RowsSeen::new(p.layout);
        let mut pos = 0;
        let mut complete = true;
        loop {
            // the row at `pos`, when it is buffered whole (the walk must not see half of one)
            let mut probe = Cursor::new(&s.buf, s.base);
            probe.set_pos(pos);
            match probe.skip(self.max_depth) {
                Ok(()) => {
                    let end = probe.pos();
                    let mut c = Cursor::new(&s.buf[..end], s.base);
                    c.set_pos(pos);
                    rw.row(&mut inf, &mut seen, &mut c)?;
                    pos = end;
                }
                Err(e) if truncated(&e) && !s.eof => {
                    s.consume(pos);
                    pos = 0;
                    // a source that fails (a cut .gz) fails the read as well, after the rows
                    // before it: those are the rows to type
                    if s.read_more().is_err() {
                        complete = false;
                        break;
                    }
                }
                // the end, or a cut there: the rows before it are the rows read
                Err(e) if truncated(&e) => {
                    complete &= pos == s.buf.len();
                    break;
                }
                Err(e) => return Err(e.at_record(seen.rows as u64)),
            }
        }
        let rows = complete.then_some(seen.rows);
        let (schema, given_nd) = rows_schema(self, p.layout, seen, &inf, true)?;
        let schema = finish_schema(self, p.layout, &inf, schema.map(Arc::new), &given_nd);
        Ok(schema.map(|schema| FirstPass { schema, rows }))
    }
}

/// Past this, a first object is one object read whole (a columns map, one top-level array, a
/// bare ndarray): the read buffers it itself, exactly, and a stream's rows are never this big
/// (not buffered twice).
const FIRST_OBJECT_MAX: usize = 64 << 20;
