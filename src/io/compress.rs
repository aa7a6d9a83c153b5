//! Opening inputs: plain files are memory-mapped, `.zst` / `.lz4` / `.gz` files are decompressed on
//! the fly, and `-` is standard input. Also the expansion of CLI arguments (globs, directories).

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::wire::sniff::{sniff, Compression as SniffedCodec, Sniffed, SNIFF_LEN};

/// An opened input.
pub enum Input {
    /// A plain file, memory-mapped.
    Mmap(memmap2::Mmap),
    /// A compressed file (decompressed as it is read) or standard input.
    Stream(Box<dyn Read + Send>),
    /// Bytes already in memory.
    Buffer(arrow_buffer::Buffer),
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Mmap(m) => write!(f, "Input::Mmap({} bytes)", m.len()),
            Input::Buffer(b) => write!(f, "Input::Buffer({} bytes)", b.len()),
            Input::Stream(_) => f.write_str("Input::Stream"),
        }
    }
}

/// A compression recognised from a file name's last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// `.zst` / `.zstd`
    Zstd,
    /// `.lz4` (the LZ4 frame format, as the `lz4` command writes it)
    Lz4,
    /// `.gz` (gzip; concatenated members are read as one stream)
    Gzip,
    /// a raw zlib stream (RFC 1950), recognised by its header only
    Zlib,
}

impl Codec {
    /// The codec named by `path`'s last extension, if any.
    pub fn from_path(path: &Path) -> Option<Codec> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "zst" | "zstd" => Some(Codec::Zstd),
            "lz4" => Some(Codec::Lz4),
            "gz" => Some(Codec::Gzip),
            _ => None,
        }
    }

    /// The codec whose magic bytes start `head` (see [`crate::wire::sniff`]), if any.
    pub fn from_magic(head: &[u8]) -> Option<Codec> {
        match sniff(head) {
            Sniffed::Compressed(c) => Some(match c {
                SniffedCodec::Gzip => Codec::Gzip,
                SniffedCodec::Zstd => Codec::Zstd,
                SniffedCodec::Lz4 => Codec::Lz4,
                SniffedCodec::Zlib => Codec::Zlib,
            }),
            _ => None,
        }
    }

    /// Wrap `r` in this codec's decoder. What the decoder finds wrong with the data (a bad
    /// checksum, a corrupt block, an end inside a frame) is an `InvalidData` or `UnexpectedEof`
    /// error naming the codec, a `DecodeError` in Python; `r`'s own errors stay as they are.
    pub fn decoder(self, r: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>> {
        let r = FromSource(r);
        let inner: Box<dyn Read + Send> = match self {
            // zstd::Decoder buffers its input itself.
            Codec::Zstd => Box::new(zstd::stream::read::Decoder::new(r)?),
            Codec::Lz4 => Box::new(super::lz4_frames::decoder(r)),
            Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(r))),
            Codec::Zlib => Box::new(ZlibToEnd(flate2::bufread::ZlibDecoder::new(
                BufReader::new(r),
            ))),
        };
        Ok(Box::new(Decompressed { codec: self, inner }))
    }

    fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
            Codec::Gzip => "gzip",
            Codec::Zlib => "zlib",
        }
    }
}

/// A zlib stream that must end the input: flate2 stops at the stream's end, and what follows (a
/// second stream, `zlib(a) + zlib(b)`, or other bytes) would be dropped without a word.
struct ZlibToEnd<R: io::BufRead>(flate2::bufread::ZlibDecoder<R>);

impl<R: io::BufRead> Read for ZlibToEnd<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        if n == 0 && !buf.is_empty() && !self.0.get_mut().fill_buf()?.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "bytes follow the end of the zlib stream at byte {} (a second stream or \
                     trailing data: one zlib stream is read, not several)",
                    self.0.total_in()
                ),
            ));
        }
        Ok(n)
    }
}

/// The compressed input under a decoder: its errors are tagged ([`SourceError`]) so that
/// [`Decompressed`] tells them from the decoder's own.
struct FromSource(Box<dyn Read + Send>);

#[derive(Debug)]
struct SourceError(io::Error);

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SourceError {}

impl Read for FromSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), SourceError(e)))
    }
}

/// A decoder whose data errors name its codec (see [`Codec::decoder`]).
struct Decompressed {
    codec: Codec,
    inner: Box<dyn Read + Send>,
}

impl Read for Decompressed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.get_ref().is_some_and(|r| r.is::<SourceError>()) {
                // the file's (or the network's) own error, as it was
                return match e.into_inner().map(|r| r.downcast::<SourceError>()) {
                    Some(Ok(s)) => s.0,
                    _ => io::Error::other("unreadable input"),
                };
            }
            let kind = match e.kind() {
                io::ErrorKind::UnexpectedEof => io::ErrorKind::UnexpectedEof,
                _ => io::ErrorKind::InvalidData,
            };
            io::Error::new(
                kind,
                format!("{} input is corrupt or cut short: {e}", self.codec.name()),
            )
        })
    }
}

/// A writer that compresses by codec (`.msgpack.zst`, `.gz`, `.lz4` outputs), or passes through.
/// [`CompressedWriter::finish`] writes the codec's trailer; dropping it without that leaves a
/// truncated stream (the atomic output is then never committed).
pub enum CompressedWriter<W: Write> {
    /// No codec.
    Plain(W),
    /// zstd, level 3, with a checksum.
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// gzip, default level.
    Gzip(flate2::write::GzEncoder<W>),
    /// LZ4 frame format.
    Lz4(lz4_flex::frame::FrameEncoder<W>),
    /// zlib.
    Zlib(flate2::write::ZlibEncoder<W>),
}

impl<W: Write> CompressedWriter<W> {
    /// Compress into `w` with `codec` (`None`: pass through).
    pub fn new(w: W, codec: Option<Codec>) -> io::Result<Self> {
        Ok(match codec {
            None => CompressedWriter::Plain(w),
            Some(Codec::Zstd) => {
                let mut e = zstd::stream::write::Encoder::new(w, 3)?;
                e.include_checksum(true)?;
                // zstd's own workers (one per thread of the pool): compression is most of a
                // .zst write (the 316 MB embedding table: 0.81 s on one thread)
                let threads = rayon::current_num_threads();
                if threads > 1 {
                    e.multithread(threads as u32)?;
                }
                CompressedWriter::Zstd(e)
            }
            Some(Codec::Gzip) => CompressedWriter::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            Some(Codec::Lz4) => CompressedWriter::Lz4(lz4_flex::frame::FrameEncoder::new(w)),
            Some(Codec::Zlib) => CompressedWriter::Zlib(flate2::write::ZlibEncoder::new(
                w,
                flate2::Compression::default(),
            )),
        })
    }
    /// Write the codec's trailer; the inner writer back.
    pub fn finish(self) -> io::Result<W> {
        match self {
            CompressedWriter::Plain(w) => Ok(w),
            CompressedWriter::Zstd(e) => e.finish(),
            CompressedWriter::Gzip(e) => e.finish(),
            CompressedWriter::Lz4(e) => e.finish().map_err(io::Error::other),
            CompressedWriter::Zlib(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for CompressedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            CompressedWriter::Plain(w) => w.write(buf),
            CompressedWriter::Zstd(e) => e.write(buf),
            CompressedWriter::Gzip(e) => e.write(buf),
            CompressedWriter::Lz4(e) => e.write(buf),
            CompressedWriter::Zlib(e) => e.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            CompressedWriter::Plain(w) => w.flush(),
            CompressedWriter::Zstd(e) => e.flush(),
            CompressedWriter::Gzip(e) => e.flush(),
            CompressedWriter::Lz4(e) => e.flush(),
            CompressedWriter::Zlib(e) => e.flush(),
        }
    }
}

/// An I/O error that names the path it happened on.
pub(crate) fn io_error(path: &Path, e: io::Error) -> Error {
    Error::new(ErrorKind::Io(e)).in_file(path)
}

/// Whether `path` means standard input / output.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Open `path` for reading: a plain file is memory-mapped; `.zst`, `.lz4` (frame format) and `.gz`
/// are decompressed as they are read; `-` is standard input (not decompressed).
pub fn open_input(path: &Path) -> Result<Input> {
    open_input_counted(path, None)
}

/// [`open_input`], adding the number of bytes read from the file (before decompression) to
/// `counter` as they are read, for a progress bar. A memory-mapped input is not counted: the caller
/// knows its size.
pub fn open_input_counted(path: &Path, counter: Option<Arc<AtomicU64>>) -> Result<Input> {
    open_input_with(path, counter, &Default::default())
}

/// [`open_input_counted`] where `path` may also be a URL (feature `cloud`): the object is read as
/// it arrives, decompressed when its first bytes name a codec.
pub fn open_input_with(
    path: &Path,
    counter: Option<Arc<AtomicU64>>,
    storage: &super::StorageOptions,
) -> Result<Input> {
    let count = |r: Box<dyn Read + Send>| -> Box<dyn Read + Send> {
        match &counter {
            Some(c) => Box::new(CountingReader {
                inner: r,
                counter: c.clone(),
            }),
            None => r,
        }
    };
    if is_stdio(path) {
        return Ok(Input::Stream(decompress_by_magic(count(Box::new(
            io::stdin(),
        )))?));
    }
    if super::is_url(path) {
        let url = path.to_str().unwrap_or_default();
        #[cfg(feature = "cloud")]
        return Ok(Input::Stream(decompress_by_magic(count(Box::new(
            super::remote::open(url, storage)?,
        )))?));
        #[cfg(not(feature = "cloud"))]
        return Err(Error::new(ErrorKind::Unsupported(format!(
            "{url}: URLs need the `cloud` feature of msgpack-arrow ({:?} given)",
            storage
        ))));
    }
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if let Some(codec) = Codec::from_path(path) {
        let dec = codec.decoder(count(Box::new(file)))?;
        // a FIFO's rows are handed on as they come, not a chunk at a time
        return Ok(Input::Stream(if meta.is_file() {
            ahead(dec)?
        } else {
            dec
        }));
    }
    if !meta.is_file() {
        // A FIFO or character device cannot be mapped: read it as a stream.
        return Ok(Input::Stream(decompress_by_magic(count(Box::new(file)))?));
    }
    if meta.len() < READ_BELOW {
        // (not counted here: a read of bytes in memory reports its progress as a mapped one)
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        (&file)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(path, e))?;
        return open_buffer(arrow_buffer::Buffer::from_vec(bytes));
    }
    // SAFETY: the map is read-only. If another process truncates or rewrites the file while it is
    // mapped, reads may see the new bytes or fault (SIGBUS); that is the documented contract of
    // reading a memory-mapped file, and the same caveat every mmap-based reader carries.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_error(path, e))?;
    // compressed data is decompressed whatever its name (SPEC §5, `wire::sniff`)
    if let Some(codec) = Codec::from_magic(&map[..map.len().min(SNIFF_LEN)]) {
        let counted = count(Box::new(io::Cursor::new(map)));
        return Ok(Input::Stream(ahead(codec.decoder(counted)?)?));
    }
    Ok(Input::Mmap(map))
}

/// Below this size a plain file is read into memory, not mapped: a map, its page faults and its
/// unmap cost more than a copy of a few pages (a glob of 2,000 files of 12 KB spent a third of
/// its reading there).
const READ_BELOW: u64 = 64 << 10;

/// A decompressor of a file, run a few chunks ahead on its own thread.
fn ahead(r: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>> {
    Ok(Box::new(super::ahead::ReadAhead::new(r)?))
}

/// A stream whose first bytes name a codec, decompressed; else the same bytes.
pub fn decompress_by_magic(mut r: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>> {
    let mut head = Vec::with_capacity(SNIFF_LEN);
    (&mut r).take(SNIFF_LEN as u64).read_to_end(&mut head)?;
    let codec = Codec::from_magic(&head);
    let whole: Box<dyn Read + Send> = Box::new(io::Cursor::new(head).chain(r));
    match codec {
        Some(c) => c.decoder(whole),
        None => Ok(whole),
    }
}

/// An in-memory input: as it is, or, when its first bytes name a codec, decompressed on the fly.
pub fn open_buffer(buf: arrow_buffer::Buffer) -> Result<Input> {
    match Codec::from_magic(&buf[..buf.len().min(SNIFF_LEN)]) {
        None => Ok(Input::Buffer(buf)),
        // (decompressed on the caller's thread: a Python buffer must not be released on another)
        Some(c) => Ok(Input::Stream(c.decoder(Box::new(buffer_reader(buf)))?)),
    }
}

/// An Arrow buffer as a `Read` of its bytes.
pub(crate) fn buffer_reader(buf: arrow_buffer::Buffer) -> io::Cursor<impl AsRef<[u8]>> {
    io::Cursor::new(BufferBytes(buf))
}

/// An Arrow buffer as bytes a `Cursor` can read.
struct BufferBytes(arrow_buffer::Buffer);

impl AsRef<[u8]> for BufferBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// Counts the bytes read through it.
struct CountingReader {
    inner: Box<dyn Read + Send>,
    counter: Arc<AtomicU64>,
}

impl Read for CountingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The file names a directory argument expands to (msgpack files, plain or compressed).
pub const MSGPACK_EXTENSIONS: &[&str] = &[
    ".msgpack",
    ".mpk",
    ".msgpack.zst",
    ".msgpack.gz",
    ".msgpack.lz4",
    ".mpk.zst",
    ".mpk.gz",
    ".mpk.lz4",
];

fn is_msgpack_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    MSGPACK_EXTENSIONS.iter().any(|ext| lower.ends_with(ext))
}

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expand CLI input arguments into paths, in order:
/// - `-` stays as is (standard input);
/// - a pattern with `*`, `?` or `[` is expanded with [`glob`] and sorted; matching nothing is an error;
/// - a directory becomes its msgpack files ([`MSGPACK_EXTENSIONS`]), sorted; none is an error;
/// - anything else must exist.
pub fn expand_inputs(args: &[String]) -> Result<Vec<PathBuf>> {
    expand_inputs_with(args, &Default::default())
}

/// [`expand_inputs`] where an argument may also be a URL (feature `cloud`), a glob over its
/// objects (listed, sorted as local matches are).
pub fn expand_inputs_with(
    args: &[String],
    storage: &super::StorageOptions,
) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for arg in args {
        let p = Path::new(arg);
        if is_stdio(p) {
            out.push(p.to_path_buf());
        } else if super::is_url(p) {
            #[cfg(feature = "cloud")]
            out.extend(
                super::remote::expand(arg, storage)?
                    .into_iter()
                    .map(PathBuf::from),
            );
            // opening it says the feature is missing
            #[cfg(not(feature = "cloud"))]
            {
                let _ = storage;
                out.push(p.to_path_buf());
            }
        } else if p.is_dir() {
            let mut found = Vec::new();
            for entry in std::fs::read_dir(p).map_err(|e| io_error(p, e))? {
                let entry = entry.map_err(|e| io_error(p, e))?;
                let is_file = entry.file_type().map(|t| !t.is_dir()).unwrap_or(false);
                if is_file && entry.file_name().to_str().is_some_and(is_msgpack_name) {
                    found.push(entry.path());
                }
            }
            if found.is_empty() {
                return Err(Error::new(ErrorKind::Io(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "directory {arg:?} holds no {} files",
                        MSGPACK_EXTENSIONS.join(", ")
                    ),
                ))));
            }
            found.sort();
            out.extend(found);
        } else if p.exists() {
            out.push(p.to_path_buf());
        } else if has_glob_chars(arg) {
            let paths = glob::glob(arg).map_err(|e| {
                Error::new(ErrorKind::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("bad glob pattern {arg:?}: {e}"),
                )))
            })?;
            let mut found = Vec::new();
            for p in paths {
                let p = p.map_err(|e| {
                    let path = e.path().to_path_buf();
                    io_error(&path, e.into())
                })?;
                if !p.is_dir() {
                    found.push(p);
                }
            }
            if found.is_empty() {
                return Err(Error::new(ErrorKind::Io(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("pattern {arg:?} matches no files"),
                ))));
            }
            found.sort();
            out.extend(found);
        } else {
            return Err(io_error(p, io::Error::from(io::ErrorKind::NotFound)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn compressed_data_is_recognised_whatever_its_name() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..5000u32).flat_map(|i| i.to_le_bytes()).collect();
        for codec in [Codec::Gzip, Codec::Zstd, Codec::Lz4, Codec::Zlib] {
            let mut w = CompressedWriter::new(Vec::new(), Some(codec)).unwrap();
            w.write_all(&data).unwrap();
            let packed = w.finish().unwrap();
            let p = d.path().join("plain.msgpack");
            std::fs::write(&p, &packed).unwrap();
            assert_eq!(
                read_all(open_input(&p).unwrap()),
                data,
                "{codec:?} by magic"
            );
            let buf = arrow_buffer::Buffer::from_vec(packed);
            assert_eq!(
                read_all(open_buffer(buf).unwrap()),
                data,
                "{codec:?} in memory"
            );
        }
        let plain = arrow_buffer::Buffer::from_vec(data.clone());
        assert!(matches!(open_buffer(plain).unwrap(), Input::Buffer(_)));
    }

    #[test]
    fn bytes_after_a_zlib_stream_are_an_error() {
        let pack = |d: &[u8]| {
            let mut w = CompressedWriter::new(Vec::new(), Some(Codec::Zlib)).unwrap();
            w.write_all(d).unwrap();
            w.finish().unwrap()
        };
        let (a, b) = (pack(b"first part"), pack(b"second part"));
        let mut whole = Vec::new();
        Codec::Zlib
            .decoder(Box::new(std::io::Cursor::new(a.clone())))
            .unwrap()
            .read_to_end(&mut whole)
            .unwrap();
        assert_eq!(whole, b"first part");
        for tail in [b, b"junk".to_vec()] {
            let mut r = Codec::Zlib
                .decoder(Box::new(std::io::Cursor::new([a.clone(), tail].concat())))
                .unwrap();
            let e = r.read_to_end(&mut Vec::new()).unwrap_err();
            assert!(
                e.to_string().contains(&format!("at byte {}", a.len())),
                "{e}"
            );
        }
    }

    fn read_all(input: Input) -> Vec<u8> {
        match input {
            Input::Mmap(m) => m.to_vec(),
            Input::Buffer(b) => b.to_vec(),
            Input::Stream(mut r) => {
                let mut v = Vec::new();
                r.read_to_end(&mut v).unwrap();
                v
            }
        }
    }

    #[test]
    fn plain_and_compressed() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let plain = dir.path().join("a.msgpack");
        std::fs::write(&plain, &data).unwrap();
        assert!(matches!(open_input(&plain).unwrap(), Input::Mmap(_)));
        assert_eq!(read_all(open_input(&plain).unwrap()), data);

        let zst = dir.path().join("a.msgpack.zst");
        std::fs::write(&zst, zstd::encode_all(&data[..], 3).unwrap()).unwrap();

        let gz = dir.path().join("a.msgpack.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&data[..1000]).unwrap();
        let mut two = enc.finish().unwrap();
        // A second gzip member: `cat a.gz b.gz` must read as one stream.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&data[1000..]).unwrap();
        two.extend(enc.finish().unwrap());
        std::fs::write(&gz, two).unwrap();

        let lz4 = dir.path().join("a.msgpack.lz4");
        let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
        enc.write_all(&data).unwrap();
        std::fs::write(&lz4, enc.finish().unwrap()).unwrap();

        for p in [&zst, &gz, &lz4] {
            let counter = Arc::new(AtomicU64::new(0));
            let input = open_input_counted(p, Some(counter.clone())).unwrap();
            assert!(matches!(input, Input::Stream(_)));
            assert_eq!(read_all(input), data, "{}", p.display());
            assert_eq!(
                counter.load(Ordering::Relaxed),
                std::fs::metadata(p).unwrap().len()
            );
        }
    }

    #[test]
    fn empty_file_maps() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("empty.msgpack");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(read_all(open_input(&p).unwrap()), b"");
    }

    #[test]
    fn missing_file_names_path() {
        let e = open_input(Path::new("/nonexistent/x.msgpack"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/x.msgpack"), "{e}");
    }

    #[test]
    fn corrupt_compressed_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.msgpack.zst");
        std::fs::write(&p, b"not zstd at all").unwrap();
        let Input::Stream(mut r) = open_input(&p).unwrap() else {
            panic!()
        };
        assert!(r.read_to_end(&mut Vec::new()).is_err());
    }

    #[test]
    fn expand() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for n in [
            "b.msgpack",
            "a.mpk",
            "c.msgpack.zst",
            "notes.txt",
            "z.parquet",
        ] {
            std::fs::write(d.join(n), b"").unwrap();
        }
        std::fs::create_dir(d.join("sub.msgpack")).unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let got = expand_inputs(&[s(d)]).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["a.mpk", "b.msgpack", "c.msgpack.zst"]);

        let got =
            expand_inputs(&[format!("{}/*.msgpack*", s(d)), s(&d.join("z.parquet"))]).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["b.msgpack", "c.msgpack.zst", "z.parquet"]);

        let pat = format!("{}/*.nothing", s(d));
        let e = expand_inputs(std::slice::from_ref(&pat))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&pat) && e.contains("matches no files"), "{e}");

        let e = expand_inputs(&[s(&d.join("missing.msgpack"))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.msgpack"), "{e}");

        std::fs::create_dir(d.join("empty")).unwrap();
        let e = expand_inputs(&[s(&d.join("empty"))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty") && e.contains("holds no"), "{e}");

        assert_eq!(expand_inputs(&["-".into()]).unwrap(), [PathBuf::from("-")]);
    }
}
