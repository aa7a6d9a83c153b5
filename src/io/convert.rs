//! Converting files: inputs in any format read as one table, written to one output that appears
//! only when complete (an [`AtomicFile`](super::AtomicFile)), in the format its extension names;
//! or to standard output (`-`), as encoded, in the format named.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;

use crate::types::arrow::{record_batch, same_but_metadata};
use crate::types::extension::retype;
use arrow_schema::Schema;

use super::compress::{is_stdio, Codec};
use super::sink::{spool_dir_for, Sink, SinkOptions};
use super::{open_table, Compression, Format, Output, ReadOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, Layout};

/// How [`convert`] writes; how it reads is a [`ReadOptions`].
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// Output format (default `None`: from the output's extension).
    pub format: Option<Format>,
    /// Parquet / Feather compression (default: zstd for Parquet, none for Feather).
    pub compression: Option<Compression>,
    /// msgpack outputs: the layout (default `None`: the one the input was read with).
    pub output_layout: Option<Layout>,
    /// msgpack outputs: align ndarray payloads to 64 bytes (default false).
    pub aligned: bool,
    /// msgpack outputs: the form of ndarrays (default `None`: the dialect the input was read in).
    pub output_dialect: Option<Dialect>,
    /// Skip the fsync of a local output (default false: the output is durable once `convert`
    /// returns; see [`crate::io::AtomicFile::with_fsync`] for what that costs).
    pub no_fsync: bool,
    /// msgpack outputs: write a record index beside the output ([`super::index`]; default
    /// false). An output that had one gets a new one either way.
    pub index: bool,
}

/// What [`convert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// Rows written.
    pub rows: u64,
    /// Inputs read.
    pub inputs: usize,
    /// Inputs cut short whose complete records were kept ([`crate::OnTruncated::Keep`]).
    pub truncated: Vec<(PathBuf, crate::Truncation)>,
    /// A msgpack output's columns whose time zone was dropped (numpy's datetime64 has none: the
    /// UTC values are written), with the zone.
    pub zones_dropped: Vec<(String, String)>,
}

/// Bytes of Arrow data written between two `on_batch` calls of [`convert`].
const SLICE_BYTES: usize = 32 << 20;

/// How many rows of `batch` hold about `bytes` of data (at least 1): for writing a big batch in
/// slices. Counts the data the rows use, not the buffers they sit in (a zero-copy column of a
/// mapped file sits in the whole mapping).
pub fn rows_per_slice(batch: &RecordBatch, bytes: usize) -> usize {
    let n = batch.num_rows();
    let size = crate::types::arrow::data_bytes(batch);
    let per_row = size / n.max(1);
    (bytes / per_row.max(1)).clamp(1, n.max(1))
}

fn usage(msg: String) -> Error {
    Error::new(ErrorKind::Usage(msg))
}

/// The output format and msgpack codec `output` and `opts` ask for; an error when they disagree.
pub fn output_format(output: &Path, opts: &ConvertOptions) -> Result<(Format, Option<Codec>)> {
    if is_stdio(output) {
        // `-`: standard output, written as encoded (a pipe has no extension, and no place for
        // an index file beside it)
        let Some(format) = opts.format else {
            return Err(usage(
                "standard output (-) has no extension to tell the format: give --format (parquet, feather, npz or msgpack)".into(),
            ));
        };
        if opts.index {
            return Err(usage(
                "--index writes a file beside the output; standard output (-) has none".into(),
            ));
        }
        return check_format(format, None, opts, output);
    }
    let named = Format::from_path(output);
    let format = match (opts.format, named) {
        (Some(f), Some(n)) if f != n => {
            return Err(usage(format!(
                "{}: --format {f} contradicts the extension, which names {n}; rename the output or drop --format",
                output.display()
            )))
        }
        (Some(f), _) | (None, Some(f)) => f,
        (None, None) => {
            return Err(usage(format!(
                "cannot tell the output format from {:?}; use an extension (.parquet, .feather, .arrow, .npz, .msgpack) or --format",
                output.display().to_string()
            )))
        }
    };
    check_format(format, Codec::from_path(output), opts, output)
}

/// Refuse options that do not apply to `format` (written to `output`).
fn check_format(
    format: Format,
    codec: Option<Codec>,
    opts: &ConvertOptions,
    output: &Path,
) -> Result<(Format, Option<Codec>)> {
    SinkOptions {
        compression: opts.compression,
        codec,
        ..SinkOptions::new(format)
    }
    .check()
    .map_err(|e| e.in_file(output))?;
    if format != Format::Msgpack {
        if opts.aligned {
            return Err(usage(format!(
                "--aligned applies to msgpack outputs only, not {format}"
            )));
        }
        if opts.output_layout.is_some() {
            return Err(usage(format!(
                "--output-layout applies to msgpack outputs only, not {format}"
            )));
        }
        if opts.output_dialect.is_some() {
            return Err(usage(format!(
                "--output-dialect applies to msgpack outputs only, not {format}"
            )));
        }
    }
    Ok((format, codec))
}

/// Whether two files' schemas can go into one output: same column names in the same order, same
/// types (nested field names aside). Returns what differs.
pub fn schema_difference(a: &Schema, b: &Schema) -> Option<String> {
    let names = |s: &Schema| {
        s.fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>()
    };
    if names(a) != names(b) {
        return Some(format!(
            "its columns [{}] differ from [{}]",
            names(b).join(", "),
            names(a).join(", ")
        ));
    }
    for (fa, fb) in a.fields().iter().zip(b.fields()) {
        // (`equals_datatype` looks past nested field names, which a list's items may differ in,
        // but a struct's fields are its keys: other keys are another type)
        if !same_but_metadata(fa.data_type(), fb.data_type()) {
            return Some(format!(
                "column {:?} is {} there but {} here",
                fa.name(),
                fa.data_type(),
                fb.data_type()
            ));
        }
    }
    None
}

/// A batch of a later file in the first file's `schema`, which [`schema_difference`] found it
/// to have: they may differ in metadata or nested field names only (nested field metadata too),
/// so the same buffers are put in the first file's types.
pub fn in_schema(batch: RecordBatch, schema: &arrow_schema::SchemaRef) -> Result<RecordBatch> {
    if batch.schema() == *schema {
        return Ok(batch);
    }
    let cols = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| retype(c, f.data_type()))
        .collect();
    record_batch(schema, cols, batch.num_rows())
}

/// A column name given twice would make an output that Polars and pyarrow refuse to read.
pub fn check_unique_columns(schema: &Schema) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for f in schema.fields() {
        if !seen.insert(f.name()) {
            return Err(usage(format!(
                "column {:?} is selected twice; an output cannot hold two columns of one name",
                f.name()
            )));
        }
    }
    Ok(())
}

/// Convert `inputs` (read as one table: same columns and types) into `output`. `on_batch` is
/// called after each batch with the input it came from (for progress reports, and to stop: an
/// error it returns ends the conversion). The output appears only when complete; on any error
/// it is left as it was. `-` is standard output, written as the output is encoded.
pub fn convert(
    inputs: &[PathBuf],
    output: &Path,
    read: &ReadOptions,
    opts: &ConvertOptions,
    on_batch: &mut dyn FnMut(&Path) -> Result<()>,
) -> Result<Converted> {
    let (format, codec) = output_format(output, opts)?;
    if opts.index {
        super::index::check_indexable(output, format, codec.is_some())?;
    }
    let Some(first_path) = inputs.first() else {
        return Err(usage("no input given".into()));
    };
    let first = open_table(first_path, read).map_err(|e| e.in_file(first_path))?;
    let schema = first.schema.clone();
    check_unique_columns(&schema)?;
    let layout = match opts.output_layout {
        Some(l) => l,
        // Auto: the layout recorded in the schema metadata (what the reader used), else records.
        None if inputs.iter().any(|p| is_msgpack(p, read)) => Layout::Auto,
        None => read.reader.layout(),
    };
    let sink_opts = SinkOptions {
        compression: opts.compression,
        codec,
        layout,
        aligned: opts.aligned,
        dialect: opts.output_dialect.unwrap_or_default(),
        // spilled columns go beside a local output (same file system); a URL's beside nothing
        spool_dir: (!super::is_url(output) && !is_stdio(output)).then(|| spool_dir_for(output)),
        ..SinkOptions::new(format)
    };
    if format == Format::Npz && (super::is_url(output) || is_stdio(output)) {
        // the NPZ writer goes back to patch its entries: staged locally, then uploaded (or
        // written out) whole
        return convert_staged(inputs, output, read, opts, on_batch);
    }
    let mut file = Output::create(output, &read.storage)?.with_fsync(!opts.no_fsync);
    let mut sink =
        Sink::try_new(&mut file, schema.clone(), &sink_opts).map_err(|e| e.in_file(output))?;
    let mut rows = 0u64;
    let mut truncated = Vec::new();
    let mut pending = Some(first);
    let mut joined = Joined::default();
    let mut ahead = std::collections::VecDeque::new();
    for (i, path) in inputs.iter().enumerate() {
        if ahead.is_empty() && pending.is_none() {
            ahead.extend(read_small_run(&inputs[i..], read));
        }
        let table = match pending.take() {
            Some(t) => t,
            None => match ahead.pop_front() {
                Some(t) => t,
                None => open_table(path, read),
            }
            .map_err(|e| e.in_file(path))?,
        };
        if i > 0 {
            if let Some(diff) = schema_difference(&schema, &table.schema) {
                // inputs that differ as rows of one file may: all of them again, typed together
                // (nothing of this attempt is kept: the output is not committed)
                if let Some(read) = types_together(inputs, read)? {
                    drop((table, joined, ahead, sink));
                    drop(file);
                    return convert(inputs, output, &read, opts, on_batch);
                }
                return Err(usage(format!(
                    "schema differs from the first input {}: {diff}",
                    first_path.display()
                ))
                .in_file(path));
            }
        }
        for batch in table.batches {
            let batch = batch.map_err(|e| e.in_file(path))?;
            let batch = in_schema(batch, &schema).map_err(|e| e.in_file(path))?;
            rows += batch.num_rows() as u64;
            // Feather: the small batches of small inputs are joined before they are written (a
            // record batch per 12 KB input made a 2,000-file output of 2,000 batches)
            if format == Format::Ipc {
                joined
                    .push(&schema, batch, &mut |b| sink.write(b))
                    .map_err(|e| e.in_file(output))?;
                on_batch(path)?;
                continue;
            }
            // Parquet (compressing, the slow writer) gets a big batch in slices of about
            // SLICE_BYTES, so `on_batch` (progress, and a Ctrl-C check) runs often whatever the
            // batch size; the others write a batch in a fraction of a second, and slices would
            // only cost them (more IPC record batches: 1.2x slower measured on a 316 MB dump)
            let n = batch.num_rows();
            let step = if format == Format::Parquet {
                rows_per_slice(&batch, SLICE_BYTES)
            } else {
                n.max(1)
            };
            let mut at = 0;
            loop {
                let k = step.min(n - at);
                sink.write(&batch.slice(at, k))
                    .map_err(|e| e.in_file(output))?;
                on_batch(path)?;
                at += k;
                if at >= n {
                    break;
                }
            }
        }
        if let Some(t) = table.truncation.lock().ok().and_then(|t| *t) {
            truncated.push((path.clone(), t));
        }
    }
    joined
        .flush(&schema, &mut |b| sink.write(b))
        .map_err(|e| e.in_file(output))?;
    sink.finish().map_err(|e| e.in_file(output))?;
    super::index::commit_with_index(file, output, format, codec.is_some(), opts.index)?;
    let zones_dropped = if format == Format::Msgpack {
        zoned_columns(&schema)
    } else {
        Vec::new()
    };
    Ok(Converted {
        rows,
        inputs: inputs.len(),
        truncated,
        zones_dropped,
    })
}

/// Small batches held to be written as one, up to [`JOIN_ROWS`] rows or [`JOIN_BYTES`] of Arrow
/// data; a batch of a sixteenth of either or more is written as it is (joining big batches
/// would only copy them).
#[derive(Default)]
struct Joined {
    held: Vec<RecordBatch>,
    rows: usize,
    bytes: usize,
}

const JOIN_ROWS: usize = 65_536;
const JOIN_BYTES: usize = 16 << 20;

impl Joined {
    fn push(
        &mut self,
        schema: &arrow_schema::SchemaRef,
        batch: RecordBatch,
        write: &mut dyn FnMut(&RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let bytes = batch.get_array_memory_size();
        if batch.num_rows() >= JOIN_ROWS / 16 || bytes >= JOIN_BYTES / 16 {
            self.flush(schema, write)?;
            return write(&batch);
        }
        self.rows += batch.num_rows();
        self.bytes += bytes;
        self.held.push(batch);
        if self.rows >= JOIN_ROWS || self.bytes >= JOIN_BYTES {
            self.flush(schema, write)?;
        }
        Ok(())
    }

    fn flush(
        &mut self,
        schema: &arrow_schema::SchemaRef,
        write: &mut dyn FnMut(&RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let held = std::mem::take(&mut self.held);
        (self.rows, self.bytes) = (0, 0);
        match held.len() {
            0 => Ok(()),
            1 => write(&held[0]),
            _ => write(&arrow_select::concat::concat_batches(schema, &held)?),
        }
    }
}

/// Inputs this small are decoded with their neighbours, at once on the thread pool, at most
/// [`SMALL_RUN_FILES`] or [`SMALL_RUN_BYTES`] a run.
const SMALL_INPUT: u64 = 1 << 20;
const SMALL_RUN_FILES: usize = 1024;
const SMALL_RUN_BYTES: u64 = 16 << 20;

/// The tables of the small local files that `inputs` starts with (two or more; else none),
/// decoded at once on the thread pool, in order: each holds its decoded batches (up to its
/// first error, which it then gives). Why: one file at a time, 2,000 files of 12 KB took four
/// times one file of their rows, opening and typing each alone on one core.
fn read_small_run(inputs: &[PathBuf], read: &ReadOptions) -> Vec<Result<super::Table>> {
    use rayon::prelude::*;
    let mut total = 0;
    let run = inputs
        .iter()
        .take(SMALL_RUN_FILES)
        .take_while(|p| {
            // (a compressed file's size says nothing of what it holds)
            let local = !is_stdio(p) && !super::is_url(p) && Codec::from_path(p).is_none();
            match std::fs::metadata(p) {
                Ok(m) if local && m.is_file() && m.len() < SMALL_INPUT => {
                    total += m.len();
                    total <= SMALL_RUN_BYTES
                }
                _ => false,
            }
        })
        .count();
    if run < 2 {
        return Vec::new();
    }
    inputs[..run]
        .par_iter()
        .map(|p| {
            let mut t = open_table(p, read)?;
            let mut batches = Vec::new();
            for b in t.batches.by_ref() {
                let failed = b.is_err();
                batches.push(b);
                if failed {
                    break;
                }
            }
            t.batches = Box::new(batches.into_iter());
            Ok(t)
        })
        .collect()
}

/// The top-level columns with a time zone that a msgpack output drops: every Timestamp with one,
/// but Timestamp(ns, UTC), which is written as the msgpack timestamp.
fn zoned_columns(schema: &arrow_schema::Schema) -> Vec<(String, String)> {
    schema
        .fields()
        .iter()
        .filter_map(|f| match f.data_type() {
            arrow_schema::DataType::Timestamp(u, Some(tz))
                if !(*u == arrow_schema::TimeUnit::Nanosecond
                    && crate::write::access::is_utc(tz)) =>
            {
                Some((f.name().clone(), tz.to_string()))
            }
            _ => None,
        })
        .collect()
}

/// [`convert`] into a local temporary file, then uploaded to the URL `output` whole (a multipart
/// upload, aborted on any failure: the previous object stays as it was).
fn convert_staged(
    inputs: &[PathBuf],
    output: &Path,
    read: &ReadOptions,
    opts: &ConvertOptions,
    on_batch: &mut dyn FnMut(&Path) -> Result<()>,
) -> Result<Converted> {
    let dir = tempfile::tempdir()?;
    let name = Some(output)
        .filter(|o| !is_stdio(o))
        .and_then(Path::file_name);
    let local = dir.path().join(name.unwrap_or_else(|| "out".as_ref()));
    let done = convert(inputs, &local, read, opts, on_batch)?;
    let mut out = Output::create(output, &read.storage)?;
    std::io::copy(&mut std::fs::File::open(&local)?, &mut out)?;
    out.commit()?;
    Ok(done)
}

/// Where a later input does not fit the first one's schema: `read` with the schema of every
/// input read as one file ([`super::unify`]), as types inferred from rows; `None` where that
/// cannot help (a schema or overrides given, an input not msgpack, one schema after all).
fn types_together(inputs: &[PathBuf], read: &ReadOptions) -> Result<Option<ReadOptions>> {
    if read.reader.types_given() || !inputs.iter().all(|p| is_msgpack(p, read)) {
        return Ok(None);
    }
    // (each input walked for its types alone, no progress counted)
    let quiet = ReadOptions {
        progress: None,
        ..read.clone()
    };
    let schemas = inputs
        .iter()
        .map(|p| {
            let t = open_table(p, &quiet).map_err(|e| e.in_file(p))?;
            Ok((p.clone(), t.schema))
        })
        .collect::<Result<Vec<_>>>()?;
    let Some(together) = super::unify::unify_schemas(&schemas, &|name| {
        format!("--schema-overrides {name}=TYPE gives one")
    })?
    else {
        return Ok(None);
    };
    let reader = read
        .reader
        .clone()
        .with_schema(std::sync::Arc::new(together))
        .with_schema_inferred(true);
    Ok(Some(ReadOptions {
        reader,
        ..read.clone()
    }))
}

fn is_msgpack(p: &Path, read: &ReadOptions) -> bool {
    read.format
        .map(|f| f == Format::Msgpack)
        .unwrap_or_else(|| {
            Format::detect(p)
                .map(|f| f == Format::Msgpack)
                .unwrap_or(true)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ConvertOptions {
        ConvertOptions::default()
    }

    #[test]
    fn the_output_format_comes_from_the_name_and_contradictions_are_refused() {
        let f = |p: &str, o: &ConvertOptions| output_format(Path::new(p), o);
        assert_eq!(f("x.parquet", &opts()).unwrap(), (Format::Parquet, None));
        assert_eq!(
            f("x.msgpack.zst", &opts()).unwrap(),
            (Format::Msgpack, Some(Codec::Zstd))
        );
        let npz = ConvertOptions {
            format: Some(Format::Npz),
            ..opts()
        };
        let e = f("x.parquet", &npz).unwrap_err().to_string();
        assert!(e.contains("contradicts the extension"), "{e}");
        assert_eq!(f("x.out", &npz).unwrap().0, Format::Npz);
        let aligned = ConvertOptions {
            aligned: true,
            ..opts()
        };
        let e = f("x.parquet", &aligned).unwrap_err().to_string();
        assert!(
            e.contains("--aligned applies to msgpack outputs only"),
            "{e}"
        );
        let layout = ConvertOptions {
            output_layout: Some(Layout::Columns),
            ..opts()
        };
        let e = f("x.feather", &layout).unwrap_err().to_string();
        assert!(e.contains("--output-layout applies"), "{e}");
        assert!(f("x.parquet.gz", &opts()).is_err());
        assert!(f("-", &opts()).is_err());
        assert!(f("x.csv", &opts()).is_err());
    }

    #[test]
    fn slices_count_the_rows_data_not_the_buffers_they_sit_in() {
        use arrow_array::Int64Array;
        use arrow_schema::{DataType, Field};
        let a = Int64Array::from_iter_values(0..1_000_000);
        let s = std::sync::Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let b = RecordBatch::try_new(s, vec![std::sync::Arc::new(a)]).unwrap();
        assert_eq!(rows_per_slice(&b, 8 << 10), 1024);
        // a slice of 100 rows of that 8 MB buffer: still 8 bytes a row
        assert_eq!(rows_per_slice(&b.slice(10, 100), 400), 50);
        assert_eq!(rows_per_slice(&b.slice(0, 10), 1 << 20), 10);
    }

    #[test]
    fn a_column_given_twice_is_refused() {
        use arrow_schema::{DataType, Field};
        let s = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("id", DataType::Int64, true),
        ]);
        let e = check_unique_columns(&s).unwrap_err().to_string();
        assert!(e.contains("\"id\" is selected twice"), "{e}");
    }
}
