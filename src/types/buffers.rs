//! numpy element bytes → Arrow arrays, per dtype. Fixed-width numbers become the values buffer as
//! they are (zero-copy when the bytes are aligned and in native order); everything else converts.

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::ArrowNativeType;
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, TimeUnit};

use crate::error::{Error, ErrorKind, Result};
use crate::types::text::TextValues;
use crate::types::{ByteOrder, NpTimeUnit, NumpyDtype};

/// Below this, huge pages are not worth asking for.
const HUGE_PAGE_MIN: usize = 8 << 20;

/// Ask the kernel to back a big, not yet touched buffer with transparent huge pages: on this kind
/// of machine (THP in `madvise` mode) faulting in 4 KiB pages costs more than the copy itself.
pub fn advise_huge_pages(buf: &mut MutableBuffer) {
    advise_huge_range(buf.as_mut_ptr(), buf.capacity())
}

/// [`advise_huge_pages`] for `len` bytes at `start` that this process allocated and has not
/// touched yet (the whole 2 MiB pages inside them).
pub fn advise_huge_range(start: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        if len < HUGE_PAGE_MIN {
            return;
        }
        const HUGE: usize = 2 << 20;
        let start = start as usize;
        let aligned = (start + HUGE - 1) & !(HUGE - 1);
        let end = (start + len) & !(HUGE - 1);
        if end > aligned {
            // SAFETY: the range lies inside the buffer's allocation; MADV_HUGEPAGE changes no contents.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// An empty output buffer of `capacity` bytes, from a plain allocation (`malloc`: 16-byte
/// aligned, enough for every type we decode to) rather than the 64-byte aligned one
/// `MutableBuffer::new` makes: glibc pads an aligned request past the block of the same size the
/// last read freed, so a process reading again and again got fresh pages (faulted in and zeroed
/// by the kernel) every time, and its heap grew by the holes.
pub(crate) fn output_buffer(capacity: usize) -> MutableBuffer {
    if capacity == 0 {
        return MutableBuffer::new(0);
    }
    let v = Vec::<u8>::with_capacity(capacity.max(16));
    // an allocator that gives less (none we know of, at 16 bytes or more) gets the aligned kind
    if v.as_ptr().align_offset(16) != 0 {
        return MutableBuffer::new(capacity);
    }
    MutableBuffer::from(v)
}

/// Copy `src` (elements of `dt` in file order) to the end of `dst`, in native order.
#[inline]
pub(crate) fn extend_native(dt: &NumpyDtype, src: &[u8], dst: &mut MutableBuffer) {
    match dt.swap_width() {
        0 => dst.extend_from_slice(src),
        w => {
            let start = dst.len();
            dst.extend_from_slice(src);
            swap_in_place(&mut dst.as_slice_mut()[start..], w);
        }
    }
}

/// Copy `n` elements of `row` (in file order) to the end of `dst` as elements of `col`, a wider
/// `U`/`S` dtype or a structured one [`NumpyDtype::widest_struct`] made from it: each field in
/// `col`'s byte order, each `U`/`S` value padded with NULs (which numpy strips) to `col`'s width.
/// (A structured column holds `col`'s elements, whose fields are swapped when the array is made.)
pub(crate) fn extend_as(
    row: &NumpyDtype,
    col: &NumpyDtype,
    src: &[u8],
    n: usize,
    dst: &mut MutableBuffer,
) {
    let item = row.itemsize();
    dst.reserve(n * col.itemsize());
    for k in 0..n {
        put_as(row, col, &src[k * item..(k + 1) * item], dst);
    }
}

fn put_as(row: &NumpyDtype, col: &NumpyDtype, src: &[u8], dst: &mut MutableBuffer) {
    match (row, col) {
        (NumpyDtype::Struct(rf), NumpyDtype::Struct(cf)) => {
            let mut off = 0;
            for (r, c) in rf.iter().zip(cf) {
                let w = r.dtype.itemsize();
                for _ in 0..r.shape.iter().product::<usize>() {
                    put_as(&r.dtype, &c.dtype, &src[off..off + w], dst);
                    off += w;
                }
            }
        }
        _ => {
            let start = dst.len();
            dst.extend_from_slice(src);
            let w = row.unit_width();
            if w > 0 && row.order() != col.order() {
                swap_in_place(&mut dst.as_slice_mut()[start..], w);
            }
            dst.extend_zeros(col.itemsize().saturating_sub(src.len()));
        }
    }
}

/// Reverse the bytes of each `w`-byte unit.
pub(crate) fn swap_in_place(b: &mut [u8], w: usize) {
    match w {
        2 => b.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
        4 => b.chunks_exact_mut(4).for_each(|c| {
            let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]).swap_bytes();
            c.copy_from_slice(&v.to_ne_bytes())
        }),
        8 => b.chunks_exact_mut(8).for_each(|c| {
            let v = u64::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
            c.copy_from_slice(&v.to_ne_bytes())
        }),
        _ => b.chunks_exact_mut(w.max(1)).for_each(|c| c.reverse()),
    }
}

/// The alignment an Arrow values buffer of `dt`'s (native) elements needs to be a view of the
/// input: that of the primitive each element is (or is made of); 1 for dtypes converted anyway.
pub(crate) fn elem_align(dt: &NumpyDtype) -> usize {
    match dt {
        NumpyDtype::Int { size, .. } | NumpyDtype::Float { size, .. } => *size as usize,
        NumpyDtype::Complex { size, .. } => *size as usize / 2,
        NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => 8,
        _ => 1,
    }
}

/// The dtype with its byte order made native: what `extend_native` leaves in a buffer.
pub(crate) fn native(dt: &NumpyDtype) -> NumpyDtype {
    let o = if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };
    match dt.clone() {
        NumpyDtype::Int {
            size,
            signed,
            order,
        } if order != ByteOrder::NotApplicable => NumpyDtype::Int {
            size,
            signed,
            order: o,
        },
        NumpyDtype::Float { size, .. } => NumpyDtype::Float { size, order: o },
        NumpyDtype::Complex { size, .. } => NumpyDtype::Complex { size, order: o },
        NumpyDtype::Unicode { chars, .. } => NumpyDtype::Unicode { chars, order: o },
        NumpyDtype::Datetime { unit, .. } => NumpyDtype::Datetime { unit, order: o },
        NumpyDtype::Timedelta { unit, .. } => NumpyDtype::Timedelta { unit, order: o },
        other => other,
    }
}

fn scalar_buffer<T: ArrowNativeType>(bytes: Buffer) -> ScalarBuffer<T> {
    let n = bytes.len() / std::mem::size_of::<T>();
    if bytes.as_ptr().align_offset(std::mem::align_of::<T>()) == 0 {
        ScalarBuffer::new(bytes, 0, n)
    } else {
        // msgpack payloads are usually misaligned; ScalarBuffer::new would panic on them.
        let mut m = output_buffer(bytes.len());
        advise_huge_pages(&mut m);
        m.extend_from_slice(&bytes);
        ScalarBuffer::new(m.into(), 0, n)
    }
}

fn prim<T: ArrowPrimitiveType>(bytes: Buffer, nulls: Option<NullBuffer>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(
        scalar_buffer::<T::Native>(bytes),
        nulls,
    ))
}

fn owned_swapped(bytes: &Buffer, w: usize) -> Buffer {
    let mut m = output_buffer(bytes.len());
    advise_huge_pages(&mut m);
    m.extend_from_slice(bytes);
    swap_in_place(m.as_slice_mut(), w);
    m.into()
}

/// numpy bools (one byte each, true where not 0) as an Arrow bitmap: eight bytes at a time, each
/// folded to its lowest bit and the eight gathered into one byte by a multiply (a third of a
/// read of bool arrays went to `BooleanBuffer::collect_bool`'s element-wise loop).
pub(crate) fn bool_bits(bytes: &[u8]) -> BooleanBuffer {
    const LOW: u64 = 0x0101_0101_0101_0101;
    // bit k of the top byte of (x * GATHER) is bit 8k of x, for x with only bits 8k set
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut out = MutableBuffer::new(bytes.len().div_ceil(8));
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        // any bit of a byte down to its bit 0 (shifts stay inside the byte for the bit kept)
        x |= x >> 4;
        x |= x >> 2;
        x |= x >> 1;
        out.push(((x & LOW).wrapping_mul(GATHER) >> 56) as u8);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        out.push(
            rest.iter()
                .enumerate()
                .fold(0u8, |acc, (k, &v)| acc | (((v != 0) as u8) << k)),
        );
    }
    BooleanBuffer::new(out.into(), 0, bytes.len())
}

/// Build the Arrow array of `n` elements of `dt` from their bytes. `native_order`: the bytes were
/// already swapped to native order (by [`extend_native`]). `nulls` (if any) has `n` entries.
pub(crate) fn to_arrow(
    dt: &NumpyDtype,
    bytes: Buffer,
    n: usize,
    native_order: bool,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let item = dt.itemsize();
    debug_assert_eq!(bytes.len(), n * item);
    let bytes = match dt.swap_width() {
        w if w > 0 && !native_order && !matches!(dt, NumpyDtype::Unicode { .. }) => {
            owned_swapped(&bytes, w)
        }
        _ => bytes,
    };
    Ok(match dt {
        NumpyDtype::Int { size, signed, .. } => match (size, signed) {
            (1, true) => prim::<Int8Type>(bytes, nulls),
            (2, true) => prim::<Int16Type>(bytes, nulls),
            (4, true) => prim::<Int32Type>(bytes, nulls),
            (8, true) => prim::<Int64Type>(bytes, nulls),
            (1, false) => prim::<UInt8Type>(bytes, nulls),
            (2, false) => prim::<UInt16Type>(bytes, nulls),
            (4, false) => prim::<UInt32Type>(bytes, nulls),
            _ => prim::<UInt64Type>(bytes, nulls),
        },
        NumpyDtype::Float { size: 2, .. } => prim::<Float16Type>(bytes, nulls),
        NumpyDtype::Float { size: 4, .. } => prim::<Float32Type>(bytes, nulls),
        NumpyDtype::Float { .. } => prim::<Float64Type>(bytes, nulls),
        NumpyDtype::Complex { size, .. } => {
            let (child, t) = if *size == 8 {
                (prim::<Float32Type>(bytes, None), DataType::Float32)
            } else {
                (prim::<Float64Type>(bytes, None), DataType::Float64)
            };
            Arc::new(FixedSizeListArray::new(
                Arc::new(Field::new("item", t, false)),
                2,
                child,
                nulls,
            ))
        }
        NumpyDtype::Bool => {
            let b = bool_bits(&bytes[..n]);
            Arc::new(BooleanArray::new(b, nulls))
        }
        NumpyDtype::Unicode { .. } | NumpyDtype::Bytes { .. } => {
            // (bytes already in native order are read as such)
            let row = if native_order { native(dt) } else { dt.clone() };
            let mut t = TextValues::for_dtype(dt).expect("a U/S dtype");
            t.push(&row, &bytes, n)?;
            t.finish(nulls)
        }
        NumpyDtype::Void { len } => {
            let size = i32::try_from(*len)
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| ErrorKind::UnsupportedDtype(dt.to_dtype_str()))?;
            Arc::new(FixedSizeBinaryArray::try_new(size, bytes, nulls)?)
        }
        NumpyDtype::Datetime { unit, .. } | NumpyDtype::Timedelta { unit, .. } => {
            let is_dt = matches!(dt, NumpyDtype::Datetime { .. });
            time_array(dt, *unit, is_dt, scalar_buffer::<i64>(bytes), nulls)?
        }
        NumpyDtype::Struct(fields) => {
            let mut arrays = Vec::new();
            let mut out_fields = Vec::new();
            let mut off = 0usize;
            for f in fields {
                let per: usize = f.shape.iter().product();
                let w = f.dtype.itemsize() * per;
                if !f.name.is_empty() {
                    let mut m = output_buffer(w * n);
                    for i in 0..n {
                        m.extend_from_slice(&bytes[i * item + off..i * item + off + w]);
                    }
                    let mut a = to_arrow(&f.dtype, m.into(), n * per, false, None)?;
                    // innermost axis first; each level's length from the axes outside it (not
                    // from its values: a zero-length axis has none)
                    for (k, &d) in f.shape.iter().enumerate().rev() {
                        let t = a.data_type().clone();
                        let len = n * f.shape[..k].iter().product::<usize>();
                        a = Arc::new(FixedSizeListArray::try_new_with_length(
                            Arc::new(Field::new("item", t, true)),
                            i32::try_from(d)
                                .map_err(|_| ErrorKind::UnsupportedDtype(dt.to_dtype_str()))?,
                            a,
                            None,
                            len,
                        )?);
                    }
                    out_fields.push(Field::new(&f.name, a.data_type().clone(), true));
                    arrays.push(a);
                }
                off += w;
            }
            if arrays.is_empty() {
                Arc::new(StructArray::new_empty_fields(n, nulls))
            } else {
                Arc::new(StructArray::try_new(
                    Fields::from(out_fields),
                    arrays,
                    nulls,
                )?)
            }
        }
        NumpyDtype::Object => {
            return Err(Error::new(ErrorKind::ObjectArray));
        }
    })
}

/// The first of the datetime64/timedelta64 elements `data` holds (in `dt`'s byte order) that
/// its Arrow unit cannot hold once converted (hours to seconds, weeks to days): what
/// [`time_array`] would refuse, found while the row's place is known. `None` for other dtypes
/// and units Arrow has (nothing to convert).
pub(crate) fn time_out_of_range(dt: &NumpyDtype, data: &[u8]) -> Option<usize> {
    let (unit, order, date) = match dt {
        NumpyDtype::Datetime { unit, order } => (*unit, *order, true),
        NumpyDtype::Timedelta { unit, order } => (*unit, *order, false),
        _ => return None,
    };
    let (k, date32) = tick_factor(unit, date).filter(|&(k, date32)| k != 1 || date32)?;
    data.chunks_exact(8).position(|b| {
        let b: [u8; 8] = b.try_into().expect("8 bytes");
        let v = if order.needs_swap() {
            i64::from_ne_bytes(b).swap_bytes()
        } else {
            i64::from_ne_bytes(b)
        };
        v != i64::MIN && converted_tick(v, k, date32).is_none()
    })
}

/// How ticks of `unit` become Arrow's: times `k`, into Date32 (`true`: days that fit an i32) for
/// datetime days and weeks; `None` for a unit Arrow lacks.
fn tick_factor(unit: NpTimeUnit, is_datetime: bool) -> Option<(i64, bool)> {
    match unit {
        NpTimeUnit::Day if is_datetime => Some((1, true)),
        NpTimeUnit::Week if is_datetime => Some((7, true)),
        u => u.to_arrow().map(|(_, k)| (k, false)),
    }
}

/// Tick `v` converted by [`tick_factor`]'s `k`; `None` when it does not fit.
fn converted_tick(v: i64, k: i64, date32: bool) -> Option<i64> {
    v.checked_mul(k)
        .filter(|&d| !date32 || i32::try_from(d).is_ok())
}

/// datetime64/timedelta64 ticks → Arrow, NaT → null, units Arrow lacks converted exactly.
fn time_array(
    dt: &NumpyDtype,
    unit: NpTimeUnit,
    is_datetime: bool,
    ticks: ScalarBuffer<i64>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let nat = ticks.contains(&i64::MIN);
    let nulls = if nat {
        let valid = BooleanBuffer::collect_bool(ticks.len(), |i| ticks[i] != i64::MIN);
        NullBuffer::union(nulls.as_ref(), Some(&NullBuffer::new(valid)))
    } else {
        nulls
    };
    let overflow = || {
        Error::new(ErrorKind::InvalidNdarray(format!(
            "{} value out of range after converting to an Arrow unit",
            dt.to_dtype_str()
        )))
    };
    let (k, date32) = tick_factor(unit, is_datetime)
        .ok_or_else(|| Error::new(ErrorKind::UnsupportedDtype(dt.to_dtype_str())))?;
    // a NaT keeps its marker (the type's minimum) under its null, as unconverted ticks do: the
    // writer tells a NaT numpy scalar from a nil by it
    let convert = |&v: &i64| match v {
        i64::MIN if date32 => Ok(i32::MIN as i64),
        i64::MIN => Ok(i64::MIN),
        v => converted_tick(v, k, date32).ok_or_else(overflow),
    };
    if date32 {
        let days = ticks
            .iter()
            .map(|v| convert(v).map(|d| d as i32))
            .collect::<Result<Vec<i32>>>()?;
        return Ok(Arc::new(Date32Array::new(days.into(), nulls)));
    }
    let (tu, _) = unit
        .to_arrow()
        .ok_or_else(|| Error::new(ErrorKind::UnsupportedDtype(dt.to_dtype_str())))?;
    let values: ScalarBuffer<i64> = if k == 1 {
        ticks
    } else {
        ticks
            .iter()
            .map(convert)
            .collect::<Result<Vec<i64>>>()?
            .into()
    };
    Ok(match (is_datetime, tu) {
        (true, TimeUnit::Second) => Arc::new(TimestampSecondArray::new(values, nulls)),
        (true, TimeUnit::Millisecond) => Arc::new(TimestampMillisecondArray::new(values, nulls)),
        (true, TimeUnit::Microsecond) => Arc::new(TimestampMicrosecondArray::new(values, nulls)),
        (true, TimeUnit::Nanosecond) => Arc::new(TimestampNanosecondArray::new(values, nulls)),
        (false, TimeUnit::Second) => Arc::new(DurationSecondArray::new(values, nulls)),
        (false, TimeUnit::Millisecond) => Arc::new(DurationMillisecondArray::new(values, nulls)),
        (false, TimeUnit::Microsecond) => Arc::new(DurationMicrosecondArray::new(values, nulls)),
        (false, TimeUnit::Nanosecond) => Arc::new(DurationNanosecondArray::new(values, nulls)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any bytes (mostly 0 and 1, as numpy writes bools, but any value is true where not 0),
        /// of any length: the bitmap arrow's own `collect_bool` makes.
        #[test]
        fn bool_bits_are_collect_bools(
            bytes in proptest::collection::vec(
                prop_oneof![4 => 0u8..2, 1 => any::<u8>()],
                0..300,
            ),
            from in 0usize..9,
        ) {
            let bytes = &bytes[from.min(bytes.len())..];
            let want = BooleanBuffer::collect_bool(bytes.len(), |i| bytes[i] != 0);
            prop_assert_eq!(bool_bits(bytes), want);
        }
    }
}
