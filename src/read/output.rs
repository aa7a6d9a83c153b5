//! The reader's output types, decided once when it is built: `schema_overrides` the layout did
//! not decode straight into, the types Polars can import, and the numpy extension that carries
//! field metadata through Polars; and each decoded batch converted to them.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, SchemaRef};

use super::Reader;
use crate::error::{Error, ErrorKind, Result};
use crate::types::arrow::cast_exact;
use crate::types::arrow::record_batch;
use crate::types::{extension, meta, polars_compatible_type};

impl Reader {
    /// The output types, decided once: columns named in `overrides` that the layout did not
    /// decode straight into their type (the `columns` layout, a given schema) are converted to
    /// it; with `polars`, every type Polars cannot import is mapped. `strict` (no projection):
    /// an override naming no column is an error.
    pub(super) fn output_types(
        mut self,
        overrides: Option<&Schema>,
        strict: bool,
        polars: bool,
    ) -> Result<Reader> {
        // fields by name, hashed: one column looked up in another schema's list each was
        // quadratic in a wide table
        let by_name = |s: &'_ Schema| -> std::collections::HashMap<String, arrow_schema::FieldRef> {
            s.fields()
                .iter()
                .map(|f| (f.name().clone(), f.clone()))
                .collect()
        };
        let over_at = overrides.map(by_name);
        if let (Some(o), true) = (overrides, strict && !self.schema.fields().is_empty()) {
            let have = by_name(&self.schema);
            if let Some(o) = o.fields().iter().find(|o| !have.contains_key(o.name())) {
                return Err(Error::new(ErrorKind::Key(format!(
                    "schema_overrides names column {:?}, which is not in the input; the columns are: {}",
                    o.name(),
                    self.schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                ))));
            }
        }
        self.decoded = self.schema.clone();
        let mut convert = Vec::with_capacity(self.schema.fields().len());
        let mut fields = Vec::with_capacity(self.schema.fields().len());
        for f in self.schema.fields() {
            let over = over_at.as_ref().and_then(|o| o.get(f.name()));
            let mut t = over.map_or_else(|| f.data_type().clone(), |o| o.data_type().clone());
            if polars {
                t = polars_compatible_type(&t);
            }
            if &t == f.data_type() {
                convert.push(None);
                fields.push(f.clone());
            } else {
                // an override replaces the numpy dtype the metadata described (a bin key stays
                // one); a Polars mapping keeps it, as the values are the same
                let mut g = f.as_ref().clone().with_data_type(t.clone());
                if over.is_some_and(|o| o.data_type() != f.data_type()) {
                    g = g.with_metadata(
                        f.metadata()
                            .iter()
                            .filter(|(k, _)| k.as_str() == meta::KEY)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect::<std::collections::HashMap<_, _>>(),
                    );
                }
                fields.push(Arc::new(g));
                convert.push(Some(t));
            }
        }
        if convert.iter().any(Option::is_some) {
            self.schema = Arc::new(Schema::new_with_metadata(
                fields,
                self.schema.metadata().clone(),
            ));
            self.convert = convert;
        }
        Ok(self)
    }

    /// A decoded batch in the output types (`safe: false`: a value that does not fit is an
    /// error, never a silent null).
    pub(super) fn converted(&self, b: RecordBatch) -> Result<RecordBatch> {
        if self.convert.is_empty() {
            return Ok(b);
        }
        let opts = arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        };
        let mut cols = Vec::with_capacity(b.num_columns());
        for ((c, t), f) in b
            .columns()
            .iter()
            .zip(&self.convert)
            .zip(self.schema.fields())
        {
            cols.push(match t {
                None => c.clone(),
                Some(t) => {
                    let out = cast_exact(c, t, None).map_err(|e| e.prepend_path(f.name()))?;
                    // a cast to a narrower float makes a number too big for it infinite
                    if infinities(out.as_ref()) > infinities(c.as_ref()) {
                        return Err(Error::new(ErrorKind::Inexact(format!(
                            "a number too big for {t} (it would become infinite)"
                        )))
                        .prepend_path(f.name()));
                    }
                    // into integers or bools, arrow-cast truncates (2.5 → 2, 3 → true): a value
                    // the cast back does not give again did not fit
                    if truncates(c.data_type(), t) {
                        let back = arrow_cast::cast_with_options(&out, c.data_type(), &opts).ok();
                        if back.is_none_or(|back| back.as_ref() != c.as_ref()) {
                            return Err(Error::new(ErrorKind::Inexact(format!(
                                "a value does not fit {t} exactly"
                            )))
                            .prepend_path(f.name()));
                        }
                    }
                    out
                }
            });
        }
        record_batch(&self.schema, cols, b.num_rows())
    }

    /// The output schema with its numpy facts in `msgpack_arrow.numpy` extension columns
    /// ([`extension::wrap`]). `given`: the schema the reader was given, the file's whole (a
    /// scan's first file), so every file and projection wraps alike.
    pub(super) fn numpy_extension(mut self, given: Option<SchemaRef>) -> Reader {
        let whole = given.unwrap_or_else(|| self.schema.clone());
        self.schema = Arc::new(extension::wrap(&self.schema, &whole));
        if self.convert.is_empty() {
            // the batches are given the wrapped schema (same types, more metadata)
            self.convert = vec![None; self.schema.fields().len()];
        }
        self
    }
}

/// The infinite floats among the values of `a`, at any depth (null slots included, on both sides
/// of a cast alike).
fn infinities(a: &dyn Array) -> usize {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float16Type, Float32Type, Float64Type};
    macro_rules! count {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .filter(|v| v.is_infinite())
                .count()
        };
    }
    match a.data_type() {
        DataType::Float16 => count!(Float16Type),
        DataType::Float32 => count!(Float32Type),
        DataType::Float64 => count!(Float64Type),
        DataType::List(_) => infinities(a.as_list::<i32>().values().as_ref()),
        DataType::LargeList(_) => infinities(a.as_list::<i64>().values().as_ref()),
        DataType::FixedSizeList(..) => infinities(a.as_fixed_size_list().values().as_ref()),
        DataType::Struct(_) => a
            .as_struct()
            .columns()
            .iter()
            .map(|c| infinities(c.as_ref()))
            .sum(),
        _ => 0,
    }
}

/// Whether a cast from `from` to `to` may change a value without failing: numbers into integers
/// (a float's fraction dropped) or into bools (any nonzero number true), at any list depth.
fn truncates(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    fn leaf(t: &T) -> &T {
        match t {
            T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => leaf(f.data_type()),
            t => t,
        }
    }
    let (a, b) = (leaf(from), leaf(to));
    match b {
        T::Boolean => a.is_numeric(),
        b if b.is_integer() => a.is_floating(),
        _ => false,
    }
}
