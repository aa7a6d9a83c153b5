//! `msgpack-arrow`: the command line (`msgpack_arrow::cli`).

fn main() -> std::process::ExitCode {
    keep_freed_memory();
    std::process::ExitCode::from(msgpack_arrow::cli::main(std::env::args_os()))
}

/// glibc gives every block over 32 MiB its own mapping and unmaps it when freed, so each new
/// batch, row group or page buffer of a long convert faults in and zeroes fresh pages (7% of a
/// Parquet convert's time in the kernel clearing pages). A command is short-lived: let freed
/// memory be reused instead.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}
