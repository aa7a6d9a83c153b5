//! Field and schema metadata keys. The exact numpy dtype travels in field metadata wherever Arrow
//! alone would lose it, so writing back restores it.

/// Field: the numpy dtype string (`"<f4"`, `">i8"`, `"<U5"`); for structured dtypes the descr as JSON.
pub const DTYPE: &str = "msgpack_numpy.dtype";
/// Field: how values were encoded: `"ndarray"` (`nd: True`), `"scalar"` (`nd: False`),
/// `"complex"` (Python complex), `"object"` (raw pickle bytes, never unpickled), `"msgpack"` (each
/// row the raw msgpack bytes of a value whose type did not unify with the others), `"int"` (plain
/// msgpack integers in a UInt64 column, some above 2^63-1), `"list"` (a FixedSizeList read from
/// msgpack lists of one length, `lists="array"`: written back as lists).
pub const KIND: &str = "msgpack_numpy.kind";
/// Schema: the layout the file was read with (`records`, `columns`, `values`).
pub const LAYOUT: &str = "msgpack_arrow.layout";
/// Schema: how rows were contained: `stream` (concatenated objects), `array` (one top-level
/// array), `ndarray` (one bare ndarray whose axis 0 are the rows).
pub const CONTAINER: &str = "msgpack_arrow.container";
/// Schema of a `columns` file holding more than one map (chunks): the rows of each, comma
/// separated (`"3,2"`), so the writer writes the same maps back.
pub const CHUNKS: &str = "msgpack_arrow.chunks";
/// Field (a top-level column, or a field of a struct a map made): `"bin"` when its key was first
/// seen as msgpack bin (Python `bytes` keys), so the writer writes it back as bin.
pub const KEY: &str = "msgpack_numpy.key";
/// Field of a `columns` file: `"list"` when its value was a msgpack list (of ndarrays, say),
/// not one ndarray, so the writer writes a list again.
pub const COLUMN: &str = "msgpack_arrow.column";
/// Field of a ragged tensor column (or of raw object arrays): the per-axis lengths that are the
/// same in every row, as JSON (`[null, 3]`), so an empty row's shape `(0, 3)` (an object
/// array's shape, which its pickle alone does not say) can be written back.
pub const SHAPE: &str = "msgpack_numpy.shape";
/// Field of a top-level ragged tensor column: shapes that the nested Lists cannot express (an
/// axis of length 0 followed by non-zero ones, e.g. `(0, 5)`), as JSON `{"row": [dims]}` with
/// the row counted over the whole file.
pub const EMPTY_SHAPES: &str = "msgpack_numpy.empty_shapes";
/// Field of a `U<n>`/`S<n>` tensor column whose rows had different widths (numpy gives an
/// array of strings the width of its longest one): `"min"` = write each row at the smallest
/// width that holds it (at least 1), as `np.array(list_of_str)` does.
pub const WIDTHS: &str = "msgpack_numpy.widths";
/// Field (on the storage of a tensor extension): the Arrow extension name.
pub const EXTENSION_NAME: &str = "ARROW:extension:name";
/// Field: the Arrow extension metadata (JSON).
pub const EXTENSION_METADATA: &str = "ARROW:extension:metadata";
/// Schema of a `records` file some of whose records lacked some keys (`"absent"`): the writer then
/// leaves a null out of its record instead of writing nil, so the key sets come back.
pub const MISSING: &str = "msgpack_arrow.missing";
/// Schema metadata: the columns (a JSON array of names; `"absent"`: every column) in which maps
/// nested in the records read lacked keys that others at their place had (the writer then leaves
/// null fields of those columns' nested maps out, as it leaves out the records' own with
/// [`MISSING`]).
pub const MISSING_NESTED: &str = "msgpack_arrow.missing_nested";

/// The [`MISSING_NESTED`] value naming `columns`.
pub fn nested_columns(columns: &std::collections::BTreeSet<String>) -> String {
    serde_json::Value::from(columns.iter().cloned().collect::<Vec<_>>()).to_string()
}

/// Which of the columns `names` [`MISSING_NESTED`] `value` names.
pub fn nested_columns_named<'a>(value: &str, names: impl Iterator<Item = &'a str>) -> Vec<bool> {
    let listed: Option<std::collections::HashSet<String>> = match value {
        "absent" => None,
        v => Some(
            serde_json::from_str::<Vec<String>>(v)
                .unwrap_or_default()
                .into_iter()
                .collect(),
        ),
    };
    names
        .map(|n| listed.as_ref().is_none_or(|l| l.contains(n)))
        .collect()
}

/// Schema: `"openpi"` when the file's ndarrays and numpy scalars were openpi's
/// `__ndarray__`/`__npgeneric__` maps, so the writer writes them back in that form.
pub const DIALECT: &str = "msgpack_arrow.dialect";
/// Schema: how the file's msgpack-numpy maps were spelled where that is not msgpack_numpy 0.4's
/// own (bin keys, a `kind`, bin payloads): comma-separated words, `str-keys` (keys as str),
/// `no-kind` (no `kind` entry: before 0.3.9), `raw` (bytes as raw str, no str8: msgpack's
/// `use_bin_type=False`). The writer spells its output so.
pub const SPELLING: &str = "msgpack_arrow.spelling";
/// Schema (of a Parquet file's embedded Arrow schema): the metadata of every top-level field that
/// carries none, as a JSON object, written once in place of one copy per field
/// ([`crate::types::shared_metadata`]).
pub const SHARED_FIELD_METADATA: &str = "msgpack_arrow.field_metadata";
