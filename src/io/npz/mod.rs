//! NumPy `.npz` files: a zip holding one `<column>.npy` array per column, as `np.savez` writes them.
//!
//! Writing: each column becomes an array of shape `(N, *s)` (`s` from nested FixedSizeList or a
//! `arrow.fixed_shape_tensor` column), with the numpy dtype from the field metadata
//! `msgpack_numpy.dtype` when it matches the Arrow type (so `>f4` or `<U5` come back exactly), else
//! the natural one (`<f4`, `|b1`, `<U{longest}`, `|S{longest}`, `<M8[us]`, ...). The `.npy` headers
//! are byte-for-byte what numpy writes. NPZ needs the row count before any data, so columns are
//! spooled to anonymous temporary files until [`NpzWriter::finish`]. Nulls cannot be stored and are
//! an error naming the column, except in datetime/timedelta columns, where they become NaT.
//!
//! Reading: every `.npy` member (stored or deflated, format 1.0–3.0, C or Fortran order) becomes a
//! column; 1-d arrays are primitive columns, n-d arrays nested FixedSizeList; all must share the
//! length of axis 0.

mod header;
mod reader;
mod writer;

pub use self::reader::{read_npz, read_npz_with};
pub use self::writer::NpzWriter;
use std::io;
use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::io::compress::io_error;
use crate::types::ByteOrder;

fn unsupported(msg: String) -> Error {
    Error::new(ErrorKind::Unsupported(msg))
}

fn zip_error(path: &Path, e: zip::result::ZipError) -> Error {
    match e {
        zip::result::ZipError::Io(e) => io_error(path, e),
        other => io_error(
            path,
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a valid npz (zip) file: {other}"),
            ),
        ),
    }
}

fn native_order() -> ByteOrder {
    if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    }
}

// ---------------------------------------------------------------------------------------------
// Writer

// ---------------------------------------------------------------------------------------------
// Reader

#[cfg(test)]
mod tests {
    use super::header::{npy_header, read_npy_header, Py, PyParser};
    use super::reader::*;
    use super::*;
    use std::collections::HashMap;

    use std::io::Write;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Date32Type;
    use arrow_array::{
        Array, ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, PrimitiveArray,
        RecordBatch, StringArray,
    };
    use std::sync::Arc;

    use crate::error::Result;
    use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
    use zip::write::SimpleFileOptions;
    use zip::ZipWriter;

    use crate::options::TensorMode;
    use crate::types::{meta, NumpyDtype};
    use arrow_array::{Float16Array, Float32Array, Int64Array, TimestampMicrosecondArray};
    use std::io::Cursor;

    #[test]
    fn header_like_numpy() {
        // Exactly what `np.save` (numpy 2.4) writes before the data.
        let numpy = |dict: &str| {
            let mut v = b"\x93NUMPY\x01\x00v\x00".to_vec();
            v.extend_from_slice(dict.as_bytes());
            v.extend(std::iter::repeat_n(b' ', 128 - 1 - v.len()));
            v.push(b'\n');
            v
        };
        assert_eq!(
            npy_header("|b1", &[]),
            numpy("{'descr': '|b1', 'fortran_order': False, 'shape': (), }")
        );
        assert_eq!(
            npy_header("<i8", &[5]),
            numpy("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }")
        );
        assert_eq!(
            npy_header("<f4", &[3, 768]),
            numpy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 768), }")
        );
        for shape in [&[0u64][..], &[1 << 40, 7, 9, 11], &[123456789, 1]] {
            assert_eq!(npy_header(">U17", shape).len() % 64, 0);
        }
    }

    #[test]
    fn a_column_name_too_long_for_a_zip_member_is_an_error() {
        let schema = |n: usize| {
            Arc::new(Schema::new(vec![Field::new(
                "k".repeat(n),
                DataType::Int64,
                true,
            )]))
        };
        assert!(NpzWriter::try_new(Cursor::new(Vec::new()), schema(65_531)).is_ok());
        let Err(e) = NpzWriter::try_new(Cursor::new(Vec::new()), schema(65_532)) else {
            panic!("an error, not a panic in the zip writer");
        };
        assert!(
            e.to_string().contains("too long for an npz member name"),
            "{e}"
        );
    }

    #[test]
    fn header_parse_round_trip() {
        let h = npy_header(">U5", &[2, 3, 4]);
        let parsed = read_npy_header(&mut Cursor::new(&h)).unwrap();
        assert_eq!(parsed.dtype, NumpyDtype::parse(">U5").unwrap());
        assert_eq!(parsed.shape, [2, 3, 4]);
        assert!(!parsed.fortran_order);
        assert_eq!(parsed.header_len, h.len());

        let mut p = PyParser {
            s: b"{'a': [('x', '<i4'), (\"y\", '<f8', (2,))], 'b': 3L, 'c': None, }",
            pos: 0,
        };
        let v = p.value(0).unwrap();
        let Py::Dict(items) = v else { panic!() };
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].1, Py::Int(3));

        for bad in [
            &b"\x93NUMPY\x09\x00"[..],
            b"NOTNUMPY",
            b"\x93NUMPY\x01\x00\x05\x00{'de",
        ] {
            assert!(read_npy_header(&mut Cursor::new(bad)).is_err());
        }
        let mut deep = b"\x93NUMPY\x01\x00\x50\x00".to_vec();
        deep.extend([b'['; 80]);
        assert!(read_npy_header(&mut Cursor::new(&deep)).is_err());
    }

    fn fsl(values: ArrayRef, n: usize) -> ArrayRef {
        let rows = values.len() / n;
        let t = crate::types::fixed_size_list(values.data_type().clone(), n).unwrap();
        crate::types::nest::nest_fixed(&t, values, None, rows).unwrap()
    }

    fn write_npz(batches: &[RecordBatch]) -> Vec<u8> {
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), batches[0].schema()).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn read_back(bytes: &[u8]) -> (SchemaRef, RecordBatch) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.npz");
        std::fs::write(&p, bytes).unwrap();
        let (schema, batches) = read_npz(&p).unwrap();
        let batches: Vec<_> = batches.collect::<Result<_>>().unwrap();
        let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        (schema, all)
    }

    #[test]
    fn round_trip_types() {
        let emb = fsl(
            fsl(
                Arc::new(Float32Array::from_iter_values((0..24).map(|i| i as f32))),
                3,
            ),
            2,
        );
        let md = |d: &str| HashMap::from([(meta::DTYPE.to_string(), d.to_string())]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("emb", emb.data_type().clone(), true),
            Field::new("big", DataType::Float32, true).with_metadata(md(">f4")),
            Field::new("s", DataType::Utf8, true),
            Field::new("u5", DataType::Utf8, true).with_metadata(md("<U5")),
            Field::new("b", DataType::Binary, true),
            Field::new("ok", DataType::Boolean, true),
            Field::new("h", DataType::Float16, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("d", DataType::Date32, true),
            Field::new("v", DataType::FixedSizeBinary(2), true),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, -2, 3, 4])),
            emb,
            Arc::new(Float32Array::from(vec![1.5, 2.5, -0.0, f32::NAN])),
            Arc::new(StringArray::from(vec!["a", "héllo", "", "z"])),
            Arc::new(StringArray::from(vec!["ab", "", "abcde", "x"])),
            Arc::new(BinaryArray::from(vec![&b"\x00\x01"[..], b"", b"abc", b"q"])),
            Arc::new(BooleanArray::from(vec![true, false, true, true])),
            Arc::new(Float16Array::from_iter_values(
                [0.5, 1.0, 1.5, 2.0].map(half::f16::from_f32),
            )),
            Arc::new(TimestampMicrosecondArray::from(vec![
                0,
                1,
                -1,
                1_700_000_000_000_000,
            ])),
            Arc::new(PrimitiveArray::<Date32Type>::from(vec![0, 1, 19000, -5])),
            Arc::new(
                FixedSizeBinaryArray::try_from_iter([b"ab", b"\0\0", b"cd", b"e\0"].into_iter())
                    .unwrap(),
            ),
        ];
        let batch = RecordBatch::try_new(schema, cols).unwrap();
        let bytes = write_npz(&[batch.slice(0, 1), batch.slice(1, 3)]);
        let (schema, got) = read_back(&bytes);
        let dtypes: Vec<&str> = schema
            .fields()
            .iter()
            .map(|f| f.metadata()[meta::DTYPE].as_str())
            .collect();
        assert_eq!(
            dtypes,
            ["<i8", "<f4", ">f4", "<U5", "<U5", "|S3", "|b1", "<f2", "<M8[us]", "<M8[D]", "|V2"]
        );
        assert_eq!(
            schema.field(1).data_type(),
            batch.schema().field(1).data_type()
        );
        for i in 0..batch.num_columns() {
            if i == 5 {
                // |S strips trailing NULs only; b"\x00\x01" survives
                assert_eq!(got.column(i).as_binary::<i32>().value(0), b"\x00\x01");
                continue;
            }
            assert_eq!(
                got.column(i).to_data(),
                batch.column(i).to_data(),
                "column {i}"
            );
        }
    }

    #[test]
    fn nulls_and_names_are_errors() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![Some(1), None]))],
        )
        .unwrap();
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), schema).unwrap();
        let e = w.write(&b).unwrap_err().to_string();
        assert!(e.contains("row 1 is null") && e.contains("\"x\""), "{e}");

        let schema = Arc::new(Schema::new(vec![Field::new("a/b", DataType::Int64, true)]));
        let e = NpzWriter::try_new(Cursor::new(Vec::new()), schema)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"a/b\""), "{e}");

        let schema = Arc::new(Schema::new(vec![Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            true,
        )]));
        let e = NpzWriter::try_new(Cursor::new(Vec::new()), schema)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"l\"") && e.contains("no numpy equivalent"),
            "{e}"
        );

        let schema = Arc::new(Schema::new(vec![Field::new("u", DataType::Utf8, true)
            .with_metadata(HashMap::from([(
                meta::DTYPE.to_string(),
                "<U2".to_string(),
            )]))]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec!["abc"]))],
        )
        .unwrap();
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), schema).unwrap();
        assert!(w
            .write(&b)
            .unwrap_err()
            .to_string()
            .contains("does not fit"));

        // a stream of empty maps: 3 rows, no column (an archive holds no row count)
        let b = crate::io::rows_of_no_column(3);
        let mut w = NpzWriter::try_new(Cursor::new(Vec::new()), b.schema()).unwrap();
        let e = w.write(&b).unwrap_err().to_string();
        assert!(e.contains("without columns (3 rows"), "{e}");
    }

    #[test]
    fn fortran_order_and_lengths() {
        // A 2x3 int16 array in Fortran order: memory holds columns.
        let mut npy = npy_header("<i2", &[2, 3]);
        let at = npy.windows(5).position(|w| w == b"False").unwrap();
        npy[at..at + 5].copy_from_slice(b"True ");
        for v in [1i16, 4, 2, 5, 3, 6] {
            npy.extend_from_slice(&v.to_le_bytes());
        }
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("m.npy", SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy).unwrap();
        zip.start_file("short.npy", SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy_header("<i8", &[5])).unwrap();
        zip.write_all(&[0u8; 40]).unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.npz");
        std::fs::write(&p, &bytes).unwrap();
        let e = read_npz(&p).err().unwrap().to_string();
        assert!(
            e.contains("axis 0") && e.contains("\"m\" has 2") && e.contains("\"short\" has 5"),
            "{e}"
        );
        let (_, batches) =
            read_npz_with(&p, Some(&["m".to_string()]), 10, TensorMode::Array).unwrap();
        let b = batches.collect::<Result<Vec<_>>>().unwrap().remove(0);
        let vals = b
            .column(0)
            .as_fixed_size_list()
            .values()
            .as_primitive::<arrow_array::types::Int16Type>()
            .values()
            .to_vec();
        assert_eq!(vals, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn truncated_member_is_an_error() {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("x.npy", SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&npy_header("<f8", &[1_000_000_000])).unwrap();
        zip.write_all(&[0u8; 16]).unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.npz");
        std::fs::write(&p, &bytes).unwrap();
        let e = read_npz(&p).err().unwrap().to_string();
        assert!(e.contains("truncated") && e.contains("\"x\""), "{e}");
    }
}
