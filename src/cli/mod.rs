//! The `msgpack-arrow` command: convert msgpack-numpy files to and from Parquet, Feather/Arrow IPC
//! and NPZ, and look inside them (`schema`, `head`). Arguments are parsed here and mapped onto the
//! library's options; everything else is the library's. It lives in the library (feature `cli`)
//! so the Python package can offer the same command without a second binary.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::Ordering;

use clap::{Parser, Subcommand};

use crate::io::{open_table, ReadOptions, Table};

mod args;
mod convert;
mod show;
#[cfg(test)]
mod tests;

use args::{ConvertArgs, ReadArgs};
use convert::convert;
use show::{head_text, schema_text};

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
    // a panic is reported as one error line, here, not by the default hook's "thread panicked"
    // lines: those a reader of a corrupt Parquet or Feather file raises are caught on the way
    // (and say which file), any other is a bug
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // (another thread's panic that does not reach `main` is shown as it was)
        if std::thread::current().name() != Some("main") {
            default(info);
        }
    }));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli)))
        .unwrap_or_else(|p| {
            Err(format!(
                "internal error (a bug in msgpack-arrow; please report it): {}",
                crate::error::panic_message(&*p)
            ))
        });
    match outcome {
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
