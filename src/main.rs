//! The `turnlake` binary: parse arguments, run, print the error chain once.

use std::process::ExitCode;

/// jemalloc, not glibc's malloc: ingest and the row streams allocate and
/// free on every thread, and glibc's heaps spent a fifth of their time in
/// malloc and grew with an ingest's length (bench/README.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read before `main` (`_RJEM_MALLOC_CONF` in the
/// environment overrides them). Each thread caches freed blocks of up to
/// 256 KiB, not 32 KiB: a scan's column buffers are that size, and without
/// the cache every batch faulted in fresh pages (bench/README.md).
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_CONF: Option<&'static std::ffi::c_char> =
    // SAFETY: a pointer to the first byte of a static, NUL-terminated string.
    Some(unsafe { &*c"tcache_max:262144".as_ptr() });

fn main() -> ExitCode {
    turnlake::entry::main(turnlake::cli::run)
}
