//! The `turnlake` binary: parse arguments, run, print the error chain once.

use std::process::ExitCode;

/// jemalloc, not glibc's malloc: ingest and the row streams allocate and
/// free on every thread, and glibc's heaps spent a fifth of their time in
/// malloc and grew with an ingest's length (bench/README.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    turnlake::entry::main(turnlake::cli::run)
}
