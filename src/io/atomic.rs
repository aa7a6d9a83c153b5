//! Output that appears only when complete: write to a temporary file beside the target, then
//! rename it over the target. A failed or abandoned write leaves the previous file untouched.

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
#[derive(Debug)]
pub struct AtomicFile {
    tmp: BufWriter<NamedTempFile>,
    target: PathBuf,
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
        let prefix = format!(".{name}.");
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
        Ok(AtomicFile {
            tmp: BufWriter::with_capacity(1 << 20, tmp),
            target,
        })
    }

    /// The path the file will have once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file's current path.
    pub fn temp_path(&self) -> &Path {
        self.tmp.get_ref().path()
    }

    /// Flush, fsync and rename over the target. Any write error still pending is returned here.
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let tmp = self
            .tmp
            .into_inner()
            .map_err(|e| io_error(&target, e.into_error()))?;
        tmp.as_file().sync_all().map_err(|e| io_error(&target, e))?;
        tmp.persist(&target)
            .map_err(|e| io_error(&target, e.error))?;
        // Make the rename itself durable. Best effort: not every file system lets a directory be
        // opened and synced, and the data is already safe.
        #[cfg(unix)]
        if let Some(dir) = target.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
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
