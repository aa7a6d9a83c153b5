//! A flat array of tensor elements nested into one list level per axis: FixedSizeLists for a
//! shape every row has, Lists built from each row's shape for ragged ones. The reader builds its
//! tensor columns this way; the writer turns Arrow's canonical tensor extensions into the same.

use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef, FixedSizeListArray, ListArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::DataType;

use crate::error::{Error, ErrorKind, Result};

/// Type equality that ignores field names, nullability and metadata.
pub(crate) fn same_structure(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::FixedSizeList(x, n), DataType::FixedSizeList(y, m)) => {
            n == m && same_structure(x.data_type(), y.data_type())
        }
        (DataType::List(x), DataType::List(y)) => same_structure(x.data_type(), y.data_type()),
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter().zip(y.iter()).all(|(p, q)| {
                    p.name() == q.name() && same_structure(p.data_type(), q.data_type())
                })
        }
        _ => a == b,
    }
}

/// Wrap flat values in the nested FixedSizeLists of type `t`; row nulls go on the outermost.
/// `rows` is needed because a FixedSizeList of size 0 cannot count its rows from its values.
pub(crate) fn nest_fixed(
    t: &DataType,
    values: ArrayRef,
    nulls: Option<NullBuffer>,
    rows: usize,
) -> Result<ArrayRef> {
    match t {
        DataType::FixedSizeList(f, n) => {
            let inner = if same_structure(f.data_type(), values.data_type()) {
                values
            } else {
                nest_fixed(f.data_type(), values, None, rows * (*n as usize))?
            };
            if *n == 0 {
                let d = arrow_data::ArrayDataBuilder::new(t.clone())
                    .len(rows)
                    .nulls(nulls)
                    .add_child_data(inner.to_data())
                    .build()?;
                return Ok(make_array(d));
            }
            Ok(Arc::new(FixedSizeListArray::try_new(
                f.clone(),
                *n,
                inner,
                nulls,
            )?))
        }
        _ => Ok(values),
    }
}

/// Offsets of every List level of ragged tensors (outermost first), from each row's shape.
pub(crate) fn ragged_offsets(dims: &[usize], ndim: usize, rows: usize) -> Result<Vec<Vec<i32>>> {
    let too_many = || {
        Error::new(ErrorKind::Layout(
            "more than 2^31 list entries in one batch; use a smaller batch size".into(),
        ))
    };
    let mut levels = vec![vec![0i32]; ndim];
    for r in 0..rows {
        let s = &dims[r * ndim..(r + 1) * ndim];
        // entries at level k for this row: prod(s[..k]); each of length s[k]
        let mut count = 1usize;
        for k in 0..ndim {
            let lvl = &mut levels[k];
            for _ in 0..count {
                let last = *lvl.last().unwrap_or(&0);
                lvl.push(
                    i32::try_from(s[k])
                        .ok()
                        .and_then(|d| last.checked_add(d))
                        .ok_or_else(too_many)?,
                );
            }
            count = count.checked_mul(s[k]).ok_or_else(too_many)?;
        }
    }
    Ok(levels)
}

pub(crate) fn nest_ragged(
    t: &DataType,
    values: ArrayRef,
    mut offsets: Vec<Vec<i32>>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let DataType::List(f) = t else {
        return Ok(values);
    };
    let mine = offsets.remove(0);
    let inner = if offsets.is_empty() {
        values
    } else {
        nest_ragged(f.data_type(), values, offsets, None)?
    };
    Ok(Arc::new(ListArray::try_new(
        f.clone(),
        OffsetBuffer::new(mine.into()),
        inner,
        nulls,
    )?))
}
