//! The numpy facts a Polars dtype cannot state (byte order, `<U5` widths, complex, scalar vs
//! 0-d array, ragged ndarray vs list, the layout of the file, ...) carried through Polars in an
//! Arrow extension type, `msgpack_arrow.numpy`.
//!
//! Polars drops plain field and schema metadata but keeps an extension type's name and metadata
//! on a top-level column. So the reader ([`wrap`], opt-in) puts every metadata key of a column's
//! field tree (and the schema's, on the first wrapped column) into one JSON string under the
//! extension; the writer ([`unwrap`], [`retype`]) puts them back where they were. The data is not
//! touched either way: the extension's storage is the column's own type.

use std::sync::Arc;

use arrow_array::{make_array, ArrayRef};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, FieldRef, Fields, Metadata, Schema};
use serde_json::{json, Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::types::meta;

/// The extension name.
pub const NAME: &str = "msgpack_arrow.numpy";

/// The fields one level below a type (list items, struct fields, map entries).
fn children(t: &DataType) -> Vec<FieldRef> {
    match t {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![f.clone()],
        DataType::Struct(fs) => fs.iter().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The same type with its child fields replaced (in order).
fn with_children(t: &DataType, kids: Vec<FieldRef>) -> DataType {
    let one = || kids[0].clone();
    match t {
        DataType::List(_) => DataType::List(one()),
        DataType::LargeList(_) => DataType::LargeList(one()),
        DataType::ListView(_) => DataType::ListView(one()),
        DataType::LargeListView(_) => DataType::LargeListView(one()),
        DataType::FixedSizeList(_, n) => DataType::FixedSizeList(one(), *n),
        DataType::Map(_, sorted) => DataType::Map(one(), *sorted),
        DataType::Struct(_) => DataType::Struct(Fields::from(kids)),
        other => other.clone(),
    }
}

/// A `msgpack_arrow.numpy` column ([`wrap`]).
pub fn is_wrapped(f: &Field) -> bool {
    f.metadata().get(meta::EXTENSION_NAME).map(String::as_str) == Some(NAME)
}

fn is_extension(f: &Field) -> bool {
    f.metadata().contains_key(meta::EXTENSION_NAME)
}

/// The metadata of a field and of the fields below it, as JSON (`None`: there is none).
/// `{"m": {key: value}, "c": [child, ...]}`, both parts left out when empty.
fn tree(f: &Field, top: bool) -> Option<Value> {
    let mut node = Map::new();
    let m: Map<String, Value> = f
        .metadata()
        .iter()
        .filter(|(k, _)| !(top && k.starts_with("ARROW:extension:")))
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    if !m.is_empty() {
        node.insert("m".into(), Value::Object(m));
    }
    let kids: Vec<Option<Value>> = children(f.data_type())
        .iter()
        .map(|c| tree(c, false))
        .collect();
    if kids.iter().any(Option::is_some) {
        let kids = kids.into_iter().map(|k| k.unwrap_or(json!({}))).collect();
        node.insert("c".into(), Value::Array(kids));
    }
    (!node.is_empty()).then_some(Value::Object(node))
}

/// The schema for Polars: each column whose field tree holds metadata becomes a
/// `msgpack_arrow.numpy` extension column of the same storage type. The file's metadata (its
/// layout, container, ...) rides on every one of them, so dropping a column keeps it; when no
/// field of the file has metadata, on the file's first column. `whole` is the file's schema,
/// of which `schema` may be a projection: every projection (and every file of a scan, read with
/// the first one's schema) then wraps a column alike. Columns that already are an extension (a
/// canonical tensor) are left as they are.
pub fn wrap(schema: &Schema, whole: &Schema) -> Schema {
    let file = whole.metadata();
    let first = whole.fields().first().map(|f| f.name().as_str());
    let file_md = (!file.is_empty()).then(|| {
        Value::Object(
            file.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    });
    let trees: Vec<Option<Value>> = schema
        .fields()
        .iter()
        .map(|f| (!is_extension(f)).then(|| tree(f, true)).flatten())
        .collect();
    let none_wrapped = whole
        .fields()
        .iter()
        .all(|f| is_extension(f) || tree(f, true).is_none());
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .zip(trees)
        .map(|(f, t)| {
            let carrier = none_wrapped && Some(f.name().as_str()) == first && !is_extension(f);
            if t.is_none() && !(carrier && file_md.is_some()) {
                return f.clone();
            }
            let mut ext = match t {
                Some(Value::Object(o)) => o,
                _ => Map::new(),
            };
            ext.insert("v".into(), json!(1));
            if let Some(s) = &file_md {
                ext.insert("s".into(), s.clone());
            }
            let mut md = f.metadata().clone();
            md.insert(meta::EXTENSION_NAME, NAME);
            md.insert(meta::EXTENSION_METADATA, Value::Object(ext).to_string());
            Arc::new(f.as_ref().clone().with_metadata(md))
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

fn strings(v: Option<&Value>) -> Metadata {
    match v {
        Some(Value::Object(o)) => o
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
        _ => Metadata::default(),
    }
}

/// A field with the metadata of `node` put back on it and on the fields below it (matched by
/// position: Polars may rename list items or widen `List` to `LargeList`).
fn restore(f: &Field, node: &Value, top: bool) -> Field {
    let mut md = if top {
        Metadata::default()
    } else {
        f.metadata().clone()
    };
    md.extend(strings(node.get("m")));
    let t = match node.get("c") {
        Some(Value::Array(kids)) => {
            let cur = children(f.data_type());
            if cur.len() == kids.len() {
                let new: Vec<FieldRef> = cur
                    .iter()
                    .zip(kids)
                    .map(|(c, k)| Arc::new(restore(c, k, false)))
                    .collect();
                with_children(f.data_type(), new)
            } else {
                f.data_type().clone()
            }
        }
        _ => f.data_type().clone(),
    };
    Field::new(f.name(), t, f.is_nullable()).with_metadata(md)
}

/// The schema as the reader made it before [`wrap`]: `msgpack_arrow.numpy` columns lose the
/// extension and get their field trees' metadata back; the schema's metadata comes back from the
/// column that carried it (unless the schema has its own). `None`: no column was wrapped.
pub fn unwrap(schema: &Schema) -> Result<Option<Schema>> {
    // the file's metadata from the columns, under the schema's own keys (which win)
    let mut schema_md = Metadata::default();
    let mut any = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        if !is_wrapped(f) {
            fields.push(f.clone());
            continue;
        }
        any = true;
        let raw = f
            .metadata()
            .get(meta::EXTENSION_METADATA)
            .map_or("", String::as_str);
        let node: Value = serde_json::from_str(raw).map_err(|e| {
            Error::new(ErrorKind::Layout(format!(
                "column {:?}: the {NAME} extension's metadata is not its JSON ({e})",
                f.name()
            )))
        })?;
        schema_md.extend(strings(node.get("s")));
        fields.push(Arc::new(restore(f, &node, true)));
    }
    schema_md.extend(schema.metadata().clone());
    Ok(any.then(|| Schema::new_with_metadata(fields, schema_md)))
}

/// `data` with the type `t`: the same buffers, the child fields' metadata as `t` states it.
fn retype_data(data: ArrayData, t: &DataType) -> ArrayData {
    let kids = children(t);
    let child_data = if kids.is_empty() {
        data.child_data().to_vec()
    } else {
        data.child_data()
            .iter()
            .zip(&kids)
            .map(|(c, f)| retype_data(c.clone(), f.data_type()))
            .collect()
    };
    let b = data
        .into_builder()
        .data_type(t.clone())
        .child_data(child_data);
    // SAFETY: `t` equals the data's type but for field names and metadata
    // (`equals_datatype`, checked by `retype`), which no buffer depends on
    unsafe { b.build_unchecked() }
}

/// A column (a batch's, as Polars exported it) in the type of its [`unwrap`]ped field, so the
/// writer's encoders see the metadata of nested fields. Zero-copy: only field metadata differs
/// (a column of another storage type is returned as it is, for the writer's own check to name).
pub fn retype(col: &ArrayRef, t: &DataType) -> ArrayRef {
    if col.data_type() == t || !col.data_type().equals_datatype(t) {
        return col.clone();
    }
    make_array(retype_data(col.to_data(), t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, FixedSizeListArray, Float32Array};

    fn with(md: &[(&str, &str)]) -> Metadata {
        md.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn wrap_then_unwrap_gives_the_schema_back_after_polars_drops_plain_metadata() {
        let item = Field::new("item", DataType::Float32, true)
            .with_metadata(with(&[(meta::DTYPE, ">f4")]));
        let fsl = DataType::FixedSizeList(Arc::new(item), 2);
        let schema = Schema::new_with_metadata(
            vec![
                Field::new("id", DataType::Int64, true),
                Field::new("v", fsl.clone(), true).with_metadata(with(&[(meta::KIND, "ndarray")])),
            ],
            with(&[(meta::LAYOUT, "columns")]),
        );
        let wrapped = wrap(&schema, &schema);
        assert!(!is_extension(wrapped.field(0)));
        assert_eq!(wrapped.field(1).metadata()[meta::EXTENSION_NAME], NAME);
        // what Polars keeps: the extension keys of top-level fields, nothing else
        let polars = Schema::new(
            wrapped
                .fields()
                .iter()
                .map(|f| {
                    let md: Metadata = f
                        .metadata()
                        .iter()
                        .filter(|(k, _)| k.starts_with("ARROW:extension:"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    let bare = DataType::FixedSizeList(
                        Arc::new(Field::new("item", DataType::Float32, true)),
                        2,
                    );
                    let t = if f.name() == "v" {
                        bare
                    } else {
                        f.data_type().clone()
                    };
                    Field::new(f.name(), t, true).with_metadata(md)
                })
                .collect::<Vec<_>>(),
        );
        let back = unwrap(&polars).unwrap().unwrap();
        assert_eq!(back, schema);
        let col: ArrayRef = Arc::new(FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float32, true)),
            2,
            Arc::new(Float32Array::from(vec![1.0, 2.0])),
            None,
        ));
        let r = retype(&col, back.field(1).data_type());
        assert_eq!(r.data_type(), schema.field(1).data_type());
        assert_eq!(r.len(), 1);
        assert!(
            unwrap(&Schema::new(vec![Field::new("x", DataType::Int64, true)]))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn schema_metadata_rides_on_the_first_column_when_no_field_has_any() {
        let schema = Schema::new_with_metadata(
            vec![Field::new("value", DataType::Int64, true)],
            with(&[(meta::LAYOUT, "values"), (meta::CONTAINER, "array")]),
        );
        let wrapped = wrap(&schema, &schema);
        let bare = Schema::new(vec![wrapped.field(0).clone()]);
        assert_eq!(unwrap(&bare).unwrap().unwrap(), schema);
    }

    #[test]
    fn a_bad_extension_metadata_is_an_error_naming_the_column() {
        let f = Field::new("x", DataType::Int64, true).with_metadata(with(&[
            (meta::EXTENSION_NAME, NAME),
            (meta::EXTENSION_METADATA, "{not json"),
        ]));
        let e = unwrap(&Schema::new(vec![f])).unwrap_err().to_string();
        assert!(e.contains("\"x\"") && e.contains(NAME), "{e}");
    }
}
