//! Normalized rows of the ingest tables and their conversion to Arrow
//! batches in the column order of `schemas/*.json`.

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

fn batch(table: &str, columns: Vec<ArrayRef>) -> Result<RecordBatch, LakeError> {
    let schema = table_schema(table)?;
    RecordBatch::try_new(schema.schema, columns).map_err(|e: ArrowError| {
        LakeError::SchemaMismatch {
            table: table.to_string(),
            reason: e.to_string(),
        }
    })
}

pub fn evals_batch(r: &[EvalRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "evals",
        vec![
            s(r.iter().map(|x| x.eval_run_id.as_str())),
            ob(r.iter().map(|x| x.challenger_won)),
            of64(r.iter().map(|x| x.score_challenger)),
            of64(r.iter().map(|x| x.score_king)),
            of64(r.iter().map(|x| x.required_win_margin)),
            oi64(r.iter().map(|x| x.scored_sample_count)),
            oi64(r.iter().map(|x| x.judge_count)),
            os(r.iter().map(|x| x.scoring_mode.as_deref())),
            os(r.iter().map(|x| x.state.as_deref())),
            os(r.iter().map(|x| x.generated_samples_sha256.as_deref())),
            oi64(r.iter().map(|x| x.generated_samples_size)),
            os(r.iter().map(|x| x.scoring_results_sha256.as_deref())),
            oi64(r.iter().map(|x| x.scoring_results_size)),
            b(r.iter().map(|x| x.hashes_verified)),
            s(r.iter().map(|x| x.run_sha.as_str())),
            s(r.iter().map(|x| x.input_path.as_str())),
            os(r.iter().map(|x| x.generated_samples_uri.as_deref())),
            os(r.iter().map(|x| x.scoring_results_uri.as_deref())),
            os(r.iter().map(|x| x.challenger.model_uri.as_deref())),
            os(r.iter().map(|x| x.challenger.hotkey.as_deref())),
            oi64(r.iter().map(|x| x.challenger.uid)),
            os(r.iter().map(|x| x.king.model_uri.as_deref())),
            os(r.iter().map(|x| x.king.hotkey.as_deref())),
            oi64(r.iter().map(|x| x.king.uid)),
            oi64(r.iter().map(|x| x.king_version)),
        ],
    )
}

pub fn trajectories_batch(r: &[TrajectoryRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "trajectories",
        vec![
            s(r.iter().map(|x| x.traj_id.as_str())),
            s(r.iter().map(|x| x.source.as_str())),
            os(r.iter().map(|x| x.eval_run_id.as_deref())),
            os(r.iter().map(|x| x.sample_id.as_deref())),
            os(r.iter().map(|x| x.side.as_deref())),
            os(r.iter().map(|x| x.model.as_deref())),
            os(r.iter().map(|x| x.instance_id.as_deref())),
            of64(r.iter().map(|x| x.score)),
            ob(r.iter().map(|x| x.verified)),
            b(r.iter().map(|x| x.judged)),
            i32s(r.iter().map(|x| x.n_turns)),
            i32s(r.iter().map(|x| x.n_scored)),
            os(r.iter().map(|x| x.obs_format.as_deref())),
            f64s(r.iter().map(|x| x.dup_cmd_ratio)),
            i32s(r.iter().map(|x| x.max_cmd_run)),
            b(r.iter().map(|x| x.looped)),
            os(r.iter().map(|x| x.exit_status.as_deref())),
            os(r.iter().map(|x| x.submit_marker.as_deref())),
            os(r.iter().map(|x| x.error.as_deref())),
            s(r.iter().map(|x| x.traj_sha.as_str())),
            s(r.iter().map(|x| x.input_file.as_str())),
            oi64(r.iter().map(|x| x.input_row)),
            os(r.iter().map(|x| x.tools.as_deref())),
            os(r.iter().map(|x| x.prompt_text.as_deref())),
        ],
    )
}

pub fn messages_batch(r: &[MessageRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "messages",
        vec![
            s(r.iter().map(|x| x.traj_id.as_str())),
            s(r.iter().map(|x| x.source.as_str())),
            i32s(r.iter().map(|x| x.idx)),
            s(r.iter().map(|x| x.role.as_str())),
            s(r.iter().map(|x| x.content.as_str())),
            os(r.iter().map(|x| x.reasoning_content.as_deref())),
            os(r.iter().map(|x| x.tool_calls.as_deref())),
            b(r.iter().map(|x| x.score_target)),
            b(r.iter().map(|x| x.environment_observation)),
            b(r.iter().map(|x| x.is_context)),
            s(r.iter().map(|x| x.content_sha.as_str())),
            os(r.iter().map(|x| x.tool_call_id.as_deref())),
            ob(r.iter().map(|x| x.recovered)),
            os(r.iter().map(|x| x.fields_sha.as_deref())),
            os(r.iter().map(|x| x.extra.as_deref())),
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
            s(r.iter().map(|x| x.traj_id.as_str())),
            s(r.iter().map(|x| x.source.as_str())),
            i32s(r.iter().map(|x| x.t)),
            i32s(r.iter().map(|x| x.msg_idx)),
            oi32(r.iter().map(|x| x.candidate_n)),
            os(r.iter().map(|x| x.command.as_deref())),
            i32s(r.iter().map(|x| x.n_bash_blocks)),
            s(r.iter().map(|x| x.cmd_kind.as_str())),
            ob(r.iter().map(|x| x.obs_failed)),
            oi64(r.iter().map(|x| x.returncode)),
            b(r.iter().map(|x| x.think_unclosed)),
            b(r.iter().map(|x| x.is_submit)),
            os(r.iter().map(|x| x.submit_signal.as_deref())),
            b(r.iter().map(|x| x.is_repeat)),
            b(r.iter().map(|x| x.repeats_prev)),
            b(r.iter().map(|x| x.prev_failed)),
            b(r.iter().map(|x| x.after_repeat_run)),
            i32s(r.iter().map(|x| x.prior_failures)),
            b(r.iter().map(|x| x.is_last)),
            s(r.iter().map(|x| x.turn_sha.as_str())),
            Arc::new(commands.finish()),
            os(r.iter().map(|x| x.format_error.as_deref())),
            b(r.iter().map(|x| x.parsed)),
        ],
    )
}

pub fn questions_batch(r: &[QuestionRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "questions",
        vec![
            s(r.iter().map(|x| x.eval_run_id.as_str())),
            s(r.iter().map(|x| x.sample_id.as_str())),
            s(r.iter().map(|x| x.question_id.as_str())),
            os(r.iter().map(|x| x.text.as_deref())),
            os(r.iter().map(|x| x.tag.as_deref())),
            os(r.iter().map(|x| x.category.as_deref())),
            os(r.iter().map(|x| x.requires.as_deref())),
            os(r.iter().map(|x| x.example_bad.as_deref())),
            os(r.iter().map(|x| x.sample_phase.as_deref())),
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
            s(r.iter().map(|x| x.eval_run_id.as_str())),
            s(r.iter().map(|x| x.sample_id.as_str())),
            s(r.iter().map(|x| x.side.as_str())),
            s(r.iter().map(|x| x.traj_id.as_str())),
            s(r.iter().map(|x| x.question_id.as_str())),
            oi32(r.iter().map(|x| x.answer)),
            os(r.iter().map(|x| x.explanation.as_deref())),
            Arc::new(cited.finish()),
            os(r.iter().map(|x| x.judge_model.as_deref())),
            b(r.iter().map(|x| x.looped)),
        ],
    )
}

pub fn rejects_batch(r: &[RejectRow]) -> Result<RecordBatch, LakeError> {
    batch(
        "rejects",
        vec![
            s(r.iter().map(|x| x.reject_id.as_str())),
            s(r.iter().map(|x| x.source.as_str())),
            s(r.iter().map(|x| x.input_file.as_str())),
            oi64(r.iter().map(|x| x.line)),
            os(r.iter().map(|x| x.field.as_deref())),
            s(r.iter().map(|x| x.reason.as_str())),
            Arc::new(
                r.iter()
                    .map(|x| Some(x.raw.as_slice()))
                    .collect::<BinaryArray>(),
            ),
        ],
    )
}
