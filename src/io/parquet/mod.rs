//! Parquet output and input through the `parquet` crate's Arrow writer and reader.
//!
//! The writer keeps the embedded `ARROW:schema` metadata (the parquet crate's default, never turned
//! off here): it is what brings FixedSizeList, Float16 and the field metadata (numpy dtypes) back on
//! reading, in arrow-rs, pyarrow and polars alike.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowSchemaConverter;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression as PqCompression, ZstdLevel};
use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};

use crate::error::Result;
use crate::io::compress::io_error;
use crate::io::{projection_indices, sorted_projection, BatchIter, Compression};

mod dense_leaf;
mod dictionary;
mod writer;
mod zstd_pages;
pub use writer::{ParquetWriter, MAX_ROW_GROUP_ROWS};

/// A row group is flushed once its size passes this, so that wide tensor columns do not buffer
/// the default million rows (gigabytes) in memory, and row groups can be encoded in parallel.
/// 16 MiB rather than 32: a 40 MB single-column table is three groups, not one of 32 MB and one
/// of 8 on two threads (its convert 104 -> 78 ms); the embedding table's peak 278 -> 198 MiB, its
/// file 0.01% smaller (whole CLI converts, median of 9 alternating runs).
pub const MAX_ROW_GROUP_BYTES: usize = 16 << 20;

/// Writer properties for `compression` (see [`parquet_writer`]).
pub fn writer_properties(compression: Compression) -> Result<WriterProperties> {
    Ok(properties_builder(compression)?.build())
}

/// [`writer_properties`] for a table of `schema`:
/// - f32 and f64 columns are written without a dictionary. Their values rarely repeat, so the
///   dictionary is built for a page, found too big and dropped, in every column chunk: wasted
///   time, and bigger files (as Polars also decides);
/// - f16 columns too. Their dictionary (at most 65,536 values) always fits, but for data that is
///   not quantised its indices take the 2 bytes the values take, and hashing every value was
///   most of the encode. Polars writes f16 plain as well;
/// - the elements of numeric tensor columns (FixedSizeLists, nested or not, of f16, f32, f64,
///   i32 or i64) get no statistics: no min/max, null count or page index. A
///   minimum and maximum over every element of every row's tensor prunes nothing, and computing
///   them per value was a fifth of the encode of a float16 tensor column. The tensor column's
///   rows still say which are null.
pub fn writer_properties_for(
    schema: &Schema,
    compression: Compression,
) -> Result<WriterProperties> {
    let mut b = properties_builder(compression)?;
    let descr = ArrowSchemaConverter::new().convert(schema)?;
    for (leaf, col) in descr.columns().iter().enumerate() {
        let float = matches!(
            col.physical_type(),
            PhysicalType::FLOAT | PhysicalType::DOUBLE
        ) || matches!(col.logical_type_ref(), Some(LogicalType::Float16));
        if float {
            b = b.set_column_dictionary_enabled(col.path().clone(), false);
        }
        let field = schema.fields().get(descr.get_column_root_idx(leaf));
        if field.is_some_and(|f| dense_leaf::tensor_dims(f).is_some()) {
            b = b.set_column_statistics_enabled(col.path().clone(), EnabledStatistics::None);
        }
    }
    Ok(b.build())
}

fn properties_builder(compression: Compression) -> Result<WriterPropertiesBuilder> {
    let c = match compression {
        Compression::None => PqCompression::UNCOMPRESSED,
        Compression::Zstd(level) => PqCompression::ZSTD(ZstdLevel::try_new(level)?),
        Compression::Snappy => PqCompression::SNAPPY,
        Compression::Lz4 => PqCompression::LZ4_RAW,
    };
    Ok(WriterProperties::builder()
        .set_compression(c)
        .set_max_row_group_bytes(Some(MAX_ROW_GROUP_BYTES))
        // a column `dictionary` keeps a dictionary for holds few distinct values, but they may be
        // long: 1,000 distinct 1.5 KB strings passed the crate's 1 MiB limit, and every chunk fell
        // back to plain pages (a file 55 times polars'). A dictionary is at most its row group.
        .set_dictionary_page_size_limit(MAX_ROW_GROUP_BYTES))
}

/// A Parquet writer for `schema` (default compression: zstd level 3). Row groups hold at most
/// 1,048,576 rows or [`MAX_ROW_GROUP_BYTES`]. Call `write` per batch and `close` at the end.
pub fn parquet_writer<W: Write + Send>(
    w: W,
    schema: SchemaRef,
    compression: Compression,
) -> Result<ArrowWriter<W>> {
    Ok(ArrowWriter::try_new(
        w,
        schema,
        Some(writer_properties(compression)?),
    )?)
}

/// Open a Parquet file: its Arrow schema (restored from the embedded `ARROW:schema`) and its batches.
pub fn read_parquet(path: &Path) -> Result<(SchemaRef, BatchIter)> {
    let (schema, batches, _) = read_parquet_with(path, None, 65536, 16 << 20)?;
    Ok((schema, batches))
}

/// [`read_parquet`] keeping only `columns` (in that order), with at most `batch_size` rows and
/// about `batch_bytes` of data per batch (from the column chunks' uncompressed sizes, or their
/// strings' decoded bytes where larger: 65,536 rows of a 3 KB tensor are 200 MB, a batch that
/// made a convert hold 700 MB at once).
/// Also returns the file's row count.
pub fn read_parquet_with(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    batch_bytes: usize,
) -> Result<(SchemaRef, BatchIter, u64)> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    // (metadata shared by many fields is in the file once: back on each of them)
    let shared = crate::types::shared_metadata::expand(builder.schema()).map(std::sync::Arc::new);
    let full = shared.clone().unwrap_or_else(|| builder.schema().clone());
    let indices = columns.map(|c| projection_indices(&full, c)).transpose()?;
    let per_row = {
        let md = builder.metadata();
        let descr = md.file_metadata().schema_descr();
        let bytes: i64 = md
            .row_groups()
            .iter()
            .flat_map(|g| g.columns().iter().enumerate())
            .filter(|(leaf, _)| {
                let root = descr.get_column_root_idx(*leaf);
                indices.as_ref().is_none_or(|i| i.contains(&root))
            })
            // a dictionary-encoded string column decodes to more than its pages: its values'
            // bytes (where the writer recorded them) and offsets
            .map(|(_, c)| {
                let decoded = c
                    .unencoded_byte_array_data_bytes()
                    .map_or(0, |b| b.saturating_add(c.num_values().saturating_mul(4)));
                c.uncompressed_size().max(decoded).max(0)
            })
            .sum();
        (bytes.max(0) as u64 / rows.max(1)).max(1)
    };
    let by_bytes = usize::try_from(batch_bytes.max(1) as u64 / per_row).unwrap_or(usize::MAX);
    let builder = builder.with_batch_size(batch_size.min(by_bytes).max(1));
    let Some(indices) = indices else {
        let reader = builder.build()?;
        let Some(out) = shared else {
            return Ok((full, Box::new(reader.map(|b| b.map_err(Into::into))), rows));
        };
        let batches = reader.map(move |b| Ok(b?.with_schema(out.clone())?));
        return Ok((full, Box::new(batches), rows));
    };
    let (sorted, reorder) = sorted_projection(&indices);
    let mask = ProjectionMask::roots(builder.parquet_schema(), sorted.iter().copied());
    let reader = builder.with_projection(mask).build()?;
    let schema = std::sync::Arc::new(full.project(&indices)?);
    let out = schema.clone();
    let batches = reader.map(move |b| {
        let b = b?.project(&reorder)?;
        // The projected batch has the right columns; give it the schema (with metadata) asked for.
        Ok(b.with_schema(out.clone())?)
    });
    Ok((schema, Box::new(batches), rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::{
        Array, ArrayRef, FixedSizeListArray, Float16Array, Float32Array, Int64Array, RecordBatch,
        StringArray,
    };
    use arrow_schema::{DataType, Field, Schema};

    fn table() -> RecordBatch {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let fsl = FixedSizeListArray::try_new(
            item,
            3,
            Arc::new(Float32Array::from_iter_values((0..12).map(|i| i as f32))),
            None,
        )
        .unwrap();
        let md = HashMap::from([("msgpack_numpy.dtype".to_string(), ">f4".to_string())]);
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("emb", fsl.data_type().clone(), true).with_metadata(md),
            Field::new("h", DataType::Float16, true),
            Field::new("s", DataType::Utf8, true),
        ])
        .with_metadata(HashMap::from([(
            "msgpack_arrow.layout".into(),
            "records".into(),
        )]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2, 3, 4])),
            Arc::new(fsl),
            Arc::new(Float16Array::from_iter_values(
                [0.5, 1.0, 1.5, 2.0].map(half::f16::from_f32),
            )),
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some("ccc"),
                Some(""),
            ])),
        ];
        RecordBatch::try_new(Arc::new(schema), cols).unwrap()
    }

    #[test]
    fn round_trip_keeps_types_and_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let batch = table();
        for c in [
            Compression::Zstd(3),
            Compression::Snappy,
            Compression::Lz4,
            Compression::None,
        ] {
            let mut w = parquet_writer(File::create(&path).unwrap(), batch.schema(), c).unwrap();
            w.write(&batch).unwrap();
            w.write(&batch.slice(1, 2)).unwrap();
            w.close().unwrap();

            let (schema, batches) = read_parquet(&path).unwrap();
            assert_eq!(schema.fields(), batch.schema().fields(), "{c:?}");
            assert_eq!(
                schema.metadata().get("msgpack_arrow.layout").unwrap(),
                "records"
            );
            let got: Vec<_> = batches.collect::<Result<_>>().unwrap();
            let got = arrow_select::concat::concat_batches(&schema, &got).unwrap();
            let want = arrow_select::concat::concat_batches(
                &batch.schema(),
                &[batch.clone(), batch.slice(1, 2)],
            )
            .unwrap();
            assert_eq!(got.columns(), want.columns());
        }
    }

    #[test]
    fn projection_in_asked_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let batch = table();
        let mut w = parquet_writer(
            File::create(&path).unwrap(),
            batch.schema(),
            Compression::default(),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let cols = vec!["s".to_string(), "emb".to_string()];
        let (schema, batches, rows) = read_parquet_with(&path, Some(&cols), 3, usize::MAX).unwrap();
        assert_eq!(rows, 4);
        assert_eq!(schema.field(0).name(), "s");
        assert_eq!(
            schema
                .field(1)
                .metadata()
                .get("msgpack_numpy.dtype")
                .unwrap(),
            ">f4"
        );
        let got: Vec<_> = batches.collect::<Result<_>>().unwrap();
        assert_eq!(got.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(got[0].column(1), &batch.column(1).slice(0, 3));
        let e = read_parquet_with(&path, Some(&["nope".to_string()]), 3, usize::MAX)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("\"nope\" not found"), "{e}");
    }

    /// Wide rows come in batches of about `batch_bytes`, not of `batch_size` rows: 2,000 rows of
    /// a 4 KiB tensor in 256 KiB batches; a projection to the narrow column alone counts its
    /// bytes only.
    #[test]
    fn batches_of_wide_rows_are_bounded_in_bytes() {
        use arrow_array::{FixedSizeListArray, Float32Array, Int64Array};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wide.parquet");
        let n = 2000usize;
        let item = Arc::new(arrow_schema::Field::new(
            "item",
            arrow_schema::DataType::Float32,
            true,
        ));
        let emb = FixedSizeListArray::new(
            item,
            1024,
            Arc::new(Float32Array::from_iter_values(
                (0..n * 1024).map(|i| i as f32),
            )),
            None,
        );
        let t = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef,
            ),
            ("emb", Arc::new(emb) as ArrayRef),
        ])
        .unwrap();
        let mut w =
            parquet_writer(File::create(&path).unwrap(), t.schema(), Compression::None).unwrap();
        w.write(&t).unwrap();
        w.close().unwrap();
        let (_, batches, rows) = read_parquet_with(&path, None, 65536, 256 << 10).unwrap();
        assert_eq!(rows, n as u64);
        let got: Vec<RecordBatch> = batches.collect::<Result<_>>().unwrap();
        assert!(got.len() >= 30, "{} batches", got.len());
        assert!(
            got.iter().all(|b| b.num_rows() <= 64),
            "{:?}",
            got.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
        );
        let back = arrow_select::concat::concat_batches(&t.schema(), &got).unwrap();
        assert_eq!(back, t);
        let ids = vec!["id".to_string()];
        let (_, batches, _) = read_parquet_with(&path, Some(&ids), 65536, 256 << 10).unwrap();
        let got: Vec<RecordBatch> = batches.collect::<Result<_>>().unwrap();
        assert_eq!(got.len(), 1);
    }

    /// Long strings that repeat are a small dictionary in the file but their whole bytes once
    /// read: batches are bounded by the decoded bytes (4,000 rows of 1 KiB strings, ten distinct).
    #[test]
    fn batches_of_repeated_long_strings_are_bounded_by_their_decoded_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strings.parquet");
        let n = 4000usize;
        let words: Vec<String> = (0..10).map(|i| format!("{i}").repeat(1024)).collect();
        let t = RecordBatch::try_from_iter([(
            "s",
            Arc::new(arrow_array::StringArray::from_iter_values(
                (0..n).map(|i| words[i % 10].as_str()),
            )) as ArrayRef,
        )])
        .unwrap();
        let mut w = parquet_writer(
            File::create(&path).unwrap(),
            t.schema(),
            Compression::default(),
        )
        .unwrap();
        w.write(&t).unwrap();
        w.close().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() < 100_000);
        let (_, batches, _) = read_parquet_with(&path, None, 65536, 256 << 10).unwrap();
        let got: Vec<RecordBatch> = batches.collect::<Result<_>>().unwrap();
        assert!(
            got.iter().all(|b| b.num_rows() <= 256),
            "{:?}",
            got.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
        );
        let back = arrow_select::concat::concat_batches(&t.schema(), &got).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn not_parquet_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        std::fs::write(&path, b"PAR1 but not really").unwrap();
        assert!(read_parquet(&path).is_err());
    }
}
