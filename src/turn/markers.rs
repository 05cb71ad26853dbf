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
        r#"(?:^|[\s;&|(){{}}`])(?:echo|printf)\s[^;&|\n]*?\b(?:{alts}|SUBMIT_TASK_[0-9a-fA-F]{{8}})\b"#
    ))
    .expect("submit regex")
});
/// Literals one of which every marker `SUBMIT` matches holds: most commands
/// hold none, and the regex is not run on them.
const MARKER_PARTS: [&str; 2] = ["SUBMIT", "MINI_SWE_AGENT_FINAL_OUTPUT"];

static OBS_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    let alts = SUBMIT_MARKERS.join("|");
    Regex::new(&format!(r#"^(?:{alts}|SUBMIT_TASK_[0-9a-fA-F]{{8}})\s*$"#)).expect("marker regex")
});

/// True when the command prints a submit marker anywhere in it
/// (`cd /repo && echo MARKER && git diff`, `printf '%s\n' MARKER`,
/// `echo "done: MARKER"`): the marker, as a whole word, among the arguments of
/// an `echo` or `printf` in one segment of the command. `extra_marker` is a
/// run's own marker (Albedo's `submit_marker`), if any.
pub fn is_submit_command(command: &str, extra_marker: Option<&str>) -> bool {
    if MARKER_PARTS.iter().any(|part| command.contains(part)) && SUBMIT.is_match(command) {
        return true;
    }
    match extra_marker {
        Some(m) if !m.trim().is_empty() => prints_word(command, m.trim()),
        _ => false,
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `word` occurs in `text` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text.as_bytes()[..at].last().copied();
        let after = text.as_bytes().get(at + word.len()).copied();
        !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
    })
}

/// Whether some `echo` / `printf` in `command` prints `marker`: the marker
/// after it in the same segment (segments end at `;`, `&`, `|`, newlines).
fn prints_word(command: &str, marker: &str) -> bool {
    command.split([';', '&', '|', '\n']).any(|segment| {
        ["echo", "printf"].iter().any(|prog| {
            segment.match_indices(prog).any(|(at, _)| {
                let before = segment.as_bytes()[..at].last().copied();
                let rest = &segment[at + prog.len()..];
                !before.is_some_and(|b| is_word_byte(b) || b == b'-' || b == b'.')
                    && rest.starts_with(|c: char| c.is_whitespace())
                    && has_word(rest, marker)
            })
        })
    })
}

/// Whether an observation's first output line is a submit marker (the run's
/// own, if any). A RETURNCODE observation's output starts after its
/// `<output>` (or `<output_head>`) tag.
pub fn observation_is_marker(observation: &str, extra_marker: Option<&str>) -> bool {
    let text = observation.trim_start_matches(|c: char| c.is_whitespace() || c == '\'' || c == '"');
    let body = if text.starts_with("<returncode>") {
        ["<output>", "<output_head>"]
            .iter()
            .filter_map(|tag| text.find(tag).map(|at| &text[at + tag.len()..]))
            .next()
            .unwrap_or("")
    } else {
        text
    };
    let first = body
        .trim_start_matches(['\r', '\n'])
        .lines()
        .next()
        .unwrap_or("")
        .trim_end();
    OBS_MARKER.is_match(first)
        || extra_marker.is_some_and(|m| !m.trim().is_empty() && first == m.trim())
}

/// Which signal says a turn submitted. Recorders often drop the marker line
/// from the observation, so any one of them is enough; the first in this
/// order is the one recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubmitSignal {
    /// The command prints a marker.
    Command,
    /// The next observation's first line is a marker.
    Observation,
    /// The run's exit record (`exit_status: Submitted`) follows the turn.
    Exit,
}

impl SubmitSignal {
    pub const ALL: [SubmitSignal; 3] = [
        SubmitSignal::Command,
        SubmitSignal::Observation,
        SubmitSignal::Exit,
    ];

    /// The label stored in `turns.submit_signal`.
    pub fn as_str(self) -> &'static str {
        match self {
            SubmitSignal::Command => "command",
            SubmitSignal::Observation => "observation",
            SubmitSignal::Exit => "exit",
        }
    }
}

/// Whether (and by which signal) a turn submits: its command, the
/// observation right after it (if any) and the exit status of an exit record
/// right after it (if any).
pub fn submit_signal(
    command: Option<&str>,
    next_observation: Option<&str>,
    exit_status_after: Option<&str>,
    extra_marker: Option<&str>,
) -> Option<SubmitSignal> {
    if command.is_some_and(|c| is_submit_command(c, extra_marker)) {
        Some(SubmitSignal::Command)
    } else if next_observation.is_some_and(|o| observation_is_marker(o, extra_marker)) {
        Some(SubmitSignal::Observation)
    } else if exit_status_after.is_some_and(|s| s.eq_ignore_ascii_case("submitted")) {
        Some(SubmitSignal::Exit)
    } else {
        None
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
    fn every_marker_holds_a_part_the_regex_is_run_for() {
        for marker in SUBMIT_MARKERS.iter().chain(&["SUBMIT_TASK_0123abcd"]) {
            assert!(MARKER_PARTS.iter().any(|p| marker.contains(p)), "{marker}");
            assert!(
                is_submit_command(&format!("echo {marker}"), None),
                "{marker}"
            );
        }
    }

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
            // anywhere in the command, as real runs write it
            (
                "cd /repo && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
                None,
                true,
            ),
            (
                "git add -A; printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n'; git diff --cached",
                None,
                true,
            ),
            (
                "cd /r && (echo -e MINI_SWE_AGENT_FINAL_OUTPUT; git diff)",
                None,
                true,
            ),
            (
                "echo done && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUTX",
                None,
                false,
            ),
            (
                "cat notes_COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT.txt",
                None,
                false,
            ),
            (
                "cd /r && echo MY_MARKER && git diff",
                Some("MY_MARKER"),
                true,
            ),
            (
                "grep -r COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT .",
                None,
                false,
            ),
            ("cat file", None, false),
            ("echo MY_MARKER && git diff", Some("MY_MARKER"), true),
            ("echo OTHER && git diff", Some("MY_MARKER"), false),
            (
                "printf '%s\\n' COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; git diff",
                None,
                true,
            ),
            (
                "echo \"done: COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\" && git diff",
                None,
                true,
            ),
            (
                "printf 'x\\n' && echo ok; grep COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT f",
                None,
                false,
            ),
            ("echo 'ready MY_MARKER'", Some("MY_MARKER"), true),
            ("echo MY_MARKERS", Some("MY_MARKER"), false),
        ];
        for (cmd, extra, want) in cases {
            assert_eq!(is_submit_command(cmd, extra), want, "{cmd}");
        }
    }

    #[test]
    fn signal_table() {
        use SubmitSignal::*;
        let m = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<SubmitSignal>,
        );
        let cases: &[Case] = &[
            (Some("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"), None, None, None, Some(Command)),
            (Some("./finish.sh"), Some("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/x b/x"), None, None, Some(Observation)),
            (Some("./finish.sh"), Some("<returncode>0</returncode>\n<output>\nok\n</output>"), None, None, None),
            (Some("git diff"), Some("diff --git a/x b/x"), Some("Submitted"), None, Some(Exit)),
            (Some("git diff"), None, Some("LimitsExceeded"), None, None),
            (Some("./f.sh"), Some("MY_MARKER\n"), None, Some("MY_MARKER"), Some(Observation)),
            (None, Some(m), None, None, Some(Observation)),
            (None, None, None, None, None),
            (Some("bash submit.sh"), Some("<returncode>0</returncode>\n<output>\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n</output>"), None, None, Some(Observation)),
        ];
        for (cmd, obs, exit, extra, want) in cases {
            assert_eq!(
                submit_signal(*cmd, *obs, *exit, *extra),
                *want,
                "{cmd:?} {obs:?} {exit:?}"
            );
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
