//! Parquet output encoded in parallel: whole row groups are encoded on the thread pool (each
//! group's columns in parallel too) while the caller decodes the next batches, and the encoded
//! column chunks are appended to the file in order.
//!
//! Why not `ArrowWriter`: it encodes and compresses on the caller's thread, one column after the
//! other, so a table whose bytes are one tensor column uses one core for the whole file. Each
//! column chunk here is encoded as its writer would encode the same rows (same pages, levels and
//! encodings), and the file carries the same embedded `ARROW:schema`; row groups end at
//! 1,048,576 rows or [`MAX_ROW_GROUP_BYTES`] of Arrow data (its writer counts encoded bytes).
//! Flat integer and string chunks of mostly distinct values are written without a dictionary,
//! decided per row group ([`super::dictionary`]), where its writer starts every chunk with one.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression as PqCompression, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, ColumnPath, SchemaDescriptor};
use rayon::prelude::*;

use super::{dense_leaf, dictionary, writer_properties_for, MAX_ROW_GROUP_BYTES};
use crate::error::{Error, Result};
use crate::io::Compression;
use crate::types::arrow::column_bytes;

/// Rows a row group holds at most (the parquet crate's default).
pub const MAX_ROW_GROUP_ROWS: usize = 1024 * 1024;

/// Arrow bytes of row groups being encoded at once, at most (whatever the core count).
const MAX_IN_FLIGHT_BYTES: usize = 512 << 20;

/// Arrow bytes a row group holds at most (or its byte bound where that is more), however little
/// its columns weigh ([`dictionary::weighed_bytes`]: long texts that repeat).
const MAX_RAW_GROUP_BYTES: usize = 128 << 20;

/// Arrow bytes a row group's column chunk gets at least, where the columns are many: 2,000
/// columns of a sparse table in 16 MiB groups were 1,000-row chunks (40,000 of them, each paying
/// a compressor and its metadata; 1.7× polars' time and a third more bytes).
const MIN_CHUNK_BYTES: usize = 64 << 10;

/// The row group size for a table of `leaves` leaf columns: [`MAX_ROW_GROUP_BYTES`], or
/// [`MIN_CHUNK_BYTES`] a column where that is more, up to 128 MiB.
fn group_bytes_for(leaves: usize) -> usize {
    leaves
        .saturating_mul(MIN_CHUNK_BYTES)
        .clamp(MAX_ROW_GROUP_BYTES, 128 << 20)
}

type Encoded = parquet::errors::Result<Vec<Chunk>>;

/// A Parquet writer that encodes row groups in parallel. `write` batches, then `finish`.
pub struct ParquetWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    group: Arc<GroupEncoder>,
    /// rows of the row group being gathered
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    /// the gathered rows' bytes as they weigh in a row group, and as Arrow data
    pending_bytes: usize,
    pending_raw: usize,
    /// row groups being encoded, oldest first, with their Arrow bytes
    in_flight: VecDeque<(Receiver<Encoded>, usize)>,
    threads: usize,
    groups: usize,
    group_bytes: usize,
}

impl<W: Write + Send> std::fmt::Debug for ParquetWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetWriter")
            .field("row_groups", &self.groups)
            .field("in_flight", &self.in_flight.len())
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> ParquetWriter<W> {
    /// A writer of `schema` into `w`, compressed with `compression` (zstd level 3 by default).
    pub fn try_new(w: W, schema: SchemaRef, compression: Compression) -> Result<Self> {
        let props = writer_properties_for(&schema, compression)?;
        // the embedded Arrow schema with the metadata most fields share written once
        let embedded = crate::types::shared_metadata::compact(&schema)
            .map(Arc::new)
            .unwrap_or_else(|| schema.clone());
        let (file, factory) =
            ArrowWriter::try_new(w, embedded, Some(props))?.into_serialized_writer()?;
        let leaves = file.schema_descr().num_columns();
        let group = Arc::new(GroupEncoder::new(
            factory,
            file.schema_descr(),
            file.properties().clone(),
            schema,
        )?);
        Ok(ParquetWriter {
            file,
            group,
            pending: Vec::new(),
            pending_rows: 0,
            pending_bytes: 0,
            pending_raw: 0,
            in_flight: VecDeque::new(),
            threads: rayon::current_num_threads().max(1),
            groups: 0,
            group_bytes: group_bytes_for(leaves),
        })
    }

    /// Row groups end once they hold this many bytes of Arrow data (default
    /// [`MAX_ROW_GROUP_BYTES`], more for tables of many columns: `group_bytes_for`).
    pub fn with_max_row_group_bytes(mut self, n: usize) -> Self {
        self.group_bytes = n.max(1);
        self
    }

    /// Whether a row group of `raw` Arrow bytes must wait for the oldest one in flight: row
    /// groups are encoded one per thread and one more (so the caller decodes meanwhile), within
    /// [`MAX_IN_FLIGHT_BYTES`].
    fn must_wait(&self, raw: usize) -> bool {
        let held: usize = self.in_flight.iter().map(|(_, b)| b).sum();
        !self.in_flight.is_empty()
            && (self.in_flight.len() > self.threads || held + raw > MAX_IN_FLIGHT_BYTES)
    }

    /// Add the rows of `b`; full row groups go to be encoded.
    pub fn write(&mut self, b: &RecordBatch) -> Result<()> {
        if b.num_rows() == 0 {
            return Ok(());
        }
        // a Parquet row group counts its rows in its column chunks: without a column they would
        // be written as none, silently
        if b.num_columns() == 0 {
            return Err(crate::io::rows_without_columns("Parquet", b.num_rows()));
        }
        // Checked here, not on the encoding threads, where a mismatch would be found too late.
        // Nested field names may differ ("item", "element"): the file's own are written.
        let ours = self.group.schema.fields();
        let same = b.num_columns() == ours.len()
            && ours
                .iter()
                .zip(b.columns())
                .all(|(f, c)| f.data_type().equals_datatype(c.data_type()));
        if !same {
            return Err(Error::from(ParquetError::General(format!(
                "a batch of columns {:?} written to a Parquet file of columns {:?}",
                b.schema()
                    .fields()
                    .iter()
                    .map(|f| f.data_type())
                    .collect::<Vec<_>>(),
                ours.iter().map(|f| f.data_type()).collect::<Vec<_>>()
            ))));
        }
        // the batch's bytes (as Arrow data, and as they weigh in a row group), measured once,
        // shared evenly among its rows
        let (mut raw, mut weighed) = (0, 0);
        for c in b.columns() {
            let r = column_bytes(c.as_ref());
            raw += r;
            weighed += dictionary::weighed_bytes(c.as_ref(), r);
        }
        let per_row = (weighed / b.num_rows()).max(1);
        let per_row_raw = (raw / b.num_rows()).max(1);
        let raw_cap = MAX_RAW_GROUP_BYTES.max(self.group_bytes);
        let mut rest = b.clone();
        while rest.num_rows() > 0 {
            let rows = rest.num_rows();
            let room_rows = MAX_ROW_GROUP_ROWS - self.pending_rows;
            let room_bytes = (self.group_bytes.saturating_sub(self.pending_bytes) / per_row)
                .min(raw_cap.saturating_sub(self.pending_raw) / per_row_raw);
            let take = rows.min(room_rows).min(room_bytes.max(1));
            let part = rest.slice(0, take);
            self.pending_bytes += take * per_row;
            self.pending_raw += take * per_row_raw;
            self.pending_rows += take;
            self.pending.push(part);
            rest = rest.slice(take, rows - take);
            if self.pending_rows >= MAX_ROW_GROUP_ROWS
                || self.pending_bytes >= self.group_bytes
                || self.pending_raw >= raw_cap
                || rest.num_rows() > 0
            {
                self.dispatch()?;
            }
        }
        Ok(())
    }

    /// Send the gathered rows to be encoded as the next row group.
    fn dispatch(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let raw = self.pending_raw;
        while self.must_wait(raw) {
            self.append_oldest()?;
        }
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        self.pending_bytes = 0;
        self.pending_raw = 0;
        let (group, index) = (self.group.clone(), self.groups);
        self.groups += 1;
        let (tx, rx) = sync_channel(1);
        if rayon::current_thread_index().is_some() {
            // Already on the pool (files converted in parallel, one per worker): waiting there for
            // a job queued behind every busy worker would deadlock. Encode here; the group's
            // columns still go to the pool, which lends waiting workers other work.
            let _ = tx.send(group.encode(index, &batches));
        } else {
            rayon::spawn(move || {
                let _ = tx.send(group.encode(index, &batches));
            });
        }
        self.in_flight.push_back((rx, raw));
        Ok(())
    }

    /// Wait for the oldest row group in flight and append it to the file.
    fn append_oldest(&mut self) -> Result<()> {
        let Some((rx, _)) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let chunks = rx
            .recv()
            .map_err(|_| Error::from(std::io::Error::other("a Parquet encoding thread ended")))??;
        let mut group = self.file.next_row_group()?;
        for c in chunks {
            match c {
                Chunk::Arrow(c) => c.append_to_row_group(&mut group)?,
                Chunk::Dense(bytes, close) => group.append_column(&bytes, close)?,
            }
        }
        group.close()?;
        Ok(())
    }

    /// Encode what is left, write the footer, and return the sink.
    pub fn finish(mut self) -> Result<W> {
        self.dispatch()?;
        while !self.in_flight.is_empty() {
            self.append_oldest()?;
        }
        Ok(self.file.into_inner()?)
    }
}

/// A leaf column chunk of a row group, encoded.
enum Chunk {
    Arrow(ArrowColumnChunk),
    /// a leaf encoded by [`dense_leaf::encode`]: its bytes, from offset 0
    Dense(Bytes, ColumnCloseResult),
}

/// What encoding a row group needs, shared by the threads that encode them.
struct GroupEncoder {
    factory: ArrowRowGroupWriterFactory,
    /// writers without a dictionary for the fields [`dictionary`] decides for (`decides`), whose
    /// row groups choose between the two
    plain_factory: Option<ArrowRowGroupWriterFactory>,
    decides: Vec<bool>,
    /// the file's leaf columns, in order
    leaves: Vec<ColumnDescPtr>,
    /// how many leaf columns each field has (a nested field has several), and the first
    leaf_counts: Vec<usize>,
    first_leaf: Vec<usize>,
    props: WriterPropertiesPtr,
    /// zstd: the level, and `props` without compression for the column writers of
    /// [`dense_leaf`], whose pages [`super::zstd_pages`] compresses
    zstd: Option<(ZstdLevel, WriterPropertiesPtr)>,
    schema: SchemaRef,
}

/// A field's column chunk from its buffers ([`dense_leaf`]): its dimensions and each batch's values.
type DenseParts = Option<(Vec<usize>, Vec<ArrayRef>)>;

impl GroupEncoder {
    fn new(
        factory: ArrowRowGroupWriterFactory,
        descr: &SchemaDescriptor,
        props: WriterPropertiesPtr,
        schema: SchemaRef,
    ) -> Result<Self> {
        let mut leaf_counts = vec![0; schema.fields().len()];
        for leaf in 0..descr.num_columns() {
            if let Some(n) = leaf_counts.get_mut(descr.get_column_root_idx(leaf)) {
                *n += 1;
            }
        }
        // every column has the file's one compression (writer_properties_for sets no other)
        let zstd = match props.compression(&ColumnPath::new(Vec::new())) {
            PqCompression::ZSTD(level) => {
                let plain = (*props)
                    .clone()
                    .into_builder()
                    .set_compression(PqCompression::UNCOMPRESSED)
                    .build();
                Some((level, Arc::new(plain)))
            }
            _ => None,
        };
        let first_leaf = leaf_counts
            .iter()
            .scan(0, |at, &n| {
                let first = *at;
                *at += n;
                Some(first)
            })
            .collect::<Vec<usize>>();
        let decides: Vec<bool> = schema
            .fields()
            .iter()
            .map(|f| dictionary::decides(f.data_type()))
            .collect();
        let plain_factory = if decides.contains(&true) {
            let mut b = (*props).clone().into_builder();
            for (i, _) in decides.iter().enumerate().filter(|(_, d)| **d) {
                b = b.set_column_dictionary_enabled(
                    descr.column(first_leaf[i]).path().clone(),
                    false,
                );
            }
            let w = ArrowWriter::try_new(std::io::sink(), schema.clone(), Some(b.build()))?;
            Some(w.into_serialized_writer()?.1)
        } else {
            None
        };
        Ok(GroupEncoder {
            factory,
            plain_factory,
            decides,
            leaves: descr.columns().to_vec(),
            leaf_counts,
            first_leaf,
            props,
            zstd,
            schema,
        })
    }

    /// Encode row group `index`: its fields in parallel, each through all of the group's batches.
    fn encode(&self, index: usize, batches: &[RecordBatch]) -> Encoded {
        let dense: Vec<DenseParts> = (0..self.leaf_counts.len())
            .map(|i| self.dense_parts(i, batches))
            .collect();
        // the crate's writers (a codec each) only where a field goes its way
        let mut writers = if dense.iter().all(Option::is_some) {
            Vec::new().into_iter()
        } else {
            // which decided fields go without a dictionary: `Some(true)` the field does,
            // `Some(false)` it keeps one, `None` not decided here
            let plain: Vec<Option<bool>> = match &self.plain_factory {
                Some(_) => (0..dense.len())
                    .into_par_iter()
                    .map(|i| {
                        (self.decides[i] && dense[i].is_none())
                            .then(|| dictionary::plain_is_better(batches, i))
                    })
                    .collect(),
                None => Vec::new(),
            };
            let any_plain = plain.contains(&Some(true));
            match &self.plain_factory {
                // every decided field plain: the plain writers alone (the others are the same
                // in both sets), not a second set of writers (a codec each) for 2,000 columns
                Some(pf) if any_plain && !plain.contains(&Some(false)) => {
                    pf.create_column_writers(index)?.into_iter()
                }
                Some(pf) if any_plain => {
                    let mut ws = self.factory.create_column_writers(index)?;
                    // a decided field is flat: its one leaf is its first
                    let mut others: Vec<Option<ArrowColumnWriter>> = pf
                        .create_column_writers(index)?
                        .into_iter()
                        .map(Some)
                        .collect();
                    for (i, _) in plain.iter().enumerate().filter(|(_, p)| **p == Some(true)) {
                        let leaf = self.first_leaf[i];
                        if let Some(w) = others[leaf].take() {
                            ws[leaf] = w;
                        }
                    }
                    ws.into_iter()
                }
                _ => self.factory.create_column_writers(index)?.into_iter(),
            }
        };
        let mut jobs = Vec::with_capacity(self.leaf_counts.len());
        for ((i, &n), d) in self.leaf_counts.iter().enumerate().zip(dense) {
            let ws = writers.by_ref().take(n).collect::<Vec<_>>();
            jobs.push((i, self.first_leaf[i], ws, d));
        }
        let per_field: Vec<Vec<Chunk>> = jobs
            .into_par_iter()
            .map(|(i, leaf, ws, d)| self.encode_field(i, leaf, ws, d, batches))
            .collect::<parquet::errors::Result<_>>()?;
        Ok(per_field.into_iter().flatten().collect())
    }

    /// Field `i`'s values in each batch, if [`dense_leaf`] encodes them: a tensor without nulls,
    /// or a flat numeric column without nulls whose chunk is one mini-batch of the column writer
    /// (the many small columns of a wide table, where a codec per chunk costs most). Larger flat
    /// chunks came out cut into pages elsewhere than `ArrowWriter` cuts them (same values, other
    /// bytes; `dense_leaf`'s test of large flat columns), and cost one codec among many pages.
    fn dense_parts(&self, i: usize, batches: &[RecordBatch]) -> DenseParts {
        let dims = dense_leaf::leaf_dims(&self.schema.fields()[i])?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        if dims.is_empty() && rows > self.props.write_batch_size() {
            return None;
        }
        let parts = batches
            .iter()
            .map(|b| dense_leaf::dense_values(b.column(i), &dims))
            .collect::<Option<Vec<_>>>()?;
        Some((dims, parts))
    }

    /// The column chunks of field `i` (first leaf `leaf`): from its buffers if `dense` (see
    /// [`dense_leaf`]), anything else through `compute_leaves` and `writers` (its leaves in
    /// parallel), one batch at a time so that only one batch's levels exist at once.
    fn encode_field(
        &self,
        i: usize,
        leaf: usize,
        mut writers: Vec<ArrowColumnWriter>,
        dense: DenseParts,
        batches: &[RecordBatch],
    ) -> parquet::errors::Result<Vec<Chunk>> {
        let field = &self.schema.fields()[i];
        if let Some((dims, parts)) = dense {
            let d = self.leaves[leaf].clone();
            let (props, zstd) = match &self.zstd {
                Some((level, plain)) => (plain.clone(), Some(*level)),
                None => (self.props.clone(), None),
            };
            let (bytes, close) = dense_leaf::encode(d, props, zstd, &dims, &parts)?;
            return Ok(vec![Chunk::Dense(bytes, close)]);
        }
        for b in batches {
            let leaves = compute_leaves(field, b.column(i))?;
            if leaves.len() != writers.len() {
                return Err(ParquetError::General(format!(
                    "{}: {} leaf columns for {} writers",
                    field.name(),
                    leaves.len(),
                    writers.len()
                )));
            }
            // a nested field's leaves in parallel too: one field may hold most of the bytes
            writers
                .par_iter_mut()
                .zip(leaves.par_iter())
                .try_for_each(|(w, l)| w.write(l))?;
        }
        writers
            .into_iter()
            .map(|w| Ok(Chunk::Arrow(w.close()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Metadata, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    #[test]
    fn writers_on_the_thread_pool_do_not_wait_on_it() {
        // files converted in parallel each write Parquet from a pool worker: a writer that queued
        // its row groups behind the busy workers and waited for them would never finish
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from_iter_values(0..20_000)) as ArrayRef],
            )
            .unwrap();
            let sizes: Vec<usize> = (0..8)
                .into_par_iter()
                .map(|_| {
                    let mut w =
                        ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default())
                            .unwrap()
                            .with_max_row_group_bytes(16 << 10);
                    for k in 0..10 {
                        w.write(&b.slice(k * 2000, 2000)).unwrap();
                    }
                    w.finish().unwrap().len()
                })
                .collect();
            let _ = tx.send(sizes);
        });
        let sizes = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("writers on the pool finished");
        assert!(sizes.iter().all(|&n| n > 0 && n == sizes[0]));
    }

    #[test]
    fn metadata_shared_by_the_fields_is_in_the_file_once_and_read_back_on_each() {
        use crate::types::meta;
        let f8 = Metadata::from([(meta::DTYPE, "<f8"), (meta::KIND, "ndarray")]);
        let mut fields: Vec<Field> = (0..300)
            .map(|i| Field::new(format!("c{i}"), DataType::Float64, true).with_metadata(f8.clone()))
            .collect();
        fields[9] = fields[9].clone().with_metadata(Metadata::from([
            (meta::DTYPE, ">f8"),
            (meta::KIND, "ndarray"),
        ]));
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            std::collections::HashMap::from([(meta::LAYOUT.to_string(), "columns".to_string())]),
        ));
        let columns: Vec<ArrayRef> = (0..300)
            .map(|i| Arc::new(arrow_array::Float64Array::from(vec![i as f64; 10])) as ArrayRef)
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let mut w =
            ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default()).unwrap();
        w.write(&batch).unwrap();
        let bytes = Bytes::from(w.finish().unwrap());
        // as any Parquet reader sees it: fields without metadata, the schema holding it once
        let plain = ParquetRecordBatchReaderBuilder::try_new(bytes.clone()).unwrap();
        let embedded = plain.schema();
        assert!(embedded.field(0).metadata().is_empty());
        assert_eq!(embedded.field(9).metadata(), schema.field(9).metadata());
        assert!(embedded
            .metadata()
            .contains_key(meta::SHARED_FIELD_METADATA));
        // as ours reads it: every field's own
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.parquet");
        std::fs::write(&path, &bytes).unwrap();
        let (got, batches) = super::super::read_parquet(&path).unwrap();
        assert_eq!(got, schema);
        let got: Vec<RecordBatch> = batches.collect::<Result<_>>().unwrap();
        assert_eq!(got, vec![batch]);
    }

    #[test]
    fn rows_without_columns_are_an_error_not_a_file_of_no_rows() {
        // a stream of empty maps: 3 rows, no column (a row group counts rows in its chunks)
        let batch = crate::io::rows_of_no_column(3);
        let mut w =
            ParquetWriter::try_new(Vec::new(), batch.schema(), Compression::default()).unwrap();
        let e = w.write(&batch).unwrap_err().to_string();
        assert!(e.contains("without columns (3 rows"), "{e}");
    }

    #[test]
    fn a_batch_of_other_types_is_an_error_other_item_names_are_not() {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let tensor = DataType::FixedSizeList(item.clone(), 2);
        let schema = Arc::new(Schema::new(vec![Field::new("emb", tensor, true)]));
        let mut w = ParquetWriter::try_new(Vec::new(), schema, Compression::default()).unwrap();
        // the same name, other types: f64 elements, then another length
        for (dt, n) in [(DataType::Float64, 2), (DataType::Float32, 3)] {
            let item = Arc::new(Field::new("item", dt.clone(), true));
            let values: ArrayRef = match dt {
                DataType::Float64 => Arc::new(arrow_array::Float64Array::from(vec![1.0; 2 * n])),
                _ => Arc::new(Float32Array::from(vec![1.0; 2 * n])),
            };
            let col = FixedSizeListArray::new(item, n as i32, values, None);
            let s = Arc::new(Schema::new(vec![Field::new(
                "emb",
                col.data_type().clone(),
                true,
            )]));
            let b = RecordBatch::try_new(s, vec![Arc::new(col)]).unwrap();
            let e = w.write(&b).unwrap_err().to_string();
            assert!(e.contains("written to a Parquet file of columns"), "{e}");
        }
        // another name for the list's item is the same type: written under the file's names
        let element = Arc::new(Field::new("element", DataType::Float32, true));
        let col =
            FixedSizeListArray::new(element, 2, Arc::new(Float32Array::from(vec![7.0; 4])), None);
        let s = Arc::new(Schema::new(vec![Field::new(
            "emb",
            col.data_type().clone(),
            true,
        )]));
        w.write(&RecordBatch::try_new(s, vec![Arc::new(col)]).unwrap())
            .unwrap();
        let r = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(w.finish().unwrap()))
            .unwrap()
            .build()
            .unwrap();
        let back: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
        assert_eq!(back.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
        let emb = back[0].column(0).as_fixed_size_list();
        assert_eq!(emb.value_type(), DataType::Float32);
        assert_eq!(
            emb.values()
                .as_primitive::<arrow_array::types::Float32Type>()
                .values(),
            &[7.0; 4]
        );
    }

    #[test]
    fn row_groups_encoded_in_parallel_come_back_in_order() {
        let n = 3000usize;
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("label", DataType::Utf8, true),
            Field::new("emb", DataType::FixedSizeList(item.clone(), 16), true),
        ]));
        let values: Vec<f32> = (0..n * 16).map(|i| (i as f32).sin()).collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(StringArray::from_iter(
                (0..n).map(|i| (i % 7 != 0).then(|| format!("row {i}"))),
            )),
            Arc::new(FixedSizeListArray::new(
                item,
                16,
                Arc::new(Float32Array::from(values)),
                None,
            )),
        ];
        let table = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let mut w = ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default())
            .unwrap()
            .with_max_row_group_bytes(8 << 10);
        // batches of uneven sizes, some crossing row group ends
        let mut at = 0;
        for step in [1, 700, 13, 1500, 786].iter().cycle() {
            if at >= n {
                break;
            }
            let k = (*step).min(n - at);
            w.write(&table.slice(at, k)).unwrap();
            at += k;
        }
        let bytes = w.finish().unwrap();
        let r = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
        let groups = r.metadata().num_row_groups();
        assert!(groups > 10, "{groups} row groups");
        assert_eq!(r.schema().fields(), schema.fields());
        let back: Vec<RecordBatch> = r.build().unwrap().map(|b| b.unwrap()).collect();
        let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
        assert_eq!(back.columns(), table.columns());
    }

    /// Long texts that repeat weigh as their dictionary: a table of 50 distinct 1 KiB texts
    /// over 10 MB is one row group (one dictionary) where distinct texts of the same size are
    /// several, and both read back as written.
    #[test]
    fn repeated_long_texts_share_a_row_group_distinct_ones_do_not() {
        let n = 10_000usize;
        let schema = Arc::new(Schema::new(vec![Field::new("text", DataType::Utf8, false)]));
        // the texts differ a quarter in only: a hash of their head, middle and tail took them
        // for one text
        let (head, rest) = ("abcdefgh".repeat(32), "abcdefgh".repeat(96));
        let text = |i: usize| format!("{head}{i:>6}{rest}");
        let groups = |distinct: usize| {
            let col = StringArray::from_iter_values((0..n).map(|i| text(i % distinct)));
            let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(col)]).unwrap();
            let mut w = ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default())
                .unwrap()
                .with_max_row_group_bytes(2 << 20);
            for at in (0..n).step_by(1000) {
                w.write(&table.slice(at, 1000)).unwrap();
            }
            let bytes = bytes::Bytes::from(w.finish().unwrap());
            let r = ParquetRecordBatchReaderBuilder::try_new(bytes.clone()).unwrap();
            let groups = r.metadata().num_row_groups();
            let back: Vec<RecordBatch> = r.build().unwrap().map(|b| b.unwrap()).collect();
            let back = arrow_select::concat::concat_batches(&schema, &back).unwrap();
            assert_eq!(back.columns(), table.columns());
            (groups, bytes.len())
        };
        let (repeated, size) = groups(50);
        assert_eq!(repeated, 1, "{size} bytes");
        let (distinct, _) = groups(n);
        assert!(distinct >= 5, "{distinct} row groups of distinct texts");
    }

    #[test]
    fn distinct_ids_are_written_plain_repeated_values_with_a_dictionary() {
        // an event log: distinct ids and timestamps, a few names and codes
        let n = 200_000usize;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("ts", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("code", DataType::Int64, true),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(Int64Array::from_iter_values(
                (0..n as i64).map(|i| 1_700_000_000_000 + i * 37 + (i * i) % 11),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("user-{}", (i * 7919) % 300)),
            )),
            Arc::new(Int64Array::from_iter(
                (0..n as i64).map(|i| (i % 13 != 0).then_some((i * 31) % 1000)),
            )),
        ];
        let table = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let mut w =
            ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default()).unwrap();
        for k in (0..n).step_by(65_536) {
            w.write(&table.slice(k, 65_536.min(n - k))).unwrap();
        }
        let ours = bytes::Bytes::from(w.finish().unwrap());
        // the crate's own writer, whose chunks all start with a dictionary
        let mut theirs = Vec::new();
        let mut aw =
            super::super::parquet_writer(&mut theirs, schema.clone(), Compression::default())
                .unwrap();
        aw.write(&table).unwrap();
        aw.close().unwrap();
        assert!(
            ours.len() * 10 < theirs.len() * 9,
            "{} bytes against ArrowWriter's {}",
            ours.len(),
            theirs.len()
        );
        let r = ParquetRecordBatchReaderBuilder::try_new(ours).unwrap();
        for g in r.metadata().row_groups() {
            for (c, want) in g.columns().iter().zip([false, false, true, true]) {
                let dictionary = c
                    .encodings()
                    .any(|e| e == parquet::basic::Encoding::RLE_DICTIONARY);
                assert_eq!(dictionary, want, "{}", c.column_path());
            }
        }
        let back: Vec<RecordBatch> = r.build().unwrap().map(|b| b.unwrap()).collect();
        let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
        assert_eq!(back.columns(), table.columns());
    }

    #[test]
    fn long_repeated_strings_keep_their_dictionary_and_many_columns_get_bigger_groups() {
        // 1,000 distinct 1.5 KB strings: a 1.5 MB dictionary, past the crate's default limit,
        // where every page fell back to plain
        let n = 8_000usize;
        let text: Vec<String> = (0..1000)
            .map(|k| format!("{k:04}-{}", "lorem ipsum ".repeat(125)))
            .collect();
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
        let col = StringArray::from_iter_values((0..n).map(|i| text[(i * 7919) % 1000].as_str()));
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(col)]).unwrap();
        let mut w = ParquetWriter::try_new(Vec::new(), schema, Compression::default()).unwrap();
        w.write(&b).unwrap();
        let ours = bytes::Bytes::from(w.finish().unwrap());
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let f = SerializedFileReader::new(ours).unwrap();
        for g in 0..f.num_row_groups() {
            let pages = f
                .get_row_group(g)
                .unwrap()
                .get_column_page_reader(0)
                .unwrap();
            for p in pages {
                let p = p.unwrap();
                if p.page_type() != parquet::basic::PageType::DICTIONARY_PAGE {
                    assert_ne!(
                        p.encoding(),
                        parquet::basic::Encoding::PLAIN,
                        "a plain data page"
                    );
                }
            }
        }
        // 600 int64 columns: 64 KiB of each in a row group at least (about 8,000 rows with their
        // validity), not the 3,400
        // rows 16 MiB would hold
        let (cols, rows) = (600usize, 20_000usize);
        let schema = Arc::new(Schema::new(
            (0..cols)
                .map(|c| Field::new(format!("c{c}"), DataType::Int64, true))
                .collect::<Vec<_>>(),
        ));
        let arrays: Vec<ArrayRef> = (0..cols)
            .map(|c| {
                Arc::new(Int64Array::from_iter(
                    (0..rows as i64).map(|i| (i % 7 != c as i64 % 7).then_some(i * c as i64)),
                )) as ArrayRef
            })
            .collect();
        let table = RecordBatch::try_new(schema.clone(), arrays).unwrap();
        let mut w = ParquetWriter::try_new(Vec::new(), schema, Compression::default()).unwrap();
        for k in (0..rows).step_by(1000) {
            w.write(&table.slice(k, 1000)).unwrap();
        }
        let r = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(w.finish().unwrap()))
            .unwrap();
        let groups = r.metadata().row_groups();
        assert!(
            groups[..groups.len() - 1]
                .iter()
                .all(|g| g.num_rows() >= 8000),
            "{:?}",
            groups.iter().map(|g| g.num_rows()).collect::<Vec<_>>()
        );
        let back: Vec<RecordBatch> = r.build().unwrap().map(|b| b.unwrap()).collect();
        let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
        assert_eq!(back.columns(), table.columns());
    }
}
