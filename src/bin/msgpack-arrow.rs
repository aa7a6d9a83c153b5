//! `msgpack-arrow`: convert msgpack-numpy files to and from Parquet, Feather/Arrow IPC and NPZ, and
//! look inside them (`schema`, `head`).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{Field, Schema, SchemaRef};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use msgpack_arrow::io::compress::Codec;
use msgpack_arrow::io::npz::NpzWriter;
use msgpack_arrow::io::{
    expand_inputs, open_table, AtomicFile, Compression, Format, ReadOptions, Table,
};
use msgpack_arrow::types::meta;
use msgpack_arrow::{Dialect, Layout, ObjectArrays, TensorMode, Writer, WriterBuilder};

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
    Convert(ConvertArgs),
    /// Print the layout and the Arrow schema of INPUT.
    Schema {
        /// Input file (`-` for standard input)
        input: String,
        #[command(flatten)]
        read: ReadArgs,
    },
    /// Print the layout and the first rows of INPUT as a table.
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
    #[arg(long, value_enum, default_value_t = LayoutArg::Auto)]
    layout: LayoutArg,
    /// Keep only these columns, in this order (comma-separated)
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Tensors as nested FixedSizeList (`array`, what Polars reads as pl.Array) or as the
    /// canonical `arrow.fixed_shape_tensor` extension
    #[arg(long, value_enum, default_value_t = TensorArg::Array)]
    tensor: TensorArg,
    /// Object ('O') arrays hold pickles, never unpickled: refuse them (`error`) or keep the bytes (`raw`)
    #[arg(long, value_enum, default_value_t = ObjectArg::Error)]
    object_arrays: ObjectArg,
    /// ndarray maps to recognise: msgpack-numpy and openpi's (`auto`), only msgpack-numpy, only
    /// openpi, or msgpack-numpy-js (`js`: its `<U8` means uint8; never guessed)
    #[arg(long, default_value = "auto", value_parser = parse_dialect)]
    dialect: Dialect,
    /// Input format, when the extension does not tell (default: from the extension, else the
    /// file's first bytes; standard input is msgpack)
    #[arg(long, value_enum)]
    input_format: Option<FormatArg>,
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
    format: Option<FormatArg>,
    /// Compression inside Parquet (default zstd) or Feather/IPC (default none) files: zstd,
    /// zstd:LEVEL, snappy (Parquet only), lz4, none. A msgpack output is compressed by naming it
    /// .msgpack.zst/.gz/.lz4
    #[arg(long, value_parser = parse_compression)]
    compression: Option<Compression>,
    /// Rows per batch
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Layout of a msgpack output (default: --layout when no input is msgpack and it is not
    /// auto; else the layout recorded in the input's schema metadata; else records)
    #[arg(long, value_enum)]
    output_layout: Option<LayoutArg>,
    /// msgpack output: place each ndarray payload at a 64-byte aligned offset (still valid msgpack-numpy)
    #[arg(long)]
    aligned: bool,
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

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LayoutArg {
    Auto,
    Records,
    Columns,
    Values,
}

impl From<LayoutArg> for Layout {
    fn from(l: LayoutArg) -> Layout {
        match l {
            LayoutArg::Auto => Layout::Auto,
            LayoutArg::Records => Layout::Records,
            LayoutArg::Columns => Layout::Columns,
            LayoutArg::Values => Layout::Values,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum TensorArg {
    Array,
    Extension,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ObjectArg {
    Error,
    Raw,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum FormatArg {
    Parquet,
    Feather,
    Arrow,
    Ipc,
    Npz,
    Msgpack,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Parquet => Format::Parquet,
            FormatArg::Feather | FormatArg::Arrow | FormatArg::Ipc => Format::Ipc,
            FormatArg::Npz => Format::Npz,
            FormatArg::Msgpack => Format::Msgpack,
        }
    }
}

fn parse_dialect(s: &str) -> std::result::Result<Dialect, String> {
    s.parse::<Dialect>().map_err(|e| e.to_string())
}

fn parse_compression(s: &str) -> std::result::Result<Compression, String> {
    s.parse::<Compression>().map_err(|e| match e.kind() {
        msgpack_arrow::ErrorKind::Unsupported(m) => m.clone(),
        _ => e.to_string(),
    })
}

impl ReadArgs {
    fn options(&self, batch_size: usize) -> ReadOptions {
        ReadOptions {
            format: self.input_format.map(Format::from),
            layout: self.layout.into(),
            batch_size,
            columns: self.columns.clone(),
            tensor: match self.tensor {
                TensorArg::Array => TensorMode::Array,
                TensorArg::Extension => TensorMode::Extension,
            },
            object_arrays: match self.object_arrays {
                ObjectArg::Error => ObjectArrays::Error,
                ObjectArg::Raw => ObjectArrays::Raw,
            },
            progress: None,
            threads: None,
            dialect: self.dialect,
        }
    }
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.cmd {
        Cmd::Convert(args) => convert(args),
        Cmd::Schema { input, read } => out(&schema_text(&input, &read)?),
        Cmd::Head {
            input,
            n,
            width,
            read,
        } => out(&head_text(&input, n, width as usize, &read)?),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            // Nothing useful to say when the reader of our output went away (`| head`).
            if msg != BROKEN_PIPE {
                eprintln!("error: {msg}");
            }
            ExitCode::from(if msg == BROKEN_PIPE { 0 } else { 1 })
        }
    }
}

const BROKEN_PIPE: &str = "\0broken pipe";

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

/// Prefix an error with the file it is about.
fn at(path: &Path) -> impl Fn(msgpack_arrow::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
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
    let mut s = format!("{}: {}", f.name(), f.data_type());
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

fn schema_text(input: &str, read: &ReadArgs) -> CliResult<String> {
    let path = Path::new(input);
    let t = open(path, &read.options(65536))?;
    let mut text = String::new();
    if t.format != Format::Msgpack {
        text.push_str(&format!("format: {}\n", t.format));
    }
    text.push_str(&layout_line(&t).unwrap_or_default());
    text.push_str(&format!("columns: {}\n", t.schema.fields().len()));
    for f in t.schema.fields() {
        text.push_str(&format!("  {}\n", describe_field(f)));
    }
    Ok(text)
}

fn head_text(input: &str, n: usize, width: usize, read: &ReadArgs) -> CliResult<String> {
    let path = Path::new(input);
    let t = open(path, &read.options(n.clamp(1, 65536)))?;
    let mut text = String::new();
    if t.format != Format::Msgpack {
        text.push_str(&format!("format: {}\n", t.format));
    }
    text.push_str(&layout_line(&t).unwrap_or_default());
    let schema = t.schema.clone();
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
    let shown = rows.min(n);
    let table = format_table(&schema, &batches, shown, width)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    text.push_str(&table);
    text.push('\n');
    text.push_str(&format!(
        "({shown} row{} shown)\n",
        if shown == 1 { "" } else { "s" }
    ));
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
                format!("{}\n{}", f.name(), cut(&f.data_type().to_string(), width)),
                arrow_schema::DataType::Utf8,
                true,
            )
        })
        .collect();
    let cols: Vec<ArrayRef> = cells
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as ArrayRef)
        .collect();
    let table = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
    )?;
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

/// A compressing writer for a `.msgpack.zst` / `.gz` / `.lz4` output.
enum Compressed<W: Write> {
    Plain(W),
    Zstd(zstd::stream::write::Encoder<'static, W>),
    Gzip(flate2::write::GzEncoder<W>),
    Lz4(lz4_flex::frame::FrameEncoder<W>),
}

impl<W: Write> Compressed<W> {
    fn new(w: W, codec: Option<Codec>) -> io::Result<Self> {
        Ok(match codec {
            None => Compressed::Plain(w),
            Some(Codec::Zstd) => {
                let mut e = zstd::stream::write::Encoder::new(w, 3)?;
                // Multi-threaded compression would need zstd's feature; checksums are cheap.
                e.include_checksum(true)?;
                Compressed::Zstd(e)
            }
            Some(Codec::Gzip) => Compressed::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            Some(Codec::Lz4) => Compressed::Lz4(lz4_flex::frame::FrameEncoder::new(w)),
        })
    }
    fn finish(self) -> io::Result<W> {
        match self {
            Compressed::Plain(w) => Ok(w),
            Compressed::Zstd(e) => e.finish(),
            Compressed::Gzip(e) => e.finish(),
            Compressed::Lz4(e) => e.finish().map_err(io::Error::other),
        }
    }
}

impl<W: Write> Write for Compressed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Compressed::Plain(w) => w.write(buf),
            Compressed::Zstd(e) => e.write(buf),
            Compressed::Gzip(e) => e.write(buf),
            Compressed::Lz4(e) => e.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Compressed::Plain(w) => w.flush(),
            Compressed::Zstd(e) => e.flush(),
            Compressed::Gzip(e) => e.flush(),
            Compressed::Lz4(e) => e.flush(),
        }
    }
}

/// Where batches go.
enum Sink<'a> {
    Parquet(parquet::arrow::ArrowWriter<&'a mut AtomicFile>),
    Ipc(arrow_ipc::writer::FileWriter<&'a mut AtomicFile>),
    Npz(NpzWriter<&'a mut AtomicFile>),
    Msgpack(Writer<Compressed<&'a mut AtomicFile>>),
}

impl Sink<'_> {
    fn write(&mut self, b: &RecordBatch) -> msgpack_arrow::Result<()> {
        match self {
            Sink::Parquet(w) => w.write(b)?,
            Sink::Ipc(w) => w.write(b)?,
            Sink::Npz(w) => w.write(b)?,
            Sink::Msgpack(w) => w.write(b)?,
        }
        Ok(())
    }
    fn finish(self) -> msgpack_arrow::Result<()> {
        match self {
            Sink::Parquet(w) => {
                w.close()?;
            }
            Sink::Ipc(mut w) => w.finish()?,
            Sink::Npz(w) => {
                w.finish()?;
            }
            Sink::Msgpack(w) => {
                w.finish()?.finish()?;
            }
        }
        Ok(())
    }
}

/// Whether two files' schemas can go into one output: same column names in the same order, same
/// types (nested field names aside). Returns what differs.
fn schema_difference(a: &Schema, b: &Schema) -> Option<String> {
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
        if !fa.data_type().equals_datatype(fb.data_type()) {
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

fn convert(args: ConvertArgs) -> CliResult<()> {
    let inputs = expand_inputs(&args.inputs).map_err(|e| e.to_string())?;
    if args.dataset {
        return convert_dataset(&args, &inputs);
    }
    let output = &args.output;
    if output.as_os_str() == "-" {
        return Err("writing to standard output is not supported; give an output file name".into());
    }
    let out_format = match args.format {
        Some(f) => Format::from(f),
        None => Format::from_path(output).ok_or_else(|| {
            format!(
                "cannot tell the output format from {:?}; use an extension (.parquet, .feather, .arrow, .npz, .msgpack) or --format",
                output.display().to_string()
            )
        })?,
    };
    let out_codec = Codec::from_path(output);
    if out_codec.is_some() && out_format != Format::Msgpack {
        return Err(format!(
            "{}: only msgpack outputs are compressed by extension; {} files compress internally (see --compression)",
            output.display(),
            out_format
        ));
    }
    if args.compression.is_some() && matches!(out_format, Format::Msgpack | Format::Npz) {
        return Err(format!(
            "--compression applies to parquet and feather outputs; {}",
            if out_format == Format::Msgpack {
                "to compress msgpack, name the output .msgpack.zst, .msgpack.gz or .msgpack.lz4"
            } else {
                "npz members are stored uncompressed, like np.savez"
            }
        ));
    }
    let batch_size = usize::try_from(args.batch_size).unwrap_or(usize::MAX);
    let mut opts = args.read.options(batch_size);

    let show = !args.quiet && io::stderr().is_terminal();
    let counter = Arc::new(AtomicU64::new(0));
    let bar = if show {
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
        opts.progress = Some(counter.clone());
        Some(progress_bar(total))
    } else {
        None
    };
    let result = convert_into(&args, &inputs, out_format, out_codec, &opts, &bar, &counter);
    if let Some(bar) = &bar {
        if result.is_ok() {
            bar.finish_and_clear();
        } else {
            bar.abandon();
        }
    }
    result
}

fn convert_into(
    args: &ConvertArgs,
    inputs: &[PathBuf],
    out_format: Format,
    out_codec: Option<Codec>,
    opts: &ReadOptions,
    bar: &Option<ProgressBar>,
    counter: &AtomicU64,
) -> CliResult<()> {
    let output = &args.output;
    let first_path = &inputs[0];
    let first = open(first_path, opts)?;
    let schema = first.schema.clone();

    let mut file = AtomicFile::create(output).map_err(|e| e.to_string())?;
    let out_err = |e: msgpack_arrow::Error| format!("{}: {e}", output.display());
    let mut sink = match out_format {
        Format::Parquet => Sink::Parquet(
            msgpack_arrow::io::parquet::parquet_writer(
                &mut file,
                schema.clone(),
                args.compression.unwrap_or_default(),
            )
            .map_err(out_err)?,
        ),
        Format::Ipc => Sink::Ipc(
            msgpack_arrow::io::ipc::ipc_writer(
                &mut file,
                &schema,
                args.compression.unwrap_or(Compression::None),
            )
            .map_err(out_err)?,
        ),
        Format::Npz => {
            let dir = output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Sink::Npz(
                NpzWriter::try_new(&mut file, schema.clone())
                    .map_err(out_err)?
                    .with_spool_dir(dir),
            )
        }
        Format::Msgpack => {
            let any_msgpack = inputs.iter().any(|p| {
                opts.format
                    .map(|f| f == Format::Msgpack)
                    .unwrap_or_else(|| {
                        Format::detect(p)
                            .map(|f| f == Format::Msgpack)
                            .unwrap_or(true)
                    })
            });
            let layout = match args.output_layout {
                Some(l) => Layout::from(l),
                None if !any_msgpack => Layout::from(args.read.layout),
                // Auto: the layout recorded in the schema metadata (what the reader used), else records.
                None => Layout::Auto,
            };
            // An empty table (e.g. from an empty file) has no columns to lay out: write nothing.
            let layout = if schema.fields().is_empty() {
                Layout::Records
            } else {
                layout
            };
            let w = Compressed::new(&mut file, out_codec)
                .map_err(|e| format!("{}: {e}", output.display()))?;
            Sink::Msgpack(
                WriterBuilder::new()
                    .with_layout(layout)
                    .with_aligned(args.aligned)
                    .build(w, schema.clone())
                    .map_err(out_err)?,
            )
        }
    };

    let mut rows: u64 = 0;
    let mut pending = Some(first);
    for (i, path) in inputs.iter().enumerate() {
        let table = match pending.take() {
            Some(t) => t,
            None => open(path, opts)?,
        };
        if i > 0 {
            if let Some(diff) = schema_difference(&schema, &table.schema) {
                return Err(format!(
                    "{}: schema differs from the first input {}: {diff}",
                    path.display(),
                    first_path.display()
                ));
            }
        }
        if let Some(bar) = bar {
            bar.set_message(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
        for batch in table.batches {
            let batch = batch.map_err(at(path))?;
            // Later files may differ from the first in metadata or nested field names only.
            let batch = if batch.schema() != schema {
                RecordBatch::try_new_with_options(
                    schema.clone(),
                    batch.columns().to_vec(),
                    &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
                )
                .map_err(|e| format!("{}: {e}", path.display()))?
            } else {
                batch
            };
            rows += batch.num_rows() as u64;
            sink.write(&batch).map_err(out_err)?;
            if let Some(bar) = bar {
                bar.set_position(counter.load(Ordering::Relaxed));
            }
        }
    }
    sink.finish().map_err(out_err)?;
    file.commit().map_err(|e| e.to_string())?;
    if let Some(bar) = bar {
        bar.set_position(counter.load(Ordering::Relaxed));
    }
    if !args.quiet && io::stderr().is_terminal() {
        eprintln!(
            "wrote {rows} row{} from {} input{} to {}",
            if rows == 1 { "" } else { "s" },
            inputs.len(),
            if inputs.len() == 1 { "" } else { "s" },
            output.display()
        );
    }
    Ok(())
}

/// The name of an input without its directory and its `.msgpack[.zst]`-style extensions.
fn stem(path: &Path) -> String {
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

/// `convert --dataset`: one output per input, in parallel (a file per core, each decoded on one
/// thread), written atomically so that a re-run can skip what is complete.
fn convert_dataset(args: &ConvertArgs, inputs: &[PathBuf]) -> CliResult<()> {
    use rayon::prelude::*;
    let dir = &args.output;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let fmt = args.format.map(Format::from).unwrap_or(Format::Parquet);
    let ext = match fmt {
        Format::Parquet => "parquet",
        Format::Ipc => "arrow",
        Format::Npz => "npz",
        Format::Msgpack => "msgpack",
    };
    if args.partition_by.is_some() && !matches!(fmt, Format::Parquet | Format::Ipc) {
        return Err("--partition-by writes parquet or feather files".into());
    }
    let mut seen = std::collections::HashMap::new();
    for p in inputs {
        if let Some(other) = seen.insert(stem(p), p) {
            return Err(format!(
                "{} and {} would write the same output {}",
                other.display(),
                p.display(),
                stem(p)
            ));
        }
    }
    let mut opts = args
        .read
        .options(usize::try_from(args.batch_size).unwrap_or(usize::MAX));
    opts.threads = Some(1);
    let done_dir = dir.join(".msgpack-arrow");
    let results: Vec<CliResult<bool>> = inputs
        .par_iter()
        .map(|input| {
            let stem = stem(input);
            match &args.partition_by {
                None => {
                    // the output appears only when complete (AtomicFile): existing means done
                    let target = dir.join(format!("{stem}.{ext}"));
                    if target.exists() && !args.overwrite {
                        return Ok(false);
                    }
                    let mut sub = args.clone();
                    sub.output = target;
                    sub.dataset = false;
                    sub.quiet = true;
                    convert_into(
                        &sub,
                        std::slice::from_ref(input),
                        fmt,
                        None,
                        &opts,
                        &None,
                        &AtomicU64::new(0),
                    )?;
                    Ok(true)
                }
                Some(col) => {
                    let marker = done_dir.join(format!("{stem}.done"));
                    if marker.exists() && !args.overwrite {
                        return Ok(false);
                    }
                    write_partitions(input, dir, col, fmt, &stem, args, &opts)?;
                    std::fs::create_dir_all(&done_dir).map_err(|e| e.to_string())?;
                    let mut m = AtomicFile::create(&marker).map_err(|e| e.to_string())?;
                    m.write_all(b"").map_err(|e| e.to_string())?;
                    m.commit().map_err(|e| e.to_string())?;
                    Ok(true)
                }
            }
        })
        .collect();
    let (mut wrote, mut skipped) = (0, 0);
    for r in results {
        if r? {
            wrote += 1;
        } else {
            skipped += 1;
        }
    }
    if !args.quiet {
        eprintln!(
            "{}: converted {wrote} input(s), skipped {skipped} already complete",
            dir.display()
        );
    }
    Ok(())
}

/// One input into `dir/COLUMN=value/<stem>.<ext>` files; all appear together at the end.
fn write_partitions(
    input: &Path,
    dir: &Path,
    col: &str,
    fmt: Format,
    stem: &str,
    args: &ConvertArgs,
    opts: &ReadOptions,
) -> CliResult<()> {
    enum Part {
        Parquet(parquet::arrow::ArrowWriter<AtomicFile>),
        Ipc(arrow_ipc::writer::FileWriter<AtomicFile>),
    }
    let table = open(input, opts)?;
    let idx = table
        .schema
        .index_of(col)
        .map_err(|_| format!("{}: no column {col:?} to partition by", input.display()))?;
    let kept: Vec<usize> = (0..table.schema.fields().len())
        .filter(|&i| i != idx)
        .collect();
    let schema = Arc::new(table.schema.project(&kept).map_err(|e| e.to_string())?);
    let mut parts: std::collections::BTreeMap<String, Part> = Default::default();
    let fail = |e: msgpack_arrow::Error| format!("{}: {e}", input.display());
    for batch in table.batches {
        let batch = batch.map_err(at(input))?;
        let keys = batch.column(idx);
        let fmt_opts =
            arrow_cast::display::FormatOptions::default().with_null("__HIVE_DEFAULT_PARTITION__");
        let f = arrow_cast::display::ArrayFormatter::try_new(keys.as_ref(), &fmt_opts)
            .map_err(|e| e.to_string())?;
        let mut groups: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        for r in 0..batch.num_rows() {
            groups
                .entry(f.value(r).to_string())
                .or_default()
                .push(r as u32);
        }
        let projected = batch.project(&kept).map_err(|e| e.to_string())?;
        for (value, rows) in groups {
            // a value becomes a directory name: keep it to one safe path segment
            let safe: String = value
                .chars()
                .map(|c| {
                    if c == '/' || c == '\\' || c == '\0' {
                        '_'
                    } else {
                        c
                    }
                })
                .collect();
            let safe = if safe == "." || safe == ".." {
                format!("_{safe}")
            } else {
                safe
            };
            let rows = arrow_array::UInt32Array::from(rows);
            let cols = projected
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &rows, None))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            let part = RecordBatch::try_new_with_options(
                schema.clone(),
                cols,
                &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
            )
            .map_err(|e| e.to_string())?;
            if !parts.contains_key(&safe) {
                let target = dir.join(format!("{col}={safe}")).join(format!(
                    "{stem}.{}",
                    if fmt == Format::Ipc {
                        "arrow"
                    } else {
                        "parquet"
                    }
                ));
                std::fs::create_dir_all(target.parent().unwrap()).map_err(|e| e.to_string())?;
                let file = AtomicFile::create(&target).map_err(|e| e.to_string())?;
                let w = if fmt == Format::Ipc {
                    Part::Ipc(
                        msgpack_arrow::io::ipc::ipc_writer(
                            file,
                            &schema,
                            args.compression.unwrap_or(Compression::None),
                        )
                        .map_err(fail)?,
                    )
                } else {
                    Part::Parquet(
                        msgpack_arrow::io::parquet::parquet_writer(
                            file,
                            schema.clone(),
                            args.compression.unwrap_or_default(),
                        )
                        .map_err(fail)?,
                    )
                };
                parts.insert(safe.clone(), w);
            }
            match parts.get_mut(&safe).expect("inserted") {
                Part::Parquet(w) => w.write(&part).map_err(|e| e.to_string())?,
                Part::Ipc(w) => w.write(&part).map_err(|e| e.to_string())?,
            }
        }
    }
    // finish every partition file first, then make them all appear
    let mut files = Vec::new();
    for (_, p) in parts {
        files.push(match p {
            Part::Parquet(w) => w.into_inner().map_err(|e| e.to_string())?,
            Part::Ipc(mut w) => {
                w.finish().map_err(|e| e.to_string())?;
                w.into_inner().map_err(|e| e.to_string())?
            }
        });
    }
    for f in files {
        f.commit().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let mut w = WriterBuilder::new()
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
        assert!(text.contains("(28 rows shown)"), "{text}");
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
                "  emb: FixedSizeList(2 x FixedSizeList(3 x Float32))  msgpack_numpy.dtype=>f4"
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
