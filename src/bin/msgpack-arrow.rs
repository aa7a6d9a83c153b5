//! `msgpack-arrow`: the command line (`msgpack_arrow::cli`).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(msgpack_arrow::cli::main(std::env::args_os()))
}
