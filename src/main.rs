//! The `turnlake` binary: parse arguments, run, print the error chain once.

use std::process::ExitCode;

fn main() -> ExitCode {
    match turnlake::cli::run() {
        Ok(code) => code,
        Err(err) => {
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("turnlake: {err:#}");
            ExitCode::FAILURE
        }
    }
}
