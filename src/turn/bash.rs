//! Bash block extraction from assistant text.
//!
//! mini-swe-agent's parser takes fenced blocks matched by
//! ```` ```bash\s*\n(.*?)\n``` ````; its v2 text mode renamed the fence to
//! ```` ```mswea_bash_command ````. Both are accepted. Tool-call actions (v2)
//! never pass through here: the source reader takes them from the call.

use regex::Regex;
use std::sync::LazyLock;

static BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)```(?:bash|mswea_bash_command)[ \t]*\r?\n(.*?)\r?\n```")
        .expect("bash block regex")
});

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
            ("```bash\r\nls\r\n```", &["ls"]),
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
