//! What Albedo checklist questions ask: how economy questions measure
//! candidate output, which command kinds a question is about, and the
//! concrete targets it quotes. The scorer's features and the synthetic judge
//! share these rules.

use regex::Regex;
use std::sync::LazyLock;

/// What an economy question measures over a side's candidate outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    TotalWords,
    MaxWords,
    AvgWords,
    ProseWords,
    TotalChars,
    MaxChars,
    AvgChars,
}

impl Measure {
    pub const ALL: [Measure; 7] = [
        Measure::TotalWords,
        Measure::MaxWords,
        Measure::AvgWords,
        Measure::ProseWords,
        Measure::TotalChars,
        Measure::MaxChars,
        Measure::AvgChars,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Measure::TotalWords => "total_words",
            Measure::MaxWords => "max_words",
            Measure::AvgWords => "avg_words",
            Measure::ProseWords => "prose_words",
            Measure::TotalChars => "total_chars",
            Measure::MaxChars => "max_chars",
            Measure::AvgChars => "avg_chars",
        }
    }

    /// The question text Albedo writes for this measure and limit.
    pub fn question(self, limit: u64) -> String {
        match self {
            Measure::TotalWords => format!("Is total CANDIDATE OUTPUT at most {limit} words?"),
            Measure::MaxWords => format!("Is the longest single output at most {limit} words?"),
            Measure::AvgWords => {
                format!("Is the average CANDIDATE OUTPUT per turn at most {limit} words?")
            }
            Measure::ProseWords => {
                format!("Is CANDIDATE OUTPUT prose, apart from code blocks, at most {limit} words?")
            }
            Measure::TotalChars => format!("Is total CANDIDATE OUTPUT at most {limit} characters?"),
            Measure::MaxChars => {
                format!("Is the longest single output at most {limit} characters?")
            }
            Measure::AvgChars => {
                format!("Is the average CANDIDATE OUTPUT per turn at most {limit} characters?")
            }
        }
    }

    /// This measure of a side's outputs.
    pub fn of(self, m: &OutputMeasures) -> f64 {
        let n = m.outputs.max(1) as f64;
        match self {
            Measure::TotalWords => m.total_words as f64,
            Measure::MaxWords => m.max_words as f64,
            Measure::AvgWords => m.total_words as f64 / n,
            Measure::ProseWords => m.prose_words as f64,
            Measure::TotalChars => m.total_chars as f64,
            Measure::MaxChars => m.max_chars as f64,
            Measure::AvgChars => m.total_chars as f64 / n,
        }
    }
}

static LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bat most\s+([0-9][0-9,]*)\s+(words?|characters?|chars?)\b").unwrap()
});

/// An economy question's measure and limit ("Is the longest single output at
/// most 40 words?"), or None for any other question.
pub fn economy_question(text: &str) -> Option<(Measure, f64)> {
    let caps = LIMIT.captures(text)?;
    let limit: f64 = caps[1].replace(',', "").parse().ok()?;
    let words = caps[2].to_ascii_lowercase().starts_with('w');
    let lower = text.to_lowercase();
    let measure = if lower.contains("prose") {
        if !words {
            return None;
        }
        Measure::ProseWords
    } else if lower.contains("longest") || lower.contains("single output") {
        if words {
            Measure::MaxWords
        } else {
            Measure::MaxChars
        }
    } else if lower.contains("average") || lower.contains("per turn") {
        if words {
            Measure::AvgWords
        } else {
            Measure::AvgChars
        }
    } else if words {
        Measure::TotalWords
    } else {
        Measure::TotalChars
    };
    Some((measure, limit))
}

/// Words of a text: whitespace-separated tokens.
pub fn word_count(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Words outside fenced code blocks.
pub fn prose_word_count(text: &str) -> u64 {
    let mut in_fence = false;
    let mut words = 0;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            words += word_count(line);
        }
    }
    words
}

/// The measures economy questions ask about, over a side's outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OutputMeasures {
    pub outputs: u64,
    pub total_words: u64,
    pub max_words: u64,
    pub prose_words: u64,
    pub total_chars: u64,
    pub max_chars: u64,
}

impl OutputMeasures {
    pub fn of<'a>(outputs: impl IntoIterator<Item = &'a str>) -> OutputMeasures {
        let mut m = OutputMeasures::default();
        for text in outputs {
            let (words, chars) = (word_count(text), text.chars().count() as u64);
            m.outputs += 1;
            m.total_words += words;
            m.max_words = m.max_words.max(words);
            m.prose_words += prose_word_count(text);
            m.total_chars += chars;
            m.max_chars = m.max_chars.max(chars);
        }
        m
    }
}

/// Phrases that tie a question to the command kinds (`cmd_kind` labels) it
/// is about. Matched on the lower-cased text; a question gets the union.
const KIND_PHRASES: &[(&str, &[&str])] = &[
    ("line range", &["sed -n", "cat -n"]),
    ("ranged", &["sed -n", "cat -n"]),
    ("narrower", &["sed -n"]),
    ("zoom", &["sed -n"]),
    ("sed -n", &["sed -n"]),
    ("cat -n", &["cat -n"]),
    ("line number", &["cat -n", "sed -n"]),
    ("whole-file", &["cat"]),
    ("whole file", &["cat"]),
    ("dump", &["cat"]),
    ("search", &["grep -r", "grep"]),
    ("grep", &["grep -r", "grep"]),
    ("identifier", &["grep -r", "grep"]),
    ("edit", &["edit"]),
    ("modif", &["edit"]),
    ("patch", &["edit"]),
    ("code change", &["edit"]),
    ("test", &["pytest/python"]),
    ("reproduc", &["pytest/python"]),
    ("run the", &["pytest/python"]),
    ("execute", &["pytest/python"]),
    ("list", &["find/ls"]),
    ("director", &["find/ls"]),
    ("layout", &["find/ls"]),
    ("git", &["other"]),
    ("submit", &["submit"]),
];

/// The command kinds a checklist question is about, sorted and distinct.
pub fn question_kinds(text: &str) -> Vec<&'static str> {
    let lower = text.to_lowercase();
    let mut kinds: Vec<&'static str> = KIND_PHRASES
        .iter()
        .filter(|(phrase, _)| lower.contains(phrase))
        .flat_map(|(_, kinds)| kinds.iter().copied())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

static PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_./-]*[A-Za-z0-9_]\.[A-Za-z]{1,5}\b").unwrap());
static SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|__[a-z]+__)\b")
        .unwrap()
});
static QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`]+)`").unwrap());

/// The concrete targets a question quotes: file paths, code symbols
/// (CamelCase, snake_case, dunder) and `backticked` commands, sorted, distinct.
pub fn question_targets(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in QUOTED.captures_iter(text) {
        out.push(m[1].trim().to_string());
    }
    let unquoted = QUOTED.replace_all(text, " ");
    for m in PATH.find_iter(&unquoted) {
        let path = m.as_str().trim_matches(|c| c == '.' || c == '/');
        // "e.g" and version numbers are not paths.
        if path.contains('/') || path.ends_with(".py") || path.ends_with(".rs") {
            out.push(path.to_string());
        }
    }
    for m in SYMBOL.find_iter(&unquoted) {
        if !out.iter().any(|t| t.contains(m.as_str())) {
            out.push(m.as_str().to_string());
        }
    }
    out.retain(|t| !t.is_empty());
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_economy_questions_parse() {
        let cases = [
            (
                "Is total CANDIDATE OUTPUT at most 210 words?",
                Measure::TotalWords,
                210.0,
            ),
            (
                "Is the longest single output at most 40 words?",
                Measure::MaxWords,
                40.0,
            ),
            (
                "Is total CANDIDATE OUTPUT at most 1800 characters?",
                Measure::TotalChars,
                1800.0,
            ),
            (
                "Is the longest single output at most 360 characters?",
                Measure::MaxChars,
                360.0,
            ),
            (
                "Is CANDIDATE OUTPUT prose, apart from code blocks, at most 140 words?",
                Measure::ProseWords,
                140.0,
            ),
            (
                "Is the average CANDIDATE OUTPUT per turn at most 30 words?",
                Measure::AvgWords,
                30.0,
            ),
            (
                "Is the average CANDIDATE OUTPUT per turn at most 1,230 characters?",
                Measure::AvgChars,
                1230.0,
            ),
        ];
        for (text, measure, limit) in cases {
            assert_eq!(economy_question(text), Some((measure, limit)), "{text}");
        }
        assert_eq!(
            economy_question("Does the candidate read autode/values.py with explicit line ranges?"),
            None
        );
        for m in Measure::ALL {
            assert_eq!(economy_question(&m.question(77)), Some((m, 77.0)));
        }
    }

    #[test]
    fn measures_count_words_chars_and_prose() {
        let a = "THOUGHT: read it.\n\n```bash\ncat -n a.py\n```";
        let b = "héllo wörld";
        let m = OutputMeasures::of([a, b]);
        assert_eq!(m.outputs, 2);
        assert_eq!(m.total_words, 8 + 2);
        assert_eq!(m.max_words, 8);
        assert_eq!(m.prose_words, 3 + 2);
        assert_eq!(m.max_chars, a.chars().count() as u64);
        assert_eq!(m.total_chars, a.len() as u64 + 11);
        assert_eq!(Measure::AvgWords.of(&m), 5.0);
    }

    #[test]
    fn kinds_and_targets_of_real_questions() {
        let q = "Does the candidate read autode/values.py with explicit line ranges instead of a whole-file dump?";
        assert_eq!(question_kinds(q), vec!["cat", "cat -n", "sed -n"]);
        assert_eq!(question_targets(q), vec!["autode/values.py"]);
        let q = "Does a search use issue-mentioned symbols like EnthalpyContainer rather than generic terms?";
        assert_eq!(question_kinds(q), vec!["grep", "grep -r"]);
        assert_eq!(question_targets(q), vec!["EnthalpyContainer"]);
        let q = "Does the candidate check repository state with a git command before editing autode/values.py?";
        assert_eq!(question_kinds(q), vec!["edit", "other"]);
        let q = "Does CANDIDATE OUTPUT 2 run `python -m pytest tests/test_x.py` on separability_matrix?";
        assert_eq!(
            question_targets(q),
            vec!["python -m pytest tests/test_x.py", "separability_matrix"]
        );
        assert!(question_targets("Is total CANDIDATE OUTPUT at most 210 words?").is_empty());
    }
}
