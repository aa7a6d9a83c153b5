//! Schema inference: walk msgpack values (headers only, tensor payloads skipped) and unify what each
//! column holds into one Arrow field, following SPEC §3. Column order is first-seen order.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use indexmap::IndexMap;

use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, ObjectArrays, TensorMode};
use crate::types::{fixed_size_list, list, meta, NumpyDtype};
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::ndarray::{is_special_ext, probe, NdArray, Special};
use crate::wire::spelling::SpellingSeen;

mod columns;
mod fits;
mod key_paths;

pub(crate) use columns::{infer_columns_map, infer_columns_value};
pub(crate) use fits::skip_marker_fits;
use fits::{NdHeader, RowTemplate};

/// How numpy values were written: `nd: True` maps (incl. 0-d) or `nd: False` scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NdKind {
    Array,
    Scalar,
}

/// A hash map keyed by column names, with a fast seeded hasher (names are hashed several times
/// per column of a wide map).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
/// The columns of a map, in the order first seen.
pub(crate) type Columns = IndexMap<String, Ty, foldhash::fast::RandomState>;

/// What one column holds, as far as inference has seen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Null,
    Bool,
    /// `big`: a value above i64::MAX was seen; `neg`: a negative value was seen.
    Int {
        big: bool,
        neg: bool,
    },
    F32,
    F64,
    Str,
    Bin,
    /// msgpack timestamp (ext -1)
    Timestamp,
    /// an ext value of another type (not an ndarray's npy extension): its type code and bytes
    Ext,
    /// Python complex
    Complex,
    /// numpy values: `shape` has one entry per axis (None where it varies); empty for 0-d/scalars.
    Nd {
        dt: NumpyDtype,
        shape: Vec<Option<usize>>,
        kind: NdKind,
        /// `U`/`S` rows of different widths were seen (`dt` has the widest)
        widths: bool,
    },
    /// a msgpack list; the length every one seen had, `None` when they differ
    List(Box<Ty>, Option<usize>),
    Struct(Columns),
    /// a column whose type the caller gives (schema overrides): its values are not inferred,
    /// only whether some are ndarrays (`true`: decoded as tensors of the given type)
    Given(bool),
    /// values that did not unify, kept as their raw msgpack bytes ([`crate::Conflicts::Binary`])
    Raw,
    /// a map whose keys are integers (not column names): Arrow `Map<key, value>`
    Map(Box<Ty>, Box<Ty>),
}

impl Ty {
    /// Numbers or bools, or lists of one length of such (to any depth): what `lists="array"`
    /// reads as a tensor.
    fn is_fixed_numbers(&self) -> bool {
        match self {
            Ty::Bool | Ty::Int { .. } | Ty::F32 | Ty::F64 => true,
            Ty::List(t, Some(n)) => *n > 0 && t.is_fixed_numbers(),
            _ => false,
        }
    }

    /// The msgpack kind of a plain scalar type (`Int` only for values that fit i64).
    fn plain_kind(&self) -> Option<Kind> {
        Some(match self {
            Ty::Int { big: false, .. } => Kind::Int,
            Ty::F32 => Kind::F32,
            Ty::F64 => Kind::F64,
            Ty::Bool => Kind::Bool,
            _ => return None,
        })
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Ty::Null => "nil".into(),
            Ty::Bool => "bool".into(),
            Ty::Int { .. } => "int".into(),
            Ty::F32 => "float32".into(),
            Ty::F64 => "float64".into(),
            Ty::Str => "str".into(),
            Ty::Bin => "bin".into(),
            Ty::Timestamp => "timestamp".into(),
            Ty::Ext => "ext".into(),
            Ty::Complex => "complex".into(),
            Ty::Nd { dt, shape, .. } if shape.is_empty() => format!("numpy {}", dt.to_dtype_str()),
            Ty::Nd { dt, shape, .. } => format!(
                "ndarray {} of {} dimension(s)",
                dt.to_dtype_str(),
                shape.len()
            ),
            Ty::List(t, _) => format!("list of {}", t.describe()),
            Ty::Struct(_) => "map".into(),
            Ty::Given(_) => "a given type".into(),
            Ty::Raw => "values of several types".into(),
            Ty::Map(k, v) => format!("map of {} to {}", k.describe(), v.describe()),
        }
    }

    /// Unify two observations of one column (SPEC §3: int and float widen to float64; other
    /// conflicts are errors naming both types).
    pub(crate) fn merge(self, other: Ty) -> Result<Ty> {
        self.merge_inner(other)
    }

    /// The columns (other than `known`) in which maps nested below the top level of two rows'
    /// types differ in their key sets (then some nested map lacked a key that another at its place
    /// had). Nil maps are not compared.
    pub(crate) fn nested_keys_differ(
        seen: &Ty,
        row: &Ty,
        known: &std::collections::BTreeSet<String>,
    ) -> Vec<String> {
        let (Ty::Struct(x), Ty::Struct(y)) = (seen, row) else {
            return Vec::new();
        };
        y.iter()
            .filter(|(k, t)| {
                !known.contains(*k) && x.get(*k).is_some_and(|s| Ty::keys_differ_deep(s, t))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// [`Ty::nested_keys_differ`] where `a` and `b` are themselves nested (their key sets count).
    pub(crate) fn keys_differ_deep(a: &Ty, b: &Ty) -> bool {
        match (a, b) {
            (Ty::Struct(x), Ty::Struct(y)) => {
                Ty::key_sets_differ(x, y) || Ty::fields_differ_deep(x, y)
            }
            (Ty::List(x, _), Ty::List(y, _)) => Ty::keys_differ_deep(x, y),
            _ => false,
        }
    }

    /// Whether two maps' types have other keys (one lacks a key the other has).
    pub(crate) fn key_sets_differ(x: &Columns, y: &Columns) -> bool {
        x.len() != y.len() || y.keys().any(|k| !x.contains_key(k))
    }

    fn fields_differ_deep(x: &Columns, y: &Columns) -> bool {
        y.iter()
            .any(|(k, t)| x.get(k).is_some_and(|s| Ty::keys_differ_deep(s, t)))
    }

    /// [`Ty::merge`] of a row into the rows so far; with `raw`, a top-level column whose values
    /// conflict (anywhere inside them) becomes [`Ty::Raw`] instead of an error: the column of a
    /// record, or the one column of the `values` layout.
    pub(crate) fn merge_with(self, other: Ty, raw: bool) -> Result<Ty> {
        let is_conflict = |e: &Error| matches!(e.kind(), ErrorKind::TypeConflict(_));
        match (self, other) {
            (Ty::Struct(mut a), Ty::Struct(b)) if raw => {
                for (k, v) in b {
                    match a.get_mut(&k) {
                        Some(slot) => {
                            let old = std::mem::replace(slot, Ty::Null);
                            *slot = match old.merge(v) {
                                Err(e) if is_conflict(&e) => Ty::Raw,
                                r => r.map_err(|e| e.prepend_path(&k))?,
                            };
                        }
                        None => {
                            a.insert(k, v);
                        }
                    }
                }
                Ok(Ty::Struct(a))
            }
            (a, b) => match a.merge(b) {
                Err(e) if raw && is_conflict(&e) => Ok(Ty::Raw),
                r => r,
            },
        }
    }

    fn merge_inner(self, other: Ty) -> Result<Ty> {
        use Ty::*;
        let conflict = |a: &Ty, b: &Ty| {
            Error::new(ErrorKind::TypeConflict(format!(
                "{} and {}",
                a.describe(),
                b.describe()
            )))
        };
        Ok(match (self, other) {
            (Given(a), Given(b)) => Given(a || b),
            (Given(a), _) | (_, Given(a)) => Given(a),
            (Raw, _) | (_, Raw) => Raw,
            (Null, t) | (t, Null) => t,
            (Int { big: b1, neg: n1 }, Int { big: b2, neg: n2 }) => {
                let (big, neg) = (b1 || b2, n1 || n2);
                if big && neg {
                    return Err(Error::new(ErrorKind::TypeConflict(
                        "integers above 2^63-1 and negative integers in one column".into(),
                    )));
                }
                Int { big, neg }
            }
            (Int { .. } | F32 | F64, F64)
            | (F64 | F32, Int { .. })
            | (F64, F32)
            | (Int { .. }, F32) => F64,
            (
                Nd {
                    dt: d1,
                    shape: s1,
                    kind,
                    widths: w1,
                },
                Nd {
                    dt: d2,
                    shape: s2,
                    widths: w2,
                    ..
                },
            ) => {
                // string arrays of different widths (`<U3`, `<U5`): one column at the widest
                let mut widths = w1 || w2;
                let (d1, d2) = match (d1.text_width(), d2.text_width()) {
                    (Some((u1, n1)), Some((u2, n2))) if u1 == u2 && n1 != n2 => {
                        widths = true;
                        let wide = d1.with_text_width(n1.max(n2));
                        (wide.clone(), wide)
                    }
                    // structured arrays whose string fields are sized by their data, or of
                    // another byte order: one column of the widest (the decoder lays rows out so)
                    _ if d1 != d2 => match d1.widest_struct(&d2) {
                        Some(wide) => (wide.clone(), wide),
                        None => (d1, d2),
                    },
                    _ => (d1, d2),
                };
                if crate::types::buffers::native(&d1) != crate::types::buffers::native(&d2) {
                    return Err(conflict(
                        &Nd {
                            dt: d1,
                            shape: s1,
                            kind,
                            widths,
                        },
                        &Nd {
                            dt: d2,
                            shape: s2,
                            kind,
                            widths,
                        },
                    ));
                }
                if s1.len() != s2.len() {
                    return Err(Error::new(ErrorKind::TypeConflict(format!(
                        "ndarrays of {} and {} dimensions in one column",
                        s1.len(),
                        s2.len()
                    ))));
                }
                let shape = s1
                    .iter()
                    .zip(&s2)
                    .map(|(a, b)| if a == b { *a } else { None })
                    .collect();
                Nd {
                    dt: d1,
                    shape,
                    kind,
                    widths,
                }
            }
            (List(a, n), List(b, m)) => List(Box::new(a.merge(*b)?), if n == m { n } else { None }),
            (Map(k1, v1), Map(k2, v2)) => Map(Box::new(k1.merge(*k2)?), Box::new(v1.merge(*v2)?)),
            // an empty map `{}` fits either kind of map
            (Map(k, v), Struct(f)) | (Struct(f), Map(k, v)) if f.is_empty() => Map(k, v),
            (Struct(mut a), Struct(b)) => {
                for (k, v) in b {
                    match a.get_mut(&k) {
                        Some(slot) => {
                            let old = std::mem::replace(slot, Null);
                            *slot = old.merge(v).map_err(|e| e.prepend_path(&k))?;
                        }
                        None => {
                            a.insert(k, v);
                        }
                    }
                }
                Struct(a)
            }
            // a plain value beside 0-d numpy values whose Arrow column holds it as it is
            (
                Nd {
                    dt,
                    shape,
                    kind,
                    widths,
                },
                p,
            )
            | (
                p,
                Nd {
                    dt,
                    shape,
                    kind,
                    widths,
                },
            ) if shape.is_empty() && p.plain_kind().is_some_and(|k| dt.takes_plain(k)) => Nd {
                dt,
                shape,
                kind,
                widths,
            },
            (a, b) if a == b => a,
            (a, b) => return Err(conflict(&a, &b)),
        })
    }

    /// The Arrow field for this column.
    pub(crate) fn to_field(&self, name: &str, opts: &InferOptions) -> Result<Field> {
        let mut md = HashMap::new();
        let t = match self {
            // replaced by the given field (`plan`)
            Ty::Null | Ty::Given(_) => DataType::Null,
            Ty::Raw => {
                md.insert(meta::KIND.to_string(), "msgpack".to_string());
                DataType::Binary
            }
            Ty::Bool => DataType::Boolean,
            Ty::Int { big: true, .. } => {
                // plain msgpack ints (not numpy uint64 scalars): the writer keeps them plain
                md.insert(meta::KIND.to_string(), "int".to_string());
                DataType::UInt64
            }
            Ty::Int { .. } => DataType::Int64,
            Ty::F32 => DataType::Float32,
            Ty::F64 => DataType::Float64,
            Ty::Str => DataType::Utf8,
            Ty::Bin => DataType::Binary,
            Ty::Timestamp => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            Ty::Ext => {
                md.insert(meta::KIND.to_string(), "ext".to_string());
                crate::types::arrow::ext_type()
            }
            Ty::Complex => {
                md.insert(meta::KIND.to_string(), "complex".to_string());
                NumpyDtype::parse("<c16")?.arrow_type()?
            }
            Ty::Nd {
                dt,
                shape,
                kind,
                widths,
            } => {
                md.insert(meta::DTYPE.to_string(), dt.to_dtype_str());
                if *widths {
                    md.insert(meta::WIDTHS.to_string(), "min".to_string());
                }
                md.insert(
                    meta::KIND.to_string(),
                    match (kind, dt) {
                        (_, NumpyDtype::Object) => "object",
                        (NdKind::Array, _) => "ndarray",
                        (NdKind::Scalar, _) => "scalar",
                    }
                    .to_string(),
                );
                let elem = match dt {
                    NumpyDtype::Object => match opts.object_arrays {
                        ObjectArrays::Raw => DataType::Binary,
                        ObjectArrays::Error => return Err(Error::new(ErrorKind::ObjectArray)),
                    },
                    _ => dt.arrow_type()?,
                };
                if matches!(dt, NumpyDtype::Object) {
                    // the pickle is kept whole: one Binary value per ndarray, its shape (where
                    // every row has the same) in metadata for the writer to give back
                    if !shape.is_empty() && shape.iter().all(|d| d.is_some()) {
                        md.insert(
                            meta::SHAPE.to_string(),
                            serde_json::json!(shape).to_string(),
                        );
                    }
                    elem
                } else {
                    if shape.iter().any(|d| d.is_none()) && shape.iter().any(|d| d.is_some()) {
                        md.insert(
                            meta::SHAPE.to_string(),
                            serde_json::json!(shape).to_string(),
                        );
                    }
                    tensor_type(elem, shape, opts.tensor, &mut md)?
                }
            }
            Ty::List(t, Some(n)) if opts.lists_array && *n > 0 && t.is_fixed_numbers() => {
                md.insert(meta::KIND.to_string(), "list".to_string());
                DataType::FixedSizeList(Arc::new(t.to_field("item", opts)?), *n as i32)
            }
            Ty::List(t, _) => DataType::List(Arc::new(t.to_field("item", opts)?)),
            Ty::Map(k, v) => {
                let key = k.to_field("key", opts)?.with_nullable(false);
                let value = v.to_field("value", opts)?;
                let entries = Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![key, value])),
                    false,
                );
                DataType::Map(Arc::new(entries), false)
            }
            Ty::Struct(fields) => DataType::Struct(
                fields
                    .iter()
                    .map(|(k, v)| v.to_field(k, opts))
                    .collect::<Result<Fields>>()?,
            ),
        };
        Ok(Field::new(name, t, true).with_metadata(md))
    }
}

/// Arrow type of a tensor column with this element type and per-axis shape.
pub(crate) fn tensor_type(
    elem: DataType,
    shape: &[Option<usize>],
    mode: TensorMode,
    md: &mut HashMap<String, String>,
) -> Result<DataType> {
    if shape.is_empty() {
        return Ok(elem);
    }
    // the canonical tensor types hold fixed-width numbers: pyarrow refuses to import one whose
    // elements are complex pairs, strings, structs or bools, so those stay nested lists
    let mode = if elem.is_numeric() {
        mode
    } else {
        TensorMode::Array
    };
    let fixed: Option<Vec<usize>> = shape.iter().copied().collect();
    match (mode, fixed) {
        (TensorMode::Array, Some(dims)) => {
            let mut t = elem;
            for &d in dims.iter().rev() {
                t = fixed_size_list(t, d)?;
            }
            Ok(t)
        }
        (TensorMode::Array, None) => {
            let mut t = elem;
            for _ in shape {
                t = list(t);
            }
            Ok(t)
        }
        (TensorMode::Extension, Some(dims)) => {
            let n = dims
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .unwrap_or(usize::MAX);
            md.insert(
                meta::EXTENSION_NAME.into(),
                "arrow.fixed_shape_tensor".into(),
            );
            md.insert(
                meta::EXTENSION_METADATA.into(),
                serde_json::json!({ "shape": dims }).to_string(),
            );
            fixed_size_list(elem, n)
        }
        (TensorMode::Extension, None) => {
            let ndim = shape.len();
            md.insert(
                meta::EXTENSION_NAME.into(),
                "arrow.variable_shape_tensor".into(),
            );
            md.insert(
                meta::EXTENSION_METADATA.into(),
                serde_json::json!({ "uniform_shape": shape }).to_string(),
            );
            Ok(DataType::Struct(Fields::from(vec![
                Field::new("data", list(elem), false),
                Field::new("shape", fixed_size_list(DataType::Int32, ndim)?, false),
            ])))
        }
    }
}

/// Options that affect inference.
#[derive(Debug, Clone)]
pub(crate) struct InferOptions {
    pub dialect: Dialect,
    pub npy_ext: Option<i8>,
    pub tensor: TensorMode,
    pub object_arrays: ObjectArrays,
    pub max_depth: usize,
    /// conflicts make [`Ty::Raw`] columns instead of errors
    pub raw_conflicts: bool,
    /// lists of numbers with one length per level become FixedSizeList ([`crate::Lists::Array`])
    pub lists_array: bool,
}

/// The top-level keys whose values are not inferred ([`Ty::Given`]): the columns overrides type
/// (`names`) and, in a read of some columns only (`only`), every other column, which is skipped
/// undecoded: a conflict in it is no error.
#[derive(Debug, Clone, Default)]
pub(crate) struct GivenKeys {
    pub names: std::collections::HashSet<String, foldhash::fast::RandomState>,
    pub only: Option<std::collections::HashSet<String, foldhash::fast::RandomState>>,
}

impl GivenKeys {
    /// (by hash: a projection of 65,535 columns made every key of every row a linear search)
    pub(crate) fn has(&self, key: &str) -> bool {
        self.names.contains(key) || self.only.as_ref().is_some_and(|o| !o.contains(key))
    }
}

/// Walks values and reports their [`Ty`]. Keeps a small cache of parsed dtypes.
pub(crate) struct Inferrer {
    pub opts: InferOptions,
    /// top-level keys whose type is given ([`Ty::Given`]): their values are skipped
    pub given: GivenKeys,
    dtypes: Vec<(Vec<u8>, NumpyDtype)>,
    /// ndarray headers already checked by [`Inferrer::fits_row`]
    headers: Vec<NdHeader>,
    /// some header holds a structured dtype match ([`Inferrer::forget_dtype_matches`])
    dtype_matched: bool,
    /// the keys of a record that fitted, for [`Inferrer::fits_row`] to compare the next ones with
    row_template: Option<RowTemplate>,
    /// top-level keys (column names) as first seen: `true` if that key was msgpack bin
    pub top_keys: FastMap<String, bool>,
    /// keys of maps nested in a column, by path, as first seen (bin or str)
    pub key_paths: key_paths::KeyPaths,
    /// [`Inferrer::map`] at depth 0 is a record: its keys are columns whose paths are tracked
    pub records: bool,
    /// `columns` layout: the columns whose value was first seen as a list (not an ndarray)
    pub list_columns: FastMap<String, bool>,
    /// an openpi `__ndarray__`/`__npgeneric__` map was seen (the file is written back so)
    pub openpi_seen: bool,
    /// how the msgpack-numpy maps seen were spelled (the file is written back so)
    pub spellings: SpellingSeen,
    /// records: whether maps nested in them are watched for absent keys ([`Ty::nested_keys_differ`])
    pub nested_track: bool,
    /// the columns in which a map nested in a record lacked a key another map at its place had:
    /// their keys were absent, not nil (written back so: [`crate::types::meta::MISSING_NESTED`])
    pub nested_absent: std::collections::BTreeSet<String>,
    /// per column of the rows so far (by index), whether it is in `nested_absent`, for the fast
    /// path, which knows columns by index ([`Inferrer::index_nested`])
    pub(crate) nested_flagged: Vec<bool>,
    /// `nested_absent` grew since `nested_flagged` was made
    pub(crate) nested_dirty: bool,
    /// the fast path: the column being walked is in `nested_absent`
    pub(crate) cur_flagged: bool,
    /// the slow path: a list inside the column being walked held maps of other key sets
    item_keys_differ: bool,
    /// the fast path: the record's column being walked (by index)
    pub(crate) cur_col: usize,
    /// per column of the records, the last given value skipped ([`crate::wire::skip_memo::SkipMemo`])
    pub(crate) skip_memos: Vec<crate::wire::skip_memo::SkipMemo>,
    /// `columns` layout: where the ranges of each list walked start ([`ListRanges`])
    pub list_ranges: ListRanges,
    /// the records' columns by name, for keys out of the first row's order: made for the
    /// columns at this address and of this many ([`Inferrer::column_of`])
    column_index: (usize, crate::wire::keys::KeyIndex),
}

/// The lists of `columns` maps cut into ranges of rows while their types were inferred, by the
/// position of each list's header: the rows of a range, and the position of each range's first
/// element followed by the list's end. The decode hands the ranges out from these without
/// walking the lists again.
pub(crate) type ListRanges = FastMap<usize, (usize, Vec<usize>)>;

impl Inferrer {
    pub(crate) fn new(opts: InferOptions) -> Self {
        Inferrer {
            opts,
            given: GivenKeys::default(),
            dtypes: Vec::new(),
            headers: Vec::new(),
            dtype_matched: false,
            row_template: None,
            top_keys: FastMap::default(),
            key_paths: Default::default(),
            nested_track: false,
            nested_absent: Default::default(),
            nested_flagged: Vec::new(),
            nested_dirty: false,
            cur_flagged: false,
            item_keys_differ: false,
            cur_col: 0,
            skip_memos: Vec::new(),
            records: false,
            list_columns: FastMap::default(),
            openpi_seen: false,
            spellings: SpellingSeen::default(),
            list_ranges: FastMap::default(),
            column_index: Default::default(),
        }
    }

    /// Note that column `name`'s nested maps had absent keys.
    pub(crate) fn flag_nested(&mut self, name: &str) {
        if !self.nested_absent.contains(name) {
            self.nested_absent.insert(name.to_string());
            self.nested_dirty = true;
        }
    }

    /// Note the columns of `row` whose nested maps' key sets differ from those of the rows before
    /// (`seen`): a map lacked a key another at its place had.
    pub(crate) fn note_nested_keys(&mut self, seen: &Ty, row: &Ty) {
        if self.nested_track {
            for k in Ty::nested_keys_differ(seen, row, &self.nested_absent) {
                self.flag_nested(&k);
            }
        }
    }

    /// After the rows' type (`seen`) changed: which of its columns the fast path finds flagged.
    pub(crate) fn index_nested(&mut self, seen: &Ty) {
        if let (true, Ty::Struct(cols)) = (std::mem::take(&mut self.nested_dirty), seen) {
            self.nested_flagged = cols
                .keys()
                .map(|k| self.nested_absent.contains(k))
                .collect();
        }
    }

    /// What an ndarray or numpy scalar map says of how the file is written back: its dialect
    /// (openpi's) and its spelling.
    pub(crate) fn note_form(&mut self, nd: &NdArray<'_>) {
        self.openpi_seen |= nd.openpi;
        if nd.spelled() {
            self.spellings.note(nd.spelling, !nd.scalar);
        }
    }

    pub(crate) fn dtype(&mut self, raw: &[u8], nd: &NdArray<'_>, base: u64) -> Result<NumpyDtype> {
        if let Some((_, d)) = self.dtypes.iter().find(|(r, _)| r == raw) {
            return Ok(d.clone());
        }
        let d = nd.parse_dtype(base + nd.type_pos as u64)?;
        // (an object dtype's meaning depends on `kind` too: not cached by its type bytes)
        if self.dtypes.len() < 16 && !matches!(d, NumpyDtype::Object) {
            self.dtypes.push((raw.to_vec(), d.clone()));
        }
        Ok(d)
    }

    /// Type of the value at the cursor (consumed).
    pub(crate) fn value(&mut self, c: &mut Cursor<'_>, depth: usize) -> Result<Ty> {
        // (the type this value makes is merged into the rows' so far, which then moves)
        self.forget_dtype_matches();
        if depth >= self.opts.max_depth {
            return Err(c.error(ErrorKind::TooDeep(self.opts.max_depth)));
        }
        Ok(match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                Ty::Null
            }
            Kind::Bool => {
                c.read_bool()?;
                Ty::Bool
            }
            Kind::Int => match c.read_int()? {
                Int::I(v) => Ty::Int {
                    big: false,
                    neg: v < 0,
                },
                Int::U(_) => Ty::Int {
                    big: true,
                    neg: false,
                },
            },
            Kind::F32 => {
                c.read_f32()?;
                Ty::F32
            }
            Kind::F64 => {
                c.read_f64()?;
                Ty::F64
            }
            Kind::Str => {
                c.read_str()?;
                Ty::Str
            }
            Kind::Bin => {
                c.read_str_or_bin()?;
                Ty::Bin
            }
            Kind::Ext if !is_special_ext(c, self.opts.dialect, self.opts.npy_ext) => {
                let p = c.pos();
                let (t, data) = c.read_ext()?;
                if t != -1 {
                    // any other type: its code and bytes, as Python's msgpack gives an ExtType
                    return Ok(Ty::Ext);
                }
                if !matches!(data.len(), 4 | 8 | 12) {
                    return Err(c.error_at(
                        p,
                        ErrorKind::InvalidMsgpack(format!(
                            "a timestamp (ext -1) of {} bytes: it has 4, 8 or 12",
                            data.len()
                        )),
                    ));
                }
                Ty::Timestamp
            }
            Kind::Array => {
                let n = c.read_array_len()?;
                let mut t = Ty::Null;
                for i in 0..n {
                    let p = c.offset();
                    let mark = self.key_paths.enter_item();
                    let v = self.value(c, depth + 1);
                    self.key_paths.leave(mark);
                    let v = v?;
                    if self.nested_track && self.records && !self.item_keys_differ {
                        self.item_keys_differ = Ty::keys_differ_deep(&t, &v);
                    }
                    // a conflict inside a value is the column's: it bubbles up to the top level
                    t = t
                        .merge(v)
                        .map_err(|e| e.at_offset(p).prepend_path(&format!("[{i}]")))?;
                }
                Ty::List(Box::new(t), Some(n))
            }
            Kind::Map | Kind::Ext => {
                let start = c.pos();
                match probe(
                    c,
                    self.opts.dialect,
                    self.opts.npy_ext,
                    self.opts.max_depth - depth,
                )? {
                    Some(Special::Complex(..)) => Ty::Complex,
                    Some(Special::Array(nd)) => {
                        self.note_form(&nd);
                        let dt = self.dtype(nd.type_raw, &nd, c.offset_of(0))?;
                        if let NumpyDtype::Object = dt {
                            if self.opts.object_arrays == ObjectArrays::Error {
                                return Err(c.error_at(start, ErrorKind::ObjectArray));
                            }
                        } else {
                            nd.check_len(&dt, c.offset_of(0))?;
                            dt.arrow_type()
                                .map_err(|e| e.at_offset(c.offset_of(nd.type_pos)))?;
                            // (an axis no Arrow list can hold: said here, where it is)
                            if let Some(&d) = nd.shape.iter().find(|&&d| i32::try_from(d).is_err())
                            {
                                return Err(c.error_at(
                                    start,
                                    ErrorKind::Layout(format!(
                                        "axis of length {d} is longer than a FixedSizeList can hold"
                                    )),
                                ));
                            }
                        }
                        Ty::Nd {
                            dt,
                            shape: nd.shape.iter().map(|&d| Some(d)).collect(),
                            kind: if nd.scalar {
                                NdKind::Scalar
                            } else {
                                NdKind::Array
                            },
                            widths: false,
                        }
                    }
                    None => self.map(c, depth)?,
                }
            }
        })
    }

    /// A column name ([`read_key`]), noting how it was first seen (str or bin).
    pub(crate) fn top_key<'a>(&mut self, c: &mut Cursor<'a>) -> Result<&'a str> {
        let bin = c.peek_kind()? == Kind::Bin;
        let key = read_key(c)?;
        if !self.top_keys.contains_key(key) {
            self.top_keys.insert(key.to_string(), bin);
        }
        Ok(key)
    }

    /// The field of column `name` of type `t`, tagged [`meta::KEY`] if its key was bin and
    /// [`meta::COLUMN`] if it was a list in a `columns` map.
    pub(crate) fn column_field(&self, name: &str, t: &Ty) -> Result<Field> {
        let f = self.key_paths.tag(t.to_field(name, &self.opts)?);
        let [bin_key, list] = self.column_tags(name);
        if !bin_key && !list {
            return Ok(f);
        }
        let mut md = f.metadata().clone();
        if bin_key {
            md.insert(meta::KEY.to_string(), "bin".to_string());
        }
        if list {
            md.insert(meta::COLUMN.to_string(), "list".to_string());
        }
        Ok(f.with_metadata(md))
    }

    /// Whether column `name`'s key was bin, and whether it was a list in a `columns` map: what
    /// [`Inferrer::column_field`] adds to the field of its type.
    pub(crate) fn column_tags(&self, name: &str) -> [bool; 2] {
        [
            self.top_keys.get(name) == Some(&true),
            self.list_columns.get(name) == Some(&true),
        ]
    }

    /// The type of a `values` row (or a blob) at `c`: [`Inferrer::value`], with the keys of the
    /// maps inside noted on paths under its column `value` (so bin keys are written back as bin).
    pub(crate) fn row_value(&mut self, c: &mut Cursor<'_>) -> Result<Ty> {
        self.key_paths.start("value");
        let t = self.value(c, 0);
        self.key_paths.stop();
        t
    }

    /// A value of a given column, skipped: [`Ty::Given`], noting whether it is an ndarray.
    pub(crate) fn given_value(&mut self, c: &mut Cursor<'_>) -> Result<Ty> {
        c.peek_kind()?;
        let nd = self.is_ndarray(c);
        c.skip(self.opts.max_depth)?;
        Ok(Ty::Given(nd))
    }

    /// Whether the value at `c` is an ndarray (a map or the npy extension that reads as one);
    /// the cursor does not move.
    pub(crate) fn is_ndarray(&self, c: &Cursor<'_>) -> bool {
        let mut d = c.clone();
        (matches!(d.peek_kind(), Ok(Kind::Map))
            || is_special_ext(&d, self.opts.dialect, self.opts.npy_ext))
            && matches!(
                probe(
                    &mut d,
                    self.opts.dialect,
                    self.opts.npy_ext,
                    self.opts.max_depth
                ),
                Ok(Some(Special::Array(_)))
            )
    }

    /// A user map (not an ndarray) at the cursor → Struct.
    pub(crate) fn map(&mut self, c: &mut Cursor<'_>, depth: usize) -> Result<Ty> {
        self.forget_dtype_matches();
        // a nested map keyed by integers is data, not a record: an Arrow Map
        if depth > 0 {
            let mut d = c.clone();
            if d.read_map_len()? > 0 && d.peek_kind()? == Kind::Int {
                return self.int_map(c, depth);
            }
        }
        let n = c.read_map_len()?;
        let mut fields = Columns::with_capacity_and_hasher(n.min(256), Default::default());
        for _ in 0..n {
            let kp = c.pos();
            let bin = c.peek_kind()? == Kind::Bin;
            let key = if depth == 0 {
                self.top_key(c)?
            } else {
                read_key(c)?
            };
            if fields.contains_key(key) {
                return Err(c.error_at(
                    kp,
                    ErrorKind::Key(format!("duplicate key {key:?} in one map")),
                ));
            }
            let t = if depth == 0 && self.given.has(key) {
                self.given_value(c)?
            } else {
                // a record's key is its column (the path starts there); a map inside a column,
                // or a `values` row's map (under the path `value`), notes its keys on the path
                let column = depth == 0 && self.records;
                let mark = if column {
                    self.key_paths.start(key);
                    None
                } else {
                    self.key_paths.enter_key(key, bin)
                };
                let t = self.value(c, depth + 1);
                if column {
                    self.key_paths.stop();
                } else {
                    self.key_paths.leave(mark);
                }
                if depth == 0 && std::mem::take(&mut self.item_keys_differ) {
                    self.flag_nested(key);
                }
                t.map_err(|e| e.prepend_path(key))?
            };
            fields.insert(key.to_string(), t);
        }
        Ok(Ty::Struct(fields))
    }

    /// A map whose keys are all integers: [`Ty::Map`]; a key of another type is an error at its
    /// byte.
    fn int_map(&mut self, c: &mut Cursor<'_>, depth: usize) -> Result<Ty> {
        // the keys of maps inside it are not msgpack keys of a struct
        let saved = self.key_paths.enter_untracked();
        let t = self.int_map_entries(c, depth);
        self.key_paths.leave_untracked(saved);
        t
    }

    fn int_map_entries(&mut self, c: &mut Cursor<'_>, depth: usize) -> Result<Ty> {
        let n = c.read_map_len()?;
        let (mut kt, mut vt) = (Ty::Null, Ty::Null);
        for _ in 0..n {
            let kp = c.pos();
            if c.peek_kind()? != Kind::Int {
                return Err(c.error_at(
                    kp,
                    ErrorKind::Key(
                        "a map mixes integer keys with keys of another type".to_string(),
                    ),
                ));
            }
            let k = self.value(c, depth + 1)?;
            kt = kt.merge(k).map_err(|e| e.at_offset(c.offset_of(kp)))?;
            let vp = c.pos();
            let v = self.value(c, depth + 1)?;
            vt = vt.merge(v).map_err(|e| e.at_offset(c.offset_of(vp)))?;
        }
        Ok(Ty::Map(Box::new(kt), Box::new(vt)))
    }
}

/// A map key: str, or bin holding valid UTF-8. Anything else is an error that names it.
pub(crate) fn read_key<'a>(c: &mut Cursor<'a>) -> Result<&'a str> {
    let p = c.pos();
    match c.peek_kind()? {
        Kind::Str | Kind::Bin => {
            let (b, _) = c.read_str_or_bin()?;
            std::str::from_utf8(b).map_err(|_| {
                c.error_at(
                    p,
                    ErrorKind::Key(format!(
                        "key {:?} is not valid UTF-8",
                        String::from_utf8_lossy(b)
                    )),
                )
            })
        }
        k => {
            let mut d = c.clone();
            let shown = match d.read_int() {
                Ok(Int::I(v)) => format!("{v}"),
                Ok(Int::U(v)) => format!("{v}"),
                Err(_) => format!("{k:?}").to_lowercase(),
            };
            Err(c.error_at(
                p,
                ErrorKind::Key(format!("map key {shown} is not a string")),
            ))
        }
    }
}
