//! Tensor columns: the list levels (fixed or ragged) over a flat element array, and the numpy
//! dtype and shape each row is written with.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::DataType;

use crate::error::Result;
use crate::types::{ByteOrder, NpTimeUnit, NumpyDtype, StructField};
use crate::write::access::{accepts, is_binary, is_string, np_unit, Bins, Strs};
use crate::write::elements::Elems;
use crate::write::ndarray::{kind_of, TypeEnc};
use crate::write::unsupported;

// Tensors: list levels over a flat element array

pub(crate) enum Level {
    Fixed(usize),
    O32(OffsetBuffer<i32>),
    O64(OffsetBuffer<i64>),
}

/// Peel list levels off `arr`: until `dt` accepts the type (metadata dtype), or (native) until the
/// type is no list. `lists`: whether variable-size List levels are axes too (ragged tensors).
pub(crate) fn peel(
    arr: &ArrayRef,
    dt: Option<&NumpyDtype>,
    lists: bool,
) -> Option<(Vec<Level>, ArrayRef)> {
    let mut levels = Vec::new();
    let mut cur = arr.clone();
    loop {
        if let Some(dt) = dt {
            if accepts(dt, cur.data_type()) {
                return Some((levels, cur));
            }
        }
        let next = match cur.data_type() {
            DataType::FixedSizeList(_, n) => {
                levels.push(Level::Fixed(*n as usize));
                cur.as_fixed_size_list().values().clone()
            }
            DataType::List(_) if lists => {
                let l = cur.as_list::<i32>();
                levels.push(Level::O32(l.offsets().clone()));
                l.values().clone()
            }
            DataType::LargeList(_) if lists => {
                let l = cur.as_list::<i64>();
                levels.push(Level::O64(l.offsets().clone()));
                l.values().clone()
            }
            _ => {
                return if dt.is_none() {
                    Some((levels, cur))
                } else {
                    None
                }
            }
        };
        cur = next;
    }
}

/// The numpy dtype a leaf Arrow array is written as when no metadata says otherwise, over one or
/// more chunks (string widths are the maximum over all of them). `structs`: allow a structured
/// dtype for Struct leaves.
pub(crate) fn native_dtype(leaves: &[ArrayRef], structs: bool) -> Option<NumpyDtype> {
    use DataType as T;
    let first = leaves.first()?;
    let int = |size: u8, signed: bool| NumpyDtype::Int {
        size,
        signed,
        order: if size == 1 {
            ByteOrder::NotApplicable
        } else {
            ByteOrder::Little
        },
    };
    let float = |size: u8| NumpyDtype::Float {
        size,
        order: ByteOrder::Little,
    };
    Some(match first.data_type() {
        T::Boolean => NumpyDtype::Bool,
        T::Int8 => int(1, true),
        T::Int16 => int(2, true),
        T::Int32 => int(4, true),
        T::Int64 => int(8, true),
        T::UInt8 => int(1, false),
        T::UInt16 => int(2, false),
        T::UInt32 => int(4, false),
        T::UInt64 => int(8, false),
        T::Float16 => float(2),
        T::Float32 => float(4),
        T::Float64 => float(8),
        T::Timestamp(u, _) => NumpyDtype::Datetime {
            unit: np_unit(u),
            order: ByteOrder::Little,
        },
        T::Date32 => NumpyDtype::Datetime {
            unit: NpTimeUnit::Day,
            order: ByteOrder::Little,
        },
        T::Date64 => NumpyDtype::Datetime {
            unit: NpTimeUnit::Milli,
            order: ByteOrder::Little,
        },
        T::Duration(u) => NumpyDtype::Timedelta {
            unit: np_unit(u),
            order: ByteOrder::Little,
        },
        t if is_string(t) => {
            let mut chars = 1;
            for l in leaves {
                let s = Strs::new(l.as_ref())?;
                for i in 0..s.len() {
                    if !s.is_null(i) {
                        // numpy drops trailing NULs: such strings have no U form
                        if s.value(i).ends_with('\0') {
                            return None;
                        }
                        chars = chars.max(s.value(i).chars().count());
                    }
                }
            }
            NumpyDtype::Unicode {
                chars,
                order: ByteOrder::Little,
            }
        }
        t if is_binary(t) => {
            let mut len = 1;
            for l in leaves {
                let s = Bins::new(l.as_ref())?;
                for i in 0..s.len() {
                    if !s.is_null(i) {
                        if s.value(i).last() == Some(&0) {
                            return None;
                        }
                        len = len.max(s.value(i).len());
                    }
                }
            }
            NumpyDtype::Bytes { len }
        }
        T::Struct(children) if structs => {
            let mut fields = Vec::with_capacity(children.len());
            for (k, c) in children.iter().enumerate() {
                let mut shape = Vec::new();
                let mut cl: Vec<ArrayRef> = leaves
                    .iter()
                    .map(|l| l.as_struct().column(k).clone())
                    .collect();
                let mut t = c.data_type().clone();
                while let T::FixedSizeList(f, n) = t {
                    shape.push(n as usize);
                    cl = cl
                        .iter()
                        .map(|a| a.as_fixed_size_list().values().clone())
                        .collect();
                    t = f.data_type().clone();
                }
                let dtype = native_dtype(&cl, true)?;
                fields.push(StructField {
                    name: c.name().clone(),
                    dtype,
                    shape,
                });
            }
            NumpyDtype::Struct(fields)
        }
        _ => return None,
    })
}

/// A tensor column of one batch: how its rows map onto a flat element array.
pub(crate) struct Tensor {
    pub(crate) levels: Vec<Level>,
    pub(crate) elems: Elems,
    pub(crate) nulls: Option<NullBuffer>,
    /// nulls among the elements: an ndarray cannot hold them (datetimes write them as NaT)
    pub(crate) elem_nulls: Option<NullBuffer>,
    /// per list level below the rows, the nulls among its lists (`None` at level 0 and where
    /// there are none): a null list inside a row is no ndarray (written as one, it would be lost)
    pub(crate) level_nulls: Vec<Option<NullBuffer>>,
    pub(crate) len: usize,
    /// Per axis, the length every row has (`msgpack_numpy.shape` metadata of ragged columns): the
    /// length of an axis that an empty row cannot show, e.g. the 3 of shape `(0, 3)`.
    pub(crate) dims: Vec<Option<usize>>,
}

impl Tensor {
    pub(crate) fn new(arr: &ArrayRef, dt: &NumpyDtype, lists: bool) -> Result<Self> {
        let (levels, leaf) = peel(arr, Some(dt), lists).ok_or_else(|| {
            unsupported(format!(
                "Arrow {} is not a tensor of numpy dtype {}",
                arr.data_type(),
                dt.to_dtype_str()
            ))
        })?;
        let elem_nulls = match dt {
            NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => None,
            _ => leaf.logical_nulls().filter(|n| n.null_count() > 0),
        };
        Ok(Tensor {
            level_nulls: inner_level_nulls(arr, levels.len()),
            levels,
            elems: Elems::new(&leaf, dt)?,
            nulls: arr.logical_nulls(),
            elem_nulls,
            len: arr.len(),
            dims: Vec::new(),
        })
    }
    pub(crate) fn with_dims(mut self, dims: &[Option<usize>]) -> Self {
        if dims.len() == self.levels.len() {
            self.dims = dims.to_vec();
        }
        self
    }
    /// The length of axis `k` when no row shows it.
    pub(crate) fn dim_or_zero(&self, k: usize) -> usize {
        match self.levels.get(k) {
            Some(Level::Fixed(n)) => *n,
            _ => self.dims.get(k).copied().flatten().unwrap_or(0),
        }
    }
    #[inline]
    pub(crate) fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }
    /// Refuse a null among the elements `[a, b)` of a row: writing it as 0 would change the data.
    #[inline]
    pub(crate) fn check_elems(&self, a: usize, b: usize) -> Result<()> {
        match &self.elem_nulls {
            Some(n) if (a..b).any(|i| n.is_null(i)) => Err(unsupported(
                "a null inside an array value: ndarrays cannot hold nulls (fill them, or use a List column)".to_string(),
            )),
            _ => Ok(()),
        }
    }
    /// Whether every non-null row is an ndarray: its nested lists rectangular, no null elements.
    pub(crate) fn rows_are_ndarrays(&self) -> bool {
        let mut shape = Vec::new();
        (0..self.len).filter(|&r| !self.is_null(r)).all(|r| {
            shape.clear();
            matches!(self.range(r, r + 1, &mut shape), Ok((a, b)) if self.check_elems(a, b).is_ok())
        })
    }
    /// Whether a non-null row's shape differs from `first` (the first shape seen, set here when
    /// `None`); a row that is no ndarray counts as no shape.
    pub(crate) fn shapes_vary(&self, first: &mut Option<Vec<usize>>) -> bool {
        let mut shape = Vec::new();
        (0..self.len).filter(|&r| !self.is_null(r)).any(|r| {
            shape.clear();
            if self.range(r, r + 1, &mut shape).is_err() {
                return false;
            }
            match first {
                Some(f) => *f != shape,
                None => {
                    *first = Some(shape.clone());
                    false
                }
            }
        })
    }
    pub(crate) fn fixed_shape(&self) -> Option<Vec<usize>> {
        self.levels
            .iter()
            .map(|l| match l {
                Level::Fixed(n) => Some(*n),
                _ => None,
            })
            .collect()
    }
    /// The shape of rows `a..b` taken together (each must have the same shape), pushed onto `shape`,
    /// and their flat element range.
    pub(crate) fn range(
        &self,
        mut a: usize,
        mut b: usize,
        shape: &mut Vec<usize>,
    ) -> Result<(usize, usize)> {
        for (k, l) in self.levels.iter().enumerate() {
            if let Some(Some(n)) = self.level_nulls.get(k) {
                if (a..b).any(|i| n.is_null(i)) {
                    return Err(unsupported(
                        "a null list inside an array value: ndarrays cannot hold nulls (use a List column)"
                            .to_string(),
                    ));
                }
            }
            let (len, na, nb) = match l {
                Level::Fixed(n) => (*n, a * n, b * n),
                Level::O32(o) => uniform(o.as_ref(), a, b)?,
                Level::O64(o) => uniform(o.as_ref(), a, b)?,
            };
            // No list at this level (an empty axis above): the metadata knows the length.
            let len = if a == b { self.dim_or_zero(k) } else { len };
            shape.push(len);
            a = na;
            b = nb;
        }
        Ok((a, b))
    }
}

/// The nulls of the list arrays at levels 1.. of a tensor of `levels` list levels over `arr` (level
/// 0, the rows, is `arr` itself: `None` there).
fn inner_level_nulls(arr: &ArrayRef, levels: usize) -> Vec<Option<NullBuffer>> {
    let mut out = vec![None];
    let mut cur = arr.clone();
    while out.len() < levels {
        cur = match cur.data_type() {
            DataType::FixedSizeList(..) => cur.as_fixed_size_list().values().clone(),
            DataType::List(_) => cur.as_list::<i32>().values().clone(),
            DataType::LargeList(_) => cur.as_list::<i64>().values().clone(),
            _ => break,
        };
        out.push(cur.logical_nulls().filter(|n| n.null_count() > 0));
    }
    out
}

pub(crate) fn uniform<O: Copy + TryInto<usize>>(
    o: &[O],
    a: usize,
    b: usize,
) -> Result<(usize, usize, usize)> {
    let at = |i: usize| -> usize { o[i].try_into().unwrap_or(0) };
    let len = if a < b { at(a + 1) - at(a) } else { 0 };
    for j in a + 1..b {
        if at(j + 1) - at(j) != len {
            return Err(unsupported(
                "ragged tensor: lists nested inside one ndarray have different lengths".to_string(),
            ));
        }
    }
    Ok((len, at(a), at(b)))
}

/// dtype-level facts shared by every row of a tensor column.
pub(crate) struct NdType {
    pub(crate) ty: TypeEnc,
    pub(crate) kind: &'static [u8],
    pub(crate) itemsize: usize,
}

impl NdType {
    pub(crate) fn of(dt: &NumpyDtype) -> Self {
        NdType {
            ty: TypeEnc::of(dt),
            kind: kind_of(dt),
            itemsize: dt.itemsize(),
        }
    }
}

/// Resolve the dtype of a tensor column over its chunks: the metadata dtype when every chunk fits
/// it, else the native dtype of the leaf type.
pub(crate) fn resolve_tensor(
    arrays: &[ArrayRef],
    dtype: Option<&NumpyDtype>,
    lists: bool,
    structs: bool,
) -> Result<(NumpyDtype, Vec<Tensor>)> {
    if let Some(dt) = dtype {
        if let Ok(ts) = arrays
            .iter()
            .map(|a| Tensor::new(a, dt, lists))
            .collect::<Result<Vec<_>>>()
        {
            return Ok((dt.clone(), ts));
        }
    }
    let mut leaves = Vec::with_capacity(arrays.len());
    for a in arrays {
        match peel(a, None, lists) {
            Some((_, leaf)) => leaves.push(leaf),
            None => {
                return Err(unsupported(format!(
                    "Arrow {} is not a tensor",
                    a.data_type()
                )))
            }
        }
    }
    let dt = native_dtype(&leaves, structs).ok_or_else(|| {
        let t = arrays.first().map(|a| a.data_type().to_string());
        unsupported(format!(
            "Arrow {} has no numpy dtype",
            t.unwrap_or_default()
        ))
    })?;
    let ts = arrays
        .iter()
        .map(|a| Tensor::new(a, &dt, lists))
        .collect::<Result<Vec<_>>>()?;
    Ok((dt, ts))
}
