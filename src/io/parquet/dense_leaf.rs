//! The values of a tensor column (a FixedSizeList, nested for more dimensions, of f16/f32/f64/i32/i64)
//! or of a flat column of those types, with no null anywhere, encoded straight from its Arrow
//! buffer, by a column writer made here (with zstd, one that leaves compression to
//! [`super::zstd_pages`]: no codec per column chunk).
//!
//! Why: `compute_leaves` describes every value of a list column with a `usize` index, a definition
//! and a repetition level, and the column writer then gathers the values through those indices.
//! For a column that is 99% of a table's bytes that is 12 bytes of bookkeeping written and read
//! per 4-byte value, a third of the encode. Without nulls the levels are known in advance: every
//! value is fully defined, and a row's repetition levels repeat from row to row. So one row's
//! pattern is built once and the values are passed as the slice they already are. The column
//! chunk is the same Parquet as the `ArrowWriter`'s (same pages, levels, statistics, encodings),
//! written through the crate's own column writer.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType};
use arrow_schema::{DataType, Field};
use bytes::Bytes;
use parquet::basic::ZstdLevel;
use parquet::column::writer::{get_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::data_type::{ByteArray, FixedLenByteArray};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::zstd_pages::{with_codec, ZstdPages};

/// Levels handed to the column writer per call (one row's pattern repeated to about this length).
const LEVELS_PER_CALL: usize = 1 << 16;

/// The dimensions of `field` if it is a tensor column this module encodes: FixedSizeLists (of
/// nonzero sizes) around a f16, f32, f64, i32 or i64 leaf.
pub fn tensor_dims(field: &Field) -> Option<Vec<usize>> {
    leaf_dims(field).filter(|d| !d.is_empty())
}

/// [`tensor_dims`], or no dimensions for a flat column of those leaf types: any column this
/// module encodes.
pub fn leaf_dims(field: &Field) -> Option<Vec<usize>> {
    let mut dims = Vec::new();
    let mut t = field.data_type();
    while let DataType::FixedSizeList(item, n) = t {
        if *n <= 0 {
            return None;
        }
        dims.push(*n as usize);
        t = item.data_type();
    }
    let leaf = matches!(
        t,
        DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Int32
            | DataType::Int64
    );
    leaf.then_some(dims)
}

/// The leaf values of `col` (a column of a type [`leaf_dims`] accepts), if neither the lists nor
/// the values hold a null; `None` sends the column the general way.
pub fn dense_values(col: &ArrayRef, dims: &[usize]) -> Option<ArrayRef> {
    let mut a = col.clone();
    let mut rows = col.len();
    for &n in dims {
        let list = a.as_fixed_size_list_opt()?;
        if list.null_count() > 0 {
            return None;
        }
        let values = list.values().clone();
        rows *= n;
        // a slice of a FixedSizeListArray slices its values; anything else goes the general way
        if values.len() != rows {
            return None;
        }
        a = values;
    }
    (a.null_count() == 0).then_some(a)
}

/// Encode the column chunk of one leaf of `dims` (none: a flat column) from `parts` (each
/// [`dense_values`] of a batch): the chunk's bytes, starting at offset 0, and what closing the
/// writer reported. With `zstd`, `props` must ask for no compression: [`ZstdPages`] compresses.
pub fn encode(
    descr: ColumnDescPtr,
    props: WriterPropertiesPtr,
    zstd: Option<ZstdLevel>,
    dims: &[usize],
    parts: &[ArrayRef],
) -> parquet::errors::Result<(Bytes, ColumnCloseResult)> {
    let per_row: usize = dims.iter().product();
    // The writer cuts its input into mini-batches of `write_batch_size` levels, each taken on to
    // the next row's start, and decides on a page's end after each. A call that holds a whole
    // number of them cuts where one call for the whole batch would: the same pages as ArrowWriter's.
    let mini = props.write_batch_size().max(1).div_ceil(per_row);
    let rows_per_call = (LEVELS_PER_CALL / per_row / mini).max(1) * mini;
    let max_def = descr.max_def_level();
    if descr.max_rep_level() as usize != dims.len() {
        return Err(parquet::errors::ParquetError::General(format!(
            "column {}: {} repetition levels for {} dimensions",
            descr.path(),
            descr.max_rep_level(),
            dims.len()
        )));
    }
    // Every value is defined to the deepest level (a list's repeated level counts; a flat
    // column that cannot be null has none); value j of a row repeats at the outermost dimension
    // it starts a new element of (0 for the row's first value; no levels for a flat column).
    // Levels for the longest call made, not a whole call's worth: a wide table's columns hold
    // a few rows each, and 65,536 levels made per column were most of its export.
    let longest = parts.iter().map(|p| p.len()).max().unwrap_or(0);
    let levels = (rows_per_call * per_row).min(longest);
    let def = if max_def > 0 {
        vec![max_def; levels]
    } else {
        Vec::new()
    };
    let rep: Vec<i16> = if dims.is_empty() {
        Vec::new()
    } else {
        (0..levels)
            .map(|k| row_rep_level(dims, k % per_row))
            .collect()
    };

    let total: usize = parts
        .iter()
        .map(|p| p.len() * p.data_type().primitive_width().unwrap_or(4))
        .sum();
    let mut sink = TrackedWrite::new(Vec::with_capacity(total + 4096));
    let close = {
        let pages = SerializedPageWriter::new(&mut sink);
        let mut w = match zstd {
            Some(level) => get_column_writer(descr, props, Box::new(ZstdPages::new(pages, level))),
            None => get_column_writer(descr, props, Box::new(pages)),
        };
        // f16 values of one call, the vector kept from call to call
        let mut halves: Vec<FixedLenByteArray> = Vec::new();
        for p in parts {
            let mut at = 0;
            while at < p.len() {
                let n = (p.len() - at).min(rows_per_call * per_row);
                let d = (max_def > 0).then(|| &def[..n]);
                let r = (!dims.is_empty()).then(|| &rep[..n]);
                // the values of this call, as the slice they are, to a writer of their type
                macro_rules! slice_to {
                    ($t:expr, $arrow:ty) => {
                        $t.write_batch(&values::<$arrow>(p)?[at..at + n], d, r)?
                    };
                }
                match &mut w {
                    ColumnWriter::FloatColumnWriter(t) => slice_to!(t, Float32Type),
                    ColumnWriter::DoubleColumnWriter(t) => slice_to!(t, Float64Type),
                    ColumnWriter::Int32ColumnWriter(t) => slice_to!(t, Int32Type),
                    ColumnWriter::Int64ColumnWriter(t) => slice_to!(t, Int64Type),
                    ColumnWriter::FixedLenByteArrayColumnWriter(t) => {
                        // f16: the writer takes each value as its own `Bytes`. A slice of a
                        // static table of all 65,536 of them costs no allocation nor refcount.
                        let v = values::<Float16Type>(p)?;
                        halves.clear();
                        halves.extend(v[at..at + n].iter().map(|x| {
                            let b = 2 * x.to_bits() as usize;
                            FixedLenByteArray::from(ByteArray::from(Bytes::from_static(
                                &F16_LE[b..b + 2],
                            )))
                        }));
                        t.write_batch(&halves, d, r)?
                    }
                    _ => {
                        return Err(parquet::errors::ParquetError::General(format!(
                            "column {}: unexpected physical type",
                            p.data_type()
                        )))
                    }
                };
                at += n;
            }
        }
        w.close()?
    };
    let close = match zstd {
        Some(level) => with_codec(close, level)?,
        None => close,
    };
    Ok((Bytes::from(sink.into_inner()?), close))
}

/// The values of `p`, which the leaf's physical type says are `T`s (an error, not a panic, if a
/// batch does not match the writer's schema).
fn values<T: ArrowPrimitiveType>(p: &ArrayRef) -> parquet::errors::Result<&[T::Native]> {
    match p.as_primitive_opt::<T>() {
        Some(a) => Ok(a.values()),
        None => Err(parquet::errors::ParquetError::General(format!(
            "tensor values are {}, not {}",
            p.data_type(),
            T::DATA_TYPE
        ))),
    }
}

/// Every f16 bit pattern, little-endian, in order: value `k` is bytes `2k..2k + 2`.
static F16_LE: [u8; 1 << 17] = {
    let mut t = [0u8; 1 << 17];
    let mut k = 0;
    while k < 1 << 16 {
        t[2 * k] = k as u8;
        t[2 * k + 1] = (k >> 8) as u8;
        k += 1;
    }
    t
};

/// The repetition level of the `j`th value of a row of a tensor of `dims` (outermost first).
fn row_rep_level(dims: &[usize], j: usize) -> i16 {
    if j == 0 {
        return 0;
    }
    // the outermost dimension whose element starts at j: its stride divides j
    let mut stride: usize = dims.iter().product();
    for (level, &n) in dims.iter().enumerate() {
        stride /= n;
        if j % stride == 0 {
            return level as i16 + 1;
        }
    }
    dims.len() as i16
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow_array::{FixedSizeListArray, Float16Array, Float32Array, Float64Array};
    use arrow_array::{Int32Array, Int64Array};
    use arrow_array::{RecordBatch, StringArray};
    use arrow_buffer::NullBuffer;
    use arrow_schema::Schema;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use crate::io::parquet::{writer_properties_for, ParquetWriter};
    use crate::io::Compression;

    /// `props` with room for one row group of the test's rows (ours bound Arrow bytes, the
    /// ArrowWriter's encoded bytes: equal files need both to make one group).
    /// `props` for `t` written as one row group, with the dictionaries our writer drops from
    /// that group's columns of mostly distinct values ([`super::super::dictionary`]) dropped too.
    fn one_group(props: WriterProperties, t: &RecordBatch) -> WriterProperties {
        let mut b = props.into_builder().set_max_row_group_bytes(Some(64 << 20));
        for (i, f) in t.schema().fields().iter().enumerate() {
            if super::super::dictionary::plain_is_better(std::slice::from_ref(t), i) {
                let path = parquet::schema::types::ColumnPath::new(vec![f.name().clone()]);
                b = b.set_column_dictionary_enabled(path, false);
            }
        }
        b.build()
    }

    /// A FixedSizeList column of `dims` around `values`, with `nulls` on the rows; `nullable`
    /// items at every level or none.
    fn tensor(
        values: ArrayRef,
        dims: &[usize],
        nulls: Option<NullBuffer>,
        nullable: bool,
    ) -> ArrayRef {
        let mut a = values;
        for (k, &n) in dims.iter().enumerate().rev() {
            let item = Arc::new(Field::new("item", a.data_type().clone(), nullable));
            let rows_nulls = if k == 0 { nulls.clone() } else { None };
            a = Arc::new(FixedSizeListArray::new(item, n as i32, a, rows_nulls));
        }
        a
    }

    /// Tensors of every leaf type and of one to three dimensions (sizes of 1 among them; rows of
    /// more values than a mini-batch), beside scalar columns; the tensors of `emb` and `k` with
    /// null rows if `tensor_nulls`, and `strict` not nullable at any level.
    fn table(rows: usize, tensor_nulls: bool) -> RecordBatch {
        let f32s = Float32Array::from_iter_values((0..rows * 768).map(|i| (i as f32 * 0.37).sin()));
        let f64s = Float64Array::from_iter_values((0..rows * 12).map(|i| (i as f64).sqrt()));
        let i32s = Int32Array::from_iter_values((0..rows * 5).map(|i| (i % 97) as i32 - 40));
        let i64s = Int64Array::from_iter_values((0..rows * 8).map(|i| i as i64 * 1_000_003));
        let f16s = Float16Array::from_iter_values(
            (0..rows * 6).map(|i| half::f16::from_f32((i as f32 * 0.11).cos())),
        );
        let long = Float32Array::from_iter_values((0..rows * 1100).map(|i| (i % 1013) as f32));
        let ones = Int32Array::from_iter_values((0..rows).map(|i| i as i32));
        let cols4 = Float64Array::from_iter_values((0..rows * 4).map(|i| -(i as f64)));
        let strict = Float32Array::from_iter_values((0..rows * 3).map(|i| i as f32 / 3.0));
        let nulls = tensor_nulls.then(|| NullBuffer::from_iter((0..rows).map(|r| r % 5 != 2)));
        let cols: Vec<(&str, ArrayRef, bool)> = vec![
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..rows as i64)),
                true,
            ),
            (
                "emb",
                tensor(Arc::new(f32s), &[768], nulls.clone(), true),
                true,
            ),
            ("m", tensor(Arc::new(f64s), &[3, 4], None, true), true),
            ("k", tensor(Arc::new(i32s), &[5], nulls, true), true),
            (
                "label",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|r| format!("r{r}")),
                )),
                true,
            ),
            ("cube", tensor(Arc::new(i64s), &[2, 2, 2], None, true), true),
            ("half", tensor(Arc::new(f16s), &[2, 3], None, true), true),
            ("long", tensor(Arc::new(long), &[1100], None, true), true),
            ("unit", tensor(Arc::new(ones), &[1], None, true), true),
            ("column", tensor(Arc::new(cols4), &[4, 1], None, true), true),
            ("strict", tensor(Arc::new(strict), &[3], None, false), false),
            // flat columns: without nulls from their buffers, nullable or not; with nulls the
            // general way
            (
                "x",
                Arc::new(Float64Array::from_iter_values(
                    (0..rows).map(|i| (i as f64 * 0.7).tan()),
                )),
                true,
            ),
            (
                "h",
                Arc::new(Float16Array::from_iter_values(
                    (0..rows).map(|i| half::f16::from_f32(i as f32 / 8.0)),
                )),
                true,
            ),
            (
                "n32",
                Arc::new(Int32Array::from_iter_values(
                    (0..rows).map(|i| (i % 13) as i32),
                )),
                false,
            ),
            (
                "req",
                Arc::new(Float32Array::from_iter_values(
                    (0..rows).map(|i| i as f32 * 0.5),
                )),
                false,
            ),
            (
                "xn",
                Arc::new(Float32Array::from_iter(
                    (0..rows).map(|i| (i % 7 != 3).then_some(i as f32)),
                )),
                true,
            ),
        ];
        let schema = Schema::new(
            cols.iter()
                .map(|(n, c, null)| Field::new(*n, c.data_type().clone(), *null))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(
            Arc::new(schema),
            cols.into_iter().map(|(_, c, _)| c).collect(),
        )
        .unwrap()
    }

    /// Uneven batches of `t`, one a slice starting mid-table.
    fn batches(t: &RecordBatch) -> Vec<RecordBatch> {
        vec![
            t.slice(0, 1),
            t.slice(1, 1200),
            t.slice(1201, 7),
            t.slice(1208, 1792),
        ]
    }

    /// The names of the columns that take this module's path (a flat one only in row groups of
    /// at most a mini-batch).
    fn dense(t: &RecordBatch) -> Vec<String> {
        let s = t.schema();
        let small = t.num_rows() <= 1024;
        s.fields()
            .iter()
            .zip(t.columns())
            .filter(|(f, _)| f.data_type().is_nested() || small)
            .filter(|(f, c)| leaf_dims(f).and_then(|d| dense_values(c, &d)).is_some())
            .map(|(f, _)| f.name().clone())
            .collect()
    }

    /// The tensor and flat columns written from their buffers (their zstd pages compressed by
    /// one context per thread) give the very bytes arrow-rs's own `ArrowWriter` writes for the
    /// same batches, with and without nulls (which go its way), compressed or not.
    #[test]
    fn tensor_columns_encode_as_arrow_writer_does() {
        for (nulls, compression) in [
            (false, Compression::default()),
            (true, Compression::default()),
            (false, Compression::Zstd(1)),
            (false, Compression::Snappy),
            (false, Compression::None),
        ] {
            let t = table(3000, nulls);
            let schema = t.schema();
            let expect_dense: &[&str] = if nulls {
                &["m", "cube", "half", "long", "unit", "column", "strict"]
            } else {
                &[
                    "emb", "m", "k", "cube", "half", "long", "unit", "column", "strict",
                ]
            };
            assert_eq!(dense(&t), expect_dense);

            let props = one_group(writer_properties_for(&schema, compression).unwrap(), &t);
            let mut want = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
            // one row group, as ArrowWriter (which counts encoded bytes) makes of these rows
            let mut ours = ParquetWriter::try_new(Vec::new(), schema.clone(), compression)
                .unwrap()
                .with_max_row_group_bytes(64 << 20);
            for b in batches(&t) {
                want.write(&b).unwrap();
                ours.write(&b).unwrap();
            }
            let want = want.into_inner().unwrap();
            let ours = ours.finish().unwrap();
            assert!(ours.len() > 3000 * 768, "{} bytes", ours.len());
            assert!(
                ours == want,
                "nulls {nulls}, {compression:?}: {} vs {} bytes",
                ours.len(),
                want.len()
            );
        }
    }

    /// A wide table of small columns (a row group of 300 rows, in three batches): floats and
    /// integers (with a dictionary) take this module's path and its page compressor, columns
    /// with nulls do not; the same bytes as `ArrowWriter`'s, compressed or not.
    #[test]
    fn a_wide_table_of_small_columns_encodes_as_arrow_writer_does() {
        let rows = 300;
        let mut fields = Vec::new();
        let mut cols: Vec<ArrayRef> = Vec::new();
        for c in 0..240 {
            let v = |i: usize| ((i * 31 + c * 7) % 101) as f64 / 7.0;
            let (f, a): (Field, ArrayRef) = match c % 6 {
                0 => (
                    Field::new(format!("f64_{c}"), DataType::Float64, true),
                    Arc::new(Float64Array::from_iter_values((0..rows).map(v))),
                ),
                1 => (
                    Field::new(format!("f32_{c}"), DataType::Float32, false),
                    Arc::new(Float32Array::from_iter_values(
                        (0..rows).map(|i| v(i) as f32),
                    )),
                ),
                2 => (
                    Field::new(format!("f16_{c}"), DataType::Float16, true),
                    Arc::new(Float16Array::from_iter_values(
                        (0..rows).map(|i| half::f16::from_f64(v(i))),
                    )),
                ),
                3 => (
                    Field::new(format!("nulls_{c}"), DataType::Float64, true),
                    Arc::new(Float64Array::from_iter(
                        (0..rows).map(|i| (i % 9 != 4).then(|| v(i))),
                    )),
                ),
                4 => (
                    Field::new(format!("i64_{c}"), DataType::Int64, true),
                    Arc::new(Int64Array::from_iter_values(
                        (0..rows).map(|i| i as i64 * 3),
                    )),
                ),
                _ => (
                    Field::new(format!("emb_{c}"), DataType::Float32, true),
                    Arc::new(Float32Array::from_iter_values(
                        (0..rows).map(|i| -(v(i) as f32)),
                    )),
                ),
            };
            fields.push(f);
            cols.push(a);
        }
        let schema = Arc::new(Schema::new(fields));
        let t = RecordBatch::try_new(schema.clone(), cols).unwrap();
        for compression in [
            Compression::default(),
            Compression::Zstd(1),
            Compression::None,
            Compression::Snappy,
        ] {
            let props = writer_properties_for(&schema, compression).unwrap();
            let mut want = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
            let mut ours = ParquetWriter::try_new(Vec::new(), schema.clone(), compression).unwrap();
            for k in 0..3 {
                let b = t.slice(k * 100, 100);
                want.write(&b).unwrap();
                ours.write(&b).unwrap();
            }
            let want = want.into_inner().unwrap();
            let ours = ours.finish().unwrap();
            assert!(
                ours == want,
                "{compression:?}: {} vs {} bytes",
                ours.len(),
                want.len()
            );
        }
    }

    /// Large columns, cut into many pages: flat integers of distinct values (written without a
    /// dictionary, as the writer decides for them), a timestamp of the same values, an integer tensor of distinct
    /// values and a flat float column: the same bytes as `ArrowWriter`'s. (Flat columns of more
    /// than a mini-batch taken from their buffers failed this: pages cut elsewhere.)
    #[test]
    fn large_columns_encode_as_arrow_writer_does() {
        use arrow_array::TimestampSecondArray;
        let rows = 300_000;
        // an integer tensor (dictionary encoded too) of distinct values
        let quad = tensor(
            Arc::new(Int64Array::from_iter_values(0..rows * 4)),
            &[4],
            None,
            true,
        );
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new(
                "ts",
                DataType::Timestamp(arrow_schema::TimeUnit::Second, None),
                true,
            ),
            Field::new("k", quad.data_type().clone(), true),
            Field::new("x", DataType::Float64, true),
        ]));
        let t = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(TimestampSecondArray::from_iter_values(
                    (0..rows).map(|i| 1_700_000_000 + i),
                )),
                quad,
                Arc::new(Float64Array::from_iter_values(
                    (0..rows).map(|i| (i as f64 * 0.37).sin()),
                )),
            ],
        )
        .unwrap();
        let props = one_group(
            writer_properties_for(&schema, Compression::default()).unwrap(),
            &t,
        );
        let mut want = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
        // one row group, as ArrowWriter (which counts encoded bytes) makes of these rows
        let mut ours = ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default())
            .unwrap()
            .with_max_row_group_bytes(64 << 20);
        let mut at = 0;
        while at < rows as usize {
            let b = t.slice(at, 65536.min(rows as usize - at));
            want.write(&b).unwrap();
            ours.write(&b).unwrap();
            at += b.num_rows();
        }
        let want = want.into_inner().unwrap();
        let ours = ours.finish().unwrap();
        assert!(ours == want, "{} vs {} bytes", ours.len(), want.len());
    }

    /// Many row groups: `ArrowWriter` given the same pieces and ending its row groups where ours
    /// end writes the same file.
    #[test]
    fn row_groups_encode_as_arrow_writer_does() {
        // (ids and labels that repeat: every group keeps their dictionaries, which a file of
        // ArrowWriter's cannot drop in some groups only, as ours does)
        let t = table(3000, false);
        let mut cols = t.columns().to_vec();
        let id = t.schema().index_of("id").unwrap();
        let label = t.schema().index_of("label").unwrap();
        cols[id] = Arc::new(Int64Array::from_iter_values((0..3000).map(|i| i % 50)));
        cols[label] = Arc::new(StringArray::from_iter_values(
            (0..3000).map(|r| format!("r{}", r % 50)),
        ));
        let t = RecordBatch::try_new(t.schema(), cols).unwrap();
        let schema = t.schema();
        let mut ours = ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default())
            .unwrap()
            .with_max_row_group_bytes(1 << 20);
        for b in batches(&t) {
            ours.write(&b).unwrap();
        }
        let ours = Bytes::from(ours.finish().unwrap());
        let meta = parquet::file::reader::FileReader::metadata(
            &parquet::file::serialized_reader::SerializedFileReader::new(ours.clone()).unwrap(),
        )
        .clone();
        let ends: Vec<usize> = meta
            .row_groups()
            .iter()
            .scan(0, |at, g| {
                *at += g.num_rows() as usize;
                Some(*at)
            })
            .collect();
        assert!(ends.len() > 10, "{} row groups", ends.len());

        let props = writer_properties_for(&schema, Compression::default()).unwrap();
        let mut want = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
        let (mut at, mut next_end) = (0, ends.iter().peekable());
        for b in batches(&t) {
            let mut rest = b;
            while rest.num_rows() > 0 {
                let end = **next_end.peek().unwrap();
                let take = rest.num_rows().min(end - at);
                want.write(&rest.slice(0, take)).unwrap();
                at += take;
                rest = rest.slice(take, rest.num_rows() - take);
                if at == end {
                    want.flush().unwrap();
                    next_end.next();
                }
            }
        }
        let want = want.into_inner().unwrap();
        assert!(ours == want, "{} vs {} bytes", ours.len(), want.len());
    }

    /// A tensor column of `rows` rows of `dims` of leaf type `kind` (0–4: f16, f32, f64, i32,
    /// i64), every fifth row null if `nulls`.
    fn any_tensor(kind: usize, dims: &[usize], rows: usize, nulls: bool, seed: u64) -> ArrayRef {
        let n = rows * dims.iter().product::<usize>();
        let x = |i: usize| ((i as u64).wrapping_mul(seed | 1) >> 7) as i64;
        let values: ArrayRef = match kind {
            0 => Arc::new(Float16Array::from_iter_values(
                (0..n).map(|i| half::f16::from_bits(x(i) as u16)),
            )),
            1 => Arc::new(Float32Array::from_iter_values(
                (0..n).map(|i| f32::from_bits(x(i) as u32)),
            )),
            2 => Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| x(i) as f64 / 3.0),
            )),
            3 => Arc::new(Int32Array::from_iter_values((0..n).map(|i| x(i) as i32))),
            _ => Arc::new(Int64Array::from_iter_values((0..n).map(x))),
        };
        let rows_nulls = nulls.then(|| NullBuffer::from_iter((0..rows).map(|r| r % 5 != 1)));
        tensor(values, dims, rows_nulls, true)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Any tensor shape and type, cut into any batches, with or without null rows: the same
        /// bytes as `ArrowWriter`'s (NaN payloads and f16 bit patterns of every kind included).
        #[test]
        fn any_tensor_encodes_as_arrow_writer_does(
            kind in 0usize..5,
            dims in proptest::collection::vec(1usize..7, 1..4),
            long in proptest::option::of(1000usize..1500),
            rows in 1usize..300,
            cuts in proptest::collection::vec(0usize..300, 0..5),
            nulls in proptest::bool::ANY,
            seed in proptest::num::u64::ANY,
        ) {
            let dims = long.map_or(dims, |n| vec![n]);
            let col = any_tensor(kind, &dims, rows, nulls, seed);
            let schema = Arc::new(Schema::new(vec![Field::new("t", col.data_type().clone(), true)]));
            let t = RecordBatch::try_new(schema.clone(), vec![col]).unwrap();
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c < rows).collect();
            cuts.extend([0, rows]);
            cuts.sort_unstable();
            cuts.dedup();
            let props = writer_properties_for(&schema, Compression::default()).unwrap();
            let mut want = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
            let mut ours =
                ParquetWriter::try_new(Vec::new(), schema.clone(), Compression::default()).unwrap();
            for w in cuts.windows(2) {
                let b = t.slice(w[0], w[1] - w[0]);
                want.write(&b).unwrap();
                ours.write(&b).unwrap();
            }
            proptest::prop_assert_eq!(dense(&t).is_empty(), nulls && rows > 1);
            let (want, ours) = (want.into_inner().unwrap(), ours.finish().unwrap());
            proptest::prop_assert!(ours == want, "{} vs {} bytes", ours.len(), want.len());
        }
    }

    #[test]
    fn repetition_levels_start_each_dimension() {
        assert_eq!(
            (0..4).map(|j| row_rep_level(&[4], j)).collect::<Vec<_>>(),
            [0, 1, 1, 1]
        );
        // 2 x 3: rows of 3 values, the second row starts at j = 3
        assert_eq!(
            (0..6)
                .map(|j| row_rep_level(&[2, 3], j))
                .collect::<Vec<_>>(),
            [0, 2, 2, 1, 2, 2]
        );
        assert_eq!(
            (0..8)
                .map(|j| row_rep_level(&[2, 2, 2], j))
                .collect::<Vec<_>>(),
            [0, 3, 2, 3, 1, 3, 2, 3]
        );
    }
}
