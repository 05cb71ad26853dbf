//! `cmd_kind`: which kind of work a bash action does.
//!
//! | command shape                                   | kind            |
//! |-------------------------------------------------|-----------------|
//! | prints a submit marker first (`echo MARKER && …`) | `submit`      |
//! | leading `cd`, `pwd`, `export`, `source`, `set` segments of a `&&`/`;` chain | skipped: the first remaining segment decides |
//! | a pipeline with a `sed -n` stage anywhere       | `sed -n` (a ranged read, e.g. `nl -ba f \| sed -n 5,9p`) |
//! | otherwise a pipeline's first stage decides      | (`grep -rn x . \| head` is `grep -r`) |
//! | `cat -n`, `nl`                                   | `cat -n`        |
//! | `cat`, `head`, `tail` reading                   | `cat`           |
//! | `sed -i`, `perl -i`, `tee`, `patch`, `git apply`, `cat`/`echo`/`printf` redirected into a file (`>`, `>>`, heredoc into a file) | `edit` |
//! | `grep` with `-r`/`-R`, `rg`, `ag`, `git grep`   | `grep -r`       |
//! | `grep`, `egrep`, `fgrep` on named files or stdin | `grep`          |
//! | `python`, `python3`, `pytest`, `python -m pytest` | `pytest/python` |
//! | `find`, `ls`, `tree`                            | `find/ls`       |
//! | anything else                                   | `other`         |
//!
//! Wrappers `timeout N`, `sudo`, `env`, and `VAR=value` prefixes are looked through.
//! Only the first line of a multi-line command is classified (the rest is
//! usually a heredoc body).

use std::borrow::Cow;

use super::markers::is_submit_command;

/// The command kinds, in the order reports list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CmdKind {
    CatN,
    SedN,
    Cat,
    Edit,
    GrepR,
    Grep,
    Python,
    FindLs,
    Submit,
    Other,
}

impl CmdKind {
    pub const ALL: [CmdKind; 10] = [
        CmdKind::CatN,
        CmdKind::SedN,
        CmdKind::Cat,
        CmdKind::Edit,
        CmdKind::GrepR,
        CmdKind::Grep,
        CmdKind::Python,
        CmdKind::FindLs,
        CmdKind::Submit,
        CmdKind::Other,
    ];

    /// The label stored in `turns.cmd_kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            CmdKind::CatN => "cat -n",
            CmdKind::SedN => "sed -n",
            CmdKind::Cat => "cat",
            CmdKind::Edit => "edit",
            CmdKind::GrepR => "grep -r",
            CmdKind::Grep => "grep",
            CmdKind::Python => "pytest/python",
            CmdKind::FindLs => "find/ls",
            CmdKind::Submit => "submit",
            CmdKind::Other => "other",
        }
    }

    pub fn from_label(label: &str) -> Option<CmdKind> {
        CmdKind::ALL.into_iter().find(|k| k.as_str() == label)
    }
}

/// Classify one bash action (see the module table).
pub fn classify_command(command: &str, submit_marker: Option<&str>) -> CmdKind {
    if is_submit_command(command, submit_marker) {
        return CmdKind::Submit;
    }
    let first_line = first_line(command);
    let Some(stages) = deciding_segment(first_line) else {
        return CmdKind::Other;
    };
    let stage_words: Vec<Vec<Cow<str>>> = stages.iter().map(|s| words_of(s)).collect();
    if stage_words.iter().any(|w| {
        let (prog, args) = program(w);
        prog == "sed" && has_flag(args, 'n') && !has_flag(args, 'i')
    }) {
        return CmdKind::SedN;
    }
    let stage = stages.first().copied().unwrap_or("");
    classify_stage(&stage_words[0], stage, first_line)
}

/// A turn's stored kind: `submit` whenever any submit signal fires (the
/// command may hide its marker in a script), else what its command is.
pub fn turn_kind(command: Option<&str>, submits: bool, marker: Option<&str>) -> CmdKind {
    if submits {
        CmdKind::Submit
    } else {
        command
            .map(|c| classify_command(c, marker))
            .unwrap_or(CmdKind::Other)
    }
}

/// The line that decides a command's kind: the first, unless it only changes
/// directory or environment (`cd /repo` on a line of its own), then the first
/// line after it that does more. Later lines are usually a heredoc's body.
fn first_line(command: &str) -> &str {
    let mut lines = command
        .trim_start()
        .lines()
        .filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    if !only_setup(first) {
        return first;
    }
    lines.find(|l| !only_setup(l)).unwrap_or(first)
}

/// A line whose every segment is `cd`, `export` and the like.
fn only_setup(line: &str) -> bool {
    split_chain(line).iter().all(|seg| {
        let words = words_of(seg.first().copied().unwrap_or(""));
        is_setup(program(&words).0)
    })
}

fn is_setup(program: &str) -> bool {
    matches!(
        program,
        "cd" | "export" | "source" | "." | "set" | "pushd" | "pwd" | ""
    )
}

/// The chain segment that decides the kind: the first one that is not `cd`,
/// `export` and the like, as a list of its pipeline stages.
fn deciding_segment(line: &str) -> Option<Vec<&str>> {
    let chain = split_chain(line);
    let pos = chain.iter().position(|seg| {
        let words = words_of(seg.first().copied().unwrap_or(""));
        !is_setup(program(&words).0)
    });
    chain.into_iter().nth(pos.unwrap_or(0))
}

/// The program that decides a command's kind (`grep` for
/// `cd /r && grep -n x f | head`), so reports can list what `other` holds.
pub fn command_head(command: &str) -> String {
    deciding_segment(first_line(command))
        .and_then(|stages| {
            let words = words_of(stages.first()?);
            let (prog, _) = program(&words);
            Some(prog.to_string())
        })
        .unwrap_or_default()
}

fn classify_stage(words: &[Cow<str>], raw: &str, line: &str) -> CmdKind {
    let (prog, args) = program(words);
    let redirects_to_file = writes_file(raw) || (line.contains("<<") && writes_file(line));
    match prog {
        "cat" if redirects_to_file => CmdKind::Edit,
        "cat" if has_flag(args, 'n') => CmdKind::CatN,
        "nl" => CmdKind::CatN,
        "cat" | "head" | "tail" => CmdKind::Cat,
        "echo" | "printf" if redirects_to_file => CmdKind::Edit,
        "sed" | "perl" if has_flag(args, 'i') => CmdKind::Edit,
        "sed" if has_flag(args, 'n') => CmdKind::SedN,
        "tee" | "patch" | "ed" => CmdKind::Edit,
        "git" if args.first().map(Cow::as_ref) == Some("apply") => CmdKind::Edit,
        "git" if args.first().map(Cow::as_ref) == Some("grep") => CmdKind::GrepR,
        "grep" | "egrep" | "fgrep"
            if has_flag(args, 'r')
                || has_flag(args, 'R')
                || args
                    .iter()
                    .any(|a| a == "--recursive" || a == "--dereference-recursive") =>
        {
            CmdKind::GrepR
        }
        "grep" | "egrep" | "fgrep" => CmdKind::Grep,
        "rg" | "ag" => CmdKind::GrepR,
        "python" | "python3" | "pytest" | "py.test" => CmdKind::Python,
        p if p.starts_with("python3.") => CmdKind::Python,
        "find" | "ls" | "tree" => CmdKind::FindLs,
        _ => CmdKind::Other,
    }
}

/// The program of a stage and its arguments, looking through wrappers.
fn program<'a>(words: &'a [Cow<'a, str>]) -> (&'a str, &'a [Cow<'a, str>]) {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_ref();
        if w.contains('=') && !w.starts_with('-') && !w.starts_with('=') {
            i += 1; // VAR=value prefix
        } else if w == "sudo" || w == "env" || w == "command" || w == "exec" {
            i += 1;
        } else if w == "timeout" {
            i += 1;
            while i < words.len()
                && (words[i].starts_with('-')
                    || words[i].chars().next().is_some_and(|c| c.is_ascii_digit()))
            {
                i += 1;
            }
        } else {
            let prog = w.rsplit('/').next().unwrap_or(w);
            return (prog, &words[i + 1..]);
        }
    }
    ("", &[])
}

/// A short flag given alone (`-n`) or combined (`-rn`), before any `--`.
fn has_flag(args: &[Cow<str>], flag: char) -> bool {
    args.iter().take_while(|a| a.as_ref() != "--").any(|a| {
        a.starts_with('-')
            && !a.starts_with("--")
            && a[1..].chars().all(|c| c.is_ascii_alphanumeric())
            && a[1..].contains(flag)
    })
}

/// An output redirect into a file (not `/dev/null`, not an fd duplication).
fn writes_file(stage: &str) -> bool {
    let bytes = stage.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'>' => {
                let mut j = i + 1;
                if j < bytes.len() && bytes[j] == b'>' {
                    j += 1;
                }
                if j < bytes.len() && bytes[j] == b'&' {
                    i = j + 1;
                    continue;
                }
                let target: String = stage[j..]
                    .trim_start()
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .collect();
                if !target.is_empty() && target != "/dev/null" {
                    return true;
                }
            }
            None => {}
        }
        i += 1;
    }
    false
}

/// Split a line into `&&` / `||` / `;` chain segments, each a list of `|`
/// pipeline stages, respecting quotes and backslash escapes.
fn split_chain(line: &str) -> Vec<Vec<&str>> {
    let mut chain = Vec::new();
    let mut stages = Vec::new();
    let mut start = 0;
    let mut quote: Option<u8> = None;
    let bytes = line.as_bytes();
    // Every byte that matters is ASCII, so byte positions are char boundaries.
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(b'"') if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'\\' => i += 1,
                b'\'' | b'"' => quote = Some(c),
                b'&' | b'|' if bytes.get(i + 1) == Some(&c) => {
                    stages.push(&line[start..i]);
                    chain.push(std::mem::take(&mut stages));
                    i += 1;
                    start = i + 1;
                }
                b';' => {
                    stages.push(&line[start..i]);
                    chain.push(std::mem::take(&mut stages));
                    start = i + 1;
                }
                b'|' => {
                    stages.push(&line[start..i]);
                    start = i + 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    stages.push(&line[start.min(line.len())..]);
    chain.push(stages);
    chain
        .into_iter()
        .map(|s| s.into_iter().map(str::trim).collect::<Vec<_>>())
        .filter(|s| s.iter().any(|x| !x.is_empty()))
        .collect()
}

/// Whitespace-separated words with surrounding quotes removed (borrowed
/// where a word has no quotes).
fn words_of(stage: &str) -> Vec<Cow<'_, str>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut quoted = false;
    let mut word_start: Option<usize> = None;
    let mut end_word = |start: usize, end: usize, quoted: bool, cur: &mut String| {
        words.push(if quoted {
            Cow::Owned(std::mem::take(cur))
        } else {
            cur.clear();
            Cow::Borrowed(&stage[start..end])
        });
    };
    for (i, c) in stage.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                quoted = true;
                word_start.get_or_insert(i);
            }
            None if c.is_whitespace() => {
                if let Some(start) = word_start.take() {
                    end_word(start, i, quoted, &mut cur);
                    quoted = false;
                }
            }
            None => {
                cur.push(c);
                word_start.get_or_insert(i);
            }
        }
    }
    if let Some(start) = word_start {
        end_word(start, stage.len(), quoted, &mut cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        use CmdKind::*;
        let cases = [
            ("cat -n /workspace/repo/autode/values.py", CatN),
            ("cd /workspace/repo && cat -n src/x.py", CatN),
            ("nl -ba autode/values.py | sed -n '208,250p'", SedN),
            ("sed -n '217,244p' /workspace/repo/autode/values.py", SedN),
            ("sed -n '230,300p' f.go | cat -n", SedN),
            ("cat tests/missing_colon.py", Cat),
            ("head -50 setup.py", Cat),
            ("cat > /workspace/test_bug.py << 'EOF'\nimport x\nEOF", Edit),
            ("cat <<'EOF' > fix.py\nprint(1)\nEOF", Edit),
            ("sed -i 's/a/b/' tests/missing_colon.py", Edit),
            ("echo 'x = 1' >> conf.py", Edit),
            ("echo hello", Other),
            ("git apply fix.patch", Edit),
            ("grep -rn \"compileRegex\" interp/", GrepR),
            ("grep -n \"__mul__\\|__truediv__\" autode/values.py", Grep),
            ("cd /repo && grep -n 'def main' src/cli.py | head -5", Grep),
            ("egrep 'a|b' x.txt", Grep),
            ("grep -rn foo .", GrepR),
            ("grep --recursive -n foo src", GrepR),
            ("cd /repo\ngrep -rn foo .", GrepR),
            ("cd /repo\n\nexport X=1\ncat -n a.py", CatN),
            ("cat > f.py <<'EOF'\ncd /x\nEOF", Edit),
            ("cd /repo && grep -R foo . | head -20", GrepR),
            ("rg -n separable", GrepR),
            ("git grep -n foo", GrepR),
            ("python3 tests/missing_colon.py", Python),
            ("cd /workspace/x && python /workspace/test_bug.py", Python),
            ("python -m pytest tests/test_value.py -x -q", Python),
            ("pytest -q tests/", Python),
            ("timeout 60 python -c 'print(1)'", Python),
            ("PYTHONPATH=. python x.py", Python),
            ("find /workspace/x/tests -name \"*value*\" -type f", FindLs),
            ("ls -la", FindLs),
            ("ls -la tests/ 2>/dev/null", FindLs),
            (
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
                Submit,
            ),
            ("git status", Other),
            ("pwd && ls", FindLs),
            ("", Other),
            ("cd /repo", Other),
        ];
        for (cmd, want) in cases {
            assert_eq!(classify_command(cmd, None), want, "{cmd:?}");
        }
    }

    #[test]
    fn heads() {
        let cases = [
            ("cd /repo && git log -n 3", "git"),
            ("timeout 10 wc -l a.py | sort", "wc"),
            ("PYTHONPATH=. python x.py", "python"),
            ("/usr/bin/make test", "make"),
            ("", ""),
            ("cd /repo", "cd"),
        ];
        for (cmd, want) in cases {
            assert_eq!(command_head(cmd), want, "{cmd:?}");
        }
    }

    #[test]
    fn labels_round_trip() {
        for k in CmdKind::ALL {
            assert_eq!(CmdKind::from_label(k.as_str()), Some(k));
        }
    }
}
