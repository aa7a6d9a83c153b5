//! Where batches end (rows, bytes, a big row alone, a columns map's ranges) and what a batch
//! holds: the rows in order, a big array lent from the input where its bytes allow.

use super::*;
use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;

#[test]
fn batches_are_bounded_in_bytes_as_well_as_rows() {
    // 200 records of about 1 KiB each; a batch ends after the row that reaches 10,000 bytes
    let mut data = Vec::new();
    let mut sizes = Vec::new();
    for i in 0..200i64 {
        let at = data.len();
        rmp::encode::write_map_len(&mut data, 2).unwrap();
        rmp::encode::write_str(&mut data, "id").unwrap();
        rmp::encode::write_sint(&mut data, i).unwrap();
        rmp::encode::write_str(&mut data, "v").unwrap();
        rmp::encode::write_bin(&mut data, &vec![i as u8; 1000]).unwrap();
        sizes.push(data.len() - at);
    }
    // the expected batch lengths, from the record sizes
    let mut want = Vec::new();
    let (mut rows, mut bytes) = (0, 0);
    for s in &sizes {
        rows += 1;
        bytes += s;
        if rows == 64 || bytes >= 10_000 {
            want.push(rows);
            (rows, bytes) = (0, 0);
        }
    }
    if rows > 0 {
        want.push(rows);
    }
    assert!(want.len() > 10 && want[0] < 64);
    let b = || {
        ReaderBuilder::new()
            .with_batch_size(64)
            .with_batch_bytes(10_000)
    };
    let check = |r: Reader, how: &str| {
        let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
        let lens: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
        assert_eq!(lens, want, "{how}");
        let ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                b.column_by_name("id")
                    .unwrap()
                    .as_primitive::<arrow_array::types::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(ids, (0..200).collect::<Vec<_>>(), "{how}");
    };
    check(
        b().with_threads(Some(1)).build_from_slice(&data).unwrap(),
        "one thread",
    );
    check(
        b().with_threads(Some(2)).build_from_slice(&data).unwrap(),
        "two threads",
    );
    check(
        b().build(std::io::Cursor::new(data.clone())).unwrap(),
        "a stream",
    );
    // a row wider than the bound is a batch of its own
    let one = ReaderBuilder::new()
        .with_batch_bytes(1)
        .build_from_slice(&data)
        .unwrap();
    assert!(one.map(|b| b.unwrap().num_rows()).all(|n| n == 1));
}

#[test]
fn whole_chunks_make_one_batch_per_columns_map_with_the_same_rows() {
    use arrow_array::{Float64Array, Int64Array, RecordBatch};
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Float64, false),
    ]));
    let map = |n: i64| {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..n)),
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|i| i as f64 / 7.0),
                )),
            ],
        )
        .unwrap();
        crate::write::write_batches(&[batch], Layout::Columns).unwrap()
    };
    // a stream of two maps (chunks): 1000 and 300 rows
    let data = [map(1000), map(300)].concat();
    let read = |whole: bool| {
        let r = ReaderBuilder::new()
            .with_layout(Layout::Columns)
            .with_batch_size(100)
            .with_whole_chunks(whole)
            .build_from_slice(&data)
            .unwrap();
        let schema = r.schema();
        let batches = r.collect::<Result<Vec<_>>>().unwrap();
        let rows: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
        (
            rows,
            arrow_select::concat::concat_batches(&schema, &batches).unwrap(),
        )
    };
    let (cut, cut_table) = read(false);
    let (whole, whole_table) = read(true);
    assert_eq!(cut, [vec![100; 13]].concat());
    assert_eq!(whole, vec![1000, 300]);
    assert_eq!(cut_table, whole_table);
}

/// A columns map of an ndarray and a list: the list is decoded in ranges of rows on the pool, the
/// ndarray whole and sliced to match; the batches are those of one thread, the values the map's,
/// also with the map asked for whole (the ranges joined).
#[test]
fn a_list_in_ranges_beside_an_ndarray_gives_the_batches_of_one_thread() {
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, RecordBatch};
    let schema = Arc::new(arrow_schema::Schema::new(vec![Field::new(
        "a",
        DataType::Int64,
        false,
    )]));
    let a = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(0..1000))],
    )
    .unwrap();
    // {"a": int64 ndarray of 0..1000, "b": [1000, 999, ..., 1]}
    let mut data = crate::write::write_batches(&[a], Layout::Columns).unwrap();
    assert_eq!(data[0], 0x81);
    data[0] = 0x82;
    rmp::encode::write_str(&mut data, "b").unwrap();
    rmp::encode::write_array_len(&mut data, 1000).unwrap();
    for i in 0..1000 {
        rmp::encode::write_sint(&mut data, 1000 - i).unwrap();
    }
    let read = |threads: usize, whole: bool| {
        let batches = ReaderBuilder::new()
            .with_batch_size(100)
            .with_threads(Some(threads))
            .with_whole_chunks(whole)
            .build_from_slice(&data)
            .unwrap()
            .collect_batches()
            .unwrap();
        let rows = if whole { vec![1000] } else { vec![100; 10] };
        assert_eq!(
            batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            rows
        );
        let col = |name: &str| -> Vec<i64> {
            batches
                .iter()
                .flat_map(|b| {
                    b.column_by_name(name)
                        .unwrap()
                        .as_primitive::<Int64Type>()
                        .values()
                        .to_vec()
                })
                .collect()
        };
        assert_eq!(col("a"), (0..1000).collect::<Vec<i64>>());
        assert_eq!(col("b"), (1..=1000).rev().collect::<Vec<i64>>());
        batches
    };
    assert_eq!(read(4, false), read(1, false));
    // one batch for the map: the ranges joined
    assert_eq!(read(4, true), read(1, true));
}

/// A map asked for whole (one batch) whose list is several MiB: decoded in ranges on the pool and
/// joined, the values those of the list, as one thread reads them.
#[test]
fn a_big_list_of_a_whole_map_is_decoded_in_ranges_a_batch_each() {
    use arrow_array::types::UInt64Type;
    let n = 600_000u64;
    // {"b": [0, 1, ...]}, every int as a uint64 (9 bytes): 5.4 MB
    let mut data = vec![0x81, 0xa1, b'b'];
    rmp::encode::write_array_len(&mut data, n as u32).unwrap();
    for i in 0..n {
        data.push(0xcf);
        data.extend((i + (1 << 63)).to_be_bytes());
    }
    let read = |threads: usize| {
        let batches = ReaderBuilder::new()
            .with_threads(Some(threads))
            .with_whole_chunks(true)
            .build_from_slice(&data)
            .unwrap()
            .collect_batches()
            .unwrap();
        let got: Vec<u64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<UInt64Type>().values().to_vec())
            .collect();
        assert_eq!(got, (0..n).map(|i| i + (1 << 63)).collect::<Vec<u64>>());
        batches.len()
    };
    // one thread: the list whole; four: in ranges, not joined (a copy of the column)
    assert_eq!(read(1), 1);
    assert!(read(4) > 1);
}

#[test]
fn a_big_array_alone_in_its_batch_is_a_slice_of_the_input_where_aligned() {
    // three float32 arrays of 300,000 (1.2 MB each) in a values stream, as msgpack_numpy writes
    // them; each ends its batch, and its values are the input's bytes where they are 4-aligned
    const N: usize = 300_000;
    let value = |row: usize, i: usize| (row * N + i) as f32 * 0.25;
    let mut data = Vec::new();
    let mut payloads = Vec::new();
    for row in 0..3 {
        rmp::encode::write_map_len(&mut data, 5).unwrap();
        for (k, v) in [("nd", None), ("type", Some("<f4")), ("kind", Some(""))] {
            rmp::encode::write_bin(&mut data, k.as_bytes()).unwrap();
            match v {
                None => rmp::encode::write_bool(&mut data, true).unwrap(),
                Some(t) if k == "type" => rmp::encode::write_str(&mut data, t).unwrap(),
                Some(t) => rmp::encode::write_bin(&mut data, t.as_bytes()).unwrap(),
            }
        }
        rmp::encode::write_bin(&mut data, b"shape").unwrap();
        rmp::encode::write_array_len(&mut data, 1).unwrap();
        rmp::encode::write_uint(&mut data, N as u64).unwrap();
        rmp::encode::write_bin(&mut data, b"data").unwrap();
        let bytes: Vec<u8> = (0..N).flat_map(|i| value(row, i).to_le_bytes()).collect();
        rmp::encode::write_bin(&mut data, &bytes).unwrap();
        payloads.push(data.len() - bytes.len());
    }
    let total_values = 3 * N * 4;
    // read from a pipe, the rows are copied, in the same batches
    let piped = ReaderBuilder::new()
        .with_layout(Layout::Values)
        .build(std::io::Cursor::new(data.clone()))
        .unwrap();
    let lens: Vec<usize> = piped.map(|b| b.unwrap().num_rows()).collect();
    assert_eq!(lens, [1, 1, 1]);
    // the input at each of four offsets from an allocation's start: every row is aligned under
    // one of them
    for pad in 0..4 {
        let mut v = vec![0u8; pad];
        v.extend_from_slice(&data);
        let input = Buffer::from_vec(v).slice(pad);
        let base = input.as_ptr() as usize;
        for (threads, release) in [(1, false), (2, false), (2, true)] {
            let mut b = ReaderBuilder::new()
                .with_layout(Layout::Values)
                .with_threads(Some(threads))
                .with_max_decoded_bytes(Some(total_values as u64 + 4096));
            // memory only the read holds, freed behind it: never lent out
            let input = if release {
                b = b.releasing_decoded();
                Buffer::from_vec(input.as_slice().to_vec())
            } else {
                input.clone()
            };
            let how = format!("pad {pad}, {threads} threads, release {release}");
            let batches: Vec<RecordBatch> = b
                .build_from_buffer(input)
                .unwrap()
                .map(|b| b.unwrap())
                .collect();
            assert_eq!(batches.len(), 3, "{how}");
            for (row, batch) in batches.iter().enumerate() {
                assert_eq!(batch.num_rows(), 1, "{how}");
                let list = batch.column(0).as_fixed_size_list();
                let values = list.values().as_primitive::<Float32Type>();
                let want: Vec<f32> = (0..N).map(|i| value(row, i)).collect();
                assert_eq!(values.values().as_ref(), &want[..], "{how}, row {row}");
                let at = values.values().as_ptr() as usize;
                let lent = at == base + payloads[row];
                let aligned = (base + payloads[row]) % 4 == 0;
                assert_eq!(lent, aligned && !release, "{how}, row {row}");
            }
        }
    }
}
