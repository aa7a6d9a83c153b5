use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields};

/// Where the generated corpus is: `$MSGPACK_ARROW_GOLDEN`, else `tests/data/golden`.
pub fn golden_dir() -> PathBuf {
    let d = std::env::var_os("MSGPACK_ARROW_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden"));
    assert!(
        d.join("manifest.json").exists(),
        "golden corpus missing at {}: run `make test` (it runs tests/data/generate.py with the real msgpack_numpy)",
        d.display()
    );
    d
}

pub fn manifest() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(golden_dir().join("manifest.json")).unwrap()).unwrap()
}

/// The type with every field nullable, named `item` inside lists, and without metadata: the
/// reference tables come from pyarrow, which names and flags these its own way.
pub fn norm_type(t: &DataType) -> DataType {
    let f = |f: &Field, name: &str| Arc::new(Field::new(name, norm_type(f.data_type()), true));
    match t {
        DataType::List(x) => DataType::List(f(x, "item")),
        DataType::LargeList(x) => DataType::LargeList(f(x, "item")),
        DataType::FixedSizeList(x, n) => DataType::FixedSizeList(f(x, "item"), *n),
        DataType::Struct(fs) => DataType::Struct(Fields::from(
            fs.iter()
                .map(|x| f(x, x.name()).as_ref().clone())
                .collect::<Vec<_>>(),
        )),
        other => other.clone(),
    }
}

pub fn norm_array(a: &ArrayRef) -> ArrayRef {
    let d = a
        .to_data()
        .into_builder()
        .data_type(norm_type(a.data_type()));
    let d = match a.data_type() {
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::FixedSizeList(..)
        | DataType::Struct(_) => {
            let kids: Vec<_> = match a.data_type() {
                DataType::Struct(_) => {
                    let s = a
                        .as_any()
                        .downcast_ref::<arrow_array::StructArray>()
                        .unwrap();
                    s.columns()
                        .iter()
                        .map(|c| norm_array(c).to_data())
                        .collect()
                }
                _ => a
                    .to_data()
                    .child_data()
                    .iter()
                    .map(|c| norm_array(&make_array(c.clone())).to_data())
                    .collect(),
            };
            d.child_data(kids)
        }
        _ => d,
    };
    make_array(d.build().unwrap())
}

pub fn concat(batches: &[RecordBatch]) -> Option<RecordBatch> {
    let first = batches.first()?;
    Some(arrow_select::concat::concat_batches(&first.schema(), batches).unwrap())
}
