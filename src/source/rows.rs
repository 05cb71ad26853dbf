//! Normalized rows of the ingest tables and their conversion to Arrow
//! batches: each column given by its name, placed where `schemas/*.json`
//! puts it.

use arrow::array::{
    ArrayBuilder, ArrayRef, BinaryArray, BooleanArray, BooleanBuilder, Float64Array,
    Float64Builder, Int32Array, Int32Builder, Int64Array, Int64Builder, ListBuilder,
    PrimitiveBuilder, StringArray, StringBuilder,
};
use arrow::datatypes::ArrowPrimitiveType;
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
fn oi32(v: impl Iterator<Item = Option<i32>>) -> ArrayRef {
    Arc::new(v.collect::<Int32Array>())
}
fn oi64(v: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(v.collect::<Int64Array>())
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

/// An empty builder with room for what `self` holds and an eighth more: the
/// next flush's columns are sized by the last one's, so they are not grown
/// (and copied) by doubling, row after row.
trait SizedLike {
    fn sized_like(&self) -> Self;
}

fn headroom(n: usize) -> usize {
    n + n / 8
}

impl SizedLike for StringBuilder {
    fn sized_like(&self) -> Self {
        StringBuilder::with_capacity(headroom(self.len()), headroom(self.values_slice().len()))
    }
}

impl<T: ArrowPrimitiveType> SizedLike for PrimitiveBuilder<T> {
    fn sized_like(&self) -> Self {
        PrimitiveBuilder::with_capacity(headroom(self.len()))
    }
}

impl SizedLike for BooleanBuilder {
    fn sized_like(&self) -> Self {
        BooleanBuilder::with_capacity(headroom(self.len()))
    }
}

impl SizedLike for ListBuilder<StringBuilder> {
    fn sized_like(&self) -> Self {
        ListBuilder::with_capacity(self.values_ref().sized_like(), headroom(self.len()))
    }
}

/// A builder's column, for [`batch`].
fn column(b: &mut dyn ArrayBuilder) -> ArrayRef {
    b.finish()
}

/// The trajectories table's columns, appended a row at a time: ingest
/// copies each row in as it arrives and frees it, so a flush holds columns,
/// not rows and then columns.
#[derive(Default)]
pub struct TrajectoryColumns {
    traj_id: StringBuilder,
    source: StringBuilder,
    eval_run_id: StringBuilder,
    sample_id: StringBuilder,
    side: StringBuilder,
    model: StringBuilder,
    instance_id: StringBuilder,
    score: Float64Builder,
    verified: BooleanBuilder,
    judged: BooleanBuilder,
    n_turns: Int32Builder,
    n_scored: Int32Builder,
    obs_format: StringBuilder,
    dup_cmd_ratio: Float64Builder,
    max_cmd_run: Int32Builder,
    looped: BooleanBuilder,
    exit_status: StringBuilder,
    submit_marker: StringBuilder,
    error: StringBuilder,
    traj_sha: StringBuilder,
    input_file: StringBuilder,
    input_row: Int64Builder,
    tools: StringBuilder,
    prompt_text: StringBuilder,
    rows: usize,
}

impl TrajectoryColumns {
    pub fn push(&mut self, x: &TrajectoryRow) {
        self.traj_id.append_value(&x.traj_id);
        self.source.append_value(&x.source);
        self.eval_run_id.append_option(x.eval_run_id.as_deref());
        self.sample_id.append_option(x.sample_id.as_deref());
        self.side.append_option(x.side.as_deref());
        self.model.append_option(x.model.as_deref());
        self.instance_id.append_option(x.instance_id.as_deref());
        self.score.append_option(x.score);
        self.verified.append_option(x.verified);
        self.judged.append_value(x.judged);
        self.n_turns.append_value(x.n_turns);
        self.n_scored.append_value(x.n_scored);
        self.obs_format.append_option(x.obs_format.as_deref());
        self.dup_cmd_ratio.append_value(x.dup_cmd_ratio);
        self.max_cmd_run.append_value(x.max_cmd_run);
        self.looped.append_value(x.looped);
        self.exit_status.append_option(x.exit_status.as_deref());
        self.submit_marker.append_option(x.submit_marker.as_deref());
        self.error.append_option(x.error.as_deref());
        self.traj_sha.append_value(&x.traj_sha);
        self.input_file.append_value(&x.input_file);
        self.input_row.append_option(x.input_row);
        self.tools.append_option(x.tools.as_deref());
        self.prompt_text.append_option(x.prompt_text.as_deref());
        self.rows += 1;
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    pub fn finish(mut self) -> Result<RecordBatch, LakeError> {
        let s = &mut self;
        batch(
            "trajectories",
            vec![
                ("traj_id", column(&mut s.traj_id)),
                ("source", column(&mut s.source)),
                ("eval_run_id", column(&mut s.eval_run_id)),
                ("sample_id", column(&mut s.sample_id)),
                ("side", column(&mut s.side)),
                ("model", column(&mut s.model)),
                ("instance_id", column(&mut s.instance_id)),
                ("score", column(&mut s.score)),
                ("verified", column(&mut s.verified)),
                ("judged", column(&mut s.judged)),
                ("n_turns", column(&mut s.n_turns)),
                ("n_scored", column(&mut s.n_scored)),
                ("obs_format", column(&mut s.obs_format)),
                ("dup_cmd_ratio", column(&mut s.dup_cmd_ratio)),
                ("max_cmd_run", column(&mut s.max_cmd_run)),
                ("looped", column(&mut s.looped)),
                ("exit_status", column(&mut s.exit_status)),
                ("submit_marker", column(&mut s.submit_marker)),
                ("error", column(&mut s.error)),
                ("traj_sha", column(&mut s.traj_sha)),
                ("input_file", column(&mut s.input_file)),
                ("input_row", column(&mut s.input_row)),
                ("tools", column(&mut s.tools)),
                ("prompt_text", column(&mut s.prompt_text)),
            ],
        )
    }
}

pub fn trajectories_batch(r: &[TrajectoryRow]) -> Result<RecordBatch, LakeError> {
    let mut columns = TrajectoryColumns::default();
    r.iter().for_each(|x| columns.push(x));
    columns.finish()
}

/// The messages table's columns, appended a row at a time (see
/// [`TrajectoryColumns`]).
#[derive(Default)]
pub struct MessageColumns {
    traj_id: StringBuilder,
    source: StringBuilder,
    idx: Int32Builder,
    role: StringBuilder,
    content: StringBuilder,
    reasoning_content: StringBuilder,
    tool_calls: StringBuilder,
    score_target: BooleanBuilder,
    environment_observation: BooleanBuilder,
    is_context: BooleanBuilder,
    content_sha: StringBuilder,
    tool_call_id: StringBuilder,
    recovered: BooleanBuilder,
    fields_sha: StringBuilder,
    extra: StringBuilder,
}

impl MessageColumns {
    /// Empty columns with room for what these hold (see [`SizedLike`]).
    pub fn sized_like(&self) -> MessageColumns {
        MessageColumns {
            traj_id: self.traj_id.sized_like(),
            source: self.source.sized_like(),
            idx: self.idx.sized_like(),
            role: self.role.sized_like(),
            content: self.content.sized_like(),
            reasoning_content: self.reasoning_content.sized_like(),
            tool_calls: self.tool_calls.sized_like(),
            score_target: self.score_target.sized_like(),
            environment_observation: self.environment_observation.sized_like(),
            is_context: self.is_context.sized_like(),
            content_sha: self.content_sha.sized_like(),
            tool_call_id: self.tool_call_id.sized_like(),
            recovered: self.recovered.sized_like(),
            fields_sha: self.fields_sha.sized_like(),
            extra: self.extra.sized_like(),
        }
    }

    pub fn push(&mut self, x: &MessageRow) {
        self.traj_id.append_value(&x.traj_id);
        self.source.append_value(&x.source);
        self.idx.append_value(x.idx);
        self.role.append_value(&x.role);
        self.content.append_value(&x.content);
        self.reasoning_content
            .append_option(x.reasoning_content.as_deref());
        self.tool_calls.append_option(x.tool_calls.as_deref());
        self.score_target.append_value(x.score_target);
        self.environment_observation
            .append_value(x.environment_observation);
        self.is_context.append_value(x.is_context);
        self.content_sha.append_value(&x.content_sha);
        self.tool_call_id.append_option(x.tool_call_id.as_deref());
        self.recovered.append_option(x.recovered);
        self.fields_sha.append_option(x.fields_sha.as_deref());
        self.extra.append_option(x.extra.as_deref());
    }

    pub fn finish(mut self) -> Result<RecordBatch, LakeError> {
        let s = &mut self;
        batch(
            "messages",
            vec![
                ("traj_id", column(&mut s.traj_id)),
                ("source", column(&mut s.source)),
                ("idx", column(&mut s.idx)),
                ("role", column(&mut s.role)),
                ("content", column(&mut s.content)),
                ("reasoning_content", column(&mut s.reasoning_content)),
                ("tool_calls", column(&mut s.tool_calls)),
                ("score_target", column(&mut s.score_target)),
                (
                    "environment_observation",
                    column(&mut s.environment_observation),
                ),
                ("is_context", column(&mut s.is_context)),
                ("content_sha", column(&mut s.content_sha)),
                ("tool_call_id", column(&mut s.tool_call_id)),
                ("recovered", column(&mut s.recovered)),
                ("fields_sha", column(&mut s.fields_sha)),
                ("extra", column(&mut s.extra)),
            ],
        )
    }
}

pub fn messages_batch(r: &[MessageRow]) -> Result<RecordBatch, LakeError> {
    let mut columns = MessageColumns::default();
    r.iter().for_each(|x| columns.push(x));
    columns.finish()
}

/// The turns table's columns, appended a row at a time (see
/// [`TrajectoryColumns`]).
pub struct TurnColumns {
    traj_id: StringBuilder,
    source: StringBuilder,
    t: Int32Builder,
    msg_idx: Int32Builder,
    candidate_n: Int32Builder,
    command: StringBuilder,
    n_bash_blocks: Int32Builder,
    cmd_kind: StringBuilder,
    obs_failed: BooleanBuilder,
    returncode: Int64Builder,
    think_unclosed: BooleanBuilder,
    is_submit: BooleanBuilder,
    submit_signal: StringBuilder,
    is_repeat: BooleanBuilder,
    repeats_prev: BooleanBuilder,
    prev_failed: BooleanBuilder,
    after_repeat_run: BooleanBuilder,
    prior_failures: Int32Builder,
    is_last: BooleanBuilder,
    turn_sha: StringBuilder,
    commands: ListBuilder<StringBuilder>,
    format_error: StringBuilder,
    parsed: BooleanBuilder,
}

impl Default for TurnColumns {
    fn default() -> TurnColumns {
        TurnColumns {
            traj_id: StringBuilder::new(),
            source: StringBuilder::new(),
            t: Int32Builder::new(),
            msg_idx: Int32Builder::new(),
            candidate_n: Int32Builder::new(),
            command: StringBuilder::new(),
            n_bash_blocks: Int32Builder::new(),
            cmd_kind: StringBuilder::new(),
            obs_failed: BooleanBuilder::new(),
            returncode: Int64Builder::new(),
            think_unclosed: BooleanBuilder::new(),
            is_submit: BooleanBuilder::new(),
            submit_signal: StringBuilder::new(),
            is_repeat: BooleanBuilder::new(),
            repeats_prev: BooleanBuilder::new(),
            prev_failed: BooleanBuilder::new(),
            after_repeat_run: BooleanBuilder::new(),
            prior_failures: Int32Builder::new(),
            is_last: BooleanBuilder::new(),
            turn_sha: StringBuilder::new(),
            commands: ListBuilder::new(StringBuilder::new()),
            format_error: StringBuilder::new(),
            parsed: BooleanBuilder::new(),
        }
    }
}

impl TurnColumns {
    /// Empty columns with room for what these hold (see [`SizedLike`]).
    pub fn sized_like(&self) -> TurnColumns {
        TurnColumns {
            traj_id: self.traj_id.sized_like(),
            source: self.source.sized_like(),
            t: self.t.sized_like(),
            msg_idx: self.msg_idx.sized_like(),
            candidate_n: self.candidate_n.sized_like(),
            command: self.command.sized_like(),
            n_bash_blocks: self.n_bash_blocks.sized_like(),
            cmd_kind: self.cmd_kind.sized_like(),
            obs_failed: self.obs_failed.sized_like(),
            returncode: self.returncode.sized_like(),
            think_unclosed: self.think_unclosed.sized_like(),
            is_submit: self.is_submit.sized_like(),
            submit_signal: self.submit_signal.sized_like(),
            is_repeat: self.is_repeat.sized_like(),
            repeats_prev: self.repeats_prev.sized_like(),
            prev_failed: self.prev_failed.sized_like(),
            after_repeat_run: self.after_repeat_run.sized_like(),
            prior_failures: self.prior_failures.sized_like(),
            is_last: self.is_last.sized_like(),
            turn_sha: self.turn_sha.sized_like(),
            commands: self.commands.sized_like(),
            format_error: self.format_error.sized_like(),
            parsed: self.parsed.sized_like(),
        }
    }

    pub fn push(&mut self, x: &TurnRow) {
        self.traj_id.append_value(&x.traj_id);
        self.source.append_value(&x.source);
        self.t.append_value(x.t);
        self.msg_idx.append_value(x.msg_idx);
        self.candidate_n.append_option(x.candidate_n);
        self.command.append_option(x.command.as_deref());
        self.n_bash_blocks.append_value(x.n_bash_blocks);
        self.cmd_kind.append_value(&x.cmd_kind);
        self.obs_failed.append_option(x.obs_failed);
        self.returncode.append_option(x.returncode);
        self.think_unclosed.append_value(x.think_unclosed);
        self.is_submit.append_value(x.is_submit);
        self.submit_signal.append_option(x.submit_signal.as_deref());
        self.is_repeat.append_value(x.is_repeat);
        self.repeats_prev.append_value(x.repeats_prev);
        self.prev_failed.append_value(x.prev_failed);
        self.after_repeat_run.append_value(x.after_repeat_run);
        self.prior_failures.append_value(x.prior_failures);
        self.is_last.append_value(x.is_last);
        self.turn_sha.append_value(&x.turn_sha);
        for c in &x.commands {
            self.commands.values().append_value(c);
        }
        self.commands.append(true);
        self.format_error.append_option(x.format_error.as_deref());
        self.parsed.append_value(x.parsed);
    }

    pub fn finish(mut self) -> Result<RecordBatch, LakeError> {
        let s = &mut self;
        batch(
            "turns",
            vec![
                ("traj_id", column(&mut s.traj_id)),
                ("source", column(&mut s.source)),
                ("t", column(&mut s.t)),
                ("msg_idx", column(&mut s.msg_idx)),
                ("candidate_n", column(&mut s.candidate_n)),
                ("command", column(&mut s.command)),
                ("n_bash_blocks", column(&mut s.n_bash_blocks)),
                ("cmd_kind", column(&mut s.cmd_kind)),
                ("obs_failed", column(&mut s.obs_failed)),
                ("returncode", column(&mut s.returncode)),
                ("think_unclosed", column(&mut s.think_unclosed)),
                ("is_submit", column(&mut s.is_submit)),
                ("submit_signal", column(&mut s.submit_signal)),
                ("is_repeat", column(&mut s.is_repeat)),
                ("repeats_prev", column(&mut s.repeats_prev)),
                ("prev_failed", column(&mut s.prev_failed)),
                ("after_repeat_run", column(&mut s.after_repeat_run)),
                ("prior_failures", column(&mut s.prior_failures)),
                ("is_last", column(&mut s.is_last)),
                ("turn_sha", column(&mut s.turn_sha)),
                ("commands", column(&mut s.commands)),
                ("format_error", column(&mut s.format_error)),
                ("parsed", column(&mut s.parsed)),
            ],
        )
    }
}

pub fn turns_batch(r: &[TurnRow]) -> Result<RecordBatch, LakeError> {
    let mut columns = TurnColumns::default();
    r.iter().for_each(|x| columns.push(x));
    columns.finish()
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
