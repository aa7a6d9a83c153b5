//! Files in and out: compressed inputs, atomic outputs, and the Arrow-side formats (Parquet,
//! Feather / Arrow IPC, NPZ). [`open_table`] opens any supported input as a stream of record
//! batches; the CLI and the Python package both go through it.

mod ahead;
pub mod atomic;
pub mod compress;
pub mod convert;
pub mod dataset;
mod foreign;
pub mod index;
pub mod ipc;
mod lz4_frames;
pub mod npz;
pub mod parquet;
#[cfg(feature = "cloud")]
pub mod remote;
pub mod sink;
pub mod unify;

#[cfg(test)]
mod python_tests;

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::{Error, ErrorKind, Result};
use crate::options::Layout;
use crate::read::RowWindow;
use crate::types::meta;
use crate::ReaderBuilder;

pub use atomic::{AtomicFile, Output};
pub use compress::{expand_inputs, open_input, Input};

impl crate::ReaderBuilder {
    /// Read a file: memory-mapped when plain; compressed data (`.zst`, `.lz4`, `.gz`, zlib, by
    /// name or by magic bytes) is decompressed on the fly; `-` is standard input.
    pub fn build_from_path(self, path: impl AsRef<Path>) -> Result<crate::Reader> {
        let path = path.as_ref();
        // the caller knows the path: errors name it only where opening it failed
        self.build_from_input_of(open_input(path)?, path)
    }

    /// [`ReaderBuilder::build_from_input`] for an input opened from `path`: a read that starts
    /// further in ([`ReaderBuilder::with_skip_rows`]) of a plain file with a record index
    /// ([`index`]) goes straight to its first row.
    pub fn build_from_input_of(self, input: Input, path: &Path) -> Result<crate::Reader> {
        let bytes = match &input {
            Input::Mmap(m) => Some(&m[..]),
            Input::Buffer(b) => Some(b.as_slice()),
            Input::Stream(_) => None,
        };
        if let (Some(data), true) = (bytes, self.skip_rows() > 0) {
            if let Some(offsets) = index::load(path, data.len() as u64)? {
                if let Some(layout) = index::indexed_layout(&self, data, &offsets) {
                    index::check_not_stale(path, data, &offsets, self.max_depth())?;
                    let (buf, mapped) = match input {
                        Input::Mmap(m) => (crate::read::source::mmap_buffer(m), true),
                        Input::Buffer(b) => (b, false),
                        Input::Stream(_) => unreachable!("matched above"),
                    };
                    let index = index::sidecar(path);
                    return self.build_indexed(buf, mapped, &offsets, &index, layout);
                }
            }
        }
        // a compressed file can be read twice: once for the types of every row, once to decode;
        // a remote object is fetched once (held, or typed from its first rows)
        let local_file = !compress::is_stdio(path)
            && !is_url(path)
            && std::fs::metadata(path).is_ok_and(|m| m.is_file());
        if local_file {
            return self.build_from_reopenable(input, || open_input(path));
        }
        if is_url(path) {
            return self.build_from_held(input);
        }
        self.build_from_input(input)
    }

    /// Read an opened [`Input`] that `reopen` opens again from its start. A stream of rows
    /// (compressed data) is typed from every row, as the same bytes uncompressed are: up to
    /// [`ReaderBuilder::with_hold_decompressed`] decompressed bytes are held in memory and read
    /// as bytes (one decompression, decoded in parallel); a larger stream is walked whole first,
    /// for the types, then decompressed again and decoded batch by batch. Reads that ask for no
    /// more than the first rows (`infer_rows`, `n_rows`, a given schema) stay one pass over the
    /// stream.
    pub fn build_from_reopenable(
        self,
        input: Input,
        reopen: impl FnOnce() -> Result<Input>,
    ) -> Result<crate::Reader> {
        self.hold_or(input, |b, walked| b.first_pass_then(walked, reopen))
    }

    /// Read an opened [`Input`] that is not opened again (a remote object, fetched once): a
    /// stream of rows up to [`ReaderBuilder::with_hold_decompressed`] bytes is held in memory and
    /// read as bytes, typed from every row; a larger one is read batch by batch, typed from its
    /// first rows (`infer_rows`, default 1,000 or 4 MiB).
    pub fn build_from_held(self, input: Input) -> Result<crate::Reader> {
        self.hold_or(input, |b, rest| b.build(rest))
    }

    /// Hold a stream of rows in memory and read it as bytes; where it is bigger than the bound
    /// (or the bound cannot be reserved), hand the stream, from its start, to `too_big`.
    fn hold_or(
        self,
        input: Input,
        too_big: impl FnOnce(Self, Box<dyn Read + Send>) -> Result<crate::Reader>,
    ) -> Result<crate::Reader> {
        let Input::Stream(mut r) = input else {
            return self.build_from_input(input);
        };
        if !self.wants_every_row() {
            return self.build(r);
        }
        let most = self.hold_decompressed();
        let Some((mut head, failed)) = read_held(&mut r, most) else {
            return too_big(self, r);
        };
        match failed {
            None if head.len() <= most => {
                head.shrink_to_fit();
                // rows copied out free the held bytes behind them: the peak is not input + table
                self.build_from_owned_bytes(head)
            }
            // too big to hold (or no room after all): what was read, then the rest
            None => too_big(self, Box::new(HeadThen::new(head, r))),
            Some(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
                too_big(self, Box::new(HeadThen::new(head, r)))
            }
            Some(e) => {
                // the rows before a decompression error (a cut .gz), then the error, as a
                // stream read gives them; typed from those rows
                let held = arrow_buffer::Buffer::from_vec(head);
                // every row may be held whole (a bad checksum, a cut trailer), but the read fails:
                // the rows are not known
                let this = self
                    .with_first_pass(Box::new(compress::buffer_reader(held.clone())))?
                    .without_row_count();
                let failing = compress::buffer_reader(held).chain(FailWith(Some(e)));
                this.build(failing)
            }
        }
    }

    /// Type the rows of `walked` by a first pass (where rows are skipped, from the first rows
    /// only, as any stream), then read the input `reopen` opens.
    fn first_pass_then(
        self,
        walked: Box<dyn Read + Send>,
        reopen: impl FnOnce() -> Result<Input>,
    ) -> Result<crate::Reader> {
        let this = self.with_first_pass(walked)?;
        match reopen()? {
            Input::Stream(r) => this.build(r),
            other => this.build_from_input(other),
        }
    }

    /// Read `file` from byte `offset` on (a file object's rest, error offsets counting from
    /// there): mapped as a path is, pages dropped behind the decoder; compressed bytes there are
    /// decompressed, as a path's are.
    pub fn build_from_file_at(self, file: &std::fs::File, offset: usize) -> Result<crate::Reader> {
        // SAFETY: read-only; a file changed while mapped is the caveat of every mapped read
        // (`compress::open_input`)
        let map = unsafe { memmap2::Mmap::map(file) }?;
        let offset = offset.min(map.len());
        let head = &map[offset..map.len().min(offset + crate::wire::sniff::SNIFF_LEN)];
        if compress::Codec::from_magic(head).is_none() {
            return self.build_from_mmap_at(map, offset);
        }
        let buf = crate::read::source::mmap_buffer(map).slice(offset);
        let open = || compress::open_buffer(buf.clone());
        self.build_from_reopenable(open()?, open)
    }

    /// Read bytes the caller gives up (what [`decompress_whole`] gave): as a held compressed
    /// file's, rows decoded free the pages behind them, so the peak is not input + table.
    pub fn build_from_owned_bytes(self, bytes: Vec<u8>) -> Result<crate::Reader> {
        self.releasing_decoded()
            .with_eager(false)
            .build_from_buffer(arrow_buffer::Buffer::from_vec(bytes))
    }

    /// Read an opened [`Input`].
    pub fn build_from_input(self, input: Input) -> Result<crate::Reader> {
        match input {
            Input::Mmap(m) => self.build_from_mmap(m),
            Input::Stream(r) => self.build(r),
            Input::Buffer(b) => self.build_from_buffer(b),
        }
    }
}

/// The decompressed bytes of the compressed file at `path` where they come to at most `most`
/// bytes; `None` for a plain file (it is mapped), a larger stream, or one whose decompression
/// fails (read those from the path, which reports the failure where it is).
///
/// Why: a scan reads its first file twice, once for the types of every row and once for the
/// rows; a compressed one was decompressed both times (`scan_msgpack(T.gz).collect()` 1.6 s
/// against 0.8 s for `read_msgpack`). The caller hands these bytes to both reads, the last
/// through [`crate::ReaderBuilder::build_from_owned_bytes`].
pub fn decompress_whole(path: &Path, most: usize) -> Result<Option<Vec<u8>>> {
    if compress::is_stdio(path) || is_url(path) {
        return Ok(None);
    }
    let Input::Stream(mut r) = open_input(path)? else {
        return Ok(None);
    };
    Ok(match read_held(&mut r, most) {
        Some((mut held, None)) if held.len() <= most => {
            held.shrink_to_fit();
            Some(held)
        }
        _ => None,
    })
}

/// Up to `most` bytes of `r` and one more (to tell whether there are more) in a buffer of
/// [`hold_buffer`]'s, with the read's error if it failed; `None` where no buffer is to be had.
fn read_held(r: &mut dyn Read, most: usize) -> Option<(Vec<u8>, Option<std::io::Error>)> {
    let mut held = hold_buffer(most)?;
    let failed = r
        .take((most as u64).saturating_add(1))
        .read_to_end(&mut held)
        .err();
    Some((held, failed))
}

/// An empty buffer that can take `most` bytes (up to the default bound) and one more without
/// moving: address space only until written (grown by doubling, a 300 MB input was copied again
/// and faulted in afresh at each step), in huge pages where the kernel allows. `None` where the
/// reservation is refused.
fn hold_buffer(most: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    // (a larger bound than the default grows past it, by doubling)
    v.try_reserve_exact(most.min(crate::read::DEFAULT_HOLD_DECOMPRESSED) + 1)
        .ok()?;
    crate::types::buffers::advise_huge_range(v.as_mut_ptr(), v.capacity());
    Some(v)
}

/// The bytes already read, then the rest of the source; the bytes are freed once read past.
struct HeadThen {
    head: Vec<u8>,
    at: usize,
    rest: Box<dyn Read + Send>,
}

impl HeadThen {
    fn new(head: Vec<u8>, rest: Box<dyn Read + Send>) -> Self {
        HeadThen { head, at: 0, rest }
    }
}

impl Read for HeadThen {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at < self.head.len() {
            let k = out.len().min(self.head.len() - self.at);
            out[..k].copy_from_slice(&self.head[self.at..self.at + k]);
            self.at += k;
            if self.at == self.head.len() {
                // up to the bound held: not kept for the rest of the read
                self.head = Vec::new();
                self.at = 0;
            }
            return Ok(k);
        }
        self.rest.read(out)
    }
}

/// A `Read` that fails with the error it holds (once; then it is at its end).
struct FailWith(Option<std::io::Error>);

impl Read for FailWith {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}

/// A reader's batches; once they end, where the input was cut (if it was) goes into `slot`.
struct WatchTruncation {
    reader: crate::Reader,
    slot: Arc<std::sync::Mutex<Option<crate::Truncation>>>,
}

impl Iterator for WatchTruncation {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        let next = self.reader.next();
        if next.is_none() {
            if let Ok(mut s) = self.slot.lock() {
                *s = self.reader.truncation();
            }
        }
        next
    }
}

/// A stream of record batches.
pub type BatchIter = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// A file format this crate reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// msgpack-numpy (`.msgpack`, `.mpk`, optionally `.zst` / `.gz` / `.lz4` compressed).
    Msgpack,
    /// Apache Parquet (`.parquet`, `.pq`).
    Parquet,
    /// Feather v2 / Arrow IPC file (`.feather`, `.arrow`, `.ipc`); the IPC stream format is read too.
    Ipc,
    /// NumPy `.npz`: one `.npy` array per column.
    Npz,
}

impl Format {
    /// The format named by `path`'s extension (a compression extension after `.msgpack` is allowed).
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = match compress::Codec::from_path(path) {
            Some(_) => name.rsplit_once('.').map(|(stem, _)| stem.to_string())?,
            None => name,
        };
        let ext = name.rsplit_once('.')?.1;
        let f = match ext {
            "msgpack" | "mpk" | "msgp" => Format::Msgpack,
            "parquet" | "pq" => Format::Parquet,
            "feather" | "arrow" | "ipc" | "arrows" => Format::Ipc,
            "npz" => Format::Npz,
            _ => return None,
        };
        // Compressed Parquet/IPC/NPZ files are not read (they compress internally).
        if f != Format::Msgpack && compress::Codec::from_path(path).is_some() {
            return None;
        }
        Some(f)
    }

    /// Recognise a file by its first bytes (Parquet, Arrow IPC, zip); anything else is msgpack.
    pub fn sniff(path: &Path) -> Result<Format> {
        use crate::wire::sniff::{sniff, OtherFormat, Sniffed, SNIFF_LEN};
        if compress::is_stdio(path) || compress::Codec::from_path(path).is_some() {
            return Ok(Format::Msgpack);
        }
        let mut head = Vec::with_capacity(SNIFF_LEN);
        std::fs::File::open(path)
            .and_then(|f| f.take(SNIFF_LEN as u64).read_to_end(&mut head))
            .map_err(|e| compress::io_error(path, e))?;
        Ok(match sniff(&head) {
            Sniffed::Other(OtherFormat::Parquet) => Format::Parquet,
            Sniffed::Other(OtherFormat::ArrowFile) => Format::Ipc,
            Sniffed::Other(OtherFormat::Zip) => Format::Npz,
            // an Arrow IPC stream (continuation marker)
            _ if head.starts_with(&[0xff, 0xff, 0xff, 0xff]) => Format::Ipc,
            // msgpack, compressed msgpack, or something the msgpack reader refuses by name
            _ => Format::Msgpack,
        })
    }

    /// The format of an input: from its extension, else from its first bytes.
    pub fn detect(path: &Path) -> Result<Format> {
        match Format::from_path(path) {
            Some(f) => Ok(f),
            // an object is not opened twice to guess: msgpack unless its name says otherwise; nor
            // is a pipe (`<(cat f)`, /dev/stdin), whose first bytes a guess would consume
            None if is_url(path) || !std::fs::metadata(path).map_or(true, |m| m.is_file()) => {
                Ok(Format::Msgpack)
            }
            None => Format::sniff(path),
        }
    }
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "msgpack" | "mpk" => Format::Msgpack,
            "parquet" | "pq" => Format::Parquet,
            "feather" | "arrow" | "ipc" => Format::Ipc,
            "npz" => Format::Npz,
            _ => {
                return Err(Error::new(ErrorKind::Unsupported(format!(
                "unknown format {s:?}; expected one of: parquet, feather, arrow, ipc, npz, msgpack"
            ))))
            }
        })
    }
}

// the command line names formats as `FromStr` does (aliases accepted, hidden in --help)
#[cfg(feature = "cli")]
impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Parquet, Format::Ipc, Format::Npz, Format::Msgpack]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use clap::builder::PossibleValue as V;
        Some(match self {
            Format::Parquet => V::new("parquet").alias("pq"),
            Format::Ipc => V::new("feather").aliases(["arrow", "ipc"]),
            Format::Npz => V::new("npz"),
            Format::Msgpack => V::new("msgpack").alias("mpk"),
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Msgpack => "msgpack",
            Format::Parquet => "parquet",
            Format::Ipc => "arrow ipc",
            Format::Npz => "npz",
        })
    }
}

/// Compression inside an output file (Parquet pages, IPC buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// No compression.
    None,
    /// Zstandard at this level (1–22; 3 is zstd's own default).
    Zstd(i32),
    /// Snappy (Parquet only).
    Snappy,
    /// LZ4 (Parquet: `LZ4_RAW`; IPC: the LZ4 frame format).
    Lz4,
}

impl Default for Compression {
    /// `Zstd(3)`.
    fn default() -> Self {
        Compression::Zstd(3)
    }
}

impl FromStr for Compression {
    type Err = Error;
    /// `none`, `zstd`, `zstd:LEVEL`, `snappy`, `lz4`.
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        let bad = || {
            Error::new(ErrorKind::Unsupported(format!(
                "unknown compression {s:?}; expected one of: zstd, zstd:LEVEL, snappy, lz4, none"
            )))
        };
        Ok(match lower.as_str() {
            "none" | "uncompressed" => Compression::None,
            "zstd" => Compression::Zstd(3),
            "snappy" => Compression::Snappy,
            "lz4" => Compression::Lz4,
            other => match other.strip_prefix("zstd:") {
                Some(level) => {
                    let level: i32 = level.parse().map_err(|_| bad())?;
                    if !(1..=22).contains(&level) {
                        return Err(Error::new(ErrorKind::Unsupported(format!(
                            "zstd level {level} is out of range 1..=22"
                        ))));
                    }
                    Compression::Zstd(level)
                }
                None => return Err(bad()),
            },
        })
    }
}

/// Configuration of remote stores: object_store's keys (`endpoint_url`, `aws_access_key_id`,
/// `aws_region`, `allow_http`, ...), as Polars' `storage_options` take them; the environment
/// fills in what is not given. Used by URLs only (feature `cloud`).
#[derive(Clone, Default)]
pub struct StorageOptions(pub Vec<(String, String)>);

impl fmt::Debug for StorageOptions {
    // values may be secrets: only the keys are shown
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

/// Whether a path is a URL of a remote store (`s3://`, `gs://`, `az://`, `http(s)://`, ...).
pub fn is_url(path: &Path) -> bool {
    path.to_str()
        .and_then(|s| s.split_once("://"))
        .is_some_and(|(scheme, _)| {
            matches!(
                scheme.to_ascii_lowercase().as_str(),
                "s3" | "s3a"
                    | "gs"
                    | "gcs"
                    | "az"
                    | "azure"
                    | "abfs"
                    | "abfss"
                    | "adl"
                    | "http"
                    | "https"
            )
        })
}

/// Options for [`open_table`]: the input format, a progress counter, and how to read, declared
/// once as a [`ReaderBuilder`]. Its projection, batch size and row limit apply to every format,
/// its tensor mode to NPZ too; the rest to msgpack inputs.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Input format; `None` (default): from the extension, else from the first bytes.
    pub format: Option<Format>,
    /// Bytes of input consumed so far are added here, for a progress bar (default: none).
    pub progress: Option<Arc<AtomicU64>>,
    /// How to read (layout, projection, batch size, tensor mode, row limit, conflicts, ...).
    pub reader: ReaderBuilder,
    /// Remote stores' configuration, for URL inputs.
    pub storage: StorageOptions,
}

/// An opened input: its schema, its batches, and for msgpack inputs the layout used.
pub struct Table {
    /// The schema every batch has.
    pub schema: SchemaRef,
    /// The record batches.
    pub batches: BatchIter,
    /// The input's format.
    pub format: Format,
    /// The layout: for msgpack inputs the one resolved, else the one recorded in the schema
    /// metadata (`msgpack_arrow.layout`) if any.
    pub layout: Option<Layout>,
    /// Why that layout (e.g. `auto: first object is a map`).
    pub layout_reason: Option<String>,
    /// Rows in the input, where known before reading them (msgpack files in memory or mapped).
    pub num_rows: Option<usize>,
    /// Where a msgpack input read with [`OnTruncated::Keep`](crate::OnTruncated::Keep) was cut: set when known (at once for
    /// mapped files, once the batches are consumed for streams).
    pub truncation: Arc<std::sync::Mutex<Option<crate::Truncation>>>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("schema", &self.schema)
            .field("format", &self.format)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

/// Open any supported input as record batches: msgpack (plain, `.zst`, `.gz`, `.lz4`, or `-` for
/// standard input), Parquet, Feather/Arrow IPC (file or stream format), or NPZ.
pub fn open_table(path: &Path, opts: &ReadOptions) -> Result<Table> {
    let mut t = open_table_all(path, opts)?;
    // msgpack readers start at `skip_rows` themselves; the other formats' rows are dropped here
    let skip = match t.format {
        Format::Msgpack => 0,
        _ => opts.reader.skip_rows(),
    };
    if skip > 0 || opts.reader.n_rows().is_some() {
        t.batches = Box::new(RowRange {
            inner: t.batches,
            window: RowWindow {
                skip,
                left: opts.reader.n_rows(),
            },
        });
        t.num_rows = t.num_rows.map(|r| r.saturating_sub(skip));
        if let Some(n) = opts.reader.n_rows() {
            // fewer rows than asked for: that is all there is; as many: the rest was not counted
            t.num_rows = t.num_rows.filter(|&r| r < n);
        }
    }
    Ok(t)
}

/// The rows of a batch stream in a [`RowWindow`]; the input is not read past them.
struct RowRange {
    inner: BatchIter,
    window: RowWindow,
}

impl Iterator for RowRange {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        while !self.window.done() {
            match self.inner.next()? {
                Ok(b) => {
                    if let Some(b) = self.window.cut(b) {
                        return Some(Ok(b));
                    }
                }
                Err(e) => return Some(Err(e)),
            }
        }
        None
    }
}

fn open_table_all(path: &Path, opts: &ReadOptions) -> Result<Table> {
    let format = match opts.format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    if compress::is_stdio(path) && format != Format::Msgpack {
        return Err(Error::new(ErrorKind::Unsupported(format!(
            "standard input is read as msgpack only; write the {format} data to a file first"
        ))));
    }
    let size = if compress::is_stdio(path) || is_url(path) {
        None
    } else {
        std::fs::metadata(path).ok().map(|m| m.len())
    };
    let r = &opts.reader;
    let (schema, batches, units) = match format {
        Format::Msgpack => return open_msgpack(path, opts, size),
        Format::Parquet => {
            let (schema, batches, rows) = foreign::opened("Parquet", path, || {
                parquet::read_parquet_with(path, r.projection(), r.batch_size(), r.batch_bytes())
            })?;
            let batches = foreign::batches("Parquet", path, batches);
            (schema, batches, Some(Units::Rows(rows)))
        }
        Format::Ipc => {
            let (schema, batches, n) =
                foreign::opened("Feather", path, || ipc::read_ipc_with(path, r.projection()))?;
            (schema, foreign::batches("Feather", path, batches), n)
        }
        Format::Npz => {
            let (schema, batches) =
                npz::read_npz_with(path, r.projection(), r.batch_size(), r.tensor())?;
            (schema, batches, None)
        }
    };
    let (layout, layout_reason) = recorded_layout(&schema);
    let num_rows = match units {
        Some(Units::Rows(n)) => usize::try_from(n).ok(),
        _ => None,
    };
    let batches = match (&opts.progress, size) {
        (Some(counter), Some(size)) => {
            Box::new(ProgressIter::new(batches, counter.clone(), size, units)) as BatchIter
        }
        _ => batches,
    };
    Ok(Table {
        schema,
        batches,
        format,
        layout,
        layout_reason,
        num_rows,
        truncation: Default::default(),
    })
}

/// The layout recorded in a schema's metadata (`msgpack_arrow.layout`), if any.
pub fn recorded_layout(schema: &SchemaRef) -> (Option<Layout>, Option<String>) {
    match schema
        .metadata()
        .get(meta::LAYOUT)
        .and_then(|l| l.parse::<Layout>().ok())
    {
        Some(l) => (
            Some(l),
            Some(format!("recorded in the file's {} metadata", meta::LAYOUT)),
        ),
        None => (None, None),
    }
}

fn open_msgpack(path: &Path, opts: &ReadOptions, size: Option<u64>) -> Result<Table> {
    use crate::Reader;
    let builder = opts.reader.clone();
    let input = compress::open_input_with(path, opts.progress.clone(), &opts.storage)?;
    let streamed = matches!(input, Input::Stream(_));
    let reader: Reader = builder.build_from_input_of(input, path)?;
    let schema = reader.schema();
    let layout = Some(reader.layout());
    let layout_reason = Some(reader.layout_reason().to_string());
    let rows = reader.num_rows();
    let truncation: Arc<std::sync::Mutex<Option<crate::Truncation>>> = Default::default();
    let mut batches: BatchIter = Box::new(WatchTruncation {
        reader,
        slot: truncation.clone(),
    });
    if let (Some(counter), Some(size), false) = (&opts.progress, size, streamed) {
        // A mapped file is consumed as it is decoded: progress by rows where they were counted.
        let units = rows.map(|n| Units::Rows(n as u64));
        batches = Box::new(ProgressIter::new(batches, counter.clone(), size, units));
    }
    Ok(Table {
        schema,
        batches,
        format: Format::Msgpack,
        layout,
        layout_reason,
        num_rows: rows,
        truncation,
    })
}

/// Adds a file's size to a progress counter as its batches go by: in proportion to the units
/// (rows or batches) done when their total is known, else all at the end.
struct ProgressIter {
    inner: BatchIter,
    counter: Arc<AtomicU64>,
    size: u64,
    /// (units total, units per batch: `None` = rows, `Some(1)` = batches)
    units: Option<(u64, Option<u64>)>,
    done: u64,
    reported: u64,
}

impl ProgressIter {
    fn new(inner: BatchIter, counter: Arc<AtomicU64>, size: u64, units: Option<Units>) -> Self {
        let units = units.map(|u| match u {
            Units::Rows(n) => (n, None),
            Units::Batches(n) => (n, Some(1)),
        });
        ProgressIter {
            inner,
            counter,
            size,
            units,
            done: 0,
            reported: 0,
        }
    }
    fn report(&mut self, upto: u64) {
        if upto > self.reported {
            self.counter
                .fetch_add(upto - self.reported, Ordering::Relaxed);
            self.reported = upto;
        }
    }
}

/// How far through a file a batch is, for progress.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Units {
    /// The file holds this many rows.
    Rows(u64),
    /// The file holds this many batches.
    Batches(u64),
}

impl Iterator for ProgressIter {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        match (&item, self.units) {
            (Some(Ok(b)), Some((total, per))) if total > 0 => {
                self.done += per.unwrap_or(b.num_rows() as u64);
                let upto =
                    (self.size as u128 * self.done.min(total) as u128 / total as u128) as u64;
                self.report(upto);
            }
            (None, _) | (Some(Err(_)), _) => self.report(self.size),
            _ => {}
        }
        item
    }
}

/// The error of an output format that counts a table's rows in its columns (Parquet's row
/// groups, NPZ's arrays) given rows without any column (a stream of empty maps `{}`), which it
/// would write as none, silently.
pub(crate) fn rows_without_columns(format: &str, rows: usize) -> Error {
    Error::new(ErrorKind::Unsupported(format!(
        "{format} cannot hold rows without columns ({rows} rows whose maps are empty); \
         write Feather or msgpack to keep them"
    )))
}

/// A batch of `rows` rows and no column (a stream of empty maps), for the writers' tests.
#[cfg(test)]
pub(crate) fn rows_of_no_column(rows: usize) -> RecordBatch {
    RecordBatch::try_new_with_options(
        Arc::new(arrow_schema::Schema::empty()),
        vec![],
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .expect("no column to disagree with the row count")
}

/// Indices of `columns` in `schema`, in the order asked; unknown or repeated names are errors.
pub(crate) fn projection_indices(
    schema: &arrow_schema::Schema,
    columns: &[String],
) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(columns.len());
    for c in columns {
        let i = schema.index_of(c).map_err(|_| {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            Error::new(ErrorKind::Key(format!(
                "column {c:?} not found; the input has: {}",
                names.join(", ")
            )))
        })?;
        if out.contains(&i) {
            return Err(Error::new(ErrorKind::Key(format!(
                "column {c:?} is listed twice"
            ))));
        }
        out.push(i);
    }
    Ok(out)
}

/// For a reader that can only read columns in file order: the sorted indices to read, and the
/// positions that put the read columns back in the order asked.
pub(crate) fn sorted_projection(indices: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    let reorder = indices
        .iter()
        .map(|i| sorted.iter().position(|s| s == i).unwrap_or(0))
        .collect();
    (sorted, reorder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_names() {
        let f = |s: &str| Format::from_path(Path::new(s));
        assert_eq!(f("a.msgpack"), Some(Format::Msgpack));
        assert_eq!(f("dir/a.MPK"), Some(Format::Msgpack));
        assert_eq!(f("a.msgpack.zst"), Some(Format::Msgpack));
        assert_eq!(f("a.mpk.gz"), Some(Format::Msgpack));
        assert_eq!(f("a.parquet"), Some(Format::Parquet));
        assert_eq!(f("a.pq"), Some(Format::Parquet));
        assert_eq!(f("a.feather"), Some(Format::Ipc));
        assert_eq!(f("a.arrow"), Some(Format::Ipc));
        assert_eq!(f("a.ipc"), Some(Format::Ipc));
        assert_eq!(f("a.npz"), Some(Format::Npz));
        assert_eq!(f("a.parquet.zst"), None);
        assert_eq!(f("a.bin"), None);
        assert_eq!(f("noext"), None);
        assert_eq!("feather".parse::<Format>().unwrap(), Format::Ipc);
        assert!("csv"
            .parse::<Format>()
            .unwrap_err()
            .to_string()
            .contains("parquet, feather"));
    }

    #[test]
    fn sniffing() {
        let dir = tempfile::tempdir().unwrap();
        for (bytes, want) in [
            (&b"PAR1xxxx"[..], Format::Parquet),
            (b"ARROW1\0\0", Format::Ipc),
            (b"PK\x03\x04", Format::Npz),
            (b"\x81\xa1a\x01", Format::Msgpack),
            (b"", Format::Msgpack),
        ] {
            let p = dir.path().join("data.bin");
            std::fs::write(&p, bytes).unwrap();
            assert_eq!(Format::detect(&p).unwrap(), want);
        }
    }

    #[test]
    fn compression_parse() {
        assert_eq!("zstd".parse::<Compression>().unwrap(), Compression::Zstd(3));
        assert_eq!(
            "zstd:9".parse::<Compression>().unwrap(),
            Compression::Zstd(9)
        );
        assert_eq!("NONE".parse::<Compression>().unwrap(), Compression::None);
        assert!("zstd:0".parse::<Compression>().is_err());
        assert!("brotli"
            .parse::<Compression>()
            .unwrap_err()
            .to_string()
            .contains("snappy"));
    }

    #[test]
    fn projections() {
        use arrow_schema::{DataType, Field, Schema};
        let s = Schema::new(vec![
            Field::new("a", DataType::Int8, true),
            Field::new("b", DataType::Int8, true),
            Field::new("c", DataType::Int8, true),
        ]);
        let cols = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(projection_indices(&s, &cols(&["c", "a"])).unwrap(), [2, 0]);
        let e = projection_indices(&s, &cols(&["x"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"x\" not found") && e.contains("a, b, c"),
            "{e}"
        );
        assert!(projection_indices(&s, &cols(&["a", "a"])).is_err());
        assert_eq!(sorted_projection(&[2, 0]), (vec![0, 2], vec![1, 0]));
    }
}
