//! Progress bars: drawn on a terminal, silent otherwise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A bar over `total` items.
pub fn bar(total: u64, label: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {label} [{{bar:40}}] {{pos}}/{{len}} eta {{eta}}"
        ))
        .expect("progress template")
        .progress_chars("=> "),
    );
    bar
}

/// A bar over `total` bytes.
pub fn bytes_bar(total: u64, label: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target());
    bar.set_style(
        ProgressStyle::with_template(&format!("{{spinner}} {label} [{{bar:40}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"))
            .expect("progress template")
            .progress_chars("=> "),
    );
    bar
}

/// A bar over bytes to transfer whose total grows as sizes become known,
/// with a message (files done) beside it.
pub fn transfer_bar(label: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), target());
    bar.set_style(
        ProgressStyle::with_template(&format!("{{spinner}} {label} {{msg}} [{{bar:30}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"))
            .expect("progress template")
            .progress_chars("=> "),
    );
    bar
}
