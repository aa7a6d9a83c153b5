//! One table written as several parts at once, one per thread: its rows are cut into ranges, and
//! each range is encoded by its own writer, resumed where the writer of the rows before it stood.
//! The parts' bytes, one after another, are the bytes one writer makes of the whole table.
//!
//! Only rows of `records` or `values` can be cut: concatenated, or in one top-level array (whose
//! header, holding the row count, the first part writes), not a `columns` map (one object).
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! # fn main() -> msgpack_arrow::Result<()> {
//! use msgpack_arrow::write::Parts;
//! use msgpack_arrow::WriterBuilder;
//! let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! let ids = Int64Array::from((0..1000).collect::<Vec<i64>>());
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids)])?;
//! let b = WriterBuilder::new();
//! let mut one = b.clone().build(Vec::new(), schema.clone())?;
//! one.write(&batch)?;
//! let batches = [batch];
//! let parts = Parts::cut(&b, &schema, &batches, 3)?.expect("a record stream");
//! let mut count = parts.counter(&b, &schema)?;
//! while count.step(100)? {} // an interrupt can be looked for between steps
//! let parts = count.finish()?.expect("cut between rows");
//! let mut out = vec![0u8; parts.bytes().unwrap()];
//! let mut fill = parts.fill(&b, &schema, &mut out)?;
//! while fill.step(100)? {}
//! fill.finish_filled()?;
//! assert_eq!(out, one.finish()?);
//! # Ok(()) }
//! ```

use std::io::Write;
use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use rayon::prelude::*;

use super::{slice_rows, wire, ByteCount, Container, Writer, WriterBuilder};
use crate::error::{Error, ErrorKind, Result};
use crate::options::Layout;

/// What a writer of a row stream carries from one row to the next: the rows before (row numbers
/// in errors, tensors' rows) and the output offset (aligned payloads).
#[derive(Debug, Clone, Default)]
struct Resume {
    rows: u64,
    pos: u64,
}

impl<W: Write> Writer<W> {
    /// Where this writer stands, if another writer could write the rows after it from there (a
    /// stream of rows whose first ones are written, none held back).
    fn resume_point(&self) -> Option<Resume> {
        (self.cuttable() && self.streaming && self.pending.is_empty()).then(|| Resume {
            rows: self.rows,
            pos: self.out.pos(),
        })
    }

    /// The layout is rows, concatenated or in one top-level array.
    fn cuttable(&self) -> bool {
        matches!(self.container, Container::Stream | Container::Array)
            && matches!(self.layout, Layout::Records | Layout::Values)
    }

    /// The first part's writer, of a table of `rows` rows: a top-level array's header is written
    /// now, and the rows streamed after it (what `finish` would write for the held rows).
    fn start_whole(&mut self, rows: u64) {
        if self.container == Container::Array {
            wire::array_hdr(&mut self.out.buf, rows as usize);
            self.container = Container::Stream;
            self.streaming = true;
        }
    }

    /// A part's bytes do not depend on where it starts: not aligned.
    fn independent(&self) -> bool {
        !self.out.align
    }

    fn resume(&mut self, at: &Resume) {
        self.rows = at.rows;
        self.out.base = at.pos;
        self.container = Container::Stream;
        self.streaming = true;
    }
}

/// The smallest table (Arrow bytes) worth cutting into parts for the threads: below it, starting
/// them costs about what they save.
pub const PARTS_MIN_BYTES: usize = 8 << 20;

/// [`super::write_batches`] of a big stream whose output is mostly ndarray payloads, on every
/// thread: counted (payloads not copied), then each part encoded into its range of one buffer.
/// `None` where that is not worth it (few threads, a small table, scalar rows, whose count would
/// cost a second encode) or the layout cannot be cut.
pub(crate) fn write_at_once(
    batches: &[RecordBatch],
    schema: &SchemaRef,
    layout: Layout,
) -> Result<Option<Vec<u8>>> {
    let threads = rayon::current_num_threads();
    let table: usize = batches.iter().map(|b| b.get_array_memory_size()).sum();
    if threads < 2 || table < PARTS_MIN_BYTES {
        return Ok(None);
    }
    let b = WriterBuilder::new().with_layout(layout);
    let Some(parts) = Parts::cut(&b, schema, batches, threads)? else {
        return Ok(None);
    };
    // the first rows say whether payloads are most of the output
    let (counted, uncopied) = parts.sample(&b, schema, SAMPLE_ROWS)?;
    if uncopied * 2 < counted {
        return Ok(None);
    }
    let mut count = parts.counter(&b, schema)?;
    while count.step(usize::MAX)? {}
    let Some(parts) = count.finish()? else {
        return Ok(None);
    };
    // zeroed pages come from the kernel as they are: no pass over them before the fill
    let mut out = vec![0u8; parts.bytes().unwrap_or_default()];
    // ... in huge pages where the output is big (faulting 4 KiB pages in cost more than the fill)
    crate::types::buffers::advise_huge_range(out.as_mut_ptr(), out.len());
    let mut fill = parts.fill(&b, schema, &mut out)?;
    while fill.step(usize::MAX)? {}
    fill.finish_filled()?;
    Ok(Some(out))
}

/// Rows counted to tell a table of payloads from one of scalars.
pub const SAMPLE_ROWS: usize = 2048;

/// A table's rows cut into ranges, with where each range's writer starts.
#[derive(Debug)]
pub struct Parts<'a> {
    batches: &'a [RecordBatch],
    ranges: Vec<Range<usize>>,
    /// per part, where its writer starts (the first: a fresh writer)
    starts: Vec<Resume>,
    /// per part, its output's length (once counted)
    lens: Option<Vec<u64>>,
    independent: bool,
}

impl<'a> Parts<'a> {
    /// `batches` cut into `n` ranges of about equal rows: `None` where the layout is not a stream
    /// of rows, or the table has too few rows for `n` parts of two.
    pub fn cut(
        builder: &WriterBuilder,
        schema: &SchemaRef,
        batches: &'a [RecordBatch],
        n: usize,
    ) -> Result<Option<Parts<'a>>> {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let probe = builder.clone().build_count(schema.clone())?;
        // the first part holds two rows, so its writer streams (a single row may be wrapped);
        // left-out keys are not cut: which a row holds depends on the rows before it and on how
        // they were batched
        if !probe.cuttable()
            || probe.omit
            || probe.omit_nested.contains(&true)
            || n < 2
            || rows < 2 * n
        {
            return Ok(None);
        }
        let ranges: Vec<Range<usize>> = (0..n).map(|i| rows * i / n..rows * (i + 1) / n).collect();
        let starts = ranges
            .iter()
            .map(|r| Resume {
                rows: r.start as u64,
                ..Resume::default()
            })
            .collect();
        Ok(Some(Parts {
            batches,
            ranges,
            starts,
            lens: None,
            independent: probe.independent(),
        }))
    }

    /// A part's bytes do not depend on the parts before it: the parts can be encoded at once
    /// without counting them first.
    pub fn independent(&self) -> bool {
        self.independent
    }

    /// The rows of each part.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    fn rows(&self) -> usize {
        self.ranges.last().map_or(0, |r| r.end)
    }

    /// The bytes of the first `rows` rows as the parts' writers count them, and of those the
    /// ndarray payloads counted without a copy: whether counting the table first is cheap
    /// (payloads most of it) or a second encode (scalars). A top-level array counts its rows
    /// here, where a plain writer holds them to the end.
    pub fn sample(
        &self,
        builder: &WriterBuilder,
        schema: &SchemaRef,
        rows: usize,
    ) -> Result<(u64, u64)> {
        let mut w = builder.clone().build_count(schema.clone())?;
        w.start_whole(self.rows() as u64);
        for b in slice_rows(self.batches, 0, rows) {
            w.write(&b)?;
        }
        Ok((w.counted(), w.uncopied()))
    }

    /// Count the parts' output, in steps ([`Counter::step`]): all at once where they are
    /// independent, else one after another, each from where the one before it ended.
    pub fn counter(self, builder: &WriterBuilder, schema: &SchemaRef) -> Result<Counter<'a>> {
        let state = if self.independent {
            // counting writers: fixed-size payloads counted, not copied
            CountState::AtOnce(self.writers_by(|_| builder.clone().build_count(schema.clone()))?)
        } else {
            let mut w = builder.clone().build_count(schema.clone())?;
            w.start_whole(self.rows() as u64);
            CountState::InTurn {
                w: Box::new(w),
                part: 0,
                at: 0,
            }
        };
        Ok(Counter { parts: self, state })
    }

    /// The whole output's length in bytes, once counted.
    pub fn bytes(&self) -> Option<usize> {
        self.lens.as_ref().map(|l| l.iter().sum::<u64>() as usize)
    }

    /// One writer per part into the sink `sink(i)` makes for it; [`Writers::step`] runs them.
    pub fn writers<W: Write>(
        &self,
        builder: &WriterBuilder,
        schema: &SchemaRef,
        mut sink: impl FnMut(usize) -> W,
    ) -> Result<Writers<W>> {
        self.writers_by(|i| builder.clone().build(sink(i), schema.clone()))
    }

    fn writers_by<W: Write>(
        &self,
        mut make: impl FnMut(usize) -> Result<Writer<W>>,
    ) -> Result<Writers<W>> {
        let mut writers = Vec::with_capacity(self.ranges.len());
        for (i, (r, at)) in self.ranges.iter().zip(&self.starts).enumerate() {
            let mut w = make(i)?;
            if i > 0 {
                w.resume(at);
            } else {
                w.start_whole(self.rows() as u64);
            }
            writers.push((w, slice_rows(self.batches, r.start, r.len()), 0));
        }
        Ok(Writers { writers })
    }

    /// Writers of the counted parts into `out` (of [`Parts::bytes`] bytes), each into its range.
    pub fn fill<'o>(
        &self,
        builder: &WriterBuilder,
        schema: &SchemaRef,
        out: &'o mut [u8],
    ) -> Result<Writers<SliceSink<'o>>> {
        let lens = self.lens.as_deref().unwrap_or_default();
        if lens.len() != self.ranges.len() || Some(out.len()) != self.bytes() {
            return Err(Error::new(ErrorKind::Io(std::io::Error::other(format!(
                "the output buffer has {} bytes, the counted parts {:?}",
                out.len(),
                self.bytes()
            )))));
        }
        let mut rest = out;
        let mut sinks = Vec::with_capacity(lens.len());
        for &len in lens {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len as usize);
            sinks.push(Some(SliceSink::new(head)));
            rest = tail;
        }
        self.writers(builder, schema, |i| {
            sinks[i].take().expect("one sink per part")
        })
    }
}

/// Counts the parts' bytes ([`Parts::counter`]).
pub struct Counter<'a> {
    parts: Parts<'a>,
    state: CountState,
}

enum CountState {
    AtOnce(Writers<ByteCount>),
    /// one writer through the parts in order, its state noted at each cut
    InTurn {
        w: Box<Writer<ByteCount>>,
        part: usize,
        at: usize,
    },
}

impl<'a> Counter<'a> {
    /// Count about `rows` more rows of each part; `false` once all are counted.
    pub fn step(&mut self, rows: usize) -> Result<bool> {
        match &mut self.state {
            CountState::AtOnce(ws) => ws.step(rows),
            CountState::InTurn { w, part, at } => {
                let Some(r) = self.parts.ranges.get(*part).cloned() else {
                    return Ok(false);
                };
                let n = rows.max(1).min(r.end - *at);
                for b in slice_rows(self.parts.batches, *at, n) {
                    w.write(&b)?;
                }
                *at += n;
                if *at == r.end {
                    *part += 1;
                    if *part == self.parts.ranges.len() {
                        return Ok(false);
                    }
                    // a writer that cannot be resumed here makes the cut fail (`finish`: None)
                    match w.resume_point() {
                        Some(p) => self.parts.starts[*part] = p,
                        None => return Ok(false),
                    }
                }
                Ok(true)
            }
        }
    }

    /// The counted parts: `None` where a cut fell where no writer could be resumed.
    pub fn finish(mut self) -> Result<Option<Parts<'a>>> {
        let n = self.parts.ranges.len();
        let lens: Vec<u64> = match self.state {
            CountState::AtOnce(ws) => {
                if !ws.done() {
                    return Ok(None);
                }
                ws.writers
                    .into_iter()
                    .map(|(w, ..)| w.finish_count())
                    .collect::<Result<_>>()?
            }
            CountState::InTurn { w, part, .. } => {
                if part != n {
                    return Ok(None);
                }
                let total = w.finish_count()?;
                let mut ends: Vec<u64> = self.parts.starts[1..].iter().map(|s| s.pos).collect();
                ends.push(total);
                let mut prev = 0;
                ends.iter()
                    .map(|&e| {
                        let len = e - prev;
                        prev = e;
                        len
                    })
                    .collect()
            }
        };
        let mut pos = 0;
        for (s, len) in self.parts.starts.iter_mut().zip(&lens) {
            s.pos = pos;
            pos += len;
        }
        self.parts.lens = Some(lens);
        Ok(Some(self.parts))
    }
}

/// One writer per part, each with its rows and how far it got.
pub struct Writers<W: Write> {
    writers: Vec<(Writer<W>, Vec<RecordBatch>, usize)>,
}

impl<W: Write + Send> Writers<W> {
    /// Each part writes its next `rows` rows, all at once (on the thread pool); `false` once
    /// every part is written. Between steps the caller may look for an interrupt. Of errors in
    /// several parts, the first part's is returned (the one a single writer meets first).
    pub fn step(&mut self, rows: usize) -> Result<bool> {
        let steps: Vec<Result<()>> = self
            .writers
            .par_iter_mut()
            .map(|(w, batches, at)| {
                for b in slice_rows(batches, *at, rows.max(1)) {
                    w.write(&b)?;
                    *at += b.num_rows();
                }
                Ok(())
            })
            .collect();
        steps.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(!self.done())
    }

    /// Every part is written.
    fn done(&self) -> bool {
        self.writers
            .iter()
            .all(|(_, batches, at)| *at == batches.iter().map(|b| b.num_rows()).sum::<usize>())
    }

    /// Finish every part; the sinks, in order.
    pub fn finish(self) -> Result<Vec<W>> {
        self.writers.into_iter().map(|(w, ..)| w.finish()).collect()
    }
}

impl Writers<SliceSink<'_>> {
    /// Finish every part and check that each filled its range exactly.
    pub fn finish_filled(self) -> Result<()> {
        for s in self.finish()? {
            if s.at != s.buf.len() {
                return Err(Error::new(ErrorKind::Io(std::io::Error::other(format!(
                    "a part came to {} bytes, not the {} counted",
                    s.at,
                    s.buf.len()
                )))));
            }
        }
        Ok(())
    }
}

/// A sink over a buffer of the counted size: more than that is an error, never a reallocation.
#[derive(Debug)]
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl<'a> SliceSink<'a> {
    /// A sink that fills `buf` from its start.
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceSink { buf, at: 0 }
    }

    /// Bytes written so far.
    pub fn filled(&self) -> usize {
        self.at
    }
}

impl Write for SliceSink<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let end = self.at + b.len();
        let dst = self.buf.get_mut(self.at..end).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                "the output is longer than counted",
            )
        })?;
        dst.copy_from_slice(b);
        self.at = end;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::options::Missing;
    use crate::types::meta;

    /// Rows with an int, a string and a float32[3] ndarray; `null_from`: the string is null in
    /// the rows before it (a key left out there first appears later).
    fn table(rows: usize, null_until: usize, chunk: usize) -> (SchemaRef, Vec<RecordBatch>) {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..rows as i64).map(|i| i * 77),
        ));
        let names: ArrayRef = Arc::new(StringArray::from_iter(
            (0..rows).map(|i| (i >= null_until).then(|| "x".repeat(i % 40))),
        ));
        let vals = Float32Array::from_iter_values((0..rows * 3).map(|i| i as f32 * 0.5));
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let emb: ArrayRef =
            Arc::new(FixedSizeListArray::try_new(item, 3, Arc::new(vals), None).unwrap());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("emb", emb.data_type().clone(), false),
        ]));
        let whole = RecordBatch::try_new(schema.clone(), vec![ids, names, emb]).unwrap();
        let batches = (0..rows)
            .step_by(chunk)
            .map(|at| whole.slice(at, chunk.min(rows - at)))
            .collect();
        (schema, batches)
    }

    fn one_writer(b: &WriterBuilder, schema: &SchemaRef, batches: &[RecordBatch]) -> Vec<u8> {
        let mut w = b.clone().build(Vec::new(), schema.clone()).unwrap();
        for x in batches {
            w.write(x).unwrap();
        }
        w.finish().unwrap()
    }

    fn in_parts(
        b: &WriterBuilder,
        schema: &SchemaRef,
        batches: &[RecordBatch],
        n: usize,
        step: usize,
    ) -> Option<(bool, Vec<u8>)> {
        let parts = Parts::cut(b, schema, batches, n).unwrap()?;
        let independent = parts.independent();
        let mut count = parts.counter(b, schema).unwrap();
        while count.step(step).unwrap() {}
        let parts = count.finish().unwrap()?;
        let mut out = vec![0u8; parts.bytes().unwrap()];
        let mut fill = parts.fill(b, schema, &mut out).unwrap();
        while fill.step(step).unwrap() {}
        fill.finish_filled().unwrap();
        Some((independent, out))
    }

    #[test]
    fn parts_written_at_once_are_the_bytes_of_one_writer() {
        let builders = [
            (WriterBuilder::new(), true),
            (WriterBuilder::new().with_aligned(true), false),
            (WriterBuilder::new().with_missing(Missing::Nil), true),
        ];
        for (b, independent) in &builders {
            for (rows, null_until, chunk) in [(40, 0, 7), (41, 30, 41), (9, 9, 2), (1000, 501, 64)]
            {
                let (schema, batches) = table(rows, null_until, chunk);
                let want = one_writer(b, &schema, &batches);
                for n in 2..=4 {
                    for step in [1, 3, 1000] {
                        let (ind, got) = in_parts(b, &schema, &batches, n, step)
                            .unwrap_or_else(|| panic!("{b:?} {rows} rows in {n} parts"));
                        assert_eq!(ind, *independent, "{b:?}");
                        assert!(
                            got == want,
                            "{b:?}: {rows} rows (null until {null_until}) in {n} parts, steps of {step}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn independent_parts_encoded_apart_join_into_the_bytes_of_one_writer() {
        let (schema, batches) = table(333, 0, 50);
        let b = WriterBuilder::new();
        let parts = Parts::cut(&b, &schema, &batches, 3).unwrap().unwrap();
        let mut ws = parts.writers(&b, &schema, |_| Vec::new()).unwrap();
        while ws.step(10).unwrap() {}
        assert_eq!(
            ws.finish().unwrap().concat(),
            one_writer(&b, &schema, &batches)
        );
    }

    #[test]
    fn rows_in_one_top_level_array_are_cut_the_first_part_writing_its_header() {
        for (rows, chunk) in [(40, 7), (1000, 64), (9, 9)] {
            let (schema, batches) = table(rows, 0, chunk);
            let md = [(
                crate::types::meta::CONTAINER.to_string(),
                "array".to_string(),
            )];
            let schema = Arc::new(
                schema
                    .as_ref()
                    .clone()
                    .with_metadata(md.into_iter().collect::<std::collections::HashMap<_, _>>()),
            );
            let batches: Vec<RecordBatch> = batches
                .iter()
                .map(|b| b.clone().with_schema(schema.clone()).unwrap())
                .collect();
            for b in [
                WriterBuilder::new(),
                WriterBuilder::new().with_aligned(true),
            ] {
                let want = one_writer(&b, &schema, &batches);
                // a top-level array of `rows` maps (array 16 header below 2^16 rows)
                assert!(matches!(want[0], 0x90..=0x9f | 0xdc), "{:x}", want[0]);
                for n in 2..=4 {
                    let (_, got) = in_parts(&b, &schema, &batches, n, 5).unwrap();
                    assert!(got == want, "{b:?}: {rows} rows in {n} parts");
                }
                let parts = Parts::cut(&b, &schema, &batches, 2).unwrap().unwrap();
                // a sample counts the array's rows (a plain writer holds them to the end)
                assert!(parts.sample(&b, &schema, 5).unwrap().0 > 0);
            }
        }
    }

    #[test]
    fn a_values_stream_is_cut_as_records_are() {
        let (_, batches) = table(100, 0, 30);
        let schema = Arc::new(Schema::new(vec![batches[0].schema().field(2).clone()]));
        let batches: Vec<RecordBatch> = batches
            .iter()
            .map(|b| RecordBatch::try_new(schema.clone(), vec![b.column(2).clone()]).unwrap())
            .collect();
        for aligned in [false, true] {
            let b = WriterBuilder::new()
                .with_layout(Layout::Values)
                .with_aligned(aligned);
            let (_, got) = in_parts(&b, &schema, &batches, 3, 7).unwrap();
            assert!(
                got == one_writer(&b, &schema, &batches),
                "aligned {aligned}"
            );
        }
    }

    #[test]
    fn a_columns_map_left_out_keys_or_too_few_rows_are_not_cut() {
        let (schema, batches) = table(40, 10, 40);
        let omit = WriterBuilder::new().with_missing(Missing::Omit);
        assert!(Parts::cut(&omit, &schema, &batches, 2).unwrap().is_none());
        // nested maps' left-out keys too (auto, from the schema read back)
        let (schema, batches) = table(40, 0, 40);
        let auto = WriterBuilder::new();
        assert!(Parts::cut(&auto, &schema, &batches, 2).unwrap().is_some());
        let md: std::collections::HashMap<String, String> =
            [(meta::MISSING_NESTED.to_string(), "absent".to_string())].into();
        let nested = Arc::new(schema.as_ref().clone().with_metadata(md));
        assert!(Parts::cut(&auto, &nested, &batches, 2).unwrap().is_none());
        let columns = WriterBuilder::new().with_layout(Layout::Columns);
        assert!(Parts::cut(&columns, &schema, &batches, 2)
            .unwrap()
            .is_none());
        let (schema, batches) = table(5, 0, 5);
        let b = WriterBuilder::new();
        assert!(Parts::cut(&b, &schema, &batches, 3).unwrap().is_none());
        assert!(Parts::cut(&b, &schema, &batches, 2).unwrap().is_some());
    }

    #[test]
    fn an_error_in_a_later_part_names_its_record_in_the_whole_table() {
        // rows 2 and 28 fail in the same step (parts of rows 0.., 13.., 26..): the first part's
        // error is the one a single writer meets
        for (bad_rows, first) in [(&[37][..], "record 37"), (&[2, 28][..], "record 2,")] {
            let (schema, batches) = table(40, 0, 40);
            let b = &batches[0];
            // a null inside the ndarray of each bad row: not writable (no numpy value for it)
            let emb = b
                .column(2)
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .unwrap();
            let vals: Float32Array = (0..120)
                .map(|i| (!bad_rows.contains(&(i / 3)) || i % 3 != 1).then_some(i as f32))
                .collect();
            let item = Arc::new(Field::new("item", DataType::Float32, true));
            let emb: ArrayRef = Arc::new(
                FixedSizeListArray::try_new(item, 3, Arc::new(vals), emb.nulls().cloned()).unwrap(),
            );
            let bad = RecordBatch::try_new(
                schema.clone(),
                vec![b.column(0).clone(), b.column(1).clone(), emb],
            )
            .unwrap();
            let w = WriterBuilder::new();
            let mut one = w.clone().build(Vec::new(), schema.clone()).unwrap();
            let want = one.write(&bad).unwrap_err().to_string();
            assert!(want.contains(first), "{want}");
            let parts = Parts::cut(&w, &schema, std::slice::from_ref(&bad), 3)
                .unwrap()
                .unwrap();
            let mut count = parts.counter(&w, &schema).unwrap();
            let got = loop {
                match count.step(5) {
                    Ok(true) => continue,
                    Ok(false) => panic!("counted without the error"),
                    Err(e) => break e.to_string(),
                }
            };
            assert_eq!(got, want);
        }
    }

    #[test]
    fn write_batches_of_a_big_tensor_stream_is_one_writers_bytes() {
        // 3,000 rows of float32[1024] in uneven batches: 12 MB, written in parts
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let vals = Float32Array::from_iter_values((0..3000 * 1024).map(|i| i as f32));
        let emb: ArrayRef =
            Arc::new(FixedSizeListArray::try_new(item, 1024, Arc::new(vals), None).unwrap());
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..3000));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("emb", emb.data_type().clone(), false),
        ]));
        let whole = RecordBatch::try_new(schema.clone(), vec![ids, emb]).unwrap();
        let batches: Vec<RecordBatch> = [(0, 7), (7, 1993), (2000, 1000)]
            .iter()
            .map(|&(at, n)| whole.slice(at, n))
            .collect();
        for layout in [Layout::Records, Layout::Values] {
            let (schema, batches) = if layout == Layout::Values {
                let s = Arc::new(Schema::new(vec![schema.field(1).clone()]));
                let bs: Vec<RecordBatch> = batches
                    .iter()
                    .map(|b| RecordBatch::try_new(s.clone(), vec![b.column(1).clone()]).unwrap())
                    .collect();
                (s, bs)
            } else {
                (schema.clone(), batches.clone())
            };
            let b = WriterBuilder::new().with_layout(layout);
            // on a pool of two threads whatever the machine's cores
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap();
            let at_once = pool.install(|| write_at_once(&batches, &schema, layout).unwrap());
            let got = at_once.expect("written in parts");
            assert!(got == one_writer(&b, &schema, &batches), "{layout:?}");
            assert!(got == crate::write::write_batches(&batches, layout).unwrap());
        }
        // scalar rows: left to one writer
        let (schema, batches) = table(400_000, 0, 100_000);
        assert!(write_at_once(&batches, &schema, Layout::Records)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_buffer_of_another_length_than_counted_is_an_error() {
        let (schema, batches) = table(40, 0, 40);
        let b = WriterBuilder::new();
        let parts = Parts::cut(&b, &schema, &batches, 2).unwrap().unwrap();
        let mut count = parts.counter(&b, &schema).unwrap();
        while count.step(100).unwrap() {}
        let parts = count.finish().unwrap().unwrap();
        let mut short = vec![0u8; parts.bytes().unwrap() - 1];
        assert!(parts.fill(&b, &schema, &mut short).is_err());
    }
}
