//! SPEC §4.3 as properties: random schemas and values → writer (records, columns, values) → reader
//! → the same table. Values are compared exactly (floats bit for bit: NaN payloads, -0.0). The
//! types read back are what the msgpack the writer produced says, which is not always the type
//! written: [`expected_type`] states the rules, each with its reason.

use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::cast::AsArray;
use arrow_array::*;
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use half::f16;
use msgpack_arrow::{Layout, ReaderBuilder, WriterBuilder};
use proptest::prelude::*;

use crate::common::{norm_array, norm_type};

/// A column type, as the strategies build it.
#[derive(Debug, Clone, PartialEq)]
enum T {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
    Bool,
    Utf8,
    Bin,
    /// FixedSizeList of `F32` or `I16` (or of such a FixedSizeList: a 2-d tensor), k = 0..=4
    /// elements (k = 0 is a valid Arrow type, and an ndarray of shape (0,) is valid numpy)
    Fsl(Box<T>, i32),
    /// A ragged 1-d tensor column: List of `F32` or `I16` tagged as ndarrays in the field metadata,
    /// so each row is written as an ndarray of its own length (only as a top-level column: the
    /// metadata is the column's)
    Ragged(Box<T>),
    List(Box<T>),
    /// fields named from [`NAMES`]
    Struct(Vec<(String, T)>),
}

impl T {
    fn arrow(&self) -> DataType {
        use DataType as D;
        match self {
            T::I8 => D::Int8,
            T::I16 => D::Int16,
            T::I32 => D::Int32,
            T::I64 => D::Int64,
            T::U8 => D::UInt8,
            T::U16 => D::UInt16,
            T::U32 => D::UInt32,
            T::U64 => D::UInt64,
            T::F16 => D::Float16,
            T::F32 => D::Float32,
            T::F64 => D::Float64,
            T::Bool => D::Boolean,
            T::Utf8 => D::Utf8,
            T::Bin => D::Binary,
            T::Fsl(t, k) => D::FixedSizeList(Arc::new(Field::new("item", t.arrow(), true)), *k),
            T::Ragged(t) => D::List(Arc::new(Field::new("item", t.arrow(), true))),
            T::List(t) => D::List(Arc::new(Field::new("item", t.arrow(), true))),
            T::Struct(ts) => D::Struct(struct_fields(ts)),
        }
    }
}

fn struct_fields(ts: &[(String, T)]) -> Fields {
    ts.iter()
        .map(|(n, t)| Field::new(n, t.arrow(), true))
        .collect()
}

/// Column and field names: plain, empty, non-ASCII, and the keys msgpack-numpy's special maps use.
const NAMES: &[&str] = &[
    "c",
    "",
    "é ü",
    "0",
    "value",
    "nd",
    "type",
    "kind",
    "shape",
    "data",
    "complex",
    "__ndarray__",
    "dtype",
];

/// Distinct names for `n` fields, in random order.
fn names(n: usize) -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(NAMES, n)
        .prop_shuffle()
        .prop_map(|v| v.into_iter().map(String::from).collect())
}

/// Whether a map with these keys would be read as a msgpack-numpy special map (an ndarray or
/// numpy scalar, a Python complex, an openpi ndarray) whatever its values: SPEC §1 makes a map
/// with the full key set special, so a record or struct with exactly these field names cannot
/// round-trip as a map. Such schemas are left out (only they).
fn special_keys(keys: &[&str]) -> bool {
    let has = |k: &str| keys.contains(&k);
    (has("nd") && has("type") && has("data"))
        || (has("complex") && has("data"))
        || (has("__ndarray__") && has("dtype") && has("shape") && has("data"))
}

fn any_special(t: &T) -> bool {
    match t {
        T::Struct(fs) => {
            special_keys(&fs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())
                || fs.iter().any(|(_, t)| any_special(t))
        }
        T::List(t) | T::Fsl(t, _) | T::Ragged(t) => any_special(t),
        _ => false,
    }
}

fn leaf() -> impl Strategy<Value = T> {
    prop_oneof![
        Just(T::I8),
        Just(T::I16),
        Just(T::I32),
        Just(T::I64),
        Just(T::U8),
        Just(T::U16),
        Just(T::U32),
        Just(T::U64),
        Just(T::F16),
        Just(T::F32),
        Just(T::F64),
        Just(T::Bool),
        Just(T::Utf8),
        Just(T::Bin),
    ]
}

fn ty() -> impl Strategy<Value = T> {
    let base = prop_oneof![
        6 => leaf(),
        2 => (prop_oneof![Just(T::F32), Just(T::I16)], 0..=4i32)
            .prop_map(|(t, k)| T::Fsl(Box::new(t), k)),
        // a 2-d tensor, shape (k, j): FSL(FSL(T, j), k)
        1 => (prop_oneof![Just(T::F32), Just(T::I16)], 0..=3i32, 0..=3i32)
            .prop_map(|(t, j, k)| T::Fsl(Box::new(T::Fsl(Box::new(t), j)), k)),
    ];
    base.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| T::List(Box::new(t))),
            prop::collection::vec(inner, 1..4)
                .prop_flat_map(|ts| (names(ts.len()), Just(ts)))
                .prop_map(|(ns, ts)| T::Struct(ns.into_iter().zip(ts).collect())),
        ]
    })
}

/// SplitMix64: values are drawn from a seed, so proptest shrinks the schema, the row count and
/// the seed, and a failure reproduces from those three.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// Mostly edge values (0, ±1, MIN, MAX), else any bits.
    fn int_bits(&mut self, min: i128, max: i128) -> i128 {
        match self.below(8) {
            0 => min,
            1 => max,
            2 => 0,
            3 => 1.clamp(min, max),
            4 => (-1).clamp(min, max),
            _ => min + (self.next() as i128).rem_euclid(max - min + 1),
        }
    }
    /// Float bits with specials: ±0, ±inf, NaN with payloads (quiet and signalling, either sign),
    /// subnormals, or any bits.
    fn f64_bits(&mut self) -> u64 {
        let sign = self.next() << 63;
        match self.below(8) {
            0 => sign,                                               // ±0.0
            1 => sign | 0x7ff0_0000_0000_0000,                       // ±inf
            2 => sign | 0x7ff8_0000_0000_0000 | self.below(1 << 51), // quiet NaN + payload
            3 => sign | 0x7ff0_0000_0000_0001 | self.below(1 << 50), // signalling NaN
            4 => sign | self.below(1 << 52),                         // subnormal
            _ => self.next(),
        }
    }
    fn f32_bits(&mut self) -> u32 {
        let sign = ((self.next() & 1) as u32) << 31;
        match self.below(8) {
            0 => sign,
            1 => sign | 0x7f80_0000,
            2 => sign | 0x7fc0_0000 | self.below(1 << 22) as u32,
            3 => sign | 0x7f80_0001 | self.below(1 << 21) as u32,
            4 => sign | self.below(1 << 23) as u32,
            _ => self.next() as u32,
        }
    }
    fn f16_bits(&mut self) -> u16 {
        let sign = ((self.next() & 1) as u16) << 15;
        match self.below(8) {
            0 => sign,
            1 => sign | 0x7c00,
            2 => sign | 0x7e00 | self.below(1 << 9) as u16,
            3 => sign | 0x7c01 | self.below(1 << 8) as u16,
            4 => sign | self.below(1 << 10) as u16,
            _ => self.next() as u16,
        }
    }
    fn bytes(&mut self) -> Vec<u8> {
        (0..self.below(6)).map(|_| self.next() as u8).collect()
    }
    fn string(&mut self) -> String {
        const CHARS: &[char] = &['a', 'Z', '0', ' ', '\0', 'é', 'ß', '€', '😀', '\u{10ffff}'];
        (0..self.below(6))
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize])
            .collect()
    }
}

/// `n` random values of `t`; each slot null with probability `null_pct` %.
fn gen(t: &T, n: usize, null_pct: u64, rng: &mut Rng) -> ArrayRef {
    let valid: Vec<bool> = (0..n).map(|_| !rng.chance(null_pct)).collect();
    let nulls = || {
        if valid.iter().all(|v| *v) {
            None
        } else {
            Some(NullBuffer::from(valid.clone()))
        }
    };
    macro_rules! ints {
        ($arr:ty, $t:ty) => {{
            let v: Vec<$t> = (0..n)
                .map(|_| rng.int_bits(<$t>::MIN as i128, <$t>::MAX as i128) as $t)
                .collect();
            Arc::new(<$arr>::new(ScalarBuffer::from(v), nulls())) as ArrayRef
        }};
    }
    match t {
        T::I8 => ints!(Int8Array, i8),
        T::I16 => ints!(Int16Array, i16),
        T::I32 => ints!(Int32Array, i32),
        T::I64 => ints!(Int64Array, i64),
        T::U8 => ints!(UInt8Array, u8),
        T::U16 => ints!(UInt16Array, u16),
        T::U32 => ints!(UInt32Array, u32),
        T::U64 => ints!(UInt64Array, u64),
        T::F16 => {
            let v: Vec<f16> = (0..n).map(|_| f16::from_bits(rng.f16_bits())).collect();
            Arc::new(Float16Array::new(ScalarBuffer::from(v), nulls()))
        }
        T::F32 => {
            let v: Vec<f32> = (0..n).map(|_| f32::from_bits(rng.f32_bits())).collect();
            Arc::new(Float32Array::new(ScalarBuffer::from(v), nulls()))
        }
        T::F64 => {
            let v: Vec<f64> = (0..n).map(|_| f64::from_bits(rng.f64_bits())).collect();
            Arc::new(Float64Array::new(ScalarBuffer::from(v), nulls()))
        }
        T::Bool => {
            let mut b = BooleanBufferBuilder::new(n);
            (0..n).for_each(|_| b.append(rng.chance(50)));
            Arc::new(BooleanArray::new(b.finish(), nulls()))
        }
        T::Utf8 => {
            let v: Vec<Option<String>> = valid.iter().map(|ok| ok.then(|| rng.string())).collect();
            Arc::new(StringArray::from(v))
        }
        T::Bin => {
            let v: Vec<Option<Vec<u8>>> = valid.iter().map(|ok| ok.then(|| rng.bytes())).collect();
            Arc::new(BinaryArray::from_iter(v))
        }
        T::Ragged(c) => {
            // ndarray elements are never null; rows may be, and empty (shape (0,))
            let lens: Vec<usize> = (0..n).map(|_| rng.below(4) as usize).collect();
            let child = gen(c, lens.iter().sum(), 0, rng);
            let f = Arc::new(Field::new("item", c.arrow(), true));
            Arc::new(ListArray::new(
                f,
                OffsetBuffer::from_lengths(lens),
                child,
                nulls(),
            ))
        }
        T::Fsl(c, k) => {
            // tensor elements are never null (an ndarray has no nulls); rows may be
            let child = gen(c, n * *k as usize, 0, rng);
            let f = Arc::new(Field::new("item", c.arrow(), true));
            Arc::new(FixedSizeListArray::try_new_with_length(f, *k, child, nulls(), n).unwrap())
        }
        T::List(c) => {
            let lens: Vec<usize> = (0..n).map(|_| rng.below(4) as usize).collect();
            let child = gen(c, lens.iter().sum(), 20, rng);
            let f = Arc::new(Field::new("item", c.arrow(), true));
            Arc::new(ListArray::new(
                f,
                OffsetBuffer::from_lengths(lens),
                child,
                nulls(),
            ))
        }
        T::Struct(ts) => {
            let kids: Vec<ArrayRef> = ts.iter().map(|(_, c)| gen(c, n, 20, rng)).collect();
            Arc::new(StructArray::new(struct_fields(ts), kids, nulls()))
        }
    }
}

/// A table of these column types, `rows` rows, split into batches at random points.
fn table(cols: &[Col], rows: usize, seed: u64) -> (SchemaRef, Vec<RecordBatch>) {
    let mut rng = Rng(seed);
    let fields: Vec<Field> = cols
        .iter()
        .map(|(name, t, _)| {
            let f = Field::new(name, t.arrow(), true);
            match t {
                T::Ragged(c) => f.with_metadata(
                    [
                        ("msgpack_numpy.kind".to_string(), "ndarray".to_string()),
                        (
                            "msgpack_numpy.dtype".to_string(),
                            if **c == T::F32 { "<f4" } else { "<i2" }.to_string(),
                        ),
                    ]
                    .into_iter()
                    .collect::<std::collections::HashMap<_, _>>(),
                ),
                _ => f,
            }
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let arrays: Vec<ArrayRef> = cols
        .iter()
        .map(|(_, t, nullable)| gen(t, rows, if *nullable { 25 } else { 0 }, &mut rng))
        .collect();
    let whole = RecordBatch::try_new(schema.clone(), arrays).unwrap();
    let mut batches = Vec::new();
    let mut at = 0;
    while at < rows {
        let n = (1 + rng.below(rows as u64) as usize).min(rows - at);
        batches.push(whole.slice(at, n));
        at += n;
    }
    (schema, batches)
}

/// The bytes written; the writer that only counts them ([`WriterBuilder::build_count`]) must
/// come to the same length.
fn write(schema: &SchemaRef, batches: &[RecordBatch], layout: Layout) -> Vec<u8> {
    let builder = WriterBuilder::new().with_layout(layout);
    let mut w = builder.clone().build(Vec::new(), schema.clone()).unwrap();
    let mut count = builder.build_count(schema.clone()).unwrap();
    for b in batches {
        w.write(b).unwrap();
        count.write(b).unwrap();
    }
    let bytes = w.finish().unwrap();
    assert_eq!(count.finish_count().unwrap(), bytes.len() as u64);
    bytes
}

fn read(bytes: &[u8], layout: Layout, batch_size: usize) -> RecordBatch {
    let r = ReaderBuilder::new()
        .with_layout(layout)
        .with_batch_size(batch_size)
        .build_from_slice(bytes)
        .unwrap();
    let schema = r.schema();
    let batches = r.collect::<msgpack_arrow::Result<Vec<_>>>().unwrap();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// The rows of `a` that are not null.
fn visible(a: &ArrayRef) -> ArrayRef {
    match a.logical_nulls() {
        None => a.clone(),
        Some(n) => {
            arrow_select::filter::filter(a, &BooleanArray::new(n.into_inner(), None)).unwrap()
        }
    }
}

/// The type the reader gives back for a column written from `a`: the type written, except that
/// what has no non-null value anywhere reads back as `Null` (an all-null column, the items of lists
/// that are all empty or null, a struct field null in every row). msgpack's nil and `[]` carry no
/// type, and nothing in a records/columns/values file records one, so this is by design. Tensors
/// (FixedSizeList) are ndarrays, whose dtype travels with them.
fn expected_type(a: &ArrayRef) -> DataType {
    let v = visible(a);
    if v.is_empty() {
        return DataType::Null;
    }
    match a.data_type() {
        DataType::List(_) => {
            let l = v.as_list::<i32>();
            let off = l.value_offsets();
            let (start, end) = (off[0] as usize, off[off.len() - 1] as usize);
            let child = l.values().slice(start, end - start);
            DataType::List(Arc::new(Field::new("item", expected_type(&child), true)))
        }
        DataType::Struct(fs) => DataType::Struct(
            fs.iter()
                .zip(v.as_struct().columns())
                .map(|(f, c)| Field::new(f.name(), expected_type(c), true))
                .collect(),
        ),
        t => t.clone(),
    }
}

/// A column: name, type, whether it has nulls.
type Col = (String, T, bool);

fn check(
    cols: &[Col],
    rows: usize,
    seed: u64,
    layout: Layout,
    batch_size: usize,
) -> Result<(), TestCaseError> {
    let (schema, batches) = table(cols, rows, seed);
    let bytes = write(&schema, &batches, layout);
    let back = read(&bytes, layout, batch_size);
    // what was read (with the field metadata the reader added) writes back the same bytes (§4.2
    // for our own output)
    let again = write(&back.schema(), std::slice::from_ref(&back), layout);
    prop_assert!(again == bytes, "read then written again: different bytes");
    let want = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    prop_assert_eq!(back.num_rows(), want.num_rows());
    prop_assert_eq!(back.num_columns(), want.num_columns());
    for i in 0..want.num_columns() {
        let name = schema.field(i).name();
        // the values layout has one column, always named `value` (SPEC §2)
        let want_name = if layout == Layout::Values {
            "value"
        } else {
            name.as_str()
        };
        let back_schema = back.schema();
        prop_assert_eq!(back_schema.field(i).name().as_str(), want_name);
        let (a, b) = (want.column(i), back.column(i));
        // a tensor column: its dtype is in each ndarray, and it reads back as a FixedSizeList when
        // every row has the same shape (SPEC §3), else as a List
        let expected = if schema
            .field(i)
            .metadata()
            .contains_key("msgpack_numpy.kind")
        {
            let v = visible(a);
            let lens: Vec<usize> = (0..v.len())
                .map(|r| v.as_list::<i32>().value_length(r) as usize)
                .collect();
            match (a.data_type(), lens.first()) {
                (_, None) => DataType::Null,
                (DataType::List(item), Some(&k)) if lens.iter().all(|&l| l == k) => {
                    DataType::FixedSizeList(item.clone(), k as i32)
                }
                (t, _) => t.clone(),
            }
        } else {
            expected_type(a)
        };
        prop_assert_eq!(
            norm_type(&expected),
            norm_type(b.data_type()),
            "column {} type",
            name
        );
        // where a part came back as Null (see `expected_type`), compare in the type written:
        // casting Null to any type gives nulls
        let b = &arrow_cast::cast(b, a.data_type()).unwrap();
        let (x, y) = (norm_array(a), norm_array(b));
        prop_assert!(
            x.to_data() == y.to_data(),
            "column {} values:\nwrote {:?}\nread  {:?}",
            name,
            a,
            b
        );
    }
    Ok(())
}

fn columns(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Col>> {
    let column_type = prop_oneof![
        8 => ty(),
        1 => prop_oneof![Just(T::F32), Just(T::I16)].prop_map(|t| T::Ragged(Box::new(t))),
    ];
    prop::collection::vec((column_type, any::<bool>()), n)
        .prop_flat_map(|ts| (names(ts.len()), Just(ts)))
        .prop_map(|(ns, ts)| {
            ns.into_iter()
                .zip(ts)
                .map(|(n, (t, b))| (n, t, b))
                .collect::<Vec<_>>()
        })
        .prop_filter(
            "a record with the full key set of an ndarray map is one",
            |cols: &Vec<Col>| {
                let keys: Vec<&str> = cols.iter().map(|c| c.0.as_str()).collect();
                !special_keys(&keys) && !cols.iter().any(|c| any_special(&c.1))
            },
        )
}

proptest! {
    // 128 cases each by default (about a second in a debug build); PROPTEST_CASES=N for a long run
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(128)
    ))]

    #[test]
    fn records_round_trip(cols in columns(1..5), rows in 1..24usize, seed in any::<u64>(), bs in 1..8usize) {
        check(&cols, rows, seed, Layout::Records, bs)?;
    }

    #[test]
    fn columns_round_trip(cols in columns(1..5), rows in 1..24usize, seed in any::<u64>(), bs in 1..8usize) {
        check(&cols, rows, seed, Layout::Columns, bs)?;
    }

    #[test]
    fn values_round_trip(cols in columns(1..2), rows in 1..24usize, seed in any::<u64>(), bs in 1..8usize) {
        check(&cols, rows, seed, Layout::Values, bs)?;
    }
}
