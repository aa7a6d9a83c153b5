//! Telling List columns that held ndarrays in a table msgpack-arrow did not read (a Polars
//! DataFrame, a pyarrow table), whose schema says nothing of ndarrays: which ones to write as
//! ndarrays again.

use arrow_array::RecordBatch;
use arrow_schema::{Field, SchemaRef};

use super::columns::rows_are_ndarrays;
use crate::types::meta;

/// `schema` with the List columns of `batches` that held ndarrays marked so (`msgpack_numpy.kind`
/// = `ndarray`), for a table msgpack-arrow did not read (from Polars, pyarrow, ...), which says
/// nothing of ndarrays: a List of numbers narrower than msgpack's int64/float64 (int8..uint32,
/// float16/32) can only have been ndarrays (ragged ones: the rows' shapes differ), when every row
/// can be one (nested lists rectangular, no null elements). A table with reader metadata, or a
/// column that has some, is left as it is. The whole table is looked at, so a column is written
/// one way throughout.
pub fn mark_ragged_ndarrays(schema: &SchemaRef, batches: &[RecordBatch]) -> SchemaRef {
    use arrow_schema::DataType as T;
    // (a List of Arrays is a list of ndarrays of one shape, which reads back so: one ragged
    // ndarray per row would read back as List on every axis)
    fn narrow_leaf(t: &T) -> bool {
        match t {
            T::List(f) | T::LargeList(f) => narrow_leaf(f.data_type()),
            T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 | T::UInt32 => true,
            T::Float16 | T::Float32 => true,
            _ => false,
        }
    }
    // any number or bool, under Lists or Arrays: a column of empty rows only says its dtype as
    // ndarrays of it (written as lists, `[]` reads back as a list of nothing, List(Null))
    fn number_leaf(t: &T) -> bool {
        match t {
            T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => number_leaf(f.data_type()),
            t => t.is_numeric() || *t == T::Boolean,
        }
    }
    fn has_list(t: &T) -> bool {
        match t {
            T::List(_) | T::LargeList(_) => true,
            T::FixedSizeList(f, _) => has_list(f.data_type()),
            _ => false,
        }
    }
    if schema.metadata().contains_key(meta::LAYOUT) {
        return schema.clone();
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| {
            let mut f = f.as_ref().clone();
            let t = f.data_type();
            let ragged = has_list(t)
                && (narrow_leaf(t)
                    || (number_leaf(t) && batches.iter().all(|b| holds_no_number(b.column(c)))))
                && !f.metadata().contains_key(meta::KIND)
                && batches.iter().all(|b| rows_are_ndarrays(b.column(c)));
            if ragged {
                let mut md = f.metadata().clone();
                md.insert(meta::KIND.to_string(), "ndarray".to_string());
                f = f.with_metadata(md);
            }
            f
        })
        .collect();
    std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

/// Whether a column of lists holds no element at all, at any depth (empty rows and nulls).
fn holds_no_number(a: &arrow_array::ArrayRef) -> bool {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    match a.data_type() {
        arrow_schema::DataType::List(_) => {
            let l = a.as_list::<i32>();
            let o = l.value_offsets();
            let (from, to) = (o[0] as usize, o[o.len() - 1] as usize);
            holds_no_number(&l.values().slice(from, to - from))
        }
        arrow_schema::DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            let o = l.value_offsets();
            let (from, to) = (o[0] as usize, o[o.len() - 1] as usize);
            holds_no_number(&l.values().slice(from, to - from))
        }
        arrow_schema::DataType::FixedSizeList(..) => {
            let l = a.as_fixed_size_list();
            l.value_length() == 0
                || l.is_empty()
                || holds_no_number(&l.values().slice(
                    l.offset() * l.value_length() as usize,
                    l.len() * l.value_length() as usize,
                ))
        }
        _ => a.is_empty(),
    }
}
