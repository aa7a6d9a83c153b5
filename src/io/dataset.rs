//! Converting many files into a dataset directory: one output per input, in parallel, resumable
//! (outputs appear atomically, so a re-run skips what is complete), optionally hive-partitioned
//! by a column (`dir/COLUMN=value/<input>.parquet`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::UInt32Array;

use crate::types::arrow::record_batch;
use arrow_schema::DataType;

use super::convert::{check_unique_columns, convert, ConvertOptions};
use super::sink::{Sink, SinkOptions};
use super::{open_table, AtomicFile, Format, ReadOptions};
use crate::error::{Error, ErrorKind, Result};

/// What [`convert_dataset`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DatasetReport {
    /// Inputs converted in this run.
    pub converted: usize,
    /// Inputs skipped because their output was already complete.
    pub skipped: usize,
}

/// Options of [`convert_dataset`] beyond [`ConvertOptions`].
#[derive(Debug, Clone, Default)]
pub struct DatasetOptions {
    /// Output format (default Parquet; partitioned datasets: Parquet or Feather).
    pub format: Option<Format>,
    /// Partition by this column's values (hive style).
    pub partition_by: Option<String>,
    /// Convert again inputs whose output is complete (default: skip them).
    pub overwrite: bool,
}

fn usage(msg: String) -> Error {
    Error::new(ErrorKind::Usage(msg))
}

/// The name of an input without its directory and its `.msgpack[.zst]`-style extensions.
pub fn stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut s = name.as_str();
    for ext in [
        ".zst", ".gz", ".lz4", ".msgpack", ".mpk", ".parquet", ".pq", ".feather", ".arrow", ".ipc",
        ".npz",
    ] {
        s = s.strip_suffix(ext).unwrap_or(s);
    }
    s.to_string()
}

/// Where a dataset records how it is laid out, so a re-run with another layout cannot mix files.
const STATE_DIR: &str = ".msgpack-arrow";
const LAYOUT_FILE: &str = "layout";

/// Convert each input into `dir`, a file per core at a time (each decoded on one thread).
pub fn convert_dataset(
    inputs: &[PathBuf],
    dir: &Path,
    read: &ReadOptions,
    convert_opts: &ConvertOptions,
    opts: &DatasetOptions,
) -> Result<DatasetReport> {
    use rayon::prelude::*;
    let fmt = opts.format.unwrap_or(Format::Parquet);
    let ext = match fmt {
        Format::Parquet => "parquet",
        Format::Ipc => "arrow",
        Format::Npz => "npz",
        Format::Msgpack => "msgpack",
    };
    if opts.partition_by.is_some() && !matches!(fmt, Format::Parquet | Format::Ipc) {
        return Err(usage(
            "--partition-by writes parquet or feather files".into(),
        ));
    }
    let mut seen = std::collections::HashMap::new();
    for p in inputs {
        if let Some(other) = seen.insert(stem(p), p) {
            return Err(usage(format!(
                "{} and {} would write the same output {}",
                other.display(),
                p.display(),
                stem(p)
            )));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
    let state = dir.join(STATE_DIR);
    let layout = match &opts.partition_by {
        Some(c) => format!("{ext} partitioned by {c}\n"),
        None => format!("{ext}\n"),
    };
    check_layout(
        dir,
        &state,
        &layout,
        ext,
        opts.partition_by.as_deref(),
        opts.overwrite,
    )?;
    let mut read = read.clone();
    read.reader = read.reader.with_threads(Some(1));
    let results: Vec<Result<bool>> = inputs
        .par_iter()
        .map(|input| {
            let stem = stem(input);
            match &opts.partition_by {
                None => {
                    // the output appears only when complete (AtomicFile): existing means done
                    let target = dir.join(format!("{stem}.{ext}"));
                    if target.exists() && !opts.overwrite {
                        return Ok(false);
                    }
                    let co = ConvertOptions {
                        format: Some(fmt),
                        ..convert_opts.clone()
                    };
                    convert(
                        std::slice::from_ref(input),
                        &target,
                        &read,
                        &co,
                        &mut |_| Ok(()),
                    )?;
                    Ok(true)
                }
                Some(col) => {
                    let marker = marker(&state, &stem);
                    if marker.exists() && !opts.overwrite {
                        return Ok(false);
                    }
                    write_partitions(input, dir, col, fmt, &stem, convert_opts, &read)?;
                    write_atomic(&marker, b"")?;
                    Ok(true)
                }
            }
        })
        .collect();
    let mut report = DatasetReport::default();
    for r in results {
        if r? {
            report.converted += 1;
        } else {
            report.skipped += 1;
        }
    }
    // every input is in: the dataset is complete, and readers of the directory (Polars reads
    // every file under it) see its data files only. Not where a partitioned input of an earlier
    // run failed part way (its files without a marker): a later run must redo it
    if opts.partition_by.is_none() || all_marked(dir, &state, ext)? {
        match std::fs::remove_dir_all(&state) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::from(e).in_file(&state))
            }
            _ => {}
        }
    }
    Ok(report)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|e| Error::from(e).in_file(p))?;
    }
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)
        .map_err(|e| Error::from(e).in_file(path))?;
    f.commit()
}

/// A dataset keeps one layout: a re-run with another one is refused (it would leave the old
/// files beside the new ones, which no reader of the directory can tell apart). While a run is
/// under way the layout is kept in the state directory; a complete dataset has none (a dotted
/// directory makes `pl.scan_parquet(dir)` fail), and its layout is told from its files.
fn check_layout(
    dir: &Path,
    state: &Path,
    layout: &str,
    ext: &str,
    partition_by: Option<&str>,
    overwrite: bool,
) -> Result<()> {
    let file = state.join(LAYOUT_FILE);
    let (old, done) = match std::fs::read_to_string(&file) {
        Ok(old) => (Some(old), Vec::new()),
        Err(_) => match written_layout(dir)? {
            Written::Empty => (None, Vec::new()),
            Written::Layout(old, stems) => (Some(old), stems),
            Written::Foreign => {
                return Err(usage(format!(
                    "{} is not empty and was not written by convert --dataset; give an empty or new directory",
                    dir.display()
                )))
            }
        },
    };
    if let Some(old) = &old {
        if old != layout {
            return Err(usage(format!(
                "{} holds a dataset written as {}, not {}; write to another directory or remove it first{}",
                dir.display(),
                old.trim(),
                layout.trim(),
                if overwrite { " (--overwrite replaces files of the same layout only)" } else { "" }
            )));
        }
        if file.exists() {
            return Ok(());
        }
    }
    // a partitioned input is done when its marker is: those of a complete dataset are its files'
    if partition_by.is_some() {
        for stem in done
            .iter()
            .filter_map(|f| f.strip_suffix(&format!(".{ext}")))
        {
            write_atomic(&marker(state, stem), b"")?;
        }
    }
    write_atomic(&file, layout.as_bytes())
}

/// Where the state directory marks the input `stem` of a partitioned dataset as converted.
fn marker(state: &Path, stem: &str) -> PathBuf {
    state.join(format!("{stem}.done"))
}

/// Every partition file in `dir` belongs to an input whose marker is in `state`.
fn all_marked(dir: &Path, state: &Path, ext: &str) -> Result<bool> {
    Ok(match written_layout(dir)? {
        Written::Layout(_, files) => files.iter().all(|f| {
            let stem = f.strip_suffix(&format!(".{ext}")).unwrap_or(f);
            marker(state, stem).exists()
        }),
        Written::Empty => true,
        Written::Foreign => false,
    })
}

/// What a directory without a state directory holds.
enum Written {
    Empty,
    /// a complete dataset: its layout (as [`convert_dataset`] records it) and the names of the
    /// files in its partitions
    Layout(String, Vec<String>),
    Foreign,
}

/// The layout of a complete dataset, told from its files: `*.EXT` files only, or `COLUMN=value`
/// directories (one column) of `*.EXT` files only, EXT one that a dataset is written in.
fn written_layout(dir: &Path) -> Result<Written> {
    let list = |d: &Path| -> Result<Vec<(String, bool)>> {
        std::fs::read_dir(d)
            .map_err(|e| Error::from(e).in_file(d))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name() != STATE_DIR)
            .map(|e| {
                let t = e
                    .file_type()
                    .map_err(|x| Error::from(x).in_file(&e.path()))?;
                Ok((e.file_name().to_string_lossy().into_owned(), t.is_dir()))
            })
            .collect()
    };
    let ext_of = |name: &str| name.rsplit_once('.').map(|(_, e)| e.to_string());
    let one_ext = |files: &[(String, bool)]| -> Option<String> {
        let mut exts = files.iter().map(|(n, d)| if *d { None } else { ext_of(n) });
        let first = exts.next()??;
        let ours = ["parquet", "arrow", "npz", "msgpack"].contains(&first.as_str());
        (ours && exts.all(|e| e.as_deref() == Some(&first))).then_some(first)
    };
    let top = list(dir)?;
    if top.is_empty() {
        return Ok(Written::Empty);
    }
    if let Some(ext) = one_ext(&top) {
        return Ok(Written::Layout(format!("{ext}\n"), Vec::new()));
    }
    let mut column = None;
    let mut ext = None;
    let mut files = Vec::new();
    for (name, is_dir) in &top {
        let Some((c, _)) = name.split_once('=').filter(|_| *is_dir) else {
            return Ok(Written::Foreign);
        };
        if column.get_or_insert_with(|| c.to_string()) != c {
            return Ok(Written::Foreign);
        }
        let inner = list(&dir.join(name))?;
        match (one_ext(&inner), &ext) {
            (Some(e), None) => ext = Some(e),
            (Some(e), Some(x)) if &e == x => {}
            _ => return Ok(Written::Foreign),
        }
        files.extend(inner.into_iter().map(|(n, _)| n));
    }
    let column = percent_encoding::percent_decode_str(&column.expect("not empty"))
        .decode_utf8_lossy()
        .into_owned();
    let ext = ext.expect("not empty");
    Ok(Written::Layout(
        format!("{ext} partitioned by {column}\n"),
        files,
    ))
}

/// Whether a column can name a partition directory: a scalar (not a list, struct or binary).
fn partitionable(t: &DataType) -> bool {
    !matches!(
        t,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
            | DataType::Union(..)
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
            | DataType::Null
    )
}

/// What a partition value escapes in its directory name: what no path segment may hold (`/`,
/// `\\`, controls), what hive readers take as syntax (`=`, `:` on some file systems) and `%`
/// itself, so that distinct values never share a directory (`a/b` and `a_b` did) and pyarrow's
/// and Polars' hive readers give back the value itself (they unescape `%XX`).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b'/')
    .add(b'\\')
    .add(b'%')
    .add(b'=')
    .add(b':');

/// A partition value as one path segment of its own: escaped, and `.` or `..` with their dots
/// escaped too (they name a directory already).
fn segment(value: &str) -> String {
    match value {
        "." => "%2E".to_string(),
        ".." => "%2E%2E".to_string(),
        v => percent_encoding::utf8_percent_encode(v, SEGMENT).to_string(),
    }
}

/// A column name as the key of its partition directories: `/ \\ = %` and controls escaped, the
/// rest as it is (Polars' hive reader unescapes values, not keys: `température` stays itself).
fn key_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '/' | '\\' | '=' | '%') || c.is_control() {
            let mut b = [0u8; 4];
            for byte in c.encode_utf8(&mut b).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One input into `dir/COLUMN=value/<stem>.<ext>` files; all appear together at the end.
fn write_partitions(
    input: &Path,
    dir: &Path,
    col: &str,
    fmt: Format,
    stem: &str,
    convert_opts: &ConvertOptions,
    read: &ReadOptions,
) -> Result<()> {
    let table = open_table(input, read).map_err(|e| e.in_file(input))?;
    check_unique_columns(&table.schema)?;
    let idx = table
        .schema
        .index_of(col)
        .map_err(|_| usage(format!("no column {col:?} to partition by")).in_file(input))?;
    let key_type = table.schema.field(idx).data_type();
    if !partitionable(key_type) {
        return Err(usage(format!(
            "cannot partition by {col:?}: it is {key_type}, not a scalar column; pick a column of numbers, strings, dates or booleans"
        ))
        .in_file(input));
    }
    let kept: Vec<usize> = (0..table.schema.fields().len())
        .filter(|&i| i != idx)
        .collect();
    let schema = Arc::new(table.schema.project(&kept)?);
    let sink_opts = SinkOptions {
        compression: convert_opts.compression,
        ..SinkOptions::new(fmt)
    };
    let mut parts: BTreeMap<String, Sink<AtomicFile>> = BTreeMap::new();
    let fmt_opts =
        arrow_cast::display::FormatOptions::default().with_null("__HIVE_DEFAULT_PARTITION__");
    for batch in table.batches {
        let batch = batch.map_err(|e| e.in_file(input))?;
        let keys = batch.column(idx);
        let f = arrow_cast::display::ArrayFormatter::try_new(keys.as_ref(), &fmt_opts)?;
        let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for r in 0..batch.num_rows() {
            groups
                .entry(f.value(r).to_string())
                .or_default()
                .push(r as u32);
        }
        let projected = batch.project(&kept)?;
        for (value, rows) in groups {
            let safe = segment(&value);
            let rows = UInt32Array::from(rows);
            let cols = projected
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &rows, None))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let part = record_batch(&schema, cols, rows.len())?;
            if !parts.contains_key(&safe) {
                let ext = if fmt == Format::Ipc {
                    "arrow"
                } else {
                    "parquet"
                };
                let target = dir
                    .join(format!("{}={safe}", key_segment(col)))
                    .join(format!("{stem}.{ext}"));
                let parent = target.parent().expect("a partition directory");
                std::fs::create_dir_all(parent).map_err(|e| Error::from(e).in_file(parent))?;
                let file = AtomicFile::create(&target)?.with_fsync(!convert_opts.no_fsync);
                parts.insert(
                    safe.clone(),
                    Sink::try_new(file, schema.clone(), &sink_opts)?,
                );
            }
            parts
                .get_mut(&safe)
                .expect("inserted")
                .write(&part)
                .map_err(|e| e.in_file(input))?;
        }
    }
    // finish every partition file first, then make them all appear
    let mut files = Vec::new();
    for (_, p) in parts {
        files.push(p.finish()?);
    }
    for f in files {
        f.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WriterBuilder;
    use arrow_array::RecordBatch;
    use arrow_array::{FixedSizeListArray, Float32Array, Int64Array};
    use arrow_schema::{Field, Schema};

    /// A small record file {id, emb f32[2]} as the writer makes it.
    fn input(dir: &Path, name: &str) -> PathBuf {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("emb", DataType::FixedSizeList(item.clone(), 2), true),
        ]));
        let emb = FixedSizeListArray::new(
            item,
            2,
            Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0, 4.0])),
            None,
        );
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![1, 2])), Arc::new(emb)],
        )
        .unwrap();
        let mut w = WriterBuilder::new().build(Vec::new(), schema).unwrap();
        w.write(&b).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, w.finish().unwrap()).unwrap();
        p
    }

    fn run(inputs: &[PathBuf], out: &Path, opts: &DatasetOptions) -> Result<DatasetReport> {
        convert_dataset(
            inputs,
            out,
            &ReadOptions::default(),
            &ConvertOptions::default(),
            opts,
        )
    }

    #[test]
    fn a_tensor_column_is_no_partition_key() {
        let d = tempfile::tempdir().unwrap();
        let i = input(d.path(), "a.msgpack");
        let opts = DatasetOptions {
            partition_by: Some("emb".into()),
            ..Default::default()
        };
        let e = run(&[i], &d.path().join("ds"), &opts).unwrap_err();
        assert!(e.to_string().contains("not a scalar column"), "{e}");
        assert!(!d.path().join("ds").join("emb=[1.0, 2.0]").exists());
    }

    #[test]
    fn a_rerun_with_another_layout_is_refused_not_mixed() {
        let d = tempfile::tempdir().unwrap();
        let i = input(d.path(), "a.msgpack");
        let out = d.path().join("ds");
        let r = run(std::slice::from_ref(&i), &out, &DatasetOptions::default()).unwrap();
        assert_eq!(r.converted, 1);
        let by_id = DatasetOptions {
            partition_by: Some("id".into()),
            ..Default::default()
        };
        let e = run(std::slice::from_ref(&i), &out, &by_id).unwrap_err();
        assert!(
            e.to_string().contains("holds a dataset written as parquet"),
            "{e}"
        );
        assert!(!out.join("id=1").exists());
        // the same layout again: resumes (skips the complete output)
        let r = run(&[i], &out, &DatasetOptions::default()).unwrap();
        assert_eq!((r.converted, r.skipped), (0, 1));
    }

    #[test]
    fn a_complete_dataset_holds_its_files_only_and_a_rerun_still_skips_them() {
        let d = tempfile::tempdir().unwrap();
        let inputs = [input(d.path(), "a.msgpack"), input(d.path(), "b.msgpack")];
        let out = d.path().join("ds");
        let by_id = DatasetOptions {
            partition_by: Some("id".into()),
            ..Default::default()
        };
        let r = run(&inputs[..1], &out, &by_id).unwrap();
        assert_eq!(r.converted, 1);
        // what Polars' scan of the directory lists: the partitions only
        let mut names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["id=1", "id=2"]);
        // told from its files: the same layout resumes (a is done), another is refused
        let r = run(&inputs, &out, &by_id).unwrap();
        assert_eq!((r.converted, r.skipped), (1, 1));
        assert!(out.join("id=1").join("b.parquet").exists());
        let by_emb = DatasetOptions {
            partition_by: Some("other".into()),
            ..Default::default()
        };
        let e = run(&inputs, &out, &by_emb).unwrap_err().to_string();
        assert!(e.contains("written as parquet partitioned by id"), "{e}");
        let e = run(&inputs, &out, &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("written as parquet partitioned by id"), "{e}");
        assert!(!out.join(STATE_DIR).exists());
    }

    #[test]
    fn partition_keys_escape_only_what_a_path_or_hive_reader_cannot_take() {
        assert_eq!(key_segment("a/b=c%d\\e\n"), "a%2Fb%3Dc%25d%5Ce%0A");
        assert_eq!(key_segment("température"), "température");
        assert_eq!(segment("température"), "temp%C3%A9rature"); // values: as pyarrow writes
        assert_eq!(
            (segment("."), segment("..")),
            ("%2E".into(), "%2E%2E".into())
        );
    }

    #[test]
    fn a_foreign_directory_is_not_written_into() {
        let d = tempfile::tempdir().unwrap();
        let i = input(d.path(), "a.msgpack");
        let out = d.path().join("ds");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let e = run(&[i], &out, &DatasetOptions::default()).unwrap_err();
        assert!(e.to_string().contains("is not empty"), "{e}");
    }
}
