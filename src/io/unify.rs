//! Several msgpack inputs converted as one: the columns and types their rows would have in one
//! concatenated file.
//!
//! Why: inputs are converted with the first one's schema; shards of one dump often differ only
//! in what one file would have merged (a column all nil in one shard, ints in one and floats in
//! the next, a key first seen in a later shard). Where a later input does not fit, every input's
//! schema is unified as a walk over one file unifies its rows, and the inputs are read again
//! with that schema, as types inferred from other rows (so an int no float64 holds exactly is
//! still an error, as in one file).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields, Schema};

use crate::error::{Error, ErrorKind, Result};
use crate::options::TensorMode;
use crate::read::infer::tensor_type;
use crate::types::{meta, short_name, NumpyDtype};

/// The type a column of values of types `a` and `b` gets in one file; `None` where they conflict
/// there too. At any depth, as a walk over one file merges its rows: ints and floats widen to
/// Float64, ints of both signs' ranges to UInt64 (a negative one read again is then refused, as
/// in one file). Fields with numpy metadata: `unify_field`.
pub fn unify_type(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as T;
    let number = |t: &DataType| matches!(t, T::Int64 | T::UInt64 | T::Float32 | T::Float64);
    Some(match (a, b) {
        _ if a == b => a.clone(),
        (T::Null, t) | (t, T::Null) => t.clone(),
        (T::Int64, T::UInt64) | (T::UInt64, T::Int64) => T::UInt64,
        _ if number(a) && number(b) => T::Float64,
        (T::List(fa), T::List(fb)) => T::List(unify_field(fa, fb)?),
        (T::LargeList(fa), T::LargeList(fb)) => T::LargeList(unify_field(fa, fb)?),
        (T::Struct(fa), T::Struct(fb)) => T::Struct(unify_fields(fa, fb).ok()?),
        _ => return None,
    })
}

/// The field `a` and `b` (a column, a struct's field, a list's items) unify to, `None` where they
/// conflict. numpy values (scalars, ndarrays) keep their dtype: one of another type is a
/// conflict, as in one file (only nils take them), but ndarrays of other shapes are [`ragged`].
fn unify_field(a: &FieldRef, b: &FieldRef) -> Option<FieldRef> {
    if let Some(f) = ragged(a, b) {
        return Some(f);
    }
    // (`kind: int` marks plain msgpack ints in a UInt64 column: no numpy type to keep)
    let numpy = |f: &FieldRef| f.metadata().get(meta::KIND).is_some_and(|k| k != "int");
    let (ta, tb) = (a.data_type(), b.data_type());
    if ta != tb && ta != &DataType::Null && tb != &DataType::Null && (numpy(a) || numpy(b)) {
        return None;
    }
    Some(pick(a, b, unify_type(ta, tb)?))
}

/// The field of type `t` for `a` and `b`: one of them where it has that type (its metadata, the
/// numpy dtype among it, kept; numpy scalars over plain values of their type, which one file
/// reads as such a column too), else a plain nullable field.
fn pick(a: &FieldRef, b: &FieldRef, t: DataType) -> FieldRef {
    let numpy = |f: &FieldRef| f.metadata().contains_key(meta::KIND);
    match (a.data_type() == &t, b.data_type() == &t) {
        (true, true) if numpy(b) && !numpy(a) => b.clone(),
        (true, _) => a.clone(),
        (_, true) => b.clone(),
        _ => Arc::new(Field::new(a.name(), t, true)),
    }
}

/// Every field of `a` then those only `b` has, each of the type both unify to; `Err` gives the
/// first pair of fields (of `a`, of `b`) whose types conflict.
pub fn unify_fields(a: &Fields, b: &Fields) -> std::result::Result<Fields, (FieldRef, FieldRef)> {
    let mut out: Vec<FieldRef> = Vec::with_capacity(a.len().max(b.len()));
    // (by name, not a search of `b` for each field of `a`: shards of wide tables)
    let mut in_b: HashMap<&str, &FieldRef> = b.iter().map(|f| (f.name().as_str(), f)).collect();
    for fa in a {
        match in_b.remove(fa.name().as_str()) {
            Some(fb) => out.push(unify_field(fa, fb).ok_or_else(|| (fa.clone(), fb.clone()))?),
            None => out.push(fa.clone()),
        }
    }
    out.extend(
        b.iter()
            .filter(|f| in_b.contains_key(f.name().as_str()))
            .cloned(),
    );
    Ok(out.into())
}

/// ndarrays of one dtype and number of dimensions whose shapes differ between inputs (one input's
/// f4[3], the next one's f4[5]: a shard of one record each, or one whose rows happen to have one
/// length): a ragged column, Lists on every axis, as one file of both gives. `None` for anything
/// else (other dtypes or ndims, the canonical tensor extensions).
fn ragged(a: &FieldRef, b: &FieldRef) -> Option<FieldRef> {
    let (ma, mb) = (a.metadata(), b.metadata());
    let ndarray = |f: &FieldRef| {
        f.metadata().get(meta::KIND).map(String::as_str) == Some("ndarray")
            && !f.metadata().contains_key(meta::EXTENSION_NAME)
    };
    let same = a.data_type() == b.data_type() && ma.get(meta::SHAPE) == mb.get(meta::SHAPE);
    if same || !ndarray(a) || !ndarray(b) || ma.get(meta::DTYPE) != mb.get(meta::DTYPE) {
        return None;
    }
    let dt = NumpyDtype::from_metadata(ma.get(meta::DTYPE)?).ok()?;
    let elem = dt.arrow_type().ok()?;
    let (sa, sb) = (axes(a, &elem)?, axes(b, &elem)?);
    if sa.len() != sb.len() || sa.is_empty() {
        return None;
    }
    let shape: Vec<Option<usize>> = sa
        .iter()
        .zip(&sb)
        .map(|(x, y)| x.filter(|_| x == y))
        .collect();
    let mut md = std::collections::HashMap::new();
    for k in [meta::DTYPE, meta::KIND, meta::WIDTHS] {
        if let Some(v) = ma.get(k).or_else(|| mb.get(k)) {
            md.insert(k.to_string(), v.clone());
        }
    }
    if shape.iter().any(|d| d.is_some()) {
        md.insert(
            meta::SHAPE.to_string(),
            serde_json::json!(shape).to_string(),
        );
    }
    // (every axis a List: a shape that is all fixed was equal in both, the types too)
    let lists = vec![None; shape.len()];
    let t = tensor_type(elem, &lists, TensorMode::Array, &mut md).ok()?;
    Some(Arc::new(Field::new(a.name(), t, true).with_metadata(md)))
}

/// Per axis of the ndarray column `f` whose elements are `elem`: its length where every row has
/// the same (a FixedSizeList, or a List the field's shape metadata fixes), else `None`.
fn axes(f: &Field, elem: &DataType) -> Option<Vec<Option<usize>>> {
    let mut out = Vec::new();
    let mut t = f.data_type();
    while t != elem {
        match t {
            DataType::FixedSizeList(item, n) => {
                out.push(usize::try_from(*n).ok());
                t = item.data_type();
            }
            DataType::List(item) | DataType::LargeList(item) => {
                out.push(None);
                t = item.data_type();
            }
            _ => return None,
        }
    }
    if let Some(fixed) = f.metadata().get(meta::SHAPE) {
        let fixed: Vec<Option<usize>> = serde_json::from_str(fixed).ok()?;
        if fixed.len() != out.len() {
            return None;
        }
        for (o, d) in out.iter_mut().zip(fixed) {
            *o = o.or(d);
        }
    }
    Some(out)
}

/// The schema of `schemas` (each input's, in order) read as one file: `Ok(None)` where they are
/// all one schema already, an error naming the input, the column and both types where no type
/// holds a column's values, ending with `hint(column)` (how to give the column a type, in the
/// caller's words). The first schema's metadata is kept.
pub fn unify_schemas(
    schemas: &[(PathBuf, Arc<Schema>)],
    hint: &dyn Fn(&str) -> String,
) -> Result<Option<Schema>> {
    let Some((_, first)) = schemas.first() else {
        return Ok(None);
    };
    if schemas.iter().all(|(_, s)| s.fields() == first.fields()) {
        return Ok(None);
    }
    let mut fields = first.fields().clone();
    for (path, s) in &schemas[1..] {
        fields = unify_fields(&fields, s.fields()).map_err(|(before, here)| {
            let name = before.name();
            Error::new(ErrorKind::Usage(format!(
                "column {name:?} is {} here but {} in the inputs before it, and no one type \
                 holds both ({})",
                short_name(&here),
                short_name(&before),
                hint(name)
            )))
            .in_file(path)
        })?;
    }
    Ok(Some(Schema::new_with_metadata(
        fields,
        first.metadata().clone(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType as T;

    fn schema(fields: Vec<(&str, DataType)>) -> Arc<Schema> {
        Arc::new(Schema::new(
            fields
                .into_iter()
                .map(|(n, t)| Field::new(n, t, true))
                .collect::<Vec<_>>(),
        ))
    }

    #[test]
    fn rows_of_one_file_unify_and_conflicts_name_the_input() {
        let list = |t| T::List(Arc::new(Field::new("item", t, true)));
        let a = schema(vec![("a", T::Int64), ("n", T::Null), ("l", list(T::Null))]);
        let b = schema(vec![
            ("a", T::Float64),
            ("n", T::Utf8),
            ("l", list(T::Int64)),
            ("c", T::Boolean),
        ]);
        let got = unify_schemas(&[("a".into(), a.clone()), ("b".into(), b)], &hint)
            .unwrap()
            .unwrap();
        let want = schema(vec![
            ("a", T::Float64),
            ("n", T::Utf8),
            ("l", list(T::Int64)),
            ("c", T::Boolean),
        ]);
        assert_eq!(got.fields(), want.fields());
        assert!(
            unify_schemas(&[("a".into(), a.clone()), ("b".into(), a.clone())], &hint)
                .unwrap()
                .is_none()
        );
        // a numpy float32 scalar column beside ints: a conflict, as in one file
        let scalar = Arc::new(Schema::new(vec![Field::new("a", T::Float32, true)
            .with_metadata(std::collections::HashMap::from([(
                crate::types::meta::KIND.to_string(),
                "scalar".to_string(),
            )]))]));
        let ints = schema(vec![("a", T::Int64)]);
        assert!(unify_schemas(&[("s".into(), scalar), ("i".into(), ints)], &hint).is_err());
        // text and numbers are a conflict anywhere
        let c = schema(vec![("a", T::Utf8), ("l", list(T::Float64))]);
        let err = unify_schemas(&[("a".into(), a), ("c.msgpack".into(), c)], &hint).unwrap_err();
        assert!(err.to_string().contains("c.msgpack"), "{err}");
        assert!(
            err.to_string()
                .contains("\"a\" is str here but i64 in the inputs before it, and no one type holds both (give a a type)"),
            "{err}"
        );
    }

    #[test]
    fn numbers_widen_at_every_depth_as_in_one_file() {
        let list = |t| T::List(Arc::new(Field::new("item", t, true)));
        let strukt = |t| T::Struct(vec![Field::new("x", t, true)].into());
        let a = schema(vec![
            ("l", list(T::Int64)),
            ("s", strukt(list(T::Float32))),
            ("u", T::Int64),
            ("lu", list(T::UInt64)),
        ]);
        let int = std::collections::HashMap::from([(meta::KIND.to_string(), "int".to_string())]);
        let b = Arc::new(Schema::new(vec![
            Field::new("l", list(T::Float64), true),
            Field::new("s", strukt(list(T::Int64)), true),
            Field::new("u", T::UInt64, true).with_metadata(int.clone()),
            Field::new("lu", list(T::Int64), true),
        ]));
        let got = unify_schemas(&[("a".into(), a), ("b".into(), b)], &hint)
            .unwrap()
            .unwrap();
        let want = Schema::new(vec![
            Field::new("l", list(T::Float64), true),
            Field::new("s", strukt(list(T::Float64)), true),
            Field::new("u", T::UInt64, true).with_metadata(int),
            Field::new("lu", list(T::UInt64), true),
        ]);
        assert_eq!(got.fields(), want.fields());
        // numpy scalars inside a list keep their dtype: beside plain floats, a conflict
        let np_item = Arc::new(Field::new("item", T::Float32, true).with_metadata(
            std::collections::HashMap::from([(meta::KIND.to_string(), "scalar".to_string())]),
        ));
        let c = schema(vec![("l", T::List(np_item))]);
        let d = schema(vec![("l", list(T::Float64))]);
        assert!(unify_schemas(&[("c".into(), c), ("d".into(), d)], &hint).is_err());
    }

    fn hint(name: &str) -> String {
        format!("give {name} a type")
    }

    /// An ndarray column of `dtype` as a read infers it: FixedSizeLists where `shape` is fixed,
    /// else Lists on every axis with the fixed lengths in metadata.
    fn ndarray(dtype: &str, shape: &[Option<usize>]) -> Arc<Schema> {
        let mut md = std::collections::HashMap::from([
            (meta::DTYPE.to_string(), dtype.to_string()),
            (meta::KIND.to_string(), "ndarray".to_string()),
        ]);
        let elem = NumpyDtype::parse(dtype).unwrap().arrow_type().unwrap();
        let t = tensor_type(elem, shape, TensorMode::Array, &mut md).unwrap();
        if shape.iter().any(|d| d.is_none()) && shape.iter().any(|d| d.is_some()) {
            md.insert(
                meta::SHAPE.to_string(),
                serde_json::json!(shape).to_string(),
            );
        }
        Arc::new(Schema::new(
            vec![Field::new("v", t, true).with_metadata(md)],
        ))
    }

    #[test]
    fn ndarrays_of_other_shapes_unify_as_one_file_types_them() {
        let unified = |a: &[Option<usize>], b: &[Option<usize>], dt: &str| {
            let (a, b) = (ndarray("<f4", a), ndarray(dt, b));
            unify_schemas(&[("a".into(), a), ("b".into(), b)], &hint)
        };
        // (2, 3) then (2, 4): ragged on the second axis, the first fixed (in metadata)
        let got = unified(&[Some(2), Some(3)], &[Some(2), Some(4)], "<f4")
            .unwrap()
            .unwrap();
        assert_eq!(got.fields(), ndarray("<f4", &[Some(2), None]).fields());
        // a ragged input beside a fixed one
        let got = unified(&[None], &[Some(7)], "<f4").unwrap().unwrap();
        assert_eq!(got.fields(), ndarray("<f4", &[None]).fields());
        // another ndim, another dtype: a conflict, as in one file
        assert!(unified(&[Some(3)], &[Some(1), Some(3)], "<f4").is_err());
        assert!(unified(&[Some(3)], &[Some(4)], "<f8").is_err());
        // the same shape: nothing to unify
        assert!(unified(&[Some(3)], &[Some(3)], "<f4").unwrap().is_none());
    }
}
