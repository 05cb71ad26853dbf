//! Two small markers of a turn: an unclosed `<think>` block and a submit command.

use regex::Regex;
use std::sync::LazyLock;

/// The strings whose echo as a command's first output line ends a run:
/// mini-swe-agent's current and older markers, and Albedo's variants.
pub const SUBMIT_MARKERS: &[&str] = &[
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "MINI_SWE_AGENT_FINAL_OUTPUT",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_ANSWER",
    "FINALIZE_AND_SUBMIT_TASK_OUTPUT",
    "ALBEDO_TASK_DONE_SUBMIT_NOW",
];

static SUBMIT: LazyLock<Regex> = LazyLock::new(|| {
    let alts = SUBMIT_MARKERS.join("|");
    Regex::new(&format!(
        r#"^\s*(?:echo|printf)\s+(?:-[a-z]+\s+)?['"]?(?:{alts}|SUBMIT_TASK_[0-9a-fA-F]{{8}})\b"#
    ))
    .expect("submit regex")
});

/// True when the command prints a submit marker first (`echo MARKER && ...`).
/// `extra_marker` is a run-specific marker (Albedo's `submit_marker`), if any.
pub fn is_submit_command(command: &str, extra_marker: Option<&str>) -> bool {
    if SUBMIT.is_match(command) {
        return true;
    }
    match extra_marker {
        Some(m) if !m.is_empty() => {
            let c = command.trim_start();
            (c.starts_with("echo ") || c.starts_with("printf "))
                && c.split_whitespace()
                    .nth(1)
                    .map(|w| w.trim_matches(|ch| ch == '\'' || ch == '"') == m)
                    .unwrap_or(false)
        }
        _ => false,
    }
}

/// True when the last `<think>` opened in `text` is never closed.
pub fn think_unclosed(text: &str) -> bool {
    match text.rfind("<think>") {
        Some(open) => !text[open..].contains("</think>"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submit_table() {
        let cases = [
            (
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
                None,
                true,
            ),
            ("echo MINI_SWE_AGENT_FINAL_OUTPUT; git diff", None, true),
            ("  echo 'ALBEDO_TASK_DONE_SUBMIT_NOW'", None, true),
            ("echo SUBMIT_TASK_1a2b3c4d && cat patch", None, true),
            ("echo SUBMIT_TASK_1a2b3c4 && cat patch", None, false),
            ("echo FINALIZE_AND_SUBMIT_TASK_OUTPUT", None, true),
            ("printf COMPLETE_TASK_AND_SUBMIT_FINAL_ANSWER", None, true),
            (
                "grep -r COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT .",
                None,
                false,
            ),
            ("cat file", None, false),
            ("echo MY_MARKER && git diff", Some("MY_MARKER"), true),
            ("echo OTHER && git diff", Some("MY_MARKER"), false),
        ];
        for (cmd, extra, want) in cases {
            assert_eq!(is_submit_command(cmd, extra), want, "{cmd}");
        }
    }

    #[test]
    fn think_table() {
        let cases = [
            ("<think>\nplan</think>\nTHOUGHT: x", false),
            ("<think>\nI keep thinking", true),
            ("no think at all", false),
            ("<think>a</think> then <think> again", true),
            ("plan</think>\nanswer", false),
        ];
        for (text, want) in cases {
            assert_eq!(think_unclosed(text), want, "{text}");
        }
    }
}
