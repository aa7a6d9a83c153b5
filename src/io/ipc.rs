//! Feather v2 / Arrow IPC: the file format for output; the file or the stream format for input.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_ipc::reader::{FileReader, StreamReader};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::CompressionType;
use arrow_schema::{Schema, SchemaRef};

use crate::error::{Error, ErrorKind, Result};
use crate::io::compress::io_error;
use crate::io::{projection_indices, sorted_projection, BatchIter, Compression, Units};

/// Write options for `compression`: none, zstd (with its level) or lz4 (frame). Snappy is not an
/// IPC codec.
pub fn write_options(compression: Compression) -> Result<IpcWriteOptions> {
    let o = IpcWriteOptions::default();
    Ok(match compression {
        Compression::None => o,
        Compression::Zstd(level) => o
            .try_with_compression(Some(CompressionType::ZSTD))?
            .try_with_compression_level(Some(level))?,
        Compression::Lz4 => o.try_with_compression(Some(CompressionType::LZ4_FRAME))?,
        Compression::Snappy => {
            return Err(Error::new(ErrorKind::Unsupported(
                "Feather/Arrow IPC files have no snappy compression; use zstd, lz4 or none".into(),
            )))
        }
    })
}

/// An Arrow IPC file (Feather v2) writer for `schema`. Call `write` per batch and `finish` at the
/// end. Buffers are 64-byte aligned, so readers can map the file without copying.
pub fn ipc_writer<W: Write>(
    w: W,
    schema: &Schema,
    compression: Compression,
) -> Result<FileWriter<W>> {
    Ok(FileWriter::try_new_with_options(
        w,
        schema,
        write_options(compression)?,
    )?)
}

/// Open an Arrow IPC file (magic `ARROW1`) or stream: its schema and its batches.
pub fn read_ipc(path: &Path) -> Result<(SchemaRef, BatchIter)> {
    let (schema, batches, _) = read_ipc_with(path, None)?;
    Ok((schema, batches))
}

/// [`read_ipc`] keeping only `columns`, in that order. Also returns the batch count when the file
/// format tells it.
pub(crate) fn read_ipc_with(
    path: &Path,
    columns: Option<&[String]>,
) -> Result<(SchemaRef, BatchIter, Option<Units>)> {
    let mut file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut magic = [0u8; 6];
    let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, e))?;

    // The full schema first, to resolve column names to indices.
    let (full, n_batches) = if is_file {
        let r =
            FileReader::try_new_buffered(file.try_clone().map_err(|e| io_error(path, e))?, None)?;
        (r.schema(), Some(r.num_batches() as u64))
    } else {
        let r =
            StreamReader::try_new_buffered(file.try_clone().map_err(|e| io_error(path, e))?, None)?;
        (r.schema(), None)
    };
    let units = n_batches.map(Units::Batches);
    let (projection, reorder, schema) = match columns {
        None => (None, None, full),
        Some(cols) => {
            let indices = projection_indices(&full, cols)?;
            let (sorted, reorder) = sorted_projection(&indices);
            (
                Some(sorted),
                Some(reorder),
                Arc::new(full.project(&indices)?),
            )
        }
    };
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, e))?;
    let batches: BatchIter = if is_file {
        Box::new(FileReader::try_new_buffered(file, projection)?.map(|b| b.map_err(Error::from)))
    } else {
        Box::new(
            StreamReader::try_new(BufReader::new(file), projection)?
                .map(|b| b.map_err(Error::from)),
        )
    };
    let batches: BatchIter = match reorder {
        None => batches,
        Some(reorder) => {
            let out = schema.clone();
            Box::new(batches.map(move |b| Ok(b?.project(&reorder)?.with_schema(out.clone())?)))
        }
    };
    Ok((schema, batches, units))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use arrow_array::{ArrayRef, Float16Array, Int64Array, RecordBatch, StringArray};
    use arrow_ipc::writer::StreamWriter;
    use arrow_schema::{DataType, Field};

    fn batch() -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("h", DataType::Float16, true).with_metadata(HashMap::from([(
                "msgpack_numpy.dtype".into(),
                ">f2".into(),
            )])),
            Field::new("s", DataType::Utf8, true),
        ]);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(Float16Array::from_iter_values(
                [0.5, 1.0, 1.5].map(half::f16::from_f32),
            )),
            Arc::new(StringArray::from(vec![Some("a"), None, Some("ccc")])),
        ];
        RecordBatch::try_new(Arc::new(schema), cols).unwrap()
    }

    #[test]
    fn file_round_trip_all_codecs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.feather");
        let b = batch();
        for c in [Compression::None, Compression::Zstd(3), Compression::Lz4] {
            let mut w = ipc_writer(File::create(&path).unwrap(), &b.schema(), c).unwrap();
            w.write(&b).unwrap();
            w.write(&b.slice(1, 2)).unwrap();
            w.finish().unwrap();
            let (schema, batches, units) = read_ipc_with(&path, None).unwrap();
            assert_eq!(schema, b.schema());
            assert!(matches!(units, Some(Units::Batches(2))));
            let got: Vec<_> = batches.collect::<Result<_>>().unwrap();
            assert_eq!(got, [b.clone(), b.slice(1, 2)]);
        }
        let e = ipc_writer(Vec::new(), &b.schema(), Compression::Snappy)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("snappy"), "{e}");
    }

    #[test]
    fn stream_format_and_projection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.arrows");
        let b = batch();
        let mut w = StreamWriter::try_new(File::create(&path).unwrap(), &b.schema()).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        let cols = vec!["s".to_string(), "id".to_string()];
        let (schema, batches, units) = read_ipc_with(&path, Some(&cols)).unwrap();
        assert!(units.is_none());
        assert_eq!(schema.field(0).name(), "s");
        let got: Vec<_> = batches.collect::<Result<_>>().unwrap();
        assert_eq!(got, [b.project(&[2, 0]).unwrap()]);
    }

    #[test]
    fn garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.arrow");
        std::fs::write(&path, b"ARROW1 garbage").unwrap();
        assert!(read_ipc(&path).is_err());
        std::fs::write(&path, b"").unwrap();
        assert!(read_ipc(&path).is_err());
    }
}
