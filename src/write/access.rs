//! Reading Arrow arrays the writer is given: any string or binary array type, time units, and
//! which numpy dtype an Arrow type can be written as.

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, BinaryArray, BinaryViewArray, FixedSizeBinaryArray, LargeBinaryArray, LargeStringArray,
    StringArray, StringViewArray,
};
use arrow_schema::{DataType, TimeUnit};

use crate::types::{NpTimeUnit, NumpyDtype};

// Arrow access helpers

/// Any of Arrow's string arrays.
pub(crate) enum Strs {
    S(StringArray),
    L(LargeStringArray),
    V(StringViewArray),
}

impl Strs {
    pub(crate) fn new(a: &dyn Array) -> Option<Self> {
        Some(match a.data_type() {
            DataType::Utf8 => Strs::S(a.as_string::<i32>().clone()),
            DataType::LargeUtf8 => Strs::L(a.as_string::<i64>().clone()),
            DataType::Utf8View => Strs::V(a.as_string_view().clone()),
            _ => return None,
        })
    }
    #[inline]
    pub(crate) fn value(&self, i: usize) -> &str {
        match self {
            Strs::S(a) => a.value(i),
            Strs::L(a) => a.value(i),
            Strs::V(a) => a.value(i),
        }
    }
    #[inline]
    pub(crate) fn is_null(&self, i: usize) -> bool {
        match self {
            Strs::S(a) => a.is_null(i),
            Strs::L(a) => a.is_null(i),
            Strs::V(a) => a.is_null(i),
        }
    }
    pub(crate) fn len(&self) -> usize {
        match self {
            Strs::S(a) => a.len(),
            Strs::L(a) => a.len(),
            Strs::V(a) => a.len(),
        }
    }
    pub(crate) fn bytes_hint(&self) -> usize {
        match self {
            Strs::S(a) => a.values().len(),
            Strs::L(a) => a.values().len(),
            Strs::V(a) => a.data_buffers().iter().map(|b| b.len()).sum::<usize>() + a.len() * 12,
        }
    }
}

/// Any of Arrow's binary arrays.
pub(crate) enum Bins {
    B(BinaryArray),
    L(LargeBinaryArray),
    V(BinaryViewArray),
    F(FixedSizeBinaryArray),
}

impl Bins {
    pub(crate) fn new(a: &dyn Array) -> Option<Self> {
        Some(match a.data_type() {
            DataType::Binary => Bins::B(a.as_binary::<i32>().clone()),
            DataType::LargeBinary => Bins::L(a.as_binary::<i64>().clone()),
            DataType::BinaryView => Bins::V(a.as_binary_view().clone()),
            DataType::FixedSizeBinary(_) => Bins::F(a.as_fixed_size_binary().clone()),
            _ => return None,
        })
    }
    #[inline]
    pub(crate) fn value(&self, i: usize) -> &[u8] {
        match self {
            Bins::B(a) => a.value(i),
            Bins::L(a) => a.value(i),
            Bins::V(a) => a.value(i),
            Bins::F(a) => a.value(i),
        }
    }
    #[inline]
    pub(crate) fn is_null(&self, i: usize) -> bool {
        match self {
            Bins::B(a) => a.is_null(i),
            Bins::L(a) => a.is_null(i),
            Bins::V(a) => a.is_null(i),
            Bins::F(a) => a.is_null(i),
        }
    }
    pub(crate) fn len(&self) -> usize {
        match self {
            Bins::B(a) => a.len(),
            Bins::L(a) => a.len(),
            Bins::V(a) => a.len(),
            Bins::F(a) => a.len(),
        }
    }
    pub(crate) fn bytes_hint(&self) -> usize {
        match self {
            Bins::B(a) => a.values().len(),
            Bins::L(a) => a.values().len(),
            Bins::V(a) => a.data_buffers().iter().map(|b| b.len()).sum::<usize>() + a.len() * 12,
            Bins::F(a) => a.len() * a.value_length() as usize,
        }
    }
}

pub(crate) fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}
pub(crate) fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// Nanoseconds per tick of a numpy unit that converts linearly to Arrow's.
pub(crate) fn np_unit_ns(u: NpTimeUnit) -> Option<i64> {
    Some(match u {
        NpTimeUnit::Week => 7 * 86_400_000_000_000,
        NpTimeUnit::Day => 86_400_000_000_000,
        NpTimeUnit::Hour => 3_600_000_000_000,
        NpTimeUnit::Minute => 60_000_000_000,
        NpTimeUnit::Second => 1_000_000_000,
        NpTimeUnit::Milli => 1_000_000,
        NpTimeUnit::Micro => 1_000,
        NpTimeUnit::Nano => 1,
        _ => return None,
    })
}
pub(crate) fn arrow_unit_ns(u: &TimeUnit) -> i64 {
    match u {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}
pub(crate) fn np_unit(u: &TimeUnit) -> NpTimeUnit {
    match u {
        TimeUnit::Second => NpTimeUnit::Second,
        TimeUnit::Millisecond => NpTimeUnit::Milli,
        TimeUnit::Microsecond => NpTimeUnit::Micro,
        TimeUnit::Nanosecond => NpTimeUnit::Nano,
    }
}
/// Nanoseconds per stored value of an Arrow temporal type.
pub(crate) fn temporal_ns(t: &DataType) -> Option<i64> {
    Some(match t {
        DataType::Timestamp(u, _) | DataType::Duration(u) => arrow_unit_ns(u),
        DataType::Date32 => 86_400_000_000_000,
        DataType::Date64 => 1_000_000,
        _ => return None,
    })
}

pub(crate) fn is_utc(tz: &str) -> bool {
    matches!(tz, "UTC" | "utc" | "Z" | "+00:00" | "Etc/UTC")
}

/// Peel FixedSizeList levels matching a structured field's sub-array shape.
pub(crate) fn peel_fixed_type<'a>(mut t: &'a DataType, shape: &[usize]) -> Option<&'a DataType> {
    for &d in shape {
        match t {
            DataType::FixedSizeList(f, n) if *n as usize == d => t = f.data_type(),
            _ => return None,
        }
    }
    Some(t)
}

/// Whether values of Arrow type `t` can be written as elements of numpy dtype `dt`.
pub(crate) fn accepts(dt: &NumpyDtype, t: &DataType) -> bool {
    use DataType as T;
    match dt {
        NumpyDtype::Bool => matches!(t, T::Boolean),
        NumpyDtype::Int { size, signed, .. } => matches!(
            (size, signed, t),
            (1, true, T::Int8)
                | (2, true, T::Int16)
                | (4, true, T::Int32)
                | (8, true, T::Int64)
                | (1, false, T::UInt8)
                | (2, false, T::UInt16)
                | (4, false, T::UInt32)
                | (8, false, T::UInt64)
        ),
        NumpyDtype::Float { size, .. } => {
            matches!(
                (size, t),
                (2, T::Float16) | (4, T::Float32) | (8, T::Float64)
            )
        }
        NumpyDtype::Complex { size, .. } => match t {
            T::FixedSizeList(f, 2) => {
                matches!((size, f.data_type()), (8, T::Float32) | (16, T::Float64))
            }
            _ => false,
        },
        NumpyDtype::Unicode { .. } => is_string(t),
        NumpyDtype::Bytes { .. } | NumpyDtype::Void { .. } => is_binary(t),
        NumpyDtype::Datetime { unit, .. } => {
            np_unit_ns(*unit).is_some() && matches!(t, T::Timestamp(..) | T::Date32 | T::Date64)
        }
        NumpyDtype::Timedelta { unit, .. } => {
            np_unit_ns(*unit).is_some() && matches!(t, T::Duration(_))
        }
        NumpyDtype::Struct(fields) => match t {
            T::Struct(children) => fields.iter().filter(|f| !f.name.is_empty()).all(|f| {
                children
                    .iter()
                    .find(|c| c.name() == &f.name)
                    .is_some_and(|c| {
                        peel_fixed_type(c.data_type(), &f.shape)
                            .is_some_and(|ct| accepts(&f.dtype, ct))
                    })
            }),
            _ => false,
        },
        NumpyDtype::Object => false,
    }
}
