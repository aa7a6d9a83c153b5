//! The `msgpack-arrow` command: convert msgpack-numpy files to and from Parquet, Feather/Arrow IPC
//! and NPZ, and look inside them (`schema`, `head`). Arguments are parsed here and mapped onto the
//! library's options; everything else is the library's. It lives in the library (feature `cli`)
//! so the Python package can offer the same command without a second binary.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, RecordBatch, StringArray};

use crate::types::arrow::record_batch;
use arrow_schema::{Field, Schema, SchemaRef};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::io::convert::{output_format, ConvertOptions};
use crate::io::dataset::{convert_dataset, DatasetOptions};
use crate::io::{open_table, Compression, Format, ReadOptions, Table};
use crate::types::{meta, short_name};
use crate::ReaderBuilder;
use crate::{Dialect, Layout, ObjectArrays, OnTruncated, TensorMode};

/// A message for the user; printed as `error: <message>`.
type CliResult<T> = std::result::Result<T, String>;

#[derive(Parser, Debug)]
#[command(
    name = "msgpack-arrow",
    version,
    about = "msgpack-numpy (NumPy arrays in MessagePack) <-> Apache Arrow: Parquet, Feather, NPZ",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Convert INPUT... into one OUTPUT (formats from the extensions: .msgpack/.mpk (+.zst/.gz/.lz4),
    /// .parquet/.pq, .feather/.arrow/.ipc, .npz).
    #[command(after_help = "Examples:
  msgpack-arrow convert dump.msgpack -o dump.parquet
  msgpack-arrow convert 'dumps/*.msgpack.zst' -o all.feather --columns id,emb
  msgpack-arrow convert dumps/ -o dataset/ --dataset --partition-by label
  msgpack-arrow convert crashed.msgpack -o kept.parquet --on-truncated keep")]
    Convert(ConvertArgs),
    /// Print the layout and the Arrow schema of INPUT.
    #[command(after_help = "Examples:
  msgpack-arrow schema dump.msgpack
  msgpack-arrow schema dump.msgpack.zst --layout records
  msgpack-arrow schema mixed.msgpack --schema-overrides label=str")]
    Schema {
        /// Input file (`-` for standard input)
        input: String,
        #[command(flatten)]
        read: ReadArgs,
    },
    /// Write INPUT.offsets, a record index of INPUT (a plain msgpack file): the byte offset of
    /// each record as big-endian uint64s, as datadings writes them. Reads starting further in
    /// (--skip) then go straight to their first row.
    #[command(after_help = "Examples:
  msgpack-arrow index dump.msgpack
  msgpack-arrow head dump.msgpack --skip 1000000 -n 5")]
    Index {
        /// Input file
        input: String,
    },
    /// Print the layout and the first rows of INPUT as a table.
    #[command(after_help = "Examples:
  msgpack-arrow head dump.msgpack
  msgpack-arrow head -n 20 --width 30 dump.parquet
  cat dump.msgpack | msgpack-arrow head -")]
    Head {
        /// Input file (`-` for standard input)
        input: String,
        /// Number of rows
        #[arg(short = 'n', long = "rows", default_value_t = 5)]
        n: usize,
        /// Longest a cell is shown (longer values are cut with `…`)
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u16).range(4..))]
        width: u16,
        #[command(flatten)]
        read: ReadArgs,
    },
}

#[derive(Args, Debug, Clone)]
struct ReadArgs {
    /// How msgpack input becomes rows (`auto`: from its first object). With only non-msgpack
    /// inputs and a msgpack output: the output layout.
    #[arg(long, value_enum, default_value_t = Layout::Auto)]
    layout: Layout,
    /// Keep only these columns, in this order (comma-separated)
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Tensors as nested FixedSizeList (`array`, what Polars reads as pl.Array) or as the
    /// canonical `arrow.fixed_shape_tensor` extension
    #[arg(long, value_enum, default_value_t = TensorMode::Array)]
    tensor: TensorMode,
    /// Object ('O') arrays hold pickles, never unpickled: refuse them (`error`) or keep the bytes (`raw`)
    #[arg(long, value_enum, default_value_t = ObjectArrays::Error)]
    object_arrays: ObjectArrays,
    /// ndarray maps to recognise: msgpack-numpy and openpi's (`auto`), only msgpack-numpy, only
    /// openpi, or msgpack-numpy-js (`js`: its `<U8` means uint8; never guessed)
    #[arg(long, value_enum, default_value_t = Dialect::Auto)]
    dialect: Dialect,
    /// Input format, when the extension does not tell (default: from the extension, else the
    /// file's first bytes; standard input is msgpack)
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    /// An input cut short (a writer that crashed): `error`, or `keep` its complete records (a
    /// warning on stderr says where the cut is; the exit code stays 0)
    #[arg(long, value_enum, default_value_t = OnTruncated::Error)]
    on_truncated: OnTruncated,
    /// Give columns their type instead of inferring it (resolves type conflicts), e.g.
    /// `--schema-overrides label=str,score=f64` (types: i64, f32, str, bin, bool, date,
    /// datetime[us], f32[768], list[str], or a numpy dtype such as <f4)
    #[arg(long, value_delimiter = ',', value_parser = parse_override)]
    schema_overrides: Vec<(String, arrow_schema::DataType)>,
    /// A column whose values do not unify: `error`, or `binary` (each row its value's raw
    /// msgpack bytes, written back as they were)
    #[arg(long, value_enum, default_value_t = crate::Conflicts::Error)]
    conflicts: crate::Conflicts,
    /// Nested lists of numbers: `list`, or `array` (a column whose lists have one length at
    /// each level is a fixed-shape tensor, e.g. ormsgpack's numpy output)
    #[arg(long, value_enum, default_value_t = crate::Lists::List)]
    lists: crate::Lists,
    /// Infer the schema from this many rows (default: all of them)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    infer_rows: Option<u64>,
    /// Read at most this many rows
    #[arg(long)]
    n_rows: Option<usize>,
    /// Ext values of this type code (-128..127) hold `np.save` bytes: read them as ndarrays
    #[arg(long, allow_hyphen_values = true)]
    npy_ext: Option<i8>,
    /// Start at this row: the rows before it are stepped over (a file with a record index,
    /// FILE.offsets, is not even walked to it)
    #[arg(long, default_value_t = 0)]
    skip: usize,
    /// For URL inputs and outputs (s3://, gs://, az://, http(s)://): a store setting, e.g.
    /// `--storage-option endpoint_url=http://127.0.0.1:9000`; repeatable. The environment
    /// (AWS_*, GOOGLE_*, AZURE_*) gives the rest.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", value_parser = parse_storage_option)]
    storage_option: Vec<(String, String)>,
}

#[derive(Args, Debug, Clone)]
struct ConvertArgs {
    /// Input files, globs (quoted) or directories (their .msgpack/.mpk files); `-` for standard input
    #[arg(required = true)]
    inputs: Vec<String>,
    /// Output file; it appears only when complete
    #[arg(short, long)]
    output: PathBuf,
    /// Output format (default: from OUTPUT's extension)
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Compression inside Parquet (default zstd) or Feather/IPC (default none) files: zstd,
    /// zstd:LEVEL, snappy (Parquet only), lz4, none. A msgpack output is compressed by naming it
    /// .msgpack.zst/.gz/.lz4
    #[arg(long, value_parser = parse_compression)]
    compression: Option<Compression>,
    /// Rows per batch
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// A batch also ends after the row that reaches this many input bytes (suffixes K, M, G), so
    /// batches of wide rows stay small: memory is a few batches whatever the row width
    #[arg(long, default_value = "16M", value_parser = parse_bytes)]
    batch_bytes: u64,
    /// Layout of a msgpack output (default: --layout when no input is msgpack and it is not
    /// auto; else the layout recorded in the input's schema metadata; else records)
    #[arg(long, value_enum)]
    output_layout: Option<Layout>,
    /// msgpack output: place each ndarray payload at a 64-byte aligned offset (still valid msgpack-numpy)
    #[arg(long)]
    aligned: bool,
    /// msgpack output: the form of ndarrays and numpy scalars, msgpack-numpy or openpi
    /// (default: the dialect the input was read in)
    #[arg(long, value_enum)]
    output_dialect: Option<Dialect>,
    /// Do not fsync OUTPUT before renaming it into place: faster (a 316 MB write: 0.37 s instead
    /// of 1.09 s here), but a power loss soon after may leave it empty or partial
    #[arg(long)]
    no_fsync: bool,
    /// msgpack output: also write OUTPUT.offsets, the byte offset of each record (big-endian
    /// uint64s, as datadings writes them), so that reads starting further in (--skip) go
    /// straight there
    #[arg(long)]
    index: bool,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
    /// OUTPUT is a directory: one file per input (`<stem>.parquet`, or --format), inputs
    /// converted in parallel; a re-run skips outputs already complete
    #[arg(long)]
    dataset: bool,
    /// With --dataset: hive-style partitions `OUTPUT/COLUMN=value/<stem>.parquet` (the column
    /// is then only in the directory names)
    #[arg(long, requires = "dataset")]
    partition_by: Option<String>,
    /// With --dataset: convert again even where the output is complete
    #[arg(long, requires = "dataset")]
    overwrite: bool,
    #[command(flatten)]
    read: ReadArgs,
}

fn parse_storage_option(s: &str) -> std::result::Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .ok_or_else(|| "expected KEY=VALUE, e.g. endpoint_url=http://127.0.0.1:9000".to_string())
}

fn parse_override(s: &str) -> std::result::Result<(String, arrow_schema::DataType), String> {
    let (name, ty) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected COLUMN=TYPE, e.g. label=str"))?;
    let t = crate::types::parse_type_name(ty).map_err(|e| e.to_string())?;
    Ok((name.to_string(), t))
}

fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let m = match t[i..]
                .to_ascii_uppercase()
                .trim_end_matches("IB")
                .trim_end_matches('B')
            {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => {
                    return Err(format!(
                        "{s:?}: expected a byte count such as 65536, 64M or 1G"
                    ))
                }
            };
            (&t[..i], m)
        }
        None => (t, 1),
    };
    match num.trim().parse::<u64>() {
        Ok(n) if n > 0 => n
            .checked_mul(mul)
            .ok_or_else(|| format!("{s:?}: too large")),
        _ => Err(format!(
            "{s:?}: expected a byte count of at least 1, such as 65536, 64M or 1G"
        )),
    }
}

fn parse_compression(s: &str) -> std::result::Result<Compression, String> {
    s.parse::<Compression>().map_err(|e| match e.kind() {
        crate::ErrorKind::Unsupported(m) => m.clone(),
        _ => e.to_string(),
    })
}

impl ReadArgs {
    fn options(&self, batch_size: usize) -> ReadOptions {
        let overrides = (!self.schema_overrides.is_empty()).then(|| {
            Arc::new(Schema::new(
                self.schema_overrides
                    .iter()
                    .map(|(n, t)| Field::new(n, t.clone(), true))
                    .collect::<Vec<_>>(),
            ))
        });
        ReadOptions {
            format: self.input_format,
            progress: None,
            storage: crate::io::StorageOptions(self.storage_option.clone()),
            reader: ReaderBuilder::new()
                .with_layout(self.layout)
                .with_batch_size(batch_size)
                .with_projection(self.columns.clone())
                .with_tensor(self.tensor)
                .with_object_arrays(self.object_arrays)
                .with_dialect(self.dialect)
                .with_on_truncated(self.on_truncated)
                .with_infer_rows(
                    self.infer_rows
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                )
                .with_n_rows(self.n_rows)
                .with_skip_rows(self.skip)
                .with_npy_ext(self.npy_ext)
                .with_conflicts(self.conflicts)
                .with_lists(self.lists)
                .with_schema_overrides(overrides),
        }
    }
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.cmd {
        Cmd::Convert(args) => convert(args),
        Cmd::Schema { input, read } => out(&schema_text(&input, &read)?),
        Cmd::Index { input } => {
            let path = Path::new(&input);
            let n = crate::io::index::write_index(path, true).map_err(at(path))?;
            out(&format!(
                "{}: {n} records\n",
                crate::io::index::sidecar(path).display()
            ))
        }
        Cmd::Head {
            input,
            n,
            width,
            read,
        } => out(&head_text(&input, n, width as usize, &read)?),
    }
}

/// Run the command with these arguments (the first is the program name); the exit code.
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            // --help and --version are not errors; clap says which
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(msg) if msg.ends_with(INTERRUPTED) => {
            eprintln!("interrupted: no output written");
            130
        }
        Err(msg) => {
            // Nothing useful to say when the reader of our output went away (`| head`).
            if msg != BROKEN_PIPE {
                eprintln!("error: {msg}");
            }
            if msg == BROKEN_PIPE {
                0
            } else {
                1
            }
        }
    }
}

const BROKEN_PIPE: &str = "\0broken pipe";
const INTERRUPTED: &str = "interrupted";

static CTRL_C: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn note_ctrl_c(_: libc::c_int) {
    CTRL_C.store(true, Ordering::Relaxed);
}

/// Ctrl-C during `convert` ends it between batches, with exit code 130 and no output (the
/// temporary file is removed): the default action would leave the temporary file behind.
fn on_ctrl_c() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, note_ctrl_c as *const () as libc::sighandler_t);
    }
}

fn interrupted() -> bool {
    CTRL_C.load(Ordering::Relaxed)
}

/// Write to standard output; a closed pipe ends the program quietly.
fn out(text: &str) -> CliResult<()> {
    let mut o = io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|_| o.flush())
        .map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                BROKEN_PIPE.to_string()
            } else {
                format!("standard output: {e}")
            }
        })
}

/// Name the file an error is about (once: the core may have named it already).
fn at(path: &Path) -> impl Fn(crate::Error) -> String + '_ {
    move |e| e.in_file(path).to_string()
}

fn open(path: &Path, opts: &ReadOptions) -> CliResult<Table> {
    open_table(path, opts).map_err(at(path))
}

// ---------------------------------------------------------------------------------------------
// schema, head

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

fn schema_text(input: &str, read: &ReadArgs) -> CliResult<String> {
    let path = Path::new(input);
    let (t, conflict) = open_showing_conflicts(path, &read.options(65536))?;
    let mut text = String::new();
    if let Some(c) = &conflict {
        text.push_str(&format!("note: {c}\n"));
    }
    if t.format != Format::Msgpack {
        text.push_str(&format!("format: {}\n", t.format));
    }
    text.push_str(&layout_line(&t).unwrap_or_default());
    if let Some(n) = t.num_rows {
        text.push_str(&format!("rows: {n}\n"));
    }
    text.push_str(&format!("columns: {}\n", t.schema.fields().len()));
    for f in t.schema.fields() {
        text.push_str(&format!("  {}\n", describe_field(f)));
    }
    Ok(text)
}

fn head_text(input: &str, n: usize, width: usize, read: &ReadArgs) -> CliResult<String> {
    let path = Path::new(input);
    let mut opts = read.options(n.clamp(1, 65536));
    // the file is not walked past the rows shown
    let limit = opts.reader.n_rows().map_or(n, |m| m.min(n));
    opts.reader = opts.reader.with_n_rows(Some(limit));
    let (t, conflict) = open_showing_conflicts(path, &opts)?;
    let mut text = String::new();
    if let Some(c) = &conflict {
        text.push_str(&format!("note: {c}\n"));
    }
    if t.format != Format::Msgpack {
        text.push_str(&format!("format: {}\n", t.format));
    }
    text.push_str(&layout_line(&t).unwrap_or_default());
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

fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
    t.push('…');
    t
}

// ---------------------------------------------------------------------------------------------
// convert

fn progress_bar(total: Option<u64>) -> ProgressBar {
    let bar = match total {
        Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template(
                "{spinner} {bytes:>10}/{total_bytes} [{bar:30}] {bytes_per_sec:>12} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {bytes:>10} {bytes_per_sec:>12} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

impl ConvertArgs {
    fn convert_options(&self) -> ConvertOptions {
        ConvertOptions {
            format: self.format,
            compression: self.compression,
            output_layout: self.output_layout,
            aligned: self.aligned,
            output_dialect: self.output_dialect,
            no_fsync: self.no_fsync,
            index: self.index,
        }
    }
}

fn convert(args: ConvertArgs) -> CliResult<()> {
    let mut read = args
        .read
        .options(usize::try_from(args.batch_size).unwrap_or(usize::MAX));
    read.reader = read
        .reader
        .with_batch_bytes(usize::try_from(args.batch_bytes).unwrap_or(usize::MAX));
    let inputs = crate::io::compress::expand_inputs_with(&args.inputs, &read.storage)
        .map_err(|e| e.to_string())?;
    if args.dataset {
        let opts = DatasetOptions {
            format: args.format,
            partition_by: args.partition_by.clone(),
            overwrite: args.overwrite,
        };
        let r = convert_dataset(&inputs, &args.output, &read, &args.convert_options(), &opts)
            .map_err(|e| e.to_string())?;
        if !args.quiet {
            eprintln!(
                "{}: converted {} input(s), skipped {} already complete",
                args.output.display(),
                r.converted,
                r.skipped
            );
        }
        return Ok(());
    }
    let opts = args.convert_options();
    // refuse contradicting options before any input is read
    output_format(&args.output, &opts).map_err(|e| e.to_string())?;
    on_ctrl_c();
    let show = !args.quiet && io::stderr().is_terminal();
    let counter = Arc::new(AtomicU64::new(0));
    let bar = show.then(|| {
        let total = inputs
            .iter()
            .map(|p| {
                if p.as_os_str() == "-" {
                    None
                } else {
                    std::fs::metadata(p).ok().map(|m| m.len())
                }
            })
            .sum::<Option<u64>>();
        read.progress = Some(counter.clone());
        progress_bar(total)
    });
    let mut on_batch = |path: &Path| {
        if interrupted() {
            // the output (a temporary file until now) is dropped as the error unwinds
            return Err(crate::Error::new(crate::ErrorKind::Usage(
                INTERRUPTED.into(),
            )));
        }
        if let Some(bar) = &bar {
            bar.set_message(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
            bar.set_position(counter.load(Ordering::Relaxed));
        }
        Ok(())
    };
    // a URL output is a multipart upload fed as batches are written (NPZ: staged, then
    // uploaded), aborted on any failure: the previous object stays as it was
    let result = crate::io::convert::convert(&inputs, &args.output, &read, &opts, &mut on_batch);
    if let Some(bar) = &bar {
        if result.is_ok() {
            bar.finish_and_clear();
        } else {
            bar.abandon();
        }
    }
    let done = result.map_err(|e| e.to_string())?;
    for (path, t) in &done.truncated {
        eprintln!("warning: {}: {t}", path.display());
    }
    if show {
        eprintln!(
            "wrote {} row{} from {} input{} to {}",
            done.rows,
            if done.rows == 1 { "" } else { "s" },
            done.inputs,
            if done.inputs == 1 { "" } else { "s" },
            args.output.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, FixedSizeListArray, Float32Array, Int64Array};
    use clap::CommandFactory;
    use std::collections::HashMap;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cut_cells() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }

    fn cli(args: &[&str]) -> CliResult<()> {
        let mut v = vec!["msgpack-arrow"];
        v.extend_from_slice(args);
        run(Cli::try_parse_from(v).map_err(|e| e.to_string())?)
    }

    #[test]
    fn overrides_infer_rows_and_n_rows() {
        let d = tempfile::tempdir().unwrap();
        // {"label": 1} {"label": "two"} {"label": 3}: an int/str conflict
        let mut data = Vec::new();
        for v in [&b"\x01"[..], b"\xa3two", b"\x03"] {
            data.extend_from_slice(b"\x81\xa5label");
            data.extend_from_slice(v);
        }
        let input = d.path().join("c.msgpack");
        std::fs::write(&input, &data).unwrap();
        let out = d.path().join("c.parquet");
        let e = cli(&["convert", s(&input), "-o", s(&out)]).unwrap_err();
        assert!(
            e.contains("type conflict") && e.contains("--schema-overrides"),
            "{e}"
        );
        assert!(e.contains("record 1"), "{e}");
        cli(&[
            "convert",
            s(&input),
            "-o",
            s(&out),
            "--schema-overrides",
            "label=str",
            "-q",
        ])
        .unwrap();
        let t = crate::io::open_table(&out, &ReadOptions::default()).unwrap();
        let b = t.batches.map(|b| b.unwrap()).next().unwrap();
        let labels: Vec<_> = b.column(0).as_string::<i32>().iter().flatten().collect();
        assert_eq!(labels, ["1", "two", "3"]);
        // the first row alone decides the type; the second is then an error of the decoder
        let e = cli(&["convert", s(&input), "-o", s(&out), "--infer-rows", "1"]).unwrap_err();
        assert!(e.contains("record 1"), "{e}");
        // two rows read: none of the conflict's rows beyond them is touched
        std::fs::remove_file(&out).ok();
        let text = head_text(s(&input), 5, 20, &parse_read(&["--n-rows", "1"])).unwrap();
        assert!(text.contains("(1 row shown)"), "{text}");
        let e = cli(&[
            "schema",
            s(&input),
            "--schema-overrides",
            "label=complex256",
        ])
        .unwrap_err();
        assert!(e.contains("unknown type"), "{e}");
    }

    fn parse_read(extra: &[&str]) -> ReadArgs {
        let mut args = vec!["m", "schema", "x"];
        args.extend_from_slice(extra);
        match Cli::try_parse_from(args).unwrap().cmd {
            Cmd::Schema { read, .. } => read,
            _ => unreachable!(),
        }
    }

    #[test]
    fn head_of_an_empty_table_prints_its_header_and_0_rows() {
        let d = tempfile::tempdir().unwrap();
        let empty = d.path().join("e.msgpack");
        std::fs::write(&empty, b"").unwrap();
        let text = head_text(s(&empty), 5, 20, &parse_read(&[])).unwrap();
        assert!(text.ends_with("(0 rows)\n"), "{text}");
        // a table whose rows are all filtered out still shows its columns
        let rec = d.path().join("r.msgpack");
        std::fs::write(&rec, b"\x81\xa2id\x01").unwrap();
        let text = head_text(s(&rec), 0, 20, &parse_read(&[])).unwrap();
        assert!(
            text.contains("| id ") && text.ends_with("(0 rows)\n"),
            "{text}"
        );
    }

    #[test]
    fn text_is_refused_and_no_output_is_written() {
        let d = tempfile::tempdir().unwrap();
        let csv = d.path().join("t.csv");
        std::fs::write(&csv, "id,name\n1,alpha\n2,beta\n").unwrap();
        let out = d.path().join("t.parquet");
        let e = cli(&["convert", s(&csv), "-o", s(&out)]).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: input looks like text (CSV?)", csv.display())),
            "{e}"
        );
        assert!(!out.exists());
        let e = cli(&["schema", s(&csv)]).unwrap_err();
        assert!(e.contains("looks like text"), "{e}");
        // asked for explicitly, it reads
        cli(&[
            "convert",
            s(&csv),
            "-o",
            s(&out),
            "--layout",
            "values",
            "-q",
        ])
        .unwrap();
        assert!(out.exists());
    }

    /// A records msgpack file: id (int), emb (2x3 float32 ndarrays, big-endian), name (str), x (nullable int).
    fn sample(dir: &Path, nulls: bool) -> PathBuf {
        let item = Arc::new(Field::new("item", arrow_schema::DataType::Float32, true));
        let inner = FixedSizeListArray::try_new(
            item,
            3,
            Arc::new(Float32Array::from_iter_values((0..24).map(|i| i as f32))),
            None,
        )
        .unwrap();
        let inner_field = Arc::new(Field::new("item", inner.data_type().clone(), true));
        let emb = FixedSizeListArray::try_new(inner_field, 2, Arc::new(inner), None).unwrap();
        let md = HashMap::from([
            (meta::DTYPE.to_string(), ">f4".to_string()),
            (meta::KIND.to_string(), "ndarray".to_string()),
        ]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", arrow_schema::DataType::Int64, true),
            Field::new("emb", emb.data_type().clone(), true).with_metadata(md),
            Field::new("name", arrow_schema::DataType::Utf8, true),
            Field::new("x", arrow_schema::DataType::Int64, true),
        ]));
        let x = if nulls {
            vec![Some(1), None, Some(3), Some(4)]
        } else {
            vec![Some(1), Some(2), Some(3), Some(4)]
        };
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![10, 20, 30, 40])),
            Arc::new(emb),
            Arc::new(StringArray::from(vec!["a", "bb", "", "dddd"])),
            Arc::new(Int64Array::from(x)),
        ];
        let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let mut w = crate::WriterBuilder::new()
            .with_layout(Layout::Records)
            .build(Vec::new(), schema)
            .unwrap();
        w.write(&batch).unwrap();
        let p = dir.join(if nulls { "nulls.msgpack" } else { "s.msgpack" });
        std::fs::write(&p, w.finish().unwrap()).unwrap();
        p
    }

    fn s(p: &Path) -> &str {
        p.to_str().unwrap()
    }

    #[test]
    fn round_trips_are_byte_exact() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = sample(d, false);
        let original = std::fs::read(&input).unwrap();
        for (mid, extra) in [
            ("t.parquet", &[][..]),
            ("t.feather", &["--compression", "zstd"][..]),
            ("t.arrow", &["--compression", "lz4"][..]),
            ("t.msgpack.zst", &[][..]),
            ("t.msgpack.gz", &[][..]),
            ("t.mpk.lz4", &[][..]),
        ] {
            let mid = d.join(mid);
            let mut args = vec!["convert", s(&input), "-o", s(&mid), "-q"];
            args.extend_from_slice(extra);
            cli(&args).unwrap();
            let back = d.join("back.msgpack");
            cli(&["convert", s(&mid), "-o", s(&back)]).unwrap();
            assert_eq!(
                std::fs::read(&back).unwrap(),
                original,
                "via {}",
                mid.display()
            );
        }
        // Several inputs (a directory, a glob) into one output.
        let many = d.join("many.parquet");
        cli(&[
            "convert",
            s(d),
            &format!("{}/*.msgpack", s(d)),
            "-o",
            s(&many),
        ])
        .unwrap();
        let text = head_text(s(&many), 100, 60, &read_args()).unwrap();
        // The directory: s, back, and t.msgpack.zst/.gz, t.mpk.lz4 (5 files); the glob: s and back.
        assert!(
            text.contains("(28 rows shown)") || text.contains("(28 of 28 rows)"),
            "{text}"
        );
    }

    fn read_args() -> ReadArgs {
        match Cli::try_parse_from(["m", "schema", "x"]).unwrap().cmd {
            Cmd::Schema { read, .. } => read,
            _ => unreachable!(),
        }
    }

    #[test]
    fn schema_and_head_text() {
        let dir = tempfile::tempdir().unwrap();
        let input = sample(dir.path(), true);
        let text = schema_text(s(&input), &read_args()).unwrap();
        assert!(text.starts_with("layout: records (auto"), "{text}");
        assert!(
            text.contains(
                "rows: 4\ncolumns: 4\n  id: i64\n  emb: f32[2, 3]  msgpack_numpy.dtype=>f4"
            ),
            "{text}"
        );
        let text = head_text(s(&input), 2, 12, &read_args()).unwrap();
        assert!(
            text.contains("| 10 ") && text.contains("| null") && !text.contains("| 30 "),
            "{text}"
        );
        assert!(text.contains("[[0.0, 1.0,…"), "{text}");
        assert!(text.ends_with("(2 rows shown)\n"), "{text}");
        let pq = dir.path().join("n.parquet");
        cli(&["convert", s(&input), "-o", s(&pq)]).unwrap();
        let text = schema_text(s(&pq), &read_args()).unwrap();
        assert!(
            text.starts_with("format: parquet\nlayout: records (recorded"),
            "{text}"
        );
    }

    #[test]
    fn failures_leave_no_output() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = sample(d, true);
        let out = d.join("o.npz");
        std::fs::write(&out, b"previous").unwrap();
        let e = cli(&["convert", s(&input), "-o", s(&out)]).unwrap_err();
        assert!(
            e.contains("\"x\"") && e.contains("row 1 is null") && e.contains("cannot hold nulls"),
            "{e}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"previous");
        // --columns without the nullable column works
        cli(&["convert", s(&input), "-o", s(&out), "--columns", "emb,id"]).unwrap();
        assert_ne!(std::fs::read(&out).unwrap(), b"previous");

        let trunc = d.join("trunc.msgpack");
        let bytes = std::fs::read(&input).unwrap();
        std::fs::write(&trunc, &bytes[..bytes.len() - 5]).unwrap();
        let pq = d.join("t.parquet");
        let e = cli(&["convert", s(&trunc), "-o", s(&pq)]).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: ", trunc.display())) && e.contains("truncated"),
            "{e}"
        );
        assert!(!pq.exists());
        let names: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
            "{names:?}"
        );
        // asked to, it keeps the complete records before the cut (the sample has 4)
        cli(&[
            "convert",
            s(&trunc),
            "-o",
            s(&pq),
            "--on-truncated",
            "keep",
            "-q",
        ])
        .unwrap();
        let kept = crate::io::open_table(&pq, &ReadOptions::default()).unwrap();
        let rows: usize = kept.batches.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 3);
        std::fs::remove_file(&pq).unwrap();

        let other = d.join("other.parquet");
        cli(&["convert", s(&input), "-o", s(&other), "--columns", "id"]).unwrap();
        let e = cli(&["convert", s(&input), s(&other), "-o", s(&pq)]).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "{}: schema differs from the first input",
                other.display()
            )),
            "{e}"
        );

        let e = cli(&["convert", s(&input), "-o", s(&d.join("x.csv"))]).unwrap_err();
        assert!(e.contains("--format"), "{e}");
        let e = cli(&[
            "convert",
            s(&input),
            "-o",
            s(&d.join("x.npz")),
            "--compression",
            "zstd",
        ])
        .unwrap_err();
        assert!(e.contains("--compression applies"), "{e}");
        let e = cli(&[
            "convert",
            s(&input),
            "-o",
            s(&d.join("x.feather")),
            "--compression",
            "snappy",
        ])
        .unwrap_err();
        assert!(e.contains("snappy"), "{e}");
        let e = cli(&[
            "convert",
            s(&input),
            "-o",
            s(&pq),
            "--compression",
            "brotli",
        ])
        .unwrap_err();
        assert!(e.contains("brotli"), "{e}");
    }
}
