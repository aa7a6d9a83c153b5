//! A read whose schema is given (a scan's files after the first), batches handed out as the
//! caller takes them: the rows are walked on a thread of their own, each batch decoded on the
//! pool as soon as the walk is past it, the walk at most a few batches ahead of the caller.
//!
//! Why: without it such a read walks the whole input first, dropping a mapped file's pages
//! behind it (so a big file never stays resident), then decodes, mapping every page again:
//! `scan_msgpack(T).collect()` took 80 ms against 54 for `read_msgpack(T)`, which decodes during
//! its walk but keeps every batch. Here each page is mapped once and memory stays a few batches.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;

use super::ahead::decode_walked;
use super::plan::{plan_with, Handoff, WalkedBatch};
use super::rows::Limit;
use super::ReaderBuilder;
use crate::error::{Error, Result};
use crate::types::arrow::record_batch;

/// Bytes of input the walk may have handed on and the caller not taken yet, at most (whatever
/// the thread count): they are resident until decoded. At least one batch is always allowed.
const MAX_LEAD_BYTES: usize = 48 << 20;

enum Msg {
    /// batch `k`, the byte after its last row, the batch or its error
    Batch(usize, usize, Result<RecordBatch>),
    /// the walk is over (its error, if any, comes after every batch before it)
    End(Result<()>),
}

/// What the caller and the walk share: how many batches were taken, and whether the caller left.
struct Shared {
    taken: Mutex<usize>,
    changed: Condvar,
    gone: AtomicBool,
}

/// Batches of a read walked on a thread of its own ([`Piped::start`]), in order.
pub(crate) struct Piped {
    rx: Receiver<Msg>,
    /// decoded batches not handed out yet, by index, with where they end
    pending: BTreeMap<usize, (usize, Result<RecordBatch>)>,
    next: usize,
    /// the walk ended: `Some(None)` well, `Some(Some(e))` with `e` (given once)
    end: Option<Option<Error>>,
    shared: Arc<Shared>,
    schema: SchemaRef,
    limit: Limit,
}

impl Piped {
    /// Walk `buf` with `b` (whose schema is given) on a new thread, decoding each batch on the
    /// pool as the walk passes it; batches come out as `schema` (the read's projected one).
    pub(crate) fn start(b: ReaderBuilder, buf: Buffer, schema: SchemaRef) -> Result<Piped> {
        let (tx, rx) = channel();
        let shared = Arc::new(Shared {
            taken: Mutex::new(0),
            changed: Condvar::new(),
            gone: AtomicBool::new(false),
        });
        let limit = Limit::new(b.max_decoded_bytes);
        let walk = shared.clone();
        std::thread::Builder::new()
            .name("msgpack-arrow-walk".into())
            .spawn(move || {
                let data = buf.as_slice();
                let ctx = b.decode_ctx(None);
                let projection = b.projection.as_deref();
                // the walk is a thread of its own: one decoding thread fewer keeps the cores busy
                let lead = (b.decode_threads() - 1)
                    .min(MAX_LEAD_BYTES / b.batch_bytes.max(1))
                    .max(1);
                // a file mapping, or memory this read holds alone: each batch is decoded once
                let release = b.release_input || b.release_decoded;
                let mut started = 0usize;
                let walked = rayon::in_place_scope(|s| {
                    // `false` once the caller is gone: the walk stops there
                    let mut walked = |w: WalkedBatch| -> bool {
                        if let Ok(mut taken) = walk.taken.lock() {
                            while started >= *taken + lead && !walk.gone.load(Ordering::Acquire) {
                                taken = match walk.changed.wait(taken) {
                                    Ok(t) => t,
                                    Err(_) => return false,
                                };
                            }
                        }
                        if walk.gone.load(Ordering::Acquire) {
                            return false;
                        }
                        started += 1;
                        let (tx, ctx) = (tx.clone(), &ctx);
                        s.spawn(move |_| {
                            // a panic is this batch's error, not a batch the caller waits for
                            let batch =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    decode_walked(&w, data, projection, ctx, release)
                                }))
                                .unwrap_or_else(|p| Err(panicked(p)));
                            let _ = tx.send(Msg::Batch(w.k, w.end, batch));
                        });
                        true
                    };
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        plan_with(
                            &b,
                            data,
                            Some(Handoff {
                                take: &mut walked,
                                only_batch: true,
                            }),
                        )
                    }))
                    .unwrap_or_else(|p| Err(panicked(p)))
                });
                let _ = tx.send(Msg::End(walked.map(drop)));
            })
            .map_err(Error::from)?;
        Ok(Piped {
            rx,
            pending: BTreeMap::new(),
            next: 0,
            end: None,
            shared,
            schema,
            limit,
        })
    }

    /// The next batch in order, `None` at the end; the walk's error after the batches before it.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some((end, r)) = self.pending.remove(&self.next) {
                self.next += 1;
                if let Ok(mut taken) = self.shared.taken.lock() {
                    *taken = self.next;
                }
                self.shared.changed.notify_all();
                let b = r?;
                // its fields are the read's; the schema's metadata is the read's too
                let b = record_batch(&self.schema, b.columns().to_vec(), b.num_rows())?;
                self.limit.add(&b, end as u64)?;
                return Ok(Some(b));
            }
            if let Some(end) = &mut self.end {
                return match end.take() {
                    Some(e) => Err(e),
                    None => Ok(None),
                };
            }
            match self.receive() {
                Ok(Msg::Batch(k, end, r)) => {
                    self.pending.insert(k, (end, r));
                }
                Ok(Msg::End(r)) => self.end = Some(r.err()),
                Err(_) => {
                    return Err(Error::from(std::io::Error::other(
                        "the thread walking the input ended",
                    )))
                }
            }
        }
    }

    /// The next message. On a worker of the thread pool (a caller iterating inside a parallel
    /// job), the pool's other jobs are run while waiting: the batches are decoded there.
    fn receive(&self) -> std::result::Result<Msg, std::sync::mpsc::RecvError> {
        if rayon::current_thread_index().is_none() {
            return self.rx.recv();
        }
        loop {
            match self.rx.try_recv() {
                Ok(m) => return Ok(m),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    return Err(std::sync::mpsc::RecvError)
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::thread::yield_now();
                    }
                }
            }
        }
    }
}

/// A panic's message as the error of what panicked.
fn panicked(p: Box<dyn std::any::Any + Send>) -> Error {
    let what = crate::error::panic_message(&*p);
    Error::from(std::io::Error::other(format!(
        "decoding failed unexpectedly: {what}"
    )))
}

impl Drop for Piped {
    fn drop(&mut self) {
        // the walk stops at its next batch; under the lock, so a walk about to wait sees it
        let _taken = self.shared.taken.lock();
        self.shared.gone.store(true, Ordering::Release);
        self.shared.changed.notify_all();
    }
}
