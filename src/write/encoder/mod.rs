//! Per-column value encoders, chosen once per batch by [`make_encoder`], writing MessagePack
//! byte-for-byte as Python `msgpack_numpy` 0.4.8 (over `msgpack` 1.x, `use_bin_type=True`) does.
//! One file per kind of column, as arrow-json keeps one per Arrow type.

pub(crate) mod ext;
pub(crate) mod list;
pub(crate) mod map;
pub(crate) mod raw;
pub(crate) mod scalar;
pub(crate) mod structs;
pub(crate) mod tensor;

use crate::types::layout::ValueForm;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int64Type, TimestampNanosecondType, UInt64Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, TimeUnit};

use self::{list::*, map::*, scalar::*, structs::*, tensor::*};
use crate::error::Result;
use crate::types::{meta, NumpyDtype};
use crate::wire::write::Out;
use crate::write::access::{is_binary, is_string, is_utc, Bins, Strs};
use crate::write::ndarray::{NdProbe, TypeEnc};
use crate::write::unsupported;

// Column encoders

/// Encodes the values of one column (of one batch), row by row.
pub(crate) trait ColumnEncoder {
    /// Append the msgpack encoding of row `row`.
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()>;
    /// When row `row` encodes as exactly one ndarray map: how its head can be widened (aligned mode).
    fn nd_probe(&mut self, _row: usize) -> Result<Option<NdProbe>> {
        Ok(None)
    }
    /// What row `row` is written as, for the `auto` rule (a lone row that would read back as a
    /// `columns` map must be wrapped).
    fn form(&mut self, _row: usize) -> Result<ValueForm> {
        Ok(ValueForm::Other)
    }
    /// Whether values may hold ndarray maps (which align themselves against the absolute output
    /// position, so must be encoded in place).
    fn may_nd(&self) -> bool {
        false
    }
    /// A rough size of all rows' encodings, for reserving the output up front.
    fn size_hint(&self) -> usize;
    /// Leave null fields of maps out (at any depth), as the keys absent where they were read;
    /// `written`: the fields written by the batches before (handed back by `omit_written`);
    /// `used`: the rows that will be encoded (`None`: all).
    fn omit_absent(
        &mut self,
        _written: &structs::Written,
        _used: Option<&arrow_buffer::BooleanBuffer>,
    ) {
    }
    /// The fields written so far, for the next batch's encoder ([`ColumnEncoder::omit_absent`]).
    fn omit_written(&self, _written: &mut structs::Written) {}
    /// [`ColumnEncoder::encode`], handing `out` to `flush` between steps of a big payload, so a
    /// file sink never holds a whole column's payload in memory (default: one `encode`).
    fn encode_flushing(
        &mut self,
        row: usize,
        out: &mut Out,
        _flush: &mut dyn FnMut(&mut Out) -> Result<()>,
    ) -> Result<()> {
        self.encode(row, out)
    }
}

/// `msgpack_numpy.shape`: per axis of a ragged tensor column, the length shared by every row.
pub(crate) fn meta_dims(field: &Field) -> Vec<Option<usize>> {
    field
        .metadata()
        .get(meta::SHAPE)
        .and_then(|s| serde_json::from_str::<Vec<Option<usize>>>(s).ok())
        .unwrap_or_default()
}

pub(crate) fn field_meta(field: &Field) -> (Option<&str>, Option<NumpyDtype>) {
    let md = field.metadata();
    let kind = md.get(meta::KIND).map(String::as_str);
    // A dtype this crate cannot parse is treated as absent: the Arrow type decides.
    let dtype = md
        .get(meta::DTYPE)
        .and_then(|s| NumpyDtype::from_metadata(s).ok());
    (kind, dtype)
}

/// The encoder for a top-level column of a batch whose first row is row `row0` of the file: like
/// [`make_encoder`], plus the empty-row shapes recorded in `msgpack_numpy.empty_shapes`.
pub(crate) fn make_top_encoder(
    field: &Field,
    arr: &ArrayRef,
    row0: u64,
) -> Result<Box<dyn ColumnEncoder>> {
    let (kind, dtype) = field_meta(field);
    if let (Some("ndarray"), Some(shapes)) = (kind, field.metadata().get(meta::EMPTY_SHAPES)) {
        let shapes: std::collections::HashMap<String, Vec<usize>> =
            serde_json::from_str(shapes).unwrap_or_default();
        if let Ok(t) = TensorEnc::new(arr, dtype.as_ref(), true, true, &meta_dims(field)) {
            let mut t = t.with_widths_of(field, dtype.as_ref());
            let end = row0 + arr.len() as u64;
            for (k, v) in shapes {
                if let Ok(r) = k.parse::<u64>() {
                    if (row0..end).contains(&r) {
                        t.overrides.insert((r - row0) as usize, v);
                    }
                }
            }
            return Ok(Box::new(t));
        }
    }
    // a struct column whose fields (to any depth) carry such shapes: its rows are the file's rows
    if kind.is_none() && matches!(arr.data_type(), DataType::Struct(_)) && holds_empty_shapes(field)
    {
        return Ok(Box::new(StructEnc::new_top(field, arr, row0)?));
    }
    make_encoder(field, arr)
}

/// Whether `field` or a struct field inside it has `msgpack_numpy.empty_shapes`.
fn holds_empty_shapes(field: &Field) -> bool {
    field.metadata().contains_key(meta::EMPTY_SHAPES)
        || matches!(field.data_type(), DataType::Struct(fs) if fs.iter().any(|f| holds_empty_shapes(f)))
}

/// The encoder for one column (or struct child / list item) of one batch, chosen once from the
/// Arrow type and the field's `msgpack_numpy.*` metadata.
pub(crate) fn make_encoder(field: &Field, arr: &ArrayRef) -> Result<Box<dyn ColumnEncoder>> {
    if let DataType::Dictionary(..) = arr.data_type() {
        let d = arr.as_any_dictionary();
        let vals = arrow_select::take::take(d.values().as_ref(), d.keys(), None)?;
        return make_encoder(field, &vals);
    }
    // a canonical tensor extension inside a struct or list (top-level columns are converted by
    // the writer before they get here): its rows as ndarrays of their shapes
    if let Some((g, c)) = crate::write::canonical::field(field)? {
        let mut empties = Vec::new();
        let a = crate::write::canonical::array(arr, &c, g.data_type(), &mut empties)?;
        let (_, dtype) = field_meta(&g);
        let mut t = TensorEnc::new(&a, dtype.as_ref(), true, true, &meta_dims(&g))?
            .with_widths_of(&g, dtype.as_ref());
        t.overrides.extend(empties);
        return Ok(Box::new(t));
    }
    let (kind, dtype) = field_meta(field);
    match kind {
        Some("ndarray") => {
            if let Ok(t) = TensorEnc::new(arr, dtype.as_ref(), true, true, &meta_dims(field)) {
                return Ok(Box::new(t.with_widths_of(field, dtype.as_ref())));
            }
        }
        Some("scalar") => {
            if let Ok(s) = ScalarEnc::new(arr, dtype.as_ref()) {
                return Ok(Box::new(s));
            }
        }
        Some("complex") => {
            if let Some(c) = ComplexEnc::new(arr) {
                return Ok(Box::new(c));
            }
        }
        // lists of one length read as FixedSizeList (`lists="array"`): lists again
        Some("list") => return Ok(Box::new(ListEnc::new(arr)?)),
        // plain msgpack ints too big for Int64 (the reader's UInt64 columns)
        Some("int") if matches!(arr.data_type(), DataType::UInt64) => {
            return Ok(Box::new(UIntEnc(arr.as_primitive::<UInt64Type>().clone())));
        }
        Some("msgpack") => {
            if let Some(bins) = Bins::new(arr.as_ref()) {
                return Ok(Box::new(raw::RawEnc { bins }));
            }
        }
        Some("ext") => {
            if let Some(e) = ext::ExtEnc::new(arr) {
                return Ok(Box::new(e));
            }
        }
        // a Polars List column whose items were found to be ndarrays
        // ([`crate::write::mark_ragged_ndarrays`]): a msgpack list of ndarrays
        Some(crate::write::ragged::ITEMS) => return Ok(Box::new(ListEnc::of_ndarrays(arr)?)),
        Some("object") => {
            if let Some(bins) = Bins::new(arr.as_ref()) {
                // the shape every row had (none recorded: `[]`)
                let shape = meta_dims(field).into_iter().collect::<Option<Vec<_>>>();
                return Ok(Box::new(ObjectEnc {
                    bins,
                    ty: TypeEnc::of(&NumpyDtype::Object),
                    shape: shape.unwrap_or_default(),
                }));
            }
        }
        _ => {}
    }
    if let DataType::Struct(_) = arr.data_type() {
        return Ok(Box::new(StructEnc::new(field, arr)?));
    }
    plain_encoder(arr)
}

pub(crate) fn plain_encoder(arr: &ArrayRef) -> Result<Box<dyn ColumnEncoder>> {
    use DataType as T;
    Ok(match arr.data_type() {
        T::Null => Box::new(NullEnc(arr.len())),
        T::Boolean => Box::new(BoolEnc(arr.as_boolean().clone())),
        T::Int64 => Box::new(IntEnc(arr.as_primitive::<Int64Type>().clone())),
        // UInt64 is only plain msgpack ints where the reader found them so (kind "int", see
        // make_encoder): small values would read back as Int64, so the dtype goes along.
        T::UInt64 => Box::new(ScalarEnc::new(arr, None)?),
        T::Float64 => Box::new(F64Enc(arr.as_primitive::<Float64Type>().clone())),
        T::Float32 => Box::new(F32Enc(arr.as_primitive::<Float32Type>().clone())),
        // Narrower numbers become numpy scalars so their dtype survives a round trip.
        T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 | T::UInt32 | T::Float16 => {
            Box::new(ScalarEnc::new(arr, None)?)
        }
        t if is_string(t) => Box::new(StrEnc(Strs::new(arr.as_ref()).expect("string"))),
        t if is_binary(t) => Box::new(BinEnc(Bins::new(arr.as_ref()).expect("binary"))),
        T::Timestamp(TimeUnit::Nanosecond, Some(tz)) if is_utc(tz) => Box::new(TsExtEnc(
            arr.as_primitive::<TimestampNanosecondType>().clone(),
        )),
        T::Timestamp(..) | T::Date32 | T::Date64 | T::Duration(_) => {
            Box::new(TensorEnc::new(arr, None, false, false, &[])?)
        }
        T::FixedSizeList(..) => {
            // an Array of structs with no null inside a row: one structured ndarray per row (a
            // list of maps would read back as a List)
            let structs = !nulls_in_rows(arr.as_fixed_size_list());
            match TensorEnc::new(arr, None, false, structs, &[]) {
                Ok(t) => Box::new(t),
                Err(_) => Box::new(ListEnc::new(arr)?),
            }
        }
        T::List(_) | T::LargeList(_) | T::ListView(_) | T::LargeListView(_) => {
            Box::new(ListEnc::new(arr)?)
        }
        T::Struct(_) => Box::new(StructEnc::of_array(arr)?),
        T::Map(..) => {
            let m = arr.as_map();
            let (kf, vf) = m.entries_fields();
            Box::new(MapEnc {
                offsets: m.offsets().clone(),
                nulls: arr.logical_nulls(),
                keys: make_encoder(kf, m.keys())?,
                values: make_encoder(vf, m.values())?,
                len: arr.len(),
            })
        }
        t => {
            return Err(unsupported(format!(
                "Arrow type {t} has no msgpack-numpy encoding"
            )))
        }
    })
}

/// Whether a row that is not null holds a null (the slots of null rows may hold anything).
fn nulls_in_rows(a: &arrow_array::FixedSizeListArray) -> bool {
    let v = a.values();
    if !nulls_inside(v.as_ref()) {
        return false;
    }
    let n = a.value_length() as usize;
    (0..a.len()).any(|i| a.is_valid(i) && nulls_inside(v.slice(i * n, n).as_ref()))
}

/// Whether `a` holds a null anywhere: in itself, its struct fields or its fixed-size lists. A
/// null datetime or timedelta does not count: numpy has NaT for it, which an ndarray holds.
fn nulls_inside(a: &dyn Array) -> bool {
    let nat = matches!(
        a.data_type(),
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 | DataType::Duration(_)
    );
    (!nat && a.logical_null_count() > 0)
        || match a.data_type() {
            DataType::Struct(_) => a
                .as_struct()
                .columns()
                .iter()
                .any(|c| nulls_inside(c.as_ref())),
            DataType::FixedSizeList(..) => nulls_inside(a.as_fixed_size_list().values().as_ref()),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pyrepr::py_complex_repr;
    use crate::wire::write::{self as wire, IntVal};
    use crate::write::ndarray::NdHead;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn ints_smallest_form_like_python() {
        // Python's bytes for the edge integers
        let want = crate::write::tests::EDGE_INTS_PACKED;
        let mut b = Vec::new();
        for v in crate::write::tests::EDGE_INTS {
            wire::sint(&mut b, v);
        }
        assert_eq!(hex(&b), want);
        // and rmp agrees on the signed rules
        let mut r = Vec::new();
        for v in [0i64, 127, 128, -33, -129, i64::MIN] {
            rmp::encode::write_sint(&mut r, v).unwrap();
        }
        let mut m = Vec::new();
        for v in [0i64, 127, 128, -33, -129, i64::MIN] {
            wire::sint(&mut m, v);
        }
        assert_eq!(r, m);
        let mut b = Vec::new();
        wire::uint(&mut b, u64::MAX); // msgpack.packb(2**64-1)
        assert_eq!(hex(&b), "cfffffffffffffffff");
        // every form reads back
        for v in [
            0i64,
            5,
            200,
            40000,
            1 << 40,
            -5,
            -100,
            -1000,
            -100000,
            i64::MIN,
        ] {
            for &size in wire::sint_forms(v) {
                let mut b = Vec::new();
                wire::sint_sized(&mut b, v, size);
                assert_eq!(b.len(), size as usize);
                let back = match wire::read_int(&b).unwrap() {
                    IntVal::U(u) => u as i64,
                    IntVal::S(s) => s,
                };
                assert_eq!(back, v);
            }
        }
    }

    #[test]
    fn headers() {
        let mut b = Vec::new();
        wire::str(&mut b, &"x".repeat(40)); // str8, as msgpack.packb('x'*40)
        assert_eq!(&b[..2], &[0xd9, 40]);
        b.clear();
        wire::bin(&mut b, &[0; 300]);
        assert_eq!(&b[..3], &[0xc5, 1, 44]);
        b.clear();
        wire::array_hdr(&mut b, 16);
        wire::map_hdr(&mut b, 15);
        assert_eq!(b, [0xdc, 0, 16, 0x8f]);
    }

    #[test]
    fn timestamps_like_python() {
        // msgpack.packb(msgpack.Timestamp.from_unix_nano(ns))
        for (ns, want) in [
            (0i64, "d6ff00000000"),
            (1_500_000_000_000_000_000, "d6ff59682f00"),
            (1_500_000_000_000_000_005, "d7ff0000001459682f00"),
            (-1, "c70cff3b9ac9ffffffffffffffffff"),
            (-1_000_000_000, "c70cff00000000ffffffffffffffff"),
        ] {
            let mut b = Vec::new();
            wire::timestamp_ns(&mut b, ns);
            assert_eq!(hex(&b), want, "{ns}");
        }
    }

    #[test]
    fn complex_repr_like_python() {
        // Produced by: for v in vals: print(struct.pack('<dd', v.real, v.imag).hex(), repr(v))
        let table = [
            ("000000000000f03f0000000000000040", "(1+2j)"),
            ("0000000000000000000000000000f03f", "1j"),
            ("0000000000000080000000000000f0bf", "(-0-1j)"),
            ("691d554d1075ef3e0000000000000000", "(1.5e-05+0j)"),
            ("000000000000f07f000000000000f87f", "(inf+nanj)"),
            ("0080e03779c341430000000000000000", "(1e+16+0j)"),
            ("00000000000000000000000000000000", "0j"),
            ("00000000000000800000000000000000", "(-0+0j)"),
            ("00000000000000000000000000000080", "-0j"),
            ("00000000000000800000000000000080", "(-0-0j)"),
            ("000000000000f03f00000000000004c0", "(1-2.5j)"),
            ("9a9999999999b93f9a9999999999c93f", "(0.1+0.2j)"),
            ("2d431cebe2361a3ff168e388b5f8e43e", "(0.0001+1e-05j)"),
            (
                "350f63bab4697b43000000000000f03f",
                "(1.2345678901234568e+17+1j)",
            ),
            ("00eb2af2548b11430000000000000000", "(1234567890123456+0j)"),
            ("ff7fe03779c341430000000000000000", "(9999999999999998+0j)"),
            (
                "00003426f56b0c4300a0d88557347643",
                "(1000000000000000+1e+17j)",
            ),
            ("000000000000f0ff000000000000f0ff", "(-inf-infj)"),
            ("000000000000f87f000000000000f8ff", "(nan+nanj)"),
            ("000000000000f8ff000000000000f87f", "(nan+nanj)"),
            (
                "0100000000000000ffffffffffffef7f",
                "(5e-324+1.7976931348623157e+308j)",
            ),
            ("000000000000e03f0000000000005940", "(0.5+100j)"),
            ("2d431cebe236fa3e92d54d06cff08044", "(2.5e-05+1e+22j)"),
            ("48afbc9af2d77a3e6e861bf0f92109c0", "(1e-07-3.14159j)"),
            (
                "555555555555d53f555555555555e53f",
                "(0.3333333333333333+0.6666666666666666j)",
            ),
            ("7dc39425ad49b2540000000000000000", "(1e+100+0j)"),
            ("30058ee42eff2bab0000000000000000", "(-1e-100+0j)"),
            ("00000000000000000080e03779c34143", "1e+16j"),
            ("00000000000000000000000000c05e40", "123j"),
            ("0000000000000000fca9f1d24d6250bf", "-0.001j"),
        ];
        let mut s = String::new();
        for (h, want) in table {
            let b: Vec<u8> = (0..16)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            let re = f64::from_le_bytes(b[..8].try_into().unwrap());
            let im = f64::from_le_bytes(b[8..].try_into().unwrap());
            py_complex_repr(re, im, &mut s);
            assert_eq!(s, want, "{h}");
        }
    }

    #[test]
    fn planner_reaches_every_residue() {
        // A 1-d f4 ndarray head can always reach an 8-byte boundary by itself, and 64 from more than half
        // of start positions (widening inside one map gives at most ~40 bytes; records add
        // the slack of their header, keys and ints, see `Segment`).
        let ty = TypeEnc::Str("<f4".into());
        for len in [3usize, 768, 100_000] {
            let shape = [len];
            let h = NdHead {
                ty: &ty,
                kind: b"",
                shape: &shape,
                data_len: len * 4,
            };
            let p = h.probe().unwrap();
            let mut hit64 = 0;
            for start in 0..64u64 {
                let mut out = Out::new(true);
                out.base = start;
                h.write(&mut out).unwrap();
                let data = start + out.buf.len() as u64;
                assert_eq!(data % 8, 0, "len {len} start {start}");
                hit64 += (data % 64 == 0) as usize;
                assert!(out.buf.len() >= p.min);
            }
            assert!(hit64 >= 32, "len {len}: {hit64}/64");
        }
    }
}
