//! Unit tests of the writer (kept apart so that the module stays readable).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};

use super::*;

mod aligned;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
fn md(kind: &str, dtype: &str) -> HashMap<String, String> {
    let mut m = HashMap::new();
    m.insert(meta::KIND.to_string(), kind.to_string());
    if !dtype.is_empty() {
        m.insert(meta::DTYPE.to_string(), dtype.to_string());
    }
    m
}
fn item(t: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", t, true))
}
fn fsl(values: ArrayRef, n: i32) -> ArrayRef {
    Arc::new(
        FixedSizeListArray::try_new(item(values.data_type().clone()), n, values, None).unwrap(),
    )
}
fn list(values: ArrayRef, offsets: Vec<i32>) -> ArrayRef {
    Arc::new(
        ListArray::try_new(
            item(values.data_type().clone()),
            OffsetBuffer::new(offsets.into()),
            values,
            None,
        )
        .unwrap(),
    )
}
fn batch(cols: Vec<(Field, ArrayRef)>) -> RecordBatch {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}
fn col(name: &str, a: ArrayRef) -> (Field, ArrayRef) {
    (Field::new(name, a.data_type().clone(), true), a)
}
fn col_md(name: &str, a: ArrayRef, kind: &str, dtype: &str) -> (Field, ArrayRef) {
    (
        Field::new(name, a.data_type().clone(), true).with_metadata(md(kind, dtype)),
        a,
    )
}
/// The batch as a record stream, as read from one (so one row stays one bare map, as
/// `msgpack_numpy.packb` writes it).
fn records(b: &RecordBatch) -> String {
    let b = with_schema_md(b.clone(), "records", "stream");
    hex(&write_batches(std::slice::from_ref(&b), Layout::Records).unwrap())
}
fn with_schema_md(b: RecordBatch, layout: &str, container: &str) -> RecordBatch {
    let mut m = HashMap::new();
    m.insert(meta::LAYOUT.to_string(), layout.to_string());
    m.insert(meta::CONTAINER.to_string(), container.to_string());
    let s = Arc::new(b.schema().as_ref().clone().with_metadata(m));
    b.with_schema(s).unwrap()
}

#[test]
fn records_plain_values() {
    // recs=[{'i':1,'f':1.5,'s':'ab','b':b'\x00\x01','t':True,'n':None},
    //       {'i':-200,'f':-0.0,'s':'x'*40,'b':b'','t':False,'n':None}]
    // b''.join(msgpack_numpy.packb(r) for r in recs)
    let want = "86a16901a166cb3ff8000000000000a173a26162a162c4020001a174c3a16ec086a169d1ff38a166cb8000000000000000a173d92878787878787878787878787878787878787878787878787878787878787878787878787878787878a162c400a174c2a16ec0";
    let x40 = "x".repeat(40);
    let b = batch(vec![
        col("i", Arc::new(Int64Array::from(vec![1, -200]))),
        col("f", Arc::new(Float64Array::from(vec![1.5, -0.0]))),
        col("s", Arc::new(StringArray::from(vec!["ab", x40.as_str()]))),
        col(
            "b",
            Arc::new(BinaryArray::from(vec![&b"\x00\x01"[..], b""])),
        ),
        col("t", Arc::new(BooleanArray::from(vec![true, false]))),
        col("n", Arc::new(NullArray::new(2))),
    ]);
    assert_eq!(records(&b), want);
    // The same through the chunked Writer, batch split in two, and with view types.
    let mut w = WriterBuilder::new().build(Vec::new(), b.schema()).unwrap();
    w.write(&b.slice(0, 1)).unwrap();
    w.write(&b.slice(1, 1)).unwrap();
    assert_eq!(hex(&w.finish().unwrap()), want);
    let v = batch(vec![
        col("i", Arc::new(Int64Array::from(vec![1, -200]))),
        col("f", Arc::new(Float64Array::from(vec![1.5, -0.0]))),
        col(
            "s",
            Arc::new(StringViewArray::from(vec!["ab", x40.as_str()])),
        ),
        col(
            "b",
            Arc::new(BinaryViewArray::from(vec![&b"\x00\x01"[..], b""])),
        ),
        col("t", Arc::new(BooleanArray::from(vec![true, false]))),
        col("n", Arc::new(NullArray::new(2))),
    ]);
    assert_eq!(records(&v), want);
}

/// Integers at the edges of every msgpack int marker.
pub(crate) const EDGE_INTS: [i64; 20] = [
    0,
    127,
    128,
    255,
    256,
    65535,
    65536,
    (1 << 32) - 1,
    1 << 32,
    i64::MAX,
    -1,
    -32,
    -33,
    -128,
    -129,
    -32768,
    -32769,
    -(1 << 31),
    -(1 << 31) - 1,
    i64::MIN,
];

/// What Python makes of [`EDGE_INTS`], each in its smallest form:
/// `b''.join(msgpack.packb(i) for i in [0,127,128,255,256,65535,65536,2**32-1,2**32,2**63-1,
/// -1,-32,-33,-128,-129,-32768,-32769,-2**31,-2**31-1,-2**63]).hex()` (msgpack 1.1).
pub(crate) const EDGE_INTS_PACKED: &str = "007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf7fffffffffffffffffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd38000000000000000";

#[test]
fn values_stream_of_ints() {
    let (want, v) = (EDGE_INTS_PACKED, EDGE_INTS.to_vec());
    let b = batch(vec![col("value", Arc::new(Int64Array::from(v)))]);
    assert_eq!(
        hex(&write_batches(&[b.slice(0, 1), b.slice(1, 19)], Layout::Values).unwrap()),
        want
    );
    // msgpack.packb(2**64-1): plain ints (kind "int", as the reader marks them); one row that
    // is not an array stays bare
    let plain = Field::new("value", DataType::UInt64, true).with_metadata(
        std::collections::HashMap::from([(meta::KIND.to_string(), "int".to_string())]),
    );
    let u = RecordBatch::try_new(
        Arc::new(Schema::new(vec![plain])),
        vec![Arc::new(UInt64Array::from(vec![u64::MAX]))],
    )
    .unwrap();
    assert_eq!(
        hex(&write_batches(&[u], Layout::Values).unwrap()),
        "cfffffffffffffffff"
    );
    // without it (e.g. from Polars) the dtype goes along, or small values would read back
    // as Int64: msgpack_numpy.packb(np.uint64(2**64-1))
    let u = batch(vec![col(
        "value",
        Arc::new(UInt64Array::from(vec![u64::MAX])),
    )]);
    assert_eq!(
        hex(&write_batches(&[u], Layout::Values).unwrap()),
        "83c4026e64c2c40474797065a33c7538c40464617461c408ffffffffffffffff"
    );
}

#[test]
fn tensors() {
    // b''.join(msgpack_numpy.packb({'v': np.arange(3, dtype='<f4') + i}) for i in range(2))
    let b = batch(vec![col(
        "v",
        fsl(
            Arc::new(Float32Array::from(vec![0., 1., 2., 1., 2., 3.])),
            3,
        ),
    )]);
    assert_eq!(records(&b), "81a17685c4026e64c3c40474797065a33c6634c4046b696e64c400c40573686170659103c40464617461c40c000000000000803f0000004081a17685c4026e64c3c40474797065a33c6634c4046b696e64c400c40573686170659103c40464617461c40c0000803f0000004000004040");

    // msgpack_numpy.packb({'m': np.arange(6, dtype='>i2').reshape(2, 3)})
    let m = fsl(
        fsl(Arc::new(Int16Array::from(vec![0, 1, 2, 3, 4, 5])), 3),
        2,
    );
    let b = batch(vec![col_md("m", m, "ndarray", ">i2")]);
    assert_eq!(records(&b), "81a16d85c4026e64c3c40474797065a33e6932c4046b696e64c400c4057368617065920203c40464617461c40c000000010002000300040005");

    // packb({'r': np.zeros((2,3),'<f8')}) + packb({'r': np.ones((1,3),'<f8')})
    let vals = Float64Array::from(vec![0., 0., 0., 0., 0., 0., 1., 1., 1.]);
    let r = list(list(Arc::new(vals), vec![0, 3, 6, 9]), vec![0, 2, 3]);
    let b = batch(vec![col_md("r", r, "ndarray", "<f8")]);
    assert_eq!(records(&b), "81a17285c4026e64c3c40474797065a33c6638c4046b696e64c400c4057368617065920203c40464617461c43000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000081a17285c4026e64c3c40474797065a33c6638c4046b696e64c400c4057368617065920103c40464617461c418000000000000f03f000000000000f03f000000000000f03f");

    // packb({'z': np.array(2.5, dtype='<f8')})  (0-d)
    let b = batch(vec![col_md(
        "z",
        Arc::new(Float64Array::from(vec![2.5])),
        "ndarray",
        "<f8",
    )]);
    assert_eq!(records(&b), "81a17a85c4026e64c3c40474797065a33c6638c4046b696e64c400c405736861706590c40464617461c4080000000000000440");

    // packb({'b': np.array([True, False])})
    let b = batch(vec![col(
        "b",
        fsl(Arc::new(BooleanArray::from(vec![true, false])), 2),
    )]);
    assert_eq!(records(&b), "81a16285c4026e64c3c40474797065a37c6231c4046b696e64c400c40573686170659102c40464617461c4020100");

    // packb({'t': np.array([[1, 2], [3, 4]], dtype='<i8')})
    let b = batch(vec![col(
        "t",
        fsl(fsl(Arc::new(Int64Array::from(vec![1, 2, 3, 4])), 2), 2),
    )]);
    assert_eq!(records(&b), "81a17485c4026e64c3c40474797065a33c6938c4046b696e64c400c4057368617065920202c40464617461c4200100000000000000020000000000000003000000000000000400000000000000");

    // packb({'c': np.array([1+2j, 3-4j], dtype='<c8')})
    let c = fsl(
        fsl(Arc::new(Float32Array::from(vec![1., 2., 3., -4.])), 2),
        2,
    );
    let b = batch(vec![col_md("c", c, "ndarray", "<c8")]);
    assert_eq!(records(&b), "81a16385c4026e64c3c40474797065a33c6338c4046b696e64c400c40573686170659102c40464617461c4100000803f0000004000004040000080c0");

    // packb({'u': np.array(['a', 'bcd'])})  (no metadata: '<U{max}')
    let b = batch(vec![col(
        "u",
        fsl(Arc::new(StringArray::from(vec!["a", "bcd"])), 2),
    )]);
    assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33c5533c4046b696e64c400c40573686170659102c40464617461c418610000000000000000000000620000006300000064000000");
}

#[test]
fn ragged_empty_row_keeps_uniform_axes() {
    // msgpack_numpy.packb({'e': np.ones((2, 3), '<f4')}) + packb({'e': np.zeros((0, 3), '<f4')})
    // read as List(List(Float32)) with msgpack_numpy.shape = [null, 3]
    let e = list(
        list(Arc::new(Float32Array::from(vec![1.0; 6])), vec![0, 3, 6]),
        vec![0, 2, 2],
    );
    let mut m = md("ndarray", "<f4");
    m.insert(meta::SHAPE.to_string(), "[null,3]".to_string());
    let f = Field::new("e", e.data_type().clone(), true).with_metadata(m);
    let b = batch(vec![(f, e)]);
    let want = "81a16585c4026e64c3c40474797065a33c6634c4046b696e64c400c4057368617065920203c40464617461c4180000803f0000803f0000803f0000803f0000803f0000803f81a16585c4026e64c3c40474797065a33c6634c4046b696e64c400c4057368617065920003c40464617461c400";
    assert_eq!(records(&b), want);
}

#[test]
fn tensor_null_row_and_slice() {
    let inner = Float32Array::from(vec![0., 1., 2., 9., 9., 9., 1., 2., 3.]);
    let a = FixedSizeListArray::try_new(
        item(DataType::Float32),
        3,
        Arc::new(inner),
        Some(NullBuffer::from(vec![true, false, true])),
    )
    .unwrap();
    let b = batch(vec![col("v", Arc::new(a))]);
    let out = records(&b);
    // Row 1 is null: {'v': None}
    assert!(out.contains("81a176c081a176"), "{out}");
    // A slice starts at the right element.
    let s = records(&b.slice(2, 1));
    assert!(s.ends_with("c40c0000803f0000004000004040"), "{s}");
}

#[test]
fn scalars_and_complex() {
    // packb({'h': np.float16(1.5)})
    let b = batch(vec![col(
        "h",
        Arc::new(Float16Array::from(vec![half::f16::from_f32(1.5)])),
    )]);
    assert_eq!(
        records(&b),
        "81a16883c4026e64c2c40474797065a33c6632c40464617461c402003e"
    );
    // packb({'k': np.int32(5)})
    let b = batch(vec![col("k", Arc::new(Int32Array::from(vec![5])))]);
    assert_eq!(
        records(&b),
        "81a16b83c4026e64c2c40474797065a33c6934c40464617461c40405000000"
    );
    // packb({'c': np.complex128(1+2j)})
    let c = fsl(Arc::new(Float64Array::from(vec![1., 2.])), 2);
    let b = batch(vec![col_md("c", c, "scalar", "<c16")]);
    assert_eq!(
        records(&b),
        "81a16383c4026e64c2c40474797065a43c633136c40464617461c410000000000000f03f0000000000000040"
    );
    // packb({'c': np.bool_(True)})
    let b = batch(vec![col_md(
        "c",
        Arc::new(BooleanArray::from(vec![true])),
        "scalar",
        "|b1",
    )]);
    assert_eq!(
        records(&b),
        "81a16383c4026e64c2c40474797065a37c6231c40464617461c40101"
    );
    // msgpack.packb({'a': 1.5}, use_single_float=True)  (a Float32 column is msgpack float32)
    let b = batch(vec![col("a", Arc::new(Float32Array::from(vec![1.5])))]);
    assert_eq!(records(&b), "81a161ca3fc00000");
    // packb({'c': 1+2j}), packb({'c': 1j}), packb({'c': complex(-0.0, -1)})
    let c = fsl(
        Arc::new(Float64Array::from(vec![1., 2., 0., 1., -0.0, -1.])),
        2,
    );
    let b = batch(vec![col_md("c", c, "complex", "")]);
    let want = [("(1+2j)"), ("1j"), ("(-0-1j)")]
        .iter()
        .map(|r| {
            let mut v = unhex("81a16382c407636f6d706c6578c3c40464617461");
            v.push(0xa0 | r.len() as u8);
            v.extend_from_slice(r.as_bytes());
            hex(&v)
        })
        .collect::<String>();
    assert_eq!(records(&b), want);
    // msgpack_numpy.packb({'c': 1+2j}) exactly:
    assert!(want.starts_with("81a16382c407636f6d706c6578c3c40464617461a6283"));
}

#[test]
fn strings_bytes_dates() {
    // packb({'u': np.array('héllo', dtype='<U5')}) + packb({'u': np.array('ab', dtype='<U5')})
    let b = batch(vec![col_md(
        "u",
        Arc::new(StringArray::from(vec!["héllo", "ab"])),
        "ndarray",
        "<U5",
    )]);
    assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33c5535c4046b696e64c400c405736861706590c40464617461c41468000000e90000006c0000006c0000006f00000081a17585c4026e64c3c40474797065a33c5535c4046b696e64c400c405736861706590c40464617461c4146100000062000000000000000000000000000000");
    // packb({'u': np.array(['ab', 'c'], dtype='>U3')})
    let b = batch(vec![col_md(
        "u",
        fsl(Arc::new(StringArray::from(vec!["ab", "c"])), 2),
        "ndarray",
        ">U3",
    )]);
    assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33e5533c4046b696e64c400c40573686170659102c40464617461c418000000610000006200000000000000630000000000000000");
    // packb({'s': np.array(b'ab', dtype='|S3')})
    let b = batch(vec![col_md(
        "s",
        Arc::new(BinaryArray::from(vec![&b"ab"[..]])),
        "ndarray",
        "|S3",
    )]);
    assert_eq!(records(&b), "81a17385c4026e64c3c40474797065a37c5333c4046b696e64c400c405736861706590c40464617461c403616200");
    // Too long for the dtype (a column typed from its first rows): that row at its own width,
    // the others at the column's, as
    // packb({'u': np.array('ok', dtype='<U5')}) + packb({'u': np.array('toolong', dtype='<U7')})
    let b = batch(vec![col_md(
        "u",
        Arc::new(StringArray::from(vec!["ok", "toolong"])),
        "ndarray",
        "<U5",
    )]);
    assert_eq!(records(&b), "81a17585c4026e64c3c40474797065a33c5535c4046b696e64c400c405736861706590c40464617461c4146f0000006b00000000000000000000000000000081a17585c4026e64c3c40474797065a33c5537c4046b696e64c400c405736861706590c40464617461c41c740000006f0000006f0000006c0000006f0000006e00000067000000");

    // msgpack_numpy cannot pack datetime64 (no buffer protocol); the same map by hand:
    // a = np.array(np.datetime64('2020-01-01T00:00:00.000001'), dtype='<M8[us]')
    // msgpack.packb({b'nd': True, b'type': a.dtype.str, b'kind': b'', b'shape': list(a.shape),
    //                b'data': a.view('<i8').tobytes()}, use_bin_type=True), keyed 't', then NaT;
    // msgpack_numpy.unpackb gives back array('2020-01-01T00:00:00.000001', dtype='datetime64[us]').
    // A NaT reads as a null that keeps NaT's marker (i64::MIN) under it: a NaT again; a null
    // with anything else under it was a nil.
    let t = TimestampMicrosecondArray::new(
        vec![1_577_836_800_000_001, i64::MIN, 0].into(),
        Some(vec![true, false, false].into()),
    );
    let b = batch(vec![col_md("t", Arc::new(t), "ndarray", "<M8[us]")]);
    let want = "81a17485c4026e64c3c40474797065a73c4d385b75735dc4046b696e64c400c405736861706590c40464617461c4080140fac1089b050081a17485c4026e64c3c40474797065a73c4d385b75735dc4046b696e64c400c405736861706590c40464617461c4080000000000000080";
    assert_eq!(records(&b), format!("{want}81a174c0"));
    let t = TimestampMicrosecondArray::from(vec![Some(1_577_836_800_000_001), None]);
    // Without metadata a Timestamp(us) is the same 0-d '<M8[us]' ndarray; nulls stay nil.
    let b = batch(vec![col("t", Arc::new(t))]);
    assert_eq!(records(&b), format!("{}81a174c0", &want[..want.len() / 2]));
    // '<M8[D]' from Date32 and from Timestamp(s) (how the reader stores D units).
    let d = batch(vec![col_md(
        "d",
        Arc::new(Date32Array::from(vec![18262])),
        "ndarray",
        "<M8[D]",
    )]);
    let s = batch(vec![col_md(
        "d",
        Arc::new(TimestampSecondArray::from(vec![18262 * 86400])),
        "ndarray",
        "<M8[D]",
    )]);
    assert_eq!(records(&d), records(&s));
    // a = np.array(np.datetime64('2020-01-01'), dtype='<M8[D]'); the map by hand as above:
    assert_eq!(records(&d), "81a16485c4026e64c3c40474797065a63c4d385b445dc4046b696e64c400c405736861706590c40464617461c4085647000000000000");
    let bad = batch(vec![col_md(
        "d",
        Arc::new(TimestampSecondArray::from(vec![5])),
        "ndarray",
        "<M8[D]",
    )]);
    assert!(write_batches(&[bad], Layout::Records)
        .unwrap_err()
        .to_string()
        .contains("whole number"));
}

#[test]
fn utc_timestamps_are_ext() {
    // b''.join(msgpack.packb(msgpack.Timestamp.from_unix_nano(ns)) for ns in [...])
    let ns = vec![
        0,
        1_500_000_000_000_000_000,
        1_500_000_000_000_000_005,
        -1,
        -1_000_000_000,
    ];
    let a = TimestampNanosecondArray::from(ns).with_timezone("UTC");
    let b = batch(vec![col("value", Arc::new(a))]);
    assert_eq!(
        hex(&write_batches(&[b], Layout::Values).unwrap()),
        "d6ff00000000d6ff59682f00d7ff0000001459682f00c70cff3b9ac9ffffffffffffffffffc70cff00000000ffffffffffffffff"
    );
}

#[test]
fn structured_dtypes() {
    // dt = np.dtype({'names':['a','b'],'formats':['<i4','<f8'],'offsets':[0,8],'itemsize':16})
    // s = np.zeros((), dtype=dt); s['a'] = 7; s['b'] = 2.5; msgpack_numpy.packb({'s': s})
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Float64, true),
    ]);
    let sa = StructArray::try_new(
        fields,
        vec![
            Arc::new(Int32Array::from(vec![7])),
            Arc::new(Float64Array::from(vec![2.5])),
        ],
        None,
    )
    .unwrap();
    let b = batch(vec![col_md(
        "s",
        Arc::new(sa),
        "ndarray",
        r#"[["a","<i4"],["","|V4"],["b","<f8"]]"#,
    )]);
    assert_eq!(records(&b), "81a17385c4026e64c3c404747970659392a161a33c693492a0a37c563492a162a33c6638c4046b696e64c40156c405736861706590c40464617461c41007000000000000000000000000000440");

    // dt2 = np.dtype([('a','>i2'),('c','<f4',(2,))]); s2 = np.zeros((2,), dtype=dt2)
    // s2['a'] = [1, 2]; s2['c'] = [[1, 2], [3, 4]]; msgpack_numpy.packb({'s': s2})
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int16, true),
        Field::new(
            "c",
            DataType::FixedSizeList(item(DataType::Float32), 2),
            true,
        ),
    ]);
    let sa = StructArray::try_new(
        fields,
        vec![
            Arc::new(Int16Array::from(vec![1, 2])),
            fsl(Arc::new(Float32Array::from(vec![1., 2., 3., 4.])), 2),
        ],
        None,
    )
    .unwrap();
    let b = batch(vec![col_md(
        "s",
        fsl(Arc::new(sa), 2),
        "ndarray",
        r#"[["a",">i2"],["c","<f4",[2]]]"#,
    )]);
    assert_eq!(records(&b), "81a17385c4026e64c3c404747970659292a161a33e693293a163a33c66349102c4046b696e64c40156c40573686170659102c40464617461c41400010000803f0000004000020000404000008040");
}

#[test]
fn maps_and_lists() {
    // packb({'s': {'a': 1, 'b': 'x'}, 'l': [1, 2, 3]}) + packb({'s': None, 'l': []})
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]);
    let sa = StructArray::try_new(
        fields,
        vec![
            Arc::new(Int64Array::from(vec![1, 0])),
            Arc::new(StringArray::from(vec!["x", ""])),
        ],
        Some(NullBuffer::from(vec![true, false])),
    )
    .unwrap();
    let l = list(Arc::new(Int64Array::from(vec![1, 2, 3])), vec![0, 3, 3]);
    let b = batch(vec![col("s", Arc::new(sa)), col("l", l)]);
    assert_eq!(
        records(&b),
        "82a17382a16101a162a178a16c9301020382a173c0a16c90"
    );
    // Dictionary columns write the values they point to.
    let d: DictionaryArray<Int32Type> = vec!["x", "y", "x"].into_iter().collect();
    let b = batch(vec![col("d", Arc::new(d))]);
    assert_eq!(records(&b), "81a164a17881a164a17981a164a178");
    // Unsupported types name the column.
    let dec = Decimal128Array::from(vec![1])
        .with_precision_and_scale(10, 2)
        .unwrap();
    let e =
        write_batches(&[batch(vec![col("money", Arc::new(dec))])], Layout::Records).unwrap_err();
    assert_eq!(e.path(), Some("money"));
    assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{e}");
}

#[test]
fn columns_and_values_containers() {
    // msgpack_numpy.packb({'x': np.arange(12, dtype='<f4').reshape(4, 3)})
    let want = "81a17885c4026e64c3c40474797065a33c6634c4046b696e64c400c4057368617065920403c40464617461c430000000000000803f0000004000004040000080400000a0400000c0400000e04000000041000010410000204100003041";
    let vals: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let b = batch(vec![col("x", fsl(Arc::new(Float32Array::from(vals)), 3))]);
    assert_eq!(
        hex(&write_batches(std::slice::from_ref(&b), Layout::Columns).unwrap()),
        want
    );
    // Several batches still make one map.
    assert_eq!(
        hex(&write_batches(&[b.slice(0, 1), b.slice(1, 3)], Layout::Columns).unwrap()),
        want
    );
    // Layout::Auto follows the schema metadata (as the reader sets it, with field metadata).
    let x = b.column(0).clone();
    let auto = with_schema_md(
        batch(vec![col_md("x", x, "ndarray", "<f4")]),
        "columns",
        "stream",
    );
    assert_eq!(hex(&write_batches(&[auto], Layout::Auto).unwrap()), want);

    // msgpack_numpy.packb(np.arange(5, dtype='<i8'))  (values layout, one bare ndarray)
    let want = "85c4026e64c3c40474797065a33c6938c4046b696e64c400c40573686170659105c40464617461c42800000000000000000100000000000000020000000000000003000000000000000400000000000000";
    let b = with_schema_md(
        batch(vec![col(
            "value",
            Arc::new(Int64Array::from(vec![0, 1, 2, 3, 4])),
        )]),
        "values",
        "ndarray",
    );
    assert_eq!(
        hex(&write_batches(&[b.slice(0, 2), b.slice(2, 3)], Layout::Values).unwrap()),
        want
    );

    // A values stream of one ndarray row would read back as its axis 0: written as [value].
    let one = batch(vec![col(
        "value",
        fsl(Arc::new(Float32Array::from(vec![0., 1., 2.])), 3),
    )]);
    let out = write_batches(&[one], Layout::Values).unwrap();
    assert_eq!(out[0], 0x91);
    assert_eq!(out[1], 0x85);
    // container "array": one top-level array of rows
    let b = with_schema_md(
        batch(vec![col("value", Arc::new(Int64Array::from(vec![1, 2])))]),
        "values",
        "array",
    );
    assert_eq!(hex(&write_batches(&[b], Layout::Auto).unwrap()), "920102");
    let r = with_schema_md(
        batch(vec![col("a", Arc::new(Int64Array::from(vec![1, 2])))]),
        "records",
        "array",
    );
    assert_eq!(
        hex(&write_batches(std::slice::from_ref(&r), Layout::Auto).unwrap()),
        "9281a1610181a16102"
    );
    // The container of another layout does not apply.
    assert_eq!(hex(&write_batches(&[r], Layout::Values).unwrap()), "0102");
    // A column with nulls in columns layout is a list.
    let n = batch(vec![col(
        "a",
        Arc::new(Float64Array::from(vec![Some(1.0), None])),
    )]);
    assert_eq!(
        hex(&write_batches(&[n], Layout::Columns).unwrap()),
        "81a16192cb3ff0000000000000c0"
    );
    // msgpack_numpy.packb({'a': [1, 2, 3], 'b': ['x', 'y', 'z'], 'c': np.arange(3.0)}) as the
    // reader gives it back: only the ndarray column carries metadata, the lists stay lists.
    let c = with_schema_md(
        batch(vec![
            col("a", Arc::new(Int64Array::from(vec![1, 2, 3]))),
            col("b", Arc::new(StringArray::from(vec!["x", "y", "z"]))),
            col_md(
                "c",
                Arc::new(Float64Array::from(vec![0., 1., 2.])),
                "ndarray",
                "<f8",
            ),
        ]),
        "columns",
        "stream",
    );
    assert_eq!(
        hex(&write_batches(&[c], Layout::Auto).unwrap()),
        "83a16193010203a16293a178a179a17aa16385c4026e64c3c40474797065a33c6638c4046b696e64c400c40573686170659103c40464617461c4180000000000000000000000000000f03f0000000000000040"
    );
    // An empty input reads as a values table without columns: it writes an empty file.
    let empty = with_schema_md(
        RecordBatch::new_empty(Arc::new(Schema::empty())),
        "values",
        "stream",
    );
    let w = WriterBuilder::new()
        .with_layout(Layout::Auto)
        .build(Vec::new(), empty.schema())
        .unwrap();
    assert!(w.finish().unwrap().is_empty());
    // Values layout needs exactly one column.
    let two = batch(vec![
        col("a", Arc::new(Int64Array::from(vec![1]))),
        col("b", Arc::new(Int64Array::from(vec![1]))),
    ]);
    assert!(write_batches(&[two], Layout::Values).is_err());
}

mod null_elements {
    use super::*;
    use arrow_array::{Array, FixedSizeListArray, Float32Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn a_null_inside_an_array_value_is_an_error_not_zero() {
        let vals = Float32Array::from(vec![Some(1.0), None, Some(3.0), Some(4.0)]);
        let col = FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float32, true)),
            2,
            Arc::new(vals),
            None,
        );
        let schema = Arc::new(Schema::new(vec![Field::new(
            "emb",
            col.data_type().clone(),
            true,
        )]));
        let b = RecordBatch::try_new(schema, vec![Arc::new(col)]).unwrap();
        for layout in [Layout::Records, Layout::Columns, Layout::Values] {
            let e = write_batches(std::slice::from_ref(&b), layout).unwrap_err();
            assert!(
                e.to_string().contains("ndarrays cannot hold nulls"),
                "{layout}: {e}"
            );
            assert_eq!(e.record(), Some(0), "{layout}: {e}");
            assert_eq!(e.path(), Some("emb"), "{layout}: {e}");
        }
    }
}

mod per_row {
    use super::*;
    use arrow_array::builder::{Int64Builder, ListBuilder};
    use arrow_array::{
        Array, FixedSizeListArray, Float32Array, Int64Array, StringArray, StructArray,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    /// Each blob is what the records layout writes as the value of key "v" in that row's map.
    fn check(col: ArrayRef) {
        let field = Field::new("v", col.data_type().clone(), true);
        let blobs = encode_values_per_row(&field, &col).unwrap();
        assert_eq!(blobs.len(), col.len());
        // a record stream (as read from one): one row stays one bare map
        let md = std::collections::HashMap::from([
            (meta::LAYOUT.to_string(), "records".to_string()),
            (meta::CONTAINER.to_string(), "stream".to_string()),
        ]);
        let schema = Arc::new(Schema::new_with_metadata(vec![field], md));
        let b = RecordBatch::try_new(schema, vec![col.clone()]).unwrap();
        for row in 0..col.len() {
            if col.is_null(row) {
                assert!(blobs.is_null(row), "row {row}");
                continue;
            }
            let rec = write_batches(&[b.slice(row, 1)], Layout::Records).unwrap();
            // 0x81 (map of 1), 0xa1 'v' (the key), then the value
            assert_eq!(&rec[..3], b"\x81\xa1v");
            assert_eq!(
                blobs.value(row),
                &rec[3..],
                "row {row} of {}",
                col.data_type()
            );
        }
    }

    #[test]
    fn one_blob_per_row() {
        check(Arc::new(Int64Array::from(vec![
            Some(1),
            None,
            Some(-70000),
        ])));
        check(Arc::new(StringArray::from(vec![None, Some("é"), Some("")])));
        let vals = Float32Array::from((0..6).map(|i| i as f32).collect::<Vec<_>>());
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        check(Arc::new(FixedSizeListArray::new(
            item,
            2,
            Arc::new(vals),
            Some(NullBuffer::from(vec![true, false, true])),
        )));
        let mut lb = ListBuilder::new(Int64Builder::new());
        lb.append_value([Some(1), None]);
        lb.append_null();
        lb.append_value([]);
        check(Arc::new(lb.finish()));
        let s = StructArray::try_new(
            vec![
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(Field::new("b", DataType::Utf8, true)),
            ]
            .into(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
                Arc::new(StringArray::from(vec![Some("x"), None])),
            ],
            Some(NullBuffer::from(vec![true, false])),
        )
        .unwrap();
        check(Arc::new(s));
        // an all-null column: null blobs, nothing encoded
        let blobs = encode_values_per_row(
            &Field::new("v", DataType::Null, true),
            &(Arc::new(arrow_array::NullArray::new(2)) as ArrayRef),
        )
        .unwrap();
        assert_eq!(blobs.null_count(), 2);
        assert!(blobs.values().is_empty());
    }

    #[test]
    fn errors_name_the_row() {
        let vals = Float32Array::from(vec![Some(1.0), Some(2.0), None, Some(4.0)]);
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let col: ArrayRef = Arc::new(FixedSizeListArray::new(item, 2, Arc::new(vals), None));
        let e = encode_values_per_row(&Field::new("emb", col.data_type().clone(), true), &col)
            .unwrap_err();
        assert_eq!(e.record(), Some(1), "{e}");
        assert_eq!(e.path(), Some("emb"), "{e}");
    }
}

#[test]
fn slice_rows_equals_arrows_slice_of_the_concatenated_table() {
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
    let batch = |lo: i32, n: i32| {
        let a: ArrayRef = Arc::new(Int32Array::from_iter_values(lo..lo + n));
        RecordBatch::try_new(schema.clone(), vec![a]).unwrap()
    };
    // Batches of 3, 0, 4 and 2 rows: slices across, inside, at and past the batch edges.
    let batches = [batch(0, 3), batch(3, 0), batch(3, 4), batch(7, 2)];
    let whole = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    for start in 0..=10 {
        for n in [0, 1, 2, 3, 5, 9, 20, usize::MAX] {
            let got = slice_rows(&batches, start, n);
            assert!(got.iter().all(|b| b.num_rows() > 0), "{start} {n}");
            let got = arrow_select::concat::concat_batches(&schema, &got).unwrap();
            let lo = start.min(whole.num_rows());
            let want = whole.slice(lo, n.min(whole.num_rows() - lo));
            assert_eq!(got, want, "rows {start}..+{n}");
        }
    }
}

/// A columns map goes to the sink column by column (not held whole beside the table): the same
/// bytes as one buffer, in writes none of which is much more than one column.
#[test]
fn a_columns_map_is_written_column_by_column() {
    struct Writes(Vec<usize>, Vec<u8>);
    impl std::io::Write for Writes {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.push(b.len());
            self.1.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let n = 300_000usize;
    let b = batch(vec![
        col(
            "a",
            Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
        ),
        col(
            "b",
            Arc::new(Int64Array::from_iter_values((0..n as i64).map(|i| i * 3))),
        ),
        col(
            "c",
            Arc::new(Float32Array::from_iter_values(
                (0..n).map(|i| i as f32 / 7.0),
            )),
        ),
    ]);
    let column = n * 8;
    let mut w = WriterBuilder::new()
        .with_layout(Layout::Columns)
        .build(Writes(Vec::new(), Vec::new()), b.schema())
        .unwrap();
    w.write(&b.slice(0, 100_000)).unwrap();
    w.write(&b.slice(100_000, n - 100_000)).unwrap();
    let Writes(writes, bytes) = w.finish().unwrap();
    assert_eq!(
        bytes,
        write_batches(std::slice::from_ref(&b), Layout::Columns).unwrap()
    );
    assert!(writes.len() >= 3, "{writes:?}");
    assert!(writes.iter().all(|&k| k < column + (1 << 20)), "{writes:?}");
}

/// A sink that keeps the bytes and the longest single write it was handed.
struct Longest(Vec<u8>, usize);

impl std::io::Write for Longest {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.1 = self.1.max(b.len());
        self.0.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_columns_map_reaches_its_sink_in_steps_not_a_column_at_once() {
    // a 24 MB float32 column of shape (100,000, 60) and a 12.8 MB list of 100,000 float32[32]
    // ndarrays (a list in the file read), in three batches: the writer holds neither whole
    let n = 100_000usize;
    let x = fsl(
        Arc::new(Float32Array::from_iter_values(
            (0..n * 60).map(|i| i as f32),
        )),
        60,
    );
    let l = fsl(
        Arc::new(Float32Array::from_iter_values(
            (0..n * 32).map(|i| -(i as f32)),
        )),
        32,
    );
    let mut lmd = md("ndarray", "<f4");
    lmd.insert(meta::COLUMN.into(), "list".into());
    let b = batch(vec![
        col("x", x),
        (
            Field::new("l", l.data_type().clone(), true).with_metadata(lmd),
            l,
        ),
    ]);
    let parts = [
        b.slice(0, 30_000),
        b.slice(30_000, 50_000),
        b.slice(80_000, 20_000),
    ];
    let mut w = WriterBuilder::new()
        .with_layout(Layout::Columns)
        .build(Longest(Vec::new(), 0), b.schema())
        .unwrap();
    for p in &parts {
        w.write(p).unwrap();
    }
    let Longest(bytes, longest) = w.finish().unwrap();
    // the same bytes as the map written whole into memory
    assert_eq!(bytes, write_batches(&parts, Layout::Columns).unwrap());
    assert!(bytes.len() > 36_000_000);
    assert!(longest <= 8 << 20, "a write of {longest} bytes");
}
