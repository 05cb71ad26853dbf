//! What an input written by someone else may make turnlake do: the bounds a
//! hostile or broken input cannot exceed, and how far a folder walk goes.
//! The binary sets them once from its global flags (each with a `TURNLAKE_*`
//! variable) before any reader runs; a library caller that sets nothing gets
//! the defaults. SECURITY.md lists them.

use std::sync::OnceLock;

/// The bounds on one input, and whether walks follow symlinks to folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one JSON record: a JSONL line, a whole `*.traj.json`, a
    /// `verdict.json`. A longer line is rejected without being held whole.
    pub record_bytes: u64,
    /// Nesting depth of one JSON record (at most [`MAX_JSON_DEPTH`]).
    pub json_depth: usize,
    /// Messages in one trajectory.
    pub messages: usize,
    /// Whether folder walks follow symlinks to folders (`--follow`).
    pub follow: bool,
}

/// The JSON parser's own bound on nesting (serde_json refuses deeper input).
pub const MAX_JSON_DEPTH: usize = 128;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            record_bytes: 256 << 20,
            json_depth: MAX_JSON_DEPTH,
            messages: 100_000,
            follow: false,
        }
    }
}

static SET: OnceLock<Limits> = OnceLock::new();

/// Set the limits for this process (the first call wins).
pub fn set(limits: Limits) {
    let _ = SET.set(limits);
}

/// The limits in force.
pub fn get() -> Limits {
    SET.get().copied().unwrap_or_default()
}

/// Whether `bytes`, read as JSON, nests deeper than `max` (brackets inside
/// strings do not count). Cheap beside the parse it guards.
pub fn nests_deeper(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        let cases: [(&str, usize, bool); 6] = [
            (r#"{"a": [1, {"b": 2}]}"#, 3, false),
            (r#"{"a": [1, {"b": 2}]}"#, 2, true),
            (r#"{"a": "[[[[[[[["}"#, 1, false),
            (r#"{"a": "\"[[[["}"#, 1, false),
            ("[[]][[]]", 2, false),
            ("[[[]]]", 2, true),
        ];
        for (json, max, deeper) in cases {
            assert_eq!(nests_deeper(json.as_bytes(), max), deeper, "{json} {max}");
        }
    }
}
