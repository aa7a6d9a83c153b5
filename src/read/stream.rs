//! Reading from any `Read` (pipes, decompressors): a growing buffer that holds back the bytes of
//! an object not yet complete.

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::wire::cursor::Cursor;
use arrow_array::RecordBatch;
use std::io::Read;

impl ReaderBuilder {
    /// [`ReaderBuilder::build`]: a stream of rows decoded batch by batch, typed from its first
    /// rows (or by a first pass, [`ReaderBuilder::with_first_pass`]); anything else read whole.
    pub(crate) fn build_all<R: Read + Send + 'static>(self, r: R) -> Result<Reader> {
        let mut s = StreamReader::new(Box::new(r));
        if self.layout == Layout::Auto {
            s.fill_to(SNIFF_LEN)?;
            check_msgpack(&self, &s.buf[..s.buf.len().min(SNIFF_LEN)])?;
        }
        let keep = self.on_truncated == OnTruncated::Keep;
        // a cut among the first objects: read what there is and keep its complete prefix
        let cut_early = |e: &Error, s: &StreamReader| {
            keep && s.eof && matches!(e.kind(), ErrorKind::Truncated { .. })
        };
        // buffer the first object (and one more byte, to know whether more follow)
        let first_end = match s.fill_object(0) {
            Err(e) if cut_early(&e, &s) => {
                return self.build_from_buffer_all(Buffer::from_vec(s.buf))
            }
            r => r?,
        };
        let single = match first_end {
            None => true,
            Some(e) => !s.fill_to(e + 1)?,
        };
        let probe_plan = plan_first(&self, &s.buf, single)?;
        match probe_plan.map(|p| (p.layout, p.container)) {
            Some((Layout::Records | Layout::Values, Container::Stream)) if !single => {
                let mut me = self;
                let infer = me.infer_rows.unwrap_or(DEFAULT_STREAM_INFER_ROWS);
                let max_bytes = match me.infer_rows {
                    Some(_) => usize::MAX,
                    None => DEFAULT_STREAM_INFER_BYTES,
                };
                // buffer `infer` objects to infer from, and two at least: the plan of one object
                // alone would take a top-level array's elements for the rows
                let mut end = 0usize;
                let mut n = 0usize;
                while (n < infer && (n == 0 || end < max_bytes)) || n < 2 {
                    match s.fill_object(end) {
                        Ok(Some(e)) => {
                            end = e;
                            n += 1;
                        }
                        Ok(None) => break,
                        Err(e) if cut_early(&e, &s) => {
                            return me.build_from_buffer_all(Buffer::from_vec(s.buf))
                        }
                        Err(e) => return Err(e),
                    }
                }
                me.infer_rows = Some(n.min(infer).max(1));
                // a stream's skipped rows are decoded, then dropped
                let skip = std::mem::take(&mut me.skip_rows);
                let mut plan = plan(&me, &s.buf[..end])?;
                let walked = me.first_pass.take();
                if let Some(all) = &walked {
                    // the first rows gave the layout; every row gives the types
                    plan.schema = Some(all.schema.clone());
                }
                let mut r = Reader::from_stream(me, s, plan)?;
                r.window.skip = skip;
                if let Inner::Stream(rows) = &mut r.inner {
                    rows.rows = walked.and_then(|w| w.rows);
                }
                Ok(r)
            }
            _ => {
                let mut all = s.take_buf();
                s.src.read_to_end(&mut all)?;
                self.build_from_buffer_all(Buffer::from_vec(all))
            }
        }
    }
}

impl Reader {
    pub(crate) fn from_stream(b: ReaderBuilder, s: StreamReader, p: Plan) -> Result<Reader> {
        // rows read from a pipe: nothing to lend them from
        let ctx = b.decode_ctx(None);
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
                d: Decoder::from_parts(dec, projected, b.batch_size, b.max_depth)
                    .with_batch_bytes(b.batch_bytes),
                max_depth: b.max_depth,
                limit: Limit::new(b.max_decoded_bytes),
                keep: b.on_truncated == OnTruncated::Keep,
                truncation: None,
                rows: None,
            })),
            truncation: None,
            window: RowWindow::ALL,
            convert: Vec::new(),
            decoded: Arc::new(Schema::empty()),
        })
    }
}

/// Buffers a `Read` source so whole top-level objects can be decoded from a slice.
pub(crate) struct StreamReader {
    pub(crate) src: Box<dyn Read + Send>,
    pub(crate) buf: Vec<u8>,
    /// absolute offset of `buf[0]`
    pub(crate) base: u64,
    pub(crate) eof: bool,
    /// How much the next read asks for: doubles while the source fills it, up to [`READ_CHUNK`],
    /// and drops to twice what a short read returned. Pipes, sockets and decompressors return
    /// less than asked; zero-filling a full chunk for each such read made a source that hands out
    /// a few bytes at a time cost a megabyte of writes per read.
    pub(crate) ask: usize,
}

/// The most one read asks for.
pub(crate) const READ_CHUNK: usize = 1 << 20;

/// The least one read asks for.
pub(crate) const MIN_READ: usize = 8 << 10;

impl StreamReader {
    pub(crate) fn new(src: Box<dyn Read + Send>) -> Self {
        StreamReader {
            src,
            buf: Vec::new(),
            base: 0,
            eof: false,
            ask: 64 << 10,
        }
    }
    /// Read until `buf` has at least `n` bytes; false at EOF before that.
    pub(crate) fn fill_to(&mut self, n: usize) -> Result<bool> {
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
    /// Drop the first `n` buffered bytes (decoded or walked).
    pub(crate) fn consume(&mut self, n: usize) {
        self.buf.drain(..n);
        self.base += n as u64;
    }
    /// Read at least as much again as is buffered (and a chunk at least): an object cut at the
    /// end is read again from its start on every retry, so fixed steps would make a big one
    /// quadratic. False at the end of the source.
    pub(crate) fn read_more(&mut self) -> Result<bool> {
        let want = self.buf.len() + READ_CHUNK.max(self.buf.len());
        self.fill_to(want)
    }
    /// The buffered bytes, leaving the buffer empty.
    pub(crate) fn take_buf(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
    /// End of the complete object starting at `start`, reading more as needed; `None` at a clean EOF.
    pub(crate) fn fill_object(&mut self, start: usize) -> Result<Option<usize>> {
        self.fill_object_within(start, usize::MAX)
    }
    /// [`StreamReader::fill_object`], also `None` once `most` bytes of the object are buffered
    /// and it goes on.
    pub(crate) fn fill_object_within(
        &mut self,
        start: usize,
        most: usize,
    ) -> Result<Option<usize>> {
        loop {
            if start >= self.buf.len() && !self.fill_to(start + 1)? {
                return Ok(None);
            }
            let mut c = Cursor::new(&self.buf, self.base);
            c.set_pos(start);
            match c.skip(crate::read::DEFAULT_MAX_DEPTH.max(1024)) {
                Ok(()) => return Ok(Some(c.pos())),
                Err(e) if matches!(e.kind(), ErrorKind::Truncated { .. }) && !self.eof => {
                    if self.buf.len() - start >= most {
                        return Ok(None);
                    }
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

/// The rows of a `Read` source: a short loop that pushes the buffered bytes into a [`Decoder`]
/// and reads more when an object is cut.
pub(crate) struct StreamRows {
    pub(crate) s: StreamReader,
    pub(crate) d: Decoder,
    pub(crate) max_depth: usize,
    pub(crate) limit: Limit,
    /// [`OnTruncated::Keep`]: an object cut by the end of the input ends the rows
    pub(crate) keep: bool,
    pub(crate) truncation: Option<Truncation>,
    /// rows in the whole stream, where a first pass counted them
    pub(crate) rows: Option<usize>,
}

impl StreamRows {
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let used = self.d.decode(&self.s.buf)?;
            // drop what was decoded; keep the (partial) rest
            self.s.consume(used);
            if self.d.is_full() {
                break;
            }
            if self.s.eof {
                if !self.s.buf.is_empty() && self.keep {
                    self.truncation = Some(Truncation {
                        offset: self.s.base,
                        objects: self.d.rows_flushed() + self.d.len() as u64,
                    });
                    self.s.buf.clear();
                } else if !self.s.buf.is_empty() {
                    // an object cut by the end of the input: the cursor says where and by how much
                    let row = self.d.rows_flushed() + self.d.len() as u64;
                    let e = Cursor::new(&self.s.buf, self.s.base)
                        .skip(self.max_depth)
                        .err()
                        .unwrap_or_else(|| Error::new(ErrorKind::Truncated { need: 1, have: 0 }));
                    return Err(e.at_record(row));
                }
                break;
            }
            self.s.read_more()?;
        }
        match self.d.flush()? {
            None => Ok(None),
            Some(b) => {
                self.limit.add(&b, self.s.base)?;
                Ok(Some(b))
            }
        }
    }
}
