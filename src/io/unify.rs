//! Several msgpack inputs converted as one: the columns and types their rows would have in one
//! concatenated file.
//!
//! Why: inputs are converted with the first one's schema; shards of one dump often differ only
//! in what one file would have merged (a column all nil in one shard, ints in one and floats in
//! the next, a key first seen in a later shard). Where a later input does not fit, every input's
//! schema is unified as a walk over one file unifies its rows, and the inputs are read again
//! with that schema, as types inferred from other rows (so an int no float64 holds exactly is
//! still an error, as in one file).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields, Schema};

use crate::error::{Error, ErrorKind, Result};

/// The type a column of values of types `a` and `b` gets in one file; `None` where they conflict
/// there too. Ints and floats widen to Float64 at the top only (as Python's readers: nested, it
/// stays a conflict); ndarrays of other shapes are a conflict (a given List type reads lists).
pub fn unify_type(a: &DataType, b: &DataType, top: bool) -> Option<DataType> {
    use DataType as T;
    let number = |t: &DataType| matches!(t, T::Int64 | T::Float32 | T::Float64);
    Some(match (a, b) {
        _ if a == b => a.clone(),
        (T::Null, t) | (t, T::Null) => t.clone(),
        _ if top && number(a) && number(b) => T::Float64,
        (T::List(fa), T::List(fb)) => T::List(unify_item(fa, fb)?),
        (T::LargeList(fa), T::LargeList(fb)) => T::LargeList(unify_item(fa, fb)?),
        (T::Struct(fa), T::Struct(fb)) => T::Struct(unify_fields(fa, fb, false).ok()?),
        _ => return None,
    })
}

fn unify_item(a: &FieldRef, b: &FieldRef) -> Option<FieldRef> {
    let t = unify_type(a.data_type(), b.data_type(), false)?;
    Some(pick(a, b, t))
}

/// The field of type `t` for `a` and `b`: one of them where it has that type (its metadata, the
/// numpy dtype among it, kept), else a plain nullable field.
fn pick(a: &FieldRef, b: &FieldRef, t: DataType) -> FieldRef {
    if a.data_type() == &t {
        a.clone()
    } else if b.data_type() == &t {
        b.clone()
    } else {
        Arc::new(Field::new(a.name(), t, true))
    }
}

/// Every field of `a` then those only `b` has, each of the type both unify to; `Err` names the
/// first field whose types conflict, with both types.
pub fn unify_fields(
    a: &Fields,
    b: &Fields,
    top: bool,
) -> std::result::Result<Fields, (String, DataType, DataType)> {
    let mut out: Vec<FieldRef> = Vec::with_capacity(a.len().max(b.len()));
    // numpy values (scalars, ndarrays) keep their dtype: one of another type is a conflict, as
    // in one file (only a column of nils takes them)
    let numpy = |f: &FieldRef| f.metadata().contains_key(crate::types::meta::KIND);
    for fa in a {
        match b.iter().find(|f| f.name() == fa.name()) {
            Some(fb) => match unify_type(fa.data_type(), fb.data_type(), top).filter(|_| {
                fa.data_type() == fb.data_type()
                    || fa.data_type() == &DataType::Null
                    || fb.data_type() == &DataType::Null
                    || !(numpy(fa) || numpy(fb))
            }) {
                Some(t) => out.push(pick(fa, fb, t)),
                None => {
                    return Err((
                        fa.name().clone(),
                        fa.data_type().clone(),
                        fb.data_type().clone(),
                    ))
                }
            },
            None => out.push(fa.clone()),
        }
    }
    for fb in b {
        if !a.iter().any(|f| f.name() == fb.name()) {
            out.push(fb.clone());
        }
    }
    Ok(out.into())
}

/// The schema of `schemas` (each input's, in order) read as one file: `Ok(None)` where they are
/// all one schema already, an error naming the input, the column and both types where no type
/// holds a column's values. The first schema's metadata is kept.
pub fn unify_schemas(schemas: &[(PathBuf, Arc<Schema>)]) -> Result<Option<Schema>> {
    let Some((_, first)) = schemas.first() else {
        return Ok(None);
    };
    if schemas.iter().all(|(_, s)| s.fields() == first.fields()) {
        return Ok(None);
    }
    let mut fields = first.fields().clone();
    for (path, s) in &schemas[1..] {
        fields = unify_fields(&fields, s.fields(), true).map_err(|(name, before, here)| {
            Error::new(ErrorKind::Usage(format!(
                "column {name:?} is {here} here but {before} in the inputs before it, and no one \
                 type holds both (--schema-overrides {name}=TYPE gives one)"
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
        let got = unify_schemas(&[("a".into(), a.clone()), ("b".into(), b)])
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
            unify_schemas(&[("a".into(), a.clone()), ("b".into(), a.clone())])
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
        assert!(unify_schemas(&[("s".into(), scalar), ("i".into(), ints)]).is_err());
        // ints and floats inside a list stay a conflict, as text and numbers anywhere
        let c = schema(vec![("a", T::Utf8), ("l", list(T::Float64))]);
        let err = unify_schemas(&[("a".into(), a), ("c.msgpack".into(), c)]).unwrap_err();
        assert!(err.to_string().contains("c.msgpack"), "{err}");
        assert!(
            err.to_string().contains("\"a\" is Utf8 here but Int64"),
            "{err}"
        );
    }
}
