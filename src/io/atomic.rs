//! Output that appears only when complete: write to a temporary file beside the target, then
//! rename it over the target. A failed or abandoned write leaves the previous file untouched.
//!
//! A process killed outright (SIGKILL, OOM, power loss) cannot delete its temporary file. The name
//! says whose it was — `.{target name}.{pid}.{random}.tmp` — and the writer holds an `flock` on
//! it, so the next write of the same target removes the temporary files of writers that are gone
//! (their process no longer exists and nobody holds the lock) before it starts.

use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::Result;
use crate::io::compress::io_error;

/// A file written in place of `target`, made visible by [`AtomicFile::commit`].
///
/// Writes go (buffered) to a temporary file in the target's directory, so the final rename stays
/// on one file system. [`commit`](AtomicFile::commit) flushes, fsyncs and renames over the target;
/// dropping an `AtomicFile` without committing deletes the temporary file.
///
/// Durability is a choice ([`AtomicFile::with_fsync`]); the default syncs. Without the fsync the
/// file is still complete or absent for every other process, but a power loss soon after the
/// rename may leave an empty or partial file on some file systems. What it costs: a 316 MB
/// write took 1.09 s with the fsync and 0.37 s without it on this project's test machine (a
/// virtual disk); the page cache makes the rest of the write a memory copy.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: BufWriter<NamedTempFile>,
    target: PathBuf,
    fsync: bool,
}

impl AtomicFile {
    /// Start writing a replacement for `target`. The target's directory must exist.
    ///
    /// The new file gets the target's permissions if it exists, else `0o666` less the umask, as a
    /// plain `File::create` would (a bare temporary file would be `0o600`).
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        if target.is_dir() {
            return Err(io_error(&target, io::Error::other("is a directory")));
        }
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(io_error(
                &target,
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("directory {} does not exist", dir.display()),
                ),
            ));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.{}.", std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let perms = match std::fs::metadata(&target) {
                Ok(m) => m.permissions(),
                // open(2) applies the umask to this mode.
                Err(_) => std::fs::Permissions::from_mode(0o666),
            };
            builder.permissions(perms);
        }
        let tmp = builder
            .tempfile_in(&dir)
            .map_err(|e| io_error(&target, e))?;
        #[cfg(unix)]
        if let Ok(m) = std::fs::metadata(&target) {
            // The umask applied at creation; restore the old file's mode exactly.
            let _ = tmp.as_file().set_permissions(m.permissions());
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own; held until the file is closed (or we die).
            unsafe { libc::flock(tmp.as_file().as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            remove_stale(&dir, &name, tmp.path());
        }
        Ok(AtomicFile {
            tmp: BufWriter::with_capacity(1 << 20, tmp),
            target,
            fsync: true,
        })
    }

    /// Whether [`commit`](AtomicFile::commit) fsyncs the data and the directory (default true).
    pub fn with_fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }

    /// Whether [`commit`](AtomicFile::commit) fsyncs ([`AtomicFile::with_fsync`]).
    pub fn fsyncs(&self) -> bool {
        self.fsync
    }

    /// The path the file will have once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file's current path.
    pub fn temp_path(&self) -> &Path {
        self.tmp.get_ref().path()
    }

    /// Flush and fsync the data (the long part of [`commit`](AtomicFile::commit), which is then
    /// quick): callers that must stay responsive (Ctrl-C in Python) run this on another thread.
    pub fn sync(&mut self) -> Result<()> {
        self.tmp.flush().map_err(|e| io_error(&self.target, e))?;
        if !self.fsync {
            return Ok(());
        }
        self.tmp
            .get_ref()
            .as_file()
            .sync_all()
            .map_err(|e| io_error(&self.target, e))
    }

    /// Flush, fsync and rename over the target. Any write error still pending is returned here.
    pub fn commit(mut self) -> Result<()> {
        self.sync()?;
        let (target, fsync) = (self.target, self.fsync);
        let tmp = self
            .tmp
            .into_inner()
            .map_err(|e| io_error(&target, e.into_error()))?;
        tmp.persist(&target)
            .map_err(|e| io_error(&target, e.error))?;
        // Make the rename itself durable. Best effort: not every file system lets a directory be
        // opened and synced, and the data is already safe.
        #[cfg(unix)]
        if let Some(dir) = target.parent().filter(|_| fsync) {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        #[cfg(not(unix))]
        let _ = fsync;
        Ok(())
    }
}

/// Delete the temporary files `.{name}.{pid}.{random}.tmp` in `dir` left by writers that died:
/// their process is gone and nobody holds their lock. Best effort: errors are ignored. Files
/// named otherwise, of live processes, or locked (a writer on another host sharing the
/// directory) are left alone.
#[cfg(unix)]
fn remove_stale(dir: &Path, name: &str, own: &Path) {
    use std::os::fd::AsRawFd;
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        // `{pid}.{random}`, the random part alphanumeric: not the temp file of a target whose
        // name merely starts with ours (`{name}.1.tmp`'s are `.{name}.1.{pid}.{random}.tmp`)
        let Some((pid, random)) = rest.split_once('.') else {
            continue;
        };
        let Ok(pid) = pid.parse::<libc::pid_t>() else {
            continue;
        };
        if pid <= 0 || random.is_empty() || !random.bytes().all(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        let path = entry.path();
        if path == own {
            continue;
        }
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if !gone {
            continue;
        }
        let Ok(f) = std::fs::File::open(&path) else {
            continue;
        };
        // SAFETY: flock on a descriptor we own; released when `f` is closed.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            let _ = std::fs::remove_file(&path);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.tmp.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

impl Seek for AtomicFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.tmp.seek(pos)
    }
}

/// An output that appears only when committed and whole: a local [`AtomicFile`], or for a URL
/// (feature `cloud`) a multipart upload, aborted unless committed. Dropped uncommitted, nothing
/// the user had is touched.
pub enum Output {
    /// A local file (renamed into place on commit).
    File(AtomicFile),
    /// A remote object (the upload completed on commit).
    #[cfg(feature = "cloud")]
    Remote(crate::io::remote::RemoteWriter),
    /// Standard output (`-`): written as encoded, flushed on commit. A pipe cannot be replaced
    /// whole: what a failure leaves there, the reader on the other end sees.
    Stdout(Piped),
}

/// Standard output, written in order (a pipe cannot seek).
pub struct Piped {
    out: BufWriter<io::Stdout>,
    written: u64,
}

impl Write for Piped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Seek for Piped {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        seek_in_order(self.written, pos, || {
            "standard output is written in order, without seeking".into()
        })
    }
}

/// The seek of an output written in order, `written` bytes so far: a writer may ask where it is
/// (a seek to where it already is), not go back; anything else is an error saying `why`.
pub(crate) fn seek_in_order(
    written: u64,
    pos: SeekFrom,
    why: impl FnOnce() -> String,
) -> io::Result<u64> {
    let at = match pos {
        SeekFrom::Start(n) => Some(n),
        SeekFrom::Current(d) | SeekFrom::End(d) => written.checked_add_signed(d),
    };
    match at {
        Some(n) if n == written => Ok(n),
        _ => Err(io::Error::new(io::ErrorKind::Unsupported, why())),
    }
}

impl Output {
    /// The local file, if this is one (to [`AtomicFile::sync`] it before committing).
    pub fn as_file_mut(&mut self) -> Option<&mut AtomicFile> {
        match self {
            Output::File(f) => Some(f),
            _ => None,
        }
    }

    /// Start writing `target`: a path, a URL of a remote store, or `-` (standard output).
    pub fn create(target: &Path, storage: &crate::io::StorageOptions) -> Result<Output> {
        if crate::io::compress::is_stdio(target) {
            return Ok(Output::Stdout(Piped {
                out: BufWriter::with_capacity(1 << 20, io::stdout()),
                written: 0,
            }));
        }
        if crate::io::is_url(target) {
            let url = target.to_str().unwrap_or_default();
            #[cfg(feature = "cloud")]
            return Ok(Output::Remote(crate::io::remote::create(url, storage)?));
            #[cfg(not(feature = "cloud"))]
            return Err(crate::Error::new(crate::ErrorKind::Unsupported(format!(
                "{url}: URLs need the `cloud` feature of msgpack-arrow ({storage:?} given)"
            ))));
        }
        Ok(Output::File(AtomicFile::create(target)?))
    }

    /// Whether a local file is fsynced on commit ([`AtomicFile::with_fsync`]; a remote object is
    /// durable once its upload completes).
    pub fn with_fsync(self, on: bool) -> Self {
        match self {
            Output::File(f) => Output::File(f.with_fsync(on)),
            other => other,
        }
    }

    /// Make the output appear, whole.
    pub fn commit(self) -> Result<()> {
        match self {
            Output::File(f) => f.commit(),
            #[cfg(feature = "cloud")]
            Output::Remote(r) => r.commit(),
            Output::Stdout(mut p) => Ok(p.flush()?),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::File(f) => f.write(buf),
            #[cfg(feature = "cloud")]
            Output::Remote(r) => r.write(buf),
            Output::Stdout(p) => p.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::File(f) => f.flush(),
            #[cfg(feature = "cloud")]
            Output::Remote(r) => r.flush(),
            Output::Stdout(p) => p.flush(),
        }
    }
}

impl Seek for Output {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            Output::File(f) => f.seek(pos),
            #[cfg(feature = "cloud")]
            Output::Remote(r) => r.seek(pos),
            Output::Stdout(p) => p.seek(pos),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_keeps_old() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"old").unwrap();

        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"partial").unwrap();
        let tmp = f.temp_path().to_path_buf();
        assert!(tmp.exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        drop(f);
        assert!(!tmp.exists(), "temp file removed on drop");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");

        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new contents").unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b"NEW").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"NEW contents");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temp files left behind");
    }

    #[cfg(unix)]
    #[test]
    fn temp_files_of_dead_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.parquet");
        // a pid that cannot exist (above pid_max's ceiling of 2^22), a live one (ours), and files
        // that only look similar
        let dead = dir.path().join(".out.parquet.99999999.AbC123.tmp");
        let live = dir
            .path()
            .join(format!(".out.parquet.{}.xyz789.tmp", std::process::id()));
        let others = [
            ".out.parquet.1.99999999.AbC123.tmp", // a temp of target "out.parquet.1"
            ".out.parquet.tmp",
            ".out.parquet.x.AbC123.tmp",
            ".other.99999999.AbC123.tmp",
        ];
        for p in [&dead, &live] {
            std::fs::write(p, b"partial").unwrap();
        }
        for o in others {
            std::fs::write(dir.path().join(o), b"x").unwrap();
        }
        let f = AtomicFile::create(&target).unwrap();
        let name = f
            .temp_path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(&format!(".out.parquet.{}.", std::process::id()))
                && name.ends_with(".tmp"),
            "{name}"
        );
        f.commit().unwrap();
        assert!(!dead.exists(), "a dead writer's temp file is removed");
        assert!(live.exists(), "a live writer's temp file is kept");
        for o in others {
            assert!(dir.path().join(o).exists(), "{o} kept");
        }
    }

    #[cfg(unix)]
    #[test]
    fn permissions_like_a_plain_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"").unwrap();
        let target = dir.path().join("new");
        let f = AtomicFile::create(&target).unwrap();
        f.commit().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&target), mode(&plain));

        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        AtomicFile::create(&target).unwrap().commit().unwrap();
        assert_eq!(mode(&target), 0o640);
    }

    #[test]
    fn relative_target_and_errors() {
        let e = AtomicFile::create("/nonexistent-dir/x.parquet")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent-dir/x.parquet"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = AtomicFile::create(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
    }
}
