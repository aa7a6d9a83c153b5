//! Bytes keys of nested maps, tagged on the struct fields they become by where they sit
//! (`crate::read::infer::key_paths`), on every inference path.

use super::inference::fast_or_full;
use super::*;

/// The schema `data` reads with as records.
fn records_schema(data: &[u8]) -> arrow_schema::SchemaRef {
    ReaderBuilder::new()
        .with_layout(Layout::Records)
        .build_from_slice(data)
        .unwrap()
        .schema()
}

/// The key tag of field `f` (`Some("bin")` where its key was bin).
fn key(f: &arrow_schema::Field) -> Option<String> {
    f.metadata().get(crate::types::meta::KEY).cloned()
}

/// Bytes keys of nested maps are tagged by where they sit (a record's `x.b`, the maps in a list
/// `y`), first seen, the same whether rows that fit are skipped (the fast path, also in pieces
/// on threads) or every row is walked; a str key of the same name elsewhere is not tagged.
#[test]
fn nested_bin_keys_are_tagged_by_path_on_every_inference_path() {
    use rmp::encode::{write_bin, write_map_len, write_sint, write_str};
    let mut data = Vec::new();
    for i in 0..40i64 {
        write_map_len(&mut data, 3).unwrap();
        write_str(&mut data, "x").unwrap();
        // from row 20 on, x has a bin key "b" besides its str "a"
        write_map_len(&mut data, if i < 20 { 1 } else { 2 }).unwrap();
        write_str(&mut data, "a").unwrap();
        write_sint(&mut data, i).unwrap();
        if i >= 20 {
            write_bin(&mut data, b"b").unwrap();
            write_sint(&mut data, -i).unwrap();
        }
        write_str(&mut data, "y").unwrap();
        rmp::encode::write_array_len(&mut data, 1).unwrap();
        write_map_len(&mut data, 1).unwrap();
        write_bin(&mut data, b"a").unwrap();
        write_sint(&mut data, i).unwrap();
        write_str(&mut data, "z").unwrap();
        write_map_len(&mut data, 1).unwrap();
        write_str(&mut data, "b").unwrap();
        write_sint(&mut data, i).unwrap();
    }
    let b = ReaderBuilder::new().with_layout(Layout::Records);
    let full = fast_or_full(&b, &data, false, false);
    assert_eq!(fast_or_full(&b, &data, true, false), full);
    assert_eq!(fast_or_full(&b, &data, true, true), full);
    let schema = records_schema(&data);
    let DataType::Struct(x) = schema.field(0).data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!((key(&x[0]), key(&x[1])), (None, Some("bin".to_string())));
    let DataType::List(item) = schema.field(1).data_type() else {
        panic!("{schema:?}")
    };
    let DataType::Struct(y) = item.data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!(key(&y[0]), Some("bin".to_string()));
    let DataType::Struct(z) = schema.field(2).data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!(key(&z[0]), None);
}

/// Key paths cannot collide whatever bytes keys hold: a bin key `a\0b` of `x` and the str key
/// `b` of `x.a` are two places (a NUL-joined path made them one).
#[test]
fn key_paths_of_keys_holding_any_bytes_do_not_collide() {
    use rmp::encode::{write_bin, write_map_len, write_sint, write_str};
    let mut data = Vec::new();
    write_map_len(&mut data, 1).unwrap();
    write_str(&mut data, "x").unwrap();
    write_map_len(&mut data, 2).unwrap();
    write_bin(&mut data, b"a\0b").unwrap();
    write_sint(&mut data, 1).unwrap();
    write_str(&mut data, "a").unwrap();
    write_map_len(&mut data, 1).unwrap();
    write_str(&mut data, "b").unwrap();
    write_sint(&mut data, 2).unwrap();
    let schema = records_schema(&data);
    let DataType::Struct(x) = schema.field(0).data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!(key(&x[0]), Some("bin".to_string()));
    let DataType::Struct(a) = x[1].data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!((key(&x[1]), key(&a[0])), (None, None));
}

/// Columns of one type share one field (a wide table's), yet each gets its own nested key tags:
/// `x` and `z` (bin `k`) tagged, `y` (str `k`) not, though its field is made from `x`'s.
#[test]
fn columns_sharing_a_type_keep_their_own_nested_key_tags() {
    use rmp::encode::{write_bin, write_map_len, write_sint, write_str};
    let mut data = Vec::new();
    write_map_len(&mut data, 3).unwrap();
    for (col, bin) in [("x", true), ("y", false), ("z", true)] {
        write_str(&mut data, col).unwrap();
        write_map_len(&mut data, 1).unwrap();
        if bin {
            write_bin(&mut data, b"k").unwrap();
        } else {
            write_str(&mut data, "k").unwrap();
        }
        write_sint(&mut data, 1).unwrap();
    }
    let schema = records_schema(&data);
    let tags: Vec<Option<String>> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Struct(fs) => key(&fs[0]),
            t => panic!("{t}"),
        })
        .collect();
    let bin = Some("bin".to_string());
    assert_eq!(tags, vec![bin.clone(), None, bin]);
}

/// A `values` row that is a map (its struct column `value`) keeps its bin keys too, at any
/// depth, and the writer writes them back as they were: byte for byte.
#[test]
fn bin_keys_of_maps_in_the_values_layout_are_tagged_and_written_back() {
    use rmp::encode::{write_bin, write_map_len, write_sint, write_str};
    let mut data = Vec::new();
    for i in 0..30i64 {
        write_map_len(&mut data, 2).unwrap();
        write_bin(&mut data, b"nd").unwrap();
        write_sint(&mut data, i).unwrap();
        write_str(&mut data, "m").unwrap();
        write_map_len(&mut data, 1).unwrap();
        write_bin(&mut data, b"k").unwrap();
        write_sint(&mut data, -i).unwrap();
    }
    let b = ReaderBuilder::new().with_layout(Layout::Values);
    let full = fast_or_full(&b, &data, false, false);
    assert_eq!(fast_or_full(&b, &data, true, false), full);
    let r = b.build_from_slice(&data).unwrap();
    let schema = r.schema();
    let DataType::Struct(v) = schema.field(0).data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!((key(&v[0]), key(&v[1])), (Some("bin".to_string()), None));
    let DataType::Struct(m) = v[1].data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!(key(&m[0]), Some("bin".to_string()));
    let batches: Vec<_> = r.collect::<Result<_>>().unwrap();
    let out = crate::write::write_batches(&batches, Layout::Values).unwrap();
    assert_eq!(out, data);
}

/// Blobs (a binary column of msgpack values) tag the bin keys of their maps as a `values`
/// file does.
#[test]
fn bin_keys_of_maps_in_blobs_are_tagged() {
    use rmp::encode::{write_bin, write_map_len, write_sint, write_str};
    let mut a = Vec::new();
    write_map_len(&mut a, 2).unwrap();
    write_bin(&mut a, b"k").unwrap();
    write_sint(&mut a, 1).unwrap();
    write_str(&mut a, "s").unwrap();
    write_sint(&mut a, 2).unwrap();
    let blobs = arrow_array::BinaryArray::from_iter_values([&a[..], &a[..]]);
    let f = ReaderBuilder::new().infer_blobs(&[&blobs]).unwrap();
    let DataType::Struct(v) = f.data_type() else {
        panic!("{f:?}")
    };
    assert_eq!((key(&v[0]), key(&v[1])), (Some("bin".to_string()), None));
}
