//! Decoding while the schema walk goes on, for a caller that keeps every batch
//! ([`ReaderBuilder::with_eager`]).
//!
//! Exact inference walks every row before the schema is known, and decoding used to start only
//! after it: the walk bounded the read on any number of cores. Here each batch is decoded (on the
//! thread pool) as soon as the walk is past it, with the schema inferred through its last row. A
//! batch is kept when the whole walk ends with the same fields and the batch starts where the
//! plan's does (a first top-level array is walked as the only object until something follows it,
//! and the plan is then made again): every batch of a file whose types are settled by its first
//! batch. Any other is decoded again with the final schema when it is asked for, so the output is
//! the same either way.
//!
//! The walk stays at most [`LEAD`] batches per thread ahead of the decoding, so the pages it has
//! mapped and not yet handed back are a few batches' worth: each batch's decoder drops its pages
//! when done, and a mapped file's pages are mapped once, not once by the walk and again by the
//! decoders.

use std::sync::{mpsc, Condvar, Mutex};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;

use super::array::Ctx;
use super::plan::{plan_with, Handoff, Plan, WalkedBatch};
use super::rows::{decode_rows, RowDecoder};
use super::source::release_pages;
use super::ReaderBuilder;
use crate::error::Result;

/// Batches decoded ahead, by index: `None` where the decoded one does not fit the final schema.
pub(crate) type Ahead = Vec<Mutex<Option<RecordBatch>>>;

/// Batches per decoding thread the walk may be past and not yet see decoded.
const LEAD: usize = 2;

/// Decoding jobs finished so far, counted when a job ends however it ends (a panic included, so
/// the walk never waits for a job that is gone).
struct Finished {
    count: Mutex<usize>,
    changed: Condvar,
}

struct Done<'a>(&'a Finished);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        if let Ok(mut n) = self.0.count.lock() {
            *n += 1;
        }
        self.0.changed.notify_all();
    }
}

/// The rows of batch `w`, which a walk has just gone past, decoded with its schema; a mapped
/// file's pages of it dropped after (`release`).
pub(crate) fn decode_walked(
    w: &WalkedBatch,
    data: &[u8],
    projection: Option<&[String]>,
    ctx: &Ctx,
    release: bool,
) -> Result<RecordBatch> {
    let batch = RowDecoder::new(w.layout, &w.schema, projection, ctx).and_then(|(mut dec, out)| {
        decode_rows(&mut dec, data, w.start, w.row0, w.rows, release, &out)
    });
    if release {
        release_pages(data, w.start, w.end);
    }
    batch
}

/// [`plan_with`], decoding every batch of rows the walk goes past.
pub(crate) fn plan_ahead(b: &ReaderBuilder, input: &Buffer) -> Result<(Plan, Ahead)> {
    let (ctx, data) = (b.decode_ctx(Some(input)), input.as_slice());
    let projection = b.projection.as_deref();
    let lead = LEAD * b.decode_threads();
    let finished = Finished {
        count: Mutex::new(0),
        changed: Condvar::new(),
    };
    let mut started = 0usize;
    let (tx, rx) = mpsc::channel();
    let plan = rayon::in_place_scope(|s| {
        let mut walked = |w: WalkedBatch| {
            // a batch longer than a read of its width takes (columns came after the walk cut
            // it): the read decodes those rows in batches of its own (Reader::from_plan)
            if w.rows > b.batch_rows(b.read_width(w.layout, w.schema.fields().len())) {
                if b.release_input {
                    release_pages(data, w.start, w.end);
                }
                return true;
            }
            if let Ok(mut n) = finished.count.lock() {
                while started >= *n + lead {
                    n = match finished.changed.wait(n) {
                        Ok(n) => n,
                        Err(_) => break,
                    };
                }
            }
            started += 1;
            let (tx, ctx, finished) = (tx.clone(), &ctx, &finished);
            s.spawn(move |_| {
                let _done = Done(finished);
                let batch = decode_walked(&w, data, projection, ctx, b.release_input);
                // an error is left for the decode that follows to find again, in its place
                let _ = tx.send((w.k, w.start, w.schema, batch.ok()));
            });
            true
        };
        plan_with(
            b,
            data,
            Some(Handoff {
                take: &mut walked,
                only_batch: false,
            }),
        )
    })?;
    drop(tx);
    let mut ahead: Ahead = (0..plan.batch_starts.len())
        .map(|_| Mutex::new(None))
        .collect();
    let fields = plan.schema.as_ref().map(|s| s.fields().clone());
    for (k, start, schema, batch) in rx {
        if let (Some(batch), Some(slot)) = (batch, ahead.get_mut(k)) {
            // the plan's batch (a walk made again starts its batches elsewhere), of its fields
            if plan.batch_starts[k] == start && fields.as_ref() == Some(schema.fields()) {
                *slot.get_mut().expect("not shared yet") = Some(batch);
            }
        }
    }
    Ok((plan, ahead))
}
