//! `schema` and `head`: what a file holds, as text.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{Field, Schema, SchemaRef};

use super::{at, open, CliResult, ReadArgs};
use crate::io::{open_table, Format, ReadOptions, Table};
use crate::types::arrow::record_batch;
use crate::types::{meta, short_name};

fn layout_line(t: &Table) -> Option<String> {
    let layout = t.layout?;
    Some(match &t.layout_reason {
        Some(r) if !r.is_empty() => format!("layout: {layout} ({r})\n"),
        _ => format!("layout: {layout}\n"),
    })
}

fn describe_field(f: &Field) -> String {
    let mut s = format!("{}: {}", f.name(), short_name(f));
    if !f.is_nullable() {
        s.push_str(" not null");
    }
    let md = f.metadata();
    if let Some(d) = md.get(meta::DTYPE) {
        s.push_str(&format!("  {}={d}", meta::DTYPE));
    }
    if let Some(x) = md.get(meta::EXTENSION_NAME) {
        s.push_str(&format!("  {}={x}", meta::EXTENSION_NAME));
        if let Some(m) = md.get(meta::EXTENSION_METADATA) {
            s.push_str(&format!(" {m}"));
        }
    }
    s
}

/// Open a table; a type conflict (under the default `--conflicts error`) is shown rather than
/// fatal: the table is opened again with the conflicting columns as raw msgpack, and the conflict
/// (the types found, and where) is returned to be printed.
fn open_showing_conflicts(path: &Path, opts: &ReadOptions) -> CliResult<(Table, Option<String>)> {
    match open_table(path, opts) {
        Err(e) if matches!(e.kind(), crate::ErrorKind::TypeConflict(_)) => {
            let shown = e.to_string();
            let mut raw = opts.clone();
            raw.reader = raw.reader.with_conflicts(crate::Conflicts::Binary);
            Ok((open(path, &raw)?, Some(shown)))
        }
        r => Ok((r.map_err(at(path))?, None)),
    }
}

/// The lines above a schema or a table: a type conflict shown instead of failing, the format
/// if not msgpack, the layout.
fn preamble(t: &Table, conflict: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(c) = conflict {
        text.push_str(&format!("note: {c}\n"));
    }
    if t.format != Format::Msgpack {
        text.push_str(&format!("format: {}\n", t.format));
    }
    text.push_str(&layout_line(t).unwrap_or_default());
    text
}

pub(super) fn schema_text(input: &str, read: &ReadArgs) -> CliResult<String> {
    let path = Path::new(input);
    let (t, conflict) = open_showing_conflicts(path, &read.options(65536))?;
    let mut text = preamble(&t, conflict.as_deref());
    if let Some(n) = t.num_rows {
        text.push_str(&format!("rows: {n}\n"));
    }
    text.push_str(&format!("columns: {}\n", t.schema.fields().len()));
    for f in t.schema.fields() {
        text.push_str(&format!("  {}\n", describe_field(f)));
    }
    Ok(text)
}

pub(super) fn head_text(input: &str, n: usize, width: usize, read: &ReadArgs) -> CliResult<String> {
    let path = Path::new(input);
    let mut opts = read.options(n.clamp(1, 65536));
    // the file is not walked past the rows shown
    let limit = opts.reader.n_rows().map_or(n, |m| m.min(n));
    opts.reader = opts.reader.with_n_rows(Some(limit));
    let (t, conflict) = open_showing_conflicts(path, &opts)?;
    let mut text = preamble(&t, conflict.as_deref());
    let schema = t.schema.clone();
    let t_rows = t.num_rows;
    let t_cut = t.truncation.clone();
    let mut batches = Vec::new();
    let mut rows = 0;
    if n > 0 {
        for b in t.batches {
            let b = b.map_err(at(path))?;
            rows += b.num_rows();
            batches.push(b);
            if rows >= n {
                break;
            }
        }
    }
    if let Some(t) = t_cut.lock().ok().and_then(|t| *t) {
        eprintln!("warning: {}: {t}", path.display());
    }
    let shown = rows.min(n);
    let table = format_table(&schema, &batches, shown, width)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    text.push_str(&table);
    text.push('\n');
    text.push_str(&match t_rows {
        Some(0) => "(0 rows)\n".to_string(),
        Some(total) => format!(
            "({shown} of {total} row{})\n",
            if total == 1 { "" } else { "s" }
        ),
        None if shown == 0 => "(0 rows)\n".to_string(),
        None => format!("({shown} row{} shown)\n", if shown == 1 { "" } else { "s" }),
    });
    Ok(text)
}

/// The first `n` rows as a text table, each cell cut to `width` characters.
fn format_table(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    n: usize,
    width: usize,
) -> Result<String, arrow_schema::ArrowError> {
    use arrow_cast::display::{ArrayFormatter, FormatOptions};
    let opts = FormatOptions::default().with_null("null");
    let mut cells: Vec<Vec<Option<String>>> = vec![Vec::with_capacity(n); schema.fields().len()];
    let mut left = n;
    for b in batches {
        if left == 0 {
            break;
        }
        let take = left.min(b.num_rows());
        for (c, col) in b.columns().iter().enumerate() {
            let f = ArrayFormatter::try_new(col.as_ref(), &opts)?;
            for i in 0..take {
                let s = f.value(i).to_string();
                cells[c].push(Some(cut(&s, width)));
            }
        }
        left -= take;
    }
    // A table of strings, headed by "name\ntype" so the types show too.
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            Field::new(
                format!("{}\n{}", f.name(), cut(&short_name(f), width)),
                arrow_schema::DataType::Utf8,
                true,
            )
        })
        .collect();
    let cols: Vec<ArrayRef> = cells
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as ArrayRef)
        .collect();
    let table = record_batch(&Arc::new(Schema::new(fields)), cols, n)?;
    Ok(arrow_cast::pretty::pretty_format_batches(&[table])?.to_string())
}

pub(super) fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
    t.push('…');
    t
}
