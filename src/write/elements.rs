//! ndarray payload bytes from Arrow arrays: each element in the numpy dtype's width and byte order.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::error::Result;
use crate::types::{ByteOrder, NumpyDtype};
use crate::wire::write::Out;
use crate::write::access::{accepts, np_unit_ns, temporal_ns, Bins, Strs};
use crate::write::ndarray::{write_bytes, write_unicode};
use crate::write::unsupported;

// Element writers: ndarray payload bytes

pub(crate) enum TimeSrc {
    D32(ScalarBuffer<i32>),
    I64(ScalarBuffer<i64>),
}

/// Writes elements `a..b` of a flat Arrow array as numpy element bytes of one dtype.
pub(crate) enum Elems {
    /// Fixed-width values: element `i` is `buf[i*width..][..width]`; `swap` is the width of the
    /// units to byte-reverse (0: copy as is).
    Raw {
        buf: Buffer,
        width: usize,
        swap: usize,
    },
    Bool(BooleanArray),
    Unicode {
        strs: Strs,
        chars: usize,
        big: bool,
        ty: String,
    },
    Bytes {
        bins: Bins,
        len: usize,
        ty: String,
    },
    Time {
        src: TimeSrc,
        nulls: Option<NullBuffer>,
        mul: i64,
        div: i64,
        big: bool,
        ty: String,
    },
    /// Structured: per element, each field in descr order (`None` = padding, written as zeros).
    Struct(Vec<(Option<Elems>, usize, usize)>),
}

impl Elems {
    /// Whether element `i` of a datetime or timedelta column holds NaT's marker (the type's
    /// minimum), as a null read from a NaT does (`time_array`).
    pub(crate) fn nat_at(&self, i: usize) -> bool {
        match self {
            Elems::Time {
                src: TimeSrc::D32(s),
                ..
            } => s.get(i) == Some(&i32::MIN),
            Elems::Time {
                src: TimeSrc::I64(s),
                ..
            } => s.get(i) == Some(&i64::MIN),
            _ => false,
        }
    }

    pub(crate) fn new(arr: &ArrayRef, dt: &NumpyDtype) -> Result<Self> {
        if !accepts(dt, arr.data_type()) {
            return Err(unsupported(format!(
                "numpy dtype {} cannot hold Arrow {}",
                dt.to_dtype_str(),
                arr.data_type()
            )));
        }
        // the dtype's text, for the errors of the kinds that can fail per element (made only for
        // those: a wide table's 10,000 float columns made it for nothing)
        let ty = || dt.to_dtype_str();
        Ok(match dt {
            NumpyDtype::Bool => Elems::Bool(arr.as_boolean().clone()),
            NumpyDtype::Int { size, .. } | NumpyDtype::Float { size, .. } => {
                raw(arr.as_ref(), *size as usize, dt.swap_width())
            }
            NumpyDtype::Complex { size, .. } => raw(
                arr.as_fixed_size_list().values().as_ref(),
                *size as usize,
                dt.swap_width(),
            ),
            NumpyDtype::Unicode { chars, order } => Elems::Unicode {
                strs: Strs::new(arr.as_ref()).expect("checked by accepts"),
                chars: *chars,
                big: *order == ByteOrder::Big,
                ty: ty(),
            },
            NumpyDtype::Bytes { len } | NumpyDtype::Void { len } => Elems::Bytes {
                bins: Bins::new(arr.as_ref()).expect("checked by accepts"),
                len: *len,
                ty: ty(),
            },
            NumpyDtype::Datetime { unit, order } | NumpyDtype::Timedelta { unit, order } => {
                let src_ns = temporal_ns(arr.data_type()).expect("checked by accepts");
                let dst_ns = np_unit_ns(*unit).expect("checked by accepts");
                let (mul, div) = if src_ns >= dst_ns {
                    (src_ns / dst_ns, 1)
                } else {
                    (1, dst_ns / src_ns)
                };
                let d = arr.to_data();
                let src = match arr.data_type() {
                    DataType::Date32 => TimeSrc::D32(ScalarBuffer::new(
                        d.buffers()[0].clone(),
                        d.offset(),
                        d.len(),
                    )),
                    _ => TimeSrc::I64(ScalarBuffer::new(
                        d.buffers()[0].clone(),
                        d.offset(),
                        d.len(),
                    )),
                };
                Elems::Time {
                    src,
                    nulls: arr.logical_nulls(),
                    mul,
                    div,
                    big: *order == ByteOrder::Big,
                    ty: ty(),
                }
            }
            NumpyDtype::Struct(fields) => {
                let sa = arr.as_struct();
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    let count: usize = f.shape.iter().product();
                    let bytes = f.dtype.itemsize() * count;
                    if f.name.is_empty() {
                        out.push((None, bytes, count));
                        continue;
                    }
                    let mut child = sa
                        .column_by_name(&f.name)
                        .expect("checked by accepts")
                        .clone();
                    for _ in &f.shape {
                        child = child.as_fixed_size_list().values().clone();
                    }
                    let e = Elems::new(&child, &f.dtype).map_err(|e| e.prepend_path(&f.name))?;
                    out.push((Some(e), bytes, count));
                }
                Elems::Struct(out)
            }
            NumpyDtype::Object => unreachable!("rejected by accepts"),
        })
    }

    /// For `U`/`S` elements: the smallest width that holds elements `a..b`, at least 1 (the
    /// width `np.array(list_of_str)` picks); None for other dtypes.
    pub(crate) fn min_text_width(&self, a: usize, b: usize) -> Option<usize> {
        let w = match self {
            Elems::Unicode { strs, .. } => (a..b)
                .filter(|&i| !strs.is_null(i))
                .map(|i| strs.value(i).chars().count())
                .max(),
            Elems::Bytes { bins, .. } => (a..b)
                .filter(|&i| !bins.is_null(i))
                .map(|i| bins.value(i).len())
                .max(),
            _ => return None,
        };
        Some(w.unwrap_or(0).max(1))
    }

    /// How many `U`/`S` elements there are (0 for other dtypes).
    pub(crate) fn text_len(&self) -> usize {
        match self {
            Elems::Unicode { strs, .. } => strs.len(),
            Elems::Bytes { bins, .. } => bins.len(),
            _ => 0,
        }
    }

    /// [`Elems::write`] at another `U`/`S` width (other dtypes: as they are).
    pub(crate) fn write_width(
        &self,
        a: usize,
        b: usize,
        width: usize,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match self {
            Elems::Unicode { strs, big, ty, .. } => write_unicode(strs, a..b, width, *big, ty, out),
            Elems::Bytes { bins, ty, .. } => write_bytes(bins, a..b, width, ty, out),
            _ => self.write(a, b, out),
        }
    }

    /// [`Elems::write`] into `out`; when only the output's size is wanted (`out.count_only`),
    /// elements stored as they are written (the bulk of a tensor column) are counted, not copied.
    pub(crate) fn put(&self, a: usize, b: usize, out: &mut Out) -> Result<()> {
        if out.count_only {
            let n = match self {
                Elems::Raw { buf, width, .. } if b * width <= buf.len() => Some((b - a) * width),
                Elems::Bool(arr) if b <= arr.len() => Some(b - a),
                _ => None,
            };
            if let Some(n) = n {
                out.elided += n as u64;
                return Ok(());
            }
        }
        self.write(a, b, &mut out.buf)
    }

    /// Append elements `a..b` (exactly `(b - a) * itemsize` bytes, or an error).
    pub(crate) fn write(&self, a: usize, b: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Elems::Raw { buf, width, swap } => {
                let s = &buf.as_slice()[a * width..b * width];
                match swap {
                    0 => out.extend_from_slice(s),
                    2 => out.extend(s.chunks_exact(2).flat_map(|c| [c[1], c[0]])),
                    4 => {
                        out.reserve(s.len());
                        for c in s.chunks_exact(4) {
                            let v = u32::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                            out.extend_from_slice(&v.to_ne_bytes());
                        }
                    }
                    _ => {
                        out.reserve(s.len());
                        for c in s.chunks_exact(8) {
                            let v = u64::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                            out.extend_from_slice(&v.to_ne_bytes());
                        }
                    }
                }
            }
            Elems::Bool(arr) => out.extend((a..b).map(|i| arr.value(i) as u8)),
            Elems::Unicode {
                strs,
                chars,
                big,
                ty,
            } => write_unicode(strs, a..b, *chars, *big, ty, out)?,
            Elems::Bytes { bins, len, ty } => write_bytes(bins, a..b, *len, ty, out)?,
            Elems::Time {
                src,
                nulls,
                mul,
                div,
                big,
                ty,
            } => {
                for i in a..b {
                    let v = if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                        i64::MIN // NaT
                    } else {
                        let v = match src {
                            TimeSrc::D32(s) => s[i] as i64,
                            TimeSrc::I64(s) => s[i],
                        };
                        let r = if *div == 1 {
                            v.checked_mul(*mul)
                        } else if v % div == 0 {
                            Some(v / div)
                        } else {
                            None
                        };
                        r.ok_or_else(|| {
                            unsupported(format!(
                                "value {v} is not a whole number of numpy {ty} ticks"
                            ))
                        })?
                    };
                    out.extend_from_slice(&if *big {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    });
                }
            }
            Elems::Struct(fields) => {
                for j in a..b {
                    for (e, bytes, count) in fields {
                        match e {
                            None => out.resize(out.len() + bytes, 0),
                            Some(e) => e.write(j * count, (j + 1) * count, out)?,
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

pub(crate) fn raw(arr: &dyn Array, width: usize, swap: usize) -> Elems {
    let d = arr.to_data();
    let pw = d.data_type().primitive_width().expect("primitive array");
    let buf = d.buffers()[0].slice_with_length(d.offset() * pw, d.len() * pw);
    Elems::Raw { buf, width, swap }
}
