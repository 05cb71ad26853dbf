//! Bash block extraction from assistant text.
//!
//! mini-swe-agent's parser takes fenced blocks matched by
//! ```` ```bash\s*\n(.*?)\n``` ```` (dot matches newline); its v2 text mode
//! renamed the fence to ```` ```mswea_bash_command ````. Both fences follow
//! that rule exactly: any whitespace (blank lines, `\r`) may stand between the
//! fence word and the newline, and the block is everything up to the first
//! `\n```` after it, so a CRLF block keeps its last `\r` as the agent's own
//! parser does. Tool-call actions (v2) never pass through here: the source
//! reader takes them from the call.

use regex::Regex;
use std::sync::LazyLock;

static BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)```(?:bash|mswea_bash_command)\s*\n(.*?)\n```").expect("bash block regex")
});

/// The text an assistant message's action is read from: its content, or its
/// `reasoning_content` when the content is blank (some providers put it there).
pub fn action_text<'a>(content: &'a str, reasoning_content: Option<&'a str>) -> &'a str {
    if content.trim().is_empty() {
        reasoning_content.unwrap_or("")
    } else {
        content
    }
}

/// Every fenced bash block in `text`, in order, without the fences.
pub fn extract_bash_blocks(text: &str) -> Vec<&str> {
    BLOCK
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&str, &[&str])] = &[
            ("THOUGHT: look\n\n```bash\nls -la\n```", &["ls -la"]),
            (
                "I'll check.\n\n```mswea_bash_command\ncat tests/x.py\n```",
                &["cat tests/x.py"],
            ),
            ("no block here", &[]),
            ("```python\nprint(1)\n```", &[]),
            ("```bash\na\n```\ntext\n```bash\nb\n```", &["a", "b"]),
            ("```bash   \nmulti\nline\n```", &["multi\nline"]),
            ("```bash\r\nls\r\n```", &["ls\r"]),
            ("```mswea_bash_command \t\r\nls\n```", &["ls"]),
            // blank lines after the fence word are whitespace before the newline
            ("```bash\n\n\ncat -n a.py\n```", &["cat -n a.py"]),
            ("```mswea_bash_command\n\ncat a\n```", &["cat a"]),
            // the fence word must be exact: `bashx` is not a bash block
            ("```bashx\nls\n```", &[]),
            // unterminated fence is not a block
            ("```bash\nls -la\n", &[]),
            // heredoc holding backticks keeps going until the closing fence line
            (
                "```bash\ncat > f <<'EOF'\nx\nEOF\n```",
                &["cat > f <<'EOF'\nx\nEOF"],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(&extract_bash_blocks(input), want, "input: {input:?}");
        }
    }
}
