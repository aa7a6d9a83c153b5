//! `ndarray` views of tensor columns, without copying.

use arrow_array::{Array, ArrowPrimitiveType, FixedSizeListArray, PrimitiveArray};
use arrow_schema::Field;
use ndarray::{ArrayViewD, IxDyn};

use crate::error::{Error, ErrorKind, Result};
use crate::types::meta;

fn err(msg: String) -> Error {
    Error::new(ErrorKind::Unsupported(msg))
}

/// View a tensor column (nested `FixedSizeList` of primitive `T`) as an n-d array of shape
/// `(rows, *shape)`. Null rows read as whatever their slots hold (zeros from this crate's reader).
///
/// ```
/// # fn main() -> msgpack_arrow::Result<()> {
/// use std::sync::Arc;
/// use arrow_array::{types::Float32Type, FixedSizeListArray, Float32Array};
/// use arrow_schema::{DataType, Field};
/// let values = Float32Array::from(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// let col = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), 3, Arc::new(values), None);
/// let v = msgpack_arrow::tensor::view::<Float32Type>(&col)?;
/// assert_eq!(v.shape(), &[2, 3]);
/// assert_eq!(v[[1, 2]], 6.0);
/// # Ok(()) }
/// ```
pub fn view<T: ArrowPrimitiveType>(array: &dyn Array) -> Result<ArrayViewD<'_, T::Native>> {
    view_shaped::<T>(array, None)
}

/// Like [`view`], but honours an `arrow.fixed_shape_tensor` field (flat storage + shape metadata).
pub fn view_field<'a, T: ArrowPrimitiveType>(
    field: &Field,
    array: &'a dyn Array,
) -> Result<ArrayViewD<'a, T::Native>> {
    let md = field.metadata();
    let shape = match md.get(meta::EXTENSION_NAME).map(String::as_str) {
        Some("arrow.fixed_shape_tensor") => {
            let v: serde_json::Value = md
                .get(meta::EXTENSION_METADATA)
                .and_then(|m| serde_json::from_str(m).ok())
                .ok_or_else(|| err("fixed_shape_tensor without shape metadata".into()))?;
            let dims = v["shape"]
                .as_array()
                .ok_or_else(|| err("fixed_shape_tensor metadata has no shape".into()))?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| err("bad fixed_shape_tensor shape".into()))?;
            Some(dims)
        }
        _ => None,
    };
    view_shaped::<T>(array, shape)
}

fn view_shaped<T: ArrowPrimitiveType>(
    array: &dyn Array,
    inner: Option<Vec<usize>>,
) -> Result<ArrayViewD<'_, T::Native>> {
    let rows = array.len();
    let mut shape = vec![rows];
    let mut cur: &dyn Array = array;
    // arrow-rs slices a FixedSizeList's values with it (offset() is always 0), and
    // PrimitiveArray::values() is already sliced: the rows start at element 0.
    let mut scale = 1usize;
    while let Some(fsl) = cur.as_any().downcast_ref::<FixedSizeListArray>() {
        let n = fsl.value_length() as usize;
        scale *= n;
        shape.push(n);
        cur = fsl.values().as_ref();
    }
    let prim = cur
        .as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .ok_or_else(|| {
            err(format!(
                "not a tensor of {}: innermost type is {}",
                T::DATA_TYPE,
                cur.data_type()
            ))
        })?;
    if let Some(dims) = inner {
        if dims.iter().product::<usize>() != scale {
            return Err(err(format!(
                "tensor shape {dims:?} does not match {scale} values per row"
            )));
        }
        shape.truncate(1);
        shape.extend(dims);
    }
    let total = rows * scale;
    let values = prim
        .values()
        .get(..total)
        .ok_or_else(|| err("tensor values shorter than rows × shape".into()))?;
    ArrayViewD::from_shape(IxDyn(&shape), values).map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Float64Type;
    use arrow_array::Float64Array;
    use arrow_schema::DataType;
    use std::sync::Arc;

    #[test]
    fn nested_and_sliced() {
        let vals = Float64Array::from((0..24).map(|v| v as f64).collect::<Vec<_>>());
        let inner = FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float64, true)),
            3,
            Arc::new(vals),
            None,
        );
        let outer = FixedSizeListArray::new(
            Arc::new(Field::new("item", inner.data_type().clone(), true)),
            2,
            Arc::new(inner),
            None,
        );
        let v = view::<Float64Type>(&outer).unwrap();
        assert_eq!(v.shape(), &[4, 2, 3]);
        assert_eq!(v[[3, 1, 2]], 23.0);
        let s = outer.slice(1, 2);
        let v = view::<Float64Type>(&s).unwrap();
        assert_eq!(v.shape(), &[2, 2, 3]);
        assert_eq!(v[[0, 0, 0]], 6.0);
        assert!(view::<arrow_array::types::Float32Type>(&outer).is_err());
    }
}
