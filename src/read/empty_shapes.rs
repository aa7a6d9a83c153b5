//! Row shapes that nested Lists lose (a 0 axis followed by non-zero ones: `(0, 5)` reads as an
//! empty list), noted by row while the rows are walked and kept in the schema's field metadata
//! (`msgpack_numpy.empty_shapes`), so that writing back restores them.

use std::collections::HashMap;

use arrow_schema::{DataType, Field, Schema};

use super::infer::Ty;
use crate::types::meta;

/// The most shapes recorded per column (beyond it, such rows write back as `(0, 0, ...)`).
pub(crate) const MAX_EMPTY_SHAPES: usize = 4096;

/// Row shapes that nested Lists lose, by the path of their column (a top-level column, or a field
/// of a struct column, to any depth), then by row: `{row: shape}`.
pub(crate) type EmptyShapes = HashMap<Vec<String>, serde_json::Map<String, serde_json::Value>>;

/// Remember row shapes that nested Lists lose (a 0 axis followed by non-zero ones: `(0, 5)`), in
/// a row of the `records` layout (a struct of its columns) or of `values` (the column `value`).
pub(crate) fn note_empty_shapes(t: &Ty, row: usize, records: bool, out: &mut EmptyShapes) {
    fn lost(t: &Ty) -> bool {
        match t {
            Ty::Nd { shape, .. } => shape
                .iter()
                .skip_while(|d| **d != Some(0))
                .any(|d| d.is_some_and(|d| d > 0)),
            Ty::Struct(fields) => fields.values().any(lost),
            _ => false,
        }
    }
    fn note(path: &mut Vec<String>, t: &Ty, row: usize, out: &mut EmptyShapes) {
        match t {
            Ty::Nd { shape, .. } if lost(t) => {
                let m = out.entry(path.clone()).or_default();
                if m.len() < MAX_EMPTY_SHAPES {
                    m.insert(row.to_string(), serde_json::json!(shape));
                }
            }
            Ty::Struct(fields) => {
                for (k, v) in fields {
                    path.push(k.clone());
                    note(path, v, row, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    // most rows have none: nothing is allocated for them
    if !lost(t) {
        return;
    }
    match t {
        Ty::Struct(fields) if records => {
            for (k, v) in fields {
                note(&mut vec![k.clone()], v, row, out);
            }
        }
        other => note(&mut vec!["value".to_string()], other, row, out),
    }
}

/// Put the noted shapes in the metadata (`msgpack_numpy.empty_shapes`) of the List fields they
/// belong to, struct fields included.
pub(crate) fn attach_empty_shapes(schema: Schema, mut empties: EmptyShapes) -> Schema {
    fn attach(f: &Field, path: &mut Vec<String>, empties: &mut EmptyShapes) -> Field {
        path.push(f.name().clone());
        let out = match f.data_type() {
            DataType::List(_) => match empties.remove(path.as_slice()) {
                Some(m) => {
                    let mut md = f.metadata().clone();
                    md.insert(
                        meta::EMPTY_SHAPES.to_string(),
                        serde_json::Value::Object(m).to_string(),
                    );
                    f.clone().with_metadata(md)
                }
                None => f.clone(),
            },
            DataType::Struct(children) => {
                let children: Vec<Field> =
                    children.iter().map(|c| attach(c, path, empties)).collect();
                f.clone().with_data_type(DataType::Struct(children.into()))
            }
            _ => f.clone(),
        };
        path.pop();
        out
    }
    if empties.is_empty() {
        return schema;
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| attach(f, &mut Vec::new(), &mut empties))
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}
