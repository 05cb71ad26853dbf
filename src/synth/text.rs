//! Text of synthetic turns: commands of each kind, THOUGHT prose, and
//! observations in the three formats, failures and elided outputs included.

use super::plan::{PlannedTurn, Shape};
use super::rng::Rng;
use crate::turn::{CmdKind, ObsFormat};

const MODULES: &[&str] = &[
    "core", "utils", "parser", "models", "config", "io", "values", "units", "compiler", "render",
];
const FILES: &[&str] = &[
    "base", "helpers", "api", "types", "cache", "session", "reader", "writer", "matrix", "schema",
];
const SYMBOLS: &[&str] = &[
    "compileRegex",
    "separability_matrix",
    "__truediv__",
    "parse_args",
    "load_config",
    "Value",
    "resolve_path",
    "to_dict",
    "normalize",
    "flush",
];
const THOUGHTS: &[&str] = &[
    "Let me look at how this is implemented before changing anything.",
    "I need to find where the failing behaviour comes from.",
    "The previous output points at this file; I will read the relevant part.",
    "Now I will check whether the change works as intended.",
    "Let me search for other uses of this symbol.",
    "I should confirm the structure of the repository first.",
    "The fix belongs in this function; I will edit it now.",
    "Running the tests will tell whether the bug is gone.",
];

/// A repository the synthetic task is about.
pub struct Repo {
    pub root: String,
    pub package: String,
}

impl Repo {
    pub fn new(rng: &mut Rng) -> Repo {
        let owner = rng
            .pick(&[
                "acme",
                "duartegroup",
                "benhoyt",
                "astro",
                "pallets",
                "numfocus",
            ])
            .to_string();
        let name = rng
            .pick(&["autode", "goawk", "sepmod", "flaskish", "tablet", "unitkit"])
            .to_string();
        Repo {
            root: format!("/workspace/{owner}__{name}__1.0"),
            package: name,
        }
    }

    fn path(&self, rng: &mut Rng) -> String {
        format!(
            "{}/{}/{}/{}.py",
            self.root,
            self.package,
            rng.pick(MODULES),
            rng.pick(FILES)
        )
    }

    /// A path relative to the repository root.
    pub fn rel(&self, rng: &mut Rng) -> String {
        format!(
            "{}/{}/{}.py",
            self.package,
            rng.pick(MODULES),
            rng.pick(FILES)
        )
    }
}

/// A code symbol the synthetic repositories use.
pub fn symbol(rng: &mut Rng) -> &'static str {
    SYMBOLS[rng.range(0, SYMBOLS.len() as u64 - 1) as usize]
}

/// A fresh command of `kind`; the classifier must give it back `kind`.
pub fn command(rng: &mut Rng, repo: &Repo, kind: CmdKind, submit_marker: &str) -> String {
    let a = rng.range(1, 400);
    let b = a + rng.range(5, 60);
    match kind {
        CmdKind::CatN => match rng.range(0, 1) {
            0 => format!("cat -n {}", repo.path(rng)),
            _ => format!("cd {} && cat -n {}", repo.root, repo.rel(rng)),
        },
        CmdKind::SedN => match rng.range(0, 1) {
            0 => format!("sed -n '{a},{b}p' {}", repo.path(rng)),
            _ => format!("nl -ba {} | sed -n '{a},{b}p'", repo.path(rng)),
        },
        CmdKind::Cat => match rng.range(0, 1) {
            0 => format!("cat {}", repo.path(rng)),
            _ => format!("head -n {b} {}", repo.path(rng)),
        },
        CmdKind::Edit => match rng.range(0, 2) {
            0 => format!(
                "sed -i 's/{}(/{}_v{a}(/' {}",
                rng.pick(SYMBOLS),
                rng.pick(SYMBOLS),
                repo.path(rng)
            ),
            1 => format!(
                "cat > {}/reproduce_{a}.py << 'EOF'\nfrom {} import {}\nprint({}({b}))\nEOF",
                repo.root,
                repo.package,
                rng.pick(SYMBOLS),
                rng.pick(SYMBOLS)
            ),
            _ => format!("cd {} && git apply fix_{a}.patch", repo.root),
        },
        CmdKind::GrepR => match rng.range(0, 1) {
            0 => format!(
                "grep -rn \"{}\" {}/{}",
                rng.pick(SYMBOLS),
                repo.root,
                repo.package
            ),
            _ => format!(
                "cd {} && grep -R \"{}\" --include=*.py . | head -{b}",
                repo.root,
                rng.pick(SYMBOLS)
            ),
        },
        CmdKind::Grep => match rng.range(0, 1) {
            0 => format!("grep -n \"{}\" {}", rng.pick(SYMBOLS), repo.path(rng)),
            _ => format!(
                "cd {} && grep -n \"def {}\" {} | head -{b}",
                repo.root,
                rng.pick(SYMBOLS),
                repo.rel(rng)
            ),
        },
        CmdKind::Python => match rng.range(0, 2) {
            0 => format!(
                "cd {} && python -m pytest tests/test_{}.py -x -q -k case_{a}",
                repo.root,
                rng.pick(FILES)
            ),
            1 => format!("python {}/reproduce_{a}.py", repo.root),
            _ => format!(
                "cd {} && python3 -c \"import {}; print({a})\"",
                repo.root, repo.package
            ),
        },
        CmdKind::FindLs => match rng.range(0, 1) {
            0 => format!(
                "find {}/{} -name \"*{}*\" -type f -size -{a}k",
                repo.root,
                repo.package,
                rng.pick(FILES)
            ),
            _ => format!(
                "ls -la {}/{}/{} | head -{b}",
                repo.root,
                repo.package,
                rng.pick(MODULES)
            ),
        },
        CmdKind::Other => match rng.range(0, 2) {
            0 => format!("cd {} && git log --oneline -n {a}", repo.root),
            1 => format!("wc -l {}", repo.path(rng)),
            _ => format!("cd {} && git diff --stat HEAD~{a}", repo.root),
        },
        CmdKind::Submit => match rng.range(0, 1) {
            0 => format!("echo {submit_marker} && git add -A && git diff --cached"),
            _ => format!(
                "cd {} && git add -A && echo {submit_marker} && git diff --cached",
                repo.root
            ),
        },
    }
}

/// A dialect the planted mixture effect gives some turns' thoughts (see
/// [`super::params::Plant`]): long and lexically apart from each other and
/// from the plain thoughts, so a proxy model's loss on them shows which of
/// them it trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Ledger,
    Probe,
}

impl Dialect {
    fn thoughts(self) -> &'static [&'static str] {
        match self {
            Dialect::Ledger => &[
                "Per the invariant ledger of this repository, every cache key is normalized exactly once before it is compared, the fixture pins the boundary case at the empty key, the ledger entry names the owner of that rule and the commit that introduced it, and any helper that normalizes a second time breaks the contract recorded there; before touching the code I confirm the invariant against the ledger, then read the helper that the ledger points at.",
                "Per the invariant ledger of this repository, every cache key is normalized exactly once before it is compared, the regression lives where a helper normalizes it twice, the ledger entry records who relied on the old behaviour and which fixture protects it, and the contract forbids a silent second pass; before touching the code I confirm the invariant against the ledger, then read the helper that the ledger points at.",
            ],
            Dialect::Probe => &[
                "Quick probe first: bisect toward the smallest failing input, print every intermediate value along that path, compare each printed value with a hand-computed expectation written down beforehand, and patch exactly where the two diverge, never earlier and never later; probe results beat guesses, so the next command gathers evidence and changes nothing, and only a confirmed divergence earns an edit.",
                "Quick probe first: shrink the reproduction to one call, log the arguments at each hop, diff the logged values against what the docstring promises for that hop, and patch exactly where the two diverge, never earlier and never later; probe results beat guesses, so the next command gathers evidence and changes nothing, and only a confirmed divergence earns an edit.",
            ],
        }
    }
}

/// The assistant message for a planned turn running `cmd`, its thought in
/// `dialect` where one is planted. Either way one number is drawn for the
/// thought, so a corpus without a plant is the same as before.
pub fn assistant(
    rng: &mut Rng,
    turn: &PlannedTurn,
    cmd: &str,
    fence: &str,
    dialect: Option<Dialect>,
) -> String {
    let thought = rng.pick(dialect.map_or(THOUGHTS, Dialect::thoughts));
    let think = if turn.think_unclosed {
        "<think>\nI keep weighing the options here.\n"
    } else {
        ""
    };
    match turn.shape {
        Shape::Normal => format!("{think}THOUGHT: {thought}\n\n```{fence}\n{cmd}\n```"),
        Shape::NoBlock => format!(
            "THOUGHT: {thought} I will run `{}` next.",
            cmd.lines().next().unwrap_or("")
        ),
        Shape::TwoBlocks => format!(
            "THOUGHT: {thought}\n\n```{fence}\n{cmd}\n```\n\nand then\n\n```{fence}\nls -la\n```"
        ),
    }
}

fn body(rng: &mut Rng, kind: CmdKind, cmd: &str, failed: bool) -> (String, i64) {
    let target = cmd
        .split_whitespace()
        .last()
        .unwrap_or("x")
        .trim_matches('\'')
        .to_string();
    if failed {
        return match kind {
            CmdKind::Python => (
                format!("Traceback (most recent call last):\n  File \"{target}\", line {}, in <module>\nAssertionError: expected {} got {}", rng.range(2, 90), rng.range(0, 9), rng.range(10, 99)),
                1,
            ),
            CmdKind::GrepR | CmdKind::Grep | CmdKind::FindLs => (format!("find: '{target}': No such file or directory"), 2),
            _ => (format!("cat: {target}: No such file or directory"), 1),
        };
    }
    let text = match kind {
        CmdKind::CatN | CmdKind::SedN => (1..=rng.range(3, 8))
            .map(|i| {
                format!(
                    "{:>6}\t{} = {}",
                    i + rng.range(0, 200),
                    rng.pick(SYMBOLS),
                    rng.range(0, 999)
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        CmdKind::GrepR => format!(
            "{target}:{}:    def {}(self, other):",
            rng.range(1, 900),
            rng.pick(SYMBOLS)
        ),
        CmdKind::Python => format!("{} passed in 0.{}s", rng.range(1, 40), rng.range(10, 99)),
        CmdKind::FindLs => format!(
            "{target}/{}.py\n{target}/{}.py",
            rng.pick(FILES),
            rng.pick(FILES)
        ),
        CmdKind::Edit => String::new(),
        _ => format!("{} {}", rng.range(1, 500), target),
    };
    (text, 0)
}

/// The observation after a planned turn, in `format`.
pub fn observation(rng: &mut Rng, turn: &PlannedTurn, cmd: &str, format: ObsFormat) -> String {
    match turn.shape {
        Shape::NoBlock => return "No bash command found in assistant message. Please always provide EXACTLY ONE action in triple backticks.".into(),
        Shape::TwoBlocks => return "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.".into(),
        Shape::Normal => {}
    }
    let (text, rc) = body(rng, turn.kind, cmd, turn.failed);
    match format {
        ObsFormat::Returncode if turn.long_output => {
            let n = rng.range(10_001, 90_000);
            format!(
                "<returncode>{rc}</returncode>\n<warning>\nThe output of your last command was too long.\nPlease try a different command that produces less output.\n</warning><output_head>\n{text}\n</output_head>\n<elided_chars>\n{n} characters elided\n</elided_chars>\n<output_tail>\n{text}\n</output_tail>"
            )
        }
        ObsFormat::Returncode => {
            format!("<returncode>{rc}</returncode>\n<output>\n{text}\n</output>")
        }
        ObsFormat::Json => format!(
            "{{\n  \"returncode\": {rc},\n  \"output\": {}\n}}",
            serde_json::Value::String(text)
        ),
        ObsFormat::SweAgent => format!("OBSERVATION:\n{text}"),
        ObsFormat::OpenHands
            if turn.kind == CmdKind::Edit && !turn.failed && cmd.starts_with("cat >") =>
        {
            format!(
                "File created successfully at: {}",
                cmd.split_whitespace().nth(2).unwrap_or("")
            )
        }
        // An editor read shows the file with no exit code; error-like text in
        // the file is content, not a failure.
        ObsFormat::OpenHands
            if turn.kind == CmdKind::CatN && !turn.failed && turn.t.is_multiple_of(2) =>
        {
            format!(
                "Here's the result of running `cat -n` on {}:\n     1\t{text}\n     2\t    raise FileNotFoundError('No such file or directory')",
                cmd.split_whitespace().next_back().unwrap_or("")
            )
        }
        ObsFormat::OpenHands => {
            format!("{text}\n[The command completed with exit code {rc}.]\n[Command finished with exit code {rc}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::params::KINDS;
    use crate::turn::{
        classify_command, detect_obs_format, extract_bash_blocks, observation_outcome,
    };

    #[test]
    fn rendered_commands_classify_as_planned() {
        let mut rng = Rng::new(3);
        let repo = Repo::new(&mut rng);
        for kind in KINDS.iter().copied().chain([CmdKind::Submit]) {
            for _ in 0..200 {
                let cmd = command(
                    &mut rng,
                    &repo,
                    kind,
                    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
                );
                assert_eq!(classify_command(&cmd, None), kind, "{cmd}");
                let turn = PlannedTurn {
                    t: 1,
                    kind,
                    shape: Shape::Normal,
                    think_unclosed: false,
                    repeat: false,
                    has_obs: true,
                    failed: false,
                    long_output: false,
                    scored: true,
                    credit: 0,
                    prev_failed: false,
                };
                let text = assistant(&mut rng, &turn, &cmd, "bash", None);
                assert_eq!(extract_bash_blocks(&text), vec![cmd.as_str()]);
            }
        }
    }

    #[test]
    fn observations_fail_as_planned() {
        let mut rng = Rng::new(4);
        let repo = Repo::new(&mut rng);
        for format in [
            ObsFormat::Returncode,
            ObsFormat::OpenHands,
            ObsFormat::SweAgent,
        ] {
            for kind in KINDS {
                for failed in [false, true] {
                    for long_output in [false, true] {
                        let cmd = command(&mut rng, &repo, kind, "");
                        let turn = PlannedTurn {
                            t: 2,
                            kind,
                            shape: Shape::Normal,
                            think_unclosed: false,
                            repeat: false,
                            has_obs: true,
                            failed,
                            long_output: long_output && !failed,
                            scored: true,
                            credit: 0,
                            prev_failed: false,
                        };
                        let obs = observation(&mut rng, &turn, &cmd, format);
                        assert_eq!(detect_obs_format(&obs), format, "{obs}");
                        assert_eq!(observation_outcome(format, &obs).failed, failed, "{obs}");
                    }
                }
            }
        }
    }
}
