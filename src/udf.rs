//! The turn rules of `crate::turn` as DataFusion scalar UDFs, so SQL can
//! call the exact code ingest used. Every argument is text (any string type);
//! where ingest needs a trajectory's context (its observation format, its
//! submit marker, the observation or exit record after a turn), the UDF takes
//! it as a further argument, so with the same context it gives exactly the
//! stored value. This module only adapts.
//!
//! | UDF | returns |
//! |---|---|
//! | `bash_command(text [, reasoning_content])` | the first bash block of an assistant message (read from `reasoning_content` when the text is blank) |
//! | `n_bash_blocks(text [, reasoning_content])` | how many bash blocks it holds |
//! | `cmd_kind(command [, marker [, submit_signal]])` | the command kind label (`submit` when a signal is given) |
//! | `cmd_head(command)` | the program that decides the kind (`git`, `wc`, ...) |
//! | `is_submit(command [, marker])` | whether the command prints a submit marker |
//! | `submit_signal(command, next_observation, exit_status_after, marker)` | `command`, `observation`, `exit` or null |
//! | `think_unclosed(text)` | whether a `<think>` is left open |
//! | `fields_sha(reasoning_content, tool_calls, tool_call_id)` | the digest `messages.fields_sha` stores of them |
//! | `content_intact(content, content_sha, reasoning_content, tool_calls, tool_call_id, fields_sha)` | whether a message still has the digests ingest stored (never null) |
//! | `cited_outputs(text)` | the CANDIDATE OUTPUT numbers a judge explanation cites |
//! | `obs_format(text)` | RETURNCODE / SWE_AGENT / OPENHANDS of an observation |
//! | `obs_failed(text [, format])` | whether an observation reports failure (in `format`, else its own) |
//! | `normalize_command(command)` | the command with whitespace collapsed, as repeats compare it |
//! | `word_count(text)` | whitespace-separated words, as Albedo's economy questions count them |
//! | `prose_word_count(text)` | words outside fenced code blocks |
//! | `economy_measure(question)` | what an economy question measures (`total_words`, `max_chars`, ...) or null |
//! | `economy_limit(question)` | the limit an economy question sets, or null |
//! | `question_kinds(question)` | the command kinds a checklist question is about |
//! | `question_targets(question)` | the paths, symbols and commands a question quotes |
//!
//! Six more serve the pipeline's steps, which run in parts (`format_gate`
//! in `sql/select_sides.sql` and `sql/select_runs.sql`, one copy of the
//! rule; `is_recovery` wherever a recovery turn is counted; the loop metrics
//! over a side's scored outputs in `sql/scorer_features.sql`; `hash_part` to split the mini-coder runs into parts; `hash_key` for
//! the mix report's joins with the lake, sql/mix_report_input.sql):
//!
//! | UDF | returns |
//! |---|---|
//! | `format_gate(n_bash_blocks, think_unclosed, repeats_in_row[, format_error])` | why the format gate demotes a train turn, or null |
//! | `dup_cmd_ratio(commands)`, `max_cmd_run(commands)` | the loop metrics of a list of commands in turn order (`turn::loop_metrics`) |
//! | `is_recovery(prev_failed, credit)` | whether a turn earned credit right after a failed observation (never null) |
//! | `hash_part(text, parts)` | which of `parts` parts `text` falls in (a fixed hash of its bytes) |
//! | `hash_key(text)` | that fixed 64-bit hash: a key 8 bytes wide for a join that keeps a superset, an exact join on the text following |

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int32Array, Int32Builder, Int64Array,
    ListBuilder, StringArray, StringBuilder, UInt64Array,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Float64Type};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::turn;

/// What computes a UDF: a kernel over its arguments, each cast to a string
/// array of the row count (the turn rules), or over them as they come.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    Text(fn(&[&StringArray]) -> ArrayRef),
    Typed(fn(&[ArrayRef]) -> Result<ArrayRef>),
}

/// One UDF: a name, its signature, a return type and a kernel.
#[derive(Debug)]
pub struct Udf {
    name: &'static str,
    returns: DataType,
    kernel: Kernel,
    signature: Signature,
    /// Its call and one line on what it gives (`\df` in the shell).
    doc: Option<datafusion::logical_expr::Documentation>,
}

impl PartialEq for Udf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for Udf {}
impl Hash for Udf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl Udf {
    /// A text-in UDF of `arity.0..=arity.1` arguments.
    fn new(
        name: &'static str,
        returns: DataType,
        arity: (usize, usize),
        kernel: fn(&[&StringArray]) -> ArrayRef,
    ) -> Self {
        let text = vec![DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View];
        let signature = Signature::one_of(
            (arity.0..=arity.1)
                .map(|n| TypeSignature::Uniform(n, text.clone()))
                .collect(),
            Volatility::Immutable,
        );
        Udf {
            name,
            returns,
            kernel: Kernel::Text(kernel),
            signature,
            doc: None,
        }
    }

    /// A UDF over arguments of the types one of `signatures` lists.
    fn typed(
        name: &'static str,
        returns: DataType,
        signatures: Vec<Vec<DataType>>,
        kernel: fn(&[ArrayRef]) -> Result<ArrayRef>,
    ) -> Self {
        let signature = Signature::one_of(
            signatures.into_iter().map(TypeSignature::Exact).collect(),
            Volatility::Immutable,
        );
        Udf {
            name,
            returns,
            kernel: Kernel::Typed(kernel),
            signature,
            doc: None,
        }
    }
}

impl ScalarUDFImpl for Udf {
    fn name(&self) -> &str {
        self.name
    }
    fn documentation(&self) -> Option<&datafusion::logical_expr::Documentation> {
        self.doc.as_ref()
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.returns.clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(args.number_rows))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let out = match self.kernel {
            Kernel::Typed(kernel) => kernel(&arrays)?,
            Kernel::Text(kernel) => {
                let texts = arrays
                    .iter()
                    .map(|a| cast(a, &DataType::Utf8))
                    .collect::<Result<Vec<ArrayRef>, _>>()?;
                let texts: Vec<&StringArray> = texts.iter().map(|a| a.as_string::<i32>()).collect();
                kernel(&texts)
            }
        };
        Ok(ColumnarValue::Array(out))
    }
}

fn map_str(a: &StringArray, f: impl Fn(&str) -> Option<String>) -> ArrayRef {
    Arc::new(a.iter().map(|v| v.and_then(&f)).collect::<StringArray>())
}
fn map_bool(a: &StringArray, f: impl Fn(&str) -> bool) -> ArrayRef {
    Arc::new(a.iter().map(|v| v.map(&f)).collect::<BooleanArray>())
}
/// Row `i` of the optional argument `k` (null when absent or null).
fn arg<'a>(args: &[&'a StringArray], k: usize, i: usize) -> Option<&'a str> {
    args.get(k).filter(|a| a.is_valid(i)).map(|a| a.value(i))
}

/// Row `i`'s action text: the message text, or its reasoning when blank.
fn action<'a>(a: &[&'a StringArray], i: usize) -> Option<&'a str> {
    arg(a, 0, i).map(|t| turn::action_text(t, arg(a, 1, i)))
}
fn bash_command(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        (0..a[0].len())
            .map(|i| action(a, i).and_then(|t| turn::extract_bash_blocks(t).first().copied()))
            .collect::<StringArray>(),
    )
}
fn n_bash_blocks(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        (0..a[0].len())
            .map(|i| action(a, i).map(|t| turn::extract_bash_blocks(t).len() as i32))
            .collect::<Int32Array>(),
    )
}
fn cmd_kind(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        (0..a[0].len())
            .map(|i| {
                let command = arg(a, 0, i);
                let submits = arg(a, 2, i).is_some();
                if command.is_none() && !submits && a.len() < 3 {
                    return None;
                }
                let kind = turn::turn_kind(command, submits, arg(a, 1, i));
                Some(kind.as_str())
            })
            .collect::<StringArray>(),
    )
}
fn cmd_head(a: &[&StringArray]) -> ArrayRef {
    map_str(a[0], |c| Some(turn::command_head(c)))
}
fn is_submit(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        (0..a[0].len())
            .map(|i| arg(a, 0, i).map(|c| turn::is_submit_command(c, arg(a, 1, i))))
            .collect::<BooleanArray>(),
    )
}
fn submit_signal(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        (0..a[0].len())
            .map(|i| {
                turn::submit_signal(arg(a, 0, i), arg(a, 1, i), arg(a, 2, i), arg(a, 3, i))
                    .map(|s| s.as_str())
            })
            .collect::<StringArray>(),
    )
}
fn think_unclosed(a: &[&StringArray]) -> ArrayRef {
    map_bool(a[0], turn::think_unclosed)
}
fn fields_sha(a: &[&StringArray]) -> ArrayRef {
    fn value(c: &StringArray, i: usize) -> Option<&str> {
        c.is_valid(i).then(|| c.value(i))
    }
    Arc::new(
        (0..a[0].len())
            .map(|i| {
                Some(crate::digest::fields_sha(
                    value(a[0], i),
                    value(a[1], i),
                    value(a[2], i),
                ))
            })
            .collect::<StringArray>(),
    )
}
fn content_intact(a: &[&StringArray]) -> ArrayRef {
    fn value(c: &StringArray, i: usize) -> Option<&str> {
        c.is_valid(i).then(|| c.value(i))
    }
    Arc::new(
        (0..a[0].len())
            .map(|i| {
                let (Some(content), Some(sha)) = (value(a[0], i), value(a[1], i)) else {
                    return Some(false);
                };
                Some(crate::digest::content_intact(
                    content,
                    sha,
                    [value(a[2], i), value(a[3], i), value(a[4], i)],
                    value(a[5], i),
                ))
            })
            .collect::<BooleanArray>(),
    )
}
fn cited_outputs(a: &[&StringArray]) -> ArrayRef {
    let mut b = ListBuilder::new(Int32Builder::new());
    for v in a[0].iter() {
        match v {
            Some(t) => {
                for n in turn::parse_citations(t) {
                    b.values().append_value(n as i32);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}
fn normalize_command(a: &[&StringArray]) -> ArrayRef {
    map_str(a[0], |c| {
        Some(turn::loops::normalize_command(c).into_owned())
    })
}
fn obs_format(a: &[&StringArray]) -> ArrayRef {
    map_str(a[0], |t| {
        Some(turn::detect_obs_format(t).as_str().to_string())
    })
}
fn obs_failed(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        (0..a[0].len())
            .map(|i| {
                let text = arg(a, 0, i)?;
                let format = arg(a, 1, i)
                    .and_then(turn::ObsFormat::from_label)
                    .unwrap_or_else(|| turn::detect_obs_format(text));
                Some(turn::observation_outcome(format, text).failed)
            })
            .collect::<BooleanArray>(),
    )
}

fn word_count(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        a[0].iter()
            .map(|v| v.map(|t| turn::checklist::word_count(t) as i64))
            .collect::<Int64Array>(),
    )
}
fn prose_word_count(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        a[0].iter()
            .map(|v| v.map(|t| turn::checklist::prose_word_count(t) as i64))
            .collect::<Int64Array>(),
    )
}
fn economy_measure(a: &[&StringArray]) -> ArrayRef {
    map_str(a[0], |t| {
        turn::checklist::economy_question(t).map(|(m, _)| m.as_str().to_string())
    })
}
fn economy_limit(a: &[&StringArray]) -> ArrayRef {
    Arc::new(
        a[0].iter()
            .map(|v| {
                v.and_then(turn::checklist::economy_question)
                    .map(|(_, l)| l)
            })
            .collect::<Float64Array>(),
    )
}
fn string_lists<S: AsRef<str>>(a: &StringArray, f: impl Fn(&str) -> Vec<S>) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    for v in a.iter() {
        match v {
            Some(text) => {
                for item in f(text) {
                    b.values().append_value(item);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}
fn question_kinds(a: &[&StringArray]) -> ArrayRef {
    string_lists(a[0], turn::checklist::question_kinds)
}
fn question_targets(a: &[&StringArray]) -> ArrayRef {
    string_lists(a[0], turn::checklist::question_targets)
}

fn format_gate(a: &[ArrayRef]) -> Result<ArrayRef> {
    let blocks = cast(&a[0], &DataType::Int64)?;
    let (blocks, think, repeats) = (
        blocks.as_primitive::<arrow::datatypes::Int64Type>(),
        a[1].as_boolean(),
        a[2].as_boolean(),
    );
    // The optional fourth argument: the turn's format error (null: none).
    let rejected = a.get(3);
    let flag = |f: &BooleanArray, i: usize| f.is_valid(i) && f.value(i);
    Ok(Arc::new(
        (0..blocks.len())
            .map(|i| {
                turn::gate_reason(
                    rejected.is_some_and(|r| r.is_valid(i)),
                    blocks.is_valid(i).then(|| blocks.value(i)),
                    flag(think, i),
                    flag(repeats, i),
                )
            })
            .collect::<StringArray>(),
    ))
}

fn is_recovery(a: &[ArrayRef]) -> Result<ArrayRef> {
    let (failed, credit) = (a[0].as_boolean(), a[1].as_primitive::<Float64Type>());
    Ok(Arc::new(
        (0..failed.len())
            .map(|i| {
                Some(turn::is_recovery(
                    failed.is_valid(i).then(|| failed.value(i)),
                    credit.is_valid(i).then(|| credit.value(i)),
                ))
            })
            .collect::<BooleanArray>(),
    ))
}

/// [`turn::loop_metrics`] of each row's list of commands (none: no loop).
fn loop_metrics_of(a: &[ArrayRef]) -> Result<Vec<turn::LoopMetrics>> {
    let item = Arc::new(Field::new("item", DataType::Utf8, true));
    let lists = cast(&a[0], &DataType::List(item))?;
    lists
        .as_list::<i32>()
        .iter()
        .map(|commands| {
            let commands = commands.map(|c| cast(&c, &DataType::Utf8)).transpose()?;
            let commands = commands.as_ref().map(|c| c.as_string::<i32>());
            Ok(turn::loop_metrics(commands.into_iter().flatten().flatten()))
        })
        .collect()
}
fn dup_cmd_ratio(a: &[ArrayRef]) -> Result<ArrayRef> {
    let m = loop_metrics_of(a)?;
    Ok(Arc::new(Float64Array::from_iter_values(
        m.iter().map(|m| m.dup_cmd_ratio),
    )))
}
fn max_cmd_run(a: &[ArrayRef]) -> Result<ArrayRef> {
    let m = loop_metrics_of(a)?;
    Ok(Arc::new(Int64Array::from_iter_values(
        m.iter().map(|m| i64::from(m.max_cmd_run)),
    )))
}

fn hash_part(a: &[ArrayRef]) -> Result<ArrayRef> {
    let hashes = text_hashes(&a[0])?;
    let parts = cast(&a[1], &DataType::Int64)?;
    let parts = parts.as_primitive::<arrow::datatypes::Int64Type>();
    Ok(Arc::new(
        hashes
            .iter()
            .zip(parts.iter())
            .map(|(h, n)| Some((h? % n.filter(|n| *n > 0)? as u64) as i64))
            .collect::<Int64Array>(),
    ))
}

fn hash_key(a: &[ArrayRef]) -> Result<ArrayRef> {
    Ok(Arc::new(text_hashes(&a[0])?))
}

/// [`word_hash`] of each text of a string array of any kind, read in place
/// (a cast of the lake's string views to plain strings would copy them).
fn text_hashes(texts: &ArrayRef) -> Result<UInt64Array> {
    let hash = |t: Option<&str>| t.map(|t| word_hash(t.as_bytes()));
    Ok(match texts.data_type() {
        DataType::Utf8View => texts.as_string_view().iter().map(hash).collect(),
        DataType::LargeUtf8 => texts.as_string::<i64>().iter().map(hash).collect(),
        _ => cast(texts, &DataType::Utf8)?
            .as_string::<i32>()
            .iter()
            .map(hash)
            .collect(),
    })
}

/// A 64-bit hash of `bytes`, eight at a time, with murmur3's finalizer:
/// fixed across builds and platforms, so a text's part never depends on
/// the machine, and fast enough to run on every turn of the lake.
fn word_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut chunks = bytes.chunks_exact(8);
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let tail = chunks
        .remainder()
        .iter()
        .rev()
        .fold(0u64, |w, b| (w << 8) | u64::from(*b));
    h = (h ^ tail).wrapping_mul(K);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn selection_udfs() -> Vec<Udf> {
    let gate = [DataType::Int32, DataType::Int64]
        .into_iter()
        .flat_map(|n| {
            let three = vec![n, DataType::Boolean, DataType::Boolean];
            let four = [DataType::Utf8, DataType::Utf8View]
                .into_iter()
                .map(|e| [three.clone(), vec![e]].concat())
                .collect::<Vec<_>>();
            std::iter::once(three).chain(four)
        })
        .collect();
    let text = [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View];
    let part = text
        .iter()
        .map(|t| vec![t.clone(), DataType::Int64])
        .collect();
    let texts = text.iter().map(|t| vec![t.clone()]).collect::<Vec<_>>();
    let command_lists: Vec<Vec<DataType>> = text
        .iter()
        .map(|t| {
            vec![DataType::List(Arc::new(Field::new(
                "item",
                t.clone(),
                true,
            )))]
        })
        .collect();
    vec![
        Udf::typed(
            "dup_cmd_ratio",
            DataType::Float64,
            command_lists.clone(),
            dup_cmd_ratio,
        ),
        Udf::typed("max_cmd_run", DataType::Int64, command_lists, max_cmd_run),
        Udf::typed("format_gate", DataType::Utf8, gate, format_gate),
        Udf::typed(
            "is_recovery",
            DataType::Boolean,
            vec![vec![DataType::Boolean, DataType::Float64]],
            is_recovery,
        ),
        Udf::typed("hash_part", DataType::Int64, part, hash_part),
        Udf::typed("hash_key", DataType::UInt64, texts, hash_key),
    ]
}

/// Each UDF's call and what it gives, in one line.
const DOCS: &[(&str, &str, &str)] = &[
    (
        "bash_command",
        "bash_command(text [, reasoning])",
        "the first bash action of an assistant message (its reasoning when the text is blank)",
    ),
    (
        "n_bash_blocks",
        "n_bash_blocks(text [, reasoning])",
        "how many bash blocks an assistant message holds",
    ),
    (
        "cmd_kind",
        "cmd_kind(command [, marker [, submit_signal]])",
        "the command's kind: read, edit, test, run, search, submit, ...",
    ),
    (
        "cmd_head",
        "cmd_head(command)",
        "the program a command runs first",
    ),
    (
        "is_submit",
        "is_submit(command [, marker])",
        "whether the command prints the submit marker",
    ),
    (
        "submit_signal",
        "submit_signal(command, next_observation, exit_status_after, marker)",
        "which signal says a turn submits: command, observation or exit (null: none)",
    ),
    (
        "think_unclosed",
        "think_unclosed(text)",
        "whether a <think> block is left open",
    ),
    (
        "fields_sha",
        "fields_sha(reasoning, tool_calls, tool_call_id)",
        "the stored digest of a message's fields beyond its content",
    ),
    (
        "content_intact",
        "content_intact(content, content_sha, reasoning, tool_calls, tool_call_id, fields_sha)",
        "whether a message still matches the digests ingest stored",
    ),
    (
        "cited_outputs",
        "cited_outputs(text)",
        "the CANDIDATE OUTPUT numbers a judge's text cites",
    ),
    (
        "normalize_command",
        "normalize_command(command)",
        "the command as loop detection compares it",
    ),
    (
        "obs_format",
        "obs_format(text)",
        "the observation's format (how its return code is written)",
    ),
    (
        "obs_failed",
        "obs_failed(text [, obs_format])",
        "whether the observation says the command failed (null: unknown)",
    ),
    ("word_count", "word_count(text)", "words in a text"),
    (
        "prose_word_count",
        "prose_word_count(text)",
        "words outside code blocks",
    ),
    (
        "economy_measure",
        "economy_measure(question)",
        "what an economy checklist question limits (null: not one)",
    ),
    (
        "economy_limit",
        "economy_limit(question)",
        "the limit an economy checklist question sets",
    ),
    (
        "question_kinds",
        "question_kinds(question)",
        "the command kinds a checklist question is about",
    ),
    (
        "question_targets",
        "question_targets(question)",
        "the files, symbols and commands a checklist question quotes",
    ),
    (
        "dup_cmd_ratio",
        "dup_cmd_ratio(commands)",
        "the share of a run's commands that repeat an earlier one",
    ),
    (
        "max_cmd_run",
        "max_cmd_run(commands)",
        "the longest run of one command repeated back to back",
    ),
    (
        "format_gate",
        "format_gate(n_bash_blocks, think_unclosed, repeats [, format_error])",
        "why the quality gate demotes a train turn (null: it trains)",
    ),
    (
        "is_recovery",
        "is_recovery(prev_failed, credit)",
        "whether a turn earned credit right after a failed observation",
    ),
    (
        "hash_part",
        "hash_part(text, parts)",
        "the part (0..parts) a text hashes to, the same on every machine",
    ),
    (
        "hash_key",
        "hash_key(text)",
        "a 64-bit hash of a text, the same on every machine",
    ),
];

/// Every turnlake UDF.
pub fn all() -> Vec<ScalarUDF> {
    let list = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
    let strings = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    [
        Udf::new("bash_command", DataType::Utf8, (1, 2), bash_command),
        Udf::new("n_bash_blocks", DataType::Int32, (1, 2), n_bash_blocks),
        Udf::new("cmd_kind", DataType::Utf8, (1, 3), cmd_kind),
        Udf::new("cmd_head", DataType::Utf8, (1, 1), cmd_head),
        Udf::new("is_submit", DataType::Boolean, (1, 2), is_submit),
        Udf::new("submit_signal", DataType::Utf8, (4, 4), submit_signal),
        Udf::new("think_unclosed", DataType::Boolean, (1, 1), think_unclosed),
        Udf::new("fields_sha", DataType::Utf8, (3, 3), fields_sha),
        Udf::new("content_intact", DataType::Boolean, (6, 6), content_intact),
        Udf::new("cited_outputs", list, (1, 1), cited_outputs),
        Udf::new(
            "normalize_command",
            DataType::Utf8,
            (1, 1),
            normalize_command,
        ),
        Udf::new("obs_format", DataType::Utf8, (1, 1), obs_format),
        Udf::new("obs_failed", DataType::Boolean, (1, 2), obs_failed),
        Udf::new("word_count", DataType::Int64, (1, 1), word_count),
        Udf::new(
            "prose_word_count",
            DataType::Int64,
            (1, 1),
            prose_word_count,
        ),
        Udf::new("economy_measure", DataType::Utf8, (1, 1), economy_measure),
        Udf::new("economy_limit", DataType::Float64, (1, 1), economy_limit),
        Udf::new("question_kinds", strings.clone(), (1, 1), question_kinds),
        Udf::new("question_targets", strings, (1, 1), question_targets),
    ]
    .into_iter()
    .chain(selection_udfs())
    .map(|mut udf| {
        let section = datafusion::logical_expr::DocSection {
            include: true,
            label: "turnlake",
            description: None,
        };
        udf.doc = DOCS
            .iter()
            .find(|(name, ..)| *name == udf.name)
            .map(|(_, call, what)| {
                datafusion::logical_expr::Documentation::builder(section, *what, *call).build()
            });
        ScalarUDF::from(udf)
    })
    .collect()
}

pub fn register_all(ctx: &SessionContext) {
    for udf in all() {
        ctx.register_udf(udf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_udf_says_what_it_gives() {
        let names: Vec<String> = all().iter().map(|u| u.name().to_string()).collect();
        for udf in all() {
            let doc = udf.documentation();
            assert!(doc.is_some(), "{} has no line in DOCS", udf.name());
            assert!(doc.unwrap().syntax_example.starts_with(udf.name()));
        }
        for (name, ..) in DOCS {
            assert!(names.iter().any(|n| n == name), "DOCS names {name}, no UDF");
        }
    }

    #[tokio::test]
    async fn udfs_answer_in_sql() {
        let ctx = SessionContext::new();
        register_all(&ctx);
        let df = ctx
            .sql(
                "SELECT cmd_kind(bash_command(c)) AS k, n_bash_blocks(c) AS n, think_unclosed(c) AS th, \
                 cited_outputs('CANDIDATE OUTPUTS 1-2 and 4') AS cites, \
                 obs_failed('<returncode>2</returncode>\n<output>\n</output>') AS f \
                 FROM (VALUES ('THOUGHT: x\n\n```bash\ncat -n a.py\n```')) AS v(c)",
            )
            .await
            .unwrap();
        let batches = df.collect().await.unwrap();
        let b = &batches[0];
        assert_eq!(b.column(0).as_string::<i32>().value(0), "cat -n");
        assert_eq!(
            b.column(1)
                .as_primitive::<arrow::datatypes::Int32Type>()
                .value(0),
            1
        );
        assert!(!b.column(2).as_boolean().value(0));
        let cites = b.column(3).as_list::<i32>().value(0);
        assert_eq!(
            cites
                .as_primitive::<arrow::datatypes::Int32Type>()
                .values()
                .to_vec(),
            vec![1, 2, 4]
        );
        assert!(b.column(4).as_boolean().value(0));
        assert!(b.column(4).is_valid(0));
    }

    #[tokio::test]
    async fn hash_part_spreads_texts_over_every_part_and_the_gate_demotes_in_sql() {
        let ctx = SessionContext::new();
        register_all(&ctx);
        let parts = |sql: &str| {
            let ctx = ctx.clone();
            let sql = sql.to_string();
            async move {
                let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
                batches
                    .iter()
                    .flat_map(|b| {
                        let c = b.column(0).as_primitive::<arrow::datatypes::Int64Type>();
                        (0..c.len())
                            .map(|i| c.is_valid(i).then(|| c.value(i)))
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            }
        };
        let texts =
            "SELECT hash_part('mini_coder/acme__widget.' || CAST(value AS VARCHAR) || '/run', 4) \
                     FROM generate_series(1, 2000) ORDER BY value";
        let first = parts(texts).await;
        assert_eq!(first, parts(texts).await, "a text's part never changes");
        let mut per_part = [0usize; 4];
        for p in first.iter().map(|p| p.expect("a part")) {
            per_part[usize::try_from(p).expect("non-negative")] += 1;
        }
        assert!(
            per_part.iter().all(|n| (350..650).contains(n)),
            "{per_part:?}"
        );
        // A null text, or no parts, has no part.
        assert_eq!(
            parts("SELECT hash_part(CAST(NULL AS VARCHAR), 4)").await,
            vec![None]
        );
        assert_eq!(parts("SELECT hash_part('x', 0)").await, vec![None]);

        let gate = ctx
            .sql("SELECT format_gate(n, think, rep) FROM (VALUES (1, false, false), (2, false, false), (1, true, false), (1, false, true)) AS v(n, think, rep)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let reasons: Vec<Option<String>> = gate
            .iter()
            .flat_map(|b| {
                let c = b.column(0).as_string::<i32>();
                (0..c.len())
                    .map(|i| c.is_valid(i).then(|| c.value(i).to_string()))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            reasons,
            vec![
                None,
                Some("not exactly one bash block".into()),
                Some("unclosed <think>".into()),
                Some("repeats another train turn's command".into()),
            ]
        );
        // With the turn's format error: a rejected response is demoted as such.
        let gate = ctx
            .sql("SELECT format_gate(n, false, false, e) FROM (VALUES (2, 'Expected exactly 1 action, found 2.'), (1, CAST(NULL AS VARCHAR))) AS v(n, e)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let c = gate[0].column(0).as_string::<i32>();
        assert_eq!(c.value(0), "rejected by the agent (format error)");
        assert!(c.is_null(1));
    }

    #[tokio::test]
    async fn hash_key_is_the_hash_that_parts_divide_whatever_the_string_kind() {
        let ctx = SessionContext::new();
        register_all(&ctx);
        let sql = "SELECT hash_key(t) AS k, hash_key(arrow_cast(t, 'Utf8View')) AS kv, \
                          hash_key(arrow_cast(t, 'LargeUtf8')) AS kl, hash_part(t, 7) AS p \
                   FROM (VALUES ('albedo/run-1/sample:3/challenger'), ('mini_coder/é/x'), (''), \
                                ('albedo/run-1/sample:3/previous_king'), (NULL)) AS v(t)";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let keys = |name: &str| -> Vec<Option<u64>> {
            batches
                .iter()
                .flat_map(|b| {
                    let c = b
                        .column_by_name(name)
                        .unwrap()
                        .as_primitive::<arrow::datatypes::UInt64Type>();
                    c.iter().collect::<Vec<_>>()
                })
                .collect()
        };
        let (k, kv, kl) = (keys("k"), keys("kv"), keys("kl"));
        assert_eq!(k, kv, "views hash as plain strings");
        assert_eq!(k, kl, "large strings hash as plain strings");
        assert_eq!(k[4], None, "a null text has no key");
        assert_ne!(k[0], k[3], "two sides of a sample have their own keys");
        let parts: Vec<Option<i64>> = batches
            .iter()
            .flat_map(|b| {
                b.column_by_name("p")
                    .unwrap()
                    .as_primitive::<arrow::datatypes::Int64Type>()
                    .iter()
                    .collect::<Vec<_>>()
            })
            .collect();
        let from_keys: Vec<Option<i64>> = k.iter().map(|k| k.map(|k| (k % 7) as i64)).collect();
        assert_eq!(
            parts, from_keys,
            "a text's part is its key modulo the parts"
        );
    }
}
