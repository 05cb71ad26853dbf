//! Normalized rows of the ingest tables and their conversion to Arrow
//! batches: each column given by its name, placed where `schemas/*.json`
//! puts it.

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Float64Array, Int32Array, Int32Builder, Int64Array,
    ListBuilder, StringArray, StringBuilder,
};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::lake::{table_schema, LakeError};

#[derive(Debug, Clone, Default)]
pub struct EvalRow {
    pub eval_run_id: String,
    pub challenger_won: Option<bool>,
    pub score_challenger: Option<f64>,
    pub score_king: Option<f64>,
    pub required_win_margin: Option<f64>,
    pub scored_sample_count: Option<i64>,
    pub judge_count: Option<i64>,
    pub scoring_mode: Option<String>,
    pub state: Option<String>,
    pub generated_samples_sha256: Option<String>,
    pub generated_samples_size: Option<i64>,
    pub scoring_results_sha256: Option<String>,
    pub scoring_results_size: Option<i64>,
    pub hashes_verified: bool,
    pub run_sha: String,
    pub generated_samples_uri: Option<String>,
    pub scoring_results_uri: Option<String>,
    pub input_path: String,
    /// Who played, from the run's dashboard entry.
    pub challenger: crate::source::dashboard::Player,
    pub king: crate::source::dashboard::Player,
    pub king_version: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct TrajectoryRow {
    pub traj_id: String,
    pub source: String,
    pub eval_run_id: Option<String>,
    pub sample_id: Option<String>,
    pub side: Option<String>,
    pub model: Option<String>,
    pub instance_id: Option<String>,
    pub score: Option<f64>,
    pub verified: Option<bool>,
    pub judged: bool,
    pub n_turns: i32,
    pub n_scored: i32,
    pub obs_format: Option<String>,
    pub dup_cmd_ratio: f64,
    pub max_cmd_run: i32,
    pub looped: bool,
    pub exit_status: Option<String>,
    pub submit_marker: Option<String>,
    pub error: Option<String>,
    pub traj_sha: String,
    pub input_file: String,
    pub input_row: Option<i64>,
    pub tools: Option<String>,
    pub prompt_text: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct MessageRow {
    pub traj_id: String,
    pub source: String,
    pub idx: i32,
    pub role: String,
    pub content: String,
    pub reasoning_content: Option<String>,
    pub tool_calls: Option<String>,
    pub score_target: bool,
    pub environment_observation: bool,
    pub is_context: bool,
    pub content_sha: String,
    pub tool_call_id: Option<String>,
    pub recovered: Option<bool>,
    pub fields_sha: Option<String>,
    pub extra: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct TurnRow {
    pub traj_id: String,
    pub source: String,
    pub t: i32,
    pub msg_idx: i32,
    pub candidate_n: Option<i32>,
    pub command: Option<String>,
    pub n_bash_blocks: i32,
    pub cmd_kind: String,
    pub obs_failed: Option<bool>,
    pub returncode: Option<i64>,
    pub think_unclosed: bool,
    pub is_submit: bool,
    pub submit_signal: Option<String>,
    pub is_repeat: bool,
    pub repeats_prev: bool,
    pub prev_failed: bool,
    pub after_repeat_run: bool,
    pub prior_failures: i32,
    pub is_last: bool,
    pub turn_sha: String,
    pub commands: Vec<String>,
    pub format_error: Option<String>,
    pub parsed: bool,
}

#[derive(Debug, Clone, Default)]
pub struct QuestionRow {
    pub eval_run_id: String,
    pub sample_id: String,
    pub question_id: String,
    pub text: Option<String>,
    pub tag: Option<String>,
    pub category: Option<String>,
    pub requires: Option<String>,
    pub example_bad: Option<String>,
    pub sample_phase: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct JudgmentRow {
    pub eval_run_id: String,
    pub sample_id: String,
    pub side: String,
    pub traj_id: String,
    pub question_id: String,
    pub answer: Option<i32>,
    pub explanation: Option<String>,
    pub cited_outputs: Vec<i32>,
    pub judge_model: Option<String>,
    pub looped: bool,
}

#[derive(Debug, Clone, Default)]
pub struct RejectRow {
    pub reject_id: String,
    pub source: String,
    pub input_file: String,
    pub line: Option<i64>,
    pub field: Option<String>,
    pub reason: String,
    pub raw: Vec<u8>,
}

fn s<'a>(v: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(v))
}
fn os<'a>(v: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(v.collect::<StringArray>())
}
fn b(v: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(v.map(Some).collect::<BooleanArray>())
}
fn ob(v: impl Iterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(v.collect::<BooleanArray>())
}
fn i32s(v: impl Iterator<Item = i32>) -> ArrayRef {
    Arc::new(v.collect::<Int32Array>())
}
fn oi32(v: impl Iterator<Item = Option<i32>>) -> ArrayRef {
    Arc::new(v.collect::<Int32Array>())
}
fn oi64(v: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(v.collect::<Int64Array>())
}
fn f64s(v: impl Iterator<Item = f64>) -> ArrayRef {
    Arc::new(v.collect::<Float64Array>())
}
fn of64(v: impl Iterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(v.collect::<Float64Array>())
}

/// A batch of `table` from its columns by name, in the order of its schema
/// file: a column the schema lacks, or one it has that is not given, is an
/// error naming it.
fn batch(table: &str, columns: Vec<(&'static str, ArrayRef)>) -> Result<RecordBatch, LakeError> {
    let schema = table_schema(table)?;
    let mismatch = |reason: String| LakeError::SchemaMismatch {
        table: table.to_string(),
        reason,
    };
    let mut by_name: std::collections::HashMap<&str, ArrayRef> = columns.into_iter().collect();
    let ordered = schema
        .schema
        .fields()
        .iter()
        .map(|f| {
            by_name
                .remove(f.name().as_str())
                .ok_or_else(|| mismatch(format!("no column {} given", f.name())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(extra) = by_name.keys().min() {
        return Err(mismatch(format!(
            "column {extra} is not in schemas/{table}.json"
        )));
    }
    RecordBatch::try_new(schema.schema, ordered).map_err(|e: ArrowError| mismatch(e.to_string()))
}

pub fn evals_batch(r: &[EvalRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "evals",
        vec![
            ("eval_run_id", s(r.iter().map(|x| x.eval_run_id.as_str()))),
            ("challenger_won", ob(r.iter().map(|x| x.challenger_won))),
            (
                "score_challenger",
                of64(r.iter().map(|x| x.score_challenger)),
            ),
            ("score_king", of64(r.iter().map(|x| x.score_king))),
            (
                "required_win_margin",
                of64(r.iter().map(|x| x.required_win_margin)),
            ),
            (
                "scored_sample_count",
                oi64(r.iter().map(|x| x.scored_sample_count)),
            ),
            ("judge_count", oi64(r.iter().map(|x| x.judge_count))),
            (
                "scoring_mode",
                os(r.iter().map(|x| x.scoring_mode.as_deref())),
            ),
            ("state", os(r.iter().map(|x| x.state.as_deref()))),
            (
                "generated_samples_sha256",
                os(r.iter().map(|x| x.generated_samples_sha256.as_deref())),
            ),
            (
                "generated_samples_size",
                oi64(r.iter().map(|x| x.generated_samples_size)),
            ),
            (
                "scoring_results_sha256",
                os(r.iter().map(|x| x.scoring_results_sha256.as_deref())),
            ),
            (
                "scoring_results_size",
                oi64(r.iter().map(|x| x.scoring_results_size)),
            ),
            ("hashes_verified", b(r.iter().map(|x| x.hashes_verified))),
            ("run_sha", s(r.iter().map(|x| x.run_sha.as_str()))),
            ("input_path", s(r.iter().map(|x| x.input_path.as_str()))),
            (
                "generated_samples_uri",
                os(r.iter().map(|x| x.generated_samples_uri.as_deref())),
            ),
            (
                "scoring_results_uri",
                os(r.iter().map(|x| x.scoring_results_uri.as_deref())),
            ),
            (
                "challenger_model_uri",
                os(r.iter().map(|x| x.challenger.model_uri.as_deref())),
            ),
            (
                "challenger_hotkey",
                os(r.iter().map(|x| x.challenger.hotkey.as_deref())),
            ),
            ("challenger_uid", oi64(r.iter().map(|x| x.challenger.uid))),
            (
                "king_model_uri",
                os(r.iter().map(|x| x.king.model_uri.as_deref())),
            ),
            (
                "king_hotkey",
                os(r.iter().map(|x| x.king.hotkey.as_deref())),
            ),
            ("king_uid", oi64(r.iter().map(|x| x.king.uid))),
            ("king_version", oi64(r.iter().map(|x| x.king_version))),
        ],
    )
}

pub fn trajectories_batch(r: &[TrajectoryRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "trajectories",
        vec![
            ("traj_id", s(r.iter().map(|x| x.traj_id.as_str()))),
            ("source", s(r.iter().map(|x| x.source.as_str()))),
            (
                "eval_run_id",
                os(r.iter().map(|x| x.eval_run_id.as_deref())),
            ),
            ("sample_id", os(r.iter().map(|x| x.sample_id.as_deref()))),
            ("side", os(r.iter().map(|x| x.side.as_deref()))),
            ("model", os(r.iter().map(|x| x.model.as_deref()))),
            (
                "instance_id",
                os(r.iter().map(|x| x.instance_id.as_deref())),
            ),
            ("score", of64(r.iter().map(|x| x.score))),
            ("verified", ob(r.iter().map(|x| x.verified))),
            ("judged", b(r.iter().map(|x| x.judged))),
            ("n_turns", i32s(r.iter().map(|x| x.n_turns))),
            ("n_scored", i32s(r.iter().map(|x| x.n_scored))),
            ("obs_format", os(r.iter().map(|x| x.obs_format.as_deref()))),
            ("dup_cmd_ratio", f64s(r.iter().map(|x| x.dup_cmd_ratio))),
            ("max_cmd_run", i32s(r.iter().map(|x| x.max_cmd_run))),
            ("looped", b(r.iter().map(|x| x.looped))),
            (
                "exit_status",
                os(r.iter().map(|x| x.exit_status.as_deref())),
            ),
            (
                "submit_marker",
                os(r.iter().map(|x| x.submit_marker.as_deref())),
            ),
            ("error", os(r.iter().map(|x| x.error.as_deref()))),
            ("traj_sha", s(r.iter().map(|x| x.traj_sha.as_str()))),
            ("input_file", s(r.iter().map(|x| x.input_file.as_str()))),
            ("input_row", oi64(r.iter().map(|x| x.input_row))),
            ("tools", os(r.iter().map(|x| x.tools.as_deref()))),
            (
                "prompt_text",
                os(r.iter().map(|x| x.prompt_text.as_deref())),
            ),
        ],
    )
}

pub fn messages_batch(r: &[MessageRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "messages",
        vec![
            ("traj_id", s(r.iter().map(|x| x.traj_id.as_str()))),
            ("source", s(r.iter().map(|x| x.source.as_str()))),
            ("idx", i32s(r.iter().map(|x| x.idx))),
            ("role", s(r.iter().map(|x| x.role.as_str()))),
            ("content", s(r.iter().map(|x| x.content.as_str()))),
            (
                "reasoning_content",
                os(r.iter().map(|x| x.reasoning_content.as_deref())),
            ),
            ("tool_calls", os(r.iter().map(|x| x.tool_calls.as_deref()))),
            ("score_target", b(r.iter().map(|x| x.score_target))),
            (
                "environment_observation",
                b(r.iter().map(|x| x.environment_observation)),
            ),
            ("is_context", b(r.iter().map(|x| x.is_context))),
            ("content_sha", s(r.iter().map(|x| x.content_sha.as_str()))),
            (
                "tool_call_id",
                os(r.iter().map(|x| x.tool_call_id.as_deref())),
            ),
            ("recovered", ob(r.iter().map(|x| x.recovered))),
            ("fields_sha", os(r.iter().map(|x| x.fields_sha.as_deref()))),
            ("extra", os(r.iter().map(|x| x.extra.as_deref()))),
        ],
    )
}

pub fn turns_batch(r: &[TurnRow]) -> Result<RecordBatch, LakeError> {
    let mut commands = ListBuilder::new(StringBuilder::new());
    for x in r {
        for c in &x.commands {
            commands.values().append_value(c);
        }
        commands.append(true);
    }
    batch(
        "turns",
        vec![
            ("traj_id", s(r.iter().map(|x| x.traj_id.as_str()))),
            ("source", s(r.iter().map(|x| x.source.as_str()))),
            ("t", i32s(r.iter().map(|x| x.t))),
            ("msg_idx", i32s(r.iter().map(|x| x.msg_idx))),
            ("candidate_n", oi32(r.iter().map(|x| x.candidate_n))),
            ("command", os(r.iter().map(|x| x.command.as_deref()))),
            ("n_bash_blocks", i32s(r.iter().map(|x| x.n_bash_blocks))),
            ("cmd_kind", s(r.iter().map(|x| x.cmd_kind.as_str()))),
            ("obs_failed", ob(r.iter().map(|x| x.obs_failed))),
            ("returncode", oi64(r.iter().map(|x| x.returncode))),
            ("think_unclosed", b(r.iter().map(|x| x.think_unclosed))),
            ("is_submit", b(r.iter().map(|x| x.is_submit))),
            (
                "submit_signal",
                os(r.iter().map(|x| x.submit_signal.as_deref())),
            ),
            ("is_repeat", b(r.iter().map(|x| x.is_repeat))),
            ("repeats_prev", b(r.iter().map(|x| x.repeats_prev))),
            ("prev_failed", b(r.iter().map(|x| x.prev_failed))),
            ("after_repeat_run", b(r.iter().map(|x| x.after_repeat_run))),
            ("prior_failures", i32s(r.iter().map(|x| x.prior_failures))),
            ("is_last", b(r.iter().map(|x| x.is_last))),
            ("turn_sha", s(r.iter().map(|x| x.turn_sha.as_str()))),
            ("commands", Arc::new(commands.finish())),
            (
                "format_error",
                os(r.iter().map(|x| x.format_error.as_deref())),
            ),
            ("parsed", b(r.iter().map(|x| x.parsed))),
        ],
    )
}

pub fn questions_batch(r: &[QuestionRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "questions",
        vec![
            ("eval_run_id", s(r.iter().map(|x| x.eval_run_id.as_str()))),
            ("sample_id", s(r.iter().map(|x| x.sample_id.as_str()))),
            ("question_id", s(r.iter().map(|x| x.question_id.as_str()))),
            ("text", os(r.iter().map(|x| x.text.as_deref()))),
            ("tag", os(r.iter().map(|x| x.tag.as_deref()))),
            ("category", os(r.iter().map(|x| x.category.as_deref()))),
            ("requires", os(r.iter().map(|x| x.requires.as_deref()))),
            (
                "example_bad",
                os(r.iter().map(|x| x.example_bad.as_deref())),
            ),
            (
                "sample_phase",
                os(r.iter().map(|x| x.sample_phase.as_deref())),
            ),
        ],
    )
}

pub fn judgments_batch(r: &[JudgmentRow]) -> Result<RecordBatch, LakeError> {
    let mut cited = ListBuilder::new(Int32Builder::new());
    for x in r {
        cited.values().append_slice(&x.cited_outputs);
        cited.append(true);
    }
    batch(
        "judgments",
        vec![
            ("eval_run_id", s(r.iter().map(|x| x.eval_run_id.as_str()))),
            ("sample_id", s(r.iter().map(|x| x.sample_id.as_str()))),
            ("side", s(r.iter().map(|x| x.side.as_str()))),
            ("traj_id", s(r.iter().map(|x| x.traj_id.as_str()))),
            ("question_id", s(r.iter().map(|x| x.question_id.as_str()))),
            ("answer", oi32(r.iter().map(|x| x.answer))),
            (
                "explanation",
                os(r.iter().map(|x| x.explanation.as_deref())),
            ),
            ("cited_outputs", Arc::new(cited.finish())),
            (
                "judge_model",
                os(r.iter().map(|x| x.judge_model.as_deref())),
            ),
            ("looped", b(r.iter().map(|x| x.looped))),
        ],
    )
}

pub fn rejects_batch(r: &[RejectRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "rejects",
        vec![
            ("reject_id", s(r.iter().map(|x| x.reject_id.as_str()))),
            ("source", s(r.iter().map(|x| x.source.as_str()))),
            ("input_file", s(r.iter().map(|x| x.input_file.as_str()))),
            ("line", oi64(r.iter().map(|x| x.line))),
            ("field", os(r.iter().map(|x| x.field.as_deref()))),
            ("reason", s(r.iter().map(|x| x.reason.as_str()))),
            (
                "raw",
                Arc::new(
                    r.iter()
                        .map(|x| Some(x.raw.as_slice()))
                        .collect::<BinaryArray>(),
                ),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_placed_by_name_and_a_missing_or_stray_one_is_named() {
        let r = RejectRow {
            reject_id: "id".into(),
            raw: b"x".to_vec(),
            ..Default::default()
        };
        let b = rejects_batch(&[r]).unwrap();
        let schema = table_schema("rejects").unwrap().schema;
        assert_eq!(b.schema().fields(), schema.fields());
        let one = |name: &'static str| (name, s(["v"].into_iter()));
        let err = batch("questions", vec![one("eval_run_id")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no column sample_id"), "{err}");
        let mut all: Vec<_> = schema_names("questions").into_iter().map(one).collect();
        all.push(one("stray"));
        let err = batch("questions", all).unwrap_err().to_string();
        assert!(
            err.contains("column stray is not in schemas/questions.json"),
            "{err}"
        );
    }

    fn schema_names(table: &str) -> Vec<&'static str> {
        table_schema(table)
            .unwrap()
            .schema
            .fields()
            .iter()
            .map(|f| &*f.name().clone().leak())
            .collect()
    }
}
