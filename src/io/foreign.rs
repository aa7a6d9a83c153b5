//! Reading other formats' files (Parquet, Feather) with their crates' readers, which can panic on
//! a corrupt file (an offset past a buffer, a dictionary page missing): the panic becomes an
//! error naming the file, as a malformed msgpack input gives one, instead of aborting the command.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use arrow_array::RecordBatch;

use super::BatchIter;
use crate::error::{panic_message, Error, ErrorKind, Result};

/// The error for a reader of `format` that panicked on `path`.
fn corrupt(format: &str, path: &Path, p: &(dyn std::any::Any + Send)) -> Error {
    Error::new(ErrorKind::NotMsgpack(format!(
        "not a valid {format} file (its reader stopped: {})",
        panic_message(p)
    )))
    .in_file(path)
}

/// Run `f` (opening a `format` file), its reader's panic as an error.
pub(crate) fn opened<T>(format: &str, path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(corrupt(format, path, &*p)))
}

/// `batches` of a `format` file, a panic of its reader as the last item (an error).
pub(crate) fn batches(format: &'static str, path: &Path, batches: BatchIter) -> BatchIter {
    Box::new(Guarded {
        format,
        path: path.to_path_buf(),
        inner: Some(batches),
    })
}

struct Guarded {
    format: &'static str,
    path: std::path::PathBuf,
    /// `None` once the reader panicked: its state is not to be trusted after
    inner: Option<BatchIter>,
}

impl Iterator for Guarded {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner.as_mut()?;
        match catch_unwind(AssertUnwindSafe(|| inner.next())) {
            Ok(item) => item,
            Err(p) => {
                self.inner = None;
                Some(Err(corrupt(self.format, &self.path, &*p)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{Field, Schema};

    use crate::io::{open_table, Compression, ReadOptions};

    fn batch() -> RecordBatch {
        let mut emb = FixedSizeListBuilder::new(Float32Builder::new(), 4);
        for i in 0..6 {
            emb.values().append_slice(&[i as f32; 4]);
            emb.append(true);
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..6)),
            Arc::new(StringArray::from(vec!["a", "bb", "a", "ccc", "a", "bb"])),
            Arc::new(emb.finish()),
        ];
        let fields: Vec<Field> = ["id", "s", "emb"]
            .iter()
            .zip(&cols)
            .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
    }

    /// Every one-byte change of a small file (to 0x00, 0x40 and 0xff) reads to batches or to an
    /// error: the crates' readers panic on some of them (a buffer offset past its end, a missing
    /// dictionary page, an overflowing list size), which must not reach the caller.
    #[test]
    fn a_corrupt_parquet_or_feather_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let b = batch();
        let mut files = Vec::new();
        let mut w = crate::io::ipc::ipc_writer(Vec::new(), &b.schema(), Compression::None).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        files.push(("feather", w.into_inner().unwrap()));
        let mut w =
            crate::io::parquet::parquet_writer(Vec::new(), b.schema(), Compression::None).unwrap();
        w.write(&b).unwrap();
        files.push(("parquet", w.into_inner().unwrap()));
        let opts = ReadOptions::default();
        let (mut failed, mut read) = (0, 0);
        for (ext, good) in files {
            let path = dir.path().join(format!("t.{ext}"));
            for at in 0..good.len() {
                for v in [0x00, 0x40, 0xff] {
                    let mut bad = good.clone();
                    bad[at] = v;
                    std::fs::write(&path, &bad).unwrap();
                    let all = std::panic::catch_unwind(|| {
                        open_table(&path, &opts)
                            .and_then(|t| t.batches.collect::<crate::error::Result<Vec<_>>>())
                    })
                    .unwrap_or_else(|_| panic!("{ext}: byte {at} = {v:#x} panicked"));
                    match all {
                        Ok(_) => read += 1,
                        Err(_) => failed += 1,
                    }
                }
            }
        }
        assert!(failed > 100 && read > 0, "{failed} errors, {read} read");
    }
}
