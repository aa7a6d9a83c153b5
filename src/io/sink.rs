//! Where batches go: one writer per output format (Parquet, Feather/IPC, NPZ, msgpack, the last
//! compressed by the output's extension), behind one `write`/`finish`.

use std::io::{Seek, Write};
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::compress::{Codec, CompressedWriter};
use super::npz::NpzWriter;
use super::{ipc, parquet, Compression, Format};
use crate::error::{Error, ErrorKind, Result};
use crate::options::{Dialect, Layout};
use crate::write::{Writer, WriterBuilder};

/// How a [`Sink`] writes: the output format and its options.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    /// The output format.
    pub format: Format,
    /// Parquet / Feather compression (default: zstd for Parquet, none for Feather).
    pub compression: Option<Compression>,
    /// msgpack outputs: compress the stream (from a `.zst`, `.gz`, `.lz4` output name).
    pub codec: Option<Codec>,
    /// msgpack outputs: the layout (`Auto`: the one recorded in the schema metadata, else records).
    pub layout: Layout,
    /// msgpack outputs: pad so ndarray payloads start on 64-byte boundaries.
    pub aligned: bool,
    /// msgpack outputs: the form of ndarrays (`Auto`: the dialect the input was read in).
    pub dialect: Dialect,
    /// NPZ outputs: where columns are spooled until the row count is known (default: the
    /// system's temporary directory).
    pub spool_dir: Option<std::path::PathBuf>,
}

impl SinkOptions {
    /// Refuse options the format has no use for: a stream codec on a non-msgpack output, a
    /// Parquet/Feather compression on msgpack or NPZ.
    pub fn check(&self) -> Result<()> {
        if self.codec.is_some() && self.format != Format::Msgpack {
            return Err(Error::new(ErrorKind::Usage(format!(
                "only msgpack outputs are compressed by extension; {} files compress internally (see --compression)",
                self.format
            ))));
        }
        if self.compression.is_some() && matches!(self.format, Format::Msgpack | Format::Npz) {
            return Err(Error::new(ErrorKind::Usage(
                if self.format == Format::Msgpack {
                    "--compression applies to parquet and feather outputs; to compress msgpack, name the output .msgpack.zst, .msgpack.gz or .msgpack.lz4"
                } else {
                    "--compression applies to parquet and feather outputs; npz members are stored uncompressed, like np.savez"
                }
                .into(),
            )));
        }
        Ok(())
    }

    /// The defaults for `format`.
    pub fn new(format: Format) -> Self {
        SinkOptions {
            format,
            compression: None,
            codec: None,
            layout: Layout::Auto,
            aligned: false,
            dialect: Dialect::Auto,
            spool_dir: None,
        }
    }
}

/// One output in any format this crate writes.
pub enum Sink<W: Write + Seek + Send> {
    /// Apache Parquet.
    Parquet(parquet::ParquetWriter<W>),
    /// Feather v2 / Arrow IPC file.
    Ipc(arrow_ipc::writer::FileWriter<W>),
    /// NumPy `.npz`.
    Npz(NpzWriter<W>),
    /// msgpack-numpy, compressed or not (boxed: a compressor's state is large).
    Msgpack(Box<Writer<CompressedWriter<W>>>),
}

impl<W: Write + Seek + Send> Sink<W> {
    /// Start writing batches of `schema` into `w`.
    pub fn try_new(w: W, schema: SchemaRef, opts: &SinkOptions) -> Result<Self> {
        opts.check()?;
        Ok(match opts.format {
            Format::Parquet => Sink::Parquet(parquet::ParquetWriter::try_new(
                w,
                schema,
                opts.compression.unwrap_or_default(),
            )?),
            Format::Ipc => Sink::Ipc(ipc::ipc_writer(
                w,
                &schema,
                opts.compression.unwrap_or(Compression::None),
            )?),
            Format::Npz => {
                let mut n = NpzWriter::try_new(w, schema)?;
                if let Some(d) = &opts.spool_dir {
                    n = n.with_spool_dir(d);
                }
                Sink::Npz(n)
            }
            Format::Msgpack => {
                // An empty table (e.g. from an empty file) has no columns to lay out: write nothing,
                // or what its metadata recorded (`auto`: a file that was `[]` is written as `[]`)
                let layout = if schema.fields().is_empty() && opts.layout != Layout::Auto {
                    Layout::Records
                } else {
                    opts.layout
                };
                Sink::Msgpack(Box::new(
                    WriterBuilder::new()
                        .with_layout(layout)
                        .with_aligned(opts.aligned)
                        .with_dialect(opts.dialect)
                        .build(CompressedWriter::new(w, opts.codec)?, schema)?,
                ))
            }
        })
    }

    /// Write one batch.
    pub fn write(&mut self, b: &RecordBatch) -> Result<()> {
        match self {
            Sink::Parquet(w) => w.write(b)?,
            Sink::Ipc(w) => w.write(b)?,
            Sink::Npz(w) => w.write(b)?,
            Sink::Msgpack(w) => w.write(b)?,
        }
        Ok(())
    }

    /// Write the footer / trailer; the inner writer back.
    pub fn finish(self) -> Result<W> {
        Ok(match self {
            Sink::Parquet(w) => w.finish()?,
            Sink::Ipc(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Sink::Npz(w) => w.finish()?,
            Sink::Msgpack(w) => w.finish()?.finish()?,
        })
    }
}

/// The directory NPZ columns are spooled in for an output at `path`: beside it, so the spool is
/// on the same file system as the result.
pub fn spool_dir_for(path: &Path) -> std::path::PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}
