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
    let (line, stages) = deciding(command);
    let Some(stages) = stages else {
        return CmdKind::Other;
    };
    if stages.iter().any(|s| is_ranged_sed(s)) {
        return CmdKind::SedN;
    }
    classify_stage(stages.first().copied().unwrap_or(""), line)
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

/// The line that decides a command's kind and its chain segment that
/// decides, as the segment's pipeline stages: the first line and segment
/// that do more than change directory or environment (`cd /repo` on a line
/// of its own, `cd /r && …`). Later lines are usually a heredoc's body.
fn deciding(command: &str) -> (&str, Option<Vec<&str>>) {
    let mut lines = command
        .trim_start()
        .lines()
        .filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let mut first_chain = split_chain(first);
    if let Some(at) = first_chain.iter().position(|seg| !is_setup_segment(seg)) {
        return (first, Some(first_chain.swap_remove(at)));
    }
    for line in lines {
        let mut chain = split_chain(line);
        if let Some(at) = chain.iter().position(|seg| !is_setup_segment(seg)) {
            return (line, Some(chain.swap_remove(at)));
        }
    }
    (first, first_chain.into_iter().next())
}

/// A chain segment that is `cd`, `export` and the like.
fn is_setup_segment(stages: &[&str]) -> bool {
    is_setup(&program(stages.first().copied().unwrap_or("")).0)
}

fn is_setup(program: &str) -> bool {
    matches!(
        program,
        "cd" | "export" | "source" | "." | "set" | "pushd" | "pwd" | ""
    )
}

/// The program that decides a command's kind (`grep` for
/// `cd /r && grep -n x f | head`), so reports can list what `other` holds.
pub fn command_head(command: &str) -> String {
    deciding(command)
        .1
        .and_then(|stages| Some(program(stages.first()?).0.into_owned()))
        .unwrap_or_default()
}

/// A `sed -n` stage that does not edit in place: a ranged read.
fn is_ranged_sed(stage: &str) -> bool {
    let (prog, args) = program(stage);
    if prog != "sed" {
        return false;
    }
    let args: Vec<_> = args.collect();
    has_flag(&args, 'n') && !has_flag(&args, 'i')
}

fn classify_stage(raw: &str, line: &str) -> CmdKind {
    let (prog, args) = program(raw);
    let args: Vec<Cow<str>> = args.collect();
    let args = args.as_slice();
    let redirects_to_file = writes_file(raw) || (line.contains("<<") && writes_file(line));
    match prog.as_ref() {
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

/// The program of a stage, looking through wrappers (`VAR=1`, `sudo`,
/// `timeout 60`), and the words after it, split only as they are read.
fn program(stage: &str) -> (Cow<'_, str>, std::iter::Peekable<Words<'_>>) {
    let mut words = Words { stage, at: 0 }.peekable();
    while let Some(w) = words.next() {
        if (w.contains('=') && !w.starts_with('-') && !w.starts_with('='))
            || matches!(w.as_ref(), "sudo" | "env" | "command" | "exec")
        {
            continue; // a VAR=value prefix or a wrapper
        }
        if w == "timeout" {
            while words
                .next_if(|w| {
                    w.starts_with('-') || w.chars().next().is_some_and(|c| c.is_ascii_digit())
                })
                .is_some()
            {}
            continue;
        }
        let prog = match w {
            Cow::Borrowed(w) => Cow::Borrowed(w.rsplit('/').next().unwrap_or(w)),
            Cow::Owned(w) if w.contains('/') => {
                Cow::Owned(w.rsplit('/').next().unwrap_or("").to_string())
            }
            owned => owned,
        };
        return (prog, words);
    }
    (Cow::Borrowed(""), words)
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

/// A stage's whitespace-separated words with surrounding quotes removed,
/// one at a time (borrowed where a word has no quotes).
struct Words<'a> {
    stage: &'a str,
    at: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = Cow<'a, str>;

    fn next(&mut self) -> Option<Cow<'a, str>> {
        let stage = self.stage;
        let bytes = stage.as_bytes();
        // The word's text, once it holds a quote (else it is a slice).
        let mut unquoted: Option<String> = None;
        let mut quote: Option<char> = None;
        let mut start: Option<usize> = None;
        let word = |start: usize, end: usize, unquoted: Option<String>| match unquoted {
            Some(text) => Cow::Owned(text),
            None => Cow::Borrowed(&stage[start..end]),
        };
        let mut i = self.at;
        while i < bytes.len() {
            let (c, len) = if bytes[i].is_ascii() {
                (bytes[i] as char, 1)
            } else {
                let c = stage[i..].chars().next().expect("a char at a boundary");
                (c, c.len_utf8())
            };
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => unquoted.as_mut().expect("set at the quote").push(c),
                None if c == '\'' || c == '"' => {
                    quote = Some(c);
                    let from = *start.get_or_insert(i);
                    unquoted.get_or_insert_with(|| stage[from..i].to_string());
                }
                None if c.is_whitespace() => {
                    if let Some(from) = start {
                        self.at = i + len;
                        return Some(word(from, i, unquoted));
                    }
                }
                None => {
                    if let Some(text) = unquoted.as_mut() {
                        text.push(c);
                    }
                    start.get_or_insert(i);
                }
            }
            i += len;
        }
        self.at = bytes.len();
        start.map(|from| word(from, bytes.len(), unquoted))
    }
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
    fn words_drop_quotes_and_split_on_any_whitespace() {
        let words: Vec<Cow<str>> = Words {
            stage: "a  'b c'd -name=\"*.py\" ''\u{3000}é\tx 'open y",
            at: 0,
        }
        .collect();
        assert_eq!(words, ["a", "b cd", "-name=*.py", "", "é", "x", "open y"]);
        assert!(matches!(words[0], Cow::Borrowed(_)));
        let (prog, rest) = program("TZ=UTC timeout -s 9 60 /usr/bin/'grep' -rn x");
        assert_eq!(prog, "grep");
        assert_eq!(rest.collect::<Vec<_>>(), ["-rn", "x"]);
    }

    #[test]
    fn labels_round_trip() {
        for k in CmdKind::ALL {
            assert_eq!(CmdKind::from_label(k.as_str()), Some(k));
        }
    }
}
