//! Observation format (detected once per trajectory from its first
//! observation) and whether one observation reports a failure.
//!
//! | format     | shape                                                        | failed when |
//! |------------|--------------------------------------------------------------|-------------|
//! | RETURNCODE | `<returncode>N</returncode>` then `<output>` (or `<output_head>` … `<elided_chars>` … `<output_tail>`) | N != 0 |
//! | JSON       | a JSON object `{"returncode": N, "output": …}` (or `output_head` … `elided_chars` … `output_tail`): mini-swe-agent 2.x's default template | N != 0 |
//! | SWE_AGENT  | starts `OBSERVATION:`                                        | error text |
//! | OPENHANDS  | bare output, bash calls end `[The command completed with exit code N.]` / `[Command finished with exit code N]` | N != 0; error text only where there is no code, never in a file an editor read shows |
//!
//! Synthetic observations written by the agent harness itself (no bash block
//! found, format errors, timeouts) count as failures in every format when no
//! exit code says otherwise.

use regex::Regex;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObsFormat {
    Returncode,
    Json,
    SweAgent,
    OpenHands,
}

impl ObsFormat {
    pub const ALL: [ObsFormat; 4] = [
        ObsFormat::Returncode,
        ObsFormat::Json,
        ObsFormat::SweAgent,
        ObsFormat::OpenHands,
    ];

    /// The label stored in `trajectories.obs_format`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObsFormat::Returncode => "RETURNCODE",
            ObsFormat::Json => "JSON",
            ObsFormat::SweAgent => "SWE_AGENT",
            ObsFormat::OpenHands => "OPENHANDS",
        }
    }

    pub fn from_label(label: &str) -> Option<ObsFormat> {
        ObsFormat::ALL.into_iter().find(|f| f.as_str() == label)
    }
}

/// What one observation says about the command before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObsOutcome {
    pub failed: bool,
    pub returncode: Option<i64>,
}

static RETURNCODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<returncode>\s*(-?\d+)\s*</returncode>").expect("returncode regex")
});
static EXIT_TRAILER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\[(?:The command completed with exit code|Command finished with exit code) (-?\d+)\.?\]",
    )
    .expect("exit trailer regex")
});
static ERROR_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)(command not found|Traceback \(most recent call last\)|No such file or directory|^\w*Error: |^ERROR: |Permission denied|syntax error|cannot access|fatal: )",
    )
    .expect("error text regex")
});
static HARNESS_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(No bash command found in assistant message|Please always provide EXACTLY ONE action|timed out and has been killed|\ATool call error:)")
        .expect("harness failure regex")
});

/// Strip the quote and whitespace some recorders wrap observations in.
fn unwrap(text: &str) -> &str {
    text.trim_start_matches(|c: char| c.is_whitespace() || c == '\'' || c == '"')
}

/// The format of a trajectory, from its first observation.
pub fn detect_obs_format(first_observation: &str) -> ObsFormat {
    let t = unwrap(first_observation);
    if t.starts_with("<returncode>") || t.starts_with("<exception>") {
        ObsFormat::Returncode
    } else if json_returncode(first_observation).is_some() {
        ObsFormat::Json
    } else if t.starts_with("OBSERVATION:") {
        ObsFormat::SweAgent
    } else {
        ObsFormat::OpenHands
    }
}

static JSON_RETURNCODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\A\s*\{\s*"returncode"\s*:\s*(-?\d+)\s*[,}]"#).expect("json returncode regex")
});

/// The return code a JSON observation opens with (`{"returncode": N, ...`).
fn json_returncode(text: &str) -> Option<i64> {
    JSON_RETURNCODE
        .captures(text)
        .and_then(|c| c[1].parse::<i64>().ok())
}

/// How far into an observation the harness's own messages are looked for:
/// they open the observation, while the same words deep in a file's content
/// are that file's text.
const HARNESS_PREFIX_BYTES: usize = 600;

/// The longest prefix of `text` of at most `max` bytes that ends on a
/// character boundary (never splits a multi-byte character).
pub fn prefix_at_most(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// An editor call showing a file or a folder (OpenHands): its content is never error text.
fn is_editor_output(text: &str) -> bool {
    let t = unwrap(text);
    t.starts_with("Here's the result of running `cat -n`")
        || t.starts_with("Here's the files and directories")
        || t.starts_with("File created successfully at:")
        || t.starts_with("The file ") && t.contains(" has been edited.")
}

/// Whether `text` (an observation in a trajectory of `format`) failed, and its exit code.
///
/// An exit code, where the observation carries one, decides. Without one, a
/// harness message (no bash block, format error, timeout) is a failure in
/// every format; RETURNCODE observations have nothing else to go on, and the
/// others fall back to error text, except for file content an editor showed.
pub fn observation_outcome(format: ObsFormat, text: &str) -> ObsOutcome {
    // A file an editor read shows is content: no code, no error text in it counts.
    if !matches!(format, ObsFormat::Returncode | ObsFormat::Json) && is_editor_output(text) {
        return ObsOutcome {
            failed: false,
            returncode: None,
        };
    }
    let code = match format {
        ObsFormat::Returncode => RETURNCODE.captures(text),
        ObsFormat::Json => None,
        ObsFormat::OpenHands | ObsFormat::SweAgent => EXIT_TRAILER.captures_iter(text).last(),
    }
    .and_then(|c| c[1].parse::<i64>().ok())
    .or_else(|| {
        (format == ObsFormat::Json)
            .then(|| json_returncode(text))
            .flatten()
    });
    let failed = match code {
        Some(n) => n != 0,
        None => {
            HARNESS_FAILURE.is_match(prefix_at_most(text, HARNESS_PREFIX_BYTES))
                || !matches!(format, ObsFormat::Returncode | ObsFormat::Json)
                    && ERROR_TEXT.is_match(text)
        }
    };
    ObsOutcome {
        failed,
        returncode: code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ObsFormat::*;

    #[test]
    fn a_multibyte_character_across_the_harness_cut_is_not_split() {
        for ch in ["é", "你", "🚀"] {
            for pad in 595..601 {
                let text = format!("{}{}", "x".repeat(pad), ch.repeat(4));
                for fmt in [Returncode, SweAgent, OpenHands] {
                    assert!(
                        !observation_outcome(fmt, &text).failed,
                        "{fmt:?} {pad} {ch}"
                    );
                }
                let p = prefix_at_most(&text, HARNESS_PREFIX_BYTES);
                assert!(p.len() <= HARNESS_PREFIX_BYTES && text.starts_with(p));
            }
        }
    }

    #[test]
    fn detect_table() {
        let cases = [
            (
                "<returncode>1</returncode>\n<output>\nx\n</output>",
                Returncode,
            ),
            (
                "'<returncode>0</returncode>\\n<output>\\n./a.py\\n</output>'",
                Returncode,
            ),
            ("OBSERVATION:\nfile.py", SweAgent),
            (
                "{\n  \"returncode\": 0,\n  \"output\": \"a.py\\n\"\n}",
                Json,
            ),
            ("{\"output\": \"x\"}", OpenHands),
            (
                "Here's the result of running `cat -n` on /x.py:\n 1\tx",
                OpenHands,
            ),
            ("tests/test_value.py", OpenHands),
        ];
        for (text, want) in cases {
            assert_eq!(detect_obs_format(text), want, "{text:?}");
        }
    }

    #[test]
    fn outcome_table() {
        let cases: &[(ObsFormat, &str, bool, Option<i64>)] = &[
            (Returncode, "<returncode>0</returncode>\n<output>\n8.2\n</output>", false, Some(0)),
            (Returncode, "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n</output>", true, Some(1)),
            (Returncode, "<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n</warning><output_head>\nab\n</output_head>\n<elided_chars>\n1234 characters elided\n</elided_chars>\n<output_tail>\ncd\n</output_tail>", false, Some(0)),
            (Returncode, "No bash command found in assistant message.", true, None),
            (Json, "{\n  \"returncode\": 2,\n  \"output\": \"ls: cannot access 'x'\"\n}", true, Some(2)),
            (Json, "{\n  \"returncode\": 0,\n  \"output_head\": \"Traceback (most recent call last):\",\n  \"elided_chars\": 12}", false, Some(0)),
            (Json, "Tool call error:\n\n<error>\nMissing 'command' argument in bash tool call.\n</error>", true, None),
            (Returncode, "The command 'sleep 999' timed out and has been killed.", true, None),
            (OpenHands, "cat: /x/test_values.py: No such file or directory\n[The command completed with exit code 1.]\n[Command finished with exit code 1.]", true, Some(1)),
            (OpenHands, "Energy(1.0 Ha)\n[The command completed with exit code 0.]\n[Command finished with exit code 0]", false, Some(0)),
            (OpenHands, "tests/test_value.py", false, None),
            (OpenHands, "File created successfully at: /workspace/test_bug.py", false, None),
            (OpenHands, "bash: foo: command not found", true, None),
            (SweAgent, "OBSERVATION:\nTraceback (most recent call last):\n  File \"x\"", true, None),
            (SweAgent, "OBSERVATION:\nall good", false, None),
            // the exit code decides where there is one, whatever the text says
            (OpenHands, "Traceback (most recent call last):\n  File \"t.py\"\n[The command completed with exit code 0.]", false, Some(0)),
            (OpenHands, "log: timed out and has been killed\n[Command finished with exit code 0]", false, Some(0)),
            (OpenHands, "\n[The command completed with exit code 127.]", true, Some(127)),
            // a file shown by an editor read is content, not an error
            (OpenHands, "Here's the result of running `cat -n` on /r/t.py:\n     1\traise ValueError('No such file or directory')\n     2\tTraceback (most recent call last):", false, None),
            (OpenHands, "The command 'pytest' timed out and has been killed.", true, None),
            (Returncode, "<returncode>0</returncode>\n<output>\nNo bash command found in assistant message.\n</output>", false, Some(0)),
            // an editor read is content even when it quotes a harness message or a returncode
            (OpenHands, "Here's the result of running `cat -n` on /r/log.txt:\n     1\tjob timed out and has been killed", false, None),
            (OpenHands, "Here's the result of running `cat -n` on /r/t.txt:\n     1\t<returncode>2</returncode>", false, None),
            (OpenHands, "Here's the files and directories up to 2 levels deep in /r:\n/r/missing_errors.py", false, None),
            // an editor error has no exit code: its text decides
            (OpenHands, "ERROR: Invalid `path` parameter: /r/x.py. The path /r/x.py does not exist.", true, None),
        ];
        for (fmt, text, failed, code) in cases {
            let got = observation_outcome(*fmt, text);
            assert_eq!(
                (got.failed, got.returncode),
                (*failed, *code),
                "{fmt:?} {text:?}"
            );
        }
    }
}
