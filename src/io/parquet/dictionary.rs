//! Whether a flat integer or string column chunk is worth a dictionary, decided per row group
//! from its values.
//!
//! Why: the column writer starts every chunk with a dictionary and drops it only once the
//! dictionary page passes 1 MiB (131,072 distinct 8-byte values). A column of ids or timestamps,
//! all distinct, so writes its first 131,072 values as 17-bit indices beside a dictionary of
//! all of them, then the rest plain: twice the bytes of plain after zstd (1,000,000 event records:
//! 12.0 MB against Polars' 10.3). Polars decides per chunk, from the share of distinct values;
//! so does this, with the same bound (a dictionary when under 3/4 of the values are distinct).

use std::hash::BuildHasher;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray, RecordBatch};
use arrow_schema::DataType;

/// A dictionary pays when fewer than this share of the values are distinct (Polars' bound).
const MAX_DISTINCT_SHARE: f64 = 0.75;

/// Chunks of fewer values keep the writer's default: too small for the choice to matter. (Not
/// more: a sparse table's columns hold a few hundred values a row group, and 2,000 such columns
/// with a dictionary each made a file 41% larger, 15.8 against 11.2 MB.)
const MIN_VALUES: usize = 128;

/// Hashes kept by the distinct-count estimate (k minimum values): its error is about
/// 1/sqrt(k), 3%, far inside the margin the bound needs.
const KMV_HASHES: usize = 1024;

/// Whether a column of `dt` is one this module decides for (flat integers, dates, times and
/// strings; not floats, which never get a dictionary, nor lists or tensors).
pub fn decides(dt: &DataType) -> bool {
    use DataType::*;
    matches!(
        dt,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
            | Utf8
            | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
    )
}

/// Whether column `i` of `batches` (one row group) should be written without a dictionary: at
/// least [`MIN_VALUES`] non-null values, of which 3/4 or more are distinct.
pub fn plain_is_better(batches: &[RecordBatch], i: usize) -> bool {
    let cols: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
    let n: usize = cols.iter().map(|c| c.len() - c.null_count()).sum();
    let Some(first) = cols.first() else {
        return false;
    };
    if n < MIN_VALUES || !decides(first.data_type()) {
        return false;
    }
    let bound = (n as f64 * MAX_DISTINCT_SHARE).ceil() as u64;
    use arrow_schema::TimeUnit::*;
    use DataType::*;
    match first.data_type() {
        Int8 => signed::<Int8Type>(&cols, bound),
        Int16 => signed::<Int16Type>(&cols, bound),
        Int32 => signed::<Int32Type>(&cols, bound),
        Int64 => signed::<Int64Type>(&cols, bound),
        UInt8 => unsigned::<UInt8Type>(&cols, bound),
        UInt16 => unsigned::<UInt16Type>(&cols, bound),
        UInt32 => unsigned::<UInt32Type>(&cols, bound),
        UInt64 => unsigned::<UInt64Type>(&cols, bound),
        Date32 => signed::<Date32Type>(&cols, bound),
        Date64 => signed::<Date64Type>(&cols, bound),
        Time32(Second) => signed::<Time32SecondType>(&cols, bound),
        Time32(_) => signed::<Time32MillisecondType>(&cols, bound),
        Time64(Microsecond) => signed::<Time64MicrosecondType>(&cols, bound),
        Time64(_) => signed::<Time64NanosecondType>(&cols, bound),
        Timestamp(Second, _) => signed::<TimestampSecondType>(&cols, bound),
        Timestamp(Millisecond, _) => signed::<TimestampMillisecondType>(&cols, bound),
        Timestamp(Microsecond, _) => signed::<TimestampMicrosecondType>(&cols, bound),
        Timestamp(Nanosecond, _) => signed::<TimestampNanosecondType>(&cols, bound),
        Duration(Second) => signed::<DurationSecondType>(&cols, bound),
        Duration(Millisecond) => signed::<DurationMillisecondType>(&cols, bound),
        Duration(Microsecond) => signed::<DurationMicrosecondType>(&cols, bound),
        Duration(Nanosecond) => signed::<DurationNanosecondType>(&cols, bound),
        _ => distinct_values(&cols) >= bound as f64,
    }
}

/// Values at least this long on average make a column worth weighing ([`weighed_bytes`]): a
/// dictionary of shorter ones repeated in every row group costs little.
const WEIGH_MIN_LEN: usize = 32;

/// Fewer values than this are counted as they are (batches of a few huge rows).
const WEIGH_MIN_VALUES: usize = 64;

/// What a column of `raw` Arrow bytes adds to a row group, for cutting row groups: a string
/// or binary column of long values that repeat (a dictionary will be written) counts as its
/// keys and one copy of each distinct value, not as every value. Row groups of repeated long
/// texts so hold many more rows and repeat their dictionary less often: 50,000 records of
/// 1,000 distinct 1.5 KB texts were five row groups of 16 MiB, each with the whole dictionary,
/// 4.5× the bytes of Polars' one group.
///
/// The distinct count is estimated from a hash of each whole value (hashing a part of each, tried
/// first to spare the decoding thread, took distinct texts that differ in the middle for repeats:
/// row groups of 128 MiB, 3× the memory, for nothing; the whole hash costs no measurable time
/// on the 80 MB of 1.5 KB texts).
pub fn weighed_bytes(col: &dyn Array, raw: usize) -> usize {
    let n = col.len() - col.null_count();
    if n < WEIGH_MIN_VALUES || raw / n < WEIGH_MIN_LEN || !is_bytes(col.data_type()) {
        return raw;
    }
    let distinct = distinct_values(&[col]);
    if distinct >= n as f64 * MAX_DISTINCT_SHARE {
        return raw;
    }
    // keys of at most 4 bytes, and the distinct values' share of the bytes
    let dictionary = (raw as f64 * distinct / n as f64) as usize;
    raw.min(n * 4 + dictionary)
}

/// Whether `dt` is a string or binary type.
fn is_bytes(dt: &DataType) -> bool {
    use DataType::*;
    matches!(
        dt,
        Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView
    )
}

fn signed<T: ArrowPrimitiveType>(cols: &[&dyn Array], bound: u64) -> bool
where
    T::Native: Into<i64>,
{
    // the sign bit flipped: the same order as u64s, so that a span is one subtraction
    integers::<T>(cols, bound, |v| (v.into() as u64) ^ (1 << 63))
}

fn unsigned<T: ArrowPrimitiveType>(cols: &[&dyn Array], bound: u64) -> bool
where
    T::Native: Into<u64>,
{
    integers::<T>(cols, bound, Into::into)
}

/// [`plain_is_better`] for integers, seen as u64 `key`s that keep their order.
fn integers<T: ArrowPrimitiveType>(
    cols: &[&dyn Array],
    bound: u64,
    key: impl Fn(T::Native) -> u64 + Copy,
) -> bool {
    let cols: Vec<&PrimitiveArray<T>> = cols.iter().map(|c| c.as_primitive::<T>()).collect();
    let (mut min, mut max) = (u64::MAX, 0);
    for_each_key(&cols, key, |k| {
        min = min.min(k);
        max = max.max(k);
    });
    let span = max.wrapping_sub(min);
    if span.saturating_add(1) < bound {
        // fewer possible values (span + 1) than the bound: a dictionary whatever they are
        return false;
    }
    if span / 8 < bound {
        // a bitmap of the span (at most 11 bits a value) counts them exactly
        let mut seen = vec![0u64; (span / 64 + 1) as usize];
        for_each_key(&cols, key, |k| {
            let o = k - min;
            seen[(o / 64) as usize] |= 1 << (o % 64);
        });
        let distinct: u64 = seen.iter().map(|w| u64::from(w.count_ones())).sum();
        return distinct >= bound;
    }
    let mut kmv = Kmv::default();
    for_each_key(&cols, key, |k| kmv.add(mix(k)));
    kmv.estimate() >= bound as f64
}

/// `f` of the key of every non-null value of `cols`.
fn for_each_key<T: ArrowPrimitiveType>(
    cols: &[&PrimitiveArray<T>],
    key: impl Fn(T::Native) -> u64,
    mut f: impl FnMut(u64),
) {
    for c in cols {
        match c.nulls().filter(|n| n.null_count() > 0) {
            None => c.values().iter().for_each(|&v| f(key(v))),
            // by the set bits (a word at a time): a sparse table's columns are nine tenths null
            Some(nulls) => {
                let values = c.values();
                nulls.valid_indices().for_each(|i| f(key(values[i])))
            }
        }
    }
}

/// A 64-bit finaliser (splitmix64's): integer keys spread over the whole range of hashes.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How many distinct values the string or binary columns `cols` hold, estimated.
fn distinct_values(cols: &[&dyn Array]) -> f64 {
    let s = foldhash::fast::FixedState::with_seed(0x6d73_6770);
    estimate_distinct(
        cols.iter()
            .flat_map(|c| byte_values(*c))
            .map(|v| s.hash_one(v)),
    )
}

/// How many distinct values `hashes` come from, estimated.
fn estimate_distinct(hashes: impl Iterator<Item = u64>) -> f64 {
    let mut kmv = Kmv::default();
    hashes.for_each(|h| kmv.add(h));
    kmv.estimate()
}

/// The k minimum values estimate of a distinct count: of uniformly spread hashes, the k-th
/// smallest distinct one lies near k/(distinct+1) of the range.
///
/// The hashes below the limit are gathered unsorted and cut back to the k smallest distinct ones
/// every few k (a sort): a BTreeSet insert per value was a sixth of the Parquet export of a
/// sparse table, whose thousands of column chunks each hold a few hundred values.
struct Kmv {
    hashes: Vec<u64>,
    /// the largest of the k smallest distinct hashes once there are k (a hash must be below it)
    limit: u64,
}

impl Default for Kmv {
    fn default() -> Self {
        Kmv {
            hashes: Vec::new(),
            limit: u64::MAX,
        }
    }
}

impl Kmv {
    #[inline]
    fn add(&mut self, h: u64) {
        if h < self.limit {
            self.hashes.push(h);
            if self.hashes.len() >= 4 * KMV_HASHES {
                self.compact();
            }
        }
    }

    /// Keep the k smallest distinct hashes (all of them where there are fewer), sorted.
    fn compact(&mut self) {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        if self.hashes.len() >= KMV_HASHES {
            self.hashes.truncate(KMV_HASHES);
            self.limit = self.hashes[KMV_HASHES - 1];
        }
    }

    fn estimate(mut self) -> f64 {
        self.compact();
        if self.hashes.len() < KMV_HASHES {
            // fewer distinct hashes than k: all of them are here
            return self.hashes.len() as f64;
        }
        (KMV_HASHES - 1) as f64 / ((self.limit as f64 + 1.0) / 2f64.powi(64))
    }
}

/// A string or binary column's non-null values as bytes; nothing for other columns.
fn byte_values(a: &dyn Array) -> Box<dyn Iterator<Item = &[u8]> + '_> {
    use DataType::*;
    match a.data_type() {
        Utf8 => Box::new(a.as_string::<i32>().iter().flatten().map(str::as_bytes)),
        LargeUtf8 => Box::new(a.as_string::<i64>().iter().flatten().map(str::as_bytes)),
        Utf8View => Box::new(a.as_string_view().iter().flatten().map(str::as_bytes)),
        Binary => Box::new(a.as_binary::<i32>().iter().flatten()),
        LargeBinary => Box::new(a.as_binary::<i64>().iter().flatten()),
        BinaryView => Box::new(a.as_binary_view().iter().flatten()),
        _ => Box::new(std::iter::empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, Int8Array, StringArray, TimestampMicrosecondArray};
    use arrow_array::{UInt64Array, UInt8Array};
    use std::collections::HashSet;
    use std::sync::Arc;

    fn batches(cols: Vec<ArrayRef>) -> Vec<RecordBatch> {
        cols.into_iter()
            .map(|c| RecordBatch::try_from_iter([("c", c)]).unwrap())
            .collect()
    }

    /// The rule counted exactly: a HashSet of the non-null values' text.
    fn exact(bs: &[RecordBatch]) -> bool {
        let mut seen = HashSet::new();
        let mut n = 0;
        for b in bs {
            let c = b.column(0);
            for j in 0..c.len() {
                if c.is_valid(j) {
                    n += 1;
                    seen.insert(arrow_cast::display::array_value_to_string(c, j).unwrap());
                }
            }
        }
        n >= MIN_VALUES && seen.len() as f64 >= n as f64 * MAX_DISTINCT_SHARE
    }

    /// A reproducible scatter of 64-bit values (an LCG's high bits).
    fn scatter(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x
            })
            .collect()
    }

    #[test]
    fn distinct_ids_go_plain_repeating_values_keep_the_dictionary() {
        let wide = scatter(20_000, 7);
        let few = scatter(40, 9);
        let cases: Vec<(&str, Vec<ArrayRef>, bool)> = vec![
            (
                "ids",
                vec![Arc::new(Int64Array::from_iter_values(0..5000))],
                true,
            ),
            (
                "i % 100",
                vec![Arc::new(Int64Array::from_iter_values(
                    (0..5000).map(|i| i % 100),
                ))],
                false,
            ),
            // 768 possible values, every one present: exactly the bound, so plain
            (
                "i % 768 of 1024",
                vec![Arc::new(Int64Array::from_iter_values(
                    (0..1024).map(|i| i % 768),
                ))],
                true,
            ),
            // the same 2,000 ids in two batches: half of the values distinct
            (
                "ids twice",
                vec![
                    Arc::new(Int64Array::from_iter_values(0..2000)),
                    Arc::new(Int64Array::from_iter_values(0..2000)),
                ],
                false,
            ),
            // spread over the whole range: the estimate, not the bitmap, decides
            (
                "scattered",
                vec![Arc::new(Int64Array::from_iter_values(
                    wide.iter().map(|&v| v as i64),
                ))],
                true,
            ),
            (
                "40 scattered values",
                vec![Arc::new(Int64Array::from_iter_values(
                    (0..20_000).map(|i| few[i % 40] as i64),
                ))],
                false,
            ),
            // at the top of u64: the span must not overflow
            (
                "top of u64",
                vec![Arc::new(UInt64Array::from_iter_values(
                    (0..5000).map(|i| u64::MAX - i),
                ))],
                true,
            ),
            (
                "sparse over a span of 4 per value",
                vec![Arc::new(Int64Array::from_iter_values(
                    (0..5000).map(|i| i * 4 - 9000),
                ))],
                true,
            ),
            // 256 possible values: always a dictionary
            (
                "int8",
                vec![Arc::new(Int8Array::from_iter_values(
                    (0..5000).map(|i| i as i8),
                ))],
                false,
            ),
            (
                "uint8",
                vec![Arc::new(UInt8Array::from_iter_values(
                    (0..5000).map(|i| i as u8),
                ))],
                false,
            ),
            (
                "timestamps with a zone",
                vec![Arc::new(
                    TimestampMicrosecondArray::from_iter_values(
                        (0..5000).map(|i| 1_700_000_000_000_000 + i * 1000),
                    )
                    .with_timezone("+01:00"),
                )],
                true,
            ),
            (
                "unique names",
                vec![Arc::new(StringArray::from_iter_values(
                    (0..5000).map(|i| format!("user-{i}")),
                ))],
                true,
            ),
            (
                "50 names",
                vec![Arc::new(StringArray::from_iter_values(
                    (0..5000).map(|i| format!("user-{}", i % 50)),
                ))],
                false,
            ),
            // 49 in 50 null: too few values to choose
            (
                "mostly null",
                vec![Arc::new(Int64Array::from_iter(
                    (0..5000).map(|i| (i % 50 == 0).then_some(i)),
                ))],
                false,
            ),
            // 9 in 10 null (a sparse table's column), the 500 values distinct
            (
                "sparse ids",
                vec![Arc::new(Int64Array::from_iter(
                    (0..5000).map(|i| (i % 10 == 0).then_some(i)),
                ))],
                true,
            ),
            (
                "nulls among ids",
                vec![Arc::new(Int64Array::from_iter(
                    (0..5000).map(|i| (i % 3 != 0).then_some(i)),
                ))],
                true,
            ),
            // a slice views part of a buffer whose other values repeat
            (
                "slice",
                vec![Arc::new(
                    Int64Array::from_iter_values(
                        (0..4000).map(|i| if i < 2000 { i % 5 } else { i }),
                    )
                    .slice(2000, 2000),
                )],
                true,
            ),
        ];
        for (what, cols, want) in cases {
            let bs = batches(cols);
            assert_eq!(exact(&bs), want, "{what}: the reference count");
            assert_eq!(plain_is_better(&bs, 0), want, "{what}");
        }
    }

    #[test]
    fn the_estimate_is_within_ten_percent_of_the_exact_count() {
        for distinct in [1500usize, 20_000, 300_000] {
            let values = scatter(distinct, distinct as u64);
            let exact = values.iter().collect::<HashSet<_>>().len() as f64;
            // each value three times, in an order that is not sorted
            let hashes = values.iter().cycle().take(3 * distinct).map(|&v| mix(v));
            let got = estimate_distinct(hashes);
            assert!((got / exact - 1.0).abs() < 0.1, "{got} for {exact}");
        }
    }

    #[test]
    fn floats_lists_and_tensors_are_not_decided_here() {
        use arrow_schema::Field;
        let item = Arc::new(Field::new("item", DataType::Int64, true));
        for dt in [
            DataType::Float64,
            DataType::Float32,
            DataType::Boolean,
            DataType::List(item.clone()),
            DataType::FixedSizeList(item, 4),
        ] {
            assert!(!decides(&dt), "{dt}");
        }
    }
}
