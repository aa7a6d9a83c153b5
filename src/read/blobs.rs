//! A column of msgpack-numpy blobs (one msgpack value per row, e.g. a Binary column of
//! `msgpack_numpy.packb` outputs) into one typed Arrow array: each blob parsed once, by the same
//! inference and per-type decoders as a file, with errors naming the row and the byte within it.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field};

use super::array::{make_decoder, Ctx};
use super::infer::{Inferrer, Ty};
use super::ReaderBuilder;
use crate::error::{Error, ErrorKind, Result};
use crate::types::arrow::leaf_dtype;
use crate::types::meta;
use crate::wire::cursor::Cursor;

/// msgpack nil: what a null row decodes as.
const NIL: &[u8] = &[0xc0];

/// The blobs of a Binary, LargeBinary or BinaryView array (a Null array: all null), nulls as
/// `None`.
fn blobs(a: &dyn Array) -> Result<Vec<Option<&[u8]>>> {
    Ok(match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => a.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => a.as_binary_view().iter().collect(),
        DataType::Null => vec![None; a.len()],
        t => {
            return Err(Error::new(ErrorKind::Usage(format!(
                "msgpack blobs come in a Binary column, not {t}"
            ))))
        }
    })
}

/// Each blob is exactly one msgpack value (errors name the row and the byte in the blob).
fn checked(a: &dyn Array, max_depth: usize) -> Result<Vec<Option<&[u8]>>> {
    let rows = blobs(a)?;
    for (i, b) in rows.iter().enumerate() {
        match b {
            Some([]) => {
                return Err(Error::new(ErrorKind::InvalidMsgpack(
                    "empty blob: a row must hold one msgpack object".into(),
                ))
                .at_record(i as u64))
            }
            b => Cursor::new(b.unwrap_or(NIL), 0)
                .skip_exactly_one(max_depth)
                .map_err(|e| e.at_record(i as u64))?,
        }
    }
    Ok(rows)
}

impl ReaderBuilder {
    fn blob_ctx(&self) -> Ctx {
        Ctx {
            dialect: self.dialect,
            npy_ext: self.npy_ext,
            max_depth: self.max_depth,
            strict_keys: false,
            given_schema: true,
            // the dtype the caller gave, or the one inferred from every blob (which they fit)
            convert: true,
            overridden: None,
            input: None,
        }
    }

    /// The field the blobs of `chunks` (the chunks of one column) decode to, inferred from every
    /// blob as a `values` file would be (`Null` when none is set). Errors name the row, counted
    /// over all chunks, and the byte within its blob.
    pub fn infer_blobs(&self, chunks: &[&dyn Array]) -> Result<Field> {
        let mut inf = Inferrer::new(self.infer_options());
        let mut ty: Option<Ty> = None;
        let mut row0 = 0u64;
        for a in chunks {
            let rows = checked(*a, self.max_depth).map_err(|e| e.add_record(row0))?;
            for (i, b) in rows.iter().enumerate() {
                let at = |e: Error| e.at_record(row0 + i as u64);
                let mut c = Cursor::new(b.unwrap_or(NIL), 0);
                let t = inf.row_value(&mut c).map_err(at)?;
                ty = Some(match ty {
                    None => t,
                    Some(acc) => acc.merge_with(t, inf.opts.raw_conflicts).map_err(at)?,
                });
            }
            row0 += a.len() as u64;
        }
        match ty {
            Some(t) => inf.column_field("value", &t),
            None => Ok(Field::new("value", DataType::Null, true)),
        }
    }

    /// Decode a binary column of msgpack-numpy blobs into one typed array of `field`'s type
    /// (`None`: inferred from every blob, see [`ReaderBuilder::infer_blobs`]). The builder's
    /// dialect, tensor mode, object arrays and depth limit apply. A null row is null; errors
    /// name the row (as the record) and the byte within its blob.
    pub fn decode_blobs(&self, blobs_array: &dyn Array, field: Option<&Field>) -> Result<ArrayRef> {
        let rows = checked(blobs_array, self.max_depth)?;
        let field = match field {
            Some(f) => f.clone(),
            None => self.infer_blobs(&[blobs_array])?,
        };
        self.decode_checked(&rows, &field)
    }

    /// Decode blobs straight into type `t`, as a schema override does: values of several types
    /// that `t` holds are no conflict; ndarrays become tensors of `t`'s element type.
    pub fn decode_blobs_as(&self, blobs_array: &dyn Array, t: &DataType) -> Result<ArrayRef> {
        let rows = checked(blobs_array, self.max_depth)?;
        let mut inf = Inferrer::new(self.infer_options());
        let mut nd = false;
        for (i, b) in rows.iter().enumerate() {
            let mut c = Cursor::new(b.unwrap_or(NIL), 0);
            nd |= inf.given_value(&mut c).map_err(|e| e.at_record(i as u64))? == Ty::Given(true);
        }
        let mut field = Field::new("value", t.clone(), true);
        if let (true, Some(dt)) = (nd, leaf_dtype(t)) {
            field = field.with_metadata(
                [
                    (meta::KIND.to_string(), "ndarray".to_string()),
                    (meta::DTYPE.to_string(), dt.to_dtype_str()),
                ]
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
            );
        }
        self.decode_checked(&rows, &field)
    }

    fn decode_checked(&self, rows: &[Option<&[u8]>], field: &Field) -> Result<ArrayRef> {
        let mut dec = make_decoder(field, &self.blob_ctx())?;
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
