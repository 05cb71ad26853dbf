//! The `turnlake` binary: parse arguments, run, print the error chain once.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes away
    // (`turnlake sql ... | head`), instead of panicking in println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match turnlake::cli::run() {
        Ok(code) => code,
        Err(err) => {
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            // No secret of the environment reaches the terminal, whatever failed.
            let text = turnlake::storage::s3::redact(&format!("{err:#}"));
            eprintln!("turnlake: {text}");
            if let Some(hint) = turnlake::storage::s3::hint(err.chain()) {
                if !text.contains(hint) {
                    eprintln!("hint: {hint}");
                }
            }
            ExitCode::FAILURE
        }
    }
}
