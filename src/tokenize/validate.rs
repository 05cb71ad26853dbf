//! `validate`: for every train turn of every row, render with the template,
//! take the label span, decode it and compare with the exact content; and
//! measure sequence lengths per mix. Rows are checked in parallel.
//!
//! In `whole` mode (the default) the rendered conversation is tokenized as
//! one string, as chat-template trainers do; a train turn's label span is the
//! tokens whose offsets lie inside its content. A token that straddles the
//! content's start or end (a merge across the turn boundary) fails the turn,
//! and rows whose content holds special-token text are counted and listed,
//! since a trainer's tokenizer turns that text into special tokens.

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

use super::pieces;
use super::template::{messages_of as messages, RenderedText, Template};
use super::{Encoded, TextEncoder, CHATML_SPECIALS};

/// How a row becomes tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The rendered conversation as one string, as chat-template trainers tokenize.
    Whole,
    /// Each message's content encoded on its own, as plain text.
    Segments,
}

/// One train turn whose label span does not decode to its content.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Failure {
    pub row_id: String,
    /// Index of the message in the row.
    pub message: usize,
    /// The turn's t, from train_meta.
    pub t: Option<i64>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Lengths {
    pub mix: String,
    pub rows: usize,
    pub train_turns: usize,
    pub trainable_tokens: usize,
    pub mean: f64,
    pub median: usize,
    pub p95: usize,
    pub max: usize,
    pub over_limit: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ValidationReport {
    pub mode: Mode,
    pub rows: usize,
    pub train_turns: usize,
    pub passed_turns: usize,
    pub trainable_tokens: usize,
    /// Tokens of every rendered row.
    pub total_tokens: usize,
    pub limit: usize,
    pub lengths: Vec<Lengths>,
    /// Rows longer than the limit.
    pub over_limit_rows: Vec<String>,
    /// Train turns with a token merged across their content's boundary.
    pub boundary_merges: usize,
    /// Rows whose content holds special-token text (`<|im_end|>` in a heredoc):
    /// in `whole` mode the trainer's tokenizer reads it as a special token.
    pub special_text_rows: Vec<String>,
    pub failures: Vec<Failure>,
}

impl ValidationReport {
    pub fn pass_rate(&self) -> f64 {
        if self.train_turns == 0 {
            1.0
        } else {
            self.passed_turns as f64 / self.train_turns as f64
        }
    }
}

/// What checking one row found (no content: the rows themselves can go).
pub struct RowCheck {
    row_id: String,
    mix: String,
    tokens: usize,
    trainable: usize,
    train_turns: usize,
    boundary_merges: usize,
    special_text: bool,
    failures: Vec<Failure>,
}

/// A failure's reason when a train turn's label span does not decode to its content.
fn mismatch(got: &str, want: &str) -> String {
    let at = first_difference(got, want);
    let tail: String = want.chars().skip(at).collect();
    let got_tail: String = got.chars().skip(at).collect();
    format!(
        "label span decodes differently from char {at}: expected {:?}, got {:?}",
        clip(&tail),
        clip(&got_tail)
    )
}

fn first_difference(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        out.push('…');
    }
    out
}

/// Whether `content` holds the text of a ChatML special token (each starts
/// with `<|`: one scan finds the candidates).
fn holds_special_text(content: &str) -> bool {
    content
        .match_indices("<|")
        .any(|(at, _)| CHATML_SPECIALS.iter().any(|s| content[at..].starts_with(s)))
}

/// In `whole` mode, a row rendered as one string, with each message's
/// label span in it, and its encoding (or why the template refused it).
struct WholeText {
    rendered: Result<RenderedText, String>,
    encoded: Result<Encoded, String>,
}

fn check_row(
    enc: &dyn TextEncoder,
    template: &Template,
    row: &Value,
    mode: Mode,
    whole: Option<WholeText>,
) -> RowCheck {
    let row_id = row["row_id"].as_str().unwrap_or("").to_string();
    let mix = row["mix"].as_str().unwrap_or("").to_string();
    let empty = Vec::new();
    let msgs = row["messages"].as_array().unwrap_or(&empty);
    let meta_t: Vec<Option<i64>> = row["train_meta"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|m| m["t"].as_i64())
        .collect();
    let messages = messages(row);
    let train: Vec<usize> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| m["train"] == true)
        .map(|(i, _)| i)
        .collect();
    let mut check = RowCheck {
        row_id: row_id.clone(),
        mix,
        tokens: 0,
        trainable: 0,
        train_turns: train.len(),
        boundary_merges: 0,
        special_text: messages.iter().any(|m| holds_special_text(m.content)),
        failures: Vec::new(),
    };
    let fail = |k: usize, i: usize, reason: String| Failure {
        row_id: row_id.clone(),
        message: i,
        t: meta_t.get(k).copied().flatten(),
        reason,
    };
    let all_fail = |e: String| {
        train
            .iter()
            .enumerate()
            .map(|(k, i)| fail(k, *i, e.clone()))
            .collect::<Vec<_>>()
    };
    match mode {
        Mode::Segments => {
            let Some(template) = template.toml() else {
                check.failures =
                    all_fail("segments mode renders with a TOML template, not a model's".into());
                return check;
            };
            let rendered = match template.render(enc, &messages) {
                Ok(r) => r,
                Err(e) => {
                    check.failures = all_fail(format!("cannot render: {e}"));
                    return check;
                }
            };
            check.tokens = rendered.ids.len();
            for (k, &i) in train.iter().enumerate() {
                let (start, end) = rendered.spans[i];
                check.trainable += end - start;
                let want = messages[i].content;
                match enc.decode(&rendered.ids[start..end]) {
                    Ok(got) if got == want => {}
                    Ok(got) => check.failures.push(fail(k, i, mismatch(&got, want))),
                    Err(e) => {
                        check
                            .failures
                            .push(fail(k, i, format!("label span does not decode: {e}")))
                    }
                }
            }
        }
        Mode::Whole => {
            let WholeText { rendered, encoded } =
                whole.expect("check_rows renders and encodes every row in whole mode");
            let RenderedText {
                text,
                spans,
                spans_are_content,
            } = match rendered {
                Ok(r) => r,
                Err(e) => {
                    check.failures = all_fail(format!("cannot render: {e}"));
                    return check;
                }
            };
            let encoded = match encoded {
                Ok(e) => e,
                Err(e) => {
                    check.failures = all_fail(format!("cannot tokenize: {e}"));
                    return check;
                }
            };
            check.tokens = encoded.ids.len();
            // Special tokens the trainer's tokenizer finds inside any message's content.
            check.special_text |= encoded
                .ids
                .iter()
                .zip(&encoded.offsets)
                .any(|(id, &(s, e))| {
                    enc.is_special(*id) && spans.iter().any(|&(a, b)| s >= a && e <= b && e > s)
                });
            for (k, &i) in train.iter().enumerate() {
                let (a, b) = spans[i];
                let straddles = encoded
                    .offsets
                    .iter()
                    .position(|&(s, e)| (s < a && a < e) || (s < b && b < e));
                if let Some(tok) = straddles {
                    check.boundary_merges += 1;
                    let (s, e) = encoded.offsets[tok];
                    let piece = String::from_utf8_lossy(&text.as_bytes()[s..e]).into_owned();
                    check.failures.push(fail(
                        k,
                        i,
                        format!(
                            "token {tok} ({:?}) merges across the turn boundary at byte {}",
                            clip(&piece),
                            if s < a { a } else { b }
                        ),
                    ));
                    continue;
                }
                let label: Vec<u32> = encoded
                    .ids
                    .iter()
                    .zip(&encoded.offsets)
                    .filter(|(_, &(s, e))| s >= a && e <= b && e > s)
                    .map(|(id, _)| *id)
                    .collect();
                check.trainable += label.len();
                let want = match spans_are_content {
                    true => std::borrow::Cow::Borrowed(messages[i].content),
                    // What a trainer's tokenizer sees: the rendered text, normalized.
                    false => enc.normalize(&text[a..b]),
                };
                let want = want.as_ref();
                match enc.decode(&label) {
                    Ok(got) if got == want => {}
                    Ok(got) => check.failures.push(fail(k, i, mismatch(&got, want))),
                    Err(e) => {
                        check
                            .failures
                            .push(fail(k, i, format!("label span does not decode: {e}")))
                    }
                }
            }
        }
    }
    check
}

/// The nearest-rank `p` percentile of `sorted` (0 when empty).
pub fn percentile(sorted: &[usize], p: f64) -> usize {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Check every row (in parallel); `progress` is called once per row.
pub fn validate(
    enc: &dyn TextEncoder,
    template: &Template,
    rows: &[Value],
    limit: usize,
    mode: Mode,
    progress: &(dyn Fn() + Sync),
) -> ValidationReport {
    let mut tally = Tally::new(limit, mode);
    tally.add(check_rows(enc, template, rows, mode, progress));
    tally.report()
}

/// Check a batch of rows in parallel, for a caller that streams them.
pub fn check_rows(
    enc: &dyn TextEncoder,
    template: &Template,
    rows: &[Value],
    mode: Mode,
    progress: &(dyn Fn() + Sync),
) -> Vec<RowCheck> {
    // Whole mode encodes the batch's distinct pieces once (see `pieces`).
    let mut wholes: Vec<Option<WholeText>> = match mode {
        Mode::Segments => rows.iter().map(|_| None).collect(),
        Mode::Whole => {
            let rendered: Vec<Result<RenderedText, String>> = rows
                .par_iter()
                .map(|row| template.render_row(row))
                .collect();
            let texts: Vec<&str> = rendered
                .iter()
                .map(|r| r.as_ref().map_or("", |r| r.text.as_str()))
                .collect();
            let encoded = pieces::encode_all(enc, &texts);
            rendered
                .into_iter()
                .zip(encoded)
                .map(|(rendered, encoded)| Some(WholeText { rendered, encoded }))
                .collect()
        }
    };
    rows.par_iter()
        .zip(wholes.par_iter_mut())
        .map(|(row, whole)| {
            let c = check_row(enc, template, row, mode, whole.take());
            progress();
            c
        })
        .collect()
}

/// The report, built as rows are checked: of each row only its length is
/// kept (for its mix's median and p95), and its id only where the report
/// lists it, so a stream of rows keeps a few bytes per row, not its check.
#[derive(Debug)]
pub struct Tally {
    limit: usize,
    mode: Mode,
    mixes: BTreeMap<String, MixTally>,
    over_limit_rows: Vec<String>,
    boundary_merges: usize,
    special_text_rows: Vec<String>,
    failures: Vec<Failure>,
}

/// One mix's rows so far.
#[derive(Debug, Default)]
struct MixTally {
    tokens: Vec<usize>,
    train_turns: usize,
    trainable: usize,
}

impl Tally {
    /// An empty tally; rows over `limit` tokens are listed.
    pub fn new(limit: usize, mode: Mode) -> Tally {
        Tally {
            limit,
            mode,
            mixes: BTreeMap::new(),
            over_limit_rows: Vec::new(),
            boundary_merges: 0,
            special_text_rows: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Count rows' checks, in the order the report lists them.
    pub fn add(&mut self, checks: impl IntoIterator<Item = RowCheck>) {
        for c in checks {
            if c.tokens > self.limit {
                self.over_limit_rows.push(c.row_id.clone());
            }
            if c.special_text {
                self.special_text_rows.push(c.row_id);
            }
            self.boundary_merges += c.boundary_merges;
            self.failures.extend(c.failures);
            let mix = self.mixes.entry(c.mix).or_default();
            mix.tokens.push(c.tokens);
            mix.train_turns += c.train_turns;
            mix.trainable += c.trainable;
        }
    }

    /// The report over every row counted: lengths per mix, then the totals.
    pub fn report(self) -> ValidationReport {
        let limit = self.limit;
        let total_tokens = self.mixes.values().flat_map(|m| &m.tokens).sum::<usize>();
        let lengths: Vec<Lengths> = self
            .mixes
            .into_iter()
            .map(|(mix, mut m)| {
                m.tokens.sort_unstable();
                let l = &m.tokens;
                Lengths {
                    rows: l.len(),
                    train_turns: m.train_turns,
                    trainable_tokens: m.trainable,
                    mean: l.iter().sum::<usize>() as f64 / l.len().max(1) as f64,
                    median: percentile(l, 0.5),
                    p95: percentile(l, 0.95),
                    max: l.last().copied().unwrap_or(0),
                    over_limit: l.iter().filter(|n| **n > limit).count(),
                    mix,
                }
            })
            .collect();
        let train_turns = lengths.iter().map(|l| l.train_turns).sum::<usize>();
        ValidationReport {
            mode: self.mode,
            rows: lengths.iter().map(|l| l.rows).sum(),
            train_turns,
            passed_turns: train_turns - self.failures.len(),
            trainable_tokens: lengths.iter().map(|l| l.trainable_tokens).sum(),
            total_tokens,
            limit,
            lengths,
            over_limit_rows: self.over_limit_rows,
            boundary_merges: self.boundary_merges,
            special_text_rows: self.special_text_rows,
            failures: self.failures,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::hf::HfEncoder;
    use crate::tokenize::template::{ChatTemplate, Message};
    use crate::tokenize::DEFAULT_TOKENIZER;
    use serde_json::json;

    fn row(contents: &[(&str, &str, bool)]) -> Value {
        let messages: Vec<Value> = contents
            .iter()
            .map(|(r, c, t)| json!({"role": r, "content": c, "train": t}))
            .collect();
        let meta: Vec<Value> = contents
            .iter()
            .enumerate()
            .filter(|(_, x)| x.2)
            .map(|(i, _)| json!({"t": i}))
            .collect();
        json!({"row_id": "r1", "mix": "credit", "messages": messages, "train_meta": meta})
    }

    fn shipped() -> HfEncoder {
        HfEncoder::from_bytes(DEFAULT_TOKENIZER).unwrap()
    }

    /// `rows` validated with turnlake's `template` under `mode`, at `limit` tokens a row.
    fn check(
        enc: &HfEncoder,
        template: &ChatTemplate,
        rows: &[Value],
        (limit, mode): (usize, Mode),
    ) -> ValidationReport {
        validate(
            enc,
            &Template::Toml(template.clone()),
            rows,
            limit,
            mode,
            &|| {},
        )
    }

    const TRICKY: &[&str] = &[
        "THOUGHT: unicode — naïve café, 你好, emoji 🚀\n\n```bash\ncat -n x.py\n```",
        "CRLF line\r\nand tabs\t\there\r\n",
        "long whitespace runs:            \n\n\n\n      end",
        "```bash\ncat > notes.txt <<'EOF'\n<|im_end|>\n<|im_start|>assistant\n<|endoftext|>\nEOF\n```",
        "<think>\nreasoning\n</think>\nTHOUGHT: after thinking",
        " leading space and trailing newline\n",
        "",
    ];

    #[test]
    fn tricky_content_round_trips_with_the_shipped_tokenizer() {
        let enc = shipped();
        let template = ChatTemplate::chatml();
        for content in TRICKY {
            let r = row(&[
                ("system", "sys", false),
                ("user", "task", false),
                ("assistant", content, true),
            ]);
            let report = check(&enc, &template, &[r], (32768, Mode::Segments));
            assert_eq!(report.failures, vec![], "{content:?}");
            assert_eq!(report.passed_turns, 1);
            // Special-token-like text stays text: the only special ids are the template's.
            let im_end = enc.special_id("<|im_end|>").unwrap();
            let rendered = template
                .render(
                    &enc,
                    &[Message {
                        role: "assistant",
                        content,
                    }],
                )
                .unwrap();
            assert_eq!(
                rendered.ids.iter().filter(|i| **i == im_end).count(),
                1,
                "{content:?}"
            );
        }
    }

    #[test]
    fn spans_are_exactly_the_content_tokens() {
        let enc = shipped();
        let rendered = ChatTemplate::chatml()
            .render(
                &enc,
                &[
                    Message {
                        role: "user",
                        content: "hi",
                    },
                    Message {
                        role: "assistant",
                        content: "ls -la",
                    },
                ],
            )
            .unwrap();
        let (s, e) = rendered.spans[1];
        assert_eq!(enc.decode(&rendered.ids[s..e]).unwrap(), "ls -la");
        assert_eq!(
            enc.decode(&rendered.ids[..s]).unwrap(),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(enc.decode(&rendered.ids[e..]).unwrap(), "<|im_end|>\n");
    }

    #[test]
    fn a_wrong_template_is_caught_with_row_and_turn() {
        let enc = shipped();
        let mut template = ChatTemplate::chatml();
        template.trim_content = true;
        let r = row(&[
            ("user", "task", false),
            ("assistant", " ls -la\n", true),
            ("user", "ok", false),
            ("assistant", "pwd", true),
        ]);
        let report = check(&enc, &template, &[r], (32768, Mode::Segments));
        assert_eq!(report.train_turns, 2);
        assert_eq!(report.passed_turns, 1);
        assert_eq!(report.failures.len(), 1);
        let f = &report.failures[0];
        assert_eq!((f.row_id.as_str(), f.message, f.t), ("r1", 1, Some(1)));
        assert!(f.reason.contains("from char 0"), "{}", f.reason);
    }

    #[test]
    fn special_text_is_found_wherever_it_is() {
        // holds_special_text looks only where `<|` starts.
        assert!(CHATML_SPECIALS.iter().all(|s| s.starts_with("<|")));
        for s in CHATML_SPECIALS {
            assert!(holds_special_text(&format!("é<|x <|{}", &s[2..])));
            assert!(!holds_special_text(&format!("é<|x {}", &s[2..])));
        }
    }

    #[test]
    fn whole_mode_passes_plain_rows_and_lists_special_text() {
        let enc = shipped();
        let template = ChatTemplate::chatml();
        for content in TRICKY {
            let r = row(&[
                ("system", "sys", false),
                ("user", "task", false),
                ("assistant", content, true),
            ]);
            let report = check(&enc, &template, &[r], (32768, Mode::Whole));
            assert_eq!(report.failures, vec![], "{content:?}");
            let special = CHATML_SPECIALS.iter().any(|s| content.contains(s));
            assert_eq!(
                report.special_text_rows.len(),
                special as usize,
                "{content:?}"
            );
        }
    }

    #[test]
    fn a_merge_across_the_turn_boundary_is_caught_in_whole_mode_only() {
        let enc = shipped();
        // A template with no special token right after the content: its next
        // letters join the content's last letter in one pre-token, and a word the
        // vocabulary holds whole becomes one token spanning both.
        let word = ["cat", "sed", "find", "grep", "the", "python"]
            .into_iter()
            .find(|w| enc.encode_text(w).unwrap().len() == 1)
            .expect("the shipped tokenizer holds a common word whole");
        let (head, tail) = word.split_at(1);
        let mut template = ChatTemplate::chatml();
        template.message_end = format!("{tail}<|im_end|>\n");
        let content = format!("THOUGHT: list\n\n```bash\nls\n```\n{head}");
        let r = row(&[("user", "task", false), ("assistant", &content, true)]);
        let whole = check(
            &enc,
            &template,
            std::slice::from_ref(&r),
            (32768, Mode::Whole),
        );
        assert_eq!(whole.boundary_merges, 1, "{:?}", whole.failures);
        let f = &whole.failures[0];
        assert_eq!((f.row_id.as_str(), f.message, f.t), ("r1", 1, Some(1)));
        assert!(
            f.reason.contains("merges across the turn boundary"),
            "{}",
            f.reason
        );
        let segments = check(&enc, &template, &[r], (32768, Mode::Segments));
        assert_eq!(segments.failures, vec![]);
    }

    #[test]
    fn lengths_per_mix_and_the_limit() {
        let enc = shipped();
        let rows: Vec<Value> = (1..=20)
            .map(|n| {
                let mut r = row(&[("assistant", &"word ".repeat(n * 10), true)]);
                r["row_id"] = json!(format!("r{n}"));
                r
            })
            .collect();
        let report = check(&enc, &ChatTemplate::chatml(), &rows, (60, Mode::Whole));
        let l = &report.lengths[0];
        assert_eq!(l.rows, 20);
        assert!(l.median < l.p95 && l.p95 <= l.max, "{l:?}");
        assert_eq!(l.over_limit, report.over_limit_rows.len());
        assert!(l.over_limit > 0 && l.over_limit < 20);
    }

    #[test]
    fn a_tally_fed_in_chunks_reports_as_one_fed_whole() {
        let enc = shipped();
        let template = ChatTemplate::chatml();
        let rows: Vec<Value> = (1..=12)
            .map(|n| {
                let mut r = row(&[("assistant", &"word ".repeat(n * 7), true)]);
                r["row_id"] = json!(format!("r{n:02}"));
                r["mix"] = json!(if n % 3 == 0 { "escape_mini" } else { "credit" });
                r
            })
            .collect();
        let whole = check(&enc, &template, &rows, (40, Mode::Whole));
        let mut tally = Tally::new(40, Mode::Whole);
        for chunk in rows.chunks(5) {
            tally.add(check_rows(
                &enc,
                &Template::Toml(template.clone()),
                chunk,
                Mode::Whole,
                &|| {},
            ));
        }
        let chunked = tally.report();
        assert_eq!(chunked, whole);
        assert_eq!(whole.rows, 12);
        assert_eq!(
            whole
                .lengths
                .iter()
                .map(|l| l.mix.as_str())
                .collect::<Vec<_>>(),
            ["credit", "escape_mini"]
        );
        assert_eq!(whole.lengths[1].rows, 4);
        let from_means: f64 = whole.lengths.iter().map(|l| l.mean * l.rows as f64).sum();
        assert_eq!(whole.total_tokens, from_means.round() as usize);
        // Rows over the limit are listed in the order they came.
        let mut listed = whole.over_limit_rows.clone();
        listed.sort();
        assert_eq!(listed, whole.over_limit_rows);
        assert!(!listed.is_empty() && listed.len() < 12);
    }
}
