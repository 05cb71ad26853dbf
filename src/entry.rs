//! How a turnlake binary ends: its error chain printed once, with no secret
//! of the environment; a panic (a bug, ours or a dependency's) as one line
//! naming the command, with the backtrace only when `RUST_BACKTRACE` asks;
//! and SIGPIPE when the reader of its output went away.

use std::process::ExitCode;

/// Run `command` (a binary's argument parsing and dispatch) and end the
/// process as a Unix tool does: the error chain printed once, secrets
/// redacted, SIGPIPE when our reader went away.
pub fn main(command: fn() -> anyhow::Result<ExitCode>) -> ExitCode {
    // SIGPIPE stays ignored (Rust's default): a socket whose peer went away
    // (S3, a cluster's gRPC: hyper writes with writev, which raises SIGPIPE)
    // must be an error to handle, not a silent death. When the reader of our
    // output goes away (`turnlake sql ... | head`), end as other Unix tools
    // do, by SIGPIPE, instead of panicking in println!.
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && stdout_closed() {
            end_by_sigpipe();
        }
        // A panic caught on its way (one record's turn rule, one input
        // file's reader) is reported there, as a reject or an error naming
        // the input; one that ends the process is said by `main` below.
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let mut first = PANIC.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| format!("{message}{at}"));
        if backtrace_asked() {
            eprintln!("{}", std::backtrace::Backtrace::force_capture());
        }
    }));
    let outcome = std::panic::catch_unwind(command);
    let Ok(outcome) = outcome else {
        let what = PANIC
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        let text = crate::storage::s3::redact(&format!(
            "`{}` stopped on a bug ({what}); please report it with the command and its input{}",
            command_line(),
            if backtrace_asked() {
                ""
            } else {
                " (RUST_BACKTRACE=1 shows where)"
            }
        ));
        eprintln!("turnlake: {text}");
        return ExitCode::from(101);
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            // A writer of our output (CSV, JSON, a table) failed because its
            // reader went away: not an error to report.
            if stdout_closed() && broken_pipe(&err) {
                end_by_sigpipe();
            }
            // No secret of the environment reaches the terminal, whatever failed.
            let text = crate::storage::s3::redact(&chain_text(&err));
            eprintln!("turnlake: {text}");
            if let Some(hint) = crate::storage::s3::hint(err.chain()) {
                if !text.contains(hint) {
                    eprintln!("hint: {hint}");
                }
            }
            ExitCode::FAILURE
        }
    }
}

/// The first panic of this process: its message and where.
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Whether `RUST_BACKTRACE` asks for backtraces (set, and not `0`).
fn backtrace_asked() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0")
}

/// The command line as typed: the program's name and its arguments.
fn command_line() -> String {
    let mut args = std::env::args();
    let program = args.next().map(|p| {
        std::path::Path::new(&p)
            .file_name()
            .map_or(p.clone(), |n| n.to_string_lossy().into_owned())
    });
    program
        .into_iter()
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `err` cause by cause, each said once: a cause that ends with the text of
/// a deeper one (a wrapper that prints its source) keeps only its own words,
/// and a text already said is left out, so a full disk is not "No space left
/// on device" five times.
pub fn chain_text(err: &anyhow::Error) -> String {
    let texts: Vec<String> = err.chain().map(|c| c.to_string()).collect();
    let mut said: Vec<String> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let mut own = text.as_str();
        for deeper in &texts[i + 1..] {
            if !deeper.is_empty() && own.ends_with(deeper.as_str()) {
                own = own[..own.len() - deeper.len()].trim_end_matches([':', ' ']);
            }
        }
        if !own.is_empty() && !said.iter().any(|s| s == own) {
            said.push(own.to_string());
        }
    }
    said.join(": ")
}

/// Whether `err` is a write that failed because its reader went away: an
/// I/O error of kind `BrokenPipe` anywhere in its chain (the Arrow, CSV and
/// JSON writers keep the I/O error as their source).
fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Whether the reader of our stdout has gone away (a pipe with no reader).
fn stdout_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// End as a write to a closed pipe would have, by SIGPIPE.
fn end_by_sigpipe() -> ! {
    // SAFETY: restoring SIGPIPE's default action and raising it ends the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

#[cfg(test)]
mod tests {
    use super::{broken_pipe, chain_text};
    use std::io::{Error, ErrorKind};

    #[test]
    fn every_cause_is_said_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("writing turns: {0}")]
        struct Wrapper(#[source] std::io::Error);
        let disk = || std::io::Error::from_raw_os_error(28);
        let err = anyhow::Error::new(Wrapper(disk()))
            .context("ingest mini-coder")
            .context(format!("flushing: {}", disk()));
        let text = chain_text(&err);
        assert_eq!(text.matches("No space left on device").count(), 1, "{text}");
        assert!(text.contains("ingest mini-coder"), "{text}");
        assert!(text.starts_with("flushing: "), "{text}");
    }

    #[test]
    fn a_broken_pipe_is_found_by_its_kind_through_the_chain() {
        let arrow =
            arrow::error::ArrowError::IoError("writing".into(), Error::from(ErrorKind::BrokenPipe));
        assert!(broken_pipe(
            &anyhow::Error::new(arrow).context("writing the result")
        ));
        assert!(!broken_pipe(&anyhow::anyhow!(
            "Broken pipe, said a message"
        )));
        let full = Error::new(ErrorKind::StorageFull, "No space left on device");
        assert!(!broken_pipe(&anyhow::Error::new(full)));
    }
}
