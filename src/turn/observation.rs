//! Observation format (detected once per trajectory from its first
//! observation) and whether one observation reports a failure.
//!
//! | format     | shape                                                        | failed when |
//! |------------|--------------------------------------------------------------|-------------|
//! | RETURNCODE | `<returncode>N</returncode>` then `<output>` (or `<output_head>` … `<elided_chars>` … `<output_tail>`) | N != 0 |
//! | SWE_AGENT  | starts `OBSERVATION:`                                        | error text |
//! | OPENHANDS  | bare output, bash calls end `[The command completed with exit code N.]` / `[Command finished with exit code N]` | N != 0, or error text when no code |
//!
//! Synthetic observations written by the agent harness itself (no bash block
//! found, format errors, timeouts) count as failures in every format.

use regex::Regex;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObsFormat {
    Returncode,
    SweAgent,
    OpenHands,
}

impl ObsFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ObsFormat::Returncode => "RETURNCODE",
            ObsFormat::SweAgent => "SWE_AGENT",
            ObsFormat::OpenHands => "OPENHANDS",
        }
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
        r"(?m)(command not found|Traceback \(most recent call last\)|No such file or directory|^\w*Error: |Permission denied|syntax error|cannot access|fatal: )",
    )
    .expect("error text regex")
});
static HARNESS_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(No bash command found in assistant message|Please always provide EXACTLY ONE action|timed out and has been killed)")
        .expect("harness failure regex")
});

/// Strip the quote and whitespace some recorders wrap observations in.
fn unwrap(text: &str) -> &str {
    text.trim_start_matches(|c: char| c.is_whitespace() || c == '\'' || c == '"')
}

/// The format of a trajectory, from its first observation.
pub fn detect_obs_format(first_observation: &str) -> ObsFormat {
    let t = unwrap(first_observation);
    if t.starts_with("<returncode>") {
        ObsFormat::Returncode
    } else if t.starts_with("OBSERVATION:") {
        ObsFormat::SweAgent
    } else {
        ObsFormat::OpenHands
    }
}

/// Whether `text` (an observation in a trajectory of `format`) failed, and its exit code.
pub fn observation_outcome(format: ObsFormat, text: &str) -> ObsOutcome {
    let harness = HARNESS_FAILURE.is_match(&text[..text.len().min(600)])
        && !RETURNCODE.is_match(text)
        || text.contains("timed out and has been killed");
    let code = match format {
        ObsFormat::Returncode => RETURNCODE.captures(text),
        ObsFormat::OpenHands | ObsFormat::SweAgent => EXIT_TRAILER.captures_iter(text).last(),
    }
    .and_then(|c| c[1].parse::<i64>().ok())
    .or_else(|| RETURNCODE.captures(text).and_then(|c| c[1].parse().ok()));
    let failed = harness
        || match (format, code) {
            (_, Some(n)) => n != 0,
            (ObsFormat::Returncode, None) => false,
            (_, None) => {
                !unwrap(text).starts_with("File created successfully at:")
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
            (Returncode, "The command 'sleep 999' timed out and has been killed.", true, None),
            (OpenHands, "cat: /x/test_values.py: No such file or directory\n[The command completed with exit code 1.]\n[Command finished with exit code 1.]", true, Some(1)),
            (OpenHands, "Energy(1.0 Ha)\n[The command completed with exit code 0.]\n[Command finished with exit code 0]", false, Some(0)),
            (OpenHands, "tests/test_value.py", false, None),
            (OpenHands, "File created successfully at: /workspace/test_bug.py", false, None),
            (OpenHands, "bash: foo: command not found", true, None),
            (SweAgent, "OBSERVATION:\nTraceback (most recent call last):\n  File \"x\"", true, None),
            (SweAgent, "OBSERVATION:\nall good", false, None),
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
