//! Arrow's canonical tensor extensions (`arrow.fixed_shape_tensor`, `arrow.variable_shape_tensor`:
//! what the reader makes with `TensorMode::Extension`, and what pyarrow, Ray and others write) as
//! the nested lists the writer takes for ndarrays: one FixedSizeList per axis, or one List per
//! axis (`types::nest`, as the reader builds them). The element buffers are shared, not copied;
//! only offsets are built for ragged rows.
//!
//! Without this a fixed-shape tensor of shape (2, 3) was written as a 1-d array of 6, and a
//! variable-shape one as a map of its `data` and `shape` fields.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use crate::error::Result;
use crate::types::arrow::record_batch;
use crate::types::meta;
use crate::types::nest::{nest_fixed, nest_ragged, ragged_offsets};
use crate::write::unsupported;

const FIXED: &str = "arrow.fixed_shape_tensor";
const VARIABLE: &str = "arrow.variable_shape_tensor";

/// How a top-level column is converted.
#[derive(Debug, Clone)]
pub(crate) enum Canon {
    /// FixedSizeList(T, n) of the shape in its metadata: one FixedSizeList per axis.
    Fixed,
    /// Struct{data: List(T), shape: FixedSizeList(Int32, ndim)}: `ndim` nested Lists.
    Variable(usize),
}

/// The extension's metadata, as JSON (absent or unparsable: an empty object).
fn ext_meta(f: &Field) -> serde_json::Value {
    f.metadata()
        .get(meta::EXTENSION_METADATA)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// An identity permutation, or none: a permuted tensor's bytes are not in C order, and writing
/// them as they are would transpose the data.
fn check_permutation(f: &Field, m: &serde_json::Value, ndim: usize) -> Result<()> {
    let Some(p) = m.get("permutation").filter(|p| !p.is_null()) else {
        return Ok(());
    };
    let identity: Vec<serde_json::Value> = (0..ndim).map(|i| i.into()).collect();
    if p.as_array() == Some(&identity) {
        return Ok(());
    }
    Err(unsupported(format!(
        "column {:?}: a {} with permutation {p} is not in C order; make it contiguous first \
         (e.g. numpy.ascontiguousarray)",
        f.name(),
        f.metadata()[meta::EXTENSION_NAME]
    )))
}

/// The field a canonical tensor column is written as, and how to convert its arrays; `None` for
/// any other column.
pub(crate) fn field(f: &Field) -> Result<Option<(Field, Canon)>> {
    let name = f.metadata().get(meta::EXTENSION_NAME).map(String::as_str);
    let m = ext_meta(f);
    let (t, canon, dims) = match (name, f.data_type()) {
        (Some(FIXED), DataType::FixedSizeList(item, n)) => {
            let shape: Vec<usize> = m
                .get("shape")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .ok_or_else(|| {
                    unsupported(format!(
                        "column {:?}: {FIXED} metadata without a shape: {m}",
                        f.name()
                    ))
                })?;
            if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(*n as usize) {
                return Err(unsupported(format!(
                    "column {:?}: {FIXED} shape {shape:?} does not hold {n} values",
                    f.name()
                )));
            }
            check_permutation(f, &m, shape.len())?;
            let t = fixed_type(item.clone(), &shape)?;
            (t, Canon::Fixed, None)
        }
        (Some(VARIABLE), DataType::Struct(fs)) => {
            let (data, shape) = (fs.find("data"), fs.find("shape"));
            let (item, ndim) = match (
                data.map(|d| d.1.data_type()),
                shape.map(|s| s.1.data_type()),
            ) {
                (Some(DataType::List(item)), Some(DataType::FixedSizeList(i, n)))
                    if i.data_type() == &DataType::Int32 && fs.len() == 2 && *n > 0 =>
                {
                    (item.clone(), *n as usize)
                }
                _ => {
                    return Err(unsupported(format!(
                        "column {:?}: {VARIABLE} storage must be Struct{{data: List, shape: \
                         FixedSizeList(Int32, ndim)}}, not {}",
                        f.name(),
                        f.data_type()
                    )))
                }
            };
            check_permutation(f, &m, ndim)?;
            let mut t = DataType::List(item);
            for _ in 1..ndim {
                t = DataType::List(Arc::new(Field::new("item", t, true)));
            }
            // axes every row shares: the length an empty row cannot show
            let dims: Option<Vec<Option<usize>>> = m
                .get("uniform_shape")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .filter(|d: &Vec<Option<usize>>| d.len() == ndim);
            (t, Canon::Variable(ndim), dims)
        }
        _ => return Ok(None),
    };
    let mut md = f.metadata().clone();
    md.remove(meta::EXTENSION_NAME);
    md.remove(meta::EXTENSION_METADATA);
    if !md.contains_key(meta::KIND) {
        md.insert(meta::KIND, "ndarray");
    }
    if let (Some(d), false) = (dims, md.contains_key(meta::SHAPE)) {
        md.insert(meta::SHAPE, serde_json::to_string(&d).unwrap_or_default());
    }
    let out = Field::new(f.name(), t, f.is_nullable()).with_metadata(md);
    Ok(Some((out, canon)))
}

/// FixedSizeList(item, product) as one FixedSizeList per axis.
fn fixed_type(item: FieldRef, shape: &[usize]) -> Result<DataType> {
    let mut t = item.data_type().clone();
    let mut f = item;
    for (k, &d) in shape.iter().enumerate().rev() {
        let n = i32::try_from(d).map_err(|_| unsupported(format!("axis of {d}")))?;
        t = DataType::FixedSizeList(f.clone(), n);
        if k > 0 {
            f = Arc::new(Field::new("item", t.clone(), true));
        }
    }
    Ok(t)
}

/// A column's array in the converted form; `empties` gets the rows holding no element with
/// their shapes (the nested lists cannot show an axis after an empty one).
pub(crate) fn array(
    a: &ArrayRef,
    canon: &Canon,
    target: &DataType,
    empties: &mut Vec<(usize, Vec<usize>)>,
) -> Result<ArrayRef> {
    match canon {
        Canon::Fixed => {
            let l = a.as_fixed_size_list();
            nest_fixed(target, l.values().clone(), l.nulls().cloned(), l.len())
        }
        Canon::Variable(ndim) => variable(a, *ndim, target, empties),
    }
}

fn variable(
    a: &ArrayRef,
    ndim: usize,
    target: &DataType,
    empties: &mut Vec<(usize, Vec<usize>)>,
) -> Result<ArrayRef> {
    let s = a.as_struct();
    let data = s
        .column_by_name("data")
        .expect("checked in field()")
        .as_list::<i32>();
    let shape = s
        .column_by_name("shape")
        .expect("checked in field()")
        .as_fixed_size_list();
    let dims = shape.values().as_primitive::<Int32Type>();
    let offs = data.value_offsets();
    let nulls: Option<NullBuffer> = s.logical_nulls();
    // each row's shape, for the offsets of every axis
    let mut all = Vec::with_capacity(s.len() * ndim);
    for row in 0..s.len() {
        let len = (offs[row + 1] - offs[row]) as usize;
        if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            // never written: a shape spanning whatever its data holds keeps the rows after it
            // on their values
            all.push(len);
            all.extend(std::iter::repeat_n(1, ndim - 1));
            continue;
        }
        let d: Vec<usize> = (0..ndim)
            .map(|k| dims.value(row * ndim + k).max(0) as usize)
            .collect();
        let total = d.iter().try_fold(1usize, |x, &y| x.checked_mul(y));
        if total != Some(len) {
            return Err(unsupported(format!(
                "{VARIABLE} row {row}: shape {d:?} does not match its {len} values"
            )));
        }
        if len == 0 {
            empties.push((row, d.clone()));
        }
        all.extend(d);
    }
    let (start, end) = (offs[0] as usize, offs[s.len()] as usize);
    let values = data.values().slice(start, end - start);
    nest_ragged(target, values, ragged_offsets(&all, ndim, s.len())?, nulls)
}

/// The schema with its canonical tensor columns as nested lists, and how to convert each
/// column's arrays (empty: there is none).
pub(crate) fn schema(schema: SchemaRef) -> Result<(SchemaRef, Vec<Option<Canon>>)> {
    let mut canon = Vec::with_capacity(schema.fields().len());
    let mut fields = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        match field(f)? {
            Some((g, c)) => {
                fields.push(Arc::new(g));
                canon.push(Some(c));
            }
            None => {
                fields.push(f.clone());
                canon.push(None);
            }
        }
    }
    if canon.iter().all(Option::is_none) {
        return Ok((schema, Vec::new()));
    }
    let out = Schema::new_with_metadata(fields, schema.metadata().clone());
    Ok((Arc::new(out), canon))
}

/// A batch with its canonical tensor columns as nested lists (`schema` and `canon` from
/// [`schema`]); a column holding rows without elements gets their shapes in its field's
/// `msgpack_numpy.empty_shapes`, keyed by file row (the batch starts at row `row0`), in the
/// batch's own schema.
pub(crate) fn batch(
    schema: &SchemaRef,
    canon: &[Option<Canon>],
    batch: &RecordBatch,
    row0: u64,
) -> Result<RecordBatch> {
    if batch.num_columns() != canon.len() {
        return Ok(batch.clone()); // the writer's check names the difference
    }
    let mut fields = Vec::with_capacity(canon.len());
    let mut cols = Vec::with_capacity(canon.len());
    for (i, (c, col)) in canon.iter().zip(batch.columns()).enumerate() {
        let f = schema.field(i);
        match c {
            Some(c) if col.data_type() != f.data_type() => {
                let mut empties = Vec::new();
                let a = array(col, c, f.data_type(), &mut empties)
                    .map_err(|e| e.prepend_path(f.name()))?;
                fields.push(Arc::new(if empties.is_empty() {
                    f.clone()
                } else {
                    with_empty_shapes(f, row0, &empties)
                }));
                cols.push(a);
            }
            _ => {
                fields.push(Arc::new(f.clone()));
                cols.push(col.clone());
            }
        }
    }
    let out = Schema::new_with_metadata(fields, schema.metadata().clone());
    record_batch(&Arc::new(out), cols, batch.num_rows())
}

/// `msgpack_numpy.empty_shapes` of `f` with `rows` (batch rows from file row `row0`) added.
fn with_empty_shapes(f: &Field, row0: u64, rows: &[(usize, Vec<usize>)]) -> Field {
    let mut map: BTreeMap<String, Vec<usize>> = f
        .metadata()
        .get(meta::EMPTY_SHAPES)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    for (r, d) in rows {
        map.insert((row0 + *r as u64).to_string(), d.clone());
    }
    let mut md = f.metadata().clone();
    md.insert(
        meta::EMPTY_SHAPES,
        serde_json::to_string(&map).unwrap_or_default(),
    );
    f.clone().with_metadata(md)
}
