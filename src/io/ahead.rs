//! Decompression on a thread of its own, a few chunks ahead of the decode: with two cores or more
//! the decode no longer waits for the decompressor, nor the decompressor for the decode. For
//! files only: a pipe's reader would wait for a whole chunk before handing on the first rows of a
//! live stream, and a Python buffer must be released on a Python thread.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Bytes per chunk handed over.
const CHUNK: usize = 1 << 20;
/// Chunks the thread may be ahead.
const AHEAD: usize = 4;

/// What the thread hands over: a chunk and how much of it is filled (0: the end), or the error
/// that stopped it.
type Msg = io::Result<(Vec<u8>, usize)>;

/// A `Read` whose source is read on another thread, [`CHUNK`] bytes at a time.
pub(crate) struct ReadAhead {
    rx: Receiver<Msg>,
    /// emptied chunks go back to the thread: a new 1 MiB buffer per chunk is fresh pages
    back: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    filled: usize,
    at: usize,
    done: bool,
}

impl ReadAhead {
    pub(crate) fn new(mut src: Box<dyn Read + Send>) -> io::Result<Self> {
        let (tx, rx) = sync_channel::<Msg>(AHEAD);
        let (back, back_rx) = sync_channel::<Vec<u8>>(AHEAD + 2);
        std::thread::Builder::new()
            .name("msgpack-arrow-read-ahead".into())
            .spawn(move || loop {
                let mut buf = back_rx.try_recv().unwrap_or_else(|_| vec![0; CHUNK]);
                let (n, err) = fill(&mut src, &mut buf);
                // the bytes before an error are handed on first; then the error, or the end
                let last = match (n, err) {
                    (0, None) => Some(Ok((Vec::new(), 0))),
                    (_, Some(e)) => Some(Err(e)),
                    _ => None,
                };
                // a send fails when the reader is gone (dropped early): stop
                if n > 0 && tx.send(Ok((buf, n))).is_err() {
                    return;
                }
                if let Some(m) = last {
                    let _ = tx.send(m);
                    return;
                }
            })?;
        Ok(ReadAhead {
            rx,
            back,
            cur: Vec::new(),
            filled: 0,
            at: 0,
            done: false,
        })
    }
}

/// Read until `buf` is full or the source ends; the bytes read, and the error that stopped the
/// read early.
fn fill(src: &mut dyn Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.filled {
            if self.done || out.is_empty() {
                return Ok(0);
            }
            let (buf, n) = match self.rx.recv() {
                Ok(m) => m?,
                // the thread ends only after sending the end or an error: this is neither
                Err(_) => {
                    return Err(io::Error::other(
                        "the decompression thread stopped before the end of the input",
                    ))
                }
            };
            let old = std::mem::replace(&mut self.cur, buf);
            if !old.is_empty() {
                let _ = self.back.try_send(old);
            }
            (self.filled, self.at) = (n, 0);
            if n == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let k = out.len().min(self.filled - self.at);
        out[..k].copy_from_slice(&self.cur[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out `data` a few bytes at a time, then fails if asked to.
    struct Dribble {
        data: Vec<u8>,
        at: usize,
        fail_at_end: bool,
    }
    impl Read for Dribble {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.at == self.data.len() && self.fail_at_end {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "bad frame"));
            }
            let k = out.len().min(7).min(self.data.len() - self.at);
            out[..k].copy_from_slice(&self.data[self.at..self.at + k]);
            self.at += k;
            Ok(k)
        }
    }

    #[test]
    fn hands_on_every_byte_in_order_then_the_end_or_the_error() {
        let data: Vec<u8> = (0..3 * CHUNK + 12_345)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        for fail_at_end in [false, true] {
            let src = Dribble {
                data: data.clone(),
                at: 0,
                fail_at_end,
            };
            let mut r = ReadAhead::new(Box::new(src)).unwrap();
            let mut got = Vec::new();
            let mut piece = vec![0; 100_003];
            let end = loop {
                match r.read(&mut piece) {
                    Ok(0) => break Ok(()),
                    Ok(k) => got.extend_from_slice(&piece[..k]),
                    Err(e) => break Err(e),
                }
            };
            assert!(
                got == data,
                "{} bytes of {} handed on, or not in order",
                got.len(),
                data.len()
            );
            match (fail_at_end, end) {
                (false, Ok(())) => assert_eq!(r.read(&mut piece).unwrap(), 0),
                (true, Err(e)) => assert_eq!(e.to_string(), "bad frame"),
                (f, e) => panic!("fail_at_end {f}: {e:?}"),
            }
        }
    }

    #[test]
    fn a_reader_dropped_early_stops_the_thread() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        struct Endless(Arc<AtomicBool>);
        impl Read for Endless {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                out.fill(1);
                Ok(out.len())
            }
        }
        impl Drop for Endless {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let mut r = ReadAhead::new(Box::new(Endless(dropped.clone()))).unwrap();
        let mut b = [0; 10];
        r.read_exact(&mut b).unwrap();
        drop(r);
        // the thread's next send fails: it returns, dropping its source
        let t = std::time::Instant::now();
        while !dropped.load(Ordering::SeqCst) {
            assert!(
                t.elapsed().as_secs() < 30,
                "the read-ahead thread still runs"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
