//! Telling List columns that held ndarrays in a table msgpack-arrow did not read (a Polars
//! DataFrame, a pyarrow table), whose schema says nothing of ndarrays: which ones to write as
//! ndarrays again.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Fields, SchemaRef};

use super::columns::{row_shapes_vary, rows_are_ndarrays};
use crate::types::{extension, meta};

/// `schema` with the List columns of `batches` that held ndarrays marked so (`msgpack_numpy.kind`
/// = `ndarray`), for a table msgpack-arrow did not read (from Polars, pyarrow, ...), which says
/// nothing of ndarrays: a List of numbers narrower than msgpack's int64/float64 (int8..uint32,
/// float16/32) can only have been ndarrays (ragged ones: the rows' shapes differ), when every row
/// can be one (nested lists rectangular, no null elements). A table with reader metadata, or a
/// column that has some, is left as it is. The whole table is looked at, so a column is written
/// one way throughout.
pub fn mark_ragged_ndarrays(schema: &SchemaRef, batches: &[RecordBatch]) -> SchemaRef {
    // (through Polars the reader's metadata rides on its `msgpack_arrow.numpy` columns)
    let read_by_us = |s: &arrow_schema::Schema| s.metadata().contains_key(meta::LAYOUT);
    if read_by_us(schema)
        || extension::unwrap(schema).is_ok_and(|u| u.is_some_and(|u| read_by_us(&u)))
    {
        return schema.clone();
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| {
            let cols: Vec<ArrayRef> = batches.iter().map(|b| b.column(c).clone()).collect();
            mark(f, &cols)
        })
        .collect();
    Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

/// `f` marked as [`mark_ragged_ndarrays`] marks a column, its arrays in every batch `cols`; the
/// fields of a Struct (a map in each record) are looked at as columns are.
fn mark(f: &Field, cols: &[ArrayRef]) -> Field {
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
    if let T::Struct(children) = f.data_type() {
        let kids: Fields = children
            .iter()
            .enumerate()
            .map(|(i, ch)| {
                let sub: Vec<ArrayRef> = cols
                    .iter()
                    .map(|a| a.as_struct().column(i).clone())
                    .collect();
                Arc::new(mark(ch, &sub))
            })
            .collect();
        return f.clone().with_data_type(T::Struct(kids));
    }
    let mut f = f.clone();
    let t = f.data_type();
    // (narrow numbers in rows of one shape were no ndarrays: those read back as an Array)
    let ragged = has_list(t)
        && ((narrow_leaf(t) && row_shapes_vary(cols))
            || (number_leaf(t) && cols.iter().all(holds_no_number)))
        && !f.metadata().contains_key(meta::KIND)
        && cols.iter().all(rows_are_ndarrays);
    // else a list of ndarrays (a record's list of token arrays of different lengths):
    // its items, one level down, each one ndarray
    let items = !ragged
        && !f.metadata().contains_key(meta::KIND)
        && matches!(t, T::List(i) | T::LargeList(i)
            if has_list(i.data_type()) && narrow_leaf(i.data_type())
                && !i.metadata().contains_key(meta::KIND))
        && cols
            .iter()
            .all(|a| list_values(a).is_some_and(|v| rows_are_ndarrays(&v)))
        && row_shapes_vary(&cols.iter().filter_map(list_values).collect::<Vec<_>>());
    if ragged || items {
        let mut md = f.metadata().clone();
        let kind = if ragged { "ndarray" } else { ITEMS };
        md.insert(meta::KIND.to_string(), kind.to_string());
        f = f.with_metadata(md);
    }
    f
}

/// `msgpack_numpy.kind` of a List column (from a table msgpack-arrow did not read) whose rows are
/// msgpack lists of ndarrays: [`mark_ragged_ndarrays`] found each item can be one.
pub(crate) const ITEMS: &str = "ndarray_items";

/// The items of the rows of a List column, as one array (the part of its values the rows use).
fn list_values(a: &arrow_array::ArrayRef) -> Option<arrow_array::ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    fn part<O: arrow_array::OffsetSizeTrait>(
        l: &arrow_array::GenericListArray<O>,
    ) -> arrow_array::ArrayRef {
        let o = l.value_offsets();
        let (from, to) = (o[0].as_usize(), o[o.len() - 1].as_usize());
        l.values().slice(from, to - from)
    }
    match a.data_type() {
        arrow_schema::DataType::List(_) => Some(part(a.as_list::<i32>())),
        arrow_schema::DataType::LargeList(_) => Some(part(a.as_list::<i64>())),
        _ => None,
    }
}

/// Whether a column of lists holds no element at all, at any depth (empty rows and nulls).
fn holds_no_number(a: &arrow_array::ArrayRef) -> bool {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    if let Some(items) = list_values(a) {
        return holds_no_number(&items);
    }
    match a.data_type() {
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
