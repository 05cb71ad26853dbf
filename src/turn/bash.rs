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

use memchr::memmem;

/// The fence words a block may open with, in the pattern's order.
const FENCE_WORDS: [&str; 2] = ["bash", "mswea_bash_command"];

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
///
/// The matches of ```` ```(?:bash|mswea_bash_command)\s*\n(.*?)\n``` ````
/// (dot matching newline), found without a regex engine: a fence word, the
/// white space after it, then the block from just after one of that space's
/// newlines (the last one with a closing fence after it, as the
/// greedy `\s*` settles) to the first `\n```` after that.
pub fn extract_bash_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(found) = memmem::find(&text.as_bytes()[from..], b"```") {
        let fence = from + found;
        let after_ticks = fence + 3;
        let Some(word) = FENCE_WORDS
            .iter()
            .find(|w| text[after_ticks..].starts_with(**w))
        else {
            from = fence + 1;
            continue;
        };
        let space_start = after_ticks + word.len();
        let space = &text[space_start..];
        let space_len = space
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(space.len());
        // The greedy `\s*` tries the newlines from the last one back.
        let starts: Vec<usize> = space[..space_len]
            .match_indices('\n')
            .map(|(i, _)| space_start + i + 1)
            .collect();
        let block = starts.iter().rev().find_map(|&start| {
            memmem::find(&text.as_bytes()[start..], b"\n```").map(|i| (start, start + i))
        });
        match block {
            Some((start, close)) => {
                blocks.push(&text[start..close]);
                from = close + 4;
            }
            // No closing fence after this one's newlines: none after any later one's.
            None if !starts.is_empty() => break,
            None => from = fence + 1,
        }
    }
    blocks
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
            // white space holding the closing fence: the block is empty
            ("```bash\n\n```", &[""]),
            ("````bash\nls\n````", &["ls"]),
        ];
        for (input, want) in cases {
            assert_eq!(&extract_bash_blocks(input), want, "input: {input:?}");
        }
    }

    /// The blocks the pattern's regex finds, on random text over the
    /// characters that matter to it.
    #[test]
    fn the_same_blocks_as_the_regex() {
        let re = regex::Regex::new(r"(?s)```(?:bash|mswea_bash_command)\s*\n(.*?)\n```").unwrap();
        let parts = [
            "```",
            "bash",
            "mswea_bash_command",
            "\n",
            " ",
            "\t",
            "\r",
            "\u{a0}",
            "ls",
            "`",
            "x",
            "é",
            "\n```",
            "```bash\n",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for len in 0..3000 {
            let text: String = (0..len % 40)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    parts[(state % parts.len() as u64) as usize]
                })
                .collect();
            let want: Vec<&str> = re
                .captures_iter(&text)
                .map(|c| c.get(1).unwrap().as_str())
                .collect();
            assert_eq!(extract_bash_blocks(&text), want, "{text:?}");
        }
    }
}
