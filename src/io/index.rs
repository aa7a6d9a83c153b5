//! A record index: where each top-level object of a msgpack file starts, in a sidecar beside it
//! (`data.msgpack` → `data.msgpack.offsets`). The format is datadings': big-endian uint64s, one per
//! record and one more for the end, from 0 to the file's size, so a record's bytes are
//! `offsets[i]..offsets[i + 1]`.
//!
//! With an index, a read that starts at row `a` ([`crate::ReaderBuilder::with_skip_rows`]) maps
//! the file and goes straight to byte `offsets[a]` instead of walking the rows before it. Every
//! record it reads is checked against the index first (each must end exactly where the next
//! starts), and an index older than its file (the file was written again after it) is checked
//! against the whole file before it is used: an index that does not match its file is an error
//! naming it, never wrong rows.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::io::atomic::AtomicFile;
use crate::options::Layout;
use crate::read::plan::{plan_first, Container};
use crate::wire::cursor::Cursor;
use crate::ReaderBuilder;

/// What the sidecar's name adds to the data file's.
pub const SUFFIX: &str = ".offsets";

/// The index file of `path`: its name with [`SUFFIX`] added.
pub fn sidecar(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(SUFFIX);
    PathBuf::from(s)
}

fn bad(index: &Path, what: String) -> Error {
    Error::new(ErrorKind::Usage(format!(
        "{}: the record index does not match its file: {what}; delete it (or write the file \
         again with an index) and read again",
        index.display()
    )))
}

/// Where each top-level object of `data` starts, and where the last one ends.
pub fn offsets_of(data: &[u8], max_depth: usize) -> Result<Vec<u64>> {
    let mut c = Cursor::new(data, 0);
    let mut out = vec![0u64];
    while !c.is_empty() {
        c.skip(max_depth)
            .map_err(|e| e.at_record(out.len() as u64 - 1))?;
        out.push(c.pos() as u64);
    }
    Ok(out)
}

/// Write the index of the msgpack file at `path` (atomically, like every output); returns the
/// number of records.
pub fn write_index(path: &Path, fsync: bool) -> Result<usize> {
    let (out, records) = index_file(path, path, fsync)?;
    out.commit()?;
    Ok(records)
}

/// The index of the msgpack file at `read` (an output's temporary file) written for `path`,
/// not yet in place, and the number of records.
fn index_file(read: &Path, path: &Path, fsync: bool) -> Result<(AtomicFile, usize)> {
    let file = std::fs::File::open(read).map_err(|e| Error::from(e).in_file(path))?;
    let len = file
        .metadata()
        .map_err(|e| Error::from(e).in_file(path))?
        .len();
    let offsets = if len == 0 {
        vec![0]
    } else {
        // SAFETY: a read-only map of a file this process just wrote (see `open_input_with`)
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).in_file(path))?;
        offsets_of(&map, crate::read::DEFAULT_MAX_DEPTH).map_err(|e| e.in_file(path))?
    };
    let index = sidecar(path);
    let mut out = AtomicFile::create(&index)?.with_fsync(fsync);
    let mut bytes = Vec::with_capacity(offsets.len() * 8);
    for o in &offsets {
        bytes.extend_from_slice(&o.to_be_bytes());
    }
    out.write_all(&bytes)
        .map_err(|e| Error::from(e).in_file(&index))?;
    out.sync()?;
    Ok((out, offsets.len() - 1))
}

/// The index of a `len`-byte file, if it has one: `None` without a sidecar; an error when the
/// sidecar cannot be an index of it (not whole uint64s, not increasing, past its end).
pub fn load(path: &Path, len: u64) -> Result<Option<Vec<u64>>> {
    let index = sidecar(path);
    let bytes = match std::fs::read(&index) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::from(e).in_file(&index)),
    };
    if bytes.len() % 8 != 0 || bytes.is_empty() {
        return Err(bad(
            &index,
            format!("{} bytes, not a whole number of uint64s", bytes.len()),
        ));
    }
    let offsets: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
        .collect();
    if offsets[0] != 0 {
        return Err(bad(
            &index,
            format!("the first record starts at byte {}, not 0", offsets[0]),
        ));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] <= w[0]) {
        return Err(bad(
            &index,
            format!(
                "record {} ends at byte {}, before it starts",
                i,
                offsets[i + 1]
            ),
        ));
    }
    let last = *offsets.last().expect("not empty");
    if last != len {
        return Err(bad(
            &index,
            format!("it ends at byte {last}, the file at byte {len} (was the file changed?)"),
        ));
    }
    Ok(Some(offsets))
}

/// `offsets` (the index of the file at `path`, as [`load`] read it) checked against `data` when
/// the file was modified after its index was written: every boundary, by walking the file (what
/// a read without an index costs). A file of the same length whose records moved (rewritten in
/// place, a copy put over it) would otherwise be read from the wrong byte, giving shifted rows.
/// An index as new as its file is trusted for the rows before a read's window.
pub(crate) fn check_not_stale(
    path: &Path,
    data: &[u8],
    offsets: &[u64],
    max_depth: usize,
) -> Result<()> {
    let index = sidecar(path);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(path), modified(&index)) {
        (Some(file), Some(idx)) if file <= idx => return Ok(()),
        _ => {}
    }
    let actual = offsets_of(data, max_depth).map_err(|e| e.in_file(path))?;
    match actual.iter().zip(offsets).position(|(a, b)| a != b) {
        None if actual.len() == offsets.len() => Ok(()),
        Some(i) => Err(bad(
            &index,
            format!(
                "record {i} starts at byte {}, the index (older than the file) says {}",
                actual[i], offsets[i]
            ),
        )),
        None => Err(bad(
            &index,
            format!(
                "the file holds {} records, the index (older than the file) {}",
                actual.len() - 1,
                offsets.len() - 1
            ),
        )),
    }
}

/// The layout a file with this index is read in, when the index can take a read to a row: a
/// stream of at least two records or values (one object, or a columns map, has no rows of its
/// own to jump to).
pub(crate) fn indexed_layout(b: &ReaderBuilder, data: &[u8], offsets: &[u64]) -> Option<Layout> {
    if offsets.len() < 3 {
        return None;
    }
    match plan_first(b, data, false) {
        Ok(Some(p)) if p.container == Container::Stream && p.layout != Layout::Columns => {
            Some(p.layout)
        }
        _ => None,
    }
}

impl ReaderBuilder {
    /// A file (mapped, or read whole) with an index, read in `layout` from row
    /// [`ReaderBuilder::skip_rows`] on: the bytes of the rows asked for, checked record by record
    /// against the index first.
    pub(crate) fn build_indexed(
        self,
        map: arrow_buffer::Buffer,
        mapped: bool,
        offsets: &[u64],
        index: &Path,
        layout: Layout,
    ) -> Result<crate::Reader> {
        let records = offsets.len() - 1;
        let from = self.skip_rows().min(records);
        let to = self
            .n_rows()
            .map_or(records, |n| from.saturating_add(n).min(records));
        for i in from..to {
            let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
            let mut c = Cursor::new(&map[a..b], a as u64);
            c.skip(self.max_depth()).map_err(|e| {
                bad(
                    index,
                    format!("record {i} (bytes {a}..{b}) is not one msgpack object: {e}"),
                )
            })?;
            if !c.is_empty() {
                let end = a + c.pos();
                return Err(bad(
                    index,
                    format!("record {i} ends at byte {end}, the index says {b}"),
                ));
            }
        }
        let (a, b) = (offsets[from] as usize, offsets[to] as usize);
        let buf = map.slice_with_length(a, b - a);
        let me = self.with_layout(layout).with_skip_rows(0);
        // (a mapped file's pages are dropped behind the decoder; dropped heap pages read as zeros)
        let me = if mapped { me.releasing_input() } else { me };
        me.build_from_buffer(buf)
    }
}

/// Whether an output at `path` in `format` can have an index: a local file of uncompressed
/// msgpack.
fn indexable(path: &Path, format: super::Format, compressed: bool) -> bool {
    format == super::Format::Msgpack && !compressed && !super::is_url(path)
}

/// Put the output `file` (written for `path`, complete) in place with its index: written when
/// asked (`requested`), or when the file it replaces had one (an index left describing the old
/// file would be wrong). The index is made from the temporary file first, so a failure (a full
/// disk) leaves the previous file and index as they were; then both are renamed into place.
/// Only a plain local msgpack file has one; asking for it elsewhere is an error the caller
/// reports before writing ([`check_indexable`]).
pub fn commit_with_index(
    mut file: super::atomic::Output,
    path: &Path,
    format: super::Format,
    compressed: bool,
    requested: bool,
) -> Result<()> {
    let index = match file.as_file_mut() {
        Some(f) if indexable(path, format, compressed) && (requested || sidecar(path).exists()) => {
            f.sync()?; // (its bytes flushed, to be read back)
            Some(index_file(f.temp_path(), path, f.fsyncs())?.0)
        }
        _ => None,
    };
    file.commit()?;
    match index {
        Some(i) => i.commit(),
        None => Ok(()),
    }
}

/// An index can be written for an output at `path` in `format`, or a usage error saying why not.
pub fn check_indexable(path: &Path, format: super::Format, compressed: bool) -> Result<()> {
    if !indexable(path, format, compressed) {
        return Err(Error::new(ErrorKind::Usage(format!(
            "{}: a record index is written for local, uncompressed msgpack outputs only",
            path.display()
        ))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_where_top_level_objects_start_then_the_end() {
        // 1, 2, [3], {"a": nil}: 1 + 1 + 2 + 4 bytes by the msgpack spec
        let data = [0x01, 0x02, 0x91, 0x03, 0x81, 0xa1, b'a', 0xc0];
        assert_eq!(offsets_of(&data, 8).unwrap(), vec![0, 1, 2, 4, 8]);
        // cut inside the last object: an error naming it
        let e = offsets_of(&data[..7], 8).unwrap_err();
        assert!(e.to_string().contains("record 3"), "{e}");
    }

    #[test]
    fn an_index_older_than_its_file_is_checked_against_all_of_it() {
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.msgpack");
        // 1, 2, [3]: records at 0, 1, 2; the index misses the boundary at byte 1
        std::fs::write(&p, [0x01, 0x02, 0x91, 0x03]).unwrap();
        let put = |v: &[u64]| {
            let b: Vec<u8> = v.iter().flat_map(|o| o.to_be_bytes()).collect();
            std::fs::write(sidecar(&p), b).unwrap();
        };
        let touch = |later: bool| {
            let t = std::fs::metadata(sidecar(&p)).unwrap().modified().unwrap();
            let t = if later {
                t + Duration::from_secs(10)
            } else {
                t - Duration::from_secs(10)
            };
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.set_modified(t).unwrap();
        };
        let data = std::fs::read(&p).unwrap();
        put(&[0, 2, 4]);
        touch(false);
        check_not_stale(&p, &data, &[0, 2, 4], 8).unwrap();
        touch(true);
        let e = check_not_stale(&p, &data, &[0, 2, 4], 8)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("record 1 starts at byte 1") && e.contains("d.msgpack.offsets"),
            "{e}"
        );
        // what a read from row 2 gives: the error, not the row [3] as row 1 of a shifted file
        let Err(e) = ReaderBuilder::new().with_skip_rows(1).build_from_path(&p) else {
            panic!("a stale index is refused");
        };
        let e = e.to_string();
        assert!(e.contains("older than the file"), "{e}");
        put(&[0, 1, 2, 4]);
        touch(true);
        check_not_stale(&p, &data, &[0, 1, 2, 4], 8).unwrap();
    }

    #[test]
    fn a_sidecar_that_cannot_describe_the_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.msgpack");
        std::fs::write(&p, [0x01, 0x02, 0x03]).unwrap();
        assert_eq!(load(&p, 3).unwrap(), None);
        let put = |v: &[u64]| {
            let b: Vec<u8> = v.iter().flat_map(|o| o.to_be_bytes()).collect();
            std::fs::write(sidecar(&p), b).unwrap();
        };
        put(&[0, 1, 2, 3]);
        assert_eq!(load(&p, 3).unwrap(), Some(vec![0, 1, 2, 3]));
        for (bad_index, says) in [
            (&[0u64, 2, 1, 3][..], "before it starts"),
            (&[1, 2, 3][..], "not 0"),
            (&[0, 1, 2][..], "the file at byte 3"),
        ] {
            put(bad_index);
            let e = load(&p, 3).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("d.msgpack.offsets"), "{e}");
        }
        std::fs::write(sidecar(&p), [0u8; 12]).unwrap();
        assert!(load(&p, 3).unwrap_err().to_string().contains("12 bytes"));
    }
}
