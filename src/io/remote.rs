//! Objects in S3, GCS, Azure and HTTP(S) stores, read as streams and written as multipart
//! uploads, through the `object_store` crate (feature `cloud`).
//!
//! A read is three ranged GETs (2 MiB, 4 MiB, the rest): each body flows into the decoder as it
//! arrives (a bounded queue of large chunks in between), so rows come before the transfer ends;
//! the next GET is made only once the reader is well into the current one, so a `head` moves a
//! few MiB, not what a network's buffers hold of a whole-object GET; dropping the reader ends the
//! transfer. object_store retries 5xx, timeouts and resets with backoff and resumes a body cut
//! short with a ranged GET guarded by the object's ETag; the later GETs carry the same guard, so
//! an object replaced mid-read is an error, never a mixed table. The I/O runs on a small runtime
//! of its own; decoding stays on the caller's threads (CPU work on the I/O threads is what stalls
//! bodies).

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, WriteMultipart};
use url::Url;

use super::StorageOptions;
use crate::error::{Error, ErrorKind, Result};

/// Bytes queued ahead of the decoder, in chunks of about this size.
const CHUNK: usize = 1 << 20;
/// Chunks queued ahead (so about `CHUNK * (AHEAD + 2)` bytes are in flight past the decoder:
/// what a `head` moves beyond its rows).
const AHEAD: usize = 4;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("msgpack-arrow-io")
            .enable_all()
            .build()
            .expect("an I/O runtime")
    })
}

/// Run a future on the I/O runtime and wait for it, from any thread (also one of another
/// runtime's, e.g. Polars' engine, where blocking in place is not allowed).
fn run<F: std::future::Future + Send>(f: F) -> F::Output
where
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| {
            s.spawn(|| runtime().block_on(f))
                .join()
                .expect("the I/O thread")
        })
    } else {
        runtime().block_on(f)
    }
}

/// The URL with user-info and query (signatures, tokens) left out: what errors show.
pub fn redact(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            if u.query().is_some() {
                u.set_query(Some("…"));
            }
            u.to_string()
        }
        Err(_) => url.split(['?', '@']).next().unwrap_or("").to_string(),
    }
}

fn usage(m: String) -> Error {
    Error::new(ErrorKind::Usage(m))
}

/// An object_store error as ours: a missing object is `NotFound` (Python's FileNotFoundError), a
/// refused one `PermissionDenied`; the message names the URL (redacted), never a secret.
fn store_error(url: &str, op: &str, e: object_store::Error) -> Error {
    use object_store::Error as E;
    let url = redact(url);
    let (kind, what) = match &e {
        E::NotFound { .. } => (io::ErrorKind::NotFound, "no such object".to_string()),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => (
            io::ErrorKind::PermissionDenied,
            format!("permission denied to {op} (check the credentials and the bucket's policy)"),
        ),
        E::Precondition { .. } => (
            io::ErrorKind::Other,
            "the object changed while it was read (its ETag no longer matches); read it again"
                .to_string(),
        ),
        _ => (
            io::ErrorKind::Other,
            format!("cannot {op}: {}", scrub(&e.to_string())),
        ),
    };
    Error::new(ErrorKind::Io(io::Error::new(kind, what))).in_file(std::path::Path::new(&url))
}

/// Drop anything that looks like a signed query string from a message.
fn scrub(m: &str) -> String {
    m.split_whitespace()
        .map(|w| match w.find("://") {
            Some(_) => redact(w.trim_end_matches([',', ')', '.'])),
            None => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn retry() -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: 10,
        retry_timeout: Duration::from_secs(180),
    }
}

/// A store builder with each option set, by `set` and the store's own key names; an unknown
/// key is an error naming it.
fn configure<B, K: std::str::FromStr>(
    mut b: B,
    opts: &StorageOptions,
    store: &str,
    examples: &str,
    set: impl Fn(B, K, String) -> B,
) -> Result<B> {
    for (k, v) in &opts.0 {
        let key = k.to_ascii_lowercase().parse::<K>().map_err(|_| {
            usage(format!(
                "unknown storage option {k:?} for {store} (object_store's configuration keys, \
                 e.g. {examples})"
            ))
        })?;
        b = set(b, key, v.clone());
    }
    Ok(b)
}

const S3_KEYS: &str =
    "endpoint_url, aws_access_key_id, aws_secret_access_key, aws_region, allow_http";
const GCS_KEYS: &str =
    "google_service_account, google_service_account_key, google_application_credentials";
const HTTP_KEYS: &str = "allow_http, timeout, connect_timeout, user_agent";
const AZURE_KEYS: &str =
    "azure_storage_account_name, azure_storage_account_key, azure_endpoint, azure_use_azure_cli";

/// The store and the object path a URL names. Options are object_store's configuration keys (as
/// Polars' `storage_options` take them); the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`) fills
/// in the rest. An `http://` endpoint allows plain HTTP without more.
pub fn store(url: &str, opts: &StorageOptions) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
    let parsed = Url::parse(url).map_err(|e| usage(format!("{}: not a URL: {e}", redact(url))))?;
    let scheme = parsed.scheme().to_ascii_lowercase();
    let path = ObjectPath::from_url_path(parsed.path())
        .map_err(|e| usage(format!("{}: bad object path: {e}", redact(url))))?;
    let http_endpoint = opts
        .0
        .iter()
        .any(|(k, v)| k.to_ascii_lowercase().contains("endpoint") && v.starts_with("http://"));
    let err = |e: object_store::Error| store_error(url, "open", e);
    let store: Arc<dyn ObjectStore> = match scheme.as_str() {
        "s3" | "s3a" => {
            use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
            let mut b = AmazonS3Builder::from_env()
                .with_url(url.replacen("s3a://", "s3://", 1))
                .with_retry(retry());
            if http_endpoint {
                b = b.with_allow_http(true);
            }
            b = configure(b, opts, "S3", S3_KEYS, |b, k: AmazonS3ConfigKey, v| {
                b.with_config(k, v)
            })?;
            Arc::new(b.build().map_err(err)?)
        }
        "gs" | "gcs" => {
            use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_url(url.replacen("gcs://", "gs://", 1))
                .with_retry(retry());
            b = configure(b, opts, "GCS", GCS_KEYS, |b, k: GoogleConfigKey, v| {
                b.with_config(k, v)
            })?;
            Arc::new(b.build().map_err(err)?)
        }
        "az" | "azure" | "abfs" | "abfss" | "adl" => {
            use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_retry(retry());
            if http_endpoint {
                b = b.with_allow_http(true);
            }
            b = configure(b, opts, "Azure", AZURE_KEYS, |b, k: AzureConfigKey, v| {
                b.with_config(k, v)
            })?;
            Arc::new(b.build().map_err(err)?)
        }
        "http" | "https" => {
            use object_store::http::HttpBuilder;
            use object_store::ClientConfigKey;
            let origin = &parsed[..url::Position::BeforePath];
            // an http:// URL is the user's explicit choice of plain HTTP
            let mut b = HttpBuilder::new()
                .with_url(origin)
                .with_retry(retry())
                .with_config(ClientConfigKey::AllowHttp, (scheme == "http").to_string());
            b = configure(b, opts, "HTTP", HTTP_KEYS, |b, k: ClientConfigKey, v| {
                b.with_config(k, v)
            })?;
            Arc::new(b.build().map_err(err)?)
        }
        other => {
            return Err(usage(format!(
                "{}: unsupported URL scheme {other:?} (s3, gs, az, abfs, http, https)",
                redact(url)
            )))
        }
    };
    Ok((store, path))
}

/// A remote object as a `Read`: ranged GETs ([`open`]), filled by the I/O runtime into a bounded
/// queue. Dropping it ends the transfer.
pub struct RemoteReader {
    rx: Receiver<std::result::Result<Bytes, Error>>,
    cur: Bytes,
    progress: Arc<Progress>,
    /// the object's size, from the response
    pub size: u64,
}

/// How far the reader has got, so the next window is asked for only when it is about to be
/// needed: a `head` moves the first window or two, not what the network buffers of a whole-object
/// GET hold (several MiB per connection, whatever the reader takes).
struct Progress {
    /// bytes handed to the reader's caller
    taken: AtomicU64,
    gone: AtomicBool,
    wake: tokio::sync::Notify,
}

impl Progress {
    /// Wait until the reader has taken `upto` bytes; `false` if it is gone.
    async fn reached(&self, upto: u64) -> bool {
        loop {
            let woken = self.wake.notified();
            if self.gone.load(Ordering::Acquire) {
                return false;
            }
            if self.taken.load(Ordering::Acquire) >= upto {
                return true;
            }
            woken.await;
        }
    }
}

/// The first window asked for; the next is twice as long, and the one after it the rest.
const FIRST_WINDOW: u64 = 2 << 20;
/// What a `head` or the schema inference of a stream reads at most, give or take: the inference
/// bytes and a record.
const HEAD_BYTES: u64 = crate::read::DEFAULT_STREAM_INFER_BYTES as u64 + (1 << 20);

/// Open an object for reading as it arrives.
///
/// The object comes in ranged GETs of 2 MiB, 4 MiB and the rest, the later ones guarded by the
/// first one's ETag (an object replaced between them is an error, never a mixed table); each is
/// made while the one before still flows, once the reader is halfway into it and past what a
/// `head` reads. A server that does not answer ranges (or an empty object) is read in one plain
/// GET.
pub fn open(url: &str, opts: &StorageOptions) -> Result<RemoteReader> {
    let (store, path) = store(url, opts)?;
    let (tx, rx) = sync_channel::<std::result::Result<Bytes, Error>>(AHEAD);
    let (meta_tx, meta_rx) = sync_channel::<Result<u64>>(1);
    let progress = Arc::new(Progress {
        taken: AtomicU64::new(0),
        gone: AtomicBool::new(false),
        wake: tokio::sync::Notify::new(),
    });
    let url_owned = url.to_string();
    let prog = progress.clone();
    runtime().spawn(async move {
        let url = url_owned;
        let first = GetOptions {
            range: Some((0..FIRST_WINDOW).into()),
            ..GetOptions::default()
        };
        let got = match store.get_opts(&path, first).await {
            Ok(g) => Ok(g),
            Err(
                e @ (object_store::Error::NotFound { .. }
                | object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }),
            ) => Err(e),
            // no ranges (a 200 for the whole object) or nothing to range over (a 416 for an
            // empty one): one plain GET
            Err(_) => store.get_opts(&path, GetOptions::default()).await,
        };
        let got = match got {
            Ok(g) => g,
            Err(e) => {
                let _ = meta_tx.send(Err(store_error(&url, "read", e)));
                return;
            }
        };
        let size = got.meta.size;
        let _ = meta_tx.send(Ok(size));
        let etag = got.meta.e_tag.clone();
        // without an ETag, the modification time guards the later windows
        let guard = GetOptions {
            if_match: etag.clone(),
            if_unmodified_since: etag.is_none().then_some(got.meta.last_modified),
            ..GetOptions::default()
        };
        let mut window = got.range.clone();
        let mut body = got.into_stream();
        loop {
            // 2 MiB, then 4 MiB, then the rest in one stream
            let next = (window.end < size).then(|| match window.end < HEAD_BYTES {
                true => window.end..(window.end + 2 * (window.end - window.start)).min(size),
                false => window.end..size,
            });
            // the next window is asked for while this one still flows, once the reader is halfway
            // into it (no stall between windows), but not before the reader is past what a
            // `head` or a stream's schema inference takes: those pull the first windows only
            let upto =
                (window.start + (window.end - window.start) / 2).max(window.end.min(HEAD_BYTES));
            let (pumped, asked) = {
                let ask = async {
                    match &next {
                        Some(w) if prog.reached(upto).await => {
                            Some(get_window(&*store, &path, &url, w, &guard, size).await)
                        }
                        _ => None,
                    }
                };
                futures::pin_mut!(ask);
                let pumped = pump(body, &tx);
                futures::pin_mut!(pumped);
                match futures::future::select(pumped, ask).await {
                    Either::Left((p, ask)) => match p {
                        Ok(true) => (p, ask.await),
                        _ => (p, None),
                    },
                    Either::Right((a, pumped)) => (pumped.await, a),
                }
            };
            match pumped {
                Ok(true) => {}
                Ok(false) => return, // the reader is gone
                Err(e) => {
                    let _ = send(&tx, Err(body_error(&*store, &path, &url, &etag, e).await)).await;
                    return;
                }
            }
            match asked {
                None => return, // the end, or the reader is gone
                Some(Ok(b)) => body = b,
                Some(Err(e)) => {
                    let _ = send(&tx, Err(e)).await;
                    return;
                }
            }
            window = next.expect("asked for");
        }
    });
    let size = meta_rx
        .recv()
        .map_err(|_| usage(format!("{}: the I/O task ended", redact(url))))??;
    Ok(RemoteReader {
        rx,
        cur: Bytes::new(),
        progress,
        size,
    })
}

/// One later window's body, under `guard` (the first answer's ETag or modification time), of an
/// object of the same size.
async fn get_window(
    store: &dyn ObjectStore,
    path: &ObjectPath,
    url: &str,
    window: &std::ops::Range<u64>,
    guard: &GetOptions,
    size: u64,
) -> Result<futures::stream::BoxStream<'static, object_store::Result<Bytes>>> {
    let opts = GetOptions {
        range: Some(window.clone().into()),
        ..guard.clone()
    };
    match store.get_opts(path, opts).await {
        Ok(g) if g.meta.size != size => Err(changed(url, path, "the size changed")),
        Ok(g) => Ok(g.into_stream()),
        Err(e) => Err(store_error(url, "read", e)),
    }
}

/// A body that failed after object_store's own retries and resumes, said plainly when the object
/// was replaced meanwhile.
async fn body_error(
    store: &dyn ObjectStore,
    path: &ObjectPath,
    url: &str,
    etag: &Option<String>,
    e: object_store::Error,
) -> Error {
    let changed = match (etag, store.head(path).await) {
        (Some(a), Ok(m)) => m.e_tag.as_ref() != Some(a),
        _ => false,
    };
    if changed {
        return self::changed(url, path, "ETag changed");
    }
    store_error(url, "read", e)
}

/// The object at `path` was replaced while it was read.
fn changed(url: &str, path: &ObjectPath, why: &'static str) -> Error {
    let e = object_store::Error::Precondition {
        path: path.to_string(),
        source: why.into(),
    };
    store_error(url, "read", e)
}

/// Move a body into the queue in chunks of about [`CHUNK`] bytes. `Ok(false)` once the reader is
/// gone; the body's error if it fails (after object_store's own retries and resumes).
async fn pump(
    mut body: futures::stream::BoxStream<'static, object_store::Result<Bytes>>,
    tx: &SyncSender<std::result::Result<Bytes, Error>>,
) -> std::result::Result<bool, object_store::Error> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        match body.next().await {
            Some(Ok(b)) => {
                if buf.is_empty() && b.len() >= CHUNK {
                    if !send(tx, Ok(b)).await {
                        return Ok(false);
                    }
                    continue;
                }
                buf.extend_from_slice(&b);
                if buf.len() >= CHUNK && !send(tx, Ok(Bytes::from(std::mem::take(&mut buf)))).await
                {
                    return Ok(false);
                }
            }
            Some(Err(e)) => return Err(e),
            None => {
                return Ok(buf.is_empty() || send(tx, Ok(Bytes::from(buf))).await);
            }
        }
    }
}

/// Queue a chunk without blocking an I/O thread; `false` once the reader is gone.
async fn send(
    tx: &SyncSender<std::result::Result<Bytes, Error>>,
    item: std::result::Result<Bytes, Error>,
) -> bool {
    let tx = tx.clone();
    tokio::task::spawn_blocking(move || tx.send(item).is_ok())
        .await
        .unwrap_or(false)
}

impl Read for RemoteReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.cur.is_empty() {
            match self.rx.recv() {
                Ok(Ok(b)) => self.cur = b,
                Ok(Err(e)) => return Err(io::Error::other(e)),
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len());
        out[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        self.progress.taken.fetch_add(n as u64, Ordering::AcqRel);
        self.progress.wake.notify_one();
        Ok(n)
    }
}

impl Drop for RemoteReader {
    fn drop(&mut self) {
        self.progress.gone.store(true, Ordering::Release);
        self.progress.wake.notify_one();
    }
}

/// The objects a URL glob matches (`*`, `?`, `[...]`, `**`), by listing its fixed prefix, sorted
/// as local globs are; a URL without glob characters is itself.
pub fn expand(url: &str, opts: &StorageOptions) -> Result<Vec<String>> {
    let Some(star) = url.find(['*', '?', '[']) else {
        return Ok(vec![url.to_string()]);
    };
    let base_end = url[..star].rfind('/').map_or(0, |i| i + 1);
    let (base, pattern) = (&url[..base_end], &url[base_end..]);
    let (store, prefix) = store(base, opts)?;
    let pat = glob::Pattern::new(pattern)
        .map_err(|e| usage(format!("{}: bad glob: {e}", redact(url))))?;
    let listed: Vec<object_store::ObjectMeta> = run(async {
        let p = (!prefix.as_ref().is_empty()).then_some(&prefix);
        store
            .list(p)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<object_store::Result<Vec<_>>>()
    })
    .map_err(|e| store_error(base, "list", e))?;
    let strip = prefix.as_ref().len() + usize::from(!prefix.as_ref().is_empty());
    let opts_glob = glob::MatchOptions {
        require_literal_separator: !pattern.contains("**"),
        ..Default::default()
    };
    let mut out: Vec<String> = listed
        .iter()
        .map(|m| m.location.as_ref().get(strip..).unwrap_or("").to_string())
        .filter(|rel| pat.matches_with(rel, opts_glob))
        .map(|rel| format!("{base}{rel}"))
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(Error::new(ErrorKind::Io(io::Error::new(
            io::ErrorKind::NotFound,
            "no object matches",
        )))
        .in_file(std::path::Path::new(&redact(url))));
    }
    Ok(out)
}

/// A remote object being written: a multipart upload fed as the writer goes (bounded memory),
/// completed by [`RemoteWriter::commit`] only. Dropped without it, the upload is aborted: the
/// previous object stays as it was and no parts are left behind.
pub struct RemoteWriter {
    url: String,
    up: Option<WriteMultipart>,
    buf: Vec<u8>,
    /// Bytes written so far (the position a writer asking `stream_position` is told).
    written: u64,
}

/// Parts are uploaded in pieces of this size (S3's minimum is 5 MiB).
const PART: usize = 8 << 20;

/// Start writing an object.
pub fn create(url: &str, opts: &StorageOptions) -> Result<RemoteWriter> {
    let (store, path) = store(url, opts)?;
    let up = run(store.put_multipart(&path)).map_err(|e| store_error(url, "write", e))?;
    Ok(RemoteWriter {
        url: url.to_string(),
        up: Some(WriteMultipart::new_with_chunk_size(up, PART)),
        buf: Vec::new(),
        written: 0,
    })
}

impl RemoteWriter {
    fn flush_parts(&mut self) -> io::Result<()> {
        let up = self.up.as_mut().expect("not committed");
        let url = &self.url;
        // the buffer itself becomes the part (no copy); `write` allocates the next one
        let part = Bytes::from(std::mem::take(&mut self.buf));
        run(async {
            up.wait_for_capacity(2).await?;
            up.put(part);
            Ok::<_, object_store::Error>(())
        })
        .map_err(|e| io::Error::other(store_error(url, "write", e)))
    }

    /// Complete the upload: the object appears, whole.
    pub fn commit(mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.flush_parts()?;
        }
        let up = self.up.take().expect("not committed");
        run(up.finish()).map_err(|e| store_error(&self.url, "write", e))?;
        Ok(())
    }
}

impl Write for RemoteWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.written += data.len() as u64;
        if self.buf.is_empty() {
            self.buf.reserve(PART);
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PART {
            self.flush_parts()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An upload is written in order: a writer may ask where it is (a seek to where it already is),
/// not go back. Formats whose writers go back (NPZ) are staged in a local file first.
impl io::Seek for RemoteWriter {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        crate::io::atomic::seek_in_order(self.written, pos, || {
            format!(
                "{}: a remote object is written in order, without seeking",
                redact(&self.url)
            )
        })
    }
}

impl Drop for RemoteWriter {
    fn drop(&mut self) {
        if let Some(up) = self.up.take() {
            let _ = run(up.abort());
        }
    }
}
