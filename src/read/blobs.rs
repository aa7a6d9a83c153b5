//! A column of msgpack-numpy blobs (one msgpack value per row, e.g. a Binary column of
//! `msgpack_numpy.packb` outputs) into one typed Arrow array: each blob parsed once, by the same
//! inference and per-type decoders as a file, with errors naming the row and the byte within it.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field};

use super::array::{make_decoder, Ctx};
use super::infer::Inferrer;
use super::ReaderBuilder;
use crate::error::{Error, ErrorKind, Result};
use crate::wire::cursor::Cursor;

/// msgpack nil: what a null row decodes as.
const NIL: &[u8] = &[0xc0];

/// The blobs of a Binary, LargeBinary or BinaryView array, nulls as `None`.
fn blobs(a: &dyn Array) -> Result<Vec<Option<&[u8]>>> {
    Ok(match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => a.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => a.as_binary_view().iter().collect(),
        t => {
            return Err(Error::new(ErrorKind::Usage(format!(
                "msgpack blobs come in a binary column, not {t}"
            ))))
        }
    })
}

impl ReaderBuilder {
    /// Decode a binary column of msgpack-numpy blobs into one typed array of `field`'s type
    /// (`None`: inferred from every blob, as a `values` file would be). The builder's dialect,
    /// tensor mode, object arrays and depth limit apply. A null row is null; errors name the row
    /// (as the record) and the byte within its blob.
    pub fn decode_blobs(&self, blobs_array: &dyn Array, field: Option<&Field>) -> Result<ArrayRef> {
        let rows = blobs(blobs_array)?;
        for (i, b) in rows.iter().enumerate() {
            Cursor::new(b.unwrap_or(NIL), 0)
                .skip_exactly_one(self.max_depth)
                .map_err(|e| e.at_record(i as u64))?;
        }
        let field = match field {
            Some(f) => f.clone(),
            None => {
                let mut inf = Inferrer::new(self.infer_options());
                let mut ty: Option<super::infer::Ty> = None;
                for (i, b) in rows.iter().enumerate() {
                    let mut c = Cursor::new(b.unwrap_or(NIL), 0);
                    let t = inf.value(&mut c, 0).map_err(|e| e.at_record(i as u64))?;
                    ty = Some(match ty {
                        None => t,
                        Some(acc) => acc
                            .merge_with(t, inf.opts.raw_conflicts)
                            .map_err(|e| e.at_record(i as u64))?,
                    });
                }
                match ty {
                    Some(t) => inf.column_field("value", &t)?,
                    None => Field::new("value", DataType::Null, true),
                }
            }
        };
        let ctx = Ctx {
            dialect: self.dialect,
            max_depth: self.max_depth,
            strict_keys: false,
            given_schema: true,
        };
        let mut dec = make_decoder(&field, &ctx)?;
        dec.reserve(rows.len());
        for (i, b) in rows.iter().enumerate() {
            let mut c = Cursor::new(b.unwrap_or(NIL), 0);
            dec.decode(&mut c)
                .map_err(|e| e.at_offset(0).at_record(i as u64))?;
        }
        dec.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::BinaryArray;

    /// msgpack_numpy.packb(np.array([a, b], dtype="<f4")) as Python writes it.
    fn f4(a: f32, b: f32) -> Vec<u8> {
        let mut v = b"\x85\xc4\x02nd\xc3\xc4\x04type\xa3<f4\xc4\x04kind\xc4\x00\xc4\x05shape\x91\x02\xc4\x04data\xc4\x08".to_vec();
        v.extend(a.to_le_bytes());
        v.extend(b.to_le_bytes());
        v
    }

    #[test]
    fn blobs_become_one_typed_array_and_errors_name_row_and_byte() {
        let rows = [Some(f4(1.0, 2.0)), None, Some(f4(3.0, 4.0))];
        let a = BinaryArray::from_iter(rows.iter().map(|r| r.as_deref()));
        let out = ReaderBuilder::new().decode_blobs(&a, None).unwrap();
        assert_eq!(out.len(), 3);
        assert!(out.is_null(1));
        let fsl = out.as_fixed_size_list();
        assert_eq!(fsl.value_length(), 2);
        let v = fsl.value(2);
        let v = v.as_primitive::<arrow_array::types::Float32Type>();
        assert_eq!(v.values(), &[3.0, 4.0]);

        let mut cut = f4(5.0, 6.0);
        cut.truncate(cut.len() - 3);
        let bad =
            BinaryArray::from_iter([Some(f4(1.0, 2.0)), Some(cut)].iter().map(|r| r.as_deref()));
        let e = ReaderBuilder::new().decode_blobs(&bad, None).unwrap_err();
        assert_eq!(e.record(), Some(1), "{e}");
        assert!(e.to_string().starts_with("truncated input"), "{e}");

        let two = [f4(1.0, 2.0), vec![0x01]].concat();
        let bad = BinaryArray::from_iter([Some(two.as_slice())]);
        let e = ReaderBuilder::new().decode_blobs(&bad, None).unwrap_err();
        assert!(e.to_string().contains("1 bytes after the value"), "{e}");
        assert_eq!(e.offset(), Some(two.len() as u64 - 1));
    }
}
