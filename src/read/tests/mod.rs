//! Unit tests of this module (kept apart: the module stays readable).

use super::*;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt8Type};
use arrow_schema::Field;

mod batches;
mod during_walk;
mod fast_cases;
mod inference;
mod key_paths;
mod marked;
mod npy_ext;
mod pieces;

/// Batches written with the default writer, as the reader's schema says.
fn write_back(schema: arrow_schema::SchemaRef, batches: &[arrow_array::RecordBatch]) -> Vec<u8> {
    let mut w = crate::WriterBuilder::new()
        .build(Vec::new(), schema)
        .unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn conflicting_columns_kept_as_raw_msgpack_and_written_back_as_they_were() {
    // {"w": [1, 2] | [[3]] | nil, "x": 1 | "a" | 2, "ok": i}: lists of different depth, int and str
    let mut data = Vec::new();
    let mut raws = Vec::new();
    for (i, (w, x)) in [
        (vec![0x92, 0x01, 0x02], &b"\x01"[..]),
        (vec![0x91, 0x91, 0x03], b"\xa1a"),
        (vec![0xc0], b"\x02"),
    ]
    .into_iter()
    .enumerate()
    {
        data.extend_from_slice(b"\x83\xa1w");
        data.extend_from_slice(&w);
        data.extend_from_slice(b"\xa1x");
        data.extend_from_slice(x);
        data.extend_from_slice(b"\xa2ok");
        rmp::encode::write_sint(&mut data, i as i64).unwrap();
        raws.push((w, x.to_vec()));
    }
    let e = ReaderBuilder::new().build_from_slice(&data).unwrap_err();
    assert!(e.to_string().contains("conflicts=\"binary\""), "{e}");
    let r = ReaderBuilder::new()
        .with_conflicts(Conflicts::Binary)
        .build_from_slice(&data)
        .unwrap();
    let schema = r.schema();
    let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
    let b = &batches[0];
    // w: [1, 2] and [[3]] are lists of different depth; x: int and str
    for (col, pick) in [("w", 0usize), ("x", 1)] {
        let f = schema.field_with_name(col).unwrap();
        assert_eq!(f.data_type(), &arrow_schema::DataType::Binary, "{col}");
        assert_eq!(
            f.metadata().get(meta::KIND).map(String::as_str),
            Some("msgpack")
        );
        let a = b.column_by_name(col).unwrap().as_binary::<i32>();
        for (i, (w, x)) in raws.iter().enumerate() {
            let want = if pick == 0 { w } else { x };
            if want == &[0xc0] {
                assert!(arrow_array::Array::is_null(a, i));
            } else {
                assert_eq!(a.value(i), &want[..], "{col} row {i}");
            }
        }
    }
    assert_eq!(
        b.column_by_name("ok").unwrap().data_type(),
        &arrow_schema::DataType::Int64
    );
    assert_eq!(
        write_back(schema, &batches),
        data,
        "written back byte for byte"
    );
}

#[test]
fn conflicting_list_columns_of_a_columns_map_kept_as_raw_msgpack_too() {
    // {"w": [[1, 2], [[3]], nil], "x": [1, "a", 2], "ok": [0, 1, 2]}: a dict of lists whose
    // lists hold values of several types, as the records above do
    let (w, x) = (
        [&[0x92, 0x01, 0x02][..], &[0x91, 0x91, 0x03], &[0xc0]],
        [&b"\x01"[..], b"\xa1a", b"\x02"],
    );
    let mut data = b"\x83\xa1w\x93".to_vec();
    w.iter().for_each(|v| data.extend_from_slice(v));
    data.extend_from_slice(b"\xa1x\x93");
    x.iter().for_each(|v| data.extend_from_slice(v));
    data.extend_from_slice(b"\xa2ok\x93\x00\x01\x02");
    let e = ReaderBuilder::new().build_from_slice(&data).unwrap_err();
    assert!(e.to_string().contains("conflicts=\"binary\""), "{e}");
    for threads in [1, 4] {
        let r = ReaderBuilder::new()
            .with_conflicts(Conflicts::Binary)
            .with_threads(Some(threads))
            .build_from_slice(&data)
            .unwrap();
        assert_eq!(r.layout(), Layout::Columns);
        let schema = r.schema();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        for (col, values) in [("w", &w), ("x", &x)] {
            let f = schema.field_with_name(col).unwrap();
            assert_eq!(f.data_type(), &arrow_schema::DataType::Binary, "{col}");
            assert_eq!(
                f.metadata().get(meta::KIND).map(String::as_str),
                Some("msgpack")
            );
            let a = batches[0].column_by_name(col).unwrap().as_binary::<i32>();
            for (i, want) in values.iter().enumerate() {
                if *want == [0xc0] {
                    assert!(arrow_array::Array::is_null(a, i));
                } else {
                    assert_eq!(a.value(i), *want, "{col} row {i}");
                }
            }
        }
        // in the layout it was read in
        let mut out = crate::WriterBuilder::new()
            .with_layout(Layout::Auto)
            .build(Vec::new(), schema)
            .unwrap();
        batches.iter().for_each(|b| out.write(b).unwrap());
        assert_eq!(out.finish().unwrap(), data, "written back byte for byte");
    }
}

#[test]
fn integer_keyed_maps_are_map_columns_written_back_as_they_were() {
    // {"id": i, "counts": {1: 0.5, -3: 1.5}} and {"id": 2, "counts": {}}, then nil
    let mut data = Vec::new();
    for (i, entries) in [
        (0i64, vec![(1i64, 0.5f64), (-3, 1.5)]),
        (1, vec![(7, 2.0)]),
        (2, vec![]),
    ] {
        data.extend_from_slice(b"\x82\xa2id");
        rmp::encode::write_sint(&mut data, i).unwrap();
        data.extend_from_slice(b"\xa6counts");
        rmp::encode::write_map_len(&mut data, entries.len() as u32).unwrap();
        for (k, v) in entries {
            rmp::encode::write_sint(&mut data, k).unwrap();
            rmp::encode::write_f64(&mut data, v).unwrap();
        }
    }
    data.extend_from_slice(b"\x82\xa2id\x03\xa6counts\xc0");
    let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
    let schema = r.schema();
    let f = schema.field_with_name("counts").unwrap();
    let arrow_schema::DataType::Map(entries, false) = f.data_type() else {
        panic!("{:?}", f.data_type())
    };
    assert_eq!(
        entries.data_type().to_string(),
        "Struct(\"key\": non-null Int64, \"value\": Float64)"
    );
    let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
    let m = batches[0].column_by_name("counts").unwrap().as_map();
    assert_eq!(m.value_offsets(), &[0, 2, 3, 3, 3]);
    assert!(arrow_array::Array::is_null(m, 3));
    let keys = m.keys().as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(keys.values(), &[1, -3, 7]);
    assert_eq!(
        write_back(schema, &batches),
        data,
        "written back byte for byte"
    );
    // keys of mixed types in one map stay an error that says where
    let bad = b"\x81\xa1m\x82\x01\x01\xa1k\x02";
    let e = ReaderBuilder::new().build_from_slice(bad).unwrap_err();
    assert!(e.to_string().contains("mixes integer keys"), "{e}");
    assert_eq!(e.offset(), Some(6), "the str key");
}

#[test]
fn ever_new_keys_stop_at_the_column_limit() {
    // 300 records, each with a key no other has
    let mut data = Vec::new();
    for i in 0..300 {
        data.push(0x81);
        rmp::encode::write_str(&mut data, &format!("k{i}")).unwrap();
        rmp::encode::write_sint(&mut data, i).unwrap();
    }
    let e = ReaderBuilder::new()
        .with_max_columns(100)
        .build_from_slice(&data)
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TooManyColumns(100)), "{e}");
    assert_eq!(e.record(), Some(100));
    assert!(e.to_string().contains("max_columns"), "{e}");
    // within the limit the table reads
    let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
    assert_eq!(r.schema().fields().len(), 300);
    let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 300);
}

#[test]
fn sparse_records_come_back_with_their_key_sets() {
    // {"a": 1, "b": 2} {"a": 3} {"a": 4, "c": "x"}: keys absent, not nil
    let data = b"\x82\xa1a\x01\xa1b\x02\x81\xa1a\x03\x82\xa1a\x04\xa1c\xa1x".to_vec();
    let write = |m: crate::Missing| {
        let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
        let schema = r.schema();
        let mut w = crate::WriterBuilder::new()
            .with_missing(m)
            .build(Vec::new(), schema)
            .unwrap();
        for b in r {
            w.write(&b.unwrap()).unwrap();
        }
        w.finish().unwrap()
    };
    let r = ReaderBuilder::new().build_from_slice(&data).unwrap();
    assert_eq!(
        r.schema().metadata().get(meta::MISSING).map(String::as_str),
        Some("absent")
    );
    assert_eq!(write(crate::Missing::Auto), data, "key sets as they were");
    let nils = write(crate::Missing::Nil);
    assert_eq!(&nils[..11], b"\x83\xa1a\x01\xa1b\x02\xa1c\xc0\x83");
    // records that all have every key say nothing
    let full = b"\x81\xa1a\x01\x81\xa1a\x02";
    let r = ReaderBuilder::new().build_from_slice(full).unwrap();
    assert!(r.schema().metadata().get(meta::MISSING).is_none());
}

#[test]
fn a_cut_anywhere_keeps_the_complete_records_before_it() {
    // records {"id": i, "v": [i as f64; i % 3]} written by rmp, their ends noted as written
    let mut data = Vec::new();
    let mut ends = Vec::new();
    for i in 0..12i64 {
        rmp::encode::write_map_len(&mut data, 2).unwrap();
        rmp::encode::write_str(&mut data, "id").unwrap();
        rmp::encode::write_sint(&mut data, i * 1000).unwrap();
        rmp::encode::write_str(&mut data, "v").unwrap();
        rmp::encode::write_array_len(&mut data, (i % 3) as u32).unwrap();
        for _ in 0..i % 3 {
            rmp::encode::write_f64(&mut data, i as f64).unwrap();
        }
        ends.push(data.len());
    }
    let ids = |r: Reader| -> Vec<i64> {
        r.flat_map(|b| {
            let b = b.unwrap();
            let c = b.column_by_name("id").unwrap().clone();
            c.as_primitive::<arrow_array::types::Int64Type>()
                .values()
                .to_vec()
        })
        .collect()
    };
    for cut in 1..data.len() {
        let kept = ends.iter().filter(|&&e| e <= cut).count();
        let want: Vec<i64> = (0..kept as i64).map(|i| i * 1000).collect();
        let at = if kept == 0 { 0 } else { ends[kept - 1] };
        let b = || {
            ReaderBuilder::new()
                .with_on_truncated(OnTruncated::Keep)
                .with_batch_size(5)
        };
        let r = b().build_from_slice(&data[..cut]).unwrap();
        let t = r.truncation();
        assert_eq!(
            (t.is_some(), ids(r)),
            (at != cut, want.clone()),
            "cut {cut}"
        );
        if at != cut {
            assert_eq!(
                t,
                Some(Truncation {
                    offset: at as u64,
                    objects: kept as u64
                })
            );
        }
        let mut r = b()
            .build(std::io::Cursor::new(data[..cut].to_vec()))
            .unwrap();
        let got: Vec<i64> = r
            .by_ref()
            .flat_map(|b| {
                let b = b.unwrap();
                let c = b.column_by_name("id").unwrap().clone();
                c.as_primitive::<arrow_array::types::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(got, want, "stream, cut {cut}");
        assert_eq!(r.truncation().is_some(), at != cut, "stream, cut {cut}");
        // the default is still a positioned error
        if at != cut {
            let e = ReaderBuilder::new()
                .build_from_slice(&data[..cut])
                .and_then(|r| r.collect::<Result<Vec<_>>>().map(|_| ()))
                .unwrap_err();
            assert!(e.to_string().starts_with("truncated input"), "{e}");
        }
    }
}

#[test]
fn text_and_other_formats_are_refused_under_auto_and_read_with_an_explicit_layout() {
    let cases: [(&[u8], &str); 4] = [
        (
            b"id,name\n1,alpha\n2,beta\n",
            "input looks like text (CSV?), not MessagePack",
        ),
        (
            b"{\"a\": [1, 2, 3], \"b\": \"text\"}\n",
            "input looks like text (JSON?)",
        ),
        (
            b"PAR1\x15\x04\x15\x10",
            "input is a Parquet file, not MessagePack",
        ),
        (b"\x1f\x8b\x08\x00\x00\x00", "input is gzip-compressed data"),
    ];
    for (bytes, want) in cases {
        let e = ReaderBuilder::new().build_from_slice(bytes).unwrap_err();
        assert!(e.to_string().starts_with(want), "{e}");
        assert!(matches!(e.kind(), ErrorKind::NotMsgpack(_)));
        // the streaming entry point decides the same
        let e = ReaderBuilder::new()
            .build(std::io::Cursor::new(bytes.to_vec()))
            .unwrap_err();
        assert!(e.to_string().starts_with(want), "{e}");
    }
    // an explicit values layout reads text as the small integers it is
    let r = ReaderBuilder::new()
        .with_layout(Layout::Values)
        .build_from_slice(b"id,name\n1,alpha\n")
        .unwrap();
    let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 16);
    // a stream of small ints without the shape of text still reads under auto
    let ints: Vec<u8> = (1..=40).collect();
    assert!(ReaderBuilder::new().build_from_slice(&ints).is_ok());
}

/// Overrides apply on every layout (a `columns` file is converted, not decoded into them),
/// an override naming no column is an error, and the Polars types are the schema's and the
/// batches' from the start.
#[test]
fn output_types_are_decided_when_the_reader_is_built() {
    use arrow_array::Array;
    // {"x": [1, 2, 3], "e": [ndarray f4 shape (0,)] * 3}: a columns map
    let empty_nd = map(&[
        ("nd", vec![0xc3]),
        ("type", s("<f4")),
        ("kind", bin(b"")),
        ("shape", vec![0x91, 0x00]),
        ("data", bin(b"")),
    ]);
    let mut cols = vec![0x82];
    cols.extend(s("x"));
    cols.extend([0x93, 1, 2, 3]);
    cols.extend(s("e"));
    cols.push(0x93);
    (0..3).for_each(|_| cols.extend(&empty_nd));
    let f64s = Arc::new(Schema::new(vec![arrow_schema::Field::new(
        "x",
        DataType::Float64,
        true,
    )]));
    let r = ReaderBuilder::new()
        .with_schema_overrides(Some(f64s.clone()))
        .with_polars_types(true)
        .build_from_slice(&cols)
        .unwrap();
    assert_eq!(r.layout(), Layout::Columns);
    let schema = r.schema();
    assert_eq!(schema.field(0).data_type(), &DataType::Float64);
    assert!(matches!(schema.field(1).data_type(), DataType::List(_)));
    assert!(matches!(
        r.decoded_schema().field(1).data_type(),
        DataType::FixedSizeList(_, 0)
    ));
    let b = r.collect_batches().unwrap().remove(0);
    assert_eq!(b.schema(), schema);
    let x = b
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Float64Array>()
        .unwrap();
    assert_eq!(x.values().to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!(b.column(1).len(), 3);
    // without the option, the exact type
    let r = ReaderBuilder::new().build_from_slice(&cols).unwrap();
    assert!(matches!(
        r.schema().field(1).data_type(),
        DataType::FixedSizeList(_, 0)
    ));
    // an override of a column the input lacks
    let other = Arc::new(Schema::new(vec![arrow_schema::Field::new(
        "nope",
        DataType::Float64,
        true,
    )]));
    let e = ReaderBuilder::new()
        .with_schema_overrides(Some(other))
        .build_from_slice(&cols)
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"nope\"") && e.contains("x, e"), "{e}");
}

/// `{key: value}` with bin keys, as Python writes `{b'key': ...}`.
pub(super) fn map(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    rmp::encode::write_map_len(&mut out, entries.len() as u32).unwrap();
    for (k, v) in entries {
        rmp::encode::write_bin(&mut out, k.as_bytes()).unwrap();
        out.extend_from_slice(v);
    }
    out
}
pub(super) fn s(v: &str) -> Vec<u8> {
    let mut o = Vec::new();
    rmp::encode::write_str(&mut o, v).unwrap();
    o
}
pub(super) fn bin(v: &[u8]) -> Vec<u8> {
    let mut o = Vec::new();
    rmp::encode::write_bin(&mut o, v).unwrap();
    o
}

#[test]
fn a_strict_given_schema_refuses_keys_it_lacks() {
    // {"a": 1, "b": 2} as a record, then as a columns map {"a": [1], "b": [2]}
    let rec = [vec![0x82], s("a"), vec![0x01], s("b"), vec![0x02]].concat();
    let col = [
        vec![0x82],
        s("a"),
        vec![0x91, 0x01],
        s("b"),
        vec![0x91, 0x02],
    ]
    .concat();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "a",
        arrow_schema::DataType::Int64,
        true,
    )]));
    for (data, layout, at) in [(&rec, Layout::Records, 4), (&col, Layout::Columns, 5)] {
        let read = |strict: bool| {
            ReaderBuilder::new()
                .with_layout(layout)
                .with_schema(schema.clone())
                .with_strict_schema(strict)
                .build_from_slice(data)
                .and_then(|r| r.collect_batches())
        };
        assert_eq!(read(false).unwrap()[0].num_columns(), 1);
        let e = read(true).unwrap_err();
        assert!(
            e.to_string()
                .contains("key \"b\" is not in the schema the reader was given"),
            "{e}"
        );
        assert_eq!(e.offset(), Some(at), "{layout:?}: the offset of key b");
    }
}

/// Columns of one map are decoded on the pool while the walk goes on, and what goes wrong first
/// in the bytes is what is reported: a value of a column that does not fit the given schema
/// comes before a key the schema lacks (strict) or a key that is not a string, later in the
/// map, with one thread or several.
#[test]
fn the_first_error_in_a_columns_map_is_reported_however_its_columns_are_decoded() {
    let ints = |n: u32| {
        let mut v = Vec::new();
        rmp::encode::write_array_len(&mut v, n).unwrap();
        for i in 0..n {
            rmp::encode::write_sint(&mut v, i as i64).unwrap();
        }
        v
    };
    // "a": [0, 1, 2, "x", 4]: the str at index 3; then the key `z` (or the int 7), then "b"
    let data = |z: &[u8]| {
        let mut data = vec![0x83, 0xa1, b'a', 0x95, 0, 1, 2, 0xa1, b'x', 4];
        data.extend(z);
        data.extend(ints(5));
        data.extend([0xa1, b'b']);
        data.extend(ints(5));
        data
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", arrow_schema::DataType::Int64, true),
        Field::new("b", arrow_schema::DataType::Int64, true),
    ]));
    for threads in [1, 4] {
        for (z, strict) in [(&[0xa1, b'z'][..], true), (&[0x07][..], false)] {
            let e = ReaderBuilder::new()
                .with_layout(Layout::Columns)
                .with_schema(schema.clone())
                .with_strict_schema(strict)
                .with_threads(Some(threads))
                // lists cut into ranges of two rows on the pool: the str is row 1 of the second
                .with_batch_size(2)
                .build_from_slice(&data(z))
                .and_then(|r| r.collect_batches())
                .unwrap_err();
            assert_eq!(e.offset(), Some(7), "{threads} threads, {z:?}: {e}");
            assert_eq!(e.record(), Some(3), "{threads} threads, {z:?}: {e}");
            assert!(e.to_string().contains("\"a\""), "{e}");
        }
    }
}

#[test]
fn openpi_maps_are_ndarrays_under_auto() {
    // openpi_client.msgpack_numpy: {__ndarray__: True, data, dtype, shape}
    let data: Vec<u8> = [1.5f32, -2.0, 3.25]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let nd = map(&[
        ("__ndarray__", vec![0xc3]),
        ("data", bin(&data)),
        ("dtype", s("<f4")),
        ("shape", vec![0x91, 0x03]),
    ]);
    let mut rec = vec![0x81];
    rec.extend(s("obs"));
    rec.extend(nd);
    for dialect in [Dialect::Auto, Dialect::Openpi] {
        let r = ReaderBuilder::new()
            .with_dialect(dialect)
            .with_layout(Layout::Records)
            .build_from_slice(&rec)
            .unwrap();
        let b = r.collect_batches().unwrap().remove(0);
        let v = b
            .column(0)
            .as_fixed_size_list()
            .values()
            .as_primitive::<Float32Type>()
            .values()
            .to_vec();
        assert_eq!(v, [1.5, -2.0, 3.25]);
    }
    // openpi's scalars hold obj.item(); nanosecond datetimes are ints
    let rec = [
        vec![0x81],
        s("t"),
        map(&[
            ("__npgeneric__", vec![0xc3]),
            ("data", vec![0xd3, 0, 0, 0, 0, 0, 0, 0x30, 0x39]),
            ("dtype", s(">M8[ns]")),
        ]),
    ]
    .concat();
    let b = ReaderBuilder::new().build_from_slice(&rec).unwrap();
    let b = b.collect_batches().unwrap().remove(0);
    let t = b
        .column(0)
        .as_primitive::<arrow_array::types::TimestampNanosecondType>();
    assert_eq!(t.value(0), 12345);
    // a value the dtype cannot hold exactly is an error
    for (data, dtype, want) in [
        (
            vec![0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],
            "<i4",
            "a non-integer does not fit",
        ),
        (vec![0xff], "|u1", "-1 does not fit"),
        (vec![0x01], "<c8", "dtype <c8 is not supported"),
        (s("abc"), "<U2", "\"abc\" does not fit"),
    ] {
        let nd = map(&[
            ("__npgeneric__", vec![0xc3]),
            ("data", data),
            ("dtype", s(dtype)),
        ]);
        let mut rec = vec![0x81];
        rec.extend(s("x"));
        rec.extend(nd);
        let e = ReaderBuilder::new()
            .build_from_slice(&rec)
            .and_then(|r| r.collect_batches())
            .unwrap_err();
        assert!(e.to_string().contains(want), "{dtype}: {e}");
    }
    // the msgpack-numpy dialect alone leaves it a user map
    let r = ReaderBuilder::new()
        .with_dialect(Dialect::MsgpackNumpy)
        .with_layout(Layout::Records)
        .build_from_slice(&rec)
        .unwrap();
    assert!(matches!(
        r.schema().field(0).data_type(),
        arrow_schema::DataType::Struct(_)
    ));
}

#[test]
fn js_dialect_reads_u8_as_bytes_only_when_asked() {
    // msgpack-numpy-js writes Uint8Array as type "<U8"; numpy reads that as 8-char strings
    let nd = map(&[
        ("nd", vec![0xc3]),
        ("type", s("<U8")),
        ("shape", vec![0x91, 0x20]),
        ("data", bin(&[7u8; 32])),
    ]);
    let r = ReaderBuilder::new()
        .with_dialect(Dialect::Js)
        .build_from_slice(&nd)
        .unwrap();
    let b = r.collect_batches().unwrap().remove(0);
    assert_eq!(
        b.column(0).as_primitive::<UInt8Type>().values().to_vec(),
        vec![7u8; 32]
    );
    // to numpy, "<U8" is 8 characters of 4 bytes: 32 bytes cannot hold 32 of them
    let e = ReaderBuilder::new().build_from_slice(&nd).err().unwrap();
    assert!(
        e.to_string().contains("shape [32] of <U8 needs 1024"),
        "{e}"
    );
}

#[test]
fn a_stream_of_arrays_read_from_a_reader_is_one_row_per_array() {
    // [1, 2, 3] [4, 5] [6]: each top-level array is one row, however few objects are buffered to
    // infer from (one, with infer_rows = 1)
    let mut data = Vec::new();
    for a in [&[1i64, 2, 3][..], &[4, 5], &[6]] {
        rmp::encode::write_array_len(&mut data, a.len() as u32).unwrap();
        for &v in a {
            rmp::encode::write_sint(&mut data, v).unwrap();
        }
    }
    for infer in [None, Some(1), Some(2)] {
        let r = ReaderBuilder::new()
            .with_infer_rows(infer)
            .build(std::io::Cursor::new(data.clone()))
            .unwrap();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        let col = arrow_select::concat::concat(
            &batches
                .iter()
                .map(|b| b.column(0).as_ref())
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let l = col.as_list::<i32>();
        assert_eq!(arrow_array::Array::len(l), 3, "infer_rows {infer:?}");
        assert_eq!(l.value_offsets(), &[0, 3, 5, 6], "infer_rows {infer:?}");
    }
}

/// Columns of one type share the field made for the first (renamed): a bin key and a list
/// column still tag only their own field.
#[test]
fn columns_of_one_type_keep_their_own_key_and_list_tags() {
    fn key(o: &mut Vec<u8>, k: &str, as_bin: bool) {
        if as_bin {
            rmp::encode::write_bin(o, k.as_bytes()).unwrap();
        } else {
            rmp::encode::write_str(o, k).unwrap();
        }
    }
    fn f8_pair(o: &mut Vec<u8>) {
        rmp::encode::write_map_len(o, 5).unwrap();
        for (k, v) in [
            ("nd", &b"\xc3"[..]),
            ("type", b"\xa3<f8"),
            ("kind", b"\xc4\x00"),
            ("shape", b"\x91\x02"),
        ] {
            rmp::encode::write_bin(o, k.as_bytes()).unwrap();
            o.extend_from_slice(v);
        }
        rmp::encode::write_bin(o, b"data").unwrap();
        rmp::encode::write_bin(o, &[0u8; 16]).unwrap();
    }
    let tags = |data: &[u8]| {
        let s = ReaderBuilder::new()
            .build_from_slice(data)
            .unwrap()
            .schema();
        s.fields()
            .iter()
            .map(|f| {
                let md = f.metadata();
                (
                    f.name().clone(),
                    md.get(meta::KEY).cloned(),
                    md.get(meta::COLUMN).cloned(),
                )
            })
            .collect::<Vec<_>>()
    };
    let bin = Some("bin".to_string());
    let list = Some("list".to_string());
    // ndarray columns a, b (a bin key), c, d (a bin key)
    let mut nd = vec![0x84];
    for (k, as_bin) in [("a", false), ("b", true), ("c", false), ("d", true)] {
        key(&mut nd, k, as_bin);
        f8_pair(&mut nd);
    }
    assert_eq!(
        tags(&nd),
        vec![
            ("a".into(), None, None),
            ("b".into(), bin.clone(), None),
            ("c".into(), None, None),
            ("d".into(), bin.clone(), None),
        ]
    );
    // list columns of float64 beside ndarray ones of the same type
    let mut mixed = vec![0x83];
    key(&mut mixed, "x", false);
    f8_pair(&mut mixed);
    for (k, as_bin) in [("l", false), ("m", true)] {
        key(&mut mixed, k, as_bin);
        mixed.extend_from_slice(b"\x92\xcb\x3f\xf0\0\0\0\0\0\0\xcb\x40\0\0\0\0\0\0\0");
    }
    assert_eq!(
        tags(&mixed),
        vec![
            ("x".into(), None, None),
            ("l".into(), None, list.clone()),
            ("m".into(), bin, list),
        ]
    );
}

/// `auto` takes a lone map as a columns map only when it has an entry: `{}` is one record with
/// no columns (the rule in `types::layout`), however the layout is found.
#[test]
fn a_lone_empty_map_is_one_record() {
    let r = ReaderBuilder::new().build_from_slice(&[0x80]).unwrap();
    assert_eq!(r.layout(), Layout::Records);
    let batches = r.collect_batches().unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
}

#[test]
fn a_schema_said_to_be_inferred_refuses_what_a_given_one_converts() {
    // {"x": 1} {"x": true} {"x": 2.0}: a bool and a float in an Int64 column
    let rows = [
        [vec![0x81], s("x"), vec![0x01]].concat(),
        [vec![0x81], s("x"), vec![0xc3]].concat(),
        [
            vec![0x81],
            s("x"),
            vec![0xcb],
            2.0f64.to_be_bytes().to_vec(),
        ]
        .concat(),
    ]
    .concat();
    let ints = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
    let read = |inferred: bool| {
        ReaderBuilder::new()
            .with_schema(ints.clone())
            .with_schema_inferred(inferred)
            .build_from_slice(&rows)
            .and_then(|r| r.collect_batches())
    };
    // the caller's type: each value converted exactly (Python's bool is an int)
    let b = read(false).unwrap();
    let x = b[0]
        .column(0)
        .as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(x.values().to_vec(), vec![1, 1, 2]);
    // a type inferred elsewhere: the bool is the conflict a read of every row reports
    let e = read(true).unwrap_err();
    assert_eq!(e.record(), Some(1), "{e}");
    assert!(e.to_string().contains("found bool"), "{e}");
    // inferred from the first row here (infer_rows): the same
    let e = ReaderBuilder::new()
        .with_infer_rows(Some(1))
        .build_from_slice(&rows)
        .and_then(|r| r.collect_batches())
        .unwrap_err();
    assert_eq!(e.record(), Some(1), "{e}");
}
