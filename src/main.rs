//! The `turnlake` binary: parse arguments, run, print the error chain once.

use std::process::ExitCode;

fn main() -> ExitCode {
    turnlake::entry::main(turnlake::cli::run)
}
