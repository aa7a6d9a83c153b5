//! Rows of the `records` and `values` layouts into batches: one decoder per column, a row limit,
//! and batches decoded in parallel (rayon) from starts the plan found.

use self::array::{make_decoder, ArrayDecoder, Ctx, StructDecoder};
use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::options::Layout;
use crate::read::source::release_behind;
use crate::read::source::release_pages;
use crate::types::arrow::record_batch;
use crate::wire::cursor::Cursor;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{Schema, SchemaRef};
use std::sync::Arc;

/// Decodes consecutive rows (records or values) of a buffer.
pub(crate) struct RowsReader {
    pub(crate) buf: Buffer,
    /// drop decoded pages of a file mapping, so a big file's RSS stays near one batch
    pub(crate) release: bool,
    pub(crate) limit: Limit,
    pub(crate) pos: usize,
    pub(crate) left: usize,
    pub(crate) row: u64,
    pub(crate) batch_size: usize,
    /// a batch also ends after the row that reaches this many input bytes
    pub(crate) batch_bytes: usize,
    pub(crate) dec: RowDecoder,
    pub(crate) schema: SchemaRef,
    /// parallel decoding: where each batch starts, and what it takes to make more decoders
    pub(crate) par: Option<Parallel>,
}

pub(crate) struct Parallel {
    pub(crate) threads: usize,
    pub(crate) starts: Vec<usize>,
    /// the index of each batch's first row
    pub(crate) rows: Vec<usize>,
    /// index of the next batch to decode
    pub(crate) next: usize,
    pub(crate) ready: std::collections::VecDeque<RecordBatch>,
    pub(crate) layout: Layout,
    pub(crate) full: Schema,
    pub(crate) projection: Option<Vec<String>>,
    pub(crate) ctx: Ctx,
    /// batches already decoded, by index ([`crate::read::ahead`]); taken once
    pub(crate) ahead: super::ahead::Ahead,
}

/// Decode the `n` rows that start at byte `start` (row `row0` of the file, for errors) into one
/// batch of `schema`, dropping a mapped file's pages behind the cursor when `release`.
pub(crate) fn decode_rows(
    dec: &mut RowDecoder,
    data: &[u8],
    start: usize,
    row0: usize,
    n: usize,
    release: bool,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    dec.reserve(n);
    let mut c = Cursor::new(data, 0);
    c.set_pos(start);
    let mut released = c.pos();
    for r in 0..n {
        let at = c.offset();
        dec.decode(&mut c)
            .map_err(|e| e.at_offset(at).at_record((row0 + r) as u64))?;
        released = release_behind(release, data, released, c.pos());
    }
    let cols = dec.finish()?;
    record_batch(schema, cols, n)
}

// one per reader, matched on every row: kept inline rather than boxed
#[allow(clippy::large_enum_variant)]
pub(crate) enum RowDecoder {
    Records(StructDecoder),
    Values(Box<dyn ArrayDecoder>),
}

impl RowDecoder {
    pub(crate) fn new(
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
            let d =
                make_decoder(f, &ctx.for_column(f.name())).map_err(|e| e.prepend_path(f.name()))?;
            Ok((RowDecoder::Values(d), Arc::new(full.clone())))
        }
    }
    #[inline]
    pub(crate) fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match self {
            RowDecoder::Records(d) => d.decode_map(c),
            RowDecoder::Values(d) => d.decode(c),
        }
    }
    pub(crate) fn reserve(&mut self, rows: usize) {
        match self {
            RowDecoder::Records(d) => d.reserve_rows(rows),
            RowDecoder::Values(d) => d.reserve(rows),
        }
    }
    pub(crate) fn finish(&mut self) -> Result<Vec<ArrayRef>> {
        match self {
            RowDecoder::Records(d) => d.finish_columns(),
            RowDecoder::Values(d) => Ok(vec![d.finish()?]),
        }
    }
}

impl RowsReader {
    /// Decode the next few batches at once, one per thread (rows were split at batch starts
    /// found while inferring, so each thread knows where its rows begin).
    pub(crate) fn next_parallel(&mut self) -> Result<Option<RecordBatch>> {
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
        let (data, release) = (self.buf.as_slice(), self.release);
        let results: Vec<Result<RecordBatch>> = {
            let par = &*par;
            let schema = &self.schema;
            let jobs: Vec<usize> = (first..last).collect();
            use rayon::prelude::*;
            jobs.par_iter()
                .map(|&k| {
                    // decoded while the plan walked the file (ReaderBuilder::with_eager)
                    if let Some(b) = par.ahead.get(k).and_then(|b| b.lock().ok()?.take()) {
                        // its fields are the final ones; the schema's metadata may have grown
                        return record_batch(schema, b.columns().to_vec(), b.num_rows());
                    }
                    let (mut dec, _) = RowDecoder::new(
                        par.layout,
                        &par.full,
                        par.projection.as_deref(),
                        &par.ctx,
                    )?;
                    let row0 = par.rows[k];
                    let n = par.rows.get(k + 1).copied().unwrap_or(total) - row0;
                    decode_rows(&mut dec, data, par.starts[k], row0, n, release, schema)
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

    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.par.is_some() {
            return self.next_parallel();
        }
        if self.left == 0 {
            return Ok(None);
        }
        let most = self.left.min(self.batch_size);
        self.dec.reserve(most);
        let data = self.buf.as_slice();
        let mut c = Cursor::new(data, 0);
        c.set_pos(self.pos);
        let mut released = self.pos;
        let (mut n, mut last_len) = (0, 0);
        let alone = super::row_walk::row_alone_bytes(self.batch_bytes);
        while n < most && (n == 0 || (c.pos() - self.pos < self.batch_bytes && last_len < alone)) {
            let at = c.offset();
            self.dec
                .decode(&mut c)
                .map_err(|e| e.at_offset(at).at_record(self.row))?;
            self.row += 1;
            n += 1;
            last_len = (c.offset() - at) as usize;
            released = release_behind(self.release, data, released, c.pos());
        }
        let start = self.pos;
        self.pos = c.pos();
        self.left -= n;
        if self.release {
            release_pages(self.buf.as_slice(), start, self.pos);
        }
        let cols = self.dec.finish()?;
        let b = record_batch(&self.schema, cols, n)?;
        self.limit.add(&b, self.pos as u64)?;
        Ok(Some(b))
    }
}

/// The cap on decoded bytes.
pub(crate) struct Limit {
    pub(crate) max: Option<u64>,
    pub(crate) used: u64,
}

impl Limit {
    pub(crate) fn new(max: Option<u64>) -> Self {
        Limit { max, used: 0 }
    }
    pub(crate) fn add(&mut self, b: &RecordBatch, offset: u64) -> Result<()> {
        if let Some(max) = self.max {
            // (a tensor may be a slice of the whole input)
            self.used += crate::types::arrow::data_bytes(b) as u64;
            if self.used > max {
                return Err(Error::new(ErrorKind::LimitExceeded(max)).at_offset(offset));
            }
        }
        Ok(())
    }
}
