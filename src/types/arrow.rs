//! The Arrow type of each numpy dtype (SPEC §3), and the nested list types tensors use.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Fields, SchemaRef, TimeUnit};

use crate::error::{err, ErrorKind, Result};
use crate::wire::dtype::{NpTimeUnit, NumpyDtype};

impl NpTimeUnit {
    /// The Arrow unit values are stored in, and the factor from numpy ticks to it.
    /// `None` where no exact linear conversion exists (months, years, sub-nanosecond).
    pub fn to_arrow(self) -> Option<(TimeUnit, i64)> {
        Some(match self {
            Self::Week => (TimeUnit::Second, 7 * 86_400),
            Self::Day => (TimeUnit::Second, 86_400),
            Self::Hour => (TimeUnit::Second, 3_600),
            Self::Minute => (TimeUnit::Second, 60),
            Self::Second => (TimeUnit::Second, 1),
            Self::Milli => (TimeUnit::Millisecond, 1),
            Self::Micro => (TimeUnit::Microsecond, 1),
            Self::Nano => (TimeUnit::Nanosecond, 1),
            _ => return None,
        })
    }
}

impl NumpyDtype {
    /// The Arrow type of one element.
    pub fn arrow_type(&self) -> Result<DataType> {
        Ok(match self {
            NumpyDtype::Bool => DataType::Boolean,
            NumpyDtype::Int { size, signed, .. } => match (size, signed) {
                (1, true) => DataType::Int8,
                (2, true) => DataType::Int16,
                (4, true) => DataType::Int32,
                (8, true) => DataType::Int64,
                (1, false) => DataType::UInt8,
                (2, false) => DataType::UInt16,
                (4, false) => DataType::UInt32,
                _ => DataType::UInt64,
            },
            NumpyDtype::Float { size, .. } => match size {
                2 => DataType::Float16,
                4 => DataType::Float32,
                _ => DataType::Float64,
            },
            NumpyDtype::Complex { size, .. } => {
                let part = if *size == 8 {
                    DataType::Float32
                } else {
                    DataType::Float64
                };
                DataType::FixedSizeList(Arc::new(Field::new("item", part, false)), 2)
            }
            NumpyDtype::Unicode { .. } => DataType::Utf8,
            NumpyDtype::Bytes { .. } => DataType::Binary,
            // (arrow-rs has no FixedSizeBinary of width 0: it panics on one)
            NumpyDtype::Void { len: 0 } => {
                return err(ErrorKind::UnsupportedDtype(format!(
                    "{} (void of 0 bytes has no Arrow equivalent)",
                    self.to_dtype_str()
                )))
            }
            NumpyDtype::Void { len } => DataType::FixedSizeBinary(
                i32::try_from(*len)
                    .map_err(|_| ErrorKind::UnsupportedDtype(self.to_dtype_str()))?,
            ),
            NumpyDtype::Datetime { unit, .. } => match unit {
                NpTimeUnit::Day | NpTimeUnit::Week => DataType::Date32,
                u => match u.to_arrow() {
                    Some((tu, _)) => DataType::Timestamp(tu, None),
                    None => {
                        return err(ErrorKind::UnsupportedDtype(format!(
                            "{} (unit {} has no exact Arrow equivalent)",
                            self.to_dtype_str(),
                            u.as_str()
                        )))
                    }
                },
            },
            NumpyDtype::Timedelta { unit, .. } => match unit.to_arrow() {
                Some((tu, _)) => DataType::Duration(tu),
                None => {
                    return err(ErrorKind::UnsupportedDtype(format!(
                        "{} (unit {} has no exact Arrow equivalent)",
                        self.to_dtype_str(),
                        unit.as_str()
                    )))
                }
            },
            NumpyDtype::Struct(fields) => {
                let mut out = Vec::with_capacity(fields.len());
                for f in fields.iter().filter(|f| !f.name.is_empty()) {
                    if matches!(f.dtype, NumpyDtype::Object) {
                        // not a pickle: msgpack_numpy copies the record bytes, pointers included
                        return err(ErrorKind::UnsupportedDtype(format!(
                            "{} (field {:?} is an object field: its bytes are pointers into the \
                             writing process, not values, so no reader can recover them)",
                            self.to_dtype_str(),
                            f.name
                        )));
                    }
                    let mut t = f.dtype.arrow_type()?;
                    for &d in f.shape.iter().rev() {
                        t = fixed_size_list(t, d)?;
                    }
                    out.push(Field::new(&f.name, t, true));
                }
                DataType::Struct(Fields::from(out))
            }
            NumpyDtype::Object => return err(ErrorKind::ObjectArray),
        })
    }
}

/// Whether `a` and `b` are one Arrow type but for field metadata (a struct's fields named alike,
/// in one order, at every depth; list items may be named otherwise).
pub fn same_but_metadata(a: &DataType, b: &DataType) -> bool {
    a.equals_datatype(b) && same_struct_fields(a, b)
}

/// Whether the structs in `a` and `b` (of types `equals_datatype` found equal) have fields of the
/// same names, in the same order, at every depth.
fn same_struct_fields(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    match (a, b) {
        (Struct(x), Struct(y)) => x
            .iter()
            .zip(y.iter())
            .all(|(f, g)| f.name() == g.name() && same_struct_fields(f.data_type(), g.data_type())),
        (List(f), List(g))
        | (LargeList(f), LargeList(g))
        | (FixedSizeList(f, _), FixedSizeList(g, _))
        | (ListView(f), ListView(g))
        | (LargeListView(f), LargeListView(g)) => same_struct_fields(f.data_type(), g.data_type()),
        // (a map's entries are named by its writer, not by keys)
        _ => true,
    }
}

/// The Arrow bytes of `b`'s rows: the data they use, not the buffers they sit in (a slice counts
/// its rows only; a tensor lent from a mapped file sits in the whole mapping).
pub fn data_bytes(b: &RecordBatch) -> usize {
    b.columns().iter().map(|c| column_bytes(c.as_ref())).sum()
}

/// [`data_bytes`] of one column.
pub fn column_bytes(c: &dyn Array) -> usize {
    // fixed-width values without children: counted from the length, where `to_data` would build
    // (and drop) an ArrayData per column (a tenth of writing a 10,000-column frame)
    let nulls = c.nulls().map_or(0, |n| n.len().div_ceil(8));
    match c.data_type() {
        DataType::Boolean => c.len().div_ceil(8) + nulls,
        t if t.is_primitive() => c.len() * t.primitive_width().unwrap_or(0) + nulls,
        _ => c
            .to_data()
            .get_slice_memory_size()
            .unwrap_or_else(|_| c.get_array_memory_size()),
    }
}

/// A batch of `rows` rows with these columns (also when there are none, which alone cannot say
/// how many rows there are).
pub(crate) fn record_batch(
    schema: &SchemaRef,
    cols: Vec<ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// `FixedSizeList(item, n)` with the item field named and nullable as Polars and pyarrow make it.
pub fn fixed_size_list(item: DataType, n: usize) -> Result<DataType> {
    let n = i32::try_from(n).map_err(|_| {
        ErrorKind::Layout(format!(
            "axis of length {n} is longer than a FixedSizeList can hold"
        ))
    })?;
    Ok(DataType::FixedSizeList(
        Arc::new(Field::new("item", item, true)),
        n,
    ))
}

/// `List(item)`, item field nullable as Polars and pyarrow make it.
pub fn list(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// A msgpack ext value of a type other than the timestamp (field metadata kind `ext`): its type
/// code and its bytes, the two parts of Python msgpack's `ExtType(code, data)`.
pub fn ext_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("code", DataType::Int8, false),
        Field::new("data", DataType::Binary, false),
    ]))
}

/// The type Polars can import (the core maps to it without the `polars` feature, e.g. for the
/// Python reader, which hands Arrow streams to Polars): `FixedSizeList` of width 0, at any level, becomes `List`; seconds
/// (Timestamp, Duration) become milliseconds.
pub fn polars_compatible_type(t: &DataType) -> DataType {
    let item = |f: &Arc<Field>| {
        Arc::new(
            Field::new(
                f.name(),
                polars_compatible_type(f.data_type()),
                f.is_nullable(),
            )
            .with_metadata(f.metadata().clone()),
        )
    };
    match t {
        DataType::FixedSizeList(f, 0) => DataType::List(item(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(item(f), *n),
        DataType::List(f) => DataType::List(item(f)),
        DataType::LargeList(f) => DataType::LargeList(item(f)),
        DataType::Struct(fs) => {
            DataType::Struct(Fields::from(fs.iter().map(item).collect::<Vec<_>>()))
        }
        // Polars has no seconds: it would scale them to milliseconds itself, wrapping on overflow
        DataType::Timestamp(TimeUnit::Second, tz) => {
            DataType::Timestamp(TimeUnit::Millisecond, tz.clone())
        }
        DataType::Duration(TimeUnit::Second) => DataType::Duration(TimeUnit::Millisecond),
        other => other.clone(),
    }
}

/// `a` cast to `t` where every value fits exactly (`safe: false`: an overflow, e.g. seconds past
/// the range of milliseconds, is an error, never a null); the error names the first index that
/// does not fit (found by halving, only once the whole cast failed): as the record `first + i`
/// when `first` is given, else in the message.
pub fn cast_exact(a: &ArrayRef, t: &DataType, first: Option<u64>) -> Result<ArrayRef> {
    let opts = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    let cast = |a: &ArrayRef| arrow_cast::cast_with_options(a, t, &opts);
    cast(a).map_err(|e| {
        // the shortest prefix that fails ends at the first value that does not fit
        let (mut lo, mut hi) = (0, a.len());
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            match cast(&a.slice(0, mid)) {
                Ok(_) => lo = mid,
                Err(_) => hi = mid,
            }
        }
        let at = hi.saturating_sub(1);
        match first {
            Some(r) => {
                crate::error::Error::new(ErrorKind::Inexact(format!("does not fit {t}: {e}")))
                    .at_record(r + at as u64)
            }
            None => crate::error::Error::new(ErrorKind::Inexact(format!(
                "value {at} of the batch does not fit {t}: {e}"
            ))),
        }
    })
}

/// A short, readable name of a field's type, numpy-style for tensors: `f32[768]`,
/// `u8[32, 32, 3]`, `f32[*, 4]` (the ragged axes of an ndarray column as `*`), `list[str]`,
/// `struct{a: i64, b: f64[2]}`, `datetime[us, UTC]`. Used where people read schemas (`schema`,
/// `head`).
pub fn short_name(field: &Field) -> String {
    let ragged = field
        .metadata()
        .get(crate::types::meta::KIND)
        .map(String::as_str)
        == Some("ndarray");
    type_name(field.data_type(), ragged)
}

fn type_name(t: &DataType, ragged: bool) -> String {
    // a run of list levels over a primitive element is a tensor
    let mut dims = Vec::new();
    let mut inner = t;
    loop {
        match inner {
            DataType::FixedSizeList(f, n) => {
                dims.push(n.to_string());
                inner = f.data_type();
            }
            DataType::List(f) | DataType::LargeList(f) | DataType::ListView(f) if ragged => {
                dims.push("*".into());
                inner = f.data_type();
            }
            _ => break,
        }
    }
    if !dims.is_empty() && is_tensor_leaf(inner) {
        return format!("{}[{}]", scalar_name(inner), dims.join(", "));
    }
    match t {
        DataType::FixedSizeList(f, n) => format!("array[{}, {n}]", short_name(f)),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => {
            format!("list[{}]", short_name(f))
        }
        DataType::Struct(fs) => format!(
            "struct{{{}}}",
            fs.iter()
                .map(|f| format!("{}: {}", f.name(), short_name(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                format!("map[{}, {}]", short_name(&kv[0]), short_name(&kv[1]))
            }
            other => format!("map[{}]", type_name(other, false)),
        },
        other => scalar_name(other),
    }
}

fn is_tensor_leaf(t: &DataType) -> bool {
    t.is_primitive() || matches!(t, DataType::Boolean | DataType::Utf8 | DataType::Binary)
}

fn scalar_name(t: &DataType) -> String {
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    };
    match t {
        DataType::Null => "null".into(),
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "i8".into(),
        DataType::Int16 => "i16".into(),
        DataType::Int32 => "i32".into(),
        DataType::Int64 => "i64".into(),
        DataType::UInt8 => "u8".into(),
        DataType::UInt16 => "u16".into(),
        DataType::UInt32 => "u32".into(),
        DataType::UInt64 => "u64".into(),
        DataType::Float16 => "f16".into(),
        DataType::Float32 => "f32".into(),
        DataType::Float64 => "f64".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "str".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "bin".into(),
        DataType::FixedSizeBinary(n) => format!("bin[{n}]"),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Timestamp(u, None) => format!("datetime[{}]", unit(u)),
        DataType::Timestamp(u, Some(tz)) => format!("datetime[{}, {tz}]", unit(u)),
        DataType::Duration(u) => format!("duration[{}]", unit(u)),
        other => other.to_string(),
    }
}

/// The type a user names (CLI `--schema-overrides col=TYPE`): a [`short_name`] (`i64`, `f32`,
/// `str`, `bin`, `bool`, `date`, `datetime[us]`, `datetime[ns, UTC]`, `duration[ms]`, `f32[768]`,
/// `u8[32, 32, 3]`, `list[str]`), a Polars-style name (`Int64`, `Float32`, `String`, `Binary`,
/// `Boolean`), or a numpy dtype string (`<f4`, `|b1`, `<M8[us]`).
pub fn parse_type_name(s: &str) -> Result<DataType> {
    let s = s.trim();
    let bad = || {
        crate::error::Error::new(ErrorKind::Usage(format!(
            "unknown type {s:?}; use a name such as i64, f32, str, bin, bool, date, datetime[us], f32[768], list[str], or a numpy dtype such as <f4"
        )))
    };
    if let Some(inner) = s.strip_prefix("list[").and_then(|r| r.strip_suffix(']')) {
        return Ok(list(parse_type_name(inner)?));
    }
    if let Some((head, rest)) = s.split_once('[') {
        let dims = rest.strip_suffix(']').ok_or_else(bad)?;
        match head {
            "datetime" | "duration" => {
                let mut parts = dims.split(',').map(str::trim);
                let unit = match parts.next() {
                    Some("s") => TimeUnit::Second,
                    Some("ms") => TimeUnit::Millisecond,
                    Some("us") => TimeUnit::Microsecond,
                    Some("ns") => TimeUnit::Nanosecond,
                    _ => return Err(bad()),
                };
                let tz = parts.next().map(Arc::<str>::from);
                return Ok(if head == "datetime" {
                    DataType::Timestamp(unit, tz)
                } else if tz.is_none() {
                    DataType::Duration(unit)
                } else {
                    return Err(bad());
                });
            }
            _ if !head.starts_with(['<', '>', '|', '=']) => {
                let mut t = parse_type_name(head)?;
                let dims: Vec<usize> = dims
                    .split(',')
                    .map(|d| d.trim().parse().map_err(|_| bad()))
                    .collect::<Result<_>>()?;
                for &d in dims.iter().rev() {
                    t = fixed_size_list(t, d)?;
                }
                return Ok(t);
            }
            _ => {}
        }
    }
    Ok(match s {
        "bool" | "Boolean" => DataType::Boolean,
        "i8" | "Int8" => DataType::Int8,
        "i16" | "Int16" => DataType::Int16,
        "i32" | "Int32" => DataType::Int32,
        "i64" | "Int64" | "int" => DataType::Int64,
        "u8" | "UInt8" => DataType::UInt8,
        "u16" | "UInt16" => DataType::UInt16,
        "u32" | "UInt32" => DataType::UInt32,
        "u64" | "UInt64" => DataType::UInt64,
        "f16" | "Float16" => DataType::Float16,
        "f32" | "Float32" => DataType::Float32,
        "f64" | "Float64" | "float" => DataType::Float64,
        "str" | "String" | "Utf8" => DataType::Utf8,
        "bin" | "Binary" | "bytes" => DataType::Binary,
        "date" | "Date" => DataType::Date32,
        numpy => NumpyDtype::parse(numpy)
            .and_then(|d| d.arrow_type())
            .map_err(|_| bad())?,
    })
}

/// The numpy dtype (native order) of the numbers at the bottom of nested list types.
pub(crate) fn leaf_dtype(t: &arrow_schema::DataType) -> Option<NumpyDtype> {
    use arrow_schema::DataType as T;
    let s = match t {
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => return leaf_dtype(f.data_type()),
        T::Boolean => "|b1",
        T::Int8 => "|i1",
        T::Int16 => "<i2",
        T::Int32 => "<i4",
        T::Int64 => "<i8",
        T::UInt8 => "|u1",
        T::UInt16 => "<u2",
        T::UInt32 => "<u4",
        T::UInt64 => "<u8",
        T::Float16 => "<f2",
        T::Float32 => "<f4",
        T::Float64 => "<f8",
        _ => return None,
    };
    NumpyDtype::parse(s)
        .ok()
        .map(|d| crate::types::buffers::native(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_types() {
        let t = |s| NumpyDtype::parse(s).unwrap().arrow_type().unwrap();
        assert_eq!(t(">f2"), DataType::Float16);
        assert_eq!(t("<M8[D]"), DataType::Date32);
        assert_eq!(t("<m8[D]"), DataType::Duration(TimeUnit::Second));
        assert!(NumpyDtype::parse("<M8[Y]").unwrap().arrow_type().is_err());
        assert!(NumpyDtype::parse("|O").unwrap().arrow_type().is_err());
    }

    #[test]
    fn type_names_parse_back() {
        let fsl = |t, n| fixed_size_list(t, n).unwrap();
        for t in [
            DataType::Int64,
            DataType::Utf8,
            fsl(DataType::Float32, 768),
            fsl(fsl(fsl(DataType::UInt8, 3), 32), 32),
            list(DataType::Utf8),
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            DataType::Duration(TimeUnit::Millisecond),
            DataType::Date32,
        ] {
            let name = short_name(&Field::new("x", t.clone(), true));
            assert_eq!(parse_type_name(&name).unwrap(), t, "{name}");
        }
        assert_eq!(parse_type_name("<f4").unwrap(), DataType::Float32);
        assert_eq!(parse_type_name("String").unwrap(), DataType::Utf8);
        let e = parse_type_name("complex256").unwrap_err().to_string();
        assert!(e.contains("unknown type \"complex256\""), "{e}");
    }

    #[test]
    fn short_names() {
        let fsl = |t, n| fixed_size_list(t, n).unwrap();
        let name = |t: DataType| short_name(&Field::new("x", t, true));
        let nd = |t: DataType| {
            let md = [(crate::types::meta::KIND.to_string(), "ndarray".to_string())];
            short_name(&Field::new("x", t, true).with_metadata(std::collections::HashMap::from(md)))
        };
        assert_eq!(name(fsl(DataType::Float32, 768)), "f32[768]");
        assert_eq!(
            name(fsl(fsl(fsl(DataType::UInt8, 3), 32), 32)),
            "u8[32, 32, 3]"
        );
        assert_eq!(nd(list(fsl(DataType::Float32, 4))), "f32[*, 4]");
        assert_eq!(nd(list(list(DataType::Int64))), "i64[*, *]");
        assert_eq!(name(list(DataType::Utf8)), "list[str]");
        assert_eq!(name(list(list(DataType::Int64))), "list[list[i64]]");
        let s = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", fsl(DataType::Float64, 2), true),
        ]));
        assert_eq!(name(s.clone()), "struct{a: i64, b: f64[2]}");
        assert_eq!(name(list(s)), "list[struct{a: i64, b: f64[2]}]");
        assert_eq!(
            name(DataType::Timestamp(
                TimeUnit::Nanosecond,
                Some("UTC".into())
            )),
            "datetime[ns, UTC]"
        );
    }
}
