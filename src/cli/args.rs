//! The command line's options, and how they map onto the library's read options.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{Field, Schema};
use clap::Args;

use crate::io::{Compression, Format, ReadOptions};
use crate::ReaderBuilder;
use crate::{Dialect, Layout, ObjectArrays, OnTruncated, TensorMode};

#[derive(Args, Debug, Clone)]
pub(super) struct ReadArgs {
    /// How msgpack input becomes rows (`auto`: from its first object). With only non-msgpack
    /// inputs and a msgpack output: the output layout.
    #[arg(long, value_enum, default_value_t = Layout::Auto)]
    pub(super) layout: Layout,
    /// Keep only these columns, in this order (comma-separated)
    #[arg(long, value_delimiter = ',')]
    pub(super) columns: Option<Vec<String>>,
    /// Tensors as nested FixedSizeList (`array`, what Polars reads as pl.Array) or as the
    /// canonical `arrow.fixed_shape_tensor` extension
    #[arg(long, value_enum, default_value_t = TensorMode::Array)]
    pub(super) tensor: TensorMode,
    /// Object ('O') arrays hold pickles, never unpickled: refuse them (`error`) or keep the bytes (`raw`)
    #[arg(long, value_enum, default_value_t = ObjectArrays::Error)]
    pub(super) object_arrays: ObjectArrays,
    /// ndarrays to recognise: msgpack-numpy and openpi's maps and Flax's ext values (`auto`), only
    /// msgpack-numpy, only openpi, msgpack-numpy-js (`js`: its `<U8` means uint8; never guessed),
    /// or only Flax's (`flax`: an ext 1-3 of another form is an error)
    #[arg(long, value_enum, default_value_t = Dialect::Auto)]
    pub(super) dialect: Dialect,
    /// Input format, when the extension does not tell (default: from the extension, else the
    /// file's first bytes; standard input is msgpack)
    #[arg(long, value_enum)]
    pub(super) input_format: Option<Format>,
    /// An input cut short (a writer that crashed): `error`, or `keep` its complete records (a
    /// warning on stderr says where the cut is; the exit code stays 0)
    #[arg(long, value_enum, default_value_t = OnTruncated::Error)]
    pub(super) on_truncated: OnTruncated,
    /// Give columns their type instead of inferring it (resolves type conflicts), e.g.
    /// `--schema-overrides label=str,score=f64` (types: i64, f32, str, bin, bool, date,
    /// datetime[us], f32[768], list[str], or a numpy dtype such as <f4)
    #[arg(long, value_delimiter = ',', value_parser = parse_override)]
    pub(super) schema_overrides: Vec<(String, arrow_schema::DataType)>,
    /// A column whose values do not unify: `error`, or `binary` (each row its value's raw
    /// msgpack bytes, written back as they were)
    #[arg(long, value_enum, default_value_t = crate::Conflicts::Error)]
    pub(super) conflicts: crate::Conflicts,
    /// Nested lists of numbers: `list`, or `array` (a column whose lists have one length at
    /// each level is a fixed-shape tensor, e.g. ormsgpack's numpy output)
    #[arg(long, value_enum, default_value_t = crate::Lists::List)]
    pub(super) lists: crate::Lists,
    /// Infer the schema from this many rows (default: all of them)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) infer_rows: Option<u64>,
    /// Compressed inputs and URLs: hold up to this many decompressed bytes in memory so the
    /// schema is typed from every row (suffixes K, M, G; default 1G; 0: never). Past it a file is
    /// decompressed twice, and a URL is typed from its first rows
    #[arg(long, value_parser = parse_bytes_or_zero)]
    pub(super) hold_decompressed: Option<u64>,
    /// Read at most this many rows
    #[arg(long)]
    pub(super) n_rows: Option<usize>,
    /// Ext values of this type code (-128..127) hold `np.save` bytes: read them as ndarrays
    #[arg(long, allow_hyphen_values = true)]
    pub(super) npy_ext: Option<i8>,
    /// Start at this row: the rows before it are stepped over (a file with a record index,
    /// FILE.offsets, is not even walked to it)
    #[arg(long, default_value_t = 0)]
    pub(super) skip: usize,
    /// For URL inputs and outputs (s3://, gs://, az://, http(s)://): a store setting, e.g.
    /// `--storage-option endpoint_url=http://127.0.0.1:9000`; repeatable. The environment
    /// (AWS_*, GOOGLE_*, AZURE_*) gives the rest.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", value_parser = parse_storage_option)]
    pub(super) storage_option: Vec<(String, String)>,
}

#[derive(Args, Debug, Clone)]
pub(super) struct ConvertArgs {
    /// Input files, globs (quoted) or directories (their .msgpack/.mpk files); `-` for standard input
    #[arg(required = true)]
    pub(super) inputs: Vec<String>,
    /// Output file; it appears only when complete. `-`: standard output (name the format with
    /// --format; written as encoded)
    #[arg(short, long)]
    pub(super) output: PathBuf,
    /// Output format (default: from OUTPUT's extension)
    #[arg(long, value_enum)]
    pub(super) format: Option<Format>,
    /// Compression inside Parquet (default zstd) or Feather/IPC (default none) files: zstd,
    /// zstd:LEVEL, snappy (Parquet only), lz4, none. A msgpack output is compressed by naming it
    /// .msgpack.zst/.gz/.lz4
    #[arg(long, value_parser = parse_compression)]
    pub(super) compression: Option<Compression>,
    /// Rows per batch
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) batch_size: u64,
    /// A batch also ends after the row that reaches this many input bytes (suffixes K, M, G), so
    /// batches of wide rows stay small: memory is a few batches whatever the row width
    #[arg(long, default_value = "16M", value_parser = parse_bytes)]
    pub(super) batch_bytes: u64,
    /// Layout of a msgpack output (default: --layout when no input is msgpack and it is not
    /// auto; else the layout recorded in the input's schema metadata; else records)
    #[arg(long, value_enum)]
    pub(super) output_layout: Option<Layout>,
    /// msgpack output: place each ndarray payload at a 64-byte aligned offset (still valid msgpack-numpy)
    #[arg(long)]
    pub(super) aligned: bool,
    /// msgpack output: the form of ndarrays and numpy scalars, msgpack-numpy or openpi
    /// (default: the dialect the input was read in)
    #[arg(long, value_enum)]
    pub(super) output_dialect: Option<Dialect>,
    /// Do not fsync OUTPUT before renaming it into place: faster (a 316 MB write: 0.37 s instead
    /// of 1.09 s here), but a power loss soon after may leave it empty or partial
    #[arg(long)]
    pub(super) no_fsync: bool,
    /// msgpack output: also write OUTPUT.offsets, the byte offset of each record (big-endian
    /// uint64s, as datadings writes them), so that reads starting further in (--skip) go
    /// straight there
    #[arg(long)]
    pub(super) index: bool,
    /// No progress bar
    #[arg(short, long)]
    pub(super) quiet: bool,
    /// OUTPUT is a directory: one file per input (`<stem>.parquet`, or --format), inputs
    /// converted in parallel; a re-run skips outputs already complete
    #[arg(long)]
    pub(super) dataset: bool,
    /// With --dataset: hive-style partitions `OUTPUT/COLUMN=value/<stem>.parquet` (the column
    /// is then only in the directory names)
    #[arg(long, requires = "dataset")]
    pub(super) partition_by: Option<String>,
    /// With --dataset: convert again even where the output is complete
    #[arg(long, requires = "dataset")]
    pub(super) overwrite: bool,
    #[command(flatten)]
    pub(super) read: ReadArgs,
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
    match parse_bytes_or_zero(s)? {
        0 => Err(format!(
            "{s:?}: expected a byte count of at least 1, such as 65536, 64M or 1G"
        )),
        n => Ok(n),
    }
}

fn parse_bytes_or_zero(s: &str) -> std::result::Result<u64, String> {
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
        Ok(n) => n
            .checked_mul(mul)
            .ok_or_else(|| format!("{s:?}: too large")),
        _ => Err(format!(
            "{s:?}: expected a byte count such as 65536, 64M or 1G"
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
    pub(super) fn options(&self, batch_size: usize) -> ReadOptions {
        let overrides = (!self.schema_overrides.is_empty()).then(|| {
            Arc::new(Schema::new(
                self.schema_overrides
                    .iter()
                    .map(|(n, t)| Field::new(n, t.clone(), true))
                    .collect::<Vec<_>>(),
            ))
        });
        let mut reader = ReaderBuilder::new();
        if let Some(n) = self.hold_decompressed {
            reader = reader.with_hold_decompressed(usize::try_from(n).unwrap_or(usize::MAX));
        }
        ReadOptions {
            format: self.input_format,
            progress: None,
            storage: crate::io::StorageOptions(self.storage_option.clone()),
            reader: reader
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
