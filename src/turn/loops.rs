//! Repeat and loop metrics over a trajectory's commands.
//!
//! Commands are compared after trimming and collapsing whitespace. Submit
//! commands are left out by the caller, as is everything outside the scope
//! being measured (for an Albedo side: its scored outputs only).

use std::borrow::Cow;
use std::collections::HashSet;

/// The validator's `loop_check` rejects a side at these values.
pub const VALIDATOR_DUP_RATIO: f64 = 0.65;
pub const VALIDATOR_MAX_RUN: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopMetrics {
    /// Share of commands that repeat an earlier command: 1 - distinct / total.
    pub dup_cmd_ratio: f64,
    /// Longest run of consecutive identical commands.
    pub max_cmd_run: u32,
}

impl LoopMetrics {
    /// Whether the validator would call this trajectory looped.
    pub fn validator_looped(&self) -> bool {
        self.dup_cmd_ratio >= VALIDATOR_DUP_RATIO || self.max_cmd_run >= VALIDATOR_MAX_RUN
    }
}

/// A command in the form used for comparisons: words joined by one space.
/// Most commands are in that form already, and are returned as they are.
pub fn normalize_command(command: &str) -> Cow<'_, str> {
    let mut after_space = true;
    let normal = if command.is_ascii() {
        command.bytes().all(|b| {
            let ok = if b == b' ' {
                !after_space
            } else {
                !b.is_ascii_whitespace() && b != 0x0b
            };
            after_space = b == b' ';
            ok
        })
    } else {
        command.chars().all(|c| {
            let ok = if c == ' ' {
                !after_space
            } else {
                !c.is_whitespace()
            };
            after_space = c == ' ';
            ok
        })
    } && !after_space;
    if normal || command.is_empty() {
        Cow::Borrowed(command)
    } else {
        Cow::Owned(command.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

pub fn loop_metrics<'a>(commands: impl IntoIterator<Item = &'a str>) -> LoopMetrics {
    let normal: Vec<Cow<str>> = commands.into_iter().map(normalize_command).collect();
    loop_metrics_normalized(normal.iter().map(|c| c.as_ref()))
}

/// [`loop_metrics`] of commands already in [`normalize_command`]'s form.
pub fn loop_metrics_normalized<'a>(normal: impl IntoIterator<Item = &'a str>) -> LoopMetrics {
    let mut seen = HashSet::new();
    let (mut total, mut run, mut max_run) = (0u32, 0u32, 0u32);
    let mut prev: Option<&str> = None;
    for n in normal {
        total += 1;
        run = if prev == Some(n) { run + 1 } else { 1 };
        max_run = max_run.max(run);
        if prev != Some(n) {
            seen.insert(n);
        }
        prev = Some(n);
    }
    let dup_cmd_ratio = if total == 0 {
        0.0
    } else {
        1.0 - seen.len() as f64 / total as f64
    };
    LoopMetrics {
        dup_cmd_ratio,
        max_cmd_run: max_run,
    }
}

/// For each command (in [`normalize_command`]'s form), whether an identical
/// command came earlier (`None` never repeats).
pub fn repeat_flags<'a>(normal: impl IntoIterator<Item = Option<&'a str>>) -> Vec<bool> {
    let mut seen = HashSet::new();
    normal
        .into_iter()
        .map(|c| c.is_some_and(|c| !seen.insert(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_table() {
        let cases: &[(&[&str], f64, u32)] = &[
            (&[], 0.0, 0),
            (&["ls"], 0.0, 1),
            (&["ls", "ls", "ls"], 2.0 / 3.0, 3),
            (&["ls", "cat a", "ls", "cat a"], 0.5, 1),
            (&["ls  -la", "ls -la", "pwd"], 1.0 / 3.0, 2),
            (&["a", "b", "b", "b", "b", "b", "b", "c"], 5.0 / 8.0, 6),
        ];
        for (cmds, ratio, run) in cases {
            let m = loop_metrics(cmds.iter().copied());
            assert!(
                (m.dup_cmd_ratio - ratio).abs() < 1e-12,
                "{cmds:?}: {}",
                m.dup_cmd_ratio
            );
            assert_eq!(m.max_cmd_run, *run, "{cmds:?}");
        }
        assert!(loop_metrics(["a", "b", "b", "b", "b", "b", "b", "c"]).validator_looped());
        assert!(!loop_metrics(["a", "b", "a"]).validator_looped());
    }

    #[test]
    fn normal_forms() {
        for (command, want) in [
            ("ls -la", "ls -la"),
            ("  ls   -la\t\n", "ls -la"),
            ("a\x0bb", "a b"),
            ("a\x0cb\rc", "a b c"),
            ("naïve  café", "naïve café"),
            ("a\u{a0}b", "a b"),
            ("", ""),
            (" ", ""),
        ] {
            assert_eq!(normalize_command(command), want, "{command:?}");
        }
    }

    #[test]
    fn repeats() {
        let commands = [
            Some("ls"),
            None,
            Some("cat x"),
            Some(" ls "),
            None,
            Some("cat x"),
        ];
        let normal: Vec<_> = commands.iter().map(|c| c.map(normalize_command)).collect();
        let flags = repeat_flags(normal.iter().map(|c| c.as_deref()));
        assert_eq!(flags, vec![false, false, false, true, false, true]);
    }
}
