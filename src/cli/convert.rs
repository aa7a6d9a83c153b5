//! `convert`: inputs to one output (or a dataset), with a progress bar and Ctrl-C.

use std::io::{self, IsTerminal};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{interrupted, on_ctrl_c, CliResult, ConvertArgs, BROKEN_PIPE, INTERRUPTED};
use crate::io::convert::{output_format, ConvertOptions};
use crate::io::dataset::{convert_dataset, DatasetOptions};

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

pub(super) fn convert(args: ConvertArgs) -> CliResult<()> {
    let mut read = args
        .read
        .options(usize::try_from(args.batch_size).unwrap_or(usize::MAX));
    read.reader = read
        .reader
        .with_batch_bytes(usize::try_from(args.batch_bytes).unwrap_or(usize::MAX));
    let inputs = crate::io::compress::expand_inputs_with(&args.inputs, &read.storage)
        .map_err(|e| e.to_string())?;
    let to_stdout = crate::io::compress::is_stdio(&args.output);
    if args.dataset {
        if to_stdout {
            return Err("--dataset writes a directory of files, not standard output (-)".into());
        }
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
    if to_stdout && io::stdout().is_terminal() {
        return Err(
            "standard output is a terminal: redirect it (> FILE, | ...) or give -o FILE".into(),
        );
    }
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
    let done = result.map_err(|e| match e.kind() {
        // the reader of standard output went away (`| head`): nothing more to say
        crate::ErrorKind::Io(io) if io.kind() == io::ErrorKind::BrokenPipe => {
            BROKEN_PIPE.to_string()
        }
        _ => e.to_string(),
    })?;
    for (path, t) in &done.truncated {
        eprintln!("warning: {}: {t}", path.display());
    }
    for (column, tz) in &done.zones_dropped {
        eprintln!(
            "warning: {}: column {column:?} had time zone {tz}, which numpy's datetime64 cannot hold: written as UTC values",
            args.output.display()
        );
    }
    if show {
        eprintln!(
            "wrote {} row{} from {} input{} to {}",
            done.rows,
            if done.rows == 1 { "" } else { "s" },
            done.inputs,
            if done.inputs == 1 { "" } else { "s" },
            if to_stdout {
                "standard output".into()
            } else {
                args.output.display().to_string()
            }
        );
    }
    Ok(())
}
