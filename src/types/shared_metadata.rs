//! Field metadata shared by many top-level fields, written once for the schema.
//!
//! A columns map of 10,000 float64 ndarrays gives 10,000 fields with the same
//! `{msgpack_numpy.dtype: "<f8", msgpack_numpy.kind: "ndarray"}`. Parquet embeds the Arrow schema
//! in its footer, where those copies were 1.4 MB of a 12 MB file (8% more than polars' file of the
//! same table). The Parquet writer embeds a schema whose fields carrying the most common metadata
//! carry none, and [`meta::SHARED_FIELD_METADATA`] holds it; whoever reads the file back puts it
//! on again ([`expand`]), so the round trip keeps every field's metadata.

use std::sync::Arc;

use arrow_schema::{Field, Metadata, Schema};

use crate::types::meta;

/// Fewer top-level fields than this keep their own metadata (nothing worth saving).
const MIN_FIELDS: usize = 16;

/// `schema` with the metadata most of its top-level fields carry held once by the schema and
/// taken off those fields; `None` where nothing would be saved, or where a field carries no
/// metadata (it would read back with the shared one).
pub fn compact(schema: &Schema) -> Option<Schema> {
    let fields = schema.fields();
    if fields.len() < MIN_FIELDS
        || schema.metadata().contains_key(meta::SHARED_FIELD_METADATA)
        || fields.iter().any(|f| f.metadata().is_empty())
    {
        return None;
    }
    // the most common metadata (the first of the most common, for a stable choice)
    let mut counts: Vec<(&Metadata, usize)> = Vec::new();
    for f in fields {
        match counts.iter_mut().find(|(m, _)| *m == f.metadata()) {
            Some((_, n)) => *n += 1,
            None => counts.push((f.metadata(), 1)),
        }
        // all distinct so far and many of them: no metadata is shared enough to bother
        if counts.len() > 64 {
            return None;
        }
    }
    let (shared, n) =
        counts.iter().fold(
            None,
            |best: Option<(&Metadata, usize)>, &(m, n)| match best {
                Some((_, b)) if b >= n => best,
                _ => Some((m, n)),
            },
        )?;
    if n < 2 {
        return None;
    }
    let shared = shared.clone();
    let json: serde_json::Map<String, serde_json::Value> = shared
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let fields: Vec<Arc<Field>> = fields
        .iter()
        .map(|f| match f.metadata() == &shared {
            true => Arc::new(f.as_ref().clone().with_metadata(Metadata::default())),
            false => f.clone(),
        })
        .collect();
    let mut md = schema.metadata().clone();
    md.insert(
        meta::SHARED_FIELD_METADATA.to_string(),
        serde_json::Value::Object(json).to_string(),
    );
    Some(Schema::new_with_metadata(fields, md))
}

/// The schema [`compact`] was given, from what it returned: the shared metadata back on every
/// top-level field without any. `None` when `schema` holds no shared metadata (or holds it in a
/// form not written here, then left as it is).
pub fn expand(schema: &Schema) -> Option<Schema> {
    let raw = schema.metadata().get(meta::SHARED_FIELD_METADATA)?;
    let serde_json::Value::Object(json) = serde_json::from_str(raw).ok()? else {
        return None;
    };
    let shared = json
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Some((k, s)),
            _ => None,
        })
        .collect::<Option<Metadata>>()?;
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .map(|f| match f.metadata().is_empty() {
            true => Arc::new(f.as_ref().clone().with_metadata(shared.clone())),
            false => f.clone(),
        })
        .collect();
    let mut md = schema.metadata().clone();
    md.remove(meta::SHARED_FIELD_METADATA);
    Some(Schema::new_with_metadata(fields, md))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use std::collections::HashMap;

    fn field(i: usize, md: &[(&str, &str)]) -> Field {
        Field::new(format!("c{i}"), DataType::Float64, true).with_metadata(
            md.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Metadata>(),
        )
    }

    const F8: [(&str, &str); 2] = [(meta::DTYPE, "<f8"), (meta::KIND, "ndarray")];

    #[test]
    fn the_most_common_metadata_is_written_once_and_comes_back_on_every_field() {
        let mut fields: Vec<Field> = (0..40).map(|i| field(i, &F8)).collect();
        fields[3] = field(3, &[(meta::DTYPE, ">f8"), (meta::KIND, "ndarray")]);
        fields[7] = field(7, &[(meta::KIND, "scalar")]);
        let md = HashMap::from([(meta::LAYOUT.to_string(), "columns".to_string())]);
        let schema = Schema::new_with_metadata(fields, md);
        let small = compact(&schema).unwrap();
        let bare = small
            .fields()
            .iter()
            .filter(|f| f.metadata().is_empty())
            .count();
        assert_eq!(bare, 38, "the fields with the common metadata carry none");
        assert_eq!(small.field(3).metadata(), schema.field(3).metadata());
        assert_eq!(expand(&small).unwrap(), schema);
        // the embedded schema is what Parquet keeps: smaller by most of the copies
        let size = |s: &Schema| {
            arrow_ipc::convert::IpcSchemaEncoder::new()
                .schema_to_fb(s)
                .finished_data()
                .len()
        };
        assert!(
            size(&small) * 2 < size(&schema),
            "{} {}",
            size(&small),
            size(&schema)
        );
    }

    #[test]
    fn schemas_it_cannot_restore_exactly_are_left_as_they_are() {
        // a field without metadata would come back with the shared one
        let mut fields: Vec<Field> = (0..40).map(|i| field(i, &F8)).collect();
        fields[5] = field(5, &[]);
        assert!(compact(&Schema::new(fields)).is_none());
        // few fields, or none alike
        assert!(compact(&Schema::new(
            (0..5).map(|i| field(i, &F8)).collect::<Vec<_>>()
        ))
        .is_none());
        let distinct: Vec<Field> = (0..40)
            .map(|i| field(i, &[(meta::DTYPE, &format!("<U{}", i + 1))]))
            .collect();
        assert!(compact(&Schema::new(distinct)).is_none());
        // a schema that already holds the key (from elsewhere): not compacted again
        let md = HashMap::from([(meta::SHARED_FIELD_METADATA.to_string(), "{}".to_string())]);
        let fields: Vec<Field> = (0..40).map(|i| field(i, &F8)).collect();
        assert!(compact(&Schema::new_with_metadata(fields, md)).is_none());
        // not ours: nothing to expand
        assert!(expand(&Schema::new(vec![field(0, &F8)])).is_none());
        let bad = HashMap::from([(meta::SHARED_FIELD_METADATA.to_string(), "[1]".to_string())]);
        assert!(expand(&Schema::new_with_metadata(vec![field(0, &[])], bad)).is_none());
    }
}
